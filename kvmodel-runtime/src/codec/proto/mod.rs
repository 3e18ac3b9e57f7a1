//! Protobuf records (`encoding: protobuf`): what a record's fields are on
//! the wire, and the envelope that carries the record version.
//!
//! The stored value is itself a protobuf message, so services in other
//! languages read it with the `.proto` that `kvmodel proto` prints:
//!
//! ```text
//! message Envelope { uint32 version = 1; bytes record = 2; }
//! ```
//!
//! written as the bytes `0x08 varint(version) 0x12 varint(length) record`.
//! The first byte `0x08` (field 1, varint) is neither JSON's `{`, the
//! MessagePack envelope's `0x92` nor a compressed value's `0xC1`, so a
//! reader tells the encodings apart by it, and learns the version before it
//! decodes the record.
//!
//! A record's fields are described by a [`ProtoMessage`]: each field's
//! name, number and type. Numbers come from the field's name (see
//! `docs/schema.md`), never from stored state, so they stay stable across
//! schema versions. The record travels between the typed value and the wire
//! as the JSON value serde makes of it (a timestamp as its RFC 3339 text, a
//! uuid as its text, bytes as a list of numbers), so a protobuf record
//! decodes into the very value a JSON record of the same data would.
//!
//! | schema type | protobuf |
//! |---|---|
//! | `string` | `string` |
//! | `bool` | `bool` |
//! | `i32`, `i64`, `u32`, `u64` | `int32`, `int64`, `uint32`, `uint64` |
//! | `f64` | `double` |
//! | `bytes` | `bytes` |
//! | `timestamp` | `google.protobuf.Timestamp` (whole milliseconds) |
//! | `date` | `string` (`YYYY-MM-DD`) |
//! | `uuid` | `bytes` (16) |
//! | an enum | `string`: the variant's name, so adding variants keeps old records readable |
//! | `list<T>` | `repeated T` (numbers packed) |
//! | `map<string, T>` | `map<string, T>` |
//! | optional `T` | `optional T` (absent when `null`) |

#[cfg(feature = "protobuf")]
mod wire;

use serde_json::Value;

use crate::codec::scalar::Scalar;
use crate::error::{Error, Result};

/// The first byte of every protobuf envelope: field 1 (`version`), varint.
pub const TAG: u8 = 0x08;

/// How many values a protobuf field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtoShape {
    /// Exactly one (always written).
    One,
    /// One or none (`optional`, absent for `null`).
    Optional,
    /// A list (`repeated`).
    List,
    /// A map from text (`map<string, …>`).
    Map,
}

/// A field of a protobuf message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProtoField {
    /// The field's name, as stored in JSON.
    pub name: &'static str,
    /// Its protobuf field number.
    pub number: u32,
    /// What one value of it is. A fieldless enum is held as the `string`
    /// name of its variant: [`Scalar::String`].
    pub kind: Scalar,
    /// How many values it holds.
    pub shape: ProtoShape,
}

/// The fields of a protobuf-encoded record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProtoMessage {
    /// The fields of the current version, in declared order.
    pub fields: &'static [ProtoField],
    /// Fields of older versions that a migration renames, by their old
    /// names (with the type of the field they became): read from older
    /// records, never written.
    pub renamed: &'static [ProtoField],
}

/// A fieldless enum a protobuf record holds, by the name of its variant:
/// `#[derive(KvEnum)]` implements it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an enum that a protobuf record can hold",
    note = "protobuf records hold scalars, lists, maps and `#[derive(kvmodel::KvEnum)]` enums \
            (stored by variant name); for a struct field use `encoding = \"json\"` or \
            `\"msgpack\"`"
)]
pub trait ProtoEnum {}

#[cfg(not(feature = "protobuf"))]
fn feature_error(key: &str) -> Error {
    Error::decode(
        key,
        "it is a protobuf record, which this build cannot read: enable kvmodel's `protobuf` \
         feature",
        None,
    )
}

/// The envelope of `value` (the JSON value of a record) at `version`.
pub fn encode(key: &str, message: &ProtoMessage, version: u32, value: &Value) -> Result<Vec<u8>> {
    #[cfg(feature = "protobuf")]
    {
        wire::encode(message, version, value).map_err(|reason| Error::Encode {
            key: key.to_owned(),
            reason,
        })
    }
    #[cfg(not(feature = "protobuf"))]
    {
        let _ = (message, version, value);
        Err(Error::Encode {
            key: key.to_owned(),
            reason: "its entity is encoded with protobuf, which this build cannot write: enable \
                     kvmodel's `protobuf` feature"
                .to_owned(),
        })
    }
}

/// The version in a protobuf envelope, read without decoding the record.
pub fn version(key: &str, bytes: &[u8]) -> Result<u32> {
    #[cfg(feature = "protobuf")]
    {
        wire::envelope(bytes)
            .map(|(v, _)| v)
            .map_err(|reason| Error::decode(key, reason, None))
    }
    #[cfg(not(feature = "protobuf"))]
    {
        let _ = bytes;
        Err(feature_error(key))
    }
}

/// The version and the JSON value of the record in a protobuf envelope,
/// read with `message` (`None` when the reading type is not protobuf-encoded
/// and so cannot know its fields' numbers).
pub fn decode(key: &str, message: Option<&ProtoMessage>, bytes: &[u8]) -> Result<(u32, Value)> {
    #[cfg(feature = "protobuf")]
    {
        let Some(message) = message else {
            return Err(Error::decode(
                key,
                "it is a protobuf record, but its type is not encoded with protobuf and so \
                 cannot tell its fields apart: declare `encoding: protobuf` again, read it, and \
                 run `kvmodel migrate` before switching the encoding",
                None,
            ));
        };
        let (version, record) =
            wire::envelope(bytes).map_err(|reason| Error::decode(key, reason, None))?;
        let value =
            wire::decode(message, record).map_err(|reason| Error::decode(key, reason, None))?;
        Ok((version, value))
    }
    #[cfg(not(feature = "protobuf"))]
    {
        let _ = (message, bytes);
        Err(feature_error(key))
    }
}

/// Expands to nothing in a build that reads and writes protobuf records,
/// and to a compile error naming the feature otherwise: the generated code
/// of a protobuf-encoded entity invokes it.
#[cfg(feature = "protobuf")]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_protobuf {
    ($entity:literal) => {};
}

/// Expands to nothing in a build that reads and writes protobuf records,
/// and to a compile error naming the feature otherwise: the generated code
/// of a protobuf-encoded entity invokes it.
#[cfg(not(feature = "protobuf"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_protobuf {
    ($entity:literal) => {
        ::core::compile_error!(::core::concat!(
            "`",
            $entity,
            "` is encoded with protobuf, which needs kvmodel's `protobuf` feature: enable it \
             (`kvmodel = { version = \"…\", features = [\"protobuf\"] }`) or use \
             `encoding = \"json\"`"
        ));
    };
}

#[cfg(all(test, feature = "protobuf"))]
mod tests;
