//! The write transaction of [`RedbStore`]: a batch's conditions checked
//! and its operations applied on tables opened once.

use std::sync::atomic::Ordering;

use redb::{ReadableTable, Table, WriteTransaction};

use super::read::read_live;
use super::{KV, MEMBERS, RedbStore, SET_TTL, after_collection, e, join_value, live, split_value};
use crate::error::Result;
use crate::store::batch::{Batch, Op, Outcome};
use crate::store::clock::deadline;
use crate::store::counter::{add_to_counter, parse_counter};
use crate::store::{Expect, Held, check, encode_entry};

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
    /// caller commits the transaction then).
    pub(super) fn commit_batch(&mut self, batch: &Batch) -> Result<Outcome> {
        let outcome = self.check(batch)?;
        if outcome.is_applied() {
            self.apply_all(batch)?;
        }
        Ok(outcome)
    }

    /// Checks `batch` against what the transaction holds now: its failed
    /// condition, or an error when it does not fit its keys (nothing is
    /// written either way).
    pub(super) fn check(&mut self, batch: &Batch) -> Result<Outcome> {
        let expires = batch.ops().iter().any(|op| matches!(op, Op::Expire { .. }));
        if expires && self.set_ttl.is_none() {
            self.set_ttl = Some(
                self.txn
                    .open_table(SET_TTL)
                    .map_err(e("open table set_ttl"))?,
            );
        }
        check(batch, |k, expect| self.held(k, expect))
    }

    /// Applies every operation of a batch [`check`](Self::check) accepted.
    /// An error leaves the transaction half written: it must not commit.
    pub(super) fn apply_all(&mut self, batch: &Batch) -> Result<()> {
        for op in batch.ops() {
            self.apply(op)?;
        }
        if !batch.appends().is_empty() {
            super::feed::append_all(self.txn, batch.appends(), self.now)?;
        }
        Ok(())
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
                let removed = self.kv.remove(key.as_str()).map_err(e("delete a value"))?;
                // A key that held a live value holds no collection (a live
                // key never holds both): only look for one otherwise.
                let held_value = removed.is_some_and(|old| {
                    split_value(old.value()).is_some_and(|(exp, _)| live(exp, self.now))
                });
                if !held_value {
                    self.clear_collection(key)?;
                }
            }
            Op::Incr { key, delta, .. } => {
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

    /// What `key` holds now, looked up first in the table where the batch
    /// expects it (a live key is never in both).
    fn held(&mut self, key: &str, expect: Expect) -> Result<Held> {
        let now = self.now;
        if expect == Expect::Collection && self.collection_live(key)? {
            return Ok(Held::Collection);
        }
        if let Some(v) = read_live(&self.kv, key, || now)? {
            Ok(Held::Value(v))
        } else if expect == Expect::Value && self.collection_live(key)? {
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
