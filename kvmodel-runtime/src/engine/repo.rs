//! The upkeep engine behind every generated repository.
//!
//! Generated `XRepo` types are thin typed wrappers over [`Engine`]: they build
//! keys, the engine turns a record image into its facts (claims, collection
//! members, counters) and every write into one [`Batch`] committed atomically.

use std::collections::{BTreeMap, HashSet};
use std::marker::PhantomData;
use std::time::Duration;

use crate::codec::key::Space;
use crate::engine::entity::{self, ClaimFact, Entity, Facts, MemberFact};
use crate::engine::expiry::{Receipt, StoredReceipt, due_at, move_receipt_in, stored_from};
use crate::engine::on_delete;
use crate::engine::page::{Page, PageRequest};
use crate::engine::shards;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome, Planned};

/// Where a write's upkeep goes: the entity's derived key space, and
/// whether the store keeps the entity's discovery set (it does unless it
/// ranges over its keys in order, [`Store::orders_keys`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Upkeep<'a> {
    /// The entity's derived key space.
    pub(crate) space: Space<'a>,
    /// Whether writes add and remove discovery members.
    pub(crate) discovery: bool,
}

impl<'a> Upkeep<'a> {
    /// The upkeep of the entity spelled in `space` on `store`.
    pub(crate) fn on<S: Store>(space: Space<'a>, store: &S) -> Self {
        Upkeep {
            space,
            discovery: !store.orders_keys(),
        }
    }

    /// The upkeep of `E` on `store`.
    pub(crate) fn of<E: Entity, S: Store>(store: &S) -> Upkeep<'static> {
        Upkeep::on(E::space(), store)
    }
}

/// How many times `update`, `modify` and `delete` re-read and retry before
/// giving up with [`Error::Conflict`].
pub const MAX_ATTEMPTS: u32 = 16;

/// Typed access to the records of one entity on one store.
pub struct Engine<E, S> {
    store: S,
    _entity: PhantomData<fn() -> E>,
}

impl<E, S: Clone> Clone for Engine<E, S> {
    fn clone(&self) -> Self {
        Engine {
            store: self.store.clone(),
            _entity: PhantomData,
        }
    }
}

impl<E, S: std::fmt::Debug> std::fmt::Debug for Engine<E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("entity", &std::any::type_name::<E>())
            .field("store", &self.store)
            .finish()
    }
}

/// What a write does to the expiry receipt of the record it writes (see
/// [`expiry`](crate::engine::expiry)). [`transition`] requires one, so no
/// write of a record can leave its receipt behind by omission.
pub(crate) enum ReceiptMove<'a> {
    /// Not a write of the record itself: a repair of its entries, the expiry
    /// sweep, a purge. The caller handles the receipt.
    Untouched,
    /// A write of the record: the receipt stored with it (`old`, as read
    /// in the same read as the record; `None` when there is none) gives way
    /// to one listing the new image's entries, due at `due` (the store's
    /// clock plus the TTL the record is written with), or to none when no
    /// record remains or it does not expire (`due: None`). The receipt's
    /// condition comes before the claims' conditions.
    Record {
        old: Option<&'a StoredReceipt>,
        due: Option<u64>,
    },
}

/// The conditions a [`transition`] added after the caller's own: those
/// before `first` are the caller's and the receipt's, then one per claim.
pub(crate) struct Checked {
    /// The index of the first claim condition in the batch.
    pub(crate) first: usize,
    /// The claims conditioned on, in condition order.
    pub(crate) claims: Vec<ClaimFact>,
}

impl Checked {
    /// The claim whose condition is number `index` of the batch, if any.
    pub(crate) fn claim(&self, index: usize) -> Option<&ClaimFact> {
        index
            .checked_sub(self.first)
            .and_then(|i| self.claims.get(i))
    }
}

/// The one transition behind every write: appends to `b` what moves the
/// derived entries of the record at `owner` from the image whose facts are
/// `old` to the one whose facts are `new` (`None`: no record), with the
/// record's `ttl`, and its expiry receipt as `receipt` says. The caller adds
/// the record's own condition and write.
///
/// - the receipt moves first (a write of an expiring record: condition on
///   the stored receipt, the new receipt and ledger entry in place of the
///   old; see [`ReceiptMove`]);
/// - claims `new` adds get a condition "absent or held by `owner`"; they are
///   returned in condition order ([`Checked`]), so a failed condition maps
///   back to its claim;
/// - every claim of `new` is put with `ttl` (a claim both images have is
///   rewritten only to renew a TTL); claims only `old` has are deleted;
/// - collection members only `old` has are removed, those only `new` has added;
/// - counters move by the exact net difference (`new` minus `old`), as
///   [`Batch::incr_wide`] expresses it; a new contribution a 64-bit counter
///   cannot hold is refused, an old one is skipped (this code never added it);
///   a sharded counter's write goes to one shard, which must stay within
///   its share of 64 bits ([`Batch::incr_within`]), so the total stays
///   readable;
/// - the discovery member is added while a record exists (again on every
///   write, which repairs drift) and removed with it, where the store keeps
///   a discovery set ([`Upkeep`]).
///
/// `create` passes no `old`, `delete` no `new`, `update` both; `reconcile`
/// passes the entries it found as `old` and those the record implies as `new`;
/// the expiry sweep passes an expired write's receipt as `old`.
pub(crate) fn transition(
    upkeep: Upkeep<'_>,
    b: &mut Batch,
    owner: &str,
    old: Option<&Facts>,
    new: Option<&Facts>,
    ttl: Option<Duration>,
    receipt: ReceiptMove<'_>,
) -> Result<Checked> {
    let space = upkeep.space;
    if let ReceiptMove::Record { old: stored, due } = receipt {
        let next = match (new, due) {
            (Some(facts), Some(at)) => Some(Receipt::new(at, facts)),
            _ => None,
        };
        if stored.is_some() || next.is_some() {
            move_receipt_in(space, b, owner, stored, next.as_ref())?;
        }
    }
    let first = b.conditions().len();
    let none = Facts::default();
    let (from, to) = (old.unwrap_or(&none), new.unwrap_or(&none));
    let owner_bytes = owner.as_bytes();
    let old_claims: HashSet<&str> = from.claims.iter().map(|c| c.key.as_str()).collect();
    let new_claims: HashSet<&str> = to.claims.iter().map(|c| c.key.as_str()).collect();
    let mut checked = Vec::new();
    for c in &to.claims {
        if !old_claims.contains(c.key.as_str()) {
            b.absent_or_equals(&c.key, owner_bytes.to_vec());
            checked.push(c.clone());
        }
    }
    for c in &to.claims {
        if ttl.is_some() || !old_claims.contains(c.key.as_str()) {
            b.put(&c.key, owner_bytes.to_vec(), ttl);
        }
    }
    for c in &from.claims {
        if !new_claims.contains(c.key.as_str()) {
            b.delete(&c.key);
        }
    }
    let old_members: HashSet<(&str, &[u8])> = from.members.iter().map(entry).collect();
    let new_members: HashSet<(&str, &[u8])> = to.members.iter().map(entry).collect();
    for m in &from.members {
        if !new_members.contains(&entry(m)) {
            b.remove(&m.collection, m.sort.clone(), owner_bytes.to_vec());
        }
    }
    let mut capped: Vec<(&str, u32)> = Vec::new();
    for m in &to.members {
        if !old_members.contains(&entry(m)) {
            b.add(&m.collection, m.sort.clone(), owner_bytes.to_vec());
            if m.keep > 0 && !capped.iter().any(|(c, _)| *c == m.collection) {
                capped.push((m.collection.as_str(), m.keep));
            }
        }
    }
    // A capped collection is trimmed after its additions, in the same
    // commit: it never holds more than `keep` members.
    for (collection, keep) in capped {
        b.trim(collection, u64::from(keep));
    }
    // Counter key → (net amount, the keys it is spread over).
    let mut net: BTreeMap<&str, (i128, u32)> = BTreeMap::new();
    for (facts, sign) in [(from, -1), (to, 1)] {
        for c in &facts.counters {
            if i64::try_from(c.delta).is_err() {
                if sign < 0 {
                    // Never written by this code (it refuses such amounts),
                    // so there is nothing to take back: a record stored by
                    // older code stays updatable and deletable.
                    continue;
                }
                return Err(Error::InvalidBatch {
                    key: c.key.clone(),
                    reason: format!(
                        "the record adds {} to this counter, beyond what a 64-bit counter holds \
                         ({} to {}); keep the summed field within that range",
                        c.delta,
                        i64::MIN,
                        i64::MAX
                    ),
                });
            }
            let entry = net.entry(&c.key).or_insert((0, 1));
            entry.0 += sign * c.delta;
            entry.1 = entry.1.max(c.shards);
        }
    }
    for (key, (delta, shards)) in net {
        match (delta, shards) {
            (0, _) => {}
            (_, 0 | 1) => {
                b.incr_wide(key, delta);
            }
            _ => {
                b.incr_within(shards::pick(key, shards), delta, shards::limit(shards));
            }
        }
    }
    if upkeep.discovery {
        let discovery = space.all_key();
        if new.is_some() {
            b.add(discovery, Vec::new(), owner_bytes.to_vec());
        } else if old.is_some() {
            b.remove(discovery, Vec::new(), owner_bytes.to_vec());
        }
    }
    Ok(Checked {
        first,
        claims: checked,
    })
}

/// A decode error of the record at `key` that a delete met, pointing to
/// `purge`.
pub(crate) fn purge_hint(key: &str, e: Error) -> Error {
    match e {
        Error::Decode {
            key: k,
            reason,
            source,
        } => Error::Decode {
            key: k,
            reason: format!(
                "{reason}; so its entries cannot be computed and `delete` leaves it: `purge` \
                 removes it with the entries found to point to it"
            ),
            source,
        },
        Error::FutureVersion { .. } => e,
        other => Error::decode(key, other, None),
    }
}

/// A collection membership as (collection, sort key).
fn entry(m: &MemberFact) -> (&str, &[u8]) {
    (m.collection.as_str(), m.sort.as_slice())
}

/// Waits a little before retrying an optimistic write: jittered exponential
/// backoff, 0–1 ms after the first failure up to 0–64 ms.
pub(crate) async fn backoff(attempt: u32) {
    let cap_us = 1_000u64 << attempt.min(6);
    let wait = std::time::Duration::from_micros(fastrand::u64(0..=cap_us));
    #[cfg(feature = "tracing")]
    crate::engine::trace::retry(attempt, wait);
    crate::exec::sleep(wait).await;
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Commits `batch` to the store: every commit of the engine goes
    /// through here, so each one is traced.
    pub(crate) async fn commit(&self, batch: Batch) -> Result<Outcome> {
        #[cfg(feature = "tracing")]
        let summary = crate::engine::trace::CommitSummary::of(&batch);
        let outcome = self.store.commit(batch).await;
        #[cfg(feature = "tracing")]
        if let Some(summary) = summary {
            summary.record(self.store.backend(), &outcome);
        }
        outcome
    }

    /// [`Store::commit_after_read`] of `plan`, traced as [`commit`](Self::commit)
    /// traces a commit.
    pub(crate) async fn commit_after_read<T: Send>(
        &self,
        keys: &[String],
        plan: impl FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    ) -> Result<(Outcome, T)> {
        #[cfg(feature = "tracing")]
        {
            let mut summary = None;
            let outcome = self
                .store
                .commit_after_read(keys, |values, now| {
                    let planned = plan(values, now)?;
                    if let Planned::Commit(batch, _) = &planned {
                        summary = crate::engine::trace::CommitSummary::of(batch);
                    }
                    Ok(planned)
                })
                .await;
            if let Some(summary) = summary {
                let traced = match &outcome {
                    Ok((o, _)) => Ok(*o),
                    Err(e) => Err(e),
                };
                summary.record(self.store.backend(), &traced);
            }
            outcome
        }
        #[cfg(not(feature = "tracing"))]
        self.store.commit_after_read(keys, plan).await
    }

    /// An engine on `store`.
    pub fn new(store: S) -> Self {
        Engine {
            store,
            _entity: PhantomData,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// What the failed condition `index` of a write means: a parent that
    /// does not exist, or a unique value another record holds; `None` when
    /// it is neither (another write changed what this one read: retry). A
    /// parent is read again first: on a Redis Cluster a condition on a key
    /// another unfinished write holds may fail while the parent is there.
    pub(crate) async fn refusal(
        &self,
        index: usize,
        parents: &[(usize, on_delete::ParentFact)],
        checked: &Checked,
    ) -> Result<Option<Error>> {
        if let Some((_, p)) = parents.iter().find(|(i, _)| *i == index) {
            if self.store.get(&p.key).await?.is_some() {
                return Ok(None);
            }
            return Ok(Some(on_delete::parent_error(E::META.name, p)));
        }
        Ok(checked.claim(index).map(|c| self.unique_violation(c)))
    }

    /// [`Error::Conflict`] for the record at `key` after [`MAX_ATTEMPTS`]
    /// tries, each finding it changed by another writer.
    pub(crate) fn gave_up(key: impl Into<String>) -> Error {
        Error::Conflict {
            entity: E::META.name,
            key: key.into(),
            attempts: MAX_ATTEMPTS,
        }
    }

    pub(crate) fn unique_violation(&self, claim: &ClaimFact) -> Error {
        Error::UniqueViolation {
            entity: E::META.name,
            index: claim.index,
            value: crate::codec::key::derived_parts(
                &claim.key,
                crate::codec::key::Derived::Claim,
                claim.index,
            )
            .map_or_else(|| claim.key.clone(), |parts| parts.join(", ")),
        }
    }

    /// Stores a new record with all its derived entries, in one commit.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "create", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn create(&self, value: &E) -> Result<()> {
        let key = value.record_key();
        let parents = value.parents();
        on_delete::refuse_own_parent(E::META.name, &key, &parents)?;
        let facts = Facts::of(value);
        let mut encoded = Some(entity::encode(&key, value)?);
        for attempt in 0..MAX_ATTEMPTS {
            let bytes = match encoded.take() {
                Some(b) => b,
                None => entity::encode(&key, value)?,
            };
            let ttl = E::META.ttl.map(|t| t.sample());
            let due = self.due_for(ttl).await?;
            let mut b = Batch::new();
            b.absent(key.as_str()).put(key.as_str(), bytes, ttl);
            let receipt = ReceiptMove::Record { old: None, due };
            let checked = transition(
                Upkeep::of::<E, S>(self.store()),
                &mut b,
                &key,
                None,
                Some(&facts),
                ttl,
                receipt,
            )?;
            let parents = on_delete::require_parents(&mut b, &[], parents.clone());
            match self.commit(b).await? {
                Outcome::Applied => {
                    self.sweep_step().await;
                    return Ok(());
                }
                Outcome::Failed { index: 0 } => {
                    return Err(Error::AlreadyExists {
                        entity: E::META.name,
                        key,
                    });
                }
                // The receipt of an earlier record at this key, expired but
                // not yet swept: sweep it, then create.
                Outcome::Failed { index } if index < checked.first => {
                    Box::pin(self.expire_leftover(&key)).await?;
                    backoff(attempt).await;
                }
                Outcome::Failed { index } => match self.refusal(index, &parents, &checked).await? {
                    Some(e) => return Err(e),
                    None => backoff(attempt).await,
                },
            }
        }
        Err(Self::gave_up(key))
    }

    /// Reads the record at `key`, migrating it if it is older.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "get", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn get(&self, key: &str) -> Result<Option<E>> {
        self.store
            .get_with(key, |bytes| {
                bytes
                    .map(|b| entity::decode_at(key, b).map(|(_, e)| e))
                    .transpose()
            })
            .await?
    }

    /// Reads many records in one round trip, in order.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "get_many", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn get_many(&self, keys: Vec<String>) -> Result<Vec<Option<E>>> {
        let values = self.store.get_many(&keys).await?;
        keys.iter()
            .zip(values)
            .map(|(k, v)| {
                v.map(|b| entity::decode_at(k, &b).map(|(_, e)| e))
                    .transpose()
            })
            .collect()
    }

    /// Reads the record at `key`, lets `change` produce the new image, and
    /// commits the move atomically. The store chooses how
    /// ([`Store::commit_after_read`]): in one write transaction where it has
    /// a single writer, optimistically elsewhere, retrying when another
    /// writer got there first.
    pub(crate) async fn read_modify_write(
        &self,
        key: &str,
        mut change: impl FnMut(E) -> Result<E> + Send,
    ) -> Result<E> {
        let keys = Self::stored_keys(key);
        for attempt in 0..MAX_ATTEMPTS {
            let change = &mut change;
            let (outcome, (new_value, checked, parents)) = self
                .commit_after_read(&keys, |values, now| {
                    let mut stored = stored_from::<E>(key, values);
                    let Some(old_bytes) = stored.bytes.take() else {
                        return Err(Error::NotFound {
                            entity: E::META.name,
                            key: key.to_owned(),
                        });
                    };
                    let (stored_version, old_value) = entity::decode_at::<E>(key, &old_bytes)?;
                    let mut old = Facts::of(&old_value);
                    old.retain_since(stored_version);
                    let mut old_value_parents = old_value.parents();
                    old_value_parents.retain(|p| p.since <= stored_version);
                    let new_value = change(old_value)?;
                    if new_value.record_key() != key {
                        return Err(Error::InvalidKey {
                            key: key.to_owned(),
                            reason: "the change alters the primary key; create a record under the new key and delete the old one instead".to_owned(),
                        });
                    }
                    let new_parents = new_value.parents();
                    on_delete::refuse_own_parent(E::META.name, key, &new_parents)?;
                    let new = Facts::of(&new_value);
                    let bytes = entity::encode(key, &new_value)?;
                    let ttl = E::META.ttl.map(|t| t.sample());
                    let mut b = Batch::new();
                    b.equals(key, old_bytes).put(key, bytes, ttl);
                    let receipt = ReceiptMove::Record {
                        old: stored.receipt.as_ref(),
                        due: due_at(now, ttl),
                    };
                    let checked =
                        transition(Upkeep::of::<E, S>(self.store()), &mut b, key, Some(&old), Some(&new), ttl, receipt)?;
                    let parents =
                        on_delete::require_parents(&mut b, &old_value_parents, new_parents);
                    Ok(Planned::Commit(b, (new_value, checked, parents)))
                })
                .await?;
            match outcome {
                Outcome::Applied => {
                    self.sweep_step().await;
                    return Ok(new_value);
                }
                Outcome::Failed { index } => match self.refusal(index, &parents, &checked).await? {
                    Some(e) => return Err(e),
                    None => backoff(attempt).await,
                },
            }
        }
        Err(Self::gave_up(key))
    }

    /// Replaces a stored record; indexes and counters move atomically.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "update", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn update(&self, value: &E) -> Result<()> {
        let key = value.record_key();
        self.read_modify_write(&key, |_| Ok(value.clone())).await?;
        Ok(())
    }

    /// Read-modify-write with optimistic retry; `f` may run more than once.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "modify", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn modify(&self, key: &str, mut f: impl FnMut(&mut E) + Send) -> Result<E> {
        self.read_modify_write(key, |mut v| {
            f(&mut v);
            Ok(v)
        })
        .await
    }

    /// Looks a record up through the unique claim `claim_key` of index
    /// `index`: the claim and the record it names, read together
    /// ([`Store::get_via`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "find_unique", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn find_unique(&self, index: &str, claim_key: &str) -> Result<Option<E>> {
        let Some((owner, record)) = self.store.get_via(claim_key).await? else {
            return Ok(None);
        };
        let Ok(key) = std::str::from_utf8(&owner) else {
            return Err(Error::decode(
                claim_key,
                "the unique claim does not hold a record key",
                None,
            ));
        };
        let Some(bytes) = record else {
            return Ok(None);
        };
        let value = entity::decode_at::<E>(key, &bytes)?.1;
        // A claim whose record no longer carries the value is stale: ignore it.
        Ok(value.claims(index, claim_key).then_some(value))
    }

    /// A page of every record of the entity (the discovery set, never a scan).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "list_all", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn list_all(&self, page: PageRequest) -> Result<Page<E>> {
        self.list(&E::all_key(), page.into()).await
    }

    /// The counter at `key`.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "count", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn count(&self, key: &str) -> Result<i64> {
        self.store.counter(key).await
    }
}
