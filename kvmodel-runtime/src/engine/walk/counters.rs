//! The last phase of a walk: every counter met compared with what the
//! records add up to, judged only where the walk's basis proves the
//! measurement exact, and repaired by the difference. A counter that keeps
//! the amounts of records that are gone (`keep:`) is compared with that
//! total as a lower bound: at or above it is reported as kept, below it is
//! drift that a repair raises to it, and nothing lowers it.

use crate::engine::def::EntityDef;
use crate::engine::receipt::StoredReceipt;
use crate::engine::report::{CounterDrift, KeptCounter, Unjudged, Unsettled};
use crate::engine::shards;
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome};
use crate::store::counter::{STAMP_AFTERLIFE, read_counter, stamp_key, stamp_proves};

use super::{Basis, Phase, WalkState, Walker, about_the_record};
use crate::engine::repo::commit;

impl<'a, D: EntityDef, S: Store> Walker<'a, D, S> {
    /// A page of counters: each compared with what the records add up to
    /// and, repairing, adjusted by the difference — only where the walk's
    /// basis proves its measurement exact (see the module docs); the others
    /// are reported unsettled.
    pub(super) async fn counters(&self, state: &mut WalkState, page: usize) -> Result<()> {
        if state.basis == Basis::View && state.mixed {
            self.recount(state).await?;
        }
        let after = state
            .cursor
            .as_deref()
            .map(|c| String::from_utf8_lossy(c).into_owned());
        let batch: Vec<(String, i128)> = state
            .expected
            .iter()
            .filter(|(k, _)| after.as_ref().is_none_or(|a| k.as_str() > a.as_str()))
            .take(page)
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let keys: Vec<String> = batch.iter().map(|(k, _)| k.clone()).collect();
        // Every shard of every counter of the page, in one read: a sharded
        // counter is its shards together.
        let shard_keys: Vec<Vec<String>> = keys
            .iter()
            .map(|k| shards::keys(k, shards::shards_of(self.def, k)))
            .collect();
        let flat: Vec<String> = shard_keys.iter().flatten().cloned().collect();
        // On stamps, read them before the sizes and values too: a counter
        // in the middle of a write (a held lock on a cluster) or moved
        // between the two reads is not judged.
        let early = match state.basis {
            Basis::Stamps => Some(self.stamps_now(state, &flat).await?),
            _ => None,
        };
        // Link counts are measured against their collections' sizes, read
        // before the counters (and, on stamps, before the stamps).
        let mut sizes = Vec::with_capacity(keys.len());
        for key in &keys {
            sizes.push(match crate::engine::links::collection_of_count(key) {
                Some(c) => Some(i128::from(self.reader().collection_len(&c).await?)),
                None => None,
            });
        }
        let mut values = self.reader().get_many(&flat).await?.into_iter();
        let mut stamps = self.stamps_now(state, &flat).await?;
        if let Some(early) = early {
            for (now, before) in stamps.iter_mut().zip(early) {
                if *now != before {
                    *now = u64::MAX;
                }
            }
        }
        let mut stamps = stamps.into_iter();
        let trusted = self.stamps_trusted(state).await?;
        for (((key, want), shard_keys), size) in batch.iter().zip(&shard_keys).zip(sizes) {
            let want = size.unwrap_or(*want);
            let stamps: Vec<(String, u64)> = shard_keys
                .iter()
                .map(|k| stamp_key(k))
                .zip(stamps.by_ref())
                .collect();
            // The shards that hold a value, and their sum.
            let mut held = Vec::new();
            let mut bad = None;
            for (shard, bytes) in shard_keys.iter().zip(values.by_ref()) {
                let Some(bytes) = bytes else { continue };
                match read_counter(shard, &bytes) {
                    Ok(v) => held.push((shard.clone(), v)),
                    Err(e @ Error::NotACounter { .. }) => bad = bad.or(Some((shard.clone(), e))),
                    Err(e) => return Err(e),
                }
            }
            if let Some((shard, e)) = bad {
                state.drift.undecodable.push(Skipped::new(shard, e));
                continue;
            }
            let total = shards::total(&held);
            // A total no read can return is drift even when the records
            // add up to it.
            let readable = i64::try_from(total).is_ok();
            // A counter that keeps the amounts of records that are gone is
            // judged only against the lower bound the live records give.
            let at_least = size.is_none() && shards::keep_of(self.def, key).kept();
            if at_least && total >= want && readable {
                state.drift.kept.push(KeptCounter {
                    key: key.clone(),
                    at_least: want,
                    actual: i64::try_from(total).unwrap_or(i64::MAX),
                });
                continue;
            }
            if want == total && readable {
                continue;
            }
            let present: Vec<bool> = shard_keys
                .iter()
                .map(|k| held.iter().any(|(h, _)| h == k))
                .collect();
            if let Some(why) = self.unjudged(state, trusted, &stamps, &present) {
                state.drift.unsettled.push(Unsettled {
                    key: key.clone(),
                    why,
                });
                continue;
            }
            // A sum no counter can hold is reported, not repaired.
            if state.repair && i64::try_from(want).is_ok() {
                let done = self
                    .repair_counter(state, shard_keys, (want, total), &held, &stamps)
                    .await?;
                if !done.is_applied() {
                    // Something moved it after the measurement.
                    state.drift.unsettled.push(Unsettled {
                        key: key.clone(),
                        why: Unjudged::Moved,
                    });
                    continue;
                }
            }
            let actual =
                i64::try_from(total).unwrap_or(if total < 0 { i64::MIN } else { i64::MAX });
            state.drift.counters.push(CounterDrift {
                key: key.clone(),
                expected: want,
                actual,
                at_least,
            });
        }
        match keys.last() {
            Some(last) if keys.len() == page => state.cursor = Some(last.as_bytes().to_vec()),
            _ => {
                state.phase = Phase::Done;
                state.cursor = None;
                state.expected.clear();
                state.pending.clear();
                state.stamps.clear();
                state.stamps_at = None;
                state.drift.tidy();
            }
        }
        Ok(())
    }

    /// Adds up the counter amounts of every record again, through this
    /// walker's view: what a walk resumed by another walker (whose records
    /// were read through other views) does before it judges counters, so
    /// that they are judged at one instant. Only counting: what the records
    /// imply otherwise was judged as they were walked.
    async fn recount(&self, state: &mut WalkState) -> Result<()> {
        for total in state.expected.values_mut() {
            *total = 0;
        }
        state.unreadable = 0;
        let mut cursor = None;
        loop {
            let (keys, next) = self.discovery_page(cursor, 500).await?;
            let (values, receipts) = self.read_records(&keys).await?;
            for ((key, bytes), receipt) in keys.iter().zip(values).zip(receipts) {
                let facts = match (bytes, receipt) {
                    (Some(bytes), _) => match self.def.stored_facts(key, &bytes) {
                        Ok((_, facts)) => facts,
                        Err(e) if about_the_record(&e) => {
                            state.unreadable += 1;
                            continue;
                        }
                        Err(e) => return Err(e),
                    },
                    (None, Some(StoredReceipt { receipt: Ok(r), .. })) => {
                        self.count_receipt(state, &r.facts);
                        continue;
                    }
                    (
                        None,
                        Some(StoredReceipt {
                            receipt: Err(_), ..
                        }),
                    ) => {
                        state.unreadable += 1;
                        continue;
                    }
                    (None, None) => continue,
                };
                state.count(&facts);
            }
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        state.view = self.view_id();
        state.mixed = false;
        Ok(())
    }

    /// On [`Basis::Stamps`], reads the stamps of every shard of every
    /// counter met so far: after the inward phase (whose repairs move
    /// counters: a link entry removed with its count) and before the first
    /// record.
    pub(crate) async fn read_stamps(&self, state: &mut WalkState) -> Result<()> {
        if state.basis != Basis::Stamps {
            return Ok(());
        }
        let shards: Vec<String> = state
            .expected
            .keys()
            .flat_map(|k| shards::keys(k, shards::shards_of(self.def, k)))
            .collect();
        state.stamps_at = Some(self.store.now_ms().await?);
        for page in shards.chunks(1_000) {
            if let Some(stamps) = self.store.change_stamps(page).await? {
                for (shard, stamp) in page.iter().zip(stamps) {
                    state.stamps.insert(stamp_key(shard), stamp);
                }
            }
        }
        Ok(())
    }

    /// The stamps of the counter shards at `keys` as they are now: on
    /// [`Basis::Stamps`] the store's change stamps (read after the values);
    /// on a view, the stamps earlier repairs left (read through the view);
    /// otherwise zeros.
    async fn stamps_now(&self, state: &WalkState, keys: &[String]) -> Result<Vec<u64>> {
        let stamps = match state.basis {
            Basis::Stamps => self.store.change_stamps(keys).await?,
            Basis::View => {
                let stamp_keys: Vec<String> = keys.iter().map(|k| stamp_key(k)).collect();
                let values = self.reader().get_many(&stamp_keys).await?;
                Some(crate::store::counter::stamps_of(values))
            }
            _ => None,
        };
        Ok(stamps.unwrap_or_else(|| vec![0; keys.len()]))
    }

    /// Whether the stamps read before the first record can still prove
    /// that nothing moved a counter: on [`Basis::Stamps`], until half of
    /// [`STAMP_AFTERLIFE`] after they were read (a stamp could otherwise
    /// have been removed with its counter, gone, and come back to the same
    /// number). A clock that reads more than a minute before the reading
    /// (another walker's, resuming) proves nothing either.
    async fn stamps_trusted(&self, state: &WalkState) -> Result<bool> {
        if state.basis != Basis::Stamps {
            return Ok(true);
        }
        let Some(at) = state.stamps_at else {
            return Ok(false);
        };
        let now = self.store.now_ms().await?;
        let half = u64::try_from(STAMP_AFTERLIFE.as_millis() / 2).unwrap_or(u64::MAX);
        Ok(now.saturating_add(60_000) >= at && now.saturating_sub(at) < half)
    }

    /// Why a counter that differs from its records cannot be judged, if it
    /// cannot: `trusted` whether the stamps read before the records still
    /// prove anything ([`stamps_trusted`](Self::stamps_trusted)), `stamps`
    /// its shards' stamps now, `present` whether each shard holds a value.
    fn unjudged(
        &self,
        state: &WalkState,
        trusted: bool,
        stamps: &[(String, u64)],
        present: &[bool],
    ) -> Option<Unjudged> {
        if state.unreadable > 0 {
            return Some(Unjudged::Unreadable);
        }
        match state.basis {
            Basis::View => None,
            Basis::Stamps => {
                // A stamp not read before the records was of a shard that
                // did not exist then: one that still does not was moved by
                // no write (a write would have made it).
                // A removed counter's stamp proves nothing (a counter made
                // again within its afterlife keeps it), and neither does
                // the mark of a counter a write holds (`u64::MAX`).
                let moved = !trusted
                    || stamps.iter().zip(present).any(|((k, now), present)| {
                        !stamp_proves(*now)
                            || match state.stamps.get(k) {
                                Some(before) => before != now,
                                None => *present,
                            }
                    });
                moved.then_some(Unjudged::Moved)
            }
            Basis::Neither | Basis::Unchosen => Some(Unjudged::Unmeasurable),
        }
    }

    /// Moves the counter whose shards are `shards` (of which `held` hold
    /// values) from `total` to `want`, conditional on its shards' stamps
    /// being `stamps` still: a concurrent repair (or, on stamps, a write) in
    /// between fails it, and the next walk measures again. A counter no
    /// record counts in is deleted, if it still holds what was measured; a
    /// sharded one is spread evenly over its shards, so that each stays
    /// within its share. On a view the repair raises the stamps itself (on
    /// stamps the store does).
    async fn repair_counter(
        &self,
        state: &WalkState,
        shards: &[String],
        (want, total): (i128, i128),
        held: &[(String, i64)],
        stamps: &[(String, u64)],
    ) -> Result<Outcome> {
        let mut b = Batch::new();
        for (stamp, n) in stamps {
            match n {
                0 => b.absent(stamp),
                n => b.equals(stamp, n.to_string().into_bytes()),
            };
        }
        // A link count whose record was deleted (and perhaps made again)
        // since the view lost its drift with it: its registry, as the view
        // holds it, must be unchanged.
        if state.basis == Basis::View
            && let [key] = shards
            && let Some(registry) = crate::engine::links::registry_of_count(key)
        {
            let seen = self.reader().get(&registry).await?;
            crate::engine::links::keep_as_read(&mut b, &registry, seen.as_ref());
        }
        if want == 0 {
            for (shard, v) in held {
                b.equals(shard, v.to_string().into_bytes()).delete(shard);
                if state.basis == Basis::View {
                    // Raised, not marked to expire: a walker may hold its
                    // view for longer than any afterlife.
                    b.incr(stamp_key(shard), 1);
                }
            }
            return commit(self.store, b).await;
        }
        if state.basis == Basis::View {
            // A shard the view holds that a writer deleted since (a link
            // count goes with its record) took its drift with it.
            for (shard, _) in held {
                b.present(shard);
            }
        }
        if let [key] = shards {
            b.incr_wide(key, want - total);
            if state.basis == Basis::View {
                b.incr(stamp_key(key), 1);
            }
        } else {
            let n = i128::try_from(shards.len()).unwrap_or(1).max(1);
            for (i, shard) in shards.iter().enumerate() {
                let target = want / n + if i == 0 { want % n } else { 0 };
                let now = held
                    .iter()
                    .find(|(k, _)| k == shard)
                    .map_or(0, |(_, v)| i128::from(*v));
                if target != now {
                    b.incr_wide(shard, target - now);
                    if state.basis == Basis::View {
                        b.incr(stamp_key(shard), 1);
                    }
                }
            }
        }
        commit(self.store, b).await
    }
}
