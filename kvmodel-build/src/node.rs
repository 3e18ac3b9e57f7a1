//! A YAML document as a tree whose every node knows its position, so that
//! lowering can report every problem at its place and keep going.

use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use kvmodel_codegen::Origin;

/// A YAML value.
#[derive(Debug, Clone)]
pub enum Value {
    /// `null` or empty.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Spanned<Value>>),
    /// A mapping, in document order.
    Map(Vec<(Spanned<String>, Spanned<Value>)>),
}

impl Value {
    /// A word for messages: what kind of value this is.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The value as JSON (for defaults and migration values).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::Seq(items) => items.iter().map(|i| i.value.to_json()).collect(),
            Value::Map(entries) => entries
                .iter()
                .map(|(k, v)| (k.value.clone(), v.value.to_json()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
                i64::try_from(v)
                    .map(Value::Int)
                    .map_err(|_| E::custom("the integer is larger than 2^63 - 1"))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Value, E> {
                Ok(Value::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut items = Vec::new();
                while let Some(x) = a.next_element()? {
                    items.push(x);
                }
                Ok(Value::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = a.next_entry()? {
                    entries.push(entry);
                }
                Ok(Value::Map(entries))
            }
        }
        d.deserialize_any(V)
    }
}

/// Turns saphyr locations into IR origins for one file.
#[derive(Debug, Clone)]
pub struct Locator {
    file: Arc<str>,
}

impl Locator {
    /// For `file`.
    pub fn new(file: &str) -> Self {
        Locator {
            file: Arc::from(file),
        }
    }

    /// The origin of a spanned node.
    pub fn at<T>(&self, s: &Spanned<T>) -> Origin {
        self.loc(&s.referenced)
    }

    /// The origin of a location.
    pub fn loc(&self, l: &serde_saphyr::Location) -> Origin {
        Origin::Location {
            file: self.file.clone(),
            line: l.line() as u32,
            column: l.column() as u32,
        }
    }

    /// The start of the file.
    pub fn start(&self) -> Origin {
        Origin::Location {
            file: self.file.clone(),
            line: 1,
            column: 1,
        }
    }
}
