//! Range requests with arbitrary bounds, limits and resume positions (the
//! position a cursor carries comes back from clients as arbitrary bytes),
//! on the in-memory, redb and Redis stores at once: each returns what a
//! plain model of the collection says, and pages resume where they stopped.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::OnceLock;

use bolero::{TypeGenerator, check};
use kvmodel_runtime::conformance::{Harness, RedbHarness, RedisHarness};
use kvmodel_runtime::store::{decode_entry, encode_entry};
use kvmodel_runtime::{Batch, Direction, MemoryStore, RangeRequest, RangeResult, Store};

use super::BUDGET;

/// Bytes drawn from a few values, so that sort keys, members and positions
/// often share prefixes, collide, or sit right at an edge.
#[derive(Debug, Clone, TypeGenerator)]
struct Short(#[generator(bolero::produce::<Vec<u8>>().with().len(0usize..4))] Vec<u8>);

impl Short {
    fn bytes(&self) -> Vec<u8> {
        const ALPHABET: [u8; 6] = [0x00, 0x01, 0x02, b'a', 0xfe, 0xff];
        self.0
            .iter()
            .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()])
            .collect()
    }
}

#[derive(Debug, Clone, TypeGenerator)]
enum SortBound {
    Unbounded,
    Included(Short),
    Excluded(Short),
}

impl SortBound {
    fn get(&self) -> Bound<Vec<u8>> {
        match self {
            SortBound::Unbounded => Bound::Unbounded,
            SortBound::Included(s) => Bound::Included(s.bytes()),
            SortBound::Excluded(s) => Bound::Excluded(s.bytes()),
        }
    }
}

#[derive(Debug, Clone, TypeGenerator)]
enum Position {
    /// No position: the first page.
    Start,
    /// The entry of a sort key and a member (what a store hands out).
    Entry(Short, Short),
    /// Any bytes.
    Raw(Short),
}

#[derive(Debug, Clone, TypeGenerator)]
enum Limit {
    Small(u8),
    Huge,
}

#[derive(Debug, Clone, TypeGenerator)]
struct Case {
    /// Entries (sort key, member) added in one batch.
    adds: Vec<(Short, Short)>,
    /// Entries removed in a second batch: each picks one of `adds`.
    removes: Vec<u8>,
    lower: SortBound,
    upper: SortBound,
    limit: Limit,
    descending: bool,
    after: Position,
}

impl Case {
    fn added(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.adds
            .iter()
            .map(|(s, m)| (s.bytes(), m.bytes()))
            .collect()
    }

    fn removed(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let added = self.added();
        self.removes
            .iter()
            .filter_map(|r| added.get(usize::from(*r) % added.len().max(1)).cloned())
            .collect()
    }
}

/// The request of a case, and what it returns: a collection is a set of
/// (sort key, member) entries.
fn model(case: &Case) -> (RangeRequest, RangeResult) {
    let mut members: BTreeSet<(Vec<u8>, Vec<u8>)> = case.added().into_iter().collect();
    for entry in case.removed() {
        members.remove(&entry);
    }
    let req = RangeRequest {
        lower: case.lower.get(),
        upper: case.upper.get(),
        limit: match case.limit {
            Limit::Small(n) => usize::from(n % 8),
            Limit::Huge => usize::MAX,
        },
        direction: if case.descending {
            Direction::Descending
        } else {
            Direction::Ascending
        },
        after: match &case.after {
            Position::Start => None,
            Position::Entry(s, m) => Some(encode_entry(&s.bytes(), &m.bytes())),
            Position::Raw(b) => Some(b.bytes()),
        },
    };
    let within = |sort: &Vec<u8>| {
        let above = match &req.lower {
            Bound::Unbounded => true,
            Bound::Included(l) => sort >= l,
            Bound::Excluded(l) => sort > l,
        };
        let below = match &req.upper {
            Bound::Unbounded => true,
            Bound::Included(u) => sort <= u,
            Bound::Excluded(u) => sort < u,
        };
        above && below
    };
    let mut entries: Vec<Vec<u8>> = members
        .iter()
        .filter(|(sort, _)| within(sort))
        .map(|(sort, member)| encode_entry(sort, member))
        .filter(|e| match (&req.after, req.direction) {
            (None, _) => true,
            (Some(a), Direction::Ascending) => e > a,
            (Some(a), Direction::Descending) => e < a,
        })
        .collect();
    entries.sort();
    if req.direction == Direction::Descending {
        entries.reverse();
    }
    let more = entries.len() > req.limit;
    entries.truncate(req.limit);
    let next = if more { entries.last().cloned() } else { None };
    let result = RangeResult {
        members: entries.iter().map(|e| decode_entry(e).unwrap()).collect(),
        next,
    };
    (req, result)
}

/// The stores under test, shared by every input (each input writes its own
/// collection key).
struct Stores {
    runtime: tokio::runtime::Runtime,
    memory: MemoryStore,
    redb: RedbHarness,
    redis: RedisHarness,
}

fn stores() -> &'static Stores {
    static STORES: OnceLock<Stores> = OnceLock::new();
    STORES.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let redis = runtime.block_on(RedisHarness::start());
        Stores {
            runtime,
            memory: MemoryStore::new(),
            redb: RedbHarness::new(),
            redis,
        }
    })
}

async fn run<S: Store>(store: &S, key: &str, case: &Case, req: &RangeRequest) -> RangeResult {
    for (entries, add) in [(case.added(), true), (case.removed(), false)] {
        let mut b = Batch::new();
        for (sort, member) in entries {
            if add {
                b.add(key, sort, member);
            } else {
                b.remove(key, sort, member);
            }
        }
        if !b.is_empty() {
            assert!(store.commit(b).await.unwrap().is_applied());
        }
    }
    let result = store
        .range(key, req.clone())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", store.backend()));
    let mut b = Batch::new();
    b.delete(key);
    assert!(store.commit(b).await.unwrap().is_applied());
    result
}

#[test]
fn range_requests() {
    // A failing input unwinds past the stores; they are not used after.
    let stores = std::panic::AssertUnwindSafe(stores());
    let n = std::sync::atomic::AtomicU64::new(0);
    check!(name = "range_requests")
        .with_test_time(BUDGET)
        .with_type::<Case>()
        .for_each(|case| {
            let n = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let key = format!("fuzz:range:{n}");
            let (req, want) = model(case);
            stores.runtime.block_on(async {
                let memory = run(&stores.memory, &key, case, &req).await;
                assert_eq!(memory, want, "memory");
                let redb = run(&stores.redb.store(), &key, case, &req).await;
                assert_eq!(redb, want, "redb");
                let redis = run(&stores.redis.store(), &key, case, &req).await;
                assert_eq!(redis, want, "redis");
            });
        });
}
