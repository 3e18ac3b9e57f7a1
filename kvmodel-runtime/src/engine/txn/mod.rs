//! Transactions across repositories: writes of several entities of one
//! store, each with its full upkeep, and the reads they depend on, in one
//! atomic commit.
//!
//! A [`Transaction`] collects what each write's `transition` appends to a
//! batch (the record, its claims, members, counters, receipt and parent
//! checks) as one part per write, plus a condition per record read through
//! it (optimistic: the commit fails when a read record changed). On commit
//! the parts merge into one [`Batch`], committed by one [`Store::commit`]:
//! nothing is applied unless everything is. Parts that would not compose
//! are refused when staged, with an error naming the key: two writes of
//! one record, two records taking one unique value, a write of a key
//! another part conditions on.
//!
//! Layer: roles: above `transition`,
//! [`links`](crate::engine::links) and [`on_delete`](crate::engine::on_delete).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::entity::ClaimFact;
use crate::engine::on_delete;
use crate::engine::relation::ParentFact;
use crate::engine::repo::{MAX_ATTEMPTS, backoff, unique_violation};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Condition, Op, Outcome};

mod links;
mod records;

pub use records::TxRepo;

/// The most conditions plus operations one transaction may commit: a
/// larger one is refused with [`Error::InvalidBatch`] before anything is
/// written (a Redis script or a redb write transaction that size still
/// runs in well under a second).
pub const MAX_TRANSACTION_ENTRIES: usize = 10_000;

/// What the condition at one index of a transaction's batch guards.
#[derive(Debug, Clone)]
enum Guard {
    /// A record (or its receipt) read or written: another writer changed
    /// it, so the transaction runs again.
    Changed { entity: &'static str, key: String },
    /// The record a create writes exists.
    Exists { entity: &'static str, key: String },
    /// The unique value a write takes.
    Claim {
        entity: &'static str,
        claim: ClaimFact,
    },
    /// The parent a record names exists.
    Parent {
        entity: &'static str,
        parent: ParentFact,
    },
}

/// One staged write: its conditions (each with its guard) and operations,
/// and the store time its times to live were worked out at, if any.
struct Part {
    batch: Batch,
    guards: Vec<Guard>,
    clock: Option<u64>,
}

/// What a transaction has read and staged so far.
#[derive(Default)]
struct State {
    /// Each key read, with the entity that read it and what it held.
    reads: BTreeMap<String, (&'static str, Option<Vec<u8>>)>,
    /// The staged writes, in order.
    parts: Vec<Part>,
    /// Keys a staged write puts or deletes (record, receipt, claims), with
    /// the record key of the write.
    written: BTreeMap<String, String>,
    /// Keys a staged write deletes if they hold its record (the unique
    /// values it gives up), with the record key of the write.
    released: BTreeMap<String, String>,
    /// Keys a staged write conditions on, other than the records read.
    conditioned: BTreeSet<String>,
    /// Keys a staged write creates (a record put under an `Absent`
    /// condition): a child staged later needs no condition on its parent.
    created: BTreeSet<String>,
    /// Keys a staged link or unlink puts or deletes (registries, edges):
    /// a later link of the same transaction reads them back from the
    /// batch and replaces them.
    linked: BTreeSet<String>,
    /// The records at either end of a staged link or unlink.
    link_ends: BTreeSet<String>,
}

/// Reads and writes of several repositories of one store, committed
/// atomically: all of them or none.
///
/// Reach a repository's records through it with the repository's `in_tx`,
/// then commit with [`commit`](Transaction::commit) (no retry), or run the
/// whole transaction with [`transaction`], which retries when a record it
/// read changed. Every repository used must be on the transaction's store.
pub struct Transaction<S> {
    store: S,
    state: Arc<Mutex<State>>,
}

impl<S: Clone> Clone for Transaction<S> {
    /// Another handle on the same transaction.
    fn clone(&self) -> Self {
        Transaction {
            store: self.store.clone(),
            state: Arc::clone(&self.state),
        }
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for Transaction<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Transaction")
            .field("store", &self.store)
            .field("reads", &state.reads.len())
            .field("writes", &state.parts.len())
            .finish()
    }
}

/// Why a commit did not apply, when another attempt may.
struct Changed {
    entity: &'static str,
    key: String,
}

impl<S> Transaction<S> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S: Store> Transaction<S> {
    /// An empty transaction on `store`.
    pub fn new(store: S) -> Self {
        Transaction {
            store,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The store the transaction commits to.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Commits every staged write and checks every read, in one atomic
    /// commit, once. A record read or written that another writer changed
    /// meanwhile fails it with [`Error::Conflict`], writing nothing
    /// ([`transaction`] retries instead); a taken unique value, an existing
    /// record a create writes or a missing parent fails it with the error
    /// a single write would return.
    pub async fn commit(self) -> Result<()> {
        match self.try_commit().await? {
            Ok(()) => Ok(()),
            Err(c) => Err(Error::Conflict {
                entity: c.entity,
                key: c.key,
                attempts: 1,
            }),
        }
    }

    /// One commit: `Err(Changed)` when a guarded record changed.
    async fn try_commit(&self) -> Result<Result<(), Changed>> {
        // A write's times to live run from when they were worked out, not
        // from the commit: each part's are shortened by the time since, so
        // its record expires when its receipt and ledger entry say.
        let timed = self.lock().parts.iter().any(|p| p.clock.is_some());
        let now = match timed {
            true => Some(self.store.now_ms().await?),
            false => None,
        };
        let (batch, guards) = {
            let mut state = self.lock();
            let size = state.reads.len()
                + state
                    .parts
                    .iter()
                    .map(|p| p.batch.conditions().len() + p.batch.ops().len())
                    .sum::<usize>();
            if size > MAX_TRANSACTION_ENTRIES {
                let key = state
                    .parts
                    .first()
                    .and_then(|p| p.batch.ops().first())
                    .map_or_else(String::new, |o| o.key().to_owned());
                return Err(Error::InvalidBatch {
                    key,
                    reason: format!(
                        "the transaction holds {size} conditions and operations, more than the \
                         {MAX_TRANSACTION_ENTRIES} one commit may hold; split it into smaller \
                         transactions"
                    ),
                });
            }
            let mut batch = Batch::with_capacity(size, size);
            let mut guards = Vec::with_capacity(size);
            for (key, (entity, value)) in &state.reads {
                match value {
                    Some(v) => batch.equals(key.as_str(), v.clone()),
                    None => batch.absent(key.as_str()),
                };
                guards.push(Guard::Changed {
                    entity,
                    key: key.clone(),
                });
            }
            // The staged writes move into the one commit: a transaction
            // commits once. A write's condition on a key the transaction
            // read is implied by the read's (which pins the value) when it
            // holds for what was read, and goes.
            let parts = std::mem::take(&mut state.parts);
            for mut part in parts {
                let elapsed = match (now, part.clock) {
                    (Some(now), Some(at)) => {
                        std::time::Duration::from_millis(now.saturating_sub(at))
                    }
                    _ => std::time::Duration::ZERO,
                };
                crate::engine::feed::carry(&mut part.batch, &mut batch);
                let (conditions, ops) = part.batch.into_parts();
                let guarded = conditions.len() == part.guards.len();
                let mut part_guards = part.guards.into_iter();
                for c in conditions {
                    let guard = part_guards.next();
                    let implied = guarded
                        && state
                            .reads
                            .get(c.key())
                            .is_some_and(|(_, read)| c.holds(read.as_deref()));
                    if !implied {
                        batch.condition(c);
                        guards.extend(guard);
                    }
                }
                guards.extend(part_guards);
                for mut op in ops {
                    if let Op::Put { ttl: Some(ttl), .. } = &mut op {
                        // Never 0, which would mean no expiry: a record
                        // whose time has passed meanwhile is written to
                        // expire at once.
                        *ttl = ttl
                            .saturating_sub(elapsed)
                            .max(std::time::Duration::from_millis(1));
                    }
                    batch.op(op);
                }
            }
            (batch, guards)
        };
        if batch.is_empty() {
            return Ok(Ok(()));
        }
        let index = match self.store.commit(batch).await? {
            Outcome::Applied => return Ok(Ok(())),
            Outcome::Failed { index } => index,
        };
        match guards.into_iter().nth(index) {
            Some(Guard::Changed { entity, key }) => Ok(Err(Changed { entity, key })),
            Some(Guard::Exists { entity, key }) => Err(Error::AlreadyExists { entity, key }),
            Some(Guard::Claim { entity, claim }) => Err(unique_violation(entity, &claim)),
            Some(Guard::Parent { entity, parent }) => {
                // On a Redis Cluster a condition on a key another unfinished
                // write holds may fail while the parent is there.
                if self.store.get(&parent.key).await?.is_some() {
                    Ok(Err(Changed {
                        entity: parent.entity,
                        key: parent.key,
                    }))
                } else {
                    Err(on_delete::parent_error(entity, &parent))
                }
            }
            None => Err(Error::InvalidBatch {
                key: String::new(),
                reason: "the store reported a failed condition the transaction does not have"
                    .to_owned(),
            }),
        }
    }

    /// The values at `keys` as this transaction sees them: what it read
    /// before, else read now and recorded as conditions of the commit.
    async fn read(&self, entity: &'static str, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        let missing: Vec<String> = {
            let state = self.lock();
            if let Some(k) = keys.iter().find(|k| state.written.contains_key(*k)) {
                return Err(Error::InvalidBatch {
                    key: k.clone(),
                    reason: "the transaction reads a record it has already written; read each \
                             record before writing it"
                        .to_owned(),
                });
            }
            keys.iter()
                .filter(|k| !state.reads.contains_key(*k))
                .cloned()
                .collect()
        };
        if !missing.is_empty() {
            let values = self.store.get_many(&missing).await?;
            let mut state = self.lock();
            for (k, v) in missing.into_iter().zip(values) {
                state.reads.entry(k).or_insert((entity, v));
            }
        }
        let state = self.lock();
        Ok(keys
            .iter()
            .map(|k| state.reads.get(k).and_then(|(_, v)| v.clone()))
            .collect())
    }

    /// The values at `keys` as this transaction will leave them: a key a
    /// staged write puts or deletes reads back from the batch (no
    /// condition: the write that staged it conditions on what it replaced),
    /// any other as [`read`](Self::read) sees it.
    async fn read_own(
        &self,
        entity: &'static str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let (staged, others) = {
            let state = self.lock();
            let staged: Vec<Staged> = keys.iter().map(|k| state.staged(k)).collect();
            let others: Vec<String> = keys
                .iter()
                .zip(&staged)
                .filter(|(_, s)| s.is_none())
                .map(|(k, _)| k.clone())
                .collect();
            (staged, others)
        };
        let mut read = self.read(entity, &others).await?.into_iter();
        Ok(staged
            .into_iter()
            .map(|s| s.unwrap_or_else(|| read.next().flatten()))
            .collect())
    }

    /// Refuses the deletion of `record` when a link or unlink of the same
    /// transaction names it: the delete would not see what the link
    /// staged (its registry, its entries).
    fn refuse_linked(&self, record: &str) -> Result<()> {
        if self.lock().link_ends.contains(record) {
            return Err(Error::InvalidBatch {
                key: record.to_owned(),
                reason: "the transaction links or unlinks this record before deleting it; \
                         delete it in another transaction"
                    .to_owned(),
            });
        }
        Ok(())
    }

    /// Adds a link's or an unlink's operations (`batch`, without
    /// conditions: the keys it read are conditions of the commit already).
    /// A registry or an edge an earlier link of the transaction wrote is
    /// replaced (the new value was planned from the staged one); a key
    /// another write of the transaction changes or depends on is refused.
    fn stage_links(&self, ends: [&str; 2], batch: Batch) -> Result<()> {
        let record = ends[0];
        let mut state = self.lock();
        let writes: BTreeSet<String> = written_keys(&batch);
        for key in &writes {
            let earlier = state.written.get(key);
            if let Some(other) = earlier.filter(|_| !state.linked.contains(key)) {
                return Err(Error::InvalidBatch {
                    key: key.clone(),
                    reason: format!(
                        "the link of `{record}` changes a key the write of `{other}` in the \
                         same transaction changes; link in another transaction"
                    ),
                });
            }
            if state.conditioned.contains(key) {
                return Err(Error::InvalidBatch {
                    key: key.clone(),
                    reason: format!(
                        "the link of `{record}` changes a key an earlier write of the same \
                         transaction depends on; link in another transaction"
                    ),
                });
            }
        }
        let superseded: BTreeSet<&String> = writes
            .iter()
            .filter(|k| state.written.contains_key(*k))
            .collect();
        if !superseded.is_empty() {
            for part in &mut state.parts {
                if !part
                    .batch
                    .ops()
                    .iter()
                    .any(|o| superseded.contains(&o.key().to_owned()))
                {
                    continue;
                }
                let (conditions, ops) = std::mem::take(&mut part.batch).into_parts();
                let mut kept = Batch::with_capacity(conditions.len(), ops.len());
                for c in conditions {
                    kept.condition(c);
                }
                for op in ops {
                    let replaced = matches!(
                        op,
                        Op::Put { .. } | Op::Delete { .. } | Op::DeleteIfEquals { .. }
                    ) && superseded.contains(&op.key().to_owned());
                    if !replaced {
                        kept.op(op);
                    }
                }
                part.batch = kept;
            }
        }
        for key in writes {
            state.written.insert(key.clone(), record.to_owned());
            state.linked.insert(key);
        }
        state.link_ends.extend(ends.map(str::to_owned));
        state.parts.push(Part {
            batch,
            guards: Vec::new(),
            clock: None,
        });
        Ok(())
    }

    /// Drops what the transaction read at `keys`, to read them again.
    fn forget(&self, keys: &[String]) {
        let mut state = self.lock();
        for k in keys {
            state.reads.remove(k);
        }
    }

    /// Adds a write's part, refusing one that does not compose with the
    /// parts staged before it.
    fn stage(&self, record: &str, mut part: Part, claims: &[ClaimFact]) -> Result<()> {
        let mut state = self.lock();
        let writes = written_keys(&part.batch);
        for key in &writes {
            if let Some(other) = state.written.get(key) {
                if let Some(c) = claims.iter().find(|c| c.key == *key) {
                    let entity = part
                        .guards
                        .iter()
                        .find_map(|g| match g {
                            Guard::Claim { entity, .. } => Some(*entity),
                            _ => None,
                        })
                        .unwrap_or("record");
                    return Err(unique_violation(entity, c));
                }
                return Err(Error::InvalidBatch {
                    key: key.clone(),
                    reason: format!(
                        "the write of `{record}` changes a key the write of `{other}` in the same \
                         transaction changes; write each record once per transaction"
                    ),
                });
            }
            if state.conditioned.contains(key) {
                return Err(Error::InvalidBatch {
                    key: key.clone(),
                    reason: format!(
                        "the write of `{record}` changes a key an earlier write of the same \
                         transaction depends on; stage a parent before its children, and do \
                         not delete a record another write of the transaction names"
                    ),
                });
            }
        }
        // A unique value one write gives up and another takes: the commit
        // checks the taker's condition on the store as it was, where the
        // value is still held, so it is refused here, with the reason,
        // whichever of the two is staged first.
        let hand_off = |record: &str, other: &str, key: &str| Error::InvalidBatch {
            key: key.to_owned(),
            reason: format!(
                "the write of `{record}` and the write of `{other}` in the same transaction \
                 hand a unique value over (one gives it up, the other takes it); make these \
                 changes in two transactions"
            ),
        };
        for key in &writes {
            if let Some(other) = state.released.get(key).filter(|o| o.as_str() != record) {
                return Err(hand_off(record, other, key));
            }
        }
        for op in part.batch.ops() {
            if let Op::DeleteIfEquals { key, .. } = op
                && let Some(other) = state.written.get(key).filter(|o| o.as_str() != record)
            {
                return Err(hand_off(record, other, key));
            }
        }
        // A parent created earlier in this transaction exists when the
        // child is written: its condition goes (it would see the store
        // before the commit).
        let mut staged = std::mem::take(&mut part.batch);
        let mut kept = Batch::with_capacity(staged.conditions().len(), staged.ops().len());
        crate::engine::feed::carry(&mut staged, &mut kept);
        let (conditions, ops) = staged.into_parts();
        let mut guards = Vec::with_capacity(conditions.len());
        for (c, g) in conditions.into_iter().zip(std::mem::take(&mut part.guards)) {
            if let (Condition::Present(k), Guard::Parent { .. }) = (&c, &g)
                && state.created.contains(k)
            {
                continue;
            }
            if !writes.contains(c.key()) && !state.reads.contains_key(c.key()) {
                if let Some(other) = state.written.get(c.key()) {
                    return Err(Error::InvalidBatch {
                        key: c.key().to_owned(),
                        reason: format!(
                            "the write of `{record}` depends on a key the write of `{other}` in \
                             the same transaction changes (a parent deleted, or a unique value \
                             another record gives up); make these changes in two transactions"
                        ),
                    });
                }
            }
            kept.condition(c);
            guards.push(g);
        }
        for op in ops {
            kept.op(op);
        }
        for c in kept.conditions() {
            if !writes.contains(c.key()) {
                state.conditioned.insert(c.key().to_owned());
            }
            if let Condition::Absent(k) = c
                && k == record
            {
                state.created.insert(k.clone());
            }
        }
        for op in kept.ops() {
            if let Op::DeleteIfEquals { key, .. } = op {
                state.released.insert(key.clone(), record.to_owned());
            }
        }
        for key in writes {
            state.written.insert(key, record.to_owned());
        }
        state.parts.push(Part {
            batch: kept,
            guards,
            clock: part.clock,
        });
        Ok(())
    }
}

impl State {
    /// The value a staged write leaves at `key` (`Some(None)`: deleted);
    /// `None` when no staged write puts or deletes it.
    fn staged(&self, key: &str) -> Staged {
        if !self.written.contains_key(key) {
            return None;
        }
        self.parts.iter().rev().find_map(|p| {
            p.batch.ops().iter().rev().find_map(|o| match o {
                Op::Put { key: k, value, .. } if k == key => Some(Some(value.clone())),
                Op::Delete { key: k } if k == key => Some(None),
                _ => None,
            })
        })
    }
}

/// What a staged write leaves at a key: `Some(None)` when it deletes it,
/// `None` when no staged write puts or deletes it.
type Staged = Option<Option<Vec<u8>>>;

/// The keys `batch` puts or deletes.
fn written_keys(batch: &Batch) -> BTreeSet<String> {
    batch
        .ops()
        .iter()
        // (Not a conditional delete: what it leaves depends on the earlier
        // writes of its key, which stay.)
        .filter(|o| matches!(o, Op::Put { .. } | Op::Delete { .. }))
        .map(|o| o.key().to_owned())
        .collect()
}

/// Runs `f` as one transaction on `store` and commits what it staged,
/// atomically. When a record it read or wrote changed before the commit
/// (another writer got there first), nothing is written and `f` runs again
/// on a fresh transaction, up to [`MAX_ATTEMPTS`] times, then the
/// transaction fails with [`Error::Conflict`]. An error `f` returns ends it
/// with nothing written.
///
/// `f` takes the transaction by value (a handle: clones share it) and
/// returns a future that owns it, so the whole call stays `Send` and can
/// be spawned; capture repositories by reference or clone them.
///
/// ```ignore
/// let (products, orders) = (&products, &orders);
/// let sold = kvmodel::transaction(&store, |tx| async move {
///     let p = products.in_tx(&tx).get(&ProductKeys::record("p1")).await?;
///     let Some(p) = p.filter(|p| p.stock > 0) else { return Ok(false) };
///     products.in_tx(&tx).update(&Product { stock: p.stock - 1, ..p }).await?;
///     orders.in_tx(&tx).create(&order).await?;
///     Ok(true)
/// })
/// .await?;
/// ```
pub async fn transaction<S, T, F, Fut>(store: &S, mut f: F) -> Result<T>
where
    S: Store,
    F: FnMut(Transaction<S>) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut last = Changed {
        entity: "transaction",
        key: String::new(),
    };
    for attempt in 0..MAX_ATTEMPTS {
        let tx = Transaction::new(store.clone());
        let value = f(tx.clone()).await?;
        match tx.try_commit().await? {
            Ok(()) => return Ok(value),
            Err(changed) => {
                last = changed;
                backoff(attempt).await;
            }
        }
    }
    Err(Error::Conflict {
        entity: last.entity,
        key: last.key,
        attempts: MAX_ATTEMPTS,
    })
}
