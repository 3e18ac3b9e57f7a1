//! `Expired` events: the expiry sweep's commit that takes back an expired
//! record's derived entries appends its `Expired` event, with the record as
//! its last write stored it, once, after that record's earlier events; a
//! sweep commit that is refused (or never reaches the store) appends
//! nothing. Stores that keep no feed refuse the writes instead.

use std::time::Duration;

use kvmodel::conformance::{FaultyStore, Harness};
use kvmodel::feed::{Change, Event, Position};
use kvmodel::{Error, KvEntity, Store, Timestamp};
use serde::{Deserialize, Serialize};

/// A lease that expires at its own time, else after an hour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fx", key = "lease:{id}", ttl = "1h", feed(retain = "1h"))]
#[kv(counter(name = "total"))]
pub struct Lease {
    pub id: String,
    #[kv(unique)]
    pub holder: String,
    pub n: u64,
    #[kv(expiry)]
    pub until: Option<Timestamp>,
}

fn lease(id: &str, holder: &str, until: Option<Timestamp>) -> Lease {
    Lease {
        id: id.into(),
        holder: holder.into(),
        n: 0,
        until,
    }
}

/// The store's clock plus `ms`.
async fn at<S: Store>(store: &S, ms: u64) -> Timestamp {
    let now = store.now_ms().await.unwrap();
    Timestamp::from_unix_millis(i64::try_from(now + ms).unwrap()).unwrap()
}

/// The first `n` changes of the feed, failing after a generous wait.
async fn first<S: Store>(repo: &LeaseRepo<S>, n: usize) -> Vec<Change<Lease>> {
    let mut stream = repo.feed().from(Position::Start);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let next = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("the feed delivers every applied change");
        out.push(next.expect("the stream goes on").unwrap());
    }
    out
}

/// Each change as (record id, kind, `n` of the image it carries).
fn summary(changes: &[Change<Lease>]) -> Vec<(String, &'static str, u64)> {
    changes
        .iter()
        .map(|c| match &c.event {
            Event::Created(l) => (l.id.clone(), "created", l.n),
            Event::Updated { after, .. } => (after.id.clone(), "updated", after.n),
            Event::Deleted(l) => (l.id.clone(), "deleted", l.n),
            Event::Expired(l) => (l.id.clone(), "expired", l.n),
            other => panic!("an unknown kind of change: {other:?}"),
        })
        .collect()
}

/// On a store without feeds the lease's writes are refused, and there is
/// nothing to expire: true when that is the case (and checked).
async fn refused_without_feeds<S: Store>(repo: &LeaseRepo<S>, store: &S) -> bool {
    if store.keeps_feeds() {
        return false;
    }
    let err = repo.create(&lease("a", "ann", None)).await.unwrap_err();
    assert!(err.to_string().contains("change feed"), "{err}");
    assert_eq!(repo.get("a").await.unwrap(), None, "nothing written");
    true
}

/// A record that expires and is swept has exactly one `Expired` event,
/// after its created and updated events, carrying its last image; the
/// sweep after it appends nothing more.
pub async fn an_expired_record_has_one_expired_event<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LeaseRepo::new(store.clone());
    if refused_without_feeds(&repo, &store).await {
        return;
    }
    let mut a = lease("a", "ann", Some(at(&store, 1_000).await));
    repo.create(&a).await.unwrap();
    a.n = 1;
    repo.update(&a).await.unwrap();
    let b = lease("b", "bob", Some(at(&store, 60_000).await));
    repo.create(&b).await.unwrap();
    assert!(matches!(
        repo.create(&lease("t", "ann", None)).await,
        Err(Error::UniqueViolation { .. })
    ));
    h.pass(Duration::from_millis(1_500)).await;
    assert_eq!(repo.get("a").await.unwrap(), None);
    let sweep = repo.sweep_expired(100).await.unwrap();
    assert_eq!((sweep.expired, sweep.more), (1, false));
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 0);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    // A last write after the sweeps: nothing comes between.
    repo.create(&lease("z", "zed", None)).await.unwrap();
    let changes = first(&repo, 5).await;
    let want = [
        ("a", "created", 0),
        ("a", "updated", 1),
        ("b", "created", 0),
        ("a", "expired", 1),
        ("z", "created", 0),
    ];
    let want: Vec<_> = want.map(|(i, k, n)| (i.to_owned(), k, n)).into();
    assert_eq!(summary(&changes), want);
    let expired = &changes[3];
    assert_eq!(expired.event, Event::Expired(a), "the last image");
    assert_eq!(expired.key, LeaseKeys::record("a"));
    assert!(changes[..3].iter().all(|c| c.commit != expired.commit));
    assert!(changes.windows(2).all(|w| w[0].position < w[1].position));
}

/// A key created again after its record expired, before any sweep: the
/// create sweeps the old record first, so its `Expired` event comes
/// between the two creates.
pub async fn a_key_created_again_has_its_expiry_first<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LeaseRepo::new(store.clone());
    if refused_without_feeds(&repo, &store).await {
        return;
    }
    let old = lease("x", "ann", Some(at(&store, 1_000).await));
    repo.create(&old).await.unwrap();
    h.pass(Duration::from_millis(1_500)).await;
    let new = lease("x", "bob", None);
    repo.create(&new).await.unwrap();
    let changes = first(&repo, 3).await;
    assert_eq!(changes[0].event, Event::Created(old.clone()));
    assert_eq!(changes[1].event, Event::Expired(old));
    assert_eq!(changes[2].event, Event::Created(new));
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 0);
}

/// A sweep commit that never reaches the store, and one that is refused
/// (its record's condition fails), append nothing: each expired record
/// still has exactly one `Expired` event, from the commit that applied.
pub async fn refused_sweep_commits_append_nothing<H: Harness>(h: &H) {
    let faulty = FaultyStore::new(h.store());
    let repo = LeaseRepo::new(faulty.clone());
    if refused_without_feeds(&repo, &faulty).await {
        return;
    }
    for (id, holder) in [("p", "pat"), ("q", "quin")] {
        let until = Some(at(&faulty, 1_000).await);
        repo.create(&lease(id, holder, until)).await.unwrap();
    }
    h.pass(Duration::from_millis(1_500)).await;
    faulty.die_after(0);
    assert!(repo.sweep_expired(100).await.is_err());
    faulty.die_after(u64::MAX);
    // The merged commit of both is refused; each is then swept alone.
    faulty.contend_next(&LeaseKeys::record("p"));
    let sweep = repo.sweep_expired(100).await.unwrap();
    assert!(!faulty.contending(), "the sweep met the refusal");
    assert_eq!(sweep.expired, 2);
    repo.create(&lease("m", "mo", None)).await.unwrap();
    let got = summary(&first(&repo, 5).await);
    let expired: Vec<_> = got.iter().filter(|c| c.1 == "expired").collect();
    assert_eq!(expired.len(), 2, "{got:?}");
    for id in ["p", "q"] {
        let at = |kind| got.iter().position(|c| c.0 == id && c.1 == kind);
        assert!(at("created") < at("expired"), "{got:?}");
    }
    assert_eq!(got[4], ("m".to_owned(), "created", 0));
}

/// Sweepers racing over the same expired records: each record is taken
/// back by one commit, so its `Expired` event is there once.
pub async fn racing_sweepers_append_one_event_each<H: Harness>(h: &H) {
    const N: usize = 12;
    let store = h.store();
    let repo = LeaseRepo::new(store.clone());
    if refused_without_feeds(&repo, &store).await {
        return;
    }
    for i in 0..N {
        let until = Some(at(&store, 1_000).await);
        repo.create(&lease(&format!("r{i}"), &format!("h{i}"), until))
            .await
            .unwrap();
    }
    h.pass(Duration::from_millis(1_500)).await;
    let sweepers: Vec<_> = (0..4)
        .map(|_| {
            let repo = repo.clone();
            tokio::spawn(async move { repo.sweep_expired(100).await.unwrap().expired })
        })
        .collect();
    let mut expired = 0;
    for s in sweepers {
        expired += s.await.unwrap();
    }
    assert_eq!(expired, N as u64, "each record swept once");
    repo.create(&lease("m", "mo", None)).await.unwrap();
    let got = summary(&first(&repo, 2 * N + 1).await);
    for i in 0..N {
        let id = format!("r{i}");
        let kinds: Vec<_> = got.iter().filter(|c| c.0 == id).map(|c| c.1).collect();
        assert_eq!(kinds, ["created", "expired"], "{id}: {got:?}");
    }
    assert_eq!(got[2 * N], ("m".to_owned(), "created", 0));
    assert_eq!(repo.count_total().await.unwrap(), 1);
}

/// `reconcile` sweeps an expired record with its event, as the sweep does.
pub async fn reconcile_sweeps_with_the_event<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LeaseRepo::new(store.clone());
    if refused_without_feeds(&repo, &store).await {
        return;
    }
    let r = lease("r", "ray", Some(at(&store, 1_000).await));
    repo.create(&r).await.unwrap();
    h.pass(Duration::from_millis(1_500)).await;
    let drift = repo.reconcile(100).await.unwrap();
    assert_eq!(drift.records, 0, "{drift:?}");
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 0);
    repo.create(&lease("m", "mo", None)).await.unwrap();
    let changes = first(&repo, 3).await;
    assert_eq!(changes[0].event, Event::Created(r.clone()));
    assert_eq!(changes[1].event, Event::Expired(r));
    assert!(matches!(changes[2].event, Event::Created(ref m) if m.id == "m"));
}

// Every case waits for records to expire (real time on Redis and Redis
// Cluster): there they run at once, so the waits overlap.
kvmodel_runtime::on_every_backend!(
    ;
    real_time:
    reconcile_sweeps_with_the_event,
    an_expired_record_has_one_expired_event,
    a_key_created_again_has_its_expiry_first,
    refused_sweep_commits_append_nothing,
    racing_sweepers_append_one_event_each,
);
