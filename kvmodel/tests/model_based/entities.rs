//! The entities under test, the values their fields take, and the plain
//! in-memory model of what the store holds.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kvmodel::{KvEntity, Timestamp};
use serde::{Deserialize, Serialize};

/// The parent of the relations below; never stored.
#[allow(dead_code)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "mb", key = "owner:{id}")]
pub struct Owner {
    pub id: String,
}

/// A lasting record: a unique index (normalized), an ordered index, a
/// relation, a count grouped by a field and a sum grouped by another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "mb", key = "item:{id}")]
#[kv(index(name = "by_group", fields(group), order_by = rank))]
#[kv(relation(name = "owner", belongs_to = Owner, by = owner))]
#[kv(counter(name = "per_group", group_by(group)))]
#[kv(counter(name = "qty_per_owner", sum = qty, group_by(owner)))]
pub struct Item {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub sku: String,
    pub group: String,
    pub rank: i64,
    pub owner: String,
    pub qty: i64,
}

/// An expiring record: a unique index, an ordered relation, a count
/// grouped by a field, an ungrouped sum, and a count kept when leases
/// expire (`keep = "on_expiry"`: a delete takes it back, expiry does not).
/// Each lease expires at its own `ends` when set (soon, or long after the
/// sequence), else after the entity's `ttl`.
// Two counters grouped by the same field repeat `group_by(owner)`.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "mb", key = "lease:{id}", ttl = "1s")]
#[kv(relation(name = "owner", belongs_to = Owner, by = owner, order_by = rank))]
#[kv(counter(name = "per_owner", group_by(owner)))]
#[kv(counter(name = "issued_per_owner", group_by(owner), keep = "on_expiry"))]
#[kv(counter(name = "weight", sum = weight))]
pub struct Lease {
    pub id: String,
    #[kv(unique)]
    pub token: String,
    pub owner: String,
    pub rank: i64,
    pub weight: i64,
    #[kv(expiry)]
    pub ends: Option<Timestamp>,
}

/// A record with a change feed and a unique value: every write the model
/// applies has its event, in commit order; a refused one has none. On a
/// store that keeps no feed, every write of it is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "mb", key = "entry:{id}", feed(retain = "1h"))]
pub struct Entry {
    pub id: String,
    #[kv(unique)]
    pub tag: String,
    pub n: i64,
}

/// The lease's time to live, in milliseconds.
pub const TTL_MS: u64 = 1_000;
/// How long a lease whose own expiry is soon lives, in milliseconds, on an
/// injected clock: less than the time to live, so a long pass ends both.
pub const SOON_MS: u64 = 600;
/// The same where time passes for real: long enough that a write and a
/// few steps on a loaded machine leave it more than the margin to live,
/// still less than a long pass.
pub const SOON_REAL_MS: u64 = 900;
/// How long a lease whose own expiry is later lives: past any sequence.
pub const LATER_MS: u64 = 3_600_000;

/// When a write sets a lease to expire: after the entity's `ttl` (its
/// `ends` unset), soon, or later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    Ttl,
    Soon,
    Later,
}

impl Life {
    /// Milliseconds from the write to the lease's expiry, where a soon one
    /// lives `soon_ms`.
    pub fn ms(self, soon_ms: u64) -> u64 {
        match self {
            Life::Ttl => TTL_MS,
            Life::Soon => soon_ms,
            Life::Later => LATER_MS,
        }
    }

    /// The lease's `ends` for a write at `now_ms` on the store's clock.
    pub fn ends(self, now_ms: u64, soon_ms: u64) -> Option<Timestamp> {
        let at =
            |ms: u64| Timestamp::from_unix_millis(i64::try_from(now_ms + ms).unwrap()).unwrap();
        match self {
            Life::Ttl => None,
            Life::Soon | Life::Later => Some(at(self.ms(soon_ms))),
        }
    }
}

/// A live lease of the model and when it expires.
#[derive(Debug, Clone)]
pub struct Held {
    pub lease: Lease,
    /// On the model's clock (milliseconds since the case started).
    pub expires: u64,
    /// On the real clock, no later than the store expires it.
    pub deadline: Instant,
}

pub const IDS: &[&str] = &["a", "b", "c", "d"];
/// `x` and `X` claim the same unique value (normalized to lowercase).
pub const SKUS: &[&str] = &["x", "X", "y", "z"];
pub const TOKENS: &[&str] = &["t1", "t2", "t3"];
pub const TAGS: &[&str] = &["e1", "e2", "e3"];
pub const GROUPS: &[&str] = &["g1", "g2"];
pub const OWNERS: &[&str] = &["o1", "o2"];
pub const RANKS: &[i64] = &[i64::MIN, -1, 0, 0, 7, i64::MAX];

/// One event the feed of `Entry` must hold, in the order the model
/// applied the writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub id: String,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
    /// The model's number of the commit: the events of one commit share it.
    pub commit: usize,
}

/// What the store should hold: every live record, when each lease
/// expires, the leases expired but perhaps not yet swept, and the events of
/// the feed.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub items: BTreeMap<String, Item>,
    pub leases: BTreeMap<String, Held>,
    /// Leases expired whose sweep may not have run yet: until it runs,
    /// counters may still include them (a write's sweep step may have taken
    /// them back already); listings and lookups never show them.
    pub pending: BTreeMap<String, Lease>,
    pub entries: BTreeMap<String, Entry>,
    /// The events of every applied write of an entry, in commit order.
    pub events: Vec<Logged>,
    /// How many commits wrote entries.
    pub commits: usize,
    /// Whether the store keeps feeds: where it does not, every write of an
    /// entry is refused.
    pub feeds: bool,
    /// Whether time passes for real on the store (no injected clock).
    pub real_time: bool,
    /// Milliseconds passed since the case started.
    pub now: u64,
    /// When the running step started, on the real clock: a lease it writes
    /// is taken to be written then (no later than the store wrote it).
    pub step_started: Option<Instant>,
    /// The kept count of leases per owner: moved by writes and deletes,
    /// never by expiry.
    pub issued: BTreeMap<String, i64>,
}

impl Model {
    /// The item other than `id` that holds `sku`'s unique value.
    pub fn sku_holder(&self, sku: &str, id: &str) -> Option<&Item> {
        let sku = sku.to_lowercase();
        self.items
            .values()
            .find(|i| i.id != id && i.sku.to_lowercase() == sku)
    }

    /// The live lease other than `id` that holds `token` (an expired
    /// lease's claim expired with it).
    pub fn token_holder(&self, token: &str, id: &str) -> Option<&Lease> {
        self.leases
            .values()
            .map(|h| &h.lease)
            .find(|l| l.id != id && l.token == token)
    }

    /// Lets `ms` pass: leases whose time came are gone, awaiting the sweep.
    pub fn pass(&mut self, ms: u64) {
        self.now += ms;
        let now = self.now;
        let (gone, live) = std::mem::take(&mut self.leases)
            .into_iter()
            .partition(|(_, h)| h.expires <= now);
        self.leases = live;
        let gone: BTreeMap<String, Held> = gone;
        self.pending
            .extend(gone.into_iter().map(|(id, h)| (id, h.lease)));
    }

    /// How long a lease whose own expiry is soon lives.
    pub fn soon_ms(&self) -> u64 {
        if self.real_time {
            SOON_REAL_MS
        } else {
            SOON_MS
        }
    }

    /// The sweep ran to the end: no expired lease counts any more.
    pub fn swept(&mut self) {
        self.pending.clear();
    }

    /// Writes `lease`, expiring as `life` says (`None`: as its `ends`
    /// already said, when `modify` leaves it). A write at the key of an
    /// expired lease sweeps that lease first.
    pub fn put_lease(&mut self, lease: Lease, life: Option<Life>) {
        let at = self.step_started.unwrap_or_else(Instant::now);
        *self.issued.entry(lease.owner.clone()).or_default() += 1;
        self.pending.remove(&lease.id);
        let old = self.leases.get(&lease.id);
        let (expires, deadline) = match (life, old) {
            (None, Some(old)) if old.lease.ends.is_some() => (old.expires, old.deadline),
            (life, _) => {
                let ms = life.unwrap_or(Life::Ttl).ms(self.soon_ms());
                (self.now + ms, at + Duration::from_millis(ms))
            }
        };
        let held = Held {
            lease,
            expires,
            deadline,
        };
        if let Some(old) = self.leases.insert(held.lease.id.clone(), held) {
            *self.issued.entry(old.lease.owner).or_default() -= 1;
        }
    }

    /// Deletes the lease `id`: its kept count goes with it (a delete, not
    /// an expiry); an expired lease there is swept. Whether there was one.
    pub fn delete_lease(&mut self, id: &str) -> bool {
        self.pending.remove(id);
        match self.leases.remove(id) {
            Some(old) => {
                *self.issued.entry(old.lease.owner).or_default() -= 1;
                true
            }
            None => false,
        }
    }

    /// Each live lease of the model and when it expires on the real clock
    /// (at the earliest).
    pub fn deadlines(&self) -> Vec<(String, Instant)> {
        self.leases
            .iter()
            .map(|(id, h)| (id.clone(), h.deadline))
            .collect()
    }

    /// How long until the first live lease of the model expires, on the
    /// real clock: where time passes for real, a lease this near its end
    /// may have expired in the store although no pass expired it in the
    /// model.
    pub fn nearest_expiry(&self) -> Option<Duration> {
        let now = Instant::now();
        self.leases
            .values()
            .map(|h| h.deadline.saturating_duration_since(now))
            .min()
    }

    /// The entry other than `id` that holds `tag`.
    pub fn tag_holder(&self, tag: &str, id: &str) -> Option<&Entry> {
        self.entries.values().find(|e| e.id != id && e.tag == tag)
    }

    /// Starts a commit: the events logged until the next share it.
    pub fn commit(&mut self) {
        self.commits += 1;
    }

    /// Applies a write of the entry `id` (`None`: a delete), logging its
    /// event in the running commit.
    pub fn write_entry(&mut self, id: &str, after: Option<Entry>) {
        let before = match &after {
            Some(e) => self.entries.insert(id.to_owned(), e.clone()),
            None => self.entries.remove(id),
        };
        if before.is_some() || after.is_some() {
            self.events.push(Logged {
                id: id.to_owned(),
                before,
                after,
                commit: self.commits,
            });
        }
    }

    pub fn lease(&self, id: &str) -> Option<&Lease> {
        self.leases.get(id).map(|h| &h.lease)
    }

    /// The least and the most a counter over leases may read: what the
    /// live leases add, plus what any of the expired leases awaiting the
    /// sweep may still add.
    pub fn lease_bounds(&self, amount: impl Fn(&Lease) -> Option<i64>) -> (i64, i64) {
        let live: i64 = self.leases.values().filter_map(|h| amount(&h.lease)).sum();
        self.pending
            .values()
            .filter_map(&amount)
            .fold((live, live), |(lo, hi), a| (lo + a.min(0), hi + a.max(0)))
    }
}
