//! `RedbStore`: the embedded default, one file, ACID.
//!
//! Layout: table `kv` maps a key to an 8-byte big-endian expiry (ms since the
//! epoch, 0 = none) followed by the value, or to an empty cell, the marker of
//! a key that holds a sorted collection; table `members` holds sorted
//! collections as composite keys `(collection, entry)`; table `set_ttl` holds the
//! expiry of collections that have one. Every collection with members has its
//! marker (a marker may outlive its last member), so one look-up in `kv`
//! tells a write what a key holds: nothing, a value or a collection. Table
//! `meta` records the layout's version. Expired data is absent to reads and
//! conditions and is removed when a later commit touches it.
//!
//! The store is split by concern: this module opens the file and serves the
//! [`Store`] contract, `read` holds the read transactions (lookups, pages,
//! counts, scans) and `write` the write transaction that checks and applies a
//! batch.

mod feed;
mod group;
mod guard;
mod read;
#[cfg(test)]
mod tests;
mod write;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome, Planned};
use crate::store::clock::{Clock, SystemClock};
use crate::store::feed::FeedSignal;
use crate::store::{FeedPage, FeedPosition};
use crate::store::{
    MemberRef, RangeRequest, RangeResult, ScanPage, Store, Via, commit_after_read_optimistic,
};

use self::group::{Committer, GroupResult};
use self::guard::{CallerClock, caller, damage, guarded};
use self::read::{read_live, with_live};
use self::write::Writer;

const KV: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("kv");
const MEMBERS: TableDefinition<'_, (&str, &[u8]), ()> = TableDefinition::new("members");
const SET_TTL: TableDefinition<'_, &str, u64> = TableDefinition::new("set_ttl");
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");

/// The `meta` entry that holds the layout's version.
const LAYOUT: &str = "layout";
/// The layout in which every collection has its marker in `kv`.
const MARKED: u64 = 2;

/// The `kv` cell of a key that holds a sorted collection: shorter than a
/// value's expiry header, so it is never a value.
const MARKER: &[u8] = &[];

fn is_marker(raw: &[u8]) -> bool {
    raw.is_empty()
}

fn err(context: &'static str) -> impl Fn(redb::Error) -> Error {
    move |e| Error::backend("redb", context, e)
}

fn e<E: Into<redb::Error>>(context: &'static str) -> impl Fn(E) -> Error {
    move |x| err(context)(x.into())
}

/// Commits `txn`. Once redb has begun a commit, a failure (an I/O error,
/// or a panic inside redb) may leave the changes durable all the same (so
/// redb documents its commit errors): the outcome is unknown, and reported
/// so ([`Error::OutcomeUnknown`]), never as nothing written.
fn commit(txn: redb::WriteTransaction) -> Result<()> {
    let unknown = |source: Box<dyn std::error::Error + Send + Sync>| Error::OutcomeUnknown {
        backend: "redb",
        source,
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| txn.commit())) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(unknown(Box::new(e))),
        Err(panic) => Err(unknown(damage(&*panic).into())),
    }
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
    /// The file, for errors.
    path: Arc<Path>,
    /// The caller's clock: read only inside guarded calls (see `guard`).
    clock: Arc<dyn Clock>,
    /// Whether any collection ever had an expiry; until then the `set_ttl`
    /// table is not opened at all, which saves a table open per call.
    collection_ttls: Arc<AtomicBool>,
    /// A [`Store::snapshot`] view: the read transaction every read uses;
    /// commits fail.
    pinned: Option<Arc<redb::ReadTransaction>>,
    /// Concurrent commits, grouped into one write transaction (`group`).
    committer: Arc<Committer>,
    /// Wakes feed readers after a commit that appended.
    signal: Arc<FeedSignal>,
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

/// The live value in a raw `kv` cell, borrowed from it (none in a
/// collection marker). The clock is read only for values that have an
/// expiry.
fn live_value<'a>(key: &str, raw: &'a [u8], now: impl Fn() -> u64) -> Result<Option<&'a [u8]>> {
    if is_marker(raw) {
        return Ok(None);
    }
    let (exp, v) = split_value(raw)
        .ok_or_else(|| Error::decode(key, "the redb cell is shorter than its header", None))?;
    Ok((exp == 0 || exp > now()).then_some(v))
}

/// The upper bound of every entry of collection `c`: `(c\0, [])`.
fn after_collection(c: &str) -> String {
    let mut s = String::with_capacity(c.len() + 1);
    s.push_str(c);
    s.push('\0');
    s
}
/// Gives every collection of a file written before markers its marker
/// (an expired value at the same key, which that layout allowed, gives way).
fn mark_collections(
    kv: &mut redb::Table<'_, &'static str, &'static [u8]>,
    members: &redb::Table<'_, (&'static str, &'static [u8]), ()>,
) -> Result<()> {
    let mut from = String::new();
    loop {
        let next = members
            .range::<(&str, &[u8])>((from.as_str(), &[][..])..)
            .map_err(e("scan collections"))?
            .next();
        let Some(item) = next else { return Ok(()) };
        let name = item.map_err(e("scan collections"))?.0.value().0.to_owned();
        // A value that never expires cannot share its key with members.
        let lasting = kv
            .get(name.as_str())
            .map_err(e("read a value"))?
            .and_then(|raw| split_value(raw.value()).map(|(exp, _)| exp))
            .is_some_and(|exp| exp == 0);
        if !lasting {
            kv.insert(name.as_str(), MARKER)
                .map_err(e("mark a collection"))?;
        }
        from = after_collection(&name);
    }
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
        RedbStore::open_database(path, clock, || Database::create(path))
    }

    /// Opens the database `create` opens (the file at `path`, or a test's
    /// storage backend named `path`), with `clock`.
    fn open_database(
        path: &Path,
        clock: impl Clock,
        create: impl FnOnce() -> std::result::Result<Database, redb::DatabaseError>
        + std::panic::UnwindSafe,
    ) -> Result<Self> {
        let failed =
            |detail: String| Error::backend("redb", format!("open `{}`", path.display()), detail);
        // A damaged file can make redb panic while it reads its pages; that
        // panic is reported as the damage it most likely is.
        let opened = std::panic::catch_unwind(|| -> Result<(Database, bool)> {
            let db = create().map_err(|x| failed(redb::Error::from(x).to_string()))?;
            let txn = db.begin_write().map_err(e("begin a write transaction"))?;
            let collection_ttls = {
                let mut kv = txn.open_table(KV).map_err(e("create table kv"))?;
                let members = txn.open_table(MEMBERS).map_err(e("create table members"))?;
                let mut meta = txn.open_table(META).map_err(e("create table meta"))?;
                let layout = meta.get(LAYOUT).map_err(e("read table meta"))?;
                if layout.map(|v| v.value()) != Some(MARKED) {
                    mark_collections(&mut kv, &members)?;
                    meta.insert(LAYOUT, MARKED).map_err(e("write table meta"))?;
                }
                let ttl = txn.open_table(SET_TTL).map_err(e("create table set_ttl"))?;
                !ttl.is_empty().map_err(e("read table set_ttl"))?
            };
            txn.commit().map_err(e("commit table creation"))?;
            Ok((db, collection_ttls))
        });
        let (db, collection_ttls) = match opened {
            Ok(opened) => opened?,
            Err(panic) => {
                return Err(failed(damage(&*panic)));
            }
        };
        Ok(RedbStore {
            db: Arc::new(db),
            path: Arc::from(path),
            clock: Arc::new(CallerClock(clock)),
            collection_ttls: Arc::new(AtomicBool::new(collection_ttls)),
            pinned: None,
            committer: Arc::default(),
            signal: Arc::default(),
        })
    }

    /// The underlying database, for benchmarks that compare raw redb code
    /// with the store on the very same file. Writing to kvmodel's tables
    /// through it bypasses every guarantee.
    #[doc(hidden)]
    pub fn __database(&self) -> &Database {
        &self.db
    }

    /// Runs `f`, which reads or writes the file: a panic inside redb is an
    /// error naming the file (see `guard`).
    fn guarded<T>(&self, doing: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        guarded(&self.path, doing, f)
    }

    /// A write transaction, unless this is a snapshot view.
    fn begin_write(&self) -> Result<redb::WriteTransaction> {
        if self.pinned.is_some() {
            return Err(Error::backend(
                "redb",
                "commit",
                "this is a read-only snapshot of the store (`Store::snapshot`)",
            ));
        }
        self.db
            .begin_write()
            .map_err(e("begin a write transaction"))
    }

    /// Commits `batch` with the batches other callers commit meanwhile
    /// (`group`). The group's transaction runs guarded: a redb panic is an
    /// error for every caller of the group, a panic of the caller's clock
    /// the leader's own.
    fn commit_blocking(&self, batch: Batch) -> Result<Outcome> {
        if self.pinned.is_some() {
            // A snapshot view refuses, without joining a group.
            self.begin_write()?;
        }
        self.committer.commit(batch, |group| {
            self.guarded("write", || Ok(self.commit_group(group)))
                .and_then(|r| r)
        })
    }

    /// One write transaction for `group`: each batch checked against what
    /// the ones before it left, applied when its conditions hold, one
    /// commit for all.
    fn commit_group(&self, group: &[&Batch]) -> GroupResult {
        let now = self.clock.now_ms();
        let txn = self.begin_write()?;
        let mut answers = Vec::with_capacity(group.len());
        let mut applied = false;
        let mut appended = false;
        {
            let mut w = Writer::open(&txn, self, now)?;
            for batch in group {
                let answer = w.commit_batch(batch)?;
                if matches!(answer, Ok(Outcome::Applied)) {
                    applied = true;
                    appended |= !batch.appends().is_empty();
                }
                answers.push(answer);
            }
        }
        if applied && let Err(e) = commit(txn) {
            // Those whose batch was applied in the transaction may have
            // been written; the others keep their answer.
            let text = e.to_string();
            for answer in &mut answers {
                if matches!(answer, Ok(Outcome::Applied)) {
                    *answer = Err(Error::OutcomeUnknown {
                        backend: "redb",
                        source: text.clone().into(),
                    });
                }
            }
            return Ok(answers);
        }
        if appended {
            self.signal.appended();
        }
        // Otherwise dropping the transaction aborts it: nothing is written.
        Ok(answers)
    }

    /// Reads `keys`, plans and commits in one write transaction: nothing
    /// can change what was read before the commit.
    fn commit_after_read_blocking<T>(
        &self,
        keys: &[String],
        plan: impl FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>>,
    ) -> Result<(Outcome, T)> {
        let now = self.clock.now_ms();
        let txn = self.begin_write()?;
        let (outcome, t, appended) = {
            let mut w = Writer::open(&txn, self, now)?;
            let values = keys.iter().map(|k| w.get(k)).collect::<Result<Vec<_>>>()?;
            match caller(|| plan(values, now))? {
                // Dropping the transaction aborts it.
                Planned::Skip(t) => return Ok((Outcome::Applied, t)),
                Planned::Commit(batch, t) => {
                    (w.commit_batch(&batch)??, t, !batch.appends().is_empty())
                }
            }
        };
        if outcome.is_applied() {
            commit(txn)?;
            if appended {
                self.signal.appended();
            }
        }
        Ok((outcome, t))
    }

    /// Runs blocking work without stalling the async runtime (see
    /// `crate::exec::spawn_blocking`).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(RedbStore) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let this = self.clone();
        crate::exec::spawn_blocking(move || f(this))
            .await
            .map_err(|j| Error::backend("redb", "run a blocking write", j))?
    }
}

impl Store for RedbStore {
    fn backend(&self) -> &'static str {
        "redb"
    }

    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        // Guarded inside, around the group's transaction (`commit_blocking`).
        self.blocking(move |s| s.commit_blocking(batch)).await
    }

    // Reads are served from redb's page cache in microseconds; handing them
    // to the blocking pool would cost more than it saves.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.guarded("read", || {
            read_live(&self.kv_reader()?, key, || self.clock.now_ms())
        })
    }

    async fn get_with<T, F>(&self, key: &str, read: F) -> Result<T>
    where
        T: Send,
        F: FnOnce(Option<&[u8]>) -> T + Send,
    {
        self.guarded("read", || {
            with_live(
                &self.kv_reader()?,
                key,
                || self.clock.now_ms(),
                |v| caller(|| read(v)),
            )
        })
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        self.guarded("read", || {
            let kv = self.kv_reader()?;
            keys.iter()
                .map(|k| read_live(&kv, k, || self.clock.now_ms()))
                .collect()
        })
    }

    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        self.guarded("read", || self.range_now(key, &req))
    }

    async fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        let (read, next) = self.guarded("read", || {
            self.range_values_with_now(key, &req, |m, v| (m.to_member(), v.map(<[u8]>::to_vec)))
        })?;
        let (members, values) = read.into_iter().unzip();
        Ok((RangeResult { members, next }, values))
    }

    async fn range_values_with<T, F>(
        &self,
        key: &str,
        req: RangeRequest,
        read: F,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)>
    where
        T: Send,
        F: FnMut(MemberRef<'_>, Option<&[u8]>) -> T + Send,
    {
        let mut read = read;
        self.guarded("read", || {
            self.range_values_with_now(key, &req, |m, v| caller(|| read(m, v)))
        })
    }

    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        self.guarded("read", || self.get_via_now(key))
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
        let mut read = read;
        self.guarded("read", || {
            self.range_keys_now(
                prefix,
                |k| caller(|| keep(k)),
                &req,
                |k, v| caller(|| read(k, v)),
            )
        })
    }

    /// One write transaction for read, plan and commit, except on a
    /// current-thread runtime, where the write goes to the blocking pool
    /// (which needs a `'static` plan) and the optimistic protocol applies.
    async fn commit_after_read<T, F>(&self, keys: &[String], plan: F) -> Result<(Outcome, T)>
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        let blocked = crate::exec::block_here(plan, |plan| {
            self.guarded("write", || self.commit_after_read_blocking(keys, plan))
        });
        match blocked {
            Ok(done) => done,
            Err(plan) => commit_after_read_optimistic(self, keys, plan).await,
        }
    }

    async fn collection_len(&self, key: &str) -> Result<u64> {
        self.guarded("read", || self.collection_len_now(key))
    }

    async fn now_ms(&self) -> Result<u64> {
        self.guarded("read the clock of", || Ok(self.clock.now_ms()))
    }

    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        let after = match cursor {
            Some(c) => Some(String::from_utf8(c).map_err(|_| Error::InvalidCursor {
                reason: "it is not a key of this store".to_owned(),
            })?),
            None => None,
        };
        self.guarded("read", || self.scan_now(prefix, after.as_deref(), count))
    }

    /// A read transaction kept open: redb keeps the pages it sees until
    /// the view is dropped, so a long walk holds back the reuse of the
    /// pages written meanwhile.
    async fn snapshot(&self) -> Result<Option<Self>> {
        let txn = self.guarded("read", || {
            self.db.begin_read().map_err(e("begin a read transaction"))
        })?;
        Ok(Some(RedbStore {
            pinned: Some(Arc::new(txn)),
            ..self.clone()
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
        wait: std::time::Duration,
    ) -> Result<FeedPage> {
        self.signal
            .read_or_wait(wait, || {
                self.guarded("read a change feed", || self.feed_page(feed, after, limit))
            })
            .await
    }

    async fn feed_last(&self, feed: &str) -> Result<Option<FeedPosition>> {
        self.guarded("read a change feed", || self.feed_newest(feed))
    }

    async fn time_to_live(&self, key: &str) -> Result<Option<std::time::Duration>> {
        self.guarded("read", || {
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
        })
    }
}
