//! The write transaction of [`RedbStore`]: a batch's conditions checked
//! and its operations applied on tables opened once.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use redb::{ReadableTable, Table, WriteTransaction};

use super::read::{read_live, with_live};
use super::{
    KV, MARKER, MEMBERS, RedbStore, SET_TTL, after_collection, e, is_marker, join_value, live,
    split_value,
};
use crate::error::Result;
use crate::store::batch::{Batch, Op, Outcome};
use crate::store::clock::deadline;
use crate::store::counter::{add_to_counter, counter_value, parse_counter};
use crate::store::{Expect, Held, check, encode_entry};

/// What the check of a batch found in a key's `kv` cell, kept so that its
/// operations need not look again.
#[derive(Clone, Copy)]
enum Cell {
    /// No cell, or an expired value.
    Absent,
    /// A live value: its expiry and, when it is one, its counter.
    Value { exp: u64, counter: Option<i64> },
    /// The marker of a collection (with members or, after removals,
    /// without).
    Marker,
}

/// Batches of up to this many keys or operations are searched by a walk;
/// larger ones (`create_many`) through a hash map.
const WALK: usize = 16;

/// The cells a batch's check found, by key; an operation that rewrites a
/// key forgets it (or records what it left), so a later one of the same
/// batch looks again.
#[derive(Default)]
struct Seen<'b> {
    cells: Vec<(&'b str, Option<Cell>)>,
    /// Where each key is in `cells`, once there are more than [`WALK`].
    index: HashMap<&'b str, usize>,
}

impl<'b> Seen<'b> {
    fn position(&self, key: &str) -> Option<usize> {
        if self.index.is_empty() {
            self.cells.iter().position(|(k, _)| *k == key)
        } else {
            self.index.get(key).copied()
        }
    }

    fn get(&self, key: &str) -> Option<Cell> {
        self.position(key).and_then(|i| self.cells[i].1)
    }

    fn set(&mut self, key: &'b str, cell: Option<Cell>) {
        if let Some(i) = self.position(key) {
            self.cells[i].1 = cell;
            return;
        }
        self.cells.push((key, cell));
        if !self.index.is_empty() {
            self.index.insert(key, self.cells.len() - 1);
        } else if self.cells.len() > WALK {
            self.index = self
                .cells
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (*k, i))
                .collect();
        }
    }
}

/// Whether an operation of `batch` writes a value at `key`: a walk over a
/// small batch, a set built once for a large one.
struct ValueKeys<'b> {
    batch: &'b Batch,
    set: Option<HashSet<&'b str>>,
}

impl ValueKeys<'_> {
    fn writes(&mut self, key: &str) -> bool {
        let writes_value = |op: &Op| matches!(op, Op::Put { .. } | Op::Incr { .. });
        let ops = self.batch.ops();
        if ops.len() <= WALK {
            return ops.iter().any(|op| writes_value(op) && op.key() == key);
        }
        self.set
            .get_or_insert_with(|| {
                ops.iter()
                    .filter(|op| writes_value(op))
                    .map(Op::key)
                    .collect()
            })
            .contains(key)
    }
}

/// The tables of one write transaction, opened once, and what a batch
/// needs to check and apply its operations.
pub(super) struct Writer<'t> {
    txn: &'t WriteTransaction,
    kv: Table<'t, &'static str, &'static [u8]>,
    members: Table<'t, (&'static str, &'static [u8]), ()>,
    /// Open only when some collection has (or gets) an expiry.
    set_ttl: Option<Table<'t, &'static str, u64>>,
    store: &'t RedbStore,
    now: u64,
}

impl<'t> Writer<'t> {
    pub(super) fn open(txn: &'t WriteTransaction, store: &'t RedbStore, now: u64) -> Result<Self> {
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

    /// The live value at `key`, as this transaction sees it.
    pub(super) fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let now = self.now;
        read_live(&self.kv, key, || now)
    }

    /// Checks `batch` and, when every condition holds, applies it (the
    /// caller commits the transaction then). The inner result is the
    /// batch's own answer: its failed condition, or an error when it does
    /// not fit its keys (nothing of it is written either way). The outer
    /// error breaks the transaction: a write failed half way, so it must
    /// not commit.
    pub(super) fn commit_batch(&mut self, batch: &Batch) -> Result<Result<Outcome>> {
        let mut seen = Seen::default();
        let outcome = match self.check(batch, &mut seen) {
            Ok(outcome) => outcome,
            Err(refused) => return Ok(Err(refused)),
        };
        if outcome.is_applied() {
            for op in batch.ops() {
                self.apply(op, &mut seen)?;
            }
            if !batch.appends().is_empty() {
                super::feed::append_all(self.txn, batch.appends(), self.now)?;
            }
        }
        Ok(Ok(outcome))
    }

    /// Checks `batch` against what the transaction holds now, keeping in
    /// `seen` what each key's cell held.
    fn check<'b>(&mut self, batch: &'b Batch, seen: &mut Seen<'b>) -> Result<Outcome> {
        let expires = batch.ops().iter().any(|op| matches!(op, Op::Expire { .. }));
        if expires && self.set_ttl.is_none() {
            self.set_ttl = Some(
                self.txn
                    .open_table(SET_TTL)
                    .map_err(e("open table set_ttl"))?,
            );
        }
        let mut value_keys = ValueKeys { batch, set: None };
        check(batch, |k, expect| {
            let (cell, held) = self.held(&mut value_keys, k, expect)?;
            seen.set(k, Some(cell));
            Ok(held)
        })
    }

    fn apply<'b>(&mut self, op: &'b Op, seen: &mut Seen<'b>) -> Result<()> {
        match op {
            Op::Put { key, value, ttl } => {
                let exp = ttl.map_or(0, |t| deadline(&*self.store.clock, t).max(1));
                self.write_value(key, &join_value(exp, value))?;
                seen.set(key, None);
            }
            Op::Delete { key } => {
                let removed = self.kv.remove(key.as_str()).map_err(e("delete a value"))?;
                // Only a key with a marker can have members.
                if removed.is_some_and(|old| is_marker(old.value())) {
                    self.clear_collection(key)?;
                }
                seen.set(key, Some(Cell::Absent));
            }
            Op::DeleteIfEquals { key, value } => {
                let now = self.now;
                // `check` refused a collection here: a value or nothing.
                if with_live(&self.kv, key, || now, |v| v == Some(value.as_slice()))? {
                    self.kv.remove(key.as_str()).map_err(e("delete a value"))?;
                    seen.set(key, Some(Cell::Absent));
                }
            }
            Op::Incr { key, delta, .. } => {
                let (cur, exp) = match seen.get(key) {
                    Some(Cell::Absent | Cell::Marker) => (0, 0),
                    Some(Cell::Value {
                        exp,
                        counter: Some(cur),
                    }) => (cur, exp),
                    Some(Cell::Value { counter: None, .. }) | None => self.counter(key)?,
                };
                let next = add_to_counter(key, cur, *delta)?.to_string();
                self.write_value(key, &join_value(exp, next.as_bytes()))?;
                seen.set(key, None);
            }
            Op::Add { key, sort, member } => {
                let marked = match seen.get(key) {
                    Some(Cell::Marker) => true,
                    // Nothing, or an expired value: check refused a live one.
                    Some(Cell::Absent | Cell::Value { .. }) => false,
                    None => self.has_marker(key)?,
                };
                if !marked {
                    self.kv
                        .insert(key.as_str(), MARKER)
                        .map_err(e("mark a collection"))?;
                }
                seen.set(key, Some(Cell::Marker));
                self.sweep_collection(key)?;
                let entry = encode_entry(sort, member);
                // Writes add only members that were not there, so no
                // look-up first.
                self.members
                    .insert((key.as_str(), entry.as_slice()), ())
                    .map_err(e("add a member"))?;
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
                    seen.set(key, None);
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

    /// What `key` holds now, and what its `kv` cell held, from one
    /// look-up in `kv` (a key that has members has a marker there). A
    /// marker's members are looked up only where the answer decides
    /// something: for a condition, a put or an increment, or for a
    /// collection operation whose batch later writes a value at the key
    /// (for an add, or a remove or trim with nothing after it, a collection
    /// that has become empty answers the same as nothing).
    fn held(
        &mut self,
        value_keys: &mut ValueKeys<'_>,
        key: &str,
        expect: Expect,
    ) -> Result<(Cell, Held)> {
        let cell = match self.kv.get(key).map_err(e("read a value"))? {
            None => return Ok((Cell::Absent, Held::Nothing)),
            Some(raw) => {
                let raw = raw.value();
                if is_marker(raw) {
                    None
                } else {
                    match split_value(raw) {
                        Some((exp, v)) if live(exp, self.now) => Some((exp, v.to_vec())),
                        Some(_) => return Ok((Cell::Absent, Held::Nothing)),
                        None => {
                            return Err(crate::error::Error::decode(
                                key,
                                "the redb cell is shorter than its header",
                                None,
                            ));
                        }
                    }
                }
            }
        };
        if let Some((exp, v)) = cell {
            let counter = counter_value(&v);
            return Ok((Cell::Value { exp, counter }, Held::Value(v)));
        }
        let decides = expect == Expect::Value || value_keys.writes(key);
        let held = if !decides || self.collection_live(key)? {
            Held::Collection
        } else {
            Held::Nothing
        };
        Ok((Cell::Marker, held))
    }

    /// Whether `key`'s `kv` cell is a collection marker.
    fn has_marker(&self, key: &str) -> Result<bool> {
        Ok(self
            .kv
            .get(key)
            .map_err(e("read a value"))?
            .is_some_and(|raw| is_marker(raw.value())))
    }

    /// The live counter at `key` and its expiry, read from the table.
    fn counter(&self, key: &str) -> Result<(i64, u64)> {
        let Some(raw) = self.kv.get(key).map_err(e("read a counter"))? else {
            return Ok((0, 0));
        };
        match split_value(raw.value()) {
            Some((exp, v)) if live(exp, self.now) => Ok((parse_counter(key, v)?, exp)),
            _ => Ok((0, 0)),
        }
    }

    /// Writes a value cell at `key`; a collection marker it replaces takes
    /// its collection with it (check let the write through only because
    /// the collection is empty or expired).
    fn write_value(&mut self, key: &str, cell: &[u8]) -> Result<()> {
        let replaced = self
            .kv
            .insert(key, cell)
            .map_err(e("write a value"))?
            .is_some_and(|old| is_marker(old.value()));
        if replaced {
            self.clear_collection(key)?;
        }
        Ok(())
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
        // The first entry at or after `(key, [])` is one of `key`'s, or of a
        // later collection.
        let mut it = self
            .members
            .range::<(&str, &[u8])>((key, &[][..])..)
            .map_err(e("scan a collection"))?;
        match it.next() {
            Some(item) => Ok(item.map_err(e("scan a collection"))?.0.value().0 == key),
            None => Ok(false),
        }
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
