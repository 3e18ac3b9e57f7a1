//! A rolling deploy under load: writers of two schema versions at once (the
//! second adds an index and two counters with `since: 2`) while the older
//! version's `reconcile` runs in a loop beside them. The older maintenance
//! must never zero or move what the newer version maintains, and no write
//! of either version may be lost: once everything stops, the newer
//! version's `verify` (which no newer maintenance ran before) is clean.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity, Store};
use serde::{Deserialize, Serialize};

/// The entity as the older deployment declares it.
pub mod v1 {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "roll", key = "acct:{id}", version = 1)]
    #[kv(index(name = "by_team", fields(team), order_by = n))]
    #[kv(counter(name = "total"))]
    #[kv(counter(name = "per_team", group_by(team)))]
    pub struct Acct {
        pub id: String,
        #[kv(unique)]
        pub email: String,
        pub team: String,
        pub n: i64,
    }
}

/// The entity as the newer deployment declares it: an index and two
/// counters only it maintains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "roll", key = "acct:{id}", version = 2)]
#[kv(index(name = "by_team", fields(team), order_by = n))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "per_team", group_by(team)))]
#[kv(index(name = "by_tier", fields(tier), order_by = n, since = 2))]
#[kv(counter(name = "per_tier", group_by(tier), since = 2))]
#[kv(counter(name = "level_per_team", sum = level, group_by(team), since = 2))]
#[kv(migration(from = 1, add(tier = "basic", level = 0)))]
pub struct Acct {
    pub id: String,
    #[kv(unique)]
    pub email: String,
    pub team: String,
    pub n: i64,
    pub tier: String,
    pub level: i64,
}

const TEAMS: [&str; 3] = ["red", "green", "blue"];
const TIERS: [&str; 2] = ["gold", "basic"];
const IDS: u32 = 90;

fn old(i: u32, rng: &mut fastrand::Rng) -> v1::Acct {
    v1::Acct {
        id: format!("a{i}"),
        email: format!("a{i}@roll.io"),
        team: TEAMS[rng.usize(0..3)].to_owned(),
        n: rng.i64(0..50),
    }
}

fn new(i: u32, rng: &mut fastrand::Rng) -> Acct {
    Acct {
        id: format!("a{i}"),
        email: format!("a{i}@roll.io"),
        team: TEAMS[rng.usize(0..3)].to_owned(),
        n: rng.i64(0..50),
        tier: TIERS[rng.usize(0..2)].to_owned(),
        level: rng.i64(1..10),
    }
}

/// What a writer may meet beside the other version and the other writers.
fn expected(e: &Error) -> bool {
    matches!(
        e,
        Error::NotFound { .. }
            | Error::AlreadyExists { .. }
            | Error::FutureVersion { .. }
            | Error::Conflict { .. }
    )
}

/// One writer of version 1 (`newer` false) or 2, for at most `ops` steps.
async fn write<S: Store>(store: S, w: u64, newer: bool, stop: Arc<AtomicBool>) {
    let (olds, news) = (v1::AcctRepo::new(store.clone()), AcctRepo::new(store));
    let mut rng = fastrand::Rng::with_seed(w * 31 + 5);
    let mut ops = 0;
    while !stop.load(Ordering::Relaxed) && ops < 3_000 {
        ops += 1;
        let i = rng.u32(0..IDS);
        let id = format!("a{i}");
        let (team, n, tier, level) = (
            TEAMS[rng.usize(0..3)],
            rng.i64(0..50),
            TIERS[rng.usize(0..2)],
            rng.i64(1..10),
        );
        let done = match (newer, rng.u32(0..3)) {
            (false, 0) => olds.create(&old(i, &mut rng)).await.map(drop),
            (false, 1) => olds
                .modify(&id, |a| {
                    a.team = team.to_owned();
                    a.n = n;
                })
                .await
                .map(drop),
            (false, _) => olds.delete(&id).await.map(drop),
            (true, 0) => news.create(&new(i, &mut rng)).await.map(drop),
            (true, 1) => news
                .modify(&id, |a| {
                    a.team = team.to_owned();
                    a.n = n;
                    a.tier = tier.to_owned();
                    a.level = level;
                })
                .await
                .map(drop),
            (true, _) => news.delete(&id).await.map(drop),
        };
        match done {
            Ok(()) => {}
            Err(e) if expected(&e) => {}
            Err(e) => panic!("writer {w} (version {}): {e}", 1 + u8::from(newer)),
        }
    }
}

/// The newer version's counters, read back through its repository.
async fn newer_counters<S: Store>(repo: &AcctRepo<S>) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    out.insert("total".to_owned(), repo.count_total().await.unwrap());
    for t in TEAMS {
        out.insert(
            format!("per_team {t}"),
            repo.count_per_team(t).await.unwrap(),
        );
        out.insert(
            format!("level_per_team {t}"),
            repo.sum_level_per_team(t).await.unwrap(),
        );
    }
    for t in TIERS {
        out.insert(
            format!("per_tier {t}"),
            repo.count_per_tier(t).await.unwrap(),
        );
    }
    out
}

/// Two writers of each version for a while, the older version's
/// `reconcile` and `verify` looping beside them; then the newer version's
/// `verify` finds nothing to repair, and its counters agree with what its
/// records add up to.
pub async fn older_reconcile_beside_both_versions_adds_no_drift<H: Harness>(h: &H) {
    let store = h.store();
    let olds = v1::AcctRepo::new(store.clone());
    let news = AcctRepo::new(store.clone()).with_partial_reads();
    let mut rng = fastrand::Rng::with_seed(1);
    for i in 0..IDS / 2 {
        olds.create(&old(i, &mut rng)).await.unwrap();
    }
    for i in IDS / 2..IDS * 3 / 4 {
        news.create(&new(i, &mut rng)).await.unwrap();
    }
    assert!(news.verify(50).await.unwrap().is_clean());

    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4u64 {
        writers.push(tokio::spawn(write(
            store.clone(),
            w,
            w % 2 == 1,
            stop.clone(),
        )));
    }
    let started = Instant::now();
    let mut runs = 0;
    while runs < 3 || started.elapsed() < Duration::from_millis(1_500) {
        let fixed = olds.reconcile(16).await.unwrap();
        assert!(
            fixed.missing_claims.is_empty()
                && fixed.orphan_claims.is_empty()
                && fixed.conflicting_claims.is_empty(),
            "the older reconcile judged a claim in flight: {fixed:?}"
        );
        assert!(
            fixed.counters.is_empty(),
            "the older reconcile repaired a counter nobody damaged: {fixed:?}"
        );
        runs += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    // One more older run in the quiet, then the newer version judges.
    let before = newer_counters(&news).await;
    olds.reconcile(16).await.unwrap();
    assert_eq!(
        newer_counters(&news).await,
        before,
        "the older reconcile moved a counter in the quiet"
    );
    let seen = news.verify(16).await.unwrap();
    assert!(seen.is_clean(), "after {runs} older runs: {seen:?}");
    assert!(
        before.values().all(|v| *v >= 0),
        "a counter went below zero: {before:?}"
    );
}

/// The newer version's first read of an empty entity makes what it added
/// readable (nothing is missing from it yet); an older writer still
/// running then creates a record, which lacks those entries. A read of
/// them must not answer as if the record were not there: it is refused
/// (`NotReadable`) until `migrate`, or it counts the record.
pub async fn an_older_writer_after_the_first_read_is_not_missed<H: Harness>(h: &H) {
    let store = h.store();
    let news = AcctRepo::new(store.clone());
    assert_eq!(news.count_per_tier("basic").await.unwrap(), 0);
    let mut rng = fastrand::Rng::with_seed(3);
    v1::AcctRepo::new(store.clone())
        .create(&old(1, &mut rng))
        .await
        .unwrap();
    // The repository that read the empty entity looks again too: it
    // refuses the read now (the record is older than the counter).
    let refused = news.count_per_tier("basic").await;
    assert!(
        matches!(refused, Err(Error::NotReadable { .. })),
        "the first reader still counts {refused:?}"
    );
    // A reader that starts now, as a new process would.
    let fresh = AcctRepo::new(store.clone());
    match fresh.count_per_tier("basic").await {
        Err(Error::NotReadable { .. }) => {}
        Ok(n) => assert_eq!(n, 1, "the version 1 record, read as tier basic, is missed"),
        Err(e) => panic!("{e}"),
    }
    assert!(
        !news.verify(50).await.unwrap().is_clean() || fresh.count_per_tier("basic").await.is_err(),
        "verify finds nothing while a readable counter misses a record"
    );
    // `migrate` makes it readable, the old record counted.
    news.migrate_all(10, |_| {}).await.unwrap();
    let seen = news.verify(50).await.unwrap();
    assert!(seen.is_clean(), "{seen:?}");
    assert_eq!(
        AcctRepo::new(store).count_per_tier("basic").await.unwrap(),
        1
    );
}

/// The newer version's reads are established by looking at records (all
/// of version 2), then an older writer creates one: no read can tell, so
/// `verify` reports it behind, `reconcile` leaves it (and every counter)
/// as it is, and `migrate` rewrites it, after which `verify` is clean and
/// the counters count it once.
pub async fn an_older_writer_after_a_look_is_reported_until_migrate<H: Harness>(h: &H) {
    let store = h.store();
    let news = AcctRepo::new(store.clone());
    let mut rng = fastrand::Rng::with_seed(4);
    let mut first = new(1, &mut rng);
    first.tier = "basic".to_owned();
    news.create(&first).await.unwrap();
    assert_eq!(news.count_per_tier("basic").await.unwrap(), 1);
    let older = old(2, &mut rng);
    v1::AcctRepo::new(store.clone())
        .create(&older)
        .await
        .unwrap();

    let seen = news.verify(50).await.unwrap();
    assert!(
        !seen.is_clean(),
        "a record behind a readable counter: {seen:?}"
    );
    assert_eq!(seen.behind_count, 1, "{seen:?}");
    assert_eq!(seen.behind.len(), 1);
    assert!(seen.behind[0].ends_with("acct:a2"), "{:?}", seen.behind);
    assert!(
        seen.counters.is_empty() && seen.missing_members.is_empty(),
        "its older entries are all there: {seen:?}"
    );
    let before = newer_counters(&news).await;
    let fixed = news.reconcile(50).await.unwrap();
    assert_eq!(fixed.behind_count, 1, "reconcile leaves it to migrate");
    assert_eq!(
        newer_counters(&news).await,
        before,
        "reconcile moved a counter"
    );

    let progress = news.migrate_all(10, |_| {}).await.unwrap();
    assert_eq!(
        progress.changed, 1,
        "migrate rewrites it though the state is complete"
    );
    let after = news.verify(50).await.unwrap();
    assert!(after.is_clean(), "{after:?}");
    let fresh = AcctRepo::new(store.clone());
    assert_eq!(fresh.count_per_tier("basic").await.unwrap(), 2);
    assert_eq!(fresh.count_total().await.unwrap(), 2);
    assert_eq!(
        fresh
            .list_by_tier("basic", kvmodel::PageRequest::new(10))
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    // An update at the current version moves it once: no double count.
    fresh
        .modify("a2", |a| a.tier = "gold".to_owned())
        .await
        .unwrap();
    assert_eq!(fresh.count_per_tier("basic").await.unwrap(), 1);
    assert_eq!(fresh.count_per_tier("gold").await.unwrap(), 1);
    assert!(news.verify(50).await.unwrap().is_clean());
}

/// An older deployment's `migrate_all` (run at its start, say) while the
/// newer one has made its indexes readable: it passes the newer records
/// over, so it must not set the state back and refuse the newer reads.
pub async fn an_older_migrate_leaves_the_newer_reads_readable<H: Harness>(h: &H) {
    let store = h.store();
    let news = AcctRepo::new(store.clone());
    let mut rng = fastrand::Rng::with_seed(5);
    for i in 0..3 {
        let mut a = new(i, &mut rng);
        a.tier = "gold".to_owned();
        news.create(&a).await.unwrap();
    }
    news.migrate_all(10, |_| {}).await.unwrap();
    assert_eq!(news.count_per_tier("gold").await.unwrap(), 3);

    let older = v1::AcctRepo::new(store.clone());
    let progress = older.migrate_all(10, |_| {}).await.unwrap();
    assert_eq!(progress.changed, 0, "it rewrites no newer record");
    let fresh = AcctRepo::new(store.clone());
    assert_eq!(
        fresh.count_per_tier("gold").await.unwrap(),
        3,
        "the older migrate set the state back"
    );
    let listed = fresh
        .list_by_tier("gold", kvmodel::PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 3);
}

/// A record the newer version cannot rewrite (it has grown past the newer
/// `max_size`) stays at version 1, without the index version 2 added:
/// `migrate` reports it skipped and leaves the index write-only, so reads
/// are refused instead of silently missing it.
pub async fn a_record_migrate_cannot_rewrite_keeps_the_index_write_only<H: Harness>(h: &H) {
    mod big1 {
        use super::*;
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
        #[kv(namespace = "roll", key = "note:{id}", version = 1)]
        pub struct Note {
            pub id: String,
            pub text: String,
        }
    }
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "roll", key = "note:{id}", version = 2, max_size = "1KiB")]
    #[kv(index(name = "by_tag", fields(tag), order_by = id, since = 2))]
    #[kv(migration(from = 1, add(tag = "none")))]
    struct Note {
        id: String,
        text: String,
        tag: String,
    }
    let store = h.store();
    let older = big1::NoteRepo::new(store.clone());
    for (id, len) in [("small", 10), ("big", 4096)] {
        let text = "x".repeat(len);
        older
            .create(&big1::Note {
                id: id.to_owned(),
                text,
            })
            .await
            .unwrap();
    }
    let news = NoteRepo::new(store.clone());
    let progress = news.migrate_all(10, |_| {}).await.unwrap();
    assert_eq!(progress.changed, 1, "{progress:?}");
    assert_eq!(progress.skipped.len(), 1, "{progress:?}");
    assert!(
        progress.skipped[0].key.ends_with("note:big"),
        "{progress:?}"
    );
    let read = NoteRepo::new(store.clone())
        .list_by_tag("none", kvmodel::PageRequest::new(10))
        .await;
    assert!(
        matches!(read, Err(Error::NotReadable { .. })),
        "the index lists without the record it lacks: {read:?}"
    );
}

macro_rules! on {
    ($($module:ident: $harness:expr;)*) => {$(
        mod $module {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn older_reconcile_beside_both_versions_adds_no_drift() {
                let harness = $harness;
                super::older_reconcile_beside_both_versions_adds_no_drift(&harness).await;
            }

            #[tokio::test]
            async fn an_older_writer_after_the_first_read_is_not_missed() {
                let harness = $harness;
                super::an_older_writer_after_the_first_read_is_not_missed(&harness).await;
            }

            #[tokio::test]
            async fn an_older_migrate_leaves_the_newer_reads_readable() {
                let harness = $harness;
                super::an_older_migrate_leaves_the_newer_reads_readable(&harness).await;
            }

            #[tokio::test]
            async fn a_record_migrate_cannot_rewrite_keeps_the_index_write_only() {
                let harness = $harness;
                super::a_record_migrate_cannot_rewrite_keeps_the_index_write_only(&harness).await;
            }

            #[tokio::test]
            async fn an_older_writer_after_a_look_is_reported_until_migrate() {
                let harness = $harness;
                super::an_older_writer_after_a_look_is_reported_until_migrate(&harness).await;
            }
        }
    )*};
}

on! {
    memory: kvmodel::conformance::MemoryHarness::new();
    redb: kvmodel::conformance::RedbHarness::new();
    redis: kvmodel::conformance::RedisHarness::start().await;
}
