//! The steps of a sequence, how proptest draws them, and how each runs on
//! the repositories and on the model, with the outcome the model expects.

use std::sync::Arc;

use kvmodel::conformance::Harness;
use kvmodel::{Error, Store};
use proptest::prelude::*;
use proptest::sample::select;

use super::entities::*;
use super::feed::{EntryChange, entry, entry_change, entry_pair};

/// A change `modify` makes to an item.
#[derive(Debug, Clone)]
pub enum Change {
    Sku(&'static str),
    Group(&'static str),
    Rank(i64),
    Owner(&'static str),
    AddQty(i64),
}

impl Change {
    pub fn apply(&self, item: &mut Item) {
        match self {
            Change::Sku(s) => item.sku = (*s).to_owned(),
            Change::Group(g) => item.group = (*g).to_owned(),
            Change::Rank(r) => item.rank = *r,
            Change::Owner(o) => item.owner = (*o).to_owned(),
            Change::AddQty(d) => item.qty += d,
        }
    }
}

/// A change `modify` makes to a lease.
#[derive(Debug, Clone)]
pub enum LeaseChange {
    Token(&'static str),
    Owner(&'static str),
    Rank(i64),
    AddWeight(i64),
}

impl LeaseChange {
    pub fn apply(&self, lease: &mut Lease) {
        match self {
            LeaseChange::Token(t) => lease.token = (*t).to_owned(),
            LeaseChange::Owner(o) => lease.owner = (*o).to_owned(),
            LeaseChange::Rank(r) => lease.rank = *r,
            LeaseChange::AddWeight(d) => lease.weight += d,
        }
    }
}

/// One step of a sequence.
#[derive(Debug, Clone)]
pub enum Step {
    CreateItem(Item),
    UpdateItem(Item),
    UpsertItem(Item),
    ModifyItem(&'static str, Change),
    DeleteItem(&'static str),
    /// Lease writes say when the lease expires; `modify` may leave its
    /// expiry as it was (`None`).
    CreateLease(Lease, Life),
    UpdateLease(Lease, Life),
    UpsertLease(Lease, Life),
    ModifyLease(&'static str, LeaseChange, Option<Life>),
    DeleteLease(&'static str),
    /// Store time passes (past every lease's expiry but a later one when
    /// `long`); leases it ends await the sweep.
    Pass {
        long: bool,
    },
    /// The expiry sweep of leases runs to the end.
    Sweep,
    /// Writers modify one item at once, each with its own change.
    ConcurrentModify(&'static str, Vec<Change>),
    /// Writers create items with one unique value at once.
    ConcurrentCreate(Vec<Item>),
    /// One transaction upserts an item and a lease: both or neither.
    TxUpsert(Item, Lease, Life),
    /// One transaction modifies an item and deletes a lease: both or
    /// neither.
    TxModifyDelete(&'static str, Change, &'static str),
    CreateEntry(Entry),
    UpsertEntry(Entry),
    ModifyEntry(&'static str, EntryChange),
    DeleteEntry(&'static str),
    /// One transaction creates two entries: both events in one commit, or
    /// neither.
    TxCreateEntries(Entry, Entry),
}

fn item() -> impl Strategy<Value = Item> {
    (
        select(IDS),
        select(SKUS),
        select(GROUPS),
        select(RANKS),
        select(OWNERS),
        -50i64..50,
    )
        .prop_map(|(id, sku, group, rank, owner, qty)| Item {
            id: id.into(),
            sku: sku.into(),
            group: group.into(),
            rank,
            owner: owner.into(),
            qty,
        })
}

fn lease() -> impl Strategy<Value = Lease> {
    (
        select(IDS),
        select(TOKENS),
        select(OWNERS),
        select(RANKS),
        -9i64..10,
    )
        .prop_map(|(id, token, owner, rank, weight)| Lease {
            id: id.into(),
            token: token.into(),
            owner: owner.into(),
            rank,
            weight,
            ends: None,
        })
}

fn life() -> impl Strategy<Value = Life> {
    select(&[Life::Ttl, Life::Soon, Life::Later][..])
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        select(SKUS).prop_map(Change::Sku),
        select(GROUPS).prop_map(Change::Group),
        select(RANKS).prop_map(Change::Rank),
        select(OWNERS).prop_map(Change::Owner),
        (-50i64..50).prop_map(Change::AddQty),
    ]
}

/// A change that never touches the unique value, so that concurrent
/// writers all succeed.
fn free_change() -> impl Strategy<Value = Change> {
    prop_oneof![
        select(GROUPS).prop_map(Change::Group),
        select(RANKS).prop_map(Change::Rank),
        select(OWNERS).prop_map(Change::Owner),
        (-50i64..50).prop_map(Change::AddQty),
    ]
}

fn lease_change() -> impl Strategy<Value = LeaseChange> {
    prop_oneof![
        select(TOKENS).prop_map(LeaseChange::Token),
        select(OWNERS).prop_map(LeaseChange::Owner),
        select(RANKS).prop_map(LeaseChange::Rank),
        (-9i64..10).prop_map(LeaseChange::AddWeight),
    ]
}

/// Items with distinct ids and one unique value (spelled in any case).
fn rivals() -> impl Strategy<Value = Vec<Item>> {
    (
        proptest::sample::subsequence(IDS, 2..=3),
        proptest::collection::vec(item(), 3),
        select(SKUS),
    )
        .prop_map(|(ids, mut items, sku)| {
            for (item, id) in items.iter_mut().zip(&ids) {
                item.id = (*id).to_owned();
                item.sku = if item.qty % 2 == 0 {
                    sku.to_owned()
                } else {
                    sku.to_uppercase()
                };
            }
            items.truncate(ids.len());
            items
        })
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => item().prop_map(Step::CreateItem),
        2 => item().prop_map(Step::UpdateItem),
        2 => item().prop_map(Step::UpsertItem),
        3 => (select(IDS), change()).prop_map(|(id, c)| Step::ModifyItem(id, c)),
        2 => select(IDS).prop_map(Step::DeleteItem),
        3 => (lease(), life()).prop_map(|(l, t)| Step::CreateLease(l, t)),
        1 => (lease(), life()).prop_map(|(l, t)| Step::UpdateLease(l, t)),
        2 => (lease(), life()).prop_map(|(l, t)| Step::UpsertLease(l, t)),
        2 => (select(IDS), lease_change(), proptest::option::of(life()))
            .prop_map(|(id, c, t)| Step::ModifyLease(id, c, t)),
        1 => select(IDS).prop_map(Step::DeleteLease),
        2 => any::<bool>().prop_map(|long| Step::Pass { long }),
        2 => Just(Step::Sweep),
        1 => (select(IDS), proptest::collection::vec(free_change(), 2..=4))
            .prop_map(|(id, cs)| Step::ConcurrentModify(id, cs)),
        1 => rivals().prop_map(Step::ConcurrentCreate),
        2 => (item(), lease(), life()).prop_map(|(i, l, t)| Step::TxUpsert(i, l, t)),
        2 => (select(IDS), change(), select(IDS))
            .prop_map(|(id, c, lease)| Step::TxModifyDelete(id, c, lease)),
        3 => entry().prop_map(Step::CreateEntry),
        2 => entry().prop_map(Step::UpsertEntry),
        2 => (select(IDS), entry_change()).prop_map(|(id, c)| Step::ModifyEntry(id, c)),
        1 => select(IDS).prop_map(Step::DeleteEntry),
        1 => entry_pair().prop_map(|(a, b)| Step::TxCreateEntries(a, b)),
    ]
}

/// What a write returned, reduced to what the model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// `upsert`: whether it created; `delete`: whether it removed.
    Flag(bool),
    AlreadyExists,
    NotFound,
    Unique,
    /// Refused: the entity has a feed and the store keeps none.
    NoFeed,
}

pub fn outcome<T>(r: kvmodel::Result<T>, flag: impl FnOnce(T) -> Option<bool>) -> Outcome {
    match r {
        Ok(v) => flag(v).map_or(Outcome::Done, Outcome::Flag),
        Err(Error::AlreadyExists { .. }) => Outcome::AlreadyExists,
        Err(Error::NotFound { .. }) => Outcome::NotFound,
        Err(Error::UniqueViolation { .. }) => Outcome::Unique,
        Err(Error::InvalidBatch { reason, .. }) if reason.contains("no change feed") => {
            Outcome::NoFeed
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}

pub fn done<T>(_: T) -> Option<bool> {
    None
}

/// The repositories of a sequence.
pub struct Repos<S: Store> {
    pub items: ItemRepo<S>,
    pub leases: LeaseRepo<S>,
    pub entries: EntryRepo<S>,
}

/// How much store time a pass lets go by: a long one past the time to
/// live (and so past a soon expiry).
pub fn pass_ms(long: bool) -> u64 {
    if long { TTL_MS + 100 } else { 130 }
}

/// `v` with the `ends` of `life`, from the store's clock now.
async fn dated<S: Store>(r: &Repos<S>, m: &Model, v: &Lease, life: Life) -> Lease {
    let now = r.leases.store().now_ms().await.unwrap();
    Lease {
        ends: life.ends(now, m.soon_ms()),
        ..v.clone()
    }
}

/// Runs `step` on the repositories and on the model; panics when the
/// outcome differs from the model's.
pub async fn run<H: Harness>(h: &H, r: &Repos<H::Store>, m: &mut Model, step: &Step) {
    let (got, want) = match step {
        Step::CreateItem(v) => {
            let want = if m.items.contains_key(&v.id) {
                Outcome::AlreadyExists
            } else if m.sku_holder(&v.sku, &v.id).is_some() {
                Outcome::Unique
            } else {
                m.items.insert(v.id.clone(), v.clone());
                Outcome::Done
            };
            (outcome(r.items.create(v).await, done), want)
        }
        Step::UpdateItem(v) => {
            let want = if !m.items.contains_key(&v.id) {
                Outcome::NotFound
            } else if m.sku_holder(&v.sku, &v.id).is_some() {
                Outcome::Unique
            } else {
                m.items.insert(v.id.clone(), v.clone());
                Outcome::Done
            };
            (outcome(r.items.update(v).await, done), want)
        }
        Step::UpsertItem(v) => {
            let want = if m.sku_holder(&v.sku, &v.id).is_some() {
                Outcome::Unique
            } else {
                Outcome::Flag(m.items.insert(v.id.clone(), v.clone()).is_none())
            };
            (outcome(r.items.upsert(v).await, Some), want)
        }
        Step::ModifyItem(id, c) => {
            let want = match m.items.get(*id).cloned() {
                None => Outcome::NotFound,
                Some(mut v) => {
                    c.apply(&mut v);
                    if m.sku_holder(&v.sku, id).is_some() {
                        Outcome::Unique
                    } else {
                        m.items.insert(v.id.clone(), v);
                        Outcome::Done
                    }
                }
            };
            let got = r.items.modify(id, |v| c.apply(v)).await;
            if let Ok(v) = &got {
                assert_eq!(Some(v), m.items.get(*id), "modify returned another record");
            }
            (outcome(got, done), want)
        }
        Step::DeleteItem(id) => {
            let want = Outcome::Flag(m.items.remove(*id).is_some());
            (outcome(r.items.delete(id).await, Some), want)
        }
        Step::CreateLease(v, life) => {
            let v = &dated(r, m, v, *life).await;
            let want = if m.leases.contains_key(&v.id) {
                Outcome::AlreadyExists
            } else if m.token_holder(&v.token, &v.id).is_some() {
                Outcome::Unique
            } else {
                m.put_lease(v.clone(), Some(*life));
                Outcome::Done
            };
            (outcome(r.leases.create(v).await, done), want)
        }
        Step::UpdateLease(v, life) => {
            let v = &dated(r, m, v, *life).await;
            let want = if !m.leases.contains_key(&v.id) {
                Outcome::NotFound
            } else if m.token_holder(&v.token, &v.id).is_some() {
                Outcome::Unique
            } else {
                m.put_lease(v.clone(), Some(*life));
                Outcome::Done
            };
            (outcome(r.leases.update(v).await, done), want)
        }
        Step::UpsertLease(v, life) => {
            let v = &dated(r, m, v, *life).await;
            let want = if m.token_holder(&v.token, &v.id).is_some() {
                Outcome::Unique
            } else {
                let created = !m.leases.contains_key(&v.id);
                m.put_lease(v.clone(), Some(*life));
                Outcome::Flag(created)
            };
            (outcome(r.leases.upsert(v).await, Some), want)
        }
        Step::ModifyLease(id, c, life) => {
            let now = r.leases.store().now_ms().await.unwrap();
            let ends = life.map(|l| l.ends(now, m.soon_ms()));
            let change = |v: &mut Lease| {
                c.apply(v);
                if let Some(ends) = ends {
                    v.ends = ends;
                }
            };
            let want = match m.lease(id).cloned() {
                None => Outcome::NotFound,
                Some(mut v) => {
                    change(&mut v);
                    if m.token_holder(&v.token, id).is_some() {
                        Outcome::Unique
                    } else {
                        m.put_lease(v, *life);
                        Outcome::Done
                    }
                }
            };
            let got = r.leases.modify(id, change).await;
            if let Ok(v) = &got {
                assert_eq!(Some(v), m.lease(id), "modify returned another lease");
            }
            (outcome(got, done), want)
        }
        Step::DeleteLease(id) => {
            let want = Outcome::Flag(m.delete_lease(id));
            (outcome(r.leases.delete(id).await, Some), want)
        }
        Step::Pass { long } => {
            let ms = pass_ms(*long);
            h.pass(std::time::Duration::from_millis(ms)).await;
            m.pass(ms);
            (Outcome::Done, Outcome::Done)
        }
        Step::Sweep => {
            sweep(r, m).await;
            (Outcome::Done, Outcome::Done)
        }
        Step::ConcurrentModify(id, changes) => {
            concurrent_modify(r, m, id, changes).await;
            (Outcome::Done, Outcome::Done)
        }
        Step::ConcurrentCreate(rivals) => {
            concurrent_create(r, m, rivals).await;
            (Outcome::Done, Outcome::Done)
        }
        Step::TxUpsert(item, lease, life) => {
            let lease = &dated(r, m, lease, *life).await;
            let want = if m.sku_holder(&item.sku, &item.id).is_some()
                || m.token_holder(&lease.token, &lease.id).is_some()
            {
                Outcome::Unique
            } else {
                m.items.insert(item.id.clone(), item.clone());
                m.put_lease(lease.clone(), Some(*life));
                Outcome::Done
            };
            let (items, leases) = (&r.items, &r.leases);
            let got = kvmodel::transaction(items.store(), |tx| async move {
                items.in_tx(&tx).upsert(item).await?;
                leases.in_tx(&tx).upsert(lease).await?;
                Ok(())
            })
            .await;
            (outcome(got, done), want)
        }
        Step::TxModifyDelete(id, c, lease) => {
            let want = match m.items.get(*id).cloned() {
                None => Outcome::NotFound,
                Some(mut v) => {
                    c.apply(&mut v);
                    if m.sku_holder(&v.sku, id).is_some() {
                        Outcome::Unique
                    } else {
                        m.items.insert(v.id.clone(), v);
                        m.delete_lease(lease);
                        Outcome::Done
                    }
                }
            };
            let (items, leases) = (&r.items, &r.leases);
            let got = kvmodel::transaction(items.store(), |tx| async move {
                items
                    .in_tx(&tx)
                    .modify(&ItemKeys::record(id), |v| c.apply(v))
                    .await?;
                leases.in_tx(&tx).delete(&LeaseKeys::record(lease)).await?;
                Ok(())
            })
            .await;
            (outcome(got, done), want)
        }
        Step::CreateEntry(_)
        | Step::UpsertEntry(_)
        | Step::ModifyEntry(..)
        | Step::DeleteEntry(_)
        | Step::TxCreateEntries(..) => super::feed::run(r, m, step).await,
    };
    assert_eq!(got, want, "the outcome of {step:?}");
}

/// Sweeps expired leases until none is due: every expired lease is swept
/// (none skipped), and `verify` then finds none awaiting the sweep.
async fn sweep<S: Store>(r: &Repos<S>, m: &mut Model) {
    loop {
        let sweep = r.leases.sweep_expired(1_000).await.unwrap();
        assert!(sweep.skipped.is_empty(), "{sweep:?}");
        if !sweep.more {
            break;
        }
    }
    m.swept();
    let drift = r.leases.verify(3).await.unwrap();
    assert!(
        drift.is_clean() && drift.expired == 0,
        "leases after the sweep: {drift:?}"
    );
}

/// Every writer's change lands (no lost update): the stored item is the
/// model's with the changes applied in some order.
async fn concurrent_modify<S: Store>(r: &Repos<S>, m: &mut Model, id: &str, changes: &[Change]) {
    let changes = Arc::new(changes.to_vec());
    let tasks: Vec<_> = (0..changes.len())
        .map(|i| {
            let repo = r.items.clone();
            let changes = Arc::clone(&changes);
            let id = id.to_owned();
            tokio::spawn(async move { repo.modify(&id, |v| changes[i].apply(v)).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(outcome(t.await.unwrap(), done));
    }
    let Some(before) = m.items.get(id).cloned() else {
        assert!(
            outcomes.iter().all(|o| *o == Outcome::NotFound),
            "{outcomes:?}"
        );
        return;
    };
    assert!(outcomes.iter().all(|o| *o == Outcome::Done), "{outcomes:?}");
    let stored = r
        .items
        .get(id)
        .await
        .unwrap()
        .expect("the item is still there");
    let orders = permutations(changes.len());
    let serial = orders.iter().any(|order| {
        let mut v = before.clone();
        order.iter().for_each(|i| changes[*i].apply(&mut v));
        v == stored
    });
    assert!(
        serial,
        "{stored:?} is no serial order of {changes:?} on {before:?}"
    );
    m.items.insert(id.to_owned(), stored);
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, n - 1);
            out.push(q);
        }
    }
    out
}

/// Exactly one rival wins a free unique value; a taken one, none.
async fn concurrent_create<S: Store>(r: &Repos<S>, m: &mut Model, rivals: &[Item]) {
    let tasks: Vec<_> = rivals
        .iter()
        .map(|v| {
            let repo = r.items.clone();
            let v = v.clone();
            tokio::spawn(async move { repo.create(&v).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(outcome(t.await.unwrap(), done));
    }
    let mut winners = Vec::new();
    for (v, got) in rivals.iter().zip(&outcomes) {
        if m.items.contains_key(&v.id) {
            assert_eq!(*got, Outcome::AlreadyExists, "{v:?}");
        } else if *got == Outcome::Done {
            winners.push(v.clone());
        } else {
            assert_eq!(*got, Outcome::Unique, "{v:?}");
        }
    }
    let fresh = rivals.iter().any(|v| !m.items.contains_key(&v.id));
    let taken = m.sku_holder(&rivals[0].sku, "").is_some();
    let want = usize::from(fresh && !taken);
    assert_eq!(winners.len(), want, "winners of {rivals:?}: {outcomes:?}");
    for w in winners {
        m.items.insert(w.id.clone(), w);
    }
}
