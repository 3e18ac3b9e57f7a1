//! The protobuf wire format of records, with prost's encoding primitives.
//! Stored bytes are not trusted: every length is checked against what is
//! left, and nothing here panics on any input.

use prost::encoding::{WireType, decode_key, decode_varint, encode_key, encode_varint};
use serde_json::{Map, Value};

use super::{ProtoField, ProtoMessage, ProtoShape};
use crate::codec::scalar::Scalar;
use crate::time::Timestamp;

type Reason = String;

/// Envelope field numbers.
const VERSION: u32 = 1;
const RECORD: u32 = 2;

fn wire_type(kind: Scalar) -> WireType {
    match kind {
        Scalar::Bool | Scalar::I32 | Scalar::I64 | Scalar::U32 | Scalar::U64 => WireType::Varint,
        Scalar::F64 => WireType::SixtyFourBit,
        _ => WireType::LengthDelimited,
    }
}

/// Whether a list of `kind` is written packed (proto3's default for numbers).
fn packed(kind: Scalar) -> bool {
    wire_type(kind) != WireType::LengthDelimited
}

fn put_len(buf: &mut Vec<u8>, bytes: &[u8]) {
    encode_varint(bytes.len() as u64, buf);
    buf.extend_from_slice(bytes);
}

fn mismatch(path: &str, what: &str) -> Reason {
    format!("`{path}` should be {what} to be written as protobuf")
}

/// Writes one value of `kind` without its key.
fn put_value(buf: &mut Vec<u8>, path: &str, kind: Scalar, v: &Value) -> Result<(), Reason> {
    match kind {
        Scalar::String | Scalar::Date => {
            put_len(
                buf,
                v.as_str().ok_or_else(|| mismatch(path, "text"))?.as_bytes(),
            );
        }
        Scalar::Bool => encode_varint(
            u64::from(v.as_bool().ok_or_else(|| mismatch(path, "a bool"))?),
            buf,
        ),
        Scalar::I32 | Scalar::I64 => {
            // int32 and int64 are both written as the 64-bit two's complement.
            let i = v.as_i64().ok_or_else(|| mismatch(path, "an integer"))?;
            encode_varint(i as u64, buf);
        }
        Scalar::U32 | Scalar::U64 => {
            encode_varint(
                v.as_u64()
                    .ok_or_else(|| mismatch(path, "an unsigned integer"))?,
                buf,
            );
        }
        Scalar::F64 => {
            let x = v.as_f64().ok_or_else(|| mismatch(path, "a number"))?;
            buf.extend_from_slice(&x.to_le_bytes());
        }
        Scalar::Bytes => put_len(buf, &byte_list(path, v)?),
        Scalar::Uuid => {
            let u = v
                .as_str()
                .and_then(|s| uuid::Uuid::parse_str(s).ok())
                .ok_or_else(|| mismatch(path, "a uuid"))?;
            put_len(buf, u.as_bytes());
        }
        Scalar::Timestamp => {
            let t: Timestamp = v
                .as_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| mismatch(path, "a timestamp"))?;
            let ms = t.as_unix_millis();
            let (seconds, nanos) = (ms.div_euclid(1000), ms.rem_euclid(1000) * 1_000_000);
            let mut inner = Vec::with_capacity(16);
            if seconds != 0 {
                encode_key(1, WireType::Varint, &mut inner);
                encode_varint(seconds as u64, &mut inner);
            }
            if nanos != 0 {
                encode_key(2, WireType::Varint, &mut inner);
                encode_varint(nanos as u64, &mut inner);
            }
            put_len(buf, &inner);
        }
    }
    Ok(())
}

fn byte_list(path: &str, v: &Value) -> Result<Vec<u8>, Reason> {
    v.as_array()
        .ok_or_else(|| mismatch(path, "a list of bytes"))?
        .iter()
        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| mismatch(path, "a list of bytes (0 to 255)"))
}

fn put_field(buf: &mut Vec<u8>, f: &ProtoField, v: &Value) -> Result<(), Reason> {
    let path = f.name;
    match f.shape {
        ProtoShape::One | ProtoShape::Optional => {
            if v.is_null() {
                if f.shape == ProtoShape::One {
                    return Err(format!("`{path}` is missing, and it is not optional"));
                }
                return Ok(());
            }
            encode_key(f.number, wire_type(f.kind), buf);
            put_value(buf, path, f.kind, v)
        }
        ProtoShape::List => {
            let items = v.as_array().ok_or_else(|| mismatch(path, "a list"))?;
            if items.is_empty() {
                return Ok(());
            }
            if packed(f.kind) {
                let mut inner = Vec::with_capacity(items.len() * 2);
                for x in items {
                    put_value(&mut inner, path, f.kind, x)?;
                }
                encode_key(f.number, WireType::LengthDelimited, buf);
                put_len(buf, &inner);
            } else {
                for x in items {
                    encode_key(f.number, WireType::LengthDelimited, buf);
                    put_value(buf, path, f.kind, x)?;
                }
            }
            Ok(())
        }
        ProtoShape::Map => {
            let entries = v.as_object().ok_or_else(|| mismatch(path, "a map"))?;
            for (k, x) in entries {
                let mut entry = Vec::with_capacity(k.len() + 16);
                encode_key(1, WireType::LengthDelimited, &mut entry);
                put_len(&mut entry, k.as_bytes());
                encode_key(2, wire_type(f.kind), &mut entry);
                put_value(&mut entry, path, f.kind, x)?;
                encode_key(f.number, WireType::LengthDelimited, buf);
                put_len(buf, &entry);
            }
            Ok(())
        }
    }
}

/// The envelope of the record `value` at `version`.
pub(super) fn encode(
    message: &ProtoMessage,
    version: u32,
    value: &Value,
) -> Result<Vec<u8>, Reason> {
    let Value::Object(entries) = value else {
        return Err("a record is a map of fields".to_owned());
    };
    let mut record = Vec::with_capacity(64);
    for f in message.fields {
        put_field(&mut record, f, entries.get(f.name).unwrap_or(&Value::Null))?;
    }
    let mut out = Vec::with_capacity(record.len() + 12);
    encode_key(VERSION, WireType::Varint, &mut out);
    encode_varint(u64::from(version), &mut out);
    encode_key(RECORD, WireType::LengthDelimited, &mut out);
    put_len(&mut out, &record);
    Ok(out)
}

/// A cursor over untrusted bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, Reason> {
        decode_varint(&mut self.0)
            .map_err(|e| format!("its protobuf is truncated or malformed ({e})"))
    }

    fn key(&mut self) -> Result<(u32, WireType), Reason> {
        decode_key(&mut self.0).map_err(|e| format!("its protobuf is malformed ({e})"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Reason> {
        if n > self.0.len() {
            return Err(format!(
                "its protobuf is truncated: a field claims {n} bytes where {} are left",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], Reason> {
        let n = self.varint()?;
        self.take(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Skips a field of an unknown number.
    fn skip(&mut self, wt: WireType) -> Result<(), Reason> {
        match wt {
            WireType::Varint => self.varint().map(drop),
            WireType::SixtyFourBit => self.take(8).map(drop),
            WireType::ThirtyTwoBit => self.take(4).map(drop),
            WireType::LengthDelimited => self.len_delimited().map(drop),
            WireType::StartGroup | WireType::EndGroup => {
                Err("its protobuf holds a group, which kvmodel never writes".to_owned())
            }
        }
    }
}

/// The version and record bytes of an envelope.
pub(super) fn envelope(bytes: &[u8]) -> Result<(u32, &[u8]), Reason> {
    let mut r = Reader(bytes);
    let (n, wt) = r.key()?;
    if (n, wt) != (VERSION, WireType::Varint) {
        return Err(
            "it does not start like a kvmodel protobuf envelope (version first)".to_owned(),
        );
    }
    let version = u32::try_from(r.varint()?)
        .map_err(|_| "its protobuf envelope's version is larger than a u32".to_owned())?;
    let mut record: &[u8] = &[];
    while !r.0.is_empty() {
        match r.key()? {
            (RECORD, WireType::LengthDelimited) => record = r.len_delimited()?,
            (_, wt) => r.skip(wt)?,
        }
    }
    Ok((version, record))
}

fn wrong_type(path: &str, wt: WireType) -> Reason {
    format!("`{path}` is stored with the protobuf wire type {wt:?}, which its type never has")
}

/// Reads one value of `kind` written with wire type `wt`.
fn get_value(r: &mut Reader<'_>, path: &str, kind: Scalar, wt: WireType) -> Result<Value, Reason> {
    if wt != wire_type(kind) {
        return Err(wrong_type(path, wt));
    }
    Ok(match kind {
        Scalar::String | Scalar::Date => {
            let b = r.len_delimited()?;
            let s = std::str::from_utf8(b)
                .map_err(|_| format!("`{path}` should be text, but it is not UTF-8"))?;
            Value::String(s.to_owned())
        }
        Scalar::Bool => Value::Bool(r.varint()? != 0),
        // Protobuf reads int32 and uint32 by truncating the 64-bit value.
        Scalar::I32 => Value::from(r.varint()? as i32),
        Scalar::I64 => Value::from(r.varint()? as i64),
        Scalar::U32 => Value::from(r.varint()? as u32),
        Scalar::U64 => Value::from(r.varint()?),
        Scalar::F64 => {
            let b = r.take(8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Value::from(f64::from_le_bytes(a))
        }
        Scalar::Bytes => Value::Array(r.len_delimited()?.iter().map(|b| Value::from(*b)).collect()),
        Scalar::Uuid => {
            let u = uuid::Uuid::from_slice(r.len_delimited()?)
                .map_err(|_| format!("`{path}` should be a uuid's 16 bytes"))?;
            Value::String(u.hyphenated().to_string())
        }
        Scalar::Timestamp => {
            let mut inner = Reader(r.len_delimited()?);
            let (mut seconds, mut nanos) = (0i64, 0i64);
            while !inner.0.is_empty() {
                match inner.key()? {
                    (1, WireType::Varint) => seconds = inner.varint()? as i64,
                    (2, WireType::Varint) => nanos = i64::from(inner.varint()? as i32),
                    (_, wt) => inner.skip(wt)?,
                }
            }
            if nanos % 1_000_000 != 0 || !(0..1_000_000_000).contains(&nanos) {
                return Err(format!(
                    "`{path}` has {nanos} nanoseconds; a kvmodel timestamp holds whole \
                     milliseconds"
                ));
            }
            let t = seconds
                .checked_mul(1000)
                .and_then(|ms| ms.checked_add(nanos / 1_000_000))
                .and_then(|ms| Timestamp::from_unix_millis(ms).ok())
                .ok_or_else(|| format!("`{path}` is outside the years 0000 to 9999"))?;
            Value::String(t.to_string())
        }
    })
}

/// Reads the items of a list field, packed or not.
fn get_items(
    r: &mut Reader<'_>,
    path: &str,
    kind: Scalar,
    wt: WireType,
    items: &mut Vec<Value>,
) -> Result<(), Reason> {
    if packed(kind) && wt == WireType::LengthDelimited {
        let mut inner = Reader(r.len_delimited()?);
        while !inner.0.is_empty() {
            items.push(get_value(&mut inner, path, kind, wire_type(kind))?);
        }
        return Ok(());
    }
    items.push(get_value(r, path, kind, wt)?);
    Ok(())
}

/// Reads a map entry into `entries`.
fn get_entry(
    r: &mut Reader<'_>,
    path: &str,
    kind: Scalar,
    wt: WireType,
    entries: &mut Map<String, Value>,
) -> Result<(), Reason> {
    if wt != WireType::LengthDelimited {
        return Err(wrong_type(path, wt));
    }
    let mut inner = Reader(r.len_delimited()?);
    let (mut key, mut value) = (String::new(), None);
    while !inner.0.is_empty() {
        match inner.key()? {
            (1, wt) => {
                key = match get_value(&mut inner, path, Scalar::String, wt)? {
                    Value::String(s) => s,
                    _ => String::new(),
                }
            }
            (2, wt) => value = Some(get_value(&mut inner, path, kind, wt)?),
            (_, wt) => inner.skip(wt)?,
        }
    }
    let value = match value {
        Some(v) => v,
        None => zero(kind).ok_or_else(|| format!("`{path}.{key}` has no value"))?,
    };
    entries.insert(key, value);
    Ok(())
}

/// The value protobuf reads for an absent field of `kind`, where it has one.
fn zero(kind: Scalar) -> Option<Value> {
    Some(match kind {
        Scalar::String => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        Scalar::I32 | Scalar::I64 | Scalar::U32 | Scalar::U64 => Value::from(0),
        Scalar::F64 => Value::from(0.0),
        Scalar::Bytes => Value::Array(Vec::new()),
        _ => return None,
    })
}

/// The JSON value of the record bytes `bytes`: each known field under its
/// name, unknown numbers skipped. A list or map that is absent is empty
/// (protobuf cannot tell them apart); an absent field of one value is left
/// out, for a migration step or serde to default or report.
pub(super) fn decode(message: &ProtoMessage, bytes: &[u8]) -> Result<Value, Reason> {
    let mut out = Map::new();
    let mut r = Reader(bytes);
    while !r.0.is_empty() {
        let (n, wt) = r.key()?;
        let field = message
            .fields
            .iter()
            .chain(message.renamed)
            .find(|f| f.number == n);
        let Some(f) = field else {
            r.skip(wt)?;
            continue;
        };
        match f.shape {
            ProtoShape::One | ProtoShape::Optional => {
                let v = get_value(&mut r, f.name, f.kind, wt)?;
                out.insert(f.name.to_owned(), v);
            }
            ProtoShape::List => {
                let slot = out
                    .entry(f.name.to_owned())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(items) = slot {
                    get_items(&mut r, f.name, f.kind, wt, items)?;
                }
            }
            ProtoShape::Map => {
                let slot = out
                    .entry(f.name.to_owned())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(entries) = slot {
                    get_entry(&mut r, f.name, f.kind, wt, entries)?;
                }
            }
        }
    }
    for f in message.fields {
        if out.contains_key(f.name) {
            continue;
        }
        let absent = match f.shape {
            ProtoShape::List => Some(Value::Array(Vec::new())),
            ProtoShape::Map => Some(Value::Object(Map::new())),
            // Fields of one value are always written (explicit presence):
            // one that is absent did not exist at the record's version, and
            // a migration step or its default fills it in.
            ProtoShape::One | ProtoShape::Optional => None,
        };
        if let Some(v) = absent {
            out.insert(f.name.to_owned(), v);
        }
    }
    Ok(Value::Object(out))
}
