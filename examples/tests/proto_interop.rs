//! Other languages read what a repository wrote: the `.proto` that
//! `kvmodel proto` prints for the entities below (read from this very file,
//! as `kvmodel proto tests/proto_interop.rs` reads it), compiled with protox
//! and decoded with a dynamic protobuf decoder (prost-reflect), holds every
//! field as the repository stored it.

use std::collections::BTreeMap;
use std::path::Path;

use kvmodel::{Date, KvEntity, KvEnum, MemoryStore, Store, Timestamp, Uuid};
use prost_reflect::{DynamicMessage, MapKey, MessageDescriptor, Value};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Celsius,
    OnHold,
}

/// Every kind of field a protobuf record holds, at version 2 (version 1
/// called `value` `reading`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(
    namespace = "interop",
    key = "reading:{sensor}:{at}",
    version = 2,
    encoding = "protobuf"
)]
#[kv(migration(from = 1, rename(reading = value)))]
pub struct Reading {
    pub sensor: String,
    pub at: Timestamp,
    pub value: f64,
    pub unit: Unit,
    pub ok: bool,
    pub delta: i32,
    pub total: i64,
    pub count: u32,
    pub big: u64,
    pub raw: Vec<u8>,
    pub day: Date,
    pub batch: Uuid,
    pub note: Option<String>,
    pub limit: Option<i64>,
    pub samples: Vec<f64>,
    pub units: Vec<Unit>,
    pub seen: Vec<Timestamp>,
    pub labels: BTreeMap<String, String>,
    pub weights: BTreeMap<String, i32>,
}

fn reading() -> Reading {
    let at = |ms| Timestamp::from_unix_millis(ms).unwrap();
    Reading {
        sensor: "probe:7".into(),
        at: at(1_764_000_000_123),
        value: -21.5,
        unit: Unit::OnHold,
        ok: true,
        delta: -7,
        total: i64::MIN,
        count: u32::MAX,
        big: u64::MAX,
        raw: vec![0, 255, 3],
        day: Date::from_ymd(2026, 11, 24).unwrap(),
        batch: Uuid::from_bytes([7; 16]),
        note: Some("é".into()),
        limit: None,
        samples: vec![0.0, 1.5, -2.25],
        units: vec![Unit::Celsius, Unit::OnHold],
        seen: vec![at(-1), at(0)],
        labels: BTreeMap::from([("room".into(), "lab".into()), (String::new(), "x".into())]),
        weights: BTreeMap::from([("a".into(), -1), ("b".into(), 0)]),
    }
}

/// The `.proto` of this file's entities, compiled.
fn pool() -> prost_reflect::DescriptorPool {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/proto_interop.rs");
    let schema = kvmodel_build::load_model_file(&here).unwrap();
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    let proto = kvmodel_build::proto::print(&schema.model);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("interop.proto"), &proto).unwrap();
    let mut compiler = protox::Compiler::new([dir.path()]).unwrap();
    compiler
        .open_file("interop.proto")
        .unwrap_or_else(|e| panic!("the printed .proto does not compile: {e:?}\n{proto}"));
    compiler.descriptor_pool()
}

fn field(m: &DynamicMessage, name: &str) -> Value {
    assert!(m.has_field_by_name(name), "`{name}` is absent");
    m.get_field_by_name(name).unwrap().into_owned()
}

fn millis(v: &Value) -> i64 {
    let t = v.as_message().expect("a google.protobuf.Timestamp");
    let seconds = t.get_field_by_name("seconds").unwrap().as_i64().unwrap();
    let nanos = t.get_field_by_name("nanos").unwrap().as_i32().unwrap();
    seconds * 1000 + i64::from(nanos) / 1_000_000
}

fn text(v: &Value) -> String {
    v.as_str().expect("a string").to_owned()
}

#[tokio::test]
async fn a_dynamic_decoder_reads_every_field_a_repository_wrote() {
    let store = MemoryStore::new();
    let repo = ReadingRepo::new(store.clone());
    let r = reading();
    repo.create(&r).await.unwrap();
    let bytes = store
        .get(&ReadingKeys::record(&r.sensor, r.at))
        .await
        .unwrap()
        .unwrap();

    let pool = pool();
    let envelope_type = pool
        .get_message_by_name("kvmodel.interop.KvmodelEnvelope")
        .unwrap();
    let envelope = DynamicMessage::decode(envelope_type, &bytes[..]).unwrap();
    assert_eq!(field(&envelope, "version").as_u32(), Some(2));
    let record = field(&envelope, "record");
    let reading_type: MessageDescriptor =
        pool.get_message_by_name("kvmodel.interop.Reading").unwrap();
    let m = DynamicMessage::decode(reading_type, record.as_bytes().unwrap().clone()).unwrap();

    assert_eq!(text(&field(&m, "sensor")), r.sensor);
    assert_eq!(millis(&field(&m, "at")), r.at.as_unix_millis());
    assert_eq!(field(&m, "value").as_f64(), Some(r.value));
    assert_eq!(text(&field(&m, "unit")), "on_hold");
    assert_eq!(field(&m, "ok").as_bool(), Some(true));
    assert_eq!(field(&m, "delta").as_i32(), Some(r.delta));
    assert_eq!(field(&m, "total").as_i64(), Some(r.total));
    assert_eq!(field(&m, "count").as_u32(), Some(r.count));
    assert_eq!(field(&m, "big").as_u64(), Some(r.big));
    assert_eq!(field(&m, "raw").as_bytes().unwrap().as_ref(), &r.raw[..]);
    assert_eq!(text(&field(&m, "day")), "2026-11-24");
    assert_eq!(
        field(&m, "batch").as_bytes().unwrap().as_ref(),
        r.batch.as_bytes()
    );
    assert_eq!(text(&field(&m, "note")), "é");
    assert!(!m.has_field_by_name("limit"), "a null optional is absent");
    let list = |name: &str| field(&m, name).as_list().unwrap().to_vec();
    let samples: Vec<f64> = list("samples")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(samples, r.samples);
    let units: Vec<String> = list("units").iter().map(text).collect();
    assert_eq!(units, ["celsius", "on_hold"]);
    let seen: Vec<i64> = list("seen").iter().map(millis).collect();
    assert_eq!(seen, [-1, 0]);
    let map = |name: &str| field(&m, name).as_map().unwrap().clone();
    let labels: BTreeMap<String, String> = map("labels")
        .iter()
        .map(|(k, v)| match k {
            MapKey::String(k) => (k.clone(), text(v)),
            other => panic!("a map key {other:?}"),
        })
        .collect();
    assert_eq!(labels, r.labels);
    let weights: BTreeMap<String, i32> = map("weights")
        .iter()
        .map(|(k, v)| match k {
            MapKey::String(k) => (k.clone(), v.as_i32().unwrap()),
            other => panic!("a map key {other:?}"),
        })
        .collect();
    assert_eq!(weights, r.weights);
    // The renamed field of version 1 is in the .proto under its old name.
    let old = pool
        .get_message_by_name("kvmodel.interop.Reading")
        .unwrap()
        .get_field_by_name("reading")
        .expect("the old name `reading` for older records");
    assert_eq!(old.kind(), prost_reflect::Kind::Double);
}
