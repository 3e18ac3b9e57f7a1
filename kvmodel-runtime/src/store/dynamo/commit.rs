//! `commit`: read the heads a batch needs, check the batch against them, and
//! write its result as one `TransactWriteItems` conditioned on the versions
//! read.

use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{Get, TransactGetItem};

use super::actions::Plan;
use super::blind::{self, counted, shapes};
use super::model::Model;
use super::read::backoff;
use super::{BACKEND, DynamoStore, Head, Kind, OnIo, build_error, describe, head_key, sdk_error};
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Op, Outcome};
use crate::store::{Held, check};

/// DynamoDB's limit on the items of one `TransactWriteItems` (and
/// `TransactGetItems`).
pub(crate) const MAX_ACTIONS: usize = 100;
/// DynamoDB's limit on the size of one transaction.
pub(crate) const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// DynamoDB's limit on the size of one item.
pub(crate) const MAX_ITEM_BYTES: usize = 400 * 1024;
/// How many times a commit that raced other writers is read and tried again.
const ATTEMPTS: u32 = 200;

/// What one attempt at a commit came to.
enum Attempt {
    Done(Outcome),
    /// Another writer changed a key between the read and the write.
    Raced,
    /// A counter incremented unread did not hold what its increment needs
    /// (a live counter within range, or nothing): read it and decide again.
    ReadAll,
}

/// Which keys an attempt reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    /// Every key but the counters the batch only increments once: those
    /// are `ADD`ed to unread ([`blind::counter_update`]).
    Needed,
    /// Every key: after an unread increment's condition failed, the batch
    /// is decided on what the key holds, with the contract's exact error.
    All,
}

pub(super) fn limit_error(key: &str, reason: String) -> Error {
    Error::InvalidBatch {
        key: key.to_owned(),
        reason,
    }
}

impl DynamoStore {
    /// Commits `batch` (its keys as stored: [`Spread`](crate::store::spread::Spread)).
    pub(super) async fn commit_batch(&self, batch: Batch) -> Result<Outcome> {
        if batch.is_empty() {
            return Ok(Outcome::Applied);
        }
        let mut reads = Reads::Needed;
        let mut raced = 0;
        while raced < ATTEMPTS {
            match self.attempt(&batch, reads).await? {
                Attempt::Done(outcome) => return Ok(outcome),
                // Only ever once: an attempt that reads every key never asks.
                Attempt::ReadAll => reads = Reads::All,
                Attempt::Raced => {
                    raced += 1;
                    backoff(raced).await;
                }
            }
        }
        Err(Error::backend(
            BACKEND,
            "commit",
            format!(
                "other writers changed this batch's keys between its read and its write \
                 {ATTEMPTS} times in a row; nothing was written"
            ),
        ))
    }

    async fn attempt(&self, batch: &Batch, reads: Reads) -> Result<Attempt> {
        let shapes = shapes(batch);
        // Every key the batch meets, in first-seen order.
        let mut keys: Vec<&str> = Vec::new();
        let mut seen = HashSet::new();
        for k in batch
            .conditions()
            .iter()
            .map(|c| c.key())
            .chain(batch.ops().iter().map(Op::key))
        {
            if seen.insert(k) {
                keys.push(k);
            }
        }
        if keys.contains(&"") {
            return Err(limit_error(
                "",
                "DynamoDB keys cannot be empty, and the batch meets the empty key".to_owned(),
            ));
        }
        if keys.len() > MAX_ACTIONS {
            return Err(limit_error(
                keys[MAX_ACTIONS],
                format!(
                    "the batch meets {} keys, so it needs at least as many item writes and \
                     checks, beyond DynamoDB's limit of {MAX_ACTIONS} actions in one \
                     TransactWriteItems",
                    keys.len()
                ),
            ));
        }
        // Before any read: such a key cannot even be read in a transaction.
        for k in &keys {
            super::check_partition_key(k, k)?;
        }
        let unread = |k: &str| reads == Reads::Needed && shapes[k].blind().is_some();
        let read: Vec<&str> = keys.iter().copied().filter(|k| !unread(k)).collect();
        let heads = if read.is_empty() {
            HashMap::new()
        } else {
            match self.read_heads(&read).await? {
                Some(heads) => heads,
                None => return Ok(Attempt::Raced),
            }
        };
        let now = self.clock.now_ms();
        let live = |k: &str| {
            heads
                .get(k)
                .and_then(|h| h.as_ref())
                .filter(|h| h.live(now))
        };
        let checked = check(batch, |k, _| {
            Ok(match live(k).map(|h| &h.kind) {
                None => Held::Nothing,
                Some(Kind::Value(v)) => Held::Value(v.clone()),
                Some(Kind::Counter(n)) => Held::Value(n.to_string().into_bytes()),
                Some(Kind::Collection { count: 0, .. }) => Held::Nothing,
                Some(Kind::Collection { .. }) => Held::Collection,
            })
        });
        let outcome = match checked {
            // An unread counter was taken to hold nothing: the refusal may
            // not be the one what it holds gives.
            Err(_) if read.len() < keys.len() => return Ok(Attempt::ReadAll),
            other => other?,
        };
        if !outcome.is_applied() {
            return Ok(Attempt::Done(outcome));
        }

        // What each live head read holds, and the member items the ops need.
        let mut models: HashMap<&str, Model> = HashMap::new();
        for key in &read {
            models.insert(key, Model::of(live(key)));
        }
        self.load_members(batch, &mut models).await?;
        for op in batch.ops() {
            if let Some(model) = models.get_mut(op.key()) {
                model.apply(op, self, now)?;
            }
        }

        // One action per item; `unread[i]`: action `i` increments a counter
        // it did not read.
        let mut plan = Plan::default();
        for key in &keys {
            let Some(model) = models.remove(key) else {
                let (delta, limit) = shapes[key].blind().expect("only blind counters go unread");
                plan.push(
                    blind::counter_update(&self.table, key, delta, limit, now)?,
                    0,
                    true,
                );
                plan.writes += 1;
                continue;
            };
            let stored = heads.get(key).and_then(|h| h.as_ref());
            match counted(&shapes[key], live(key), &model) {
                Some((generation, count)) => {
                    self.count_actions(&mut plan, key, (generation, count), &model, now)?;
                }
                None => self.versioned_actions(&mut plan, key, stored, model)?,
            }
        }
        if plan.writes == 0 && keys.len() <= MAX_ACTIONS {
            // Nothing to write and every head read in one snapshot: the
            // conditions held at that instant.
            return Ok(Attempt::Done(Outcome::Applied));
        }
        if plan.actions.len() > MAX_ACTIONS {
            return Err(limit_error(
                keys[0],
                format!(
                    "it needs {} item writes and checks, beyond DynamoDB's limit of \
                     {MAX_ACTIONS} actions in one TransactWriteItems",
                    plan.actions.len()
                ),
            ));
        }
        if plan.bytes > MAX_TRANSACTION_BYTES {
            return Err(limit_error(
                keys[0],
                format!(
                    "it writes {} bytes, beyond DynamoDB's limit of 4 MB in one \
                     TransactWriteItems",
                    plan.bytes
                ),
            ));
        }
        self.send(plan).await
    }

    /// The heads of `keys` as one snapshot (`TransactGetItems`), or `None`
    /// when a write in progress on one of them refused the read.
    async fn read_heads<'k>(
        &self,
        keys: &[&'k str],
    ) -> Result<Option<HashMap<&'k str, Option<Head>>>> {
        let gets = keys
            .iter()
            .map(|k| {
                Ok(TransactGetItem::builder()
                    .get(
                        Get::builder()
                            .table_name(&*self.table)
                            .set_key(Some(head_key(k)))
                            .build()
                            .map_err(build_error)?,
                    )
                    .build())
            })
            .collect::<Result<Vec<_>>>()?;
        let out = match self
            .client
            .transact_get_items()
            .set_transact_items(Some(gets))
            .send()
            .on_io()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                let raced = e
                    .as_service_error()
                    .is_some_and(|s| s.is_transaction_canceled_exception());
                if raced {
                    return Ok(None);
                }
                return Err(sdk_error("read the keys of a batch", e));
            }
        };
        let mut heads = HashMap::with_capacity(keys.len());
        let responses = out.responses();
        for (i, key) in keys.iter().enumerate() {
            let head = responses
                .get(i)
                .and_then(|r| r.item())
                .map(|item| Head::parse(key, item))
                .transpose()?;
            heads.insert(*key, head);
        }
        Ok(Some(heads))
    }

    /// Sends the transaction: a refusal because a head changed since it was
    /// read is [`Attempt::Raced`]; an error after the request may have
    /// reached DynamoDB is [`Error::OutcomeUnknown`].
    async fn send(&self, plan: Plan) -> Result<Attempt> {
        let token = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(plan.actions))
            .client_request_token(token)
            .send()
            .on_io()
            .await;
        match result {
            Ok(_) => Ok(Attempt::Done(Outcome::Applied)),
            Err(SdkError::ServiceError(e)) => {
                let err = e.err();
                if let aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c) = err {
                    let reasons = c.cancellation_reasons();
                    let unread_refused = reasons.iter().zip(&plan.unread).any(|(r, unread)| {
                        *unread && r.code() == Some("ConditionalCheckFailed")
                    });
                    if unread_refused {
                        return Ok(Attempt::ReadAll);
                    }
                    let raced = reasons.iter().any(|r| {
                        matches!(
                            r.code(),
                            Some("ConditionalCheckFailed" | "TransactionConflict")
                        )
                    });
                    let only_raced = reasons.iter().all(|r| {
                        matches!(
                            r.code(),
                            None | Some("None" | "ConditionalCheckFailed" | "TransactionConflict")
                        )
                    });
                    if raced && only_raced || reasons.is_empty() {
                        return Ok(Attempt::Raced);
                    }
                }
                // Refusals of this request that hold for every attempt the
                // SDK made with its token (DynamoDB answers a retry of an
                // applied transaction with its success): nothing written.
                // Anything else — still in progress (an earlier attempt
                // whose reply was lost may yet apply), throttled, an
                // internal error — may follow an attempt that applied.
                let refused = err.is_transaction_canceled_exception()
                    || err.is_resource_not_found_exception()
                    || err.is_idempotent_parameter_mismatch_exception()
                    || err.is_invalid_endpoint_exception()
                    || matches!(
                        aws_sdk_dynamodb::error::ProvideErrorMetadata::code(err),
                        Some("ValidationException" | "AccessDeniedException")
                    );
                let text = describe(&SdkError::ServiceError(e));
                if refused {
                    return Err(Error::backend(BACKEND, "commit", text));
                }
                Err(Error::OutcomeUnknown {
                    backend: BACKEND,
                    source: text.into(),
                })
            }
            Err(e @ SdkError::ConstructionFailure(_)) => Err(sdk_error("commit", e)),
            Err(SdkError::DispatchFailure(d)) if d.is_user() => {
                Err(Error::backend(BACKEND, "commit", format!("{:?}", d)))
            }
            Err(e) => Err(Error::OutcomeUnknown {
                backend: BACKEND,
                source: describe(&e).into(),
            }),
        }
    }
}
