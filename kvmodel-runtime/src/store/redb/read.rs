//! The read transactions of [`RedbStore`]: point lookups, pages of a
//! collection with the values they name, counts and maintenance scans.

use std::ops::{Bound, Deref};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use redb::{ReadTransaction, ReadableDatabase, ReadableTable};

use super::{
    KV, MEMBERS, RedbStore, SET_TTL, after_collection, e, is_marker, live, live_value, split_value,
};
use crate::error::Result;
use crate::store::{
    Direction, KeyPage, MemberRef, RangeRequest, RangeResult, ScanPage, Via, decode_entry,
    entry_bounds, key_bounds, scan_count, scan_page, split_entry,
};

/// A read transaction of the store: its own, or the one a
/// [`Store::snapshot`](crate::Store::snapshot) view keeps open.
pub(super) enum ReadTxn {
    Fresh(ReadTransaction),
    Pinned(Arc<ReadTransaction>),
}

impl Deref for ReadTxn {
    type Target = ReadTransaction;

    fn deref(&self) -> &ReadTransaction {
        match self {
            ReadTxn::Fresh(t) => t,
            ReadTxn::Pinned(t) => t,
        }
    }
}

impl RedbStore {
    /// The `kv` table in a read transaction.
    pub(super) fn kv_reader(&self) -> Result<redb::ReadOnlyTable<&'static str, &'static [u8]>> {
        self.begin_read()?
            .open_table(KV)
            .map_err(e("open table kv"))
    }

    /// Whether collection `key` has an expiry that has passed (only looked
    /// up once some collection has an expiry).
    pub(super) fn collection_expired(
        &self,
        txn: &ReadTransaction,
        key: &str,
        now: u64,
    ) -> Result<bool> {
        if !self.collection_ttls.load(Ordering::Acquire) {
            return Ok(false);
        }
        let ttl = txn.open_table(SET_TTL).map_err(e("open table set_ttl"))?;
        let expiry = ttl.get(key).map_err(e("read a collection expiry"))?;
        Ok(expiry.is_some_and(|exp| !live(exp.value(), now)))
    }

    /// Walks a page of collection `key` in the read transaction `txn`,
    /// handing `visit` each entry where redb lends it; returns the position
    /// to resume from (the last entry of a full page, when more follow).
    fn walk_range(
        &self,
        txn: &ReadTransaction,
        key: &str,
        req: &RangeRequest,
        now: u64,
        mut visit: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<Option<Vec<u8>>> {
        if self.collection_expired(txn, key, now)? {
            return Ok(None);
        }
        let members = txn.open_table(MEMBERS).map_err(e("open table members"))?;
        let (lo, hi) = entry_bounds(req);
        let end = after_collection(key);
        let lo: Bound<(&str, &[u8])> = match &lo {
            Bound::Unbounded => Bound::Included((key, &[][..])),
            Bound::Included(b) => Bound::Included((key, b.as_slice())),
            Bound::Excluded(b) => Bound::Excluded((key, b.as_slice())),
        };
        let hi: Bound<(&str, &[u8])> = match &hi {
            Bound::Unbounded => Bound::Excluded((end.as_str(), &[][..])),
            Bound::Included(b) => Bound::Included((key, b.as_slice())),
            Bound::Excluded(b) => Bound::Excluded((key, b.as_slice())),
        };
        if crate::store::bounds_empty(&lo, &hi) {
            return Ok(None);
        }
        let iter = members
            .range::<(&str, &[u8])>((lo, hi))
            .map_err(e("scan a collection"))?;
        // Only the last entry of a full page is copied, as the position to
        // resume from.
        let mut last = None;
        let mut seen = 0usize;
        let mut push = |item: RangeItem<'_>| -> Result<()> {
            let (k, _) = item.map_err(e("scan a collection"))?;
            seen += 1;
            if seen > req.limit {
                return Ok(());
            }
            let entry = k.value().1;
            if seen == req.limit {
                last = Some(entry.to_vec());
            }
            visit(entry)
        };
        let take = req.limit.saturating_add(1);
        match req.direction {
            Direction::Ascending => iter.take(take).try_for_each(&mut push)?,
            Direction::Descending => iter.rev().take(take).try_for_each(&mut push)?,
        }
        Ok(if seen > req.limit { last } else { None })
    }

    /// A read transaction: a fresh one, or the one a snapshot keeps.
    pub(super) fn begin_read(&self) -> Result<ReadTxn> {
        match &self.pinned {
            Some(txn) => Ok(ReadTxn::Pinned(Arc::clone(txn))),
            None => Ok(ReadTxn::Fresh(
                self.db
                    .begin_read()
                    .map_err(e("begin a read transaction"))?,
            )),
        }
    }

    /// A page of collection `key`. An entry that does not decode is left
    /// out, as `page_from_entries` leaves it out.
    pub(super) fn range_now(&self, key: &str, req: &RangeRequest) -> Result<RangeResult> {
        let now = self.clock.now_ms();
        let mut members = Vec::with_capacity(req.limit.min(1024));
        let next = self.walk_range(&*self.begin_read()?, key, req, now, |entry| {
            if let Ok(m) = decode_entry(entry) {
                members.push(m);
            }
            Ok(())
        })?;
        Ok(RangeResult { members, next })
    }

    /// A page of collection `key` and the values its members name, in one
    /// read transaction: `read` gets each member and its live value
    /// borrowed from the pages they lie on, so nothing is copied that
    /// `read` does not keep.
    pub(super) fn range_values_with_now<T>(
        &self,
        key: &str,
        req: &RangeRequest,
        mut read: impl FnMut(MemberRef<'_>, Option<&[u8]>) -> T,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)> {
        let now = self.clock.now_ms();
        let txn = self.begin_read()?;
        let kv = txn.open_table(KV).map_err(e("open table kv"))?;
        let mut out = Vec::with_capacity(req.limit.min(1024));
        let mut sort = Vec::new();
        let next = self.walk_range(&txn, key, req, now, |entry| {
            let Some(member) = split_entry(entry, &mut sort) else {
                return Ok(());
            };
            let m = MemberRef {
                sort: &sort,
                member,
            };
            let raw = match std::str::from_utf8(member) {
                Ok(k) => kv.get(k).map_err(e("read a value"))?.map(|raw| (k, raw)),
                Err(_) => None,
            };
            out.push(match &raw {
                Some((k, raw)) => read(m, live_value(k, raw.value(), || now)?),
                None => read(m, None),
            });
            Ok(())
        })?;
        Ok((out, next))
    }

    /// A page of the value keys under `prefix` that `keep` accepts, each
    /// value lent to `read` where it lies, in one read transaction.
    pub(super) fn range_keys_now<T>(
        &self,
        prefix: &str,
        keep: impl Fn(&str) -> bool,
        req: &RangeRequest,
        mut read: impl FnMut(&str, Option<&[u8]>) -> T,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)> {
        let mut page = KeyPage::new(req.limit);
        let Some((lower, upper)) = key_bounds(prefix, req)? else {
            return Ok(page.finish());
        };
        let now = self.clock.now_ms();
        let txn = self.begin_read()?;
        let kv = txn.open_table(KV).map_err(e("open table kv"))?;
        let bounds = (as_str(&lower), as_str(&upper));
        let mut range = kv.range::<&str>(bounds).map_err(e("range over keys"))?;
        loop {
            let item = match req.direction {
                Direction::Ascending => range.next(),
                Direction::Descending => range.next_back(),
            };
            let Some(item) = item else { break };
            let (k, v) = item.map_err(e("range over keys"))?;
            let (k, v) = (k.value(), v.value());
            // A collection marker is no value.
            if is_marker(v) || !keep(k) {
                continue;
            }
            let value = live_value(k, v, || now)?;
            if !page.offer(k, || read(k, value)) {
                break;
            }
        }
        Ok(page.finish())
    }

    /// The value at `key` and the value at the key it holds, in one read
    /// transaction.
    pub(super) fn get_via_now(&self, key: &str) -> Result<Option<Via>> {
        let kv = self.kv_reader()?;
        let now = || self.clock.now_ms();
        let Some(pointer) = read_live(&kv, key, now)? else {
            return Ok(None);
        };
        let target = match std::str::from_utf8(&pointer) {
            Ok(k) => read_live(&kv, k, now)?,
            Err(_) => None,
        };
        Ok(Some((pointer, target)))
    }

    /// The number of live members of collection `key`: a walk of its keys
    /// in the B-tree, without reading any value.
    pub(super) fn collection_len_now(&self, key: &str) -> Result<u64> {
        let now = self.clock.now_ms();
        let txn = self.begin_read()?;
        if self.collection_expired(&txn, key, now)? {
            return Ok(0);
        }
        let members = txn.open_table(MEMBERS).map_err(e("open table members"))?;
        let end = after_collection(key);
        let mut n = 0u64;
        for item in members
            .range::<(&str, &[u8])>((key, &[][..])..(end.as_str(), &[][..]))
            .map_err(e("count a collection"))?
        {
            item.map_err(e("count a collection"))?;
            n += 1;
        }
        Ok(n)
    }

    /// Up to `count + 1` live keys under `prefix` past `after`, from both the
    /// value table and the collections, merged in byte order.
    pub(super) fn scan_now(
        &self,
        prefix: &str,
        after: Option<&str>,
        count: usize,
    ) -> Result<ScanPage> {
        let now = self.clock.now_ms();
        let count = scan_count(count);
        let txn = self.begin_read()?;
        let start = match after {
            Some(a) if a >= prefix => a,
            _ => prefix,
        };
        let past = |k: &str| after.is_none_or(|a| k > a);
        let mut keys = Vec::new();
        let kv = txn.open_table(KV).map_err(e("open table kv"))?;
        for item in kv.range::<&str>(start..).map_err(e("scan keys"))? {
            let (k, v) = item.map_err(e("scan keys"))?;
            let k = k.value();
            if !k.starts_with(prefix) || keys.len() > count {
                break;
            }
            // Collections (markers here) are listed from `members` below.
            let v = v.value();
            let expiry = split_value(v).map_or(0, |(exp, _)| exp);
            if past(k) && !is_marker(v) && live(expiry, now) {
                keys.push(k.to_owned());
            }
        }
        let ttls = if self.collection_ttls.load(Ordering::Acquire) {
            Some(txn.open_table(SET_TTL).map_err(e("open table set_ttl"))?)
        } else {
            None
        };
        let members = txn.open_table(MEMBERS).map_err(e("open table members"))?;
        let mut from = start.to_owned();
        let mut collections = 0;
        while collections <= count {
            let next = members
                .range::<(&str, &[u8])>((from.as_str(), &[][..])..)
                .map_err(e("scan collections"))?
                .next();
            let Some(item) = next else { break };
            let (k, _) = item.map_err(e("scan collections"))?;
            let name = k.value().0.to_owned();
            if !name.starts_with(prefix) {
                break;
            }
            from = after_collection(&name);
            let expired = match &ttls {
                Some(t) => t
                    .get(name.as_str())
                    .map_err(e("read a collection expiry"))?
                    .is_some_and(|exp| !live(exp.value(), now)),
                None => false,
            };
            if past(&name) && !expired {
                keys.push(name);
                collections += 1;
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys.truncate(count + 1);
        Ok(scan_page(keys, count))
    }
}

type RangeItem<'a> = std::result::Result<
    (
        redb::AccessGuard<'a, (&'a str, &'a [u8])>,
        redb::AccessGuard<'a, ()>,
    ),
    redb::StorageError,
>;

/// The live value at `key` in a `kv` table (read-only or in a write
/// transaction); the clock is read only for values that expire.
pub(super) fn read_live<T>(kv: &T, key: &str, now: impl Fn() -> u64) -> Result<Option<Vec<u8>>>
where
    T: ReadableTable<&'static str, &'static [u8]>,
{
    with_live(kv, key, now, |v| v.map(<[u8]>::to_vec))
}

/// [`read_live`], handing the value to `read` where redb lends it.
pub(super) fn with_live<T, R>(
    kv: &T,
    key: &str,
    now: impl Fn() -> u64,
    read: impl FnOnce(Option<&[u8]>) -> R,
) -> Result<R>
where
    T: ReadableTable<&'static str, &'static [u8]>,
{
    match kv.get(key).map_err(e("read a value"))? {
        Some(raw) => Ok(read(live_value(key, raw.value(), now)?)),
        None => Ok(read(None)),
    }
}

/// A bound on `String` keys as a bound on `&str` keys.
fn as_str(bound: &Bound<String>) -> Bound<&str> {
    match bound {
        Bound::Included(s) => Bound::Included(s.as_str()),
        Bound::Excluded(s) => Bound::Excluded(s.as_str()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
