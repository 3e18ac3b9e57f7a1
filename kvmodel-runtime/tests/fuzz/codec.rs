//! Records, key components, sort keys, counters, entries and cursors.

use std::collections::BTreeMap;

use bolero::{TypeGenerator, check};
use kvmodel_runtime::__private::key::{
    SortReader, derived_parts, escape, escape_bytes_into, read_terminated, sort_key, unescape,
    unescape_bytes, write_terminated,
};
use kvmodel_runtime::__private::{
    Derived, Encoding, KeyBuilder, KeyMatch, SortPart, from_value, record,
};
use kvmodel_runtime::store::counter::{parse_counter, read_counter};
use kvmodel_runtime::store::{decode_entry, encode_entry};
use kvmodel_runtime::{Cursor, Date, Direction, Error, ListRequest, PageRequest, Timestamp, Uuid};
use serde::{Deserialize, Serialize};

use super::BUDGET;

const KEY: &str = "fuzz:record:1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TypeGenerator)]
#[serde(rename_all = "snake_case")]
enum Status {
    Active,
    Gone,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TypeGenerator)]
struct Address {
    city: String,
    zip: Option<String>,
}

/// A record with a field of every type a schema can declare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TypeGenerator)]
struct Rec {
    id: String,
    n: i64,
    big: u64,
    small: u32,
    i: i32,
    ratio: f64,
    flag: bool,
    bytes: Vec<u8>,
    #[generator(bolero::ValueGenerator::map_gen(bolero::produce::<i64>(), instant))]
    at: Timestamp,
    #[generator(bolero::ValueGenerator::map_gen(bolero::produce::<i64>(), |ms| instant(ms).date()))]
    day: Date,
    #[generator(bolero::ValueGenerator::map_gen(bolero::produce::<u128>(), Uuid::from_u128))]
    uid: Uuid,
    tags: Vec<String>,
    scores: BTreeMap<String, i64>,
    age: Option<u32>,
    status: Status,
    address: Option<Address>,
}

/// Any accepted instant: `ms` folded into years 0000 to 9999.
fn instant(ms: i64) -> Timestamp {
    let min = Timestamp::MIN.as_unix_millis();
    let span = Timestamp::MAX.as_unix_millis() - min + 1;
    Timestamp::from_unix_millis(min + ms.rem_euclid(span)).expect("folded into the range")
}

/// Known limit of the migration path, whose generic value is JSON's: it
/// has no NaN or infinity.
fn migration_path_holds(rec: &Rec) -> bool {
    rec.ratio.is_finite()
}

fn encodings() -> [Encoding; 2] {
    [Encoding::Json, Encoding::MsgPack]
}

/// Arbitrary stored bytes: every reading of a record either succeeds or is
/// an error that names the key; what decodes re-encodes to a record that
/// decodes to the same value, at the same version.
#[test]
fn record_bytes() {
    check!(name = "record_bytes")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| {
            let header = record::header(KEY, bytes);
            let value = record::decode_value(KEY, bytes);
            let current = record::decode_current::<Rec>(KEY, bytes);
            let _ = record::decode_current::<serde_json::Value>(KEY, bytes);
            for err in [
                header.as_ref().err(),
                value.as_ref().err(),
                current.as_ref().err(),
            ]
            .into_iter()
            .flatten()
            {
                assert!(matches!(err, Error::Decode { .. }), "{err:?}");
                assert!(err.to_string().contains(KEY), "{err}");
            }
            if let (Ok((version, _)), Ok(h)) = (&value, &header) {
                assert_eq!(h.version, *version, "header and payload disagree");
            }
            if let Ok(rec) = current {
                let h = header.expect("a record that decodes has a header");
                let again = record::encode(KEY, h.encoding, h.version, &rec).unwrap();
                assert_eq!(record::header(KEY, &again).unwrap(), h);
                let back: Rec = record::decode_current(KEY, &again).unwrap();
                let twice = record::encode(KEY, h.encoding, h.version, &back).unwrap();
                assert_eq!(again, twice, "encoding is not stable");
            }
        });
}

/// The parts of an envelope, put together with small deviations from what
/// `encode` writes, so the header paths meet near-misses.
#[derive(Debug, TypeGenerator)]
struct Envelope {
    msgpack: bool,
    version: Version,
    payload: Payload,
    /// Bytes cut off the end (0: none).
    cut: u8,
    /// Bytes appended after the envelope.
    trailer: Vec<u8>,
}

#[derive(Debug, TypeGenerator)]
enum Version {
    Number(u64),
    Negative(i64),
    Text(String),
    Float(f64),
}

#[derive(Debug, TypeGenerator)]
enum Payload {
    Record(Rec),
    Raw(Vec<u8>),
    Json(String),
}

fn envelope_bytes(e: &Envelope) -> Vec<u8> {
    let mut out = if e.msgpack {
        let payload = match &e.payload {
            Payload::Record(r) => rmp_value(r),
            Payload::Raw(b) => rmpv_bytes(b),
            Payload::Json(s) => rmp_value(s),
        };
        let mut out = vec![0x92];
        match &e.version {
            Version::Number(n) => out.extend(rmp_value(n)),
            Version::Negative(n) => out.extend(rmp_value(n)),
            Version::Text(s) => out.extend(rmp_value(s)),
            Version::Float(f) => out.extend(rmp_value(f)),
        }
        out.extend(payload);
        out
    } else {
        let payload = match &e.payload {
            Payload::Record(r) => serde_json::to_vec(r).unwrap_or_default(),
            Payload::Raw(b) => b.clone(),
            Payload::Json(s) => s.as_bytes().to_vec(),
        };
        let version = match &e.version {
            Version::Number(n) => n.to_string(),
            Version::Negative(n) => n.to_string(),
            Version::Text(s) => s.clone(),
            Version::Float(f) => f.to_string(),
        };
        let mut out = b"{\"v\":".to_vec();
        out.extend(version.as_bytes());
        out.extend(b",\"d\":");
        out.extend(payload);
        out.push(b'}');
        out
    };
    out.truncate(out.len().saturating_sub(usize::from(e.cut % 4)));
    out.extend(&e.trailer);
    out
}

fn rmp_value<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    rmp_serde::to_vec_named(v).unwrap_or_default()
}

fn rmpv_bytes(b: &[u8]) -> Vec<u8> {
    // Raw bytes as they are: whatever follows the version.
    b.to_vec()
}

/// Envelopes close to the real ones: the same properties as
/// [`record_bytes`], on inputs that reach past the first byte.
#[test]
fn record_envelopes() {
    check!(name = "record_envelopes")
        .with_test_time(BUDGET)
        .with_type::<Envelope>()
        .for_each(|e| {
            let bytes = envelope_bytes(e);
            let header = record::header(KEY, &bytes);
            let value = record::decode_value(KEY, &bytes);
            let current = record::decode_current::<Rec>(KEY, &bytes);
            for err in [header.as_ref().err(), current.as_ref().err()]
                .into_iter()
                .flatten()
            {
                assert!(err.to_string().contains(KEY), "{err}");
            }
            if let (Ok((version, _)), Ok(h)) = (&value, &header) {
                assert_eq!(h.version, *version, "header and payload disagree");
            }
            if current.is_ok() {
                assert!(header.is_ok(), "a record that decodes has a header");
            }
        });
}

/// Every value of every field type survives `encode` then `decode`, in
/// both encodings, at any version; or `encode` refuses it. Read back
/// through the migration path's generic value too, except where that is
/// known not to hold (see [`migration_path_holds`]).
#[test]
fn record_round_trip() {
    check!(name = "record_round_trip")
        .with_test_time(BUDGET)
        .with_type::<(Rec, u32)>()
        .for_each(|(rec, version)| {
            for encoding in encodings() {
                if encoding == Encoding::Json && !rec.ratio.is_finite() {
                    // Known limit: JSON has no NaN or infinity (serde_json
                    // writes `null`, which does not read back as an f64).
                    continue;
                }
                let Ok(bytes) = record::encode(KEY, encoding, *version, rec) else {
                    continue;
                };
                let h = record::header(KEY, &bytes).unwrap();
                assert_eq!((h.encoding, h.version), (encoding, *version));
                let back: Rec = record::decode_current(KEY, &bytes)
                    .unwrap_or_else(|e| panic!("{encoding:?} wrote what it cannot read: {e}"));
                let again = record::encode(KEY, encoding, *version, &back).unwrap();
                assert_eq!(bytes, again, "{encoding:?} does not round-trip {rec:?}");
                if !migration_path_holds(rec) {
                    continue;
                }
                let (v, value) = record::decode_value(KEY, &bytes).unwrap();
                assert_eq!(v, *version);
                let migrated: Rec = from_value(KEY, value)
                    .unwrap_or_else(|e| panic!("{encoding:?}: the migration path fails: {e}"));
                let via = record::encode(KEY, encoding, *version, &migrated).unwrap();
                assert_eq!(
                    bytes, via,
                    "{encoding:?}: the migration path changes {rec:?}"
                );
            }
        });
}

/// Timestamps and dates as stored text.
#[test]
fn time_text() {
    check!(name = "time_text")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| {
            let Ok(s) = std::str::from_utf8(bytes) else {
                return;
            };
            if let Ok(t) = s.parse::<Timestamp>() {
                assert_eq!(t.to_string().parse::<Timestamp>(), Ok(t), "{s}");
                let _ = (t.date(), t.start_of_hour(), t.hour());
            }
            if let Ok(d) = s.parse::<Date>() {
                assert_eq!(d.to_string().parse::<Date>(), Ok(d), "{s}");
                let _ = (d.first_of_month(), Timestamp::from(d));
            }
            let json = serde_json::to_string(s).unwrap();
            let _ = serde_json::from_str::<Timestamp>(&json);
            let _ = serde_json::from_str::<Date>(&json);
        });
}

/// Key components: escaping is reversible, keeps every reserved byte out of
/// the key, and a built key matches itself; unescaping anything returns a
/// value or an error.
#[test]
fn key_components() {
    check!(name = "key_components")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| {
            let mut escaped = String::new();
            escape_bytes_into(&mut escaped, bytes);
            assert!(escaped.bytes().all(|b| b.is_ascii_graphic() || b == b' '));
            assert_eq!(unescape_bytes(&escaped).unwrap(), bytes);
            let Ok(s) = std::str::from_utf8(bytes) else {
                return;
            };
            let _ = unescape(s);
            let _ = unescape_bytes(s);
            let e = escape(s);
            assert!(!e.contains([':', '{', '}', '#']), "{e}");
            assert_eq!(unescape(&e).unwrap(), s);
            let key = KeyBuilder::new("ns").lit("user").part(s).finish();
            assert_eq!(key.split(':').count(), 3, "{key}");
            assert!(KeyMatch::new(&key, "ns").lit("user").part(s).finish());
            assert!(
                !KeyMatch::new(&key, "ns")
                    .lit("user")
                    .part(&format!("{s}x"))
                    .finish()
            );
            let derived = KeyBuilder::derived("ns", "user", Derived::Index)
                .lit("by_x")
                .part(s)
                .finish();
            assert_eq!(
                derived_parts(&derived, Derived::Index, "by_x"),
                Some(vec![s.to_owned()])
            );
            for kind in Derived::ALL {
                let _ = derived_parts(s, kind, "by_x");
                let _ = derived_parts(s, kind, s);
            }
        });
}

/// Sort keys: reading arbitrary bytes back with any sequence of readers
/// never panics; terminated strings round-trip.
#[test]
fn sort_keys() {
    check!(name = "sort_keys")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| {
            let mut out = Vec::new();
            write_terminated(&mut out, bytes);
            let (back, rest) = read_terminated(&out).unwrap();
            assert_eq!((back.as_slice(), rest), (bytes, &[][..]));
            let _ = read_terminated(bytes);
            // The first byte picks the readers, the rest is read.
            let (ops, input) = bytes.split_first().map_or((0, bytes), |(o, r)| (*o, r));
            let mut reader = SortReader::new(input);
            for step in 0..4 {
                let _ = match (ops >> (2 * step)) & 3 {
                    0 => reader.u64().map(|_| ()),
                    1 => reader.i32().map(|_| ()),
                    2 => reader.string().map(|_| ()),
                    _ => reader.f64().and(reader.bool()).map(|_| ()),
                };
            }
            let _ = reader.is_empty();
            let _ = parse_counter("k", bytes);
            let _ = read_counter("k", bytes);
        });
}

/// Two values of one sortable type.
#[derive(Debug, TypeGenerator)]
enum Pair {
    I64(i64, i64),
    U64(u64, u64),
    I32(i32, i32),
    F64(f64, f64),
    Bool(bool, bool),
    Text(String, String),
    Time(i64, i64),
    Tuple((i32, String), (i32, String)),
}

fn order<T: SortPart + ?Sized>(a: &T, b: &T) -> std::cmp::Ordering {
    sort_key(a).cmp(&sort_key(b))
}

/// Byte order of sort keys is value order, for every sortable type, and
/// collection entries sort as `(sort key, member)`.
#[test]
fn sort_order() {
    check!(name = "sort_order")
        .with_test_time(BUDGET)
        .with_type::<(Pair, Vec<u8>, Vec<u8>)>()
        .for_each(|(pair, m1, m2)| {
            let (want, got, s1, s2) = match pair {
                Pair::I64(a, b) => (a.cmp(b), order(a, b), sort_key(a), sort_key(b)),
                Pair::U64(a, b) => (a.cmp(b), order(a, b), sort_key(a), sort_key(b)),
                Pair::I32(a, b) => (a.cmp(b), order(a, b), sort_key(a), sort_key(b)),
                Pair::F64(a, b) => (a.total_cmp(b), order(a, b), sort_key(a), sort_key(b)),
                Pair::Bool(a, b) => (a.cmp(b), order(a, b), sort_key(a), sort_key(b)),
                Pair::Text(a, b) => (a.cmp(b), order(a, b), sort_key(a), sort_key(b)),
                Pair::Time(a, b) => {
                    let (a, b) = (instant(*a), instant(*b));
                    (a.cmp(&b), order(&a, &b), sort_key(&a), sort_key(&b))
                }
                Pair::Tuple((a1, a2), (b1, b2)) => {
                    let enc = |n: &i32, s: &String| {
                        let mut out = Vec::new();
                        n.write_sort(&mut out);
                        s.write_sort(&mut out);
                        out
                    };
                    let (ea, eb) = (enc(a1, a2), enc(b1, b2));
                    ((a1, a2).cmp(&(b1, b2)), ea.cmp(&eb), ea, eb)
                }
            };
            assert_eq!(want, got, "{pair:?}");
            let e1 = encode_entry(&s1, m1);
            let e2 = encode_entry(&s2, m2);
            assert_eq!((&s1, m1).cmp(&(&s2, m2)), e1.cmp(&e2), "{pair:?}");
            let back = decode_entry(&e1).unwrap();
            assert_eq!((&back.sort, &back.member), (&s1, m1));
        });
}

/// Collection entries as backends store them.
#[test]
fn entries() {
    check!(name = "entries")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| match decode_entry(bytes) {
            Ok(m) => assert_eq!(encode_entry(&m.sort, &m.member), bytes),
            Err(e) => assert!(matches!(e, Error::InvalidCursor { .. }), "{e:?}"),
        });
}

/// Cursors as clients send them back: text that parses round-trips, and a
/// listing refuses a cursor of another listing or direction with an error.
#[test]
fn cursors() {
    check!(name = "cursors")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| {
            let _ = serde_json::from_slice::<Cursor>(bytes);
            let Ok(s) = std::str::from_utf8(bytes) else {
                return;
            };
            match s.parse::<Cursor>() {
                Ok(c) => {
                    assert_eq!(c.to_string(), s.to_ascii_lowercase());
                    assert_eq!(c.to_string().parse::<Cursor>().unwrap(), c);
                    let json = serde_json::to_string(&c).unwrap();
                    assert_eq!(serde_json::from_str::<Cursor>(&json).unwrap(), c);
                    let _ = format!("{c:?}");
                    for listing in ["ns:user#all", s] {
                        let req = ListRequest::from(PageRequest::new(10).after(c.clone()));
                        match req.range(listing) {
                            Ok(r) => {
                                assert!(c.belongs_to(listing));
                                assert_eq!(r.after.as_deref(), Some(c.position()));
                                assert_eq!(r.direction, c.direction());
                            }
                            Err(e) => assert!(matches!(e, Error::InvalidCursor { .. })),
                        }
                        let flipped = match c.direction() {
                            Direction::Ascending => {
                                PageRequest::new(10).after(c.clone()).descending()
                            }
                            Direction::Descending => continue,
                        };
                        assert!(ListRequest::from(flipped).range(listing).is_err());
                    }
                }
                Err(e) => assert!(matches!(e, Error::InvalidCursor { .. }), "{e:?}"),
            }
        });
}

/// The fields of a protobuf record of every kind and shape.
const PROTO: kvmodel_runtime::__private::ProtoMessage = {
    use kvmodel_runtime::__private::{ProtoField, ProtoMessage, ProtoShape as S, Scalar as K};
    const fn f(name: &'static str, number: u32, kind: K, shape: S) -> ProtoField {
        ProtoField {
            name,
            number,
            kind,
            shape,
        }
    }
    ProtoMessage {
        fields: &[
            f("id", 1, K::String, S::One),
            f("n", 2, K::I64, S::One),
            f("big", 3, K::U64, S::One),
            f("small", 4, K::U32, S::One),
            f("i", 5, K::I32, S::One),
            f("ratio", 6, K::F64, S::One),
            f("flag", 7, K::Bool, S::One),
            f("bytes", 8, K::Bytes, S::One),
            f("at", 9, K::Timestamp, S::One),
            f("day", 10, K::Date, S::One),
            f("uid", 11, K::Uuid, S::One),
            f("tags", 12, K::String, S::List),
            f("scores", 13, K::I64, S::Map),
            f("age", 14, K::U32, S::Optional),
            f("status", 15, K::String, S::One),
            f("when", 16, K::Timestamp, S::List),
            f("ratios", 17, K::F64, S::List),
        ],
        renamed: &[f("old_id", 18, K::String, S::One)],
    }
};

/// Arbitrary protobuf envelopes (the tag byte, then anything): every
/// reading either succeeds or is an error naming the key, never a panic;
/// what decodes encodes again to bytes that decode to the same value.
#[test]
fn protobuf_bytes() {
    use kvmodel_runtime::__private::proto;
    check!(name = "protobuf_bytes")
        .with_test_time(BUDGET)
        .for_each(|tail: &[u8]| {
            let mut bytes = vec![proto::TAG];
            bytes.extend_from_slice(tail);
            let header = record::header(KEY, &bytes);
            let value = proto::decode(KEY, Some(&PROTO), &bytes);
            for err in [header.as_ref().err(), value.as_ref().err()]
                .into_iter()
                .flatten()
            {
                assert!(matches!(err, Error::Decode { .. }), "{err:?}");
                assert!(err.to_string().contains(KEY), "{err}");
            }
            if let Ok((version, mut value)) = value {
                assert_eq!(header.unwrap().version, version);
                // An old name is read, never written.
                if let Some(fields) = value.as_object_mut() {
                    fields.remove("old_id");
                }
                // Only a value with every field of one value present (as a
                // record kvmodel wrote has) encodes again.
                if let Ok(again) = proto::encode(KEY, &PROTO, version, &value) {
                    let (v2, back) = proto::decode(KEY, Some(&PROTO), &again).unwrap();
                    assert_eq!((v2, &back), (version, &value), "not stable");
                }
            }
        });
}
