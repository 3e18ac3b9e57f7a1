//! Writes of one record or many: create, update and modify (read, change,
//! commit), create-or-replace, a fallible modify and an all-or-nothing bulk
//! create. Each is one atomic commit built by the one
//! `transition`; `delete`
//! is the mirror of create.
//!
//! Layer: roles: `impl Engine` blocks above
//! `transition`.

use std::collections::HashMap;

use crate::engine::entity::{self, ClaimFact, Entity, Facts};
use crate::engine::on_delete;
use crate::engine::receipt::{Lifetime, stored_from};
use crate::engine::relation::ParentFact;
use crate::engine::repo::{Engine, MAX_ATTEMPTS, backoff};
use crate::engine::transition::{Checked, ReceiptMove, Upkeep, transition};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome, Planned};

/// What the condition at one index of a bulk batch guards.
enum Guard {
    /// The record at this position is absent.
    Record(usize),
    /// The record at this position has no expiry receipt left by an
    /// expired record at its key.
    Receipt(usize),
    /// The record at this position may take this claim.
    Claim(usize, ClaimFact),
    /// The parent the record at this position names exists.
    Parent(usize, ParentFact),
}

/// Why one attempt of `create_many` asks for another.
enum Retry {
    /// The record at this position met the receipt of an expired record at
    /// its key: sweep it first.
    Sweep(usize),
    /// A parent's condition failed while the parent is there (another
    /// unfinished write held it).
    Again,
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// What the failed condition `index` of a write means: a parent that
    /// does not exist, or a unique value another record holds; `None` when
    /// it is neither (another write changed what this one read: retry). A
    /// parent is read again first: on a Redis Cluster a condition on a key
    /// another unfinished write holds may fail while the parent is there.
    pub(crate) async fn refusal(
        &self,
        index: usize,
        parents: &[(usize, ParentFact)],
        checked: &Checked,
    ) -> Result<Option<Error>> {
        if let Some((_, p)) = parents.iter().find(|(i, _)| *i == index) {
            if self.store().get(&p.key).await?.is_some() {
                return Ok(None);
            }
            return Ok(Some(on_delete::parent_error(E::META.name, p)));
        }
        Ok(checked.claim(index).map(|c| self.unique_violation(c)))
    }

    /// What a write does once its commit is answered: an applied one takes
    /// a sweep step and returns `done`; a failed one returns its refusal,
    /// or waits its backoff and answers `None`, to be tried again.
    async fn settle<T>(
        &self,
        outcome: Outcome,
        attempt: u32,
        parents: &[(usize, ParentFact)],
        checked: &Checked,
        done: T,
    ) -> Result<Option<T>> {
        match outcome {
            Outcome::Applied => {
                self.sweep_step().await;
                Ok(Some(done))
            }
            Outcome::Failed { index } => match self.refusal(index, parents, checked).await? {
                Some(e) => Err(e),
                None => {
                    backoff(attempt).await;
                    Ok(None)
                }
            },
        }
    }
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Stores a new record with all its derived entries, in one commit.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "create", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| value.record_key()))))]
    pub async fn create(&self, value: &E) -> Result<()> {
        let key = value.record_key();
        let parents = value.parents();
        on_delete::refuse_own_parent(E::META.name, &key, &parents)?;
        let facts = Facts::of(value);
        let mut encoded = Some(entity::encode(&key, value)?);
        for attempt in 0..MAX_ATTEMPTS {
            let bytes = match encoded.take() {
                Some(b) => b,
                None => entity::encode(&key, value)?,
            };
            let (ttl, due) = self.lifetime_now(&key, value).await?;
            let mut b = Batch::new();
            b.absent(key.as_str()).put(key.as_str(), bytes, ttl);
            Self::require_no_leftover(&mut b, &key, due);
            let receipt = ReceiptMove::Record { old: None, due };
            let checked = transition(
                Upkeep::of::<E, S>(self.store()),
                &mut b,
                &key,
                None,
                Some(&facts),
                ttl,
                receipt,
            )?;
            let parents = on_delete::require_parents(&mut b, &[], parents.clone());
            match self.commit(b).await? {
                Outcome::Failed { index: 0 } => {
                    return Err(Error::AlreadyExists {
                        entity: E::META.name,
                        key,
                    });
                }
                // The receipt of an earlier record at this key, expired but
                // not yet swept: sweep it, then create.
                Outcome::Failed { index } if index < checked.first => {
                    Box::pin(self.expire_leftover(&key)).await?;
                    backoff(attempt).await;
                }
                outcome => {
                    if let Some(()) = self
                        .settle(outcome, attempt, &parents, &checked, ())
                        .await?
                    {
                        return Ok(());
                    }
                }
            }
        }
        Err(Self::gave_up(key))
    }

    /// Reads the record at `key`, lets `change` produce the new image, and
    /// commits the move atomically. The store chooses how
    /// ([`Store::commit_after_read`]): in one write transaction where it has
    /// a single writer, optimistically elsewhere, retrying when another
    /// writer got there first.
    pub(crate) async fn read_modify_write(
        &self,
        key: &str,
        mut change: impl FnMut(E) -> Result<E> + Send,
    ) -> Result<E> {
        let keys = Self::stored_keys(key);
        for attempt in 0..MAX_ATTEMPTS {
            let change = &mut change;
            let (outcome, (new_value, checked, parents)) = self
                .commit_after_read(&keys, |values, now| {
                    let mut stored = stored_from::<E>(key, values);
                    let Some(old_bytes) = stored.bytes.take() else {
                        return Err(Error::NotFound {
                            entity: E::META.name,
                            key: key.to_owned(),
                        });
                    };
                    let (stored_version, old_value) = entity::decode_at::<E>(key, &old_bytes)?;
                    let mut old = Facts::of(&old_value);
                    old.retain_since(stored_version);
                    let mut old_value_parents = old_value.parents();
                    old_value_parents.retain(|p| p.since <= stored_version);
                    let new_value = change(old_value)?;
                    if new_value.record_key() != key {
                        return Err(Error::InvalidKey {
                            key: key.to_owned(),
                            reason: "the change alters the primary key; create a record under the new key and delete the old one instead".to_owned(),
                        });
                    }
                    let new_parents = new_value.parents();
                    on_delete::refuse_own_parent(E::META.name, key, &new_parents)?;
                    let new = Facts::of(&new_value);
                    let bytes = entity::encode(key, &new_value)?;
                    let (ttl, due) = Lifetime::of(&new_value).at_now(key, now)?;
                    let mut b = Batch::new();
                    b.equals(key, old_bytes).put(key, bytes, ttl);
                    let receipt = ReceiptMove::Record {
                        old: stored.receipt.as_ref(),
                        due,
                    };
                    let checked =
                        transition(Upkeep::of::<E, S>(self.store()), &mut b, key, Some(&old), Some(&new), ttl, receipt)?;
                    let parents =
                        on_delete::require_parents(&mut b, &old_value_parents, new_parents);
                    Ok(Planned::Commit(b, (new_value, checked, parents)))
                })
                .await?;
            if let Some(v) = self
                .settle(outcome, attempt, &parents, &checked, new_value)
                .await?
            {
                return Ok(v);
            }
        }
        Err(Self::gave_up(key))
    }

    /// Replaces a stored record; indexes and counters move atomically.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "update", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| value.record_key()))))]
    pub async fn update(&self, value: &E) -> Result<()> {
        let key = value.record_key();
        self.read_modify_write(&key, |_| Ok(value.clone())).await?;
        Ok(())
    }

    /// Read-modify-write with optimistic retry; `f` may run more than once.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "modify", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| key.to_owned()))))]
    pub async fn modify(&self, key: &str, mut f: impl FnMut(&mut E) + Send) -> Result<E> {
        self.read_modify_write(key, |mut v| {
            f(&mut v);
            Ok(v)
        })
        .await
    }

    /// Stores `value`, creating it or replacing the stored record; its
    /// claims, collection members and counters move in the same commit.
    /// Returns `true` when it created the record. Retries while other
    /// writers change the record, then fails with [`Error::Conflict`].
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "upsert", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| value.record_key()))))]
    pub async fn upsert(&self, value: &E) -> Result<bool> {
        let key = value.record_key();
        let parents = value.parents();
        on_delete::refuse_own_parent(E::META.name, &key, &parents)?;
        let bytes = entity::encode(&key, value)?;
        let new = Facts::of(value);
        let keys = Self::stored_keys(&key);
        for attempt in 0..MAX_ATTEMPTS {
            let (outcome, planned) = self
                .commit_after_read(&keys, |values, now| {
                    let mut stored = stored_from::<E>(&key, values);
                    let mut b = Batch::new();
                    let mut had = Vec::new();
                    let old = match stored.bytes.take() {
                        // An expired record's receipt: sweep it, then write.
                        None if stored.receipt.is_some() => return Ok(Planned::Skip(None)),
                        None => {
                            b.absent(key.as_str());
                            None
                        }
                        Some(old_bytes) => {
                            let (version, old_value) = entity::decode_at::<E>(&key, &old_bytes)?;
                            b.equals(key.as_str(), old_bytes);
                            had = old_value.parents();
                            had.retain(|p| p.since <= version);
                            Some(Facts::stored(&old_value, version))
                        }
                    };
                    let (ttl, due) = Lifetime::of(value).at_now(&key, now)?;
                    b.put(key.as_str(), bytes.clone(), ttl);
                    let receipt = ReceiptMove::Record {
                        old: stored.receipt.as_ref(),
                        due,
                    };
                    let checked = transition(
                        Upkeep::of::<E, S>(self.store()),
                        &mut b,
                        &key,
                        old.as_ref(),
                        Some(&new),
                        ttl,
                        receipt,
                    )?;
                    let parents = on_delete::require_parents(&mut b, &had, parents.clone());
                    Ok(Planned::Commit(b, Some((old.is_none(), checked, parents))))
                })
                .await?;
            let Some((created, checked, parents)) = planned else {
                Box::pin(self.expire_leftover(&key)).await?;
                continue;
            };
            if let Some(c) = self
                .settle(outcome, attempt, &parents, &checked, created)
                .await?
            {
                return Ok(c);
            }
        }
        Err(Self::gave_up(key))
    }

    /// Read-modify-write whose change can fail: `f` edits the record or
    /// returns an error, which comes back as is, with nothing written.
    /// Store errors come back converted into `X`. `f` may run more than
    /// once (optimistic retry).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "try_modify", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| key.to_owned()))))]
    pub async fn try_modify<X>(
        &self,
        key: &str,
        mut f: impl FnMut(&mut E) -> Result<(), X> + Send,
    ) -> Result<E, X>
    where
        X: From<Error> + Send,
    {
        let mut refused: Option<X> = None;
        let outcome = self
            .read_modify_write(key, |mut v| match f(&mut v) {
                Ok(()) => Ok(v),
                Err(x) => {
                    refused = Some(x);
                    // Stops the write; the caller's error replaces it below.
                    Err(Error::InvalidKey {
                        key: key.to_owned(),
                        reason: "the change was refused".to_owned(),
                    })
                }
            })
            .await;
        match (refused, outcome) {
            (Some(x), _) => Err(x),
            (None, outcome) => outcome.map_err(X::from),
        }
    }

    /// Creates every record of `values` in one commit, or none: a record
    /// whose key is stored (or repeated in `values`), or whose unique value
    /// is taken (or repeated), fails the whole batch with [`Error::Bulk`]
    /// naming it.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "create_many", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn create_many(&self, values: &[E]) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        for attempt in 0..MAX_ATTEMPTS {
            match self.create_many_once(values).await? {
                Some(Retry::Sweep(index)) => {
                    Box::pin(self.expire_leftover(&values[index].record_key())).await?;
                    backoff(attempt).await;
                }
                Some(Retry::Again) => backoff(attempt).await,
                None => return Ok(()),
            }
        }
        Err(Self::gave_up(values[0].record_key()))
    }

    /// One attempt of `create_many`: `Some` when another is needed.
    async fn create_many_once(&self, values: &[E]) -> Result<Option<Retry>> {
        let all = E::all_key();
        let mut b = Batch::new();
        let mut guards = Vec::new();
        let mut seen_keys: HashMap<String, usize> = HashMap::new();
        let mut seen_claims: HashMap<String, usize> = HashMap::new();
        for (index, value) in values.iter().enumerate() {
            let key = value.record_key();
            let bulk = |source: Error| Error::Bulk {
                index,
                key: key.clone(),
                source: Box::new(source),
            };
            if let Some(first) = seen_keys.insert(key.clone(), index) {
                return Err(bulk(Error::InvalidBatch {
                    key: key.clone(),
                    reason: format!("the record at index {first} has the same key"),
                }));
            }
            let parents = value.parents();
            on_delete::refuse_own_parent(E::META.name, &key, &parents).map_err(bulk)?;
            let facts = Facts::of(value);
            for claim in &facts.claims {
                if seen_claims.insert(claim.key.clone(), index).is_some() {
                    return Err(bulk(self.unique_violation(claim)));
                }
            }
            let bytes = entity::encode(&key, value).map_err(bulk)?;
            let lifetime = Lifetime::of(value);
            let (ttl, due) = if lifetime.expires() {
                let now = self.store().now_ms().await?;
                lifetime.at_now(&key, now).map_err(bulk)?
            } else {
                (None, None)
            };
            b.absent(key.as_str()).put(key.as_str(), bytes, ttl);
            guards.push(Guard::Record(index));
            Self::require_no_leftover(&mut b, &key, due);
            let receipt = ReceiptMove::Record { old: None, due };
            let checked = transition(
                Upkeep::of::<E, S>(self.store()),
                &mut b,
                &key,
                None,
                Some(&facts),
                ttl,
                receipt,
            )
            .map_err(bulk)?;
            // The receipt's condition, between the record's and the claims'.
            while guards.len() < checked.first {
                guards.push(Guard::Receipt(index));
            }
            guards.extend(checked.claims.into_iter().map(|c| Guard::Claim(index, c)));
            for (_, p) in on_delete::require_parents(&mut b, &[], parents) {
                guards.push(Guard::Parent(index, p));
            }
        }
        let failed = match self.commit(b).await? {
            Outcome::Applied => {
                self.sweep_step().await;
                return Ok(None);
            }
            Outcome::Failed { index } => guards.get(index),
        };
        let (index, source) = match failed {
            Some(Guard::Record(i)) => (
                *i,
                Error::AlreadyExists {
                    entity: E::META.name,
                    key: values[*i].record_key(),
                },
            ),
            Some(Guard::Receipt(i)) => return Ok(Some(Retry::Sweep(*i))),
            Some(Guard::Claim(i, claim)) => (*i, self.unique_violation(claim)),
            Some(Guard::Parent(i, p)) => {
                if self.store().get(&p.key).await?.is_some() {
                    return Ok(Some(Retry::Again));
                }
                (*i, on_delete::parent_error(E::META.name, p))
            }
            None => {
                return Err(Error::InvalidBatch {
                    key: all,
                    reason: "the store reported a failed condition the batch does not have"
                        .to_owned(),
                });
            }
        };
        Err(Error::Bulk {
            index,
            key: values[index].record_key(),
            source: Box::new(source),
        })
    }
}
