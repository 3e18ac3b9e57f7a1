//! The one transition behind every write: what moves a record's derived
//! entries (claims, collection members, counters, the discovery member, the
//! expiry receipt) from one image of the record to the next, as conditions
//! and operations appended to the write's [`Batch`].
//!
//! Layer: write parts (its top): above `receipt`,
//! [`feed`](crate::engine::feed) and [`shards`](crate::engine::shards), below
//! every role that writes.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use crate::codec::key::{Derived, Space};
use crate::engine::entity::{ClaimFact, Entity, Facts, FeedMeta, MemberFact};
use crate::engine::receipt::{Receipt, StoredReceipt, move_receipt_in};
use crate::engine::shards;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::Batch;

/// Where a write's upkeep goes: the entity's derived key space, and
/// whether the store keeps the entity's discovery set (it does unless it
/// ranges over its keys in order, [`Store::orders_keys`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Upkeep<'a> {
    /// The entity's derived key space.
    pub(crate) space: Space<'a>,
    /// Whether writes add and remove discovery members.
    pub(crate) discovery: bool,
    /// The entity's change feed, if it keeps one.
    pub(crate) feed: Option<FeedMeta>,
    /// Whether the store keeps feeds ([`Store::keeps_feeds`]).
    pub(crate) feeds: bool,
    /// Whether a write of the record appends its event (not so for a
    /// migration's rewrite, which changes no record's meaning); its
    /// receipt keeps the image either way.
    pub(crate) events: bool,
    /// What a transition does with the record's delete plan.
    pub(crate) plans: Plans,
}

/// What a transition does with the record's delete plan, on a store that
/// keeps them ([`Store::delete_plans`]): a write of a record whose delete
/// needs nothing but the record's entries stores the batch that deletes
/// them, and every other transition of a record that may have a plan
/// removes it, so a plan is only ever the one its record's last write
/// stored (and the store checks it was written for the record's bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Plans {
    /// The store keeps none.
    None,
    /// Maintenance: every transition removes the record's plan (a repair
    /// changes entries the plan lists; a rewrite, the bytes it is for).
    Drop,
    /// A write of an entity whose records keep no plan (they expire, feed
    /// events, or their delete enforces `on_delete`), or on a store that
    /// writes none but may hold some: its delete removes what an earlier
    /// schema's writes, or a process that keeps plans, left.
    Leave,
    /// A write of an entity whose records keep one: stores it, written
    /// so, with the entity's [`PLAN_TAG`](Entity::PLAN_TAG); a delete, or a
    /// transition that does not write the record, removes it.
    Keep(crate::store::PlanDelete, u64),
}

impl Plans {
    /// The plans of `E`'s writes on `store`.
    fn of<E: Entity, S: Store>(store: &S) -> Plans {
        match store.delete_plans() {
            Some(encode) if planned::<E>() => Plans::Keep(encode, E::PLAN_TAG),
            _ if store.holds_plans() => Plans::Leave,
            _ => Plans::None,
        }
    }
}

/// Whether `E`'s records keep delete plans: generated code says what
/// derives their entries ([`Entity::PLAN_TAG`]), and a delete needs nothing
/// but the record and those entries (its link registry is checked when it
/// runs): no sharded counter (a shard's move is checked whole), records
/// that do not expire (their expiry has its receipt), keep no change feed (a
/// delete appends an event) and have no children whose relations the
/// delete enforces.
pub(crate) fn planned<E: Entity>() -> bool {
    E::PLAN_TAG != 0
        && E::META.ttl.is_none()
        && E::META.expiry.is_none()
        && E::FEED.is_none()
        && E::DEPENDENTS.is_empty()
        && !E::CASCADES
        && !E::declared()
            .iter()
            .any(|(kind, name, _)| *kind == Derived::Counter && E::counter_shards(name) > 1)
}

impl<'a> Upkeep<'a> {
    /// The upkeep of the entity spelled in `space` on `store`.
    pub(crate) fn on<S: Store>(space: Space<'a>, store: &S) -> Self {
        Upkeep {
            space,
            discovery: !store.orders_keys(),
            feed: None,
            feeds: store.keeps_feeds(),
            events: true,
            plans: match store.holds_plans() {
                true => Plans::Drop,
                false => Plans::None,
            },
        }
    }

    /// The upkeep of a maintenance rewrite of a record of the entity spelled
    /// in `space`, whose feed is `feed`: the receipt keeps the record's
    /// image for its `Expired` event, but the rewrite appends no event.
    pub(crate) fn rewrite<S: Store>(space: Space<'a>, feed: Option<FeedMeta>, store: &S) -> Self {
        Upkeep {
            feed,
            events: false,
            ..Upkeep::on(space, store)
        }
    }

    /// The upkeep of `E` on `store`.
    pub(crate) fn of<E: Entity, S: Store>(store: &S) -> Upkeep<'static> {
        Upkeep {
            feed: E::FEED,
            plans: Plans::of::<E, S>(store),
            ..Upkeep::on(E::space(), store)
        }
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
///   rewritten only to renew a TTL, or to drop the one of a record that no
///   longer expires); claims only `old` has are deleted where they hold
///   `owner` ([`Op::DeleteIfEquals`](crate::store::Op::DeleteIfEquals)): one
///   another record holds (drift, or a claim taken after this record's
///   expired) stays;
/// - collection members only `old` has are removed, those only `new` has added;
/// - counters move by the exact net difference (`new` minus `old`), as
///   [`Batch::incr_wide`] expresses it; a new contribution a 64-bit counter
///   cannot hold is refused, an old one is skipped (this code never added it);
///   a sharded counter's write goes to one shard, which must stay within
///   its share of 64 bits ([`Batch::incr_within`]), so the total stays
///   readable; when no record remains (`new` is `None`), a counter that
///   keeps its count on delete (`keep: always`) keeps `old`'s amount (the
///   expiry sweep passes a receipt, which lists no amount a counter keeps
///   on expiry);
/// - the discovery member is added while a record exists (again on every
///   write, which repairs drift) and removed with it, where the store keeps
///   a discovery set ([`Upkeep`]).
///
/// - on an entity with a change feed, a write of the record itself
///   ([`ReceiptMove::Record`]) appends its event to the feed, with the
///   images the caller's condition and write of the record carry
///   ([`feed::append_event`](crate::engine::feed::append_event)), and the
///   new receipt keeps the image written, for the `Expired` event.
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
    let writes = matches!(receipt, ReceiptMove::Record { .. });
    if let (Some(feed), ReceiptMove::Record { .. }, true) = (upkeep.feed, &receipt, upkeep.events) {
        crate::engine::feed::append_event(space, feed, upkeep.feeds, b, owner)?;
    }
    // A write of a record that expired until now (it has a receipt) but
    // no longer does rewrites its claims without a TTL, as one that keeps
    // expiring rewrites them with the new one.
    let renew = ttl.is_some() || matches!(receipt, ReceiptMove::Record { old: Some(_), .. });
    if let ReceiptMove::Record { old: stored, due } = receipt {
        // An entity with a feed keeps the record's image in its receipt,
        // for the `Expired` event of the sweep that finds it gone.
        let image = match upkeep.feed {
            Some(_) => crate::engine::feed::written(b, owner).flatten(),
            None => None,
        };
        let next = match (new, due) {
            (Some(facts), Some(at)) => Some(Receipt::new(at, facts, image)),
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
        if renew || !old_claims.contains(c.key.as_str()) {
            b.put(&c.key, owner_bytes.to_vec(), ttl);
        }
    }
    // A claim another record holds is that record's: it stays.
    for c in &from.claims {
        if !new_claims.contains(c.key.as_str()) {
            b.delete_if_equals(&c.key, owner_bytes.to_vec());
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
            if sign < 0 && new.is_none() && c.keep.on_delete() {
                // A counter that keeps its count when records leave: the
                // record's amount stays.
                continue;
            }
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
    plan_in(upkeep, b, owner, new.filter(|_| writes), writes)?;
    Ok(Checked {
        first,
        claims: checked,
    })
}

/// Adds to `b` the delete plan's side of a transition of the record at
/// `owner` ([`Plans`]): a write of it (`writes`) that leaves a record with
/// the facts `kept` stores the batch that deletes the record, its entries
/// and the plan, for the bytes `b` writes; any other transition removes
/// the plan.
fn plan_in(
    upkeep: Upkeep<'_>,
    b: &mut Batch,
    owner: &str,
    kept: Option<&Facts>,
    writes: bool,
) -> Result<()> {
    let plan_key = upkeep.space.plan_key(owner);
    let (encode, tag) = match upkeep.plans {
        Plans::None => return Ok(()),
        Plans::Leave if writes && kept.is_some() => return Ok(()),
        Plans::Keep(encode, tag) => (encode, tag),
        Plans::Drop | Plans::Leave => {
            b.delete(plan_key);
            return Ok(());
        }
    };
    let (Some(facts), Some(Some(bytes))) = (kept, crate::engine::feed::written(b, owner)) else {
        b.delete(plan_key);
        return Ok(());
    };
    let mut delete = Batch::new();
    delete.delete(owner);
    let removal = Upkeep {
        plans: Plans::None,
        ..upkeep
    };
    transition(
        removal,
        &mut delete,
        owner,
        Some(facts),
        None,
        None,
        ReceiptMove::Untouched,
    )?;
    delete.delete(&plan_key);
    let plan = encode(bytes, tag, delete)?;
    b.put(plan_key, plan, None);
    Ok(())
}

/// A collection membership as (collection, sort key).
fn entry(m: &MemberFact) -> (&str, &[u8]) {
    (m.collection.as_str(), m.sort.as_slice())
}
