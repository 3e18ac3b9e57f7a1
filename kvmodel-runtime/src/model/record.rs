//! Records read and written through the run-time model.

use serde_json::Value;

use super::EntityModel;
use super::value::{Mode, OrderedFields, conform_field};
use crate::codec::compress;
use crate::codec::migrate;
use crate::codec::proto::{self, ProtoMessage};
use crate::codec::record::{self, Encoding};
use crate::codec::value::{Generic, unmark};
use crate::error::{Error, Result};

/// A record as the model reads it: the version it is stored at, and its
/// value at the current version (migration steps run, defaults filled,
/// unknown fields dropped), as the generated type would serialize it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The version the stored bytes are at.
    pub version: u32,
    /// The record at the current version, as JSON.
    pub value: Value,
}

impl Record {
    /// When this record of `model` expires by its expiry field: `None`
    /// when the model has none or the field is null.
    pub fn expires_at(&self, model: &EntityModel) -> Option<crate::time::Timestamp> {
        let field = model.expiry.as_deref()?;
        self.value.get(field)?.as_str()?.parse().ok()
    }
}

/// The generic payload of stored bytes, and their version.
fn payload(key: &str, proto: Option<&ProtoMessage>, bytes: &[u8]) -> Result<(u32, Value)> {
    let bytes = &*compress::open(key, bytes)?;
    let header = record::header(key, bytes)?;
    match header.encoding {
        Encoding::Json => record::decode_value(key, bytes),
        Encoding::Protobuf => proto::decode(key, proto, bytes),
        Encoding::MsgPack => {
            let (version, Generic(value)): (u32, Generic<true>) = rmp_serde::from_slice(bytes)
                .map_err(|e| {
                    Error::decode(
                        key,
                        "it is not a kvmodel MessagePack record",
                        Some(Box::new(e)),
                    )
                })?;
            Ok((version, value))
        }
    }
}

impl EntityModel {
    /// Reads the stored bytes of the record at `key` as the generated code
    /// does: a newer version is [`Error::FutureVersion`], an older one runs
    /// the declared migration steps, fields that do not fit their types are
    /// [`Error::Decode`], and so is a record that is not the record of
    /// `key` (bytes copied under another key).
    pub fn read(&self, key: &str, bytes: &[u8]) -> Result<Record> {
        let bytes = &*compress::open(key, bytes)?;
        let header = record::header(key, bytes)?;
        if header.version > self.version {
            return Err(Error::FutureVersion {
                key: key.to_owned(),
                found: header.version,
                supported: self.version,
            });
        }
        if header.version == 0 {
            return Err(Error::decode(
                key,
                "its version is 0; versions start at 1",
                None,
            ));
        }
        let (version, mut value) = payload(key, self.proto, bytes)?;
        let current = version == self.version;
        let mode = match header.encoding {
            Encoding::MsgPack if current => Mode::MsgPack,
            _ => Mode::Json,
        };
        if !current {
            // Older records are read through a JSON value, as generated
            // code reads them.
            unmark(&mut value);
            let mut steps: Vec<_> = self.migrations.iter().collect();
            steps.sort_by_key(|s| s.from);
            for s in steps.into_iter().filter(|s| version <= s.from) {
                for (from, to) in &s.rename {
                    migrate::rename(&mut value, from, to);
                }
                for (name, v) in &s.add {
                    migrate::add(&mut value, name, v.clone());
                }
                for name in &s.remove {
                    migrate::remove(&mut value, name);
                }
            }
        }
        let value = self.conform_in(mode, value).map_err(|reason| {
            let reason = if current {
                format!("its fields do not match the current type ({reason})")
            } else {
                format!("after migration its fields do not match the current type ({reason})")
            };
            Error::decode(key, reason, None)
        })?;
        let own = self.record_key(&value)?;
        if own != key {
            return Err(Error::decode(
                key,
                format!(
                    "it holds the record of `{own}`, not of this key; move it back or purge this key"
                ),
                None,
            ));
        }
        Ok(Record { version, value })
    }

    /// Checks a record value (at the current version) against the fields
    /// and returns it as the generated type serializes it.
    pub fn conform(&self, value: Value) -> std::result::Result<Value, String> {
        self.conform_in(Mode::Json, value)
    }

    fn conform_in(&self, mode: Mode, value: Value) -> std::result::Result<Value, String> {
        let Value::Object(mut entries) = value else {
            return Err(format!("a `{}` record is a map of fields", self.name));
        };
        let mut out = serde_json::Map::new();
        for f in &self.fields {
            let v = conform_field(mode, "", f, entries.remove(&f.name))?;
            out.insert(f.name.clone(), v);
        }
        Ok(Value::Object(out))
    }

    /// The stored bytes of `value` (conformed) at the current version: the
    /// bytes the generated code writes for the same record, and the same
    /// [`Error::ValueTooLarge`] for one larger than the entity's limit.
    pub fn encode(&self, key: &str, value: &Value) -> Result<Vec<u8>> {
        let fields = OrderedFields {
            fields: &self.fields,
            value,
        };
        let encoded = record::encode_with(key, self.encoding, self.proto, self.version, &fields)?;
        self.storage.seal(self.static_name(), key, encoded)
    }
}
