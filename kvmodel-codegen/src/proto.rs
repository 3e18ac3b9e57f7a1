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

use crate::ir::{Entity, Field, FieldType, Model, TypeKind};

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

/// What one value of a protobuf field is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `string`.
    String,
    /// `bool`.
    Bool,
    /// `int32`.
    I32,
    /// `int64`.
    I64,
    /// `uint32`.
    U32,
    /// `uint64`.
    U64,
    /// `double`.
    F64,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// A date as `string`.
    Date,
    /// A uuid as 16 `bytes`.
    Uuid,
    /// A fieldless enum (its type as written), stored as its variant's name.
    Enum(String),
}

impl Kind {
    /// The `.proto` type.
    pub fn proto_type(&self) -> &'static str {
        match self {
            Kind::String | Kind::Date | Kind::Enum(_) => "string",
            Kind::Bool => "bool",
            Kind::I32 => "int32",
            Kind::I64 => "int64",
            Kind::U32 => "uint32",
            Kind::U64 => "uint64",
            Kind::F64 => "double",
            Kind::Bytes | Kind::Uuid => "bytes",
            Kind::Timestamp => "google.protobuf.Timestamp",
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
    /// One value of it.
    pub kind: Kind,
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

fn kind(model: Option<&Model>, ty: &FieldType) -> Result<Kind, Refusal> {
    Ok(match ty {
        FieldType::String => Kind::String,
        FieldType::Bool => Kind::Bool,
        FieldType::I32 => Kind::I32,
        FieldType::I64 => Kind::I64,
        FieldType::U32 => Kind::U32,
        FieldType::U64 => Kind::U64,
        FieldType::F64 => Kind::F64,
        FieldType::Bytes => Kind::Bytes,
        FieldType::Timestamp => Kind::Timestamp,
        FieldType::Date => Kind::Date,
        FieldType::Uuid => Kind::Uuid,
        FieldType::List(_) | FieldType::Map(_) => return Err(Refusal::Nested),
        FieldType::Named(n) => {
            let name = n.as_str().to_owned();
            // The derive sees no type declarations: the generated code then
            // requires the type to be a `#[derive(KvEnum)]` enum.
            let is_struct = model.is_some_and(|m| {
                m.types
                    .iter()
                    .any(|t| *t.name == name && matches!(t.kind, TypeKind::Struct(_)))
            });
            if is_struct {
                return Err(Refusal::Struct(name));
            }
            Kind::Enum(name)
        }
    })
}

/// How protobuf stores the field `f`, or why it cannot.
pub fn map_field(model: Option<&Model>, f: &Field) -> Result<ProtoField, Refusal> {
    let (kind, shape) = match &*f.ty {
        FieldType::List(item) | FieldType::Map(item) if f.optional => {
            // Still report a struct inside before the nesting.
            kind(model, item)?;
            return Err(Refusal::Nested);
        }
        FieldType::List(item) => (kind(model, item)?, Shape::List),
        FieldType::Map(item) => (kind(model, item)?, Shape::Map),
        ty if f.optional => (kind(model, ty)?, Shape::Optional),
        ty => (kind(model, ty)?, Shape::One),
    };
    Ok(ProtoField {
        name: f.name.as_str().to_owned(),
        number: field_number(&f.name),
        kind,
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
