//! Record envelopes: the stored value carries its version and encoding.
//!
//! * JSON: `{"v":2,"d":{…}}`: still valid JSON, readable with `redis-cli GET`.
//! * MessagePack: a two-element array `[version, {…named map…}]` (first byte
//!   `0x92`), so fields can be added and renamed like in JSON.
//!
//! * Protobuf: a protobuf `Envelope { uint32 version = 1; bytes record = 2; }`
//!   (first byte `0x08`), the record's fields numbered as [`proto`] says.
//!
//! * Compressed (`compress`): a header naming the codec, then the
//!   compressed envelope (see [`compress`]). Every
//!   function here reads those too.
//!
//! The first byte tells the encoding apart; the version is read before the
//! payload is decoded, so a record from newer code is reported as
//! [`Error::FutureVersion`] instead of being half-read.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::proto::{self, ProtoMessage};
use crate::codec::{compress, finite};
use crate::error::{Error, Result};

/// Largest encoded record accepted (Redis's own limit is 512 MiB); an
/// entity's [`Storage`](crate::codec::storage::Storage) applies it, and
/// no stored value may decompress to more (`compress::MAX_DECOMPRESSED`).
pub const MAX_RECORD_BYTES: usize = compress::MAX_DECOMPRESSED;

/// How a record's payload is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// JSON (the default).
    #[default]
    Json,
    /// MessagePack with named fields.
    MsgPack,
    /// Protobuf, with field numbers from the field names (see `codec::proto`).
    Protobuf,
}

const JSON_PREFIX: &[u8] = b"{\"v\":";
const JSON_DATA: &[u8] = b",\"d\":";
const MSGPACK_TAG: u8 = 0x92;

/// Encodes `value` at `version` in an envelope. The size is not checked
/// here: [`Storage::seal`](crate::codec::storage::Storage::seal) checks it
/// against the entity's limit.
pub fn encode<T: Serialize + ?Sized>(
    key: &str,
    encoding: Encoding,
    version: u32,
    value: &T,
) -> Result<Vec<u8>> {
    encode_with(key, encoding, None, version, value)
}

/// [`encode`] for a type that may be protobuf-encoded: `message` describes
/// its fields (required for [`Encoding::Protobuf`]).
pub fn encode_with<T: Serialize + ?Sized>(
    key: &str,
    encoding: Encoding,
    message: Option<&ProtoMessage>,
    version: u32,
    value: &T,
) -> Result<Vec<u8>> {
    let enc_err = |reason: String| Error::Encode {
        key: key.to_owned(),
        reason,
    };
    let out = match encoding {
        Encoding::Json => {
            let mut out = Vec::with_capacity(128);
            out.extend_from_slice(JSON_PREFIX);
            out.extend_from_slice(version.to_string().as_bytes());
            out.extend_from_slice(JSON_DATA);
            serde_json::to_writer(&mut out, value).map_err(|e| enc_err(e.to_string()))?;
            out.push(b'}');
            // serde_json writes NaN and infinity as `null`, which no float
            // reads back: refuse the write rather than store it.
            if out.windows(4).any(|w| w == b"null")
                && let Some(at) = finite::non_finite(value)
            {
                return Err(enc_err(format!(
                    "`{at}` is NaN or infinite, which JSON cannot hold (it would be stored as null and never read back); keep it finite, or store the entity as MessagePack (`encoding: msgpack`)"
                )));
            }
            out
        }
        Encoding::MsgPack => {
            rmp_serde::to_vec_named(&(version, value)).map_err(|e| enc_err(e.to_string()))?
        }
        Encoding::Protobuf => {
            let Some(message) = message else {
                return Err(enc_err(
                    "its type is encoded with protobuf, but no field numbers were given".to_owned(),
                ));
            };
            let json = serde_json::to_value(value).map_err(|e| enc_err(e.to_string()))?;
            // The record travels through its JSON value, where NaN and
            // infinity become `null`: name the float rather than the null.
            proto::encode(key, message, version, &json).map_err(|e| match finite::non_finite(value) {
                Some(at) => enc_err(format!(
                    "`{at}` is NaN or infinite, which kvmodel's protobuf records do not hold; keep it finite, or store the entity as MessagePack (`encoding: msgpack`)"
                )),
                None => e,
            })?
        }
    };
    Ok(out)
}

/// The encoding and version of stored bytes, and for JSON the payload span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Payload encoding.
    pub encoding: Encoding,
    /// Record version.
    pub version: u32,
}

/// Fast path for envelopes written by [`encode`]: `{"v":N,"d":` … `}`.
fn json_fast(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let rest = bytes.strip_prefix(JSON_PREFIX)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let version = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let payload = rest[digits..].strip_prefix(JSON_DATA)?.strip_suffix(b"}")?;
    Some((version, payload))
}

/// Fast path for envelopes written by [`encode`]: the version is the unsigned
/// integer right after the array tag, so the payload need not be walked just
/// to learn it (it is decoded once, afterwards).
fn msgpack_version(bytes: &[u8]) -> Option<u32> {
    match bytes.get(1..)? {
        [b @ 0x00..=0x7f, ..] => Some(u32::from(*b)),
        [0xcc, b, ..] => Some(u32::from(*b)),
        [0xcd, a, b, ..] => Some(u32::from(u16::from_be_bytes([*a, *b]))),
        [0xce, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

#[derive(serde::Deserialize)]
struct JsonEnvelope {
    v: u32,
    d: serde_json::Value,
}

fn decode_err(key: &str, what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::decode(key, what, Some(Box::new(e)))
}

/// Reads the envelope header.
pub fn header(key: &str, bytes: &[u8]) -> Result<Header> {
    let bytes = &*compress::open(key, bytes)?;
    match bytes.first() {
        Some(b'{') => {
            let version = match json_fast(bytes) {
                Some((v, _)) => v,
                None => {
                    serde_json::from_slice::<JsonEnvelope>(bytes)
                        .map_err(|e| decode_err(key, "it is not a kvmodel JSON record", e))?
                        .v
                }
            };
            Ok(Header {
                encoding: Encoding::Json,
                version,
            })
        }
        Some(&MSGPACK_TAG) => {
            let version = match msgpack_version(bytes) {
                Some(v) => v,
                None => {
                    let (v, _): (u32, serde::de::IgnoredAny) = rmp_serde::from_slice(bytes)
                        .map_err(|e| {
                            decode_err(key, "it is not a kvmodel MessagePack record", e)
                        })?;
                    v
                }
            };
            Ok(Header {
                encoding: Encoding::MsgPack,
                version,
            })
        }
        Some(&proto::TAG) => Ok(Header {
            encoding: Encoding::Protobuf,
            version: proto::version(key, bytes)?,
        }),
        _ => Err(Error::decode(
            key,
            "it does not start like a kvmodel record (JSON `{`, MessagePack or protobuf \
             envelope, or compressed value)",
            None,
        )),
    }
}

/// Decodes the payload of a record known to be at the current version.
pub fn decode_current<T: DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T> {
    decode_current_with(key, None, bytes)
}

/// [`decode_current`] for a type that may be protobuf-encoded: `message`
/// describes its fields.
pub fn decode_current_with<T: DeserializeOwned>(
    key: &str,
    message: Option<&ProtoMessage>,
    bytes: &[u8],
) -> Result<T> {
    let bad = |e: &dyn std::fmt::Display| format!("its fields do not match the current type ({e})");
    let bytes = &*compress::open(key, bytes)?;
    match bytes.first() {
        Some(&proto::TAG) => {
            let (_, value) = proto::decode(key, message, bytes)?;
            serde_json::from_value(value)
                .map_err(|e| Error::decode(key, bad(&e), Some(Box::new(e))))
        }
        Some(b'{') => {
            if let Some((_, payload)) = json_fast(bytes) {
                return serde_json::from_slice(payload)
                    .map_err(|e| Error::decode(key, bad(&e), Some(Box::new(e))));
            }
            let env: JsonEnvelope = serde_json::from_slice(bytes)
                .map_err(|e| decode_err(key, "it is not a kvmodel JSON record", e))?;
            serde_json::from_value(env.d)
                .map_err(|e| Error::decode(key, bad(&e), Some(Box::new(e))))
        }
        _ => {
            let (_, v): (u32, T) = rmp_serde::from_slice(bytes)
                .map_err(|e| Error::decode(key, bad(&e), Some(Box::new(e))))?;
            Ok(v)
        }
    }
}

/// Decodes plain (not compressed) bytes in one pass when they are a JSON
/// envelope as [`encode`] writes it at version `current`: `None` for any
/// other bytes, which [`header`] and the functions after it read.
pub fn decode_if_current<T: DeserializeOwned>(
    key: &str,
    bytes: &[u8],
    current: u32,
) -> Result<Option<T>> {
    match json_fast(bytes) {
        Some((version, payload)) if version == current => {
            serde_json::from_slice(payload).map(Some).map_err(|e| {
                Error::decode(
                    key,
                    format!("its fields do not match the current type ({e})"),
                    Some(Box::new(e)),
                )
            })
        }
        _ => Ok(None),
    }
}

/// Decodes the payload as a generic value, for migration. MessagePack byte
/// strings (a uuid's 16 bytes) become lists of numbers, which the typed
/// record reads back as they were.
pub fn decode_value(key: &str, bytes: &[u8]) -> Result<(u32, serde_json::Value)> {
    decode_value_with(key, None, bytes)
}

/// [`decode_value`] for a type that may be protobuf-encoded: `message`
/// describes the fields of the version the record was written at.
pub fn decode_value_with(
    key: &str,
    message: Option<&ProtoMessage>,
    bytes: &[u8],
) -> Result<(u32, serde_json::Value)> {
    let bytes = &*compress::open(key, bytes)?;
    match bytes.first() {
        Some(&proto::TAG) => proto::decode(key, message, bytes),
        Some(b'{') => {
            let env: JsonEnvelope = serde_json::from_slice(bytes)
                .map_err(|e| decode_err(key, "it is not a kvmodel JSON record", e))?;
            Ok((env.v, env.d))
        }
        _ => rmp_serde::from_slice::<(u32, crate::codec::value::Generic<false>)>(bytes)
            .map(|(v, crate::codec::value::Generic(value))| (v, value))
            .map_err(|e| decode_err(key, "it is not a kvmodel MessagePack record", e)),
    }
}

/// Converts a migrated value into the current type.
pub fn from_value<T: DeserializeOwned>(key: &str, value: serde_json::Value) -> Result<T> {
    serde_json::from_value(value).map_err(|e| {
        Error::decode(
            key,
            format!("after migration its fields do not match the current type ({e})"),
            Some(Box::new(e)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct User {
        id: String,
        age: u32,
    }

    /// The one-pass read takes only a JSON envelope at the current version;
    /// fields that do not match are the error `decode_current` reports.
    #[test]
    fn decode_if_current_reads_the_current_json_envelope_only() {
        let u = User {
            id: "x".into(),
            age: 4,
        };
        let json = encode("k", Encoding::Json, 2, &u).unwrap();
        assert_eq!(decode_if_current::<User>("k", &json, 2).unwrap(), Some(u));
        assert_eq!(decode_if_current::<User>("k", &json, 3).unwrap(), None);
        let msgpack = encode("k", Encoding::MsgPack, 2, &7u32).unwrap();
        assert_eq!(decode_if_current::<User>("k", &msgpack, 2).unwrap(), None);
        let other = br#"{ "d": {"id":"x","age":1}, "v": 2 }"#;
        assert_eq!(decode_if_current::<User>("k", other, 2).unwrap(), None);
        let wrong = br#"{"v":2,"d":{"id":5}}"#;
        let fast = decode_if_current::<User>("shop:user:1", wrong, 2).unwrap_err();
        let slow = decode_current::<User>("shop:user:1", wrong).unwrap_err();
        assert_eq!(fast.to_string(), slow.to_string());
    }

    #[test]
    fn json_is_valid_json_with_version() {
        let u = User {
            id: "a\"}".into(),
            age: 3,
        };
        let bytes = encode("k", Encoding::Json, 7, &u).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["v"], 7);
        assert_eq!(v["d"]["id"], "a\"}");
        assert_eq!(header("k", &bytes).unwrap().version, 7);
        assert_eq!(decode_current::<User>("k", &bytes).unwrap(), u);
    }

    #[test]
    fn json_written_by_others_still_reads() {
        let bytes = br#"{ "d": {"id":"x","age":1}, "v": 2 }"#;
        assert_eq!(header("k", bytes).unwrap().version, 2);
        assert_eq!(decode_current::<User>("k", bytes).unwrap().id, "x");
    }

    #[test]
    fn msgpack_round_trip() {
        let u = User {
            id: "x".into(),
            age: 9,
        };
        let bytes = encode("k", Encoding::MsgPack, 3, &u).unwrap();
        assert_eq!(bytes[0], MSGPACK_TAG);
        let h = header("k", &bytes).unwrap();
        assert_eq!((h.encoding, h.version), (Encoding::MsgPack, 3));
        for v in [0u32, 127, 128, 255, 256, 65_535, 65_536, u32::MAX] {
            let b = encode("k", Encoding::MsgPack, v, &u).unwrap();
            assert_eq!(header("k", &b).unwrap().version, v, "version {v}");
        }
        assert_eq!(decode_current::<User>("k", &bytes).unwrap(), u);
        let (v, value) = decode_value("k", &bytes).unwrap();
        assert_eq!((v, value["age"].as_u64()), (3, Some(9)));
    }

    /// A float reads back as the very value written, in JSON too.
    #[test]
    fn json_floats_read_back_exactly() {
        for x in [
            -5.429664152337825e225,
            0.1 + 0.2,
            f64::MIN_POSITIVE,
            1e-310,
            f64::MAX,
        ] {
            let bytes = encode("k", Encoding::Json, 1, &x).unwrap();
            assert_eq!(
                decode_current::<f64>("k", &bytes).unwrap().to_bits(),
                x.to_bits(),
                "{x:e}"
            );
            let (_, value) = decode_value("k", &bytes).unwrap();
            assert_eq!(
                from_value::<f64>("k", value).unwrap().to_bits(),
                x.to_bits(),
                "{x:e}"
            );
        }
    }

    #[test]
    fn garbage_is_a_decode_error_naming_the_key() {
        for bytes in [&b""[..], b"\xff", b"{not json", b"\x92\xc1"] {
            let err = header("shop:user:1", bytes).unwrap_err();
            assert!(err.to_string().contains("shop:user:1"), "{err}");
        }
        let err = decode_current::<User>("shop:user:1", br#"{"v":1,"d":{"id":5}}"#).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
    }

    /// The envelope reads a protobuf record's header, never panics on a
    /// cut one, and names a float that protobuf cannot hold.
    #[test]
    fn protobuf_records_have_headers_and_refuse_non_finite_floats() {
        use crate::codec::proto::{ProtoField, ProtoShape};
        use crate::codec::scalar::Scalar;
        const M: ProtoMessage = ProtoMessage {
            fields: &[ProtoField {
                name: "x",
                number: 1,
                kind: Scalar::F64,
                shape: ProtoShape::One,
            }],
            renamed: &[],
        };
        #[derive(serde::Serialize)]
        struct R {
            x: f64,
        }
        let err =
            encode_with("k", Encoding::Protobuf, Some(&M), 1, &R { x: f64::NAN }).unwrap_err();
        assert!(err.to_string().contains("`x` is NaN or infinite"), "{err}");
        let ok = encode_with("k", Encoding::Protobuf, Some(&M), 3, &R { x: -0.5 }).unwrap();
        assert_eq!(ok[0], proto::TAG);
        let h = header("k", &ok).unwrap();
        assert_eq!((h.encoding, h.version), (Encoding::Protobuf, 3));
        for cut in 0..ok.len() {
            let _ = header("shop:r:1", &ok[..cut]);
        }
    }
}
