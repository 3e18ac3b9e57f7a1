//! [`TxRepo`]: one entity's records inside a [`Transaction`], each write
//! staged as a part with the upkeep the single writes give it.

use crate::engine::entity::{self, Entity, Facts};
use crate::engine::on_delete;
use crate::engine::receipt::{Stored, StoredReceipt, stored_from};
use crate::engine::relation::ParentFact;
use crate::engine::repo::Engine;
use crate::engine::transition::{ReceiptMove, Upkeep, transition};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::Batch;

use super::{Guard, Part, Transaction};

/// A repository's records inside a [`Transaction`]: reads recorded as
/// conditions of the commit, writes staged with their full upkeep.
pub struct TxRepo<'t, E, S> {
    pub(super) engine: Engine<E, S>,
    pub(super) tx: &'t Transaction<S>,
}

impl<E, S: std::fmt::Debug> std::fmt::Debug for TxRepo<'_, E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxRepo")
            .field("entity", &std::any::type_name::<E>())
            .field("tx", &self.tx)
            .finish()
    }
}

/// A write's time to live and receipt due time, and the store time they
/// were worked out at (all `None` for a record that does not expire).
#[derive(Default)]
struct Timed {
    ttl: Option<std::time::Duration>,
    due: Option<u64>,
    at: Option<u64>,
}

/// A record as the transaction read it.
struct Old<E> {
    bytes: Vec<u8>,
    value: E,
    facts: Facts,
    parents: Vec<ParentFact>,
}

impl<'t, E: Entity, S: Store> TxRepo<'t, E, S> {
    /// The records of `engine` inside `tx`.
    pub fn new(engine: &Engine<E, S>, tx: &'t Transaction<S>) -> Self {
        TxRepo {
            engine: engine.clone(),
            tx,
        }
    }

    /// The record at `key` (with its receipt) as the transaction sees it.
    async fn stored(&self, key: &str) -> Result<(Option<Old<E>>, Option<StoredReceipt>)> {
        let keys = Engine::<E, S>::stored_keys(key);
        let mut values = self.tx.read(E::META.name, &keys).await?;
        let mut attempt = 0;
        while matches!(values.as_slice(), [None, Some(_)]) {
            // The receipt of an expired record not yet swept: sweep it (its
            // entries go), then read again. A write must not go on from
            // that receipt, which would take its entries and counter
            // amounts over without undoing them; a sweep another write
            // kept from going through is tried again, as the single
            // writes do.
            if attempt == crate::engine::repo::MAX_ATTEMPTS {
                return Err(Engine::<E, S>::gave_up(key));
            }
            if !Box::pin(self.engine.expire_leftover(key)).await? {
                crate::engine::repo::backoff(attempt).await;
            }
            attempt += 1;
            self.tx.forget(&keys);
            values = self.tx.read(E::META.name, &keys).await?;
        }
        let Stored { bytes, receipt } = stored_from::<E>(key, values);
        let Some(bytes) = bytes else {
            return Ok((None, receipt));
        };
        let (version, value) = entity::decode_at::<E>(key, &bytes)?;
        let facts = Facts::stored(&value, version);
        let mut parents = value.parents();
        parents.retain(|p| p.since <= version);
        Ok((
            Some(Old {
                bytes,
                value,
                facts,
                parents,
            }),
            receipt,
        ))
    }

    /// Reads the record at `key`; the commit conditions on it being
    /// unchanged (or still absent).
    pub async fn get(&self, key: &str) -> Result<Option<E>> {
        Ok(self.stored(key).await?.0.map(|o| o.value))
    }

    /// Stages the creation of `value`: the commit fails with
    /// [`Error::AlreadyExists`] or [`Error::UniqueViolation`] as `create`
    /// does.
    pub async fn create(&self, value: &E) -> Result<()> {
        let key = value.record_key();
        if Engine::<E, S>::expiring() {
            // An expired record not yet swept leaves a receipt: sweep it.
            Box::pin(self.engine.expire_leftover(&key)).await?;
        }
        let timed = self.lifetime_now(&key, value).await?;
        self.write(&key, None, None, Some(value), timed, true)
    }

    /// Stages the replacement of the stored record `value` replaces,
    /// reading it (or using what the transaction read); [`Error::NotFound`]
    /// when there is none.
    pub async fn update(&self, value: &E) -> Result<()> {
        let key = value.record_key();
        let (old, receipt) = self.stored(&key).await?;
        if old.is_none() {
            return Err(Error::NotFound {
                entity: E::META.name,
                key,
            });
        }
        self.write_at_now(&key, old, receipt, Some(value)).await
    }

    /// Reads the record at `key`, lets `f` change it and stages the
    /// change; returns the new image. [`Error::NotFound`] when there is none.
    pub async fn modify(&self, key: &str, f: impl FnOnce(&mut E)) -> Result<E> {
        let (old, receipt) = self.stored(key).await?;
        let Some(o) = old else {
            return Err(Error::NotFound {
                entity: E::META.name,
                key: key.to_owned(),
            });
        };
        let mut value = o.value.clone();
        f(&mut value);
        if value.record_key() != key {
            return Err(Error::InvalidKey {
                key: key.to_owned(),
                reason: "the change alters the primary key; create a record under the new key and delete the old one instead".to_owned(),
            });
        }
        self.write_at_now(key, Some(o), receipt, Some(&value))
            .await?;
        Ok(value)
    }

    /// Stages `value` as a create or a replacement of the stored record;
    /// `true` when it creates.
    pub async fn upsert(&self, value: &E) -> Result<bool> {
        let key = value.record_key();
        let (old, receipt) = self.stored(&key).await?;
        let created = old.is_none();
        self.write_at_now(&key, old, receipt, Some(value)).await?;
        Ok(created)
    }

    /// Stages the deletion of the record at `key` with its derived entries
    /// and links; `false` (nothing staged) when there is none. A record
    /// other entities' relations name with an `on_delete` action is
    /// refused: its delete may take commits of its own (a cascade), so it
    /// is deleted outside a transaction.
    pub async fn delete(&self, key: &str) -> Result<bool> {
        let (old, receipt) = self.stored(key).await?;
        let Some(o) = old else {
            return Ok(false);
        };
        let registry = crate::engine::links::registry_key(E::space(), key);
        self.tx.refuse_linked(key)?;
        self.tx.read(E::META.name, &[registry]).await?;
        if !o.value.dependents().is_empty() {
            return Err(Error::InvalidBatch {
                key: key.to_owned(),
                reason: "other records' relations name this record with an on_delete action, \
                         which a transaction cannot run; delete it with the repository's \
                         `delete`"
                    .to_owned(),
            });
        }
        self.write_at_now(key, Some(o), receipt, None).await?;
        Ok(true)
    }

    /// [`Engine::lifetime_now`], with the store time it read (`None` for a
    /// record that does not expire): the commit shortens the time to live
    /// by the time that passes until then.
    async fn lifetime_now(&self, key: &str, value: &E) -> Result<Timed> {
        let lifetime = crate::engine::receipt::Lifetime::of(value);
        if !lifetime.expires() {
            return Ok(Timed::default());
        }
        let now = self.engine.store().now_ms().await?;
        let (ttl, due) = lifetime.at_now(key, now)?;
        Ok(Timed {
            ttl,
            due,
            at: Some(now),
        })
    }

    /// [`write`](Self::write) at the store's clock.
    async fn write_at_now(
        &self,
        key: &str,
        old: Option<Old<E>>,
        receipt: Option<StoredReceipt>,
        new: Option<&E>,
    ) -> Result<()> {
        let timed = match new {
            Some(value) => self.lifetime_now(key, value).await?,
            None => Timed::default(),
        };
        // No record read: an upsert that creates, retried (as `upsert`
        // is) when another writer creates the record first.
        self.write(key, old, receipt.as_ref(), new, timed, false)
    }

    /// Stages the move of the record at `key` from `old` to `new` with
    /// its upkeep, as the single writes do.
    fn write(
        &self,
        key: &str,
        old: Option<Old<E>>,
        receipt: Option<&StoredReceipt>,
        new: Option<&E>,
        timed: Timed,
        create: bool,
    ) -> Result<()> {
        let Timed { ttl, due, at } = timed;
        let entity = E::META.name;
        let changed = || Guard::Changed {
            entity,
            key: key.to_owned(),
        };
        let mut b = Batch::new();
        let mut guards = Vec::new();
        let (old_facts, had) = match old {
            None => {
                b.absent(key);
                if create {
                    // What the single `create` adds: an expired record's
                    // receipt left there stops it (`create` swept first).
                    Engine::<E, S>::require_no_leftover(&mut b, key, due);
                }
                guards.push(if create {
                    Guard::Exists {
                        entity,
                        key: key.to_owned(),
                    }
                } else {
                    changed()
                });
                (None, Vec::new())
            }
            Some(o) => {
                b.equals(key, o.bytes);
                guards.push(changed());
                (Some(o.facts), o.parents)
            }
        };
        let new_facts = match new {
            Some(value) => {
                let parents = value.parents();
                on_delete::refuse_own_parent(entity, key, &parents)?;
                b.put(key, entity::encode(key, value)?, ttl);
                Some((Facts::of(value), parents))
            }
            None => {
                b.delete(key);
                None
            }
        };
        let checked = transition(
            Upkeep::of::<E, S>(self.engine.store()),
            &mut b,
            key,
            old_facts.as_ref(),
            new_facts.as_ref().map(|(f, _)| f),
            ttl,
            ReceiptMove::Record { old: receipt, due },
        )?;
        while guards.len() < checked.first {
            guards.push(changed());
        }
        guards.extend(checked.claims.iter().map(|c| Guard::Claim {
            entity,
            claim: c.clone(),
        }));
        if let Some((_, parents)) = new_facts {
            for (_, p) in on_delete::require_parents(&mut b, &had, parents) {
                guards.push(Guard::Parent { entity, parent: p });
            }
        }
        if new.is_none() {
            // The record's link collections go with it; `delete` read the
            // registry, so the commit conditions on it.
            let registry_key = crate::engine::links::registry_key(E::space(), key);
            let registry = {
                let state = self.tx.lock();
                state.reads.get(&registry_key).and_then(|(_, v)| v.clone())
            };
            crate::engine::links::delete_links(&mut b, E::space(), key, registry)?;
        }
        self.tx.stage(
            key,
            Part {
                batch: b,
                guards,
                clock: at,
            },
            &checked.claims,
        )
    }
}
