//! Batches: conditions and operations committed all-or-nothing.

use std::time::Duration;

use super::counter::counter_increments;
use super::feed::FeedAppend;

/// A condition every backend checks before applying a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The key holds no (unexpired) value.
    Absent(String),
    /// The key holds exactly these bytes.
    Equals(String, Vec<u8>),
    /// The key holds no value, or exactly these bytes.
    AbsentOrEquals(String, Vec<u8>),
    /// The key holds an (unexpired) value, whatever its bytes: a child
    /// record conditions on its parent existing.
    Present(String),
}

impl Condition {
    /// The key this condition inspects.
    pub fn key(&self) -> &str {
        match self {
            Condition::Absent(k)
            | Condition::Equals(k, _)
            | Condition::AbsentOrEquals(k, _)
            | Condition::Present(k) => k,
        }
    }

    /// Whether the condition holds for the current value of its key.
    pub fn holds(&self, current: Option<&[u8]>) -> bool {
        match (self, current) {
            (Condition::Absent(_), None) => true,
            (Condition::Absent(_), Some(_)) => false,
            (Condition::Equals(_, want), Some(cur)) => want.as_slice() == cur,
            (Condition::Equals(_, _), None) => false,
            (Condition::AbsentOrEquals(_, _), None) => true,
            (Condition::AbsentOrEquals(_, want), Some(cur)) => want.as_slice() == cur,
            (Condition::Present(_), current) => current.is_some(),
        }
    }
}

/// One write in a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Stores `value` at `key`, replacing value and TTL; `ttl: None` means no expiry.
    Put {
        /// Key.
        key: String,
        /// Value bytes.
        value: Vec<u8>,
        /// Time to live.
        ttl: Option<Duration>,
    },
    /// Deletes the value or sorted collection at `key`.
    Delete {
        /// Key.
        key: String,
    },
    /// Deletes the value at `key` if it holds exactly `value`; another
    /// value (or none) stays as it is. A sorted collection there fails the
    /// batch, and so does any later operation of the batch on `key` but a
    /// put, a delete, another of these or an expiry: what `key` holds then
    /// depends on what it held. A record gives up a unique claim with it,
    /// so that a claim another record holds is never taken away.
    DeleteIfEquals {
        /// Key.
        key: String,
        /// The bytes it must hold to be deleted.
        value: Vec<u8>,
    },
    /// Adds `delta` to the counter at `key` (absent counts as 0). The counter is
    /// stored as canonical decimal ASCII ([`parse_counter`](super::counter::parse_counter)); another value
    /// there, or a sum beyond 64 bits, fails the batch, and so does a sum
    /// beyond `±limit` when there is a limit (the shards of a sharded
    /// counter each stay within their share of 64 bits, so their total
    /// can always be read).
    Incr {
        /// Key.
        key: String,
        /// Signed amount.
        delta: i64,
        /// The largest magnitude the counter may reach, if smaller than 64
        /// bits allow.
        limit: Option<i64>,
    },
    /// Adds `member` under `sort` to the sorted collection at `key`.
    Add {
        /// Collection key.
        key: String,
        /// Order-preserving sort bytes.
        sort: Vec<u8>,
        /// Member bytes.
        member: Vec<u8>,
    },
    /// Removes `member` stored under `sort` from the sorted collection at `key`.
    Remove {
        /// Collection key.
        key: String,
        /// The sort bytes it was added with.
        sort: Vec<u8>,
        /// Member bytes.
        member: Vec<u8>,
    },
    /// Keeps the `keep` greatest members of the sorted collection at `key`
    /// (by sort key, then member bytes) and removes the others; nothing
    /// when it holds no more than `keep`.
    Trim {
        /// Collection key.
        key: String,
        /// Members kept.
        keep: u64,
    },
    /// Sets the time to live of an existing value, counter or collection.
    Expire {
        /// Key.
        key: String,
        /// Time to live from now.
        ttl: Duration,
    },
}

impl Op {
    /// The key the operation writes.
    pub fn key(&self) -> &str {
        match self {
            Op::Put { key, .. }
            | Op::Delete { key }
            | Op::DeleteIfEquals { key, .. }
            | Op::Incr { key, .. }
            | Op::Add { key, .. }
            | Op::Remove { key, .. }
            | Op::Trim { key, .. }
            | Op::Expire { key, .. } => key,
        }
    }
}

/// Conditions plus operations, applied atomically by [`Store::commit`](crate::Store::commit).
///
/// ```
/// use kvmodel_runtime::Batch;
/// let mut b = Batch::new();
/// b.absent("shop:user:1").put("shop:user:1", b"{}".to_vec(), None).incr("shop:user#count:total", 1);
/// assert_eq!(b.conditions().len(), 1);
/// assert_eq!(b.ops().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    conditions: Vec<Condition>,
    ops: Vec<Op>,
    /// Feed entries appended when the batch is applied, in order.
    appends: Vec<FeedAppend>,
    /// The id the feed entries of this batch share (0: none drawn yet).
    id: u64,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Batch::default()
    }

    /// The conditions, in order.
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// The operations, in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// An empty batch with room for `conditions` and `ops`.
    pub fn with_capacity(conditions: usize, ops: usize) -> Self {
        Batch {
            conditions: Vec::with_capacity(conditions),
            ops: Vec::with_capacity(ops),
            appends: Vec::new(),
            id: 0,
        }
    }

    /// Splits the batch into its conditions and operations (its feed
    /// entries, [`appends`](Batch::appends), are left out).
    pub fn into_parts(self) -> (Vec<Condition>, Vec<Op>) {
        (self.conditions, self.ops)
    }

    /// The feed entries appended when the batch is applied, in order: only a
    /// store that [keeps feeds](crate::Store::keeps_feeds) is given any.
    pub fn appends(&self) -> &[FeedAppend] {
        &self.appends
    }

    /// Takes the feed entries out of the batch, leaving it none.
    pub(crate) fn take_appends(&mut self) -> Vec<FeedAppend> {
        std::mem::take(&mut self.appends)
    }

    /// True when there is nothing to check and nothing to write.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.ops.is_empty() && self.appends.is_empty()
    }

    /// The id of this batch's commit, drawn at random on first use (never
    /// 0): the feed entries of one batch carry it, so a reader can group the
    /// events of one commit.
    pub fn commit_id(&mut self) -> u64 {
        if self.id == 0 {
            self.id = fastrand::u64(1..);
        }
        self.id
    }

    /// Appends `entry` to the feed at `feed` when the batch is applied, in
    /// the same commit; the feed keeps entries for `retain`.
    pub fn append(
        &mut self,
        feed: impl Into<String>,
        entry: Vec<u8>,
        retain: Duration,
    ) -> &mut Self {
        self.appends.push(FeedAppend {
            feed: feed.into(),
            entry,
            retain,
        });
        self
    }

    /// Adds a condition.
    pub fn condition(&mut self, c: Condition) -> &mut Self {
        self.conditions.push(c);
        self
    }

    /// Adds an operation.
    pub fn op(&mut self, op: Op) -> &mut Self {
        self.ops.push(op);
        self
    }

    /// Requires `key` to be absent.
    pub fn absent(&mut self, key: impl Into<String>) -> &mut Self {
        self.condition(Condition::Absent(key.into()))
    }

    /// Requires `key` to hold `value`.
    pub fn equals(&mut self, key: impl Into<String>, value: Vec<u8>) -> &mut Self {
        self.condition(Condition::Equals(key.into(), value))
    }

    /// Requires `key` to be absent or hold `value`.
    pub fn absent_or_equals(&mut self, key: impl Into<String>, value: Vec<u8>) -> &mut Self {
        self.condition(Condition::AbsentOrEquals(key.into(), value))
    }

    /// Requires `key` to hold a value, whatever its bytes.
    pub fn present(&mut self, key: impl Into<String>) -> &mut Self {
        self.condition(Condition::Present(key.into()))
    }

    /// Puts a value.
    pub fn put(
        &mut self,
        key: impl Into<String>,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> &mut Self {
        self.op(Op::Put {
            key: key.into(),
            value,
            ttl,
        })
    }

    /// Deletes a key.
    pub fn delete(&mut self, key: impl Into<String>) -> &mut Self {
        self.op(Op::Delete { key: key.into() })
    }

    /// Deletes `key` if it holds exactly `value` ([`Op::DeleteIfEquals`]).
    pub fn delete_if_equals(&mut self, key: impl Into<String>, value: Vec<u8>) -> &mut Self {
        self.op(Op::DeleteIfEquals {
            key: key.into(),
            value,
        })
    }

    /// Increments a counter.
    pub fn incr(&mut self, key: impl Into<String>, delta: i64) -> &mut Self {
        self.op(Op::Incr {
            key: key.into(),
            delta,
            limit: None,
        })
    }

    /// Increments a counter that must stay within `±limit`, by an exact
    /// amount (as [`incr_wide`](Batch::incr_wide) does): the batch fails
    /// if the counter would leave that range.
    pub fn incr_within(&mut self, key: impl Into<String>, delta: i128, limit: i64) -> &mut Self {
        let key = key.into();
        for part in counter_increments(delta) {
            self.op(Op::Incr {
                key: key.clone(),
                delta: part,
                limit: Some(limit),
            });
        }
        self
    }

    /// Increments a counter by an exact amount that may exceed an `i64`, as
    /// the [`counter_increments`] of it; nothing when `delta` is 0.
    pub fn incr_wide(&mut self, key: impl Into<String>, delta: i128) -> &mut Self {
        let key = key.into();
        for part in counter_increments(delta) {
            self.incr(key.clone(), part);
        }
        self
    }

    /// Adds a member to a sorted collection.
    pub fn add(&mut self, key: impl Into<String>, sort: Vec<u8>, member: Vec<u8>) -> &mut Self {
        self.op(Op::Add {
            key: key.into(),
            sort,
            member,
        })
    }

    /// Removes a member from a sorted collection.
    pub fn remove(&mut self, key: impl Into<String>, sort: Vec<u8>, member: Vec<u8>) -> &mut Self {
        self.op(Op::Remove {
            key: key.into(),
            sort,
            member,
        })
    }

    /// Keeps the `keep` greatest members of the sorted collection at `key`
    /// and removes the others ([`Op::Trim`]).
    pub fn trim(&mut self, key: impl Into<String>, keep: u64) -> &mut Self {
        self.op(Op::Trim {
            key: key.into(),
            keep,
        })
    }

    /// Sets a time to live.
    pub fn expire(&mut self, key: impl Into<String>, ttl: Duration) -> &mut Self {
        self.op(Op::Expire {
            key: key.into(),
            ttl,
        })
    }
}

/// What the plan of a [`Store::commit_after_read`](crate::Store::commit_after_read)
/// decided, given what it read.
#[derive(Debug)]
pub enum Planned<T> {
    /// Commit this batch; `T` comes back with the commit's outcome.
    Commit(Batch, T),
    /// Write nothing; `T` comes back with [`Outcome::Applied`].
    Skip(T),
}

/// What [`Store::commit`](crate::Store::commit) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a batch whose condition failed wrote nothing"]
pub enum Outcome {
    /// Every condition held and every operation was applied.
    Applied,
    /// Condition number `index` (in batch order) did not hold; nothing was written.
    Failed {
        /// Index into [`Batch::conditions`].
        index: usize,
    },
}

impl Outcome {
    /// True when the batch was applied.
    pub fn is_applied(self) -> bool {
        matches!(self, Outcome::Applied)
    }
}
