//! Generic values read and written as the generated types read and write
//! them: [`conform`] checks a value against a type and brings it to the
//! form the typed record serializes to; [`Ordered`] serializes it exactly as
//! the typed record would (fields in declared order, integers at their
//! width, a uuid as bytes in MessagePack). The codec's
//! [`Generic`](crate::codec::value::Generic) reads any MessagePack payload
//! into a JSON value.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::{FieldModel, TypeModel};
use crate::codec::scalar::Scalar;
use crate::codec::value::bin;
use crate::time::{Date, Timestamp};

/// Why a value does not fit its type: a path and a sentence.
pub(crate) type Mismatch = String;

/// How the typed record reads a value: from JSON (or from the JSON value
/// a migration produced), or straight from a MessagePack payload, where a
/// uuid is 16 raw bytes and raw bytes are nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Human-readable: serde_json, or a migrated value.
    Json,
    /// A MessagePack payload at the current version.
    MsgPack,
}

fn expected(path: &str, what: &str, found: &Value) -> Mismatch {
    let found = match found {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the bool {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) if bin(found).is_some() => "bytes".to_owned(),
        Value::Object(_) => "a map".to_owned(),
    };
    format!("`{path}` should be {what}, but it is {found}")
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// The value of a field of a stored struct: present, defaulted, `null` for
/// an absent optional field, or a mismatch.
pub(crate) fn conform_field(
    mode: Mode,
    path: &str,
    field: &FieldModel,
    value: Option<Value>,
) -> Result<Value, Mismatch> {
    let path = child(path, &field.name);
    let value = match value {
        Some(v) => v,
        None => match &field.default {
            Some(d) => d.clone(),
            None if field.optional => return Ok(Value::Null),
            None => return Err(format!("`{path}` is missing")),
        },
    };
    if field.optional && value.is_null() {
        return Ok(Value::Null);
    }
    conform(mode, &path, &field.ty, value)
}

/// Checks `value` against `ty` and returns it as the typed record would
/// serialize it to JSON (timestamps, dates and uuids in their canonical
/// text, struct fields filled with defaults, unknown fields dropped).
pub(crate) fn conform(
    mode: Mode,
    path: &str,
    ty: &TypeModel,
    value: Value,
) -> Result<Value, Mismatch> {
    // A MessagePack byte string reads as text where serde takes UTF-8 bytes.
    let value = match (ty, bin(&value)) {
        (TypeModel::Scalar(Scalar::String) | TypeModel::Enum(_), Some(b)) => {
            String::from_utf8(b).map(Value::String).map_err(|_| {
                format!("`{path}` should be text, but it holds bytes that are not UTF-8")
            })?
        }
        _ => value,
    };
    match ty {
        TypeModel::Scalar(scalar) => conform_scalar(mode, path, *scalar, value),
        TypeModel::List(item) => match value {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| conform(mode, &format!("{path}[{i}]"), item, v))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Err(expected(path, "a list", &other)),
        },
        TypeModel::Map(item) => match value {
            Value::Object(entries) => entries
                .into_iter()
                .map(|(k, v)| conform(mode, &child(path, &k), item, v).map(|v| (k, v)))
                .collect::<Result<Map<_, _>, _>>()
                .map(Value::Object),
            other => Err(expected(path, "a map", &other)),
        },
        TypeModel::Enum(e) => match &value {
            Value::String(s) if e.variants.iter().any(|v| v == s) => Ok(value),
            _ => Err(expected(
                path,
                &format!("one of the `{}` values ({})", e.name, e.variants.join(", ")),
                &value,
            )),
        },
        TypeModel::Struct(s) => match value {
            Value::Object(mut entries) => {
                let mut out = Map::new();
                for f in &s.fields {
                    let v = conform_field(mode, path, f, entries.remove(&f.name))?;
                    out.insert(f.name.clone(), v);
                }
                Ok(Value::Object(out))
            }
            other => Err(expected(path, &format!("a `{}` map", s.name), &other)),
        },
    }
}

/// [`conform`] for a scalar.
fn conform_scalar(mode: Mode, path: &str, scalar: Scalar, value: Value) -> Result<Value, Mismatch> {
    let what = scalar.what();
    match scalar {
        Scalar::String => match value {
            Value::String(_) => Ok(value),
            other => Err(expected(path, what, &other)),
        },
        Scalar::Bool => match value {
            Value::Bool(_) => Ok(value),
            other => Err(expected(path, what, &other)),
        },
        Scalar::I32 => int(path, value, what, |n| {
            n.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .map(Value::from)
        }),
        Scalar::I64 => int(path, value, what, |n| n.as_i64().map(Value::from)),
        Scalar::U32 => int(path, value, what, |n| {
            n.as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .map(Value::from)
        }),
        Scalar::U64 => int(path, value, what, |n| n.as_u64().map(Value::from)),
        Scalar::F64 => match &value {
            Value::Number(n) => n
                .as_f64()
                .map(Value::from)
                .ok_or_else(|| expected(path, what, &value)),
            _ => Err(expected(path, what, &value)),
        },
        Scalar::Bytes => match value {
            Value::Array(items) => items
                .into_iter()
                .map(|b| match b.as_u64().and_then(|b| u8::try_from(b).ok()) {
                    Some(b) => Ok(Value::from(b)),
                    None => Err(expected(path, "a list of bytes (0 to 255)", &b)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Err(expected(path, what, &other)),
        },
        Scalar::Timestamp => match &value {
            Value::String(s) => s
                .parse::<Timestamp>()
                .map(|t| Value::String(t.to_string()))
                .map_err(|e| format!("`{path}` is not a timestamp: {e}")),
            _ => Err(expected(path, what, &value)),
        },
        Scalar::Date => match &value {
            Value::String(s) => s
                .parse::<Date>()
                .map(|d| Value::String(d.to_string()))
                .map_err(|e| format!("`{path}` is not a date: {e}")),
            _ => Err(expected(path, what, &value)),
        },
        Scalar::Uuid => {
            let uuid = match mode {
                Mode::MsgPack => bin(&value).and_then(|b| uuid::Uuid::from_slice(&b).ok()),
                Mode::Json => value.as_str().and_then(|s| uuid::Uuid::parse_str(s).ok()),
            };
            uuid.map(|u| Value::String(u.hyphenated().to_string()))
                .ok_or_else(|| expected(path, what, &value))
        }
    }
}

fn int(
    path: &str,
    value: Value,
    what: &str,
    read: impl Fn(&serde_json::Number) -> Option<Value>,
) -> Result<Value, Mismatch> {
    match &value {
        Value::Number(n) => read(n).ok_or_else(|| expected(path, what, &value)),
        _ => Err(expected(path, what, &value)),
    }
}

/// A uuid from its text, or from its 16 bytes (MessagePack).
pub(crate) fn uuid_of(value: &Value) -> Option<uuid::Uuid> {
    match value {
        Value::String(s) => uuid::Uuid::parse_str(s).ok(),
        Value::Array(items) if items.len() == 16 => {
            let mut bytes = [0u8; 16];
            for (b, v) in bytes.iter_mut().zip(items) {
                *b = u8::try_from(v.as_u64()?).ok()?;
            }
            Some(uuid::Uuid::from_bytes(bytes))
        }
        _ => None,
    }
}

/// A conformed value with its type, serialized exactly as the typed record
/// is: struct fields in declared order, integers at their declared width,
/// uuids through the `uuid` crate (text in JSON, 16 bytes in MessagePack).
#[derive(Debug, Clone, Copy)]
pub struct Ordered<'a> {
    ty: &'a TypeModel,
    value: &'a Value,
}

impl<'a> Ordered<'a> {
    /// `value` (conformed to `ty`) for serialization.
    pub fn new(ty: &'a TypeModel, value: &'a Value) -> Self {
        Ordered { ty, value }
    }
}

/// The fields of a record or struct, serialized in declared order.
pub(crate) struct OrderedFields<'a> {
    pub(crate) fields: &'a [FieldModel],
    pub(crate) value: &'a Value,
}

impl Serialize for OrderedFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.fields.len()))?;
        for f in self.fields {
            let v = self.value.get(&f.name).unwrap_or(&Value::Null);
            if v.is_null() {
                map.serialize_entry(&f.name, &Option::<()>::None)?;
            } else {
                map.serialize_entry(&f.name, &Ordered::new(&f.ty, v))?;
            }
        }
        map.end()
    }
}

fn bad<E: serde::ser::Error>(what: &str) -> E {
    E::custom(format!(
        "the value is not {what}; conform it to its type first"
    ))
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.value;
        match self.ty {
            TypeModel::Scalar(Scalar::String | Scalar::Timestamp | Scalar::Date)
            | TypeModel::Enum(_) => {
                s.serialize_str(v.as_str().ok_or_else(|| bad::<S::Error>("text"))?)
            }
            TypeModel::Scalar(Scalar::Bool) => {
                s.serialize_bool(v.as_bool().ok_or_else(|| bad::<S::Error>("a bool"))?)
            }
            TypeModel::Scalar(Scalar::I32) => {
                let i = v.as_i64().and_then(|i| i32::try_from(i).ok());
                s.serialize_i32(i.ok_or_else(|| bad::<S::Error>("an i32"))?)
            }
            TypeModel::Scalar(Scalar::I64) => {
                s.serialize_i64(v.as_i64().ok_or_else(|| bad::<S::Error>("an i64"))?)
            }
            TypeModel::Scalar(Scalar::U32) => {
                let i = v.as_u64().and_then(|i| u32::try_from(i).ok());
                s.serialize_u32(i.ok_or_else(|| bad::<S::Error>("a u32"))?)
            }
            TypeModel::Scalar(Scalar::U64) => {
                s.serialize_u64(v.as_u64().ok_or_else(|| bad::<S::Error>("a u64"))?)
            }
            TypeModel::Scalar(Scalar::F64) => {
                s.serialize_f64(v.as_f64().ok_or_else(|| bad::<S::Error>("an f64"))?)
            }
            TypeModel::Scalar(Scalar::Uuid) => uuid_of(v)
                .ok_or_else(|| bad::<S::Error>("a uuid"))?
                .serialize(s),
            TypeModel::Scalar(Scalar::Bytes) => {
                let items = v.as_array().ok_or_else(|| bad::<S::Error>("bytes"))?;
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for b in items {
                    let b = b.as_u64().and_then(|b| u8::try_from(b).ok());
                    seq.serialize_element(&b.ok_or_else(|| bad::<S::Error>("a byte"))?)?;
                }
                seq.end()
            }
            TypeModel::List(item) => {
                let items = v.as_array().ok_or_else(|| bad::<S::Error>("a list"))?;
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for x in items {
                    seq.serialize_element(&Ordered::new(item, x))?;
                }
                seq.end()
            }
            TypeModel::Map(item) => {
                let entries = v.as_object().ok_or_else(|| bad::<S::Error>("a map"))?;
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, x) in entries {
                    map.serialize_entry(k, &Ordered::new(item, x))?;
                }
                map.end()
            }
            TypeModel::Struct(st) => OrderedFields {
                fields: &st.fields,
                value: v,
            }
            .serialize(s),
        }
    }
}

/// Reads a command-line argument as a value of `ty` (a key part, an index
/// value, a counter group): text for strings, enums, timestamps, dates and
/// uuids, a number for integers, `true`/`false` for bools.
pub fn parse_arg(ty: &TypeModel, text: &str) -> Result<Value, String> {
    let value = match ty {
        TypeModel::Scalar(Scalar::I32 | Scalar::I64) => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("`{text}` is not an integer"))?,
        TypeModel::Scalar(Scalar::U32 | Scalar::U64) => text
            .parse::<u64>()
            .map(Value::from)
            .map_err(|_| format!("`{text}` is not a non-negative integer"))?,
        TypeModel::Scalar(Scalar::F64) => text
            .parse::<f64>()
            .map(Value::from)
            .map_err(|_| format!("`{text}` is not a number"))?,
        TypeModel::Scalar(Scalar::Bool) => match text {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(format!("`{text}` is not `true` or `false`")),
        },
        TypeModel::Scalar(Scalar::Bytes) => Value::Array(text.bytes().map(Value::from).collect()),
        TypeModel::List(_) | TypeModel::Map(_) | TypeModel::Struct(_) => {
            serde_json::from_str(text).map_err(|e| format!("`{text}` is not JSON: {e}"))?
        }
        _ => Value::String(text.to_owned()),
    };
    conform(Mode::Json, "the value", ty, value)
}
