//! The protobuf mapping of a record (`encoding: protobuf`), written once:
//! `check` refuses what it cannot express, the generated code and the
//! run-time model take their field numbers from it, and `kvmodel proto`
//! prints it.
//!
//! A field's number is a hash of its name ([`field_number`]): 32-bit FNV-1a
//! of the name's UTF-8 bytes, reduced into 1..=262143 (tags of at most three
//! bytes) past the range 19000–19999 that protobuf reserves. It depends on
//! nothing stored and on no other field, so adding, removing or reordering
//! fields never moves one; renaming a field gives it a new number (a
//! migration's `rename` reads the old one from older records). Two fields of
//! one message whose names hash to the same number are an error (E147).

use std::collections::BTreeMap;

use crate::ir::{Entity, Field, FieldType, Model};

/// The largest field number assigned: tags of at most three bytes.
pub const MAX_FIELD_NUMBER: u32 = 262_143;

/// The field numbers protobuf reserves for itself.
const RESERVED: std::ops::RangeInclusive<u32> = 19_000..=19_999;

/// The protobuf field number of the field called `name`, fixed forever:
/// changing this function would make every stored protobuf record
/// unreadable.
pub fn field_number(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    let span = MAX_FIELD_NUMBER - (*RESERVED.end() - *RESERVED.start() + 1);
    let n = h % span + 1;
    if n >= *RESERVED.start() {
        n + (*RESERVED.end() - *RESERVED.start() + 1)
    } else {
        n
    }
}

impl FieldType {
    /// The `.proto` type of one value: a named type is a fieldless enum,
    /// stored as its variant's name (a struct is refused, see
    /// [`Refusal`]), a date as text, a uuid as its 16 bytes; a list or a map
    /// is its items' type (the field's [`Shape`] says how many).
    pub fn proto_type(&self) -> &'static str {
        match self {
            FieldType::String | FieldType::Date | FieldType::Named(_) => "string",
            FieldType::Bool => "bool",
            FieldType::I32 => "int32",
            FieldType::I64 => "int64",
            FieldType::U32 => "uint32",
            FieldType::U64 => "uint64",
            FieldType::F64 => "double",
            FieldType::Bytes | FieldType::Uuid => "bytes",
            FieldType::Timestamp => "google.protobuf.Timestamp",
            FieldType::List(t) | FieldType::Map(t) => t.proto_type(),
        }
    }
}

/// How many values a protobuf field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One, always written.
    One,
    /// One or none.
    Optional,
    /// `repeated`.
    List,
    /// `map<string, …>`.
    Map,
}

/// A field as protobuf stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtoField {
    /// Its name.
    pub name: String,
    /// Its number.
    pub number: u32,
    /// The type of one value of it: a scalar or a named enum, never a list
    /// or a map (`shape` says how many).
    pub ty: FieldType,
    /// How many.
    pub shape: Shape,
}

/// Why a field cannot be stored faithfully as protobuf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It holds a struct type (named).
    Struct(String),
    /// A list or map of lists or maps, or an optional list or map: protobuf
    /// has no way to write it, or to tell `null` from empty.
    Nested,
}

/// `ty` as the type of one value of a protobuf field: a scalar, or a named
/// type that may be an enum.
fn item(model: Option<&Model>, ty: &FieldType) -> Result<FieldType, Refusal> {
    match ty {
        FieldType::List(_) | FieldType::Map(_) => Err(Refusal::Nested),
        FieldType::Named(n) => {
            // The derive sees no type declarations: the generated code then
            // requires the type to be a `#[derive(KvEnum)]` enum.
            let is_struct = model.is_some_and(|m| m.struct_fields(n).is_some());
            if is_struct {
                return Err(Refusal::Struct(n.as_str().to_owned()));
            }
            Ok(ty.clone())
        }
        scalar => Ok(scalar.clone()),
    }
}

/// How protobuf stores the field `f`, or why it cannot.
pub fn map_field(model: Option<&Model>, f: &Field) -> Result<ProtoField, Refusal> {
    let (ty, shape) = match &*f.ty {
        FieldType::List(t) | FieldType::Map(t) if f.optional => {
            // Still report a struct inside before the nesting.
            item(model, t)?;
            return Err(Refusal::Nested);
        }
        FieldType::List(t) => (item(model, t)?, Shape::List),
        FieldType::Map(t) => (item(model, t)?, Shape::Map),
        t if f.optional => (item(model, t)?, Shape::Optional),
        t => (item(model, t)?, Shape::One),
    };
    Ok(ProtoField {
        name: f.name.as_str().to_owned(),
        number: field_number(&f.name),
        ty,
        shape,
    })
}

/// The protobuf fields of `e` (those it can express), in declared order.
pub fn fields(model: Option<&Model>, e: &Entity) -> Vec<ProtoField> {
    e.fields
        .iter()
        .filter_map(|f| map_field(model, f).ok())
        .collect()
}

/// The old names that `e`'s migration steps rename to one of its fields
/// (following chains), each with the field it became, as read from older
/// records: old name → the current field's protobuf form under that name.
pub fn renamed(model: Option<&Model>, e: &Entity) -> Vec<ProtoField> {
    let current: BTreeMap<&str, ProtoField> = fields(model, e)
        .into_iter()
        .filter_map(|f| {
            let name = e.fields.iter().find(|x| *x.name == f.name)?.name.as_str();
            Some((name, f))
        })
        .collect();
    // Newest step first, so a chain `a → b` (v1), `b → c` (v2) finds `c`.
    let mut steps: Vec<_> = e.migrations.iter().collect();
    steps.sort_by_key(|m| std::cmp::Reverse(m.from.value));
    let mut known: BTreeMap<String, ProtoField> = current
        .iter()
        .map(|(k, f)| ((*k).to_owned(), f.clone()))
        .collect();
    let mut out = Vec::new();
    for m in steps {
        for (old, new) in &m.rename {
            let Some(target) = known.get(new.as_str()).cloned() else {
                continue;
            };
            if known.contains_key(old.as_str()) {
                continue;
            }
            let f = ProtoField {
                name: old.as_str().to_owned(),
                number: field_number(old),
                ..target
            };
            known.insert(f.name.clone(), f.clone());
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pinned: these numbers are in stored records and must never change.
    #[test]
    fn numbers_are_fixed() {
        let got: Vec<u32> = ["id", "sensor", "at", "value", "name", "a", ""]
            .iter()
            .map(|n| field_number(n))
            .collect();
        assert_eq!(got, NUMBERS);
    }

    // Computed independently (FNV-1a 32 of "a" is 0xe40c292c).
    const NUMBERS: [u32; 7] = [171_036, 226_873, 170_623, 259_250, 22_184, 258_271, 217_220];

    #[test]
    fn numbers_skip_the_reserved_range_and_fit_three_bytes() {
        for i in 0..200_000u32 {
            let n = field_number(&format!("f{i}"));
            assert!((1..=MAX_FIELD_NUMBER).contains(&n), "{n}");
            assert!(!RESERVED.contains(&n), "{n}");
        }
    }
}
