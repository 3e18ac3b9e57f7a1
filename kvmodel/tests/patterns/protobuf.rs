//! `encoding = "protobuf"`: records stored as protobuf envelopes (first byte
//! `0x08`), every field kind round-tripping; records written as JSON or
//! MessagePack stay readable after the entity switches to protobuf; lazy
//! migration and `FutureVersion` work as with JSON; compression applies.
//!
//! The types of one key space are the same entity as a schema declares it
//! at different times.

use std::collections::BTreeMap;

use kvmodel::conformance::Harness;
use kvmodel::{Date, Error, KvEntity, KvEnum, PageRequest, Store, Timestamp, Uuid};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Celsius,
    Percent,
    OnHold,
}

macro_rules! reading {
    ($module:ident, $name:ident, $($encoding:tt)*) => {
        mod $module {
        #![allow(dead_code)]
        use super::*;

        /// One reading of a sensor, with every kind of field.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
        #[kv(namespace = "pb", key = "reading:{sensor}:{at}", $($encoding)*)]
        #[kv(index(name = "by_unit", fields(unit), order_by = at))]
        #[kv(counter(name = "per_unit", group_by(unit)))]
        pub struct $name {
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
            pub tags: Vec<String>,
            pub units: Vec<Unit>,
            pub seen: Vec<Timestamp>,
            pub labels: BTreeMap<String, String>,
            pub weights: BTreeMap<String, i32>,
        }

        impl From<&Reading> for $name {
            fn from(r: &Reading) -> Self {
                let json = kvmodel::__private::serde_json::to_value(r).unwrap();
                kvmodel::__private::serde_json::from_value(json).unwrap()
            }
        }
        }
        pub use $module::*;
    };
}

reading!(proto_reading, Reading, encoding = "protobuf");
reading!(json_reading, JsonReading, encoding = "json");
reading!(msgpack_reading, PackedReading, encoding = "msgpack");
reading!(
    packed_proto_reading,
    CompressedReading,
    encoding = "protobuf",
    compress(codec = "lz4", above = "256B")
);

fn at(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(ms).unwrap()
}

pub fn reading(sensor: &str, ms: i64) -> Reading {
    Reading {
        sensor: sensor.into(),
        at: at(ms),
        value: -21.5e-3,
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
        tags: vec![String::new(), "a:b".into()],
        units: vec![Unit::Percent, Unit::Celsius],
        seen: vec![at(-1), at(253_402_300_799_999)],
        labels: BTreeMap::from([("room".into(), "lab".into()), (String::new(), "x".into())]),
        weights: BTreeMap::from([("a".into(), -1), ("b".into(), 0)]),
    }
}

async fn stored<S: Store>(s: &S, r: &Reading) -> Vec<u8> {
    s.get(&ReadingKeys::record(&r.sensor, r.at))
        .await
        .unwrap()
        .unwrap()
}

pub async fn a_protobuf_record_round_trips_every_field_kind<H: Harness>(h: &H) {
    let repo = ReadingRepo::new(h.store());
    let r = reading("s1", 1_700_000_000_123);
    repo.create(&r).await.unwrap();
    let bytes = stored(&h.store(), &r).await;
    assert_eq!(bytes[..2], [0x08, 0x01], "a protobuf envelope at version 1");
    assert_eq!(repo.get("s1", r.at).await.unwrap(), Some(r.clone()));
    // Empty lists and maps, absent options, zeros.
    let mut empty = reading("s2", 0);
    (empty.samples, empty.tags, empty.units, empty.seen) = (vec![], vec![], vec![], vec![]);
    (empty.labels, empty.weights, empty.note, empty.raw) =
        (BTreeMap::new(), BTreeMap::new(), None, vec![]);
    (
        empty.value,
        empty.delta,
        empty.total,
        empty.count,
        empty.big,
        empty.ok,
    ) = (0.0, 0, 0, 0, 0, false);
    repo.create(&empty).await.unwrap();
    assert_eq!(repo.get("s2", empty.at).await.unwrap(), Some(empty.clone()));
    let page = repo
        .list_by_unit(Unit::OnHold, PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(repo.count_per_unit(Unit::OnHold).await.unwrap(), 2);
    assert!(repo.verify(16).await.unwrap().is_clean());
}

pub async fn json_and_msgpack_records_read_after_switching_to_protobuf<H: Harness>(h: &H) {
    let (json, packed) = (
        JsonReadingRepo::new(h.store()),
        PackedReadingRepo::new(h.store()),
    );
    let repo = ReadingRepo::new(h.store());
    let (a, b) = (reading("old-json", 1), reading("old-pack", 2));
    json.create(&JsonReading::from(&a)).await.unwrap();
    packed.create(&PackedReading::from(&b)).await.unwrap();
    assert_eq!(stored(&h.store(), &a).await[0], b'{');
    assert_eq!(stored(&h.store(), &b).await[0], 0x92);
    // Read, update and read again under protobuf.
    for old in [&a, &b] {
        assert_eq!(
            repo.get(&old.sensor, old.at).await.unwrap().as_ref(),
            Some(old)
        );
        let mut next = old.clone();
        next.unit = Unit::Percent;
        next.tags.push("moved".into());
        repo.update(&next).await.unwrap();
        assert_eq!(
            stored(&h.store(), old).await[0],
            0x08,
            "rewritten as protobuf"
        );
        assert_eq!(repo.get(&old.sensor, old.at).await.unwrap(), Some(next));
    }
    assert_eq!(repo.count_per_unit(Unit::Percent).await.unwrap(), 2);
    assert_eq!(repo.count_per_unit(Unit::OnHold).await.unwrap(), 0);
    assert!(repo.verify(16).await.unwrap().is_clean());
}

pub async fn compression_applies_to_protobuf_records<H: Harness>(h: &H) {
    let (small, mut large) = (reading("small", 1), reading("large", 2));
    let mut tiny = small.clone();
    (tiny.tags, tiny.seen, tiny.labels, tiny.samples) = (vec![], vec![], BTreeMap::new(), vec![]);
    (tiny.units, tiny.weights, tiny.raw, tiny.note) = (vec![], BTreeMap::new(), vec![], None);
    tiny.sensor = "s".into();
    large.tags = vec!["reading ".repeat(50)];
    let repo = CompressedReadingRepo::new(h.store());
    for r in [&tiny, &large] {
        repo.create(&CompressedReading::from(r)).await.unwrap();
    }
    let (t, l) = (
        stored(&h.store(), &tiny).await,
        stored(&h.store(), &large).await,
    );
    assert_eq!(t[0], 0x08, "{} bytes stay plain", t.len());
    assert_eq!(l[..2], [0xC1, 1], "lz4");
    assert!(l.len() < 300, "{}", l.len());
    // Readable by the uncompressed protobuf type too.
    let plain = ReadingRepo::new(h.store());
    assert_eq!(plain.get("large", large.at).await.unwrap(), Some(large));
}

/// Version 1 of a protobuf entity whose version 2 renames `name` to `title`
/// (declared step) and adds `rank`.
mod versions {
    #![allow(dead_code)]
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "pb", key = "item:{id}", encoding = "protobuf")]
    pub struct ItemV1 {
        pub id: String,
        pub name: String,
        pub score: i64,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(
        namespace = "pb",
        key = "item:{id}",
        version = 2,
        encoding = "protobuf"
    )]
    #[kv(migration(from = 1, rename(name = title), add(rank = 3)))]
    pub struct Item {
        pub id: String,
        pub title: String,
        pub score: i64,
        pub rank: u32,
    }

    /// The same version 2 through a typed chain (`migrate_from`).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(version = 1, encoding = "protobuf")]
    pub struct OldThing {
        pub id: String,
        pub name: String,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(
        namespace = "pb",
        key = "item:{id}",
        version = 2,
        encoding = "protobuf"
    )]
    #[kv(migrate_from = OldThing)]
    pub struct Thing {
        pub id: String,
        pub label: String,
    }

    impl From<OldThing> for Thing {
        fn from(o: OldThing) -> Self {
            Thing {
                id: o.id,
                label: o.name.to_uppercase(),
            }
        }
    }
}
pub use versions::*;

pub async fn older_protobuf_records_migrate_lazily_and_newer_ones_are_refused<H: Harness>(h: &H) {
    let (v1, v2) = (ItemV1Repo::new(h.store()), ItemRepo::new(h.store()));
    v1.create(&ItemV1 {
        id: "a".into(),
        name: "Ada".into(),
        score: -5,
    })
    .await
    .unwrap();
    let item = v2.get("a").await.unwrap().unwrap();
    assert_eq!(
        item,
        Item {
            id: "a".into(),
            title: "Ada".into(),
            score: -5,
            rank: 3
        }
    );
    // Through a typed chain: the older type's fields read the record.
    let things = ThingRepo::new(h.store());
    let thing = things.get("a").await.unwrap().unwrap();
    assert_eq!(
        thing,
        Thing {
            id: "a".into(),
            label: "ADA".into()
        }
    );
    // Version 2 written, then read by version 1: refused, not half-read.
    v2.update(&item).await.unwrap();
    match v1.get("a").await {
        Err(Error::FutureVersion {
            found: 2,
            supported: 1,
            ..
        }) => {}
        other => panic!("expected FutureVersion, got {other:?}"),
    }
}
