//! `encoding`: one realistic record (a sensor reading with its labels,
//! recent samples and tags, about 1 KB as JSON) encoded as JSON,
//! MessagePack and protobuf.
//!
//! Prints the stored size of each form once, then measures with criterion
//! `encode/…` and `decode/…`: the record to stored bytes and back
//! (envelope and serde; protobuf goes through the record's JSON value, as
//! the run-time model does), no store.
//!
//! Run: `cargo bench -p kvmodel --bench encoding --features protobuf`

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kvmodel::{KvEntity, KvEnum, Timestamp, Uuid};
use kvmodel_runtime::__private::entity;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Celsius,
    Percent,
    Pascal,
}

macro_rules! reading {
    ($name:ident, $encoding:literal) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
        #[kv(namespace = "bench", key = "reading:{sensor}:{at}", encoding = $encoding)]
        struct $name {
            sensor: String,
            at: Timestamp,
            batch: Uuid,
            value: f64,
            unit: Unit,
            ok: bool,
            sequence: u64,
            note: Option<String>,
            samples: Vec<f64>,
            tags: Vec<String>,
            labels: BTreeMap<String, String>,
        }
    };
}

reading!(JsonReading, "json");
reading!(PackedReading, "msgpack");
reading!(ProtoReading, "protobuf");

fn reading() -> JsonReading {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    JsonReading {
        sensor: "greenhouse-7/bench-3/probe-12".into(),
        at: Timestamp::from_unix_millis(1_764_000_000_123).unwrap(),
        batch: Uuid::from_bytes([0x5a; 16]),
        value: 21.437,
        unit: Unit::Celsius,
        ok: true,
        sequence: 1_234_567,
        note: Some("recalibrated after the morning check".into()),
        samples: (0..32)
            .map(|_| 15.0 + (next() % 1_000_000) as f64 / 100_000.0)
            .collect(),
        tags: ["indoor", "north", "tomatoes", "irrigated", "v2-firmware"]
            .map(String::from)
            .to_vec(),
        labels: (0..8)
            .map(|i| (format!("label_{i}"), format!("value-{}", next() % 10_000)))
            .collect(),
    }
}

fn convert<T: serde::de::DeserializeOwned>(r: &JsonReading) -> T {
    serde_json::from_value(serde_json::to_value(r).unwrap()).unwrap()
}

fn encodings(c: &mut Criterion) {
    let json = reading();
    let (packed, proto): (PackedReading, ProtoReading) = (convert(&json), convert(&json));
    let key = JsonReadingKeys::record(&json.sensor, json.at);
    let bytes = [
        entity::encode(&key, &json).unwrap(),
        entity::encode(&key, &packed).unwrap(),
        entity::encode(&key, &proto).unwrap(),
    ];
    println!("stored size of the reading record:");
    for (name, b) in ["json", "msgpack", "protobuf"].iter().zip(&bytes) {
        println!(
            "  {name:<8} {:>5} B  {:5.1} %",
            b.len(),
            100.0 * b.len() as f64 / bytes[0].len() as f64
        );
    }
    let mut g = c.benchmark_group("encode");
    g.bench_function("json", |b| {
        b.iter(|| entity::encode(&key, black_box(&json)).unwrap())
    });
    g.bench_function("msgpack", |b| {
        b.iter(|| entity::encode(&key, black_box(&packed)).unwrap())
    });
    g.bench_function("protobuf", |b| {
        b.iter(|| entity::encode(&key, black_box(&proto)).unwrap())
    });
    g.finish();
    let mut g = c.benchmark_group("decode");
    g.bench_function("json", |b| {
        b.iter(|| entity::decode_at::<JsonReading>(&key, black_box(&bytes[0])).unwrap())
    });
    g.bench_function("msgpack", |b| {
        b.iter(|| entity::decode_at::<PackedReading>(&key, black_box(&bytes[1])).unwrap())
    });
    g.bench_function("protobuf", |b| {
        b.iter(|| entity::decode_at::<ProtoReading>(&key, black_box(&bytes[2])).unwrap())
    });
    g.finish();
}

criterion_group!(benches, encodings);
criterion_main!(benches);
