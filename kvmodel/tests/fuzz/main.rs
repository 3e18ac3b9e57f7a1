//! Fuzz target: arbitrary bytes stored under a record key (and under an
//! expiring record's receipt key), then every repository method that reads
//! them. Whatever the bytes, each method returns a value or an error naming
//! the key, never a panic; `purge` removes what cannot be read, after which
//! `reconcile` leaves nothing for `verify` to report.
//!
//! The entities cover the ways a record is read: a JSON record at version 3
//! with two declarative migration steps, a MessagePack record whose older
//! version is another struct (`migrate_from`), and an expiring record with
//! its receipt. The corpus (`tests/fuzz/__fuzz__/stored_records/corpus`)
//! holds real records of each, near misses, and every crash found.

use std::sync::OnceLock;
use std::time::Duration;

use bolero::check;
use kvmodel::conformance::{Harness, MemoryHarness};
use kvmodel::{Batch, Error, KvEntity, KvEnum, PageRequest, Store, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Note,
    Task,
}

/// Version 3; version 1 called `title` `name` and had no `kind`, version 2
/// had no `tags`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fz", key = "doc:{id}", version = 3)]
#[kv(index(name = "by_kind", fields(kind), order_by = at))]
#[kv(counter(name = "per_kind", group_by(kind)))]
#[kv(counter(name = "size", sum = size))]
#[kv(migration(from = 1, rename(name = title), add(kind = "note"), remove(legacy)))]
#[kv(migration(from = 2, add(tags = [])))]
pub struct Doc {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub title: String,
    pub kind: Kind,
    pub size: i64,
    pub tags: Vec<String>,
    pub at: Timestamp,
}

/// Version 1 of [`Packed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fz", key = "packed:{id}", encoding = "msgpack")]
#[kv(relation(name = "owner", belongs_to = Doc, by = owner))]
pub struct PackedV1 {
    pub id: u64,
    pub owner: String,
}

/// Version 2, read from version 1 through `From`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fz", key = "packed:{id}", encoding = "msgpack", version = 2, migrate_from = PackedV1)]
#[kv(relation(name = "owner", belongs_to = Doc, by = owner))]
pub struct Packed {
    pub id: u64,
    pub owner: String,
    pub weight: Option<f64>,
}

impl From<PackedV1> for Packed {
    fn from(v: PackedV1) -> Self {
        Packed {
            id: v.id,
            owner: v.owner,
            weight: None,
        }
    }
}

/// An expiring record: its receipt is read back too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fz", key = "ticket:{id}", ttl = "1s")]
#[kv(relation(name = "owner", belongs_to = Doc, by = owner))]
#[kv(counter(name = "per_owner", group_by(owner)))]
pub struct Ticket {
    pub id: String,
    #[kv(unique)]
    pub code: String,
    pub owner: String,
}

/// Separates the record from the receipt in an input.
const RECEIPT: &[u8] = b"\n--receipt--\n";

/// What to store, and where, read from an input's bytes: the first byte
/// picks the entity (`d`oc, `p`acked, `t`icket, else by its value) and for
/// a ticket whether time passes past its TTL (its bit 0x20, clear in
/// upper-case letters: `T`); the rest is the record, then, after
/// [`RECEIPT`], the ticket's receipt.
struct Input<'a> {
    entity: u8,
    expire: bool,
    record: &'a [u8],
    receipt: Option<&'a [u8]>,
}

impl<'a> Input<'a> {
    fn read(bytes: &'a [u8]) -> Input<'a> {
        let (first, rest) = bytes.split_first().map_or((0, bytes), |(f, r)| (*f, r));
        let entity = match first.to_ascii_lowercase() {
            b'd' => 0,
            b'p' => 1,
            b't' => 2,
            other => other % 3,
        };
        let (record, receipt) = match rest.windows(RECEIPT.len()).position(|w| w == RECEIPT) {
            Some(at) => (&rest[..at], Some(&rest[at + RECEIPT.len()..])),
            None => (rest, None),
        };
        Input {
            entity,
            expire: first & 0x20 == 0,
            record,
            receipt,
        }
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

/// An error about the stored bytes: a decoding or version error naming the
/// key.
fn about(err: &Error, key: &str) {
    assert!(
        matches!(err, Error::Decode { .. } | Error::FutureVersion { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(key), "{key} not in: {err}");
}

async fn put<S: Store>(store: &S, key: &str, bytes: &[u8]) {
    let mut b = Batch::new();
    b.put(key, bytes.to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
}

/// Stores a real record of each entity too, so listings and maintenance
/// walk past the planted one.
async fn neighbours<S: Store>(store: &S) {
    let doc = Doc {
        id: "real".into(),
        title: "Real".into(),
        kind: Kind::Note,
        size: 3,
        tags: vec![],
        at: Timestamp::EPOCH,
    };
    DocRepo::new(store.clone()).create(&doc).await.unwrap();
    let packed = Packed {
        id: 1,
        owner: "real".into(),
        weight: Some(0.5),
    };
    PackedRepo::new(store.clone())
        .create(&packed)
        .await
        .unwrap();
    let ticket = Ticket {
        id: "real".into(),
        code: "c-real".into(),
        owner: "real".into(),
    };
    TicketRepo::new(store.clone())
        .create(&ticket)
        .await
        .unwrap();
}

async fn doc_case(h: &MemoryHarness, bytes: &[u8]) {
    let repo = DocRepo::new(h.store());
    let key = DocKeys::record("x");
    put(&h.store(), &key, bytes).await;
    // A claim and an index entry pointing at the planted record.
    let mut b = Batch::new();
    b.put(DocKeys::by_title("planted"), key.clone().into_bytes(), None)
        .add(
            DocKeys::by_kind(Kind::Note),
            Vec::new(),
            key.clone().into_bytes(),
        );
    assert!(h.store().commit(b).await.unwrap().is_applied());
    match repo.get("x").await {
        Ok(doc) => {
            if let Some(doc) = doc {
                let _ = repo.update(&doc).await;
            }
        }
        Err(e) => about(&e, &key),
    }
    if let Err(e) = repo.get_many(&["x", "real"]).await {
        about(&e, &key);
    }
    let _ = repo.find_by_title("planted").await;
    let _ = repo
        .list_by_kind(Kind::Note, PageRequest::new(5))
        .await
        .unwrap();
    let _ = repo.list_all(PageRequest::new(5)).await.unwrap();
    let _ = repo.modify("x", |d| d.size = d.size.wrapping_add(1)).await;
    let _ = repo.count_per_kind(Kind::Task).await.unwrap();
    repo.verify(3).await.unwrap();
    let _ = repo.delete("x").await;
    repo.purge("x").await.unwrap();
    repo.reconcile(3).await.unwrap();
    let drift = repo.verify(3).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

async fn packed_case(h: &MemoryHarness, bytes: &[u8]) {
    let repo = PackedRepo::new(h.store());
    let key = PackedKeys::record(7);
    put(&h.store(), &key, bytes).await;
    match repo.get(7).await {
        Ok(Some(p)) => {
            let _ = repo.upsert(&p).await;
        }
        Ok(None) => {}
        Err(e) => about(&e, &key),
    }
    let _ = repo
        .list_by_owner("real", PageRequest::new(5))
        .await
        .unwrap();
    let _ = repo.list_all(PageRequest::new(5)).await.unwrap();
    let _ = repo.migrate_all(2, |_| {}).await.unwrap();
    repo.verify(2).await.unwrap();
    repo.purge(7).await.unwrap();
    repo.reconcile(2).await.unwrap();
    let drift = repo.verify(2).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

async fn ticket_case(h: &MemoryHarness, bytes: &[u8], receipt: Option<&[u8]>, expire: bool) {
    let repo = TicketRepo::new(h.store());
    let key = TicketKeys::record("x");
    put(&h.store(), &key, bytes).await;
    if let Some(r) = receipt {
        let receipt_key = <Ticket as kvmodel::__private::Entity>::receipt_key(&key);
        put(&h.store(), &receipt_key, r).await;
    }
    if expire {
        h.pass(Duration::from_millis(1_500)).await;
    }
    if let Err(e) = repo.get("x").await {
        about(&e, &key);
    }
    let _ = repo
        .list_by_owner("real", PageRequest::new(5))
        .await
        .unwrap();
    let _ = repo.sweep_expired(10).await;
    let _ = repo
        .upsert(&Ticket {
            id: "x".into(),
            code: "c-x".into(),
            owner: "real".into(),
        })
        .await;
    repo.verify(2).await.unwrap();
    repo.purge("x").await.unwrap();
    repo.reconcile(2).await.unwrap();
    let drift = repo.verify(2).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

#[test]
fn stored_records() {
    check!(name = "stored_records")
        .with_test_time(Duration::from_secs(2))
        .for_each(|bytes: &[u8]| {
            let input = Input::read(bytes);
            runtime().block_on(async {
                let h = MemoryHarness::new();
                neighbours(&h.store()).await;
                match input.entity {
                    0 => doc_case(&h, input.record).await,
                    1 => packed_case(&h, input.record).await,
                    _ => ticket_case(&h, input.record, input.receipt, input.expire).await,
                }
            });
        });
}
