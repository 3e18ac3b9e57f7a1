use serde_json::json;

use super::*;

const fn field(name: &'static str, number: u32, kind: Scalar, shape: ProtoShape) -> ProtoField {
    ProtoField {
        name,
        number,
        kind,
        shape,
    }
}

const EVERY: ProtoMessage = ProtoMessage {
    fields: &[
        field("s", 1, Scalar::String, ProtoShape::One),
        field("b", 2, Scalar::Bool, ProtoShape::One),
        field("i32", 3, Scalar::I32, ProtoShape::One),
        field("i64", 4, Scalar::I64, ProtoShape::One),
        field("u32", 5, Scalar::U32, ProtoShape::One),
        field("u64", 6, Scalar::U64, ProtoShape::One),
        field("f", 7, Scalar::F64, ProtoShape::One),
        field("raw", 8, Scalar::Bytes, ProtoShape::One),
        field("at", 9, Scalar::Timestamp, ProtoShape::One),
        field("day", 10, Scalar::Date, ProtoShape::One),
        field("id", 11, Scalar::Uuid, ProtoShape::One),
        field("status", 12, Scalar::String, ProtoShape::One),
        field("maybe", 13, Scalar::I64, ProtoShape::Optional),
        field("never", 14, Scalar::String, ProtoShape::Optional),
        field("nums", 15, Scalar::I32, ProtoShape::List),
        field("words", 16, Scalar::String, ProtoShape::List),
        field("when", 17, Scalar::Timestamp, ProtoShape::List),
        field("scores", 18, Scalar::F64, ProtoShape::Map),
        field("labels", 262_143, Scalar::String, ProtoShape::Map),
    ],
    renamed: &[],
};

fn every() -> serde_json::Value {
    json!({
        "s": "héllo", "b": true, "i32": -7, "i64": i64::MIN, "u32": u32::MAX, "u64": u64::MAX,
        "f": -0.1, "raw": [0, 255, 7], "at": "1969-12-31T23:59:59.999Z", "day": "2026-11-24",
        "id": "67e55044-10b1-426f-9247-bb680e5fe0c8", "status": "on_hold", "maybe": 0,
        "never": null, "nums": [1, -1, 300], "words": ["", "a"],
        "when": ["0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"],
        "scores": {"a": 1.5, "b": 0.0}, "labels": {"": "x"},
    })
}

#[test]
fn every_kind_round_trips() {
    let value = every();
    let bytes = encode("k", &EVERY, 3, &value).unwrap();
    assert_eq!(bytes[0], TAG);
    assert_eq!(version("k", &bytes).unwrap(), 3);
    let (v, back) = decode("k", Some(&EVERY), &bytes).unwrap();
    assert_eq!(v, 3);
    let mut expected = value;
    expected.as_object_mut().unwrap().remove("never");
    assert_eq!(back, expected);
}

#[test]
fn empty_lists_and_maps_read_back_empty() {
    let mut value = every();
    for f in ["nums", "words", "when", "scores", "labels"] {
        value[f] = if f == "scores" || f == "labels" {
            json!({})
        } else {
            json!([])
        };
    }
    let bytes = encode("k", &EVERY, 1, &value).unwrap();
    let (_, back) = decode("k", Some(&EVERY), &bytes).unwrap();
    let mut expected = value;
    expected.as_object_mut().unwrap().remove("never");
    assert_eq!(back, expected);
}

/// Numbers are written as proto3 does: varints for integers (negative ones
/// as ten bytes), packed lists, doubles little endian: what a protobuf
/// library reads.
#[test]
fn wire_bytes_are_standard_protobuf() {
    const M: ProtoMessage = ProtoMessage {
        fields: &[
            field("a", 1, Scalar::I32, ProtoShape::One),
            field("l", 2, Scalar::U32, ProtoShape::List),
            field("t", 3, Scalar::Timestamp, ProtoShape::One),
        ],
        renamed: &[],
    };
    let bytes = encode(
        "k",
        &M,
        1,
        &json!({"a": 150, "l": [1, 2], "t": "1970-01-01T00:00:01.500Z"}),
    )
    .unwrap();
    let record = [
        0x08, 0x96, 0x01, // a = 150
        0x12, 0x02, 0x01, 0x02, // l = [1, 2], packed
        0x1a, 0x08, 0x08, 0x01, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01, // t = {1s, 500ms}
    ];
    let mut expected = vec![0x08, 0x01, 0x12, record.len() as u8];
    expected.extend_from_slice(&record);
    assert_eq!(bytes, expected);
}

#[test]
fn renamed_fields_of_older_records_read_under_their_old_names() {
    const OLD: ProtoMessage = ProtoMessage {
        fields: &[field("full_name", 9, Scalar::String, ProtoShape::One)],
        renamed: &[],
    };
    const NEW: ProtoMessage = ProtoMessage {
        fields: &[field("name", 4, Scalar::String, ProtoShape::One)],
        renamed: &[field("full_name", 9, Scalar::String, ProtoShape::One)],
    };
    let bytes = encode("k", &OLD, 1, &json!({"full_name": "Ada"})).unwrap();
    let (_, value) = decode("k", Some(&NEW), &bytes).unwrap();
    assert_eq!(value, json!({"full_name": "Ada"}));
}

#[test]
fn unknown_numbers_are_skipped_and_packed_or_not_both_read() {
    const M: ProtoMessage = ProtoMessage {
        fields: &[field("l", 2, Scalar::U32, ProtoShape::List)],
        renamed: &[],
    };
    // Field 7 (a string, unknown), then l unpacked twice.
    let record = [0x3a, 0x01, b'x', 0x10, 0x05, 0x10, 0x06];
    let mut bytes = vec![0x08, 0x02, 0x12, record.len() as u8];
    bytes.extend_from_slice(&record);
    let (v, value) = decode("k", Some(&M), &bytes).unwrap();
    assert_eq!((v, value), (2, json!({"l": [5, 6]})));
}

#[test]
fn bad_bytes_are_decode_errors_naming_the_key() {
    let good = encode("k", &EVERY, 1, &every()).unwrap();
    for cut in 0..good.len() {
        let _ = decode("shop:r:1", Some(&EVERY), &good[..cut]);
    }
    for bytes in [
        &[0x08][..],
        &[0x08, 0xff],
        &[0x08, 0x01, 0x12, 0x7f],
        &[0x08, 0x01, 0x12, 0x02, 0x0b, 0x00],
        &[0x08, 0x01, 0x12, 0x03, 0x4a, 0x01, 0x00],
    ] {
        let err = decode("shop:r:1", Some(&EVERY), bytes).unwrap_err();
        assert!(err.to_string().contains("shop:r:1"), "{err}");
    }
    // A uuid of the wrong length, a timestamp with microseconds.
    let err = decode(
        "k",
        Some(&EVERY),
        &[0x08, 0x01, 0x12, 0x03, 0x5a, 0x01, 0x00],
    )
    .unwrap_err();
    assert!(err.to_string().contains("uuid"), "{err}");
    let err = decode(
        "k",
        Some(&EVERY),
        &[0x08, 0x01, 0x12, 0x04, 0x4a, 0x02, 0x10, 0x01],
    )
    .unwrap_err();
    assert!(err.to_string().contains("milliseconds"), "{err}");
    let err = decode("k", None, &good).unwrap_err();
    assert!(err.to_string().contains("protobuf"), "{err}");
}

#[test]
fn a_value_that_does_not_fit_is_an_encode_error() {
    let mut value = every();
    value["i32"] = json!("seven");
    let err = encode("shop:r:1", &EVERY, 1, &value).unwrap_err();
    assert!(err.to_string().contains("`i32`"), "{err}");
    value = every();
    value["s"] = json!(null);
    let err = encode("shop:r:1", &EVERY, 1, &value).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}
