//! `MemoryStore`: an in-process store for tests and prototypes.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::error::Result;
use crate::store::batch::{Batch, Op, Outcome, Planned};
use crate::store::clock::{Clock, SystemClock, deadline};
use crate::store::counter::{add_to_counter, parse_counter};
use crate::store::feed::{FeedAppend, FeedEntry, FeedPage, FeedPosition, FeedSignal};
use crate::store::{
    Direction, Held, KeyPage, RangeRequest, RangeResult, ScanPage, Store, Via, bounds_empty, check,
    encode_entry, entry_bounds, key_bounds, member_keys, page_from_entries, scan_count, scan_page,
};

#[derive(Debug, Default, Clone)]
struct Inner {
    /// Values in key order, so that [`Store::range_keys_with`] ranges over them.
    values: BTreeMap<String, (Vec<u8>, Option<u64>)>,
    sets: HashMap<String, (BTreeSet<Vec<u8>>, Option<u64>)>,
    commits: u64,
    /// Change feeds by key.
    feeds: HashMap<String, Feed>,
}

/// One change feed: its retained entries, oldest first.
#[derive(Debug, Default, Clone)]
struct Feed {
    /// The sequence number of the newest entry ever appended.
    last: u64,
    /// The newest sequence number retention removed (0: none).
    trimmed: u64,
    /// (sequence number, append time, bytes).
    entries: VecDeque<(u64, u64, Vec<u8>)>,
}

impl Feed {
    /// Appends `a` at `now`, removing what is older than its retention.
    fn append(&mut self, a: FeedAppend, now: u64) {
        let cutoff = now.saturating_sub(u64::try_from(a.retain.as_millis()).unwrap_or(u64::MAX));
        while let Some(&(seq, at, _)) = self.entries.front() {
            if at >= cutoff {
                break;
            }
            self.trimmed = seq;
            self.entries.pop_front();
        }
        self.last += 1;
        self.entries.push_back((self.last, now, a.entry));
    }

    /// At most `limit` entries after `after`.
    fn page(&self, after: Option<FeedPosition>, limit: usize) -> FeedPage {
        let after = after.map_or(0, |p| p.high);
        let start = self.entries.partition_point(|(seq, _, _)| *seq <= after);
        FeedPage {
            entries: self
                .entries
                .iter()
                .skip(start)
                .take(limit)
                .map(|(seq, at, bytes)| FeedEntry {
                    position: FeedPosition::new(*seq, 0),
                    at_ms: *at,
                    entry: bytes.clone(),
                })
                .collect(),
            trimmed: (self.trimmed > 0).then(|| FeedPosition::new(self.trimmed, 0)),
        }
    }
}

/// Every this many commits, expired entries are dropped from memory.
const SWEEP_EVERY: u64 = 4096;

fn live(expiry: Option<u64>, now: u64) -> bool {
    expiry.is_none_or(|at| at > now)
}

impl Inner {
    fn value(&self, key: &str, now: u64) -> Option<&Vec<u8>> {
        self.values
            .get(key)
            .filter(|(_, exp)| live(*exp, now))
            .map(|(v, _)| v)
    }

    fn set(&self, key: &str, now: u64) -> Option<&BTreeSet<Vec<u8>>> {
        self.sets
            .get(key)
            .filter(|(_, exp)| live(*exp, now))
            .map(|(s, _)| s)
    }

    fn held(&self, key: &str, now: u64) -> Held {
        if let Some(v) = self.value(key, now) {
            Held::Value(v.clone())
        } else if self.set(key, now).is_some_and(|s| !s.is_empty()) {
            Held::Collection
        } else {
            Held::Nothing
        }
    }

    fn set_mut(&mut self, key: &str, now: u64) -> &mut (BTreeSet<Vec<u8>>, Option<u64>) {
        let slot = self.sets.entry(key.to_owned()).or_default();
        if !live(slot.1, now) {
            *slot = Default::default();
        }
        slot
    }

    fn apply(&mut self, op: Op, clock: &dyn Clock) {
        let now = clock.now_ms();
        match op {
            Op::Put { key, value, ttl } => {
                let exp = ttl.map(|t| deadline(clock, t));
                self.values.insert(key, (value, exp));
            }
            Op::Delete { key } => {
                self.values.remove(&key);
                self.sets.remove(&key);
            }
            Op::DeleteIfEquals { key, value } => {
                if self.value(&key, now) == Some(&value) {
                    self.values.remove(&key);
                }
            }
            Op::Incr { key, delta, .. } => {
                let (cur, exp) = match self.values.get(&key) {
                    Some((v, exp)) if live(*exp, now) => (parse_counter(&key, v), *exp),
                    _ => (Ok(0), None),
                };
                let next = cur
                    .and_then(|cur| add_to_counter(&key, cur, delta))
                    .expect("`check` passed this increment before the first write")
                    .to_string()
                    .into_bytes();
                self.values.insert(key, (next, exp));
            }
            Op::Add { key, sort, member } => {
                self.set_mut(&key, now)
                    .0
                    .insert(encode_entry(&sort, &member));
            }
            Op::Remove { key, sort, member } => {
                let slot = self.set_mut(&key, now);
                slot.0.remove(&encode_entry(&sort, &member));
                if slot.0.is_empty() {
                    self.sets.remove(&key);
                }
            }
            Op::Trim { key, keep } => {
                let slot = self.set_mut(&key, now);
                let keep = usize::try_from(keep).unwrap_or(usize::MAX);
                while slot.0.len() > keep {
                    slot.0.pop_first();
                }
                if slot.0.is_empty() {
                    self.sets.remove(&key);
                }
            }
            Op::Expire { key, ttl } => {
                let at = deadline(clock, ttl);
                if let Some((_, exp)) = self.values.get_mut(&key).filter(|(_, e)| live(*e, now)) {
                    *exp = Some(at);
                } else if let Some((_, exp)) =
                    self.sets.get_mut(&key).filter(|(_, e)| live(*e, now))
                {
                    *exp = Some(at);
                }
            }
        }
    }
}

/// An in-memory store: a cheap-clone handle to shared maps behind one lock.
///
/// Commits are atomic and serializable (one lock held for the whole batch).
/// TTLs follow an injectable [`Clock`], so tests can expire records without
/// sleeping:
///
/// ```
/// use kvmodel_runtime::{MemoryStore, store::clock::ManualClock};
/// let clock = ManualClock::new(0);
/// let store = MemoryStore::with_clock(clock.clone());
/// ```
#[derive(Debug, Clone)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
    clock: Arc<dyn Clock>,
    /// A [`Store::snapshot`] view: its commits fail.
    frozen: bool,
    /// Wakes feed readers after a commit that appended.
    signal: Arc<FeedSignal>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        MemoryStore::with_clock(SystemClock)
    }

    /// An empty store on the given clock.
    pub fn with_clock(clock: impl Clock) -> Self {
        MemoryStore {
            inner: Arc::default(),
            clock: Arc::new(clock),
            frozen: false,
            signal: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-applied batch:
        // batches are validated before the first write.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn commit_now(&self, batch: Batch) -> Result<Outcome> {
        let appends = !batch.appends().is_empty();
        let outcome = {
            let mut inner = self.lock();
            self.commit_locked(&mut inner, batch)?
        };
        if appends && outcome.is_applied() {
            self.signal.appended();
        }
        Ok(outcome)
    }

    /// Checks and applies `batch` while the lock is held.
    fn commit_locked(&self, inner: &mut Inner, batch: Batch) -> Result<Outcome> {
        if self.frozen {
            return Err(crate::Error::backend(
                "memory",
                "commit",
                "this is a read-only snapshot of the store (`Store::snapshot`)",
            ));
        }
        let now = self.clock.now_ms();
        let outcome = check(&batch, |k, _| Ok(inner.held(k, now)))?;
        if !outcome.is_applied() {
            return Ok(outcome);
        }
        let appends = batch.appends().to_vec();
        let (_, ops) = batch.into_parts();
        for op in ops {
            inner.apply(op, &*self.clock);
        }
        for a in appends {
            inner
                .feeds
                .entry(a.feed.clone())
                .or_default()
                .append(a, now);
        }
        inner.commits += 1;
        if inner.commits.is_multiple_of(SWEEP_EVERY) {
            // Expired entries are invisible already; this returns their memory.
            inner.values.retain(|_, (_, exp)| live(*exp, now));
            inner.sets.retain(|_, (_, exp)| live(*exp, now));
        }
        Ok(Outcome::Applied)
    }

    /// Reads, plans and commits under one hold of the lock.
    fn commit_after_read_now<T>(
        &self,
        keys: &[String],
        plan: impl FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>>,
    ) -> Result<(Outcome, T)> {
        let mut inner = self.lock();
        let now = self.clock.now_ms();
        let values = keys.iter().map(|k| inner.value(k, now).cloned()).collect();
        match plan(values, now)? {
            Planned::Skip(t) => Ok((Outcome::Applied, t)),
            Planned::Commit(batch, t) => {
                let appends = !batch.appends().is_empty();
                let outcome = self.commit_locked(&mut inner, batch)?;
                drop(inner);
                if appends && outcome.is_applied() {
                    self.signal.appended();
                }
                Ok((outcome, t))
            }
        }
    }

    fn scan_now(&self, prefix: &str, after: Option<&[u8]>, count: usize) -> ScanPage {
        let inner = self.lock();
        let now = self.clock.now_ms();
        let wanted = |k: &String| k.starts_with(prefix) && after.is_none_or(|a| k.as_bytes() > a);
        let values = inner
            .values
            .iter()
            .filter(|(k, (_, exp))| live(*exp, now) && wanted(k))
            .map(|(k, _)| k);
        let sets = inner
            .sets
            .iter()
            .filter(|(k, (set, exp))| live(*exp, now) && !set.is_empty() && wanted(k))
            .map(|(k, _)| k);
        let count = scan_count(count);
        let keys: BTreeSet<&String> = values.chain(sets).collect();
        scan_page(keys.into_iter().take(count + 1).cloned().collect(), count)
    }

    fn range_now(&self, key: &str, req: &RangeRequest) -> Result<RangeResult> {
        self.range_locked(&self.lock(), key, req, self.clock.now_ms())
    }

    /// A page of collection `key` while the lock is held.
    fn range_locked(
        &self,
        inner: &Inner,
        key: &str,
        req: &RangeRequest,
        now: u64,
    ) -> Result<RangeResult> {
        let Some(set) = inner.set(key, now) else {
            return Ok(RangeResult::default());
        };
        let bounds = entry_bounds(req);
        if bounds_empty(&bounds.0, &bounds.1) {
            return Ok(RangeResult::default());
        }
        let iter = set.range::<Vec<u8>, _>(bounds);
        let take = req.limit.saturating_add(1);
        let entries: Vec<Vec<u8>> = match req.direction {
            Direction::Ascending => iter.take(take).cloned().collect(),
            Direction::Descending => iter.rev().take(take).cloned().collect(),
        };
        page_from_entries(entries, req.limit)
    }
}

impl MemoryStore {
    /// A page of the value keys under `prefix` that `keep` accepts.
    fn range_keys_now<T>(
        &self,
        prefix: &str,
        keep: impl Fn(&str) -> bool,
        req: &RangeRequest,
        mut read: impl FnMut(&str, Option<&[u8]>) -> T,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)> {
        let mut page = KeyPage::new(req.limit);
        let Some(bounds) = key_bounds(prefix, req)? else {
            return Ok(page.finish());
        };
        let inner = self.lock();
        let now = self.clock.now_ms();
        let range = inner.values.range::<String, _>(bounds);
        let mut walk = |(k, (v, exp)): (&String, &(Vec<u8>, Option<u64>))| {
            !keep(k) || page.offer(k, || read(k, live(*exp, now).then_some(v.as_slice())))
        };
        match req.direction {
            Direction::Ascending => range.take_while(|e| walk(*e)).for_each(drop),
            Direction::Descending => range.rev().take_while(|e| walk(*e)).for_each(drop),
        }
        Ok(page.finish())
    }
}

impl Store for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        self.commit_now(batch)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.lock().value(key, self.clock.now_ms()).cloned())
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        let inner = self.lock();
        let now = self.clock.now_ms();
        Ok(keys.iter().map(|k| inner.value(k, now).cloned()).collect())
    }

    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        self.range_now(key, &req)
    }

    fn orders_keys(&self) -> bool {
        true
    }

    async fn range_keys_with<T, K, F>(
        &self,
        prefix: &str,
        keep: K,
        req: RangeRequest,
        read: F,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)>
    where
        T: Send,
        K: Fn(&str) -> bool + Send,
        F: FnMut(&str, Option<&[u8]>) -> T + Send,
    {
        self.range_keys_now(prefix, keep, &req, read)
    }

    async fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        let inner = self.lock();
        let now = self.clock.now_ms();
        let range = self.range_locked(&inner, key, &req, now)?;
        let values = member_keys(&range)
            .into_iter()
            .map(|k| k.and_then(|k| inner.value(k, now).cloned()))
            .collect();
        Ok((range, values))
    }

    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        let inner = self.lock();
        let now = self.clock.now_ms();
        Ok(inner.value(key, now).map(|pointer| {
            let target = std::str::from_utf8(pointer)
                .ok()
                .and_then(|k| inner.value(k, now).cloned());
            (pointer.clone(), target)
        }))
    }

    async fn commit_after_read<T, F>(&self, keys: &[String], plan: F) -> Result<(Outcome, T)>
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        self.commit_after_read_now(keys, plan)
    }

    async fn collection_len(&self, key: &str) -> Result<u64> {
        let inner = self.lock();
        Ok(inner
            .set(key, self.clock.now_ms())
            .map_or(0, |s| s.len() as u64))
    }

    async fn now_ms(&self) -> Result<u64> {
        Ok(self.clock.now_ms())
    }

    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        Ok(self.scan_now(prefix, cursor.as_deref(), count))
    }

    /// A copy of every entry, taken under the lock: maintenance on a
    /// memory store holds its data twice while it runs.
    async fn snapshot(&self) -> Result<Option<Self>> {
        let copy = self.lock().clone();
        Ok(Some(MemoryStore {
            inner: Arc::new(Mutex::new(copy)),
            clock: Arc::clone(&self.clock),
            frozen: true,
            signal: Arc::default(),
        }))
    }

    fn keeps_feeds(&self) -> bool {
        true
    }

    async fn feed_read(
        &self,
        feed: &str,
        after: Option<FeedPosition>,
        limit: usize,
        wait: Duration,
    ) -> Result<FeedPage> {
        self.signal
            .read_or_wait(wait, || {
                let inner = self.lock();
                Ok(inner
                    .feeds
                    .get(feed)
                    .map(|f| f.page(after, limit))
                    .unwrap_or_default())
            })
            .await
    }

    async fn feed_last(&self, feed: &str) -> Result<Option<FeedPosition>> {
        let inner = self.lock();
        Ok(inner
            .feeds
            .get(feed)
            .filter(|f| f.last > 0)
            .map(|f| FeedPosition::new(f.last, 0)))
    }

    async fn time_to_live(&self, key: &str) -> Result<Option<Duration>> {
        let inner = self.lock();
        let now = self.clock.now_ms();
        Ok(match inner.values.get(key) {
            Some((_, Some(at))) if *at > now => Some(Duration::from_millis(at - now)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::clock::ManualClock;

    #[test]
    fn expired_entries_are_swept_from_memory() {
        let clock = ManualClock::new(1_000);
        let store = MemoryStore::with_clock(clock.clone());
        let mut b = Batch::new();
        b.put("gone", b"x".to_vec(), Some(Duration::from_millis(10)))
            .put("kept", b"y".to_vec(), None)
            .add("set", vec![], b"m".to_vec())
            .expire("set", Duration::from_millis(10));
        assert!(store.commit_now(b).unwrap().is_applied());
        clock.advance(Duration::from_millis(20));
        for i in 0..SWEEP_EVERY {
            let mut b = Batch::new();
            b.put("kept", i.to_string().into_bytes(), None);
            assert!(store.commit_now(b).unwrap().is_applied());
        }
        let inner = store.lock();
        assert!(!inner.values.contains_key("gone"));
        assert!(inner.values.contains_key("kept"));
        assert!(inner.sets.is_empty());
    }
}
