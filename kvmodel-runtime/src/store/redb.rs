//! `RedbStore`: the embedded default, one file, ACID.
//!
//! Layout: table `kv` maps a key to an 8-byte big-endian expiry (ms since the
//! epoch, 0 = none) followed by the value; table `members` holds sorted
//! collections as composite keys `(collection, entry)`; table `set_ttl` holds the
//! expiry of collections that have one. Expired data is absent to reads and
//! conditions and is removed when a later commit touches it.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, Table,
    TableDefinition, WriteTransaction,
};

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Op, Outcome, Planned};
use crate::store::clock::{Clock, SystemClock, deadline};
use crate::store::counter::{add_to_counter, parse_counter};
use crate::store::{
    Direction, Held, RangeRequest, RangeResult, ScanPage, Store, Via, check,
    commit_after_read_optimistic, encode_entry, entry_bounds, member_keys, page_from_entries,
    scan_count, scan_page,
};

const KV: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("kv");
const MEMBERS: TableDefinition<'_, (&str, &[u8]), ()> = TableDefinition::new("members");
const SET_TTL: TableDefinition<'_, &str, u64> = TableDefinition::new("set_ttl");

fn err(context: &'static str) -> impl Fn(redb::Error) -> Error {
    move |e| Error::backend("redb", context, e)
}

fn e<E: Into<redb::Error>>(context: &'static str) -> impl Fn(E) -> Error {
    move |x| err(context)(x.into())
}

/// The embedded file store. Cheap to clone; clones share one open database.
///
/// ```no_run
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// let store = kvmodel_runtime::RedbStore::open("app.redb")?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedbStore {
    db: Arc<Database>,
    clock: Arc<dyn Clock>,
    /// Whether any collection ever had an expiry; until then the `set_ttl`
    /// table is not opened at all, which saves a table open per call.
    collection_ttls: Arc<AtomicBool>,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore").finish_non_exhaustive()
    }
}

fn split_value(raw: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = raw.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*head), rest))
}

fn join_value(expiry: u64, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + value.len());
    out.extend_from_slice(&expiry.to_be_bytes());
    out.extend_from_slice(value);
    out
}

fn live(expiry: u64, now: u64) -> bool {
    expiry == 0 || expiry > now
}

/// The live value in a raw `kv` cell. The clock is read only for values
/// that have an expiry.
fn live_value(key: &str, raw: &[u8], now: impl Fn() -> u64) -> Result<Option<Vec<u8>>> {
    let (exp, v) = split_value(raw)
        .ok_or_else(|| Error::decode(key, "the redb cell is shorter than its header", None))?;
    Ok((exp == 0 || exp > now()).then(|| v.to_vec()))
}

/// The upper bound of every entry of collection `c`: `(c\0, [])`.
fn after_collection(c: &str) -> String {
    let mut s = String::with_capacity(c.len() + 1);
    s.push_str(c);
    s.push('\0');
    s
}

impl RedbStore {
    /// Opens (or creates) the database file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        RedbStore::open_with_clock(path, SystemClock)
    }

    /// Opens the database with a custom clock (for TTL tests).
    ///
    /// A file that exists but is empty, or is not a redb database, or is
    /// damaged so that redb cannot read it, is an error that names the
    /// file; nothing is written to it.
    pub fn open_with_clock(path: impl AsRef<Path>, clock: impl Clock) -> Result<Self> {
        let path = path.as_ref();
        let failed =
            |detail: String| Error::backend("redb", format!("open `{}`", path.display()), detail);
        // redb would start a new database in an empty file: an empty file
        // where a store is expected is more likely a truncated store.
        if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            return Err(failed(
                "the file is empty, so it is not a kvmodel store (a store file is never empty): \
                 if it was truncated, restore it from a backup; to start a new store, remove it"
                    .into(),
            ));
        }
        // A damaged file can make redb panic while it reads its pages; that
        // panic is reported as the damage it is.
        let opened = std::panic::catch_unwind(|| -> Result<(Database, bool)> {
            let db =
                Database::create(path).map_err(|x| failed(redb::Error::from(x).to_string()))?;
            let txn = db.begin_write().map_err(e("begin a write transaction"))?;
            let collection_ttls = {
                txn.open_table(KV).map_err(e("create table kv"))?;
                txn.open_table(MEMBERS).map_err(e("create table members"))?;
                let ttl = txn.open_table(SET_TTL).map_err(e("create table set_ttl"))?;
                !ttl.is_empty().map_err(e("read table set_ttl"))?
            };
            txn.commit().map_err(e("commit table creation"))?;
            Ok((db, collection_ttls))
        });
        let (db, collection_ttls) = match opened {
            Ok(opened) => opened?,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("no detail");
                return Err(failed(format!(
                    "the file is damaged: redb could not read it ({why}); restore it from a backup"
                )));
            }
        };
        Ok(RedbStore {
            db: Arc::new(db),
            clock: Arc::new(clock),
            collection_ttls: Arc::new(AtomicBool::new(collection_ttls)),
        })
    }

    /// The underlying database, for benchmarks that compare raw redb code
    /// with the store on the very same file. Writing to kvmodel's tables
    /// through it bypasses every guarantee.
    #[doc(hidden)]
    pub fn __database(&self) -> &Database {
        &self.db
    }

    fn commit_blocking(&self, batch: Batch) -> Result<Outcome> {
        let now = self.clock.now_ms();
        let txn = self
            .db
            .begin_write()
            .map_err(e("begin a write transaction"))?;
        let outcome = Writer::open(&txn, self, now)?.commit_batch(&batch)?;
        if outcome.is_applied() {
            txn.commit().map_err(e("commit a batch"))?;
        }
        // Otherwise dropping the transaction aborts it: nothing is written.
        Ok(outcome)
    }

    /// Reads `keys`, plans and commits in one write transaction: nothing
    /// can change what was read before the commit.
    fn commit_after_read_blocking<T>(
        &self,
        keys: &[String],
        plan: impl FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>>,
    ) -> Result<(Outcome, T)> {
        let now = self.clock.now_ms();
        let txn = self
            .db
            .begin_write()
            .map_err(e("begin a write transaction"))?;
        let (outcome, t) = {
            let mut w = Writer::open(&txn, self, now)?;
            let values = keys
                .iter()
                .map(|k| read_live(&w.kv, k, || now))
                .collect::<Result<Vec<_>>>()?;
            match plan(values, now)? {
                // Dropping the transaction aborts it.
                Planned::Skip(t) => return Ok((Outcome::Applied, t)),
                Planned::Commit(batch, t) => (w.commit_batch(&batch)?, t),
            }
        };
        if outcome.is_applied() {
            txn.commit().map_err(e("commit a batch"))?;
        }
        Ok((outcome, t))
    }

    /// The `kv` table in a fresh read transaction.
    fn kv_reader(&self) -> Result<redb::ReadOnlyTable<&'static str, &'static [u8]>> {
        let txn = self
            .db
            .begin_read()
            .map_err(e("begin a read transaction"))?;
        txn.open_table(KV).map_err(e("open table kv"))
    }

    /// Whether collection `key` has an expiry that has passed (only looked
    /// up once some collection has an expiry).
    fn collection_expired(&self, txn: &ReadTransaction, key: &str, now: u64) -> Result<bool> {
        if !self.collection_ttls.load(Ordering::Acquire) {
            return Ok(false);
        }
        let ttl = txn.open_table(SET_TTL).map_err(e("open table set_ttl"))?;
        let expiry = ttl.get(key).map_err(e("read a collection expiry"))?;
        Ok(expiry.is_some_and(|exp| !live(exp.value(), now)))
    }

    /// A page of collection `key` in the read transaction `txn`.
    fn range_in(
        &self,
        txn: &ReadTransaction,
        key: &str,
        req: &RangeRequest,
        now: u64,
    ) -> Result<RangeResult> {
        if self.collection_expired(txn, key, now)? {
            return Ok(RangeResult::default());
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
            return Ok(RangeResult::default());
        }
        let iter = members
            .range::<(&str, &[u8])>((lo, hi))
            .map_err(e("scan a collection"))?;
        let take = req.limit.saturating_add(1);
        let mut entries = Vec::with_capacity(take.min(1024));
        let mut push = |item: RangeItem<'_>| -> Result<()> {
            let (k, _) = item.map_err(e("scan a collection"))?;
            entries.push(k.value().1.to_vec());
            Ok(())
        };
        match req.direction {
            Direction::Ascending => iter.take(take).try_for_each(&mut push)?,
            Direction::Descending => iter.rev().take(take).try_for_each(&mut push)?,
        }
        page_from_entries(entries, req.limit)
    }

    fn begin_read(&self) -> Result<ReadTransaction> {
        self.db.begin_read().map_err(e("begin a read transaction"))
    }

    fn range_now(&self, key: &str, req: &RangeRequest) -> Result<RangeResult> {
        let now = self.clock.now_ms();
        self.range_in(&self.begin_read()?, key, req, now)
    }

    /// A page of collection `key` and the values its members name, in one
    /// read transaction.
    fn range_values_now(
        &self,
        key: &str,
        req: &RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        let now = self.clock.now_ms();
        let txn = self.begin_read()?;
        let range = self.range_in(&txn, key, req, now)?;
        if range.members.is_empty() {
            return Ok((range, Vec::new()));
        }
        let kv = txn.open_table(KV).map_err(e("open table kv"))?;
        let values = member_keys(&range)
            .into_iter()
            .map(|k| match k {
                Some(k) => read_live(&kv, k, || now),
                None => Ok(None),
            })
            .collect::<Result<_>>()?;
        Ok((range, values))
    }

    /// The value at `key` and the value at the key it holds, in one read
    /// transaction.
    fn get_via_now(&self, key: &str) -> Result<Option<Via>> {
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
    fn collection_len_now(&self, key: &str) -> Result<u64> {
        let now = self.clock.now_ms();
        let txn = self
            .db
            .begin_read()
            .map_err(e("begin a read transaction"))?;
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
    fn scan_now(&self, prefix: &str, after: Option<&str>, count: usize) -> Result<ScanPage> {
        let now = self.clock.now_ms();
        let count = scan_count(count);
        let txn = self
            .db
            .begin_read()
            .map_err(e("begin a read transaction"))?;
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
            let expiry = split_value(v.value()).map_or(0, |(exp, _)| exp);
            if past(k) && live(expiry, now) {
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

    /// Runs blocking work without stalling the async runtime: in place on a
    /// multi-threaded runtime (tokio moves other tasks off this worker), on
    /// the blocking pool on a current-thread runtime, directly outside tokio.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(RedbStore) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let this = self.clone();
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(move || f(this))
            }
            Ok(h) => h
                .spawn_blocking(move || f(this))
                .await
                .map_err(|j| Error::backend("redb", "run a blocking write", j))?,
            Err(_) => f(this),
        }
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
fn read_live<T>(kv: &T, key: &str, now: impl Fn() -> u64) -> Result<Option<Vec<u8>>>
where
    T: ReadableTable<&'static str, &'static [u8]>,
{
    match kv.get(key).map_err(e("read a value"))? {
        Some(raw) => live_value(key, raw.value(), now),
        None => Ok(None),
    }
}

/// The tables of one write transaction, opened once, and what a batch
/// needs to check and apply its operations.
struct Writer<'t> {
    txn: &'t WriteTransaction,
    kv: Table<'t, &'static str, &'static [u8]>,
    members: Table<'t, (&'static str, &'static [u8]), ()>,
    /// Open only when some collection has (or gets) an expiry.
    set_ttl: Option<Table<'t, &'static str, u64>>,
    store: &'t RedbStore,
    now: u64,
}

impl<'t> Writer<'t> {
    fn open(txn: &'t WriteTransaction, store: &'t RedbStore, now: u64) -> Result<Self> {
        let set_ttl = if store.collection_ttls.load(Ordering::Acquire) {
            Some(txn.open_table(SET_TTL).map_err(e("open table set_ttl"))?)
        } else {
            None
        };
        Ok(Writer {
            txn,
            kv: txn.open_table(KV).map_err(e("open table kv"))?,
            members: txn.open_table(MEMBERS).map_err(e("open table members"))?,
            set_ttl,
            store,
            now,
        })
    }

    /// Checks `batch` and, when every condition holds, applies it (the
    /// caller commits the transaction then).
    fn commit_batch(&mut self, batch: &Batch) -> Result<Outcome> {
        let expires = batch.ops().iter().any(|op| matches!(op, Op::Expire { .. }));
        if expires && self.set_ttl.is_none() {
            self.set_ttl = Some(
                self.txn
                    .open_table(SET_TTL)
                    .map_err(e("open table set_ttl"))?,
            );
        }
        let outcome = check(batch, |k| self.held(k))?;
        if outcome.is_applied() {
            for op in batch.ops() {
                self.apply(op)?;
            }
        }
        Ok(outcome)
    }

    fn apply(&mut self, op: &Op) -> Result<()> {
        match op {
            Op::Put { key, value, ttl } => {
                let exp = ttl.map_or(0, |t| deadline(&*self.store.clock, t).max(1));
                self.kv
                    .insert(key.as_str(), join_value(exp, value).as_slice())
                    .map_err(e("write a value"))?;
            }
            Op::Delete { key } => {
                self.kv.remove(key.as_str()).map_err(e("delete a value"))?;
                self.clear_collection(key)?;
            }
            Op::Incr { key, delta } => {
                let (cur, exp) = match self.kv.get(key.as_str()).map_err(e("read a counter"))? {
                    Some(raw) => {
                        let (exp, v) = split_value(raw.value()).unwrap_or((0, b"0"));
                        if live(exp, self.now) {
                            (parse_counter(key, v)?, exp)
                        } else {
                            (0, 0)
                        }
                    }
                    None => (0, 0),
                };
                let next = add_to_counter(key, cur, *delta)?.to_string();
                self.kv
                    .insert(key.as_str(), join_value(exp, next.as_bytes()).as_slice())
                    .map_err(e("write a counter"))?;
            }
            Op::Add { key, sort, member } => {
                self.sweep_collection(key)?;
                let entry = encode_entry(sort, member);
                let at = (key.as_str(), entry.as_slice());
                // Inserting a member that is there already would copy its
                // page for nothing (every write re-adds the discovery member).
                if self.members.get(at).map_err(e("read a member"))?.is_none() {
                    self.members.insert(at, ()).map_err(e("add a member"))?;
                }
            }
            Op::Remove { key, sort, member } => {
                let entry = encode_entry(sort, member);
                self.members
                    .remove((key.as_str(), entry.as_slice()))
                    .map_err(e("remove a member"))?;
            }
            Op::Trim { key, keep } => {
                self.sweep_collection(key)?;
                // Capped collections hold about `keep` members: reading
                // them all costs what trimming them does.
                let end = after_collection(key);
                let entries: Vec<Vec<u8>> = self
                    .members
                    .range::<(&str, &[u8])>((key.as_str(), &[][..])..(end.as_str(), &[][..]))
                    .map_err(e("scan a collection"))?
                    .map(|item| item.map(|(k, _)| k.value().1.to_vec()))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(e("scan a collection"))?;
                let keep = usize::try_from(*keep).unwrap_or(usize::MAX);
                let excess = entries.len().saturating_sub(keep);
                for entry in &entries[..excess] {
                    self.members
                        .remove((key.as_str(), entry.as_slice()))
                        .map_err(e("trim a collection"))?;
                }
            }
            Op::Expire { key, ttl } => {
                let at = deadline(&*self.store.clock, *ttl).max(1);
                let now = self.now;
                let cur = read_live(&self.kv, key, || now)?;
                if let Some(v) = cur {
                    self.kv
                        .insert(key.as_str(), join_value(at, &v).as_slice())
                        .map_err(e("set an expiry"))?;
                } else if self.collection_live(key)? {
                    if let Some(t) = self.set_ttl.as_mut() {
                        t.insert(key.as_str(), at).map_err(e("set an expiry"))?;
                        self.store.collection_ttls.store(true, Ordering::Release);
                    }
                }
            }
        }
        Ok(())
    }

    /// What `key` holds now.
    fn held(&mut self, key: &str) -> Result<Held> {
        let now = self.now;
        if let Some(v) = read_live(&self.kv, key, || now)? {
            Ok(Held::Value(v))
        } else if self.collection_live(key)? {
            Ok(Held::Collection)
        } else {
            Ok(Held::Nothing)
        }
    }

    /// The expiry of a collection, if it has one.
    fn collection_expiry(&mut self, key: &str) -> Result<Option<u64>> {
        match self.set_ttl.as_ref() {
            Some(t) => Ok(t
                .get(key)
                .map_err(e("read a collection expiry"))?
                .map(|x| x.value())),
            None => Ok(None),
        }
    }

    fn collection_live(&mut self, key: &str) -> Result<bool> {
        if self
            .collection_expiry(key)?
            .is_some_and(|exp| !live(exp, self.now))
        {
            return Ok(false);
        }
        let end = after_collection(key);
        let mut it = self
            .members
            .range::<(&str, &[u8])>((key, &[][..])..(end.as_str(), &[][..]))
            .map_err(e("scan a collection"))?;
        Ok(it.next().is_some())
    }

    /// Removes an expired collection before it is written to again.
    fn sweep_collection(&mut self, key: &str) -> Result<()> {
        let expired = self
            .collection_expiry(key)?
            .is_some_and(|exp| !live(exp, self.now));
        if expired {
            self.clear_collection(key)?;
        }
        Ok(())
    }

    fn clear_collection(&mut self, key: &str) -> Result<()> {
        if let Some(t) = self.set_ttl.as_mut() {
            t.remove(key).map_err(e("delete a collection expiry"))?;
        }
        let end = after_collection(key);
        let doomed: Vec<Vec<u8>> = self
            .members
            .range::<(&str, &[u8])>((key, &[][..])..(end.as_str(), &[][..]))
            .map_err(e("scan a collection"))?
            .map(|item| item.map(|(k, _)| k.value().1.to_vec()))
            .collect::<std::result::Result<_, _>>()
            .map_err(e("scan a collection"))?;
        for entry in doomed {
            self.members
                .remove((key, entry.as_slice()))
                .map_err(e("delete a collection"))?;
        }
        Ok(())
    }
}

impl Store for RedbStore {
    fn backend(&self) -> &'static str {
        "redb"
    }

    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        self.blocking(move |s| s.commit_blocking(batch)).await
    }

    // Reads are served from redb's page cache in microseconds; handing them
    // to the blocking pool would cost more than it saves.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        read_live(&self.kv_reader()?, key, || self.clock.now_ms())
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        let kv = self.kv_reader()?;
        keys.iter()
            .map(|k| read_live(&kv, k, || self.clock.now_ms()))
            .collect()
    }

    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        self.range_now(key, &req)
    }

    async fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        self.range_values_now(key, &req)
    }

    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        self.get_via_now(key)
    }

    /// One write transaction for read, plan and commit, except on a
    /// current-thread runtime, where the write goes to the blocking pool
    /// (which needs a `'static` plan) and the optimistic protocol applies.
    async fn commit_after_read<T, F>(&self, keys: &[String], plan: F) -> Result<(Outcome, T)>
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| self.commit_after_read_blocking(keys, plan))
            }
            Ok(_) => commit_after_read_optimistic(self, keys, plan).await,
            Err(_) => self.commit_after_read_blocking(keys, plan),
        }
    }

    async fn collection_len(&self, key: &str) -> Result<u64> {
        self.collection_len_now(key)
    }

    async fn now_ms(&self) -> Result<u64> {
        Ok(self.clock.now_ms())
    }

    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        let after = match cursor {
            Some(c) => Some(String::from_utf8(c).map_err(|_| Error::InvalidCursor {
                reason: "it is not a key of this store".to_owned(),
            })?),
            None => None,
        };
        self.scan_now(prefix, after.as_deref(), count)
    }

    async fn time_to_live(&self, key: &str) -> Result<Option<std::time::Duration>> {
        let kv = self.kv_reader()?;
        let Some(raw) = kv.get(key).map_err(e("read a value"))? else {
            return Ok(None);
        };
        let now = self.clock.now_ms();
        Ok(match split_value(raw.value()) {
            Some((exp, _)) if exp != 0 && exp > now => {
                Some(std::time::Duration::from_millis(exp - now))
            }
            _ => None,
        })
    }
}
