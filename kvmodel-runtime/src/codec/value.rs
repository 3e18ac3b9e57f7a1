//! Any self-describing payload (MessagePack above all) read as a JSON
//! value, as migrations and the run-time model read records whose type
//! they do not have.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The key under which [`Generic`] keeps a MessagePack byte string, so a
/// current-version record can be read as strictly as serde reads it.
const BIN: &str = "\u{0}kvmodel:bin";

/// The bytes of a marked MessagePack byte string.
pub(crate) fn bin(value: &Value) -> Option<Vec<u8>> {
    let entries = value.as_object().filter(|m| m.len() == 1)?;
    let items = entries.get(BIN)?.as_array()?;
    items
        .iter()
        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
        .collect()
}

/// A MessagePack byte string as a JSON value: kvmodel writes byte strings
/// only for uuids, so 16 bytes are a uuid's text (as a JSON record holds
/// it); other lengths a list of numbers.
fn bytes_value(b: &[u8]) -> Value {
    match uuid::Uuid::from_slice(b) {
        Ok(u) => Value::String(u.hyphenated().to_string()),
        Err(_) => Value::Array(b.iter().map(|b| Value::from(*b)).collect()),
    }
}

/// Replaces every marked byte string by its JSON value ([`Generic`]
/// without marks), as an older record's value is read for migration.
pub(crate) fn unmark(value: &mut Value) {
    if let Some(b) = bin(value) {
        *value = bytes_value(&b);
        return;
    }
    match value {
        Value::Array(items) => items.iter_mut().for_each(unmark),
        Value::Object(entries) => entries.values_mut().for_each(unmark),
        _ => {}
    }
}

/// Any MessagePack (or other self-describing) value as JSON. A byte string
/// becomes a uuid's text (16 bytes) or a list of numbers, or with `MARK` a
/// marked map that the model tells apart, to read a current record as
/// strictly as serde does.
#[derive(Debug, Clone, PartialEq)]
pub struct Generic<const MARK: bool>(pub Value);

impl<'de, const MARK: bool> Deserialize<'de> for Generic<MARK> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(GenericVisitor::<MARK>).map(Generic)
    }
}

struct GenericVisitor<const MARK: bool>;

impl<'de, const MARK: bool> Visitor<'de> for GenericVisitor<MARK> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Value, E> {
        if MARK {
            let list = Value::Array(v.iter().map(|b| Value::from(*b)).collect());
            let mut marked = Map::new();
            marked.insert(BIN.to_owned(), list);
            Ok(Value::Object(marked))
        } else {
            Ok(bytes_value(v))
        }
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(GenericVisitor::<MARK>)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Generic::<MARK>(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some((k, Generic::<MARK>(v))) =
            map.next_entry::<Generic<MARK>, Generic<MARK>>()?
        {
            let key = match k.0 {
                Value::String(s) => s,
                other => {
                    return Err(de::Error::custom(format!("a map key is {other}, not text")));
                }
            };
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}
