//! `commit`: read the heads a batch needs, check the batch against them, and
//! write its result as one `TransactWriteItems` conditioned on the versions
//! read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Get, Put, TransactGetItem, TransactWriteItem,
};

use super::read::backoff;
use super::{
    BACKEND, DynamoStore, Head, Item, Kind, OnIo, PK, SK, VERSION, build_error, describe, head_key,
    member_sk, sdk_error,
};
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Op, Outcome};
use crate::store::clock::deadline;
use crate::store::counter::{add_to_counter, parse_counter};
use crate::store::{Direction, Held, check, encode_entry};

/// DynamoDB's limit on the items of one `TransactWriteItems` (and
/// `TransactGetItems`).
pub(crate) const MAX_ACTIONS: usize = 100;
/// DynamoDB's limit on the size of one transaction.
pub(crate) const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// DynamoDB's limit on the size of one item.
pub(crate) const MAX_ITEM_BYTES: usize = 400 * 1024;
/// A deleted collection of at most this many members has its member items
/// deleted in the same transaction; a larger one leaves them behind,
/// unreachable (its head is gone, and a new collection at the key starts a
/// new generation).
const DELETE_MEMBERS_UP_TO: u64 = 25;
/// How many times a commit that raced other writers is read and tried again.
const ATTEMPTS: u32 = 200;

/// What one attempt at a commit came to.
enum Attempt {
    Done(Outcome),
    /// Another writer changed a key between the read and the write.
    Raced,
}

/// What is known of a collection's member items as stored.
#[derive(Debug, Default)]
struct Coll {
    generation: u64,
    count: u64,
    /// Stored membership of the entries looked up (every one, when `full`).
    stored: HashMap<Vec<u8>, bool>,
    /// Membership this batch decided, where it differs or may differ.
    changes: BTreeMap<Vec<u8>, bool>,
    /// `stored` holds every member.
    full: bool,
}

impl Coll {
    fn fresh() -> Coll {
        Coll {
            generation: fastrand::u64(..u64::MAX),
            ..Coll::default()
        }
    }

    fn present(&self, entry: &[u8]) -> bool {
        self.changes
            .get(entry)
            .or_else(|| self.stored.get(entry))
            .copied()
            .unwrap_or(false)
    }

    /// Every member now, smallest first (`full` only).
    fn members(&self) -> Vec<Vec<u8>> {
        let mut all: std::collections::BTreeSet<Vec<u8>> = self
            .stored
            .iter()
            .filter(|(_, p)| **p)
            .map(|(e, _)| e.clone())
            .collect();
        for (e, p) in &self.changes {
            if *p {
                all.insert(e.clone());
            } else {
                all.remove(e);
            }
        }
        all.into_iter().collect()
    }
}

/// What a key holds as the batch is applied to it.
#[derive(Debug, Default)]
struct Model {
    value: Option<Vec<u8>>,
    coll: Option<Coll>,
    exp: Option<u64>,
    /// Collections the batch emptied or deleted: their stored members go.
    retired: Vec<Coll>,
    changed: bool,
}

impl Model {
    fn retire(&mut self) {
        if let Some(c) = self.coll.take() {
            self.retired.push(c);
        }
    }

    fn apply(&mut self, op: &Op, store: &DynamoStore, now: u64) -> Result<()> {
        match op {
            Op::Put { value, ttl, .. } => {
                self.retire();
                self.value = Some(value.clone());
                self.exp = ttl.map(|t| deadline(&*store.clock, t));
                self.changed = true;
            }
            Op::Delete { .. } => {
                self.retire();
                self.value = None;
                self.exp = None;
                self.changed = true;
            }
            Op::Incr { key, delta, .. } => {
                let current = match &self.value {
                    Some(v) => parse_counter(key, v)?,
                    None => {
                        self.exp = None;
                        0
                    }
                };
                let next = add_to_counter(key, current, *delta)?;
                self.value = Some(next.to_string().into_bytes());
                self.changed = true;
            }
            Op::Add { sort, member, .. } => {
                if self.coll.is_none() {
                    self.exp = None;
                    self.value = None;
                    self.coll = Some(Coll::fresh());
                }
                let coll = self.coll.as_mut().expect("set above");
                let entry = encode_entry(sort, member);
                if !coll.present(&entry) {
                    coll.changes.insert(entry, true);
                    coll.count += 1;
                    self.changed = true;
                }
            }
            Op::Remove { sort, member, .. } => {
                if let Some(coll) = self.coll.as_mut() {
                    let entry = encode_entry(sort, member);
                    if coll.present(&entry) {
                        coll.changes.insert(entry, false);
                        coll.count = coll.count.saturating_sub(1);
                        self.changed = true;
                        if coll.count == 0 {
                            self.retire();
                            self.exp = None;
                        }
                    }
                }
            }
            Op::Trim { keep, .. } => {
                if let Some(coll) = self.coll.as_mut()
                    && coll.count > *keep
                {
                    let members = coll.members();
                    let drop = members
                        .len()
                        .saturating_sub(usize::try_from(*keep).unwrap_or(usize::MAX));
                    for entry in members.into_iter().take(drop) {
                        coll.changes.insert(entry, false);
                    }
                    coll.count = *keep;
                    self.changed = true;
                    if coll.count == 0 {
                        self.retire();
                        self.exp = None;
                    }
                }
            }
            Op::Expire { ttl, .. } => {
                if self.value.is_some() || self.coll.is_some() {
                    self.exp = Some(deadline(&*store.clock, *ttl));
                    self.changed = true;
                }
            }
        }
        let _ = now;
        Ok(())
    }
}

/// The key of a member item.
fn member_key(key: &str, generation: u64, entry: &[u8]) -> Item {
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(key.to_owned())),
        (
            SK.to_owned(),
            AttributeValue::B(Blob::new(member_sk(generation, entry))),
        ),
    ])
}

/// The size DynamoDB counts for an item: attribute names and values.
fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, v)| {
            name.len()
                + match v {
                    AttributeValue::S(s) | AttributeValue::N(s) => s.len(),
                    AttributeValue::B(b) => b.as_ref().len(),
                    _ => 1,
                }
        })
        .sum()
}

fn limit_error(key: &str, reason: String) -> Error {
    Error::InvalidBatch {
        key: key.to_owned(),
        reason,
    }
}

/// The condition that the head of a key is as it was read, with its names
/// and values.
fn unchanged(head: Option<&Head>) -> (String, Names, Option<Values>) {
    match head {
        Some(h) => (
            "#ver = :ver".to_owned(),
            HashMap::from([("#ver".to_owned(), VERSION.to_owned())]),
            Some(HashMap::from([(
                ":ver".to_owned(),
                AttributeValue::S(h.version.clone()),
            )])),
        ),
        None => (
            "attribute_not_exists(#pk)".to_owned(),
            HashMap::from([("#pk".to_owned(), PK.to_owned())]),
            None,
        ),
    }
}

type Names = HashMap<String, String>;
type Values = HashMap<String, AttributeValue>;

impl DynamoStore {
    /// Commits `batch`; feed entries are refused (this store keeps no feed).
    pub(super) async fn commit_batch(&self, batch: Batch) -> Result<Outcome> {
        if let Some(a) = batch.appends().first() {
            return Err(crate::store::feed::no_feed_for(&a.feed));
        }
        if batch.is_empty() {
            return Ok(Outcome::Applied);
        }
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            if let Attempt::Done(outcome) = self.attempt(&batch).await? {
                return Ok(outcome);
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

    async fn attempt(&self, batch: &Batch) -> Result<Attempt> {
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
                    "the batch meets {} keys, beyond DynamoDB's limit of {MAX_ACTIONS} items \
                     in one TransactWriteItems",
                    keys.len()
                ),
            ));
        }
        let Some(heads) = self.read_heads(&keys).await? else {
            return Ok(Attempt::Raced);
        };
        let now = self.clock.now_ms();
        let live = |k: &str| {
            heads
                .get(k)
                .and_then(|h| h.as_ref())
                .filter(|h| h.live(now))
        };
        let outcome = check(batch, |k, _| {
            Ok(match live(k).map(|h| &h.kind) {
                None => Held::Nothing,
                Some(Kind::Value(v)) => Held::Value(v.clone()),
                Some(Kind::Collection { count: 0, .. }) => Held::Nothing,
                Some(Kind::Collection { .. }) => Held::Collection,
            })
        })?;
        if !outcome.is_applied() {
            return Ok(Attempt::Done(outcome));
        }

        // What each live head holds, and the member items the ops need.
        let mut models: HashMap<&str, Model> = HashMap::new();
        for key in &keys {
            let mut model = Model::default();
            if let Some(head) = live(key) {
                model.exp = head.exp;
                match &head.kind {
                    Kind::Value(v) => model.value = Some(v.clone()),
                    Kind::Collection { count, generation } if *count > 0 => {
                        model.coll = Some(Coll {
                            generation: *generation,
                            count: *count,
                            ..Coll::default()
                        });
                    }
                    Kind::Collection { .. } => {}
                }
            }
            models.insert(key, model);
        }
        self.load_members(batch, &mut models).await?;
        for op in batch.ops() {
            let model = models.get_mut(op.key()).expect("every key has a model");
            model.apply(op, self, now)?;
        }

        // One action per item.
        let mut actions: Vec<TransactWriteItem> = Vec::new();
        let mut total = 0usize;
        let mut writes = 0usize;
        for key in &keys {
            let model = models.remove(key).expect("every key has a model");
            let stored = heads.get(key).and_then(|h| h.as_ref());
            let (condition, names, values) = unchanged(stored);
            let head_action = if !model.changed {
                TransactWriteItem::builder()
                    .condition_check(
                        ConditionCheck::builder()
                            .table_name(&*self.table)
                            .set_key(Some(head_key(key)))
                            .condition_expression(condition)
                            .set_expression_attribute_names(Some(names))
                            .set_expression_attribute_values(values)
                            .build()
                            .map_err(build_error)?,
                    )
                    .build()
            } else {
                writes += 1;
                let version = format!("{:016x}", fastrand::u64(..));
                let kind = match (&model.value, &model.coll) {
                    (Some(v), _) => Some(Kind::Value(v.clone())),
                    (None, Some(c)) if c.count > 0 => Some(Kind::Collection {
                        count: c.count,
                        generation: c.generation,
                    }),
                    _ => None,
                };
                match kind {
                    Some(kind) => {
                        let item = Head::item(key, &kind, model.exp, &version);
                        let size = item_size(&item);
                        if size > MAX_ITEM_BYTES {
                            return Err(limit_error(
                                key,
                                format!(
                                    "its item would be {size} bytes, beyond DynamoDB's limit of \
                                     400 KB per item"
                                ),
                            ));
                        }
                        total += size;
                        TransactWriteItem::builder()
                            .put(
                                Put::builder()
                                    .table_name(&*self.table)
                                    .set_item(Some(item))
                                    .condition_expression(condition)
                                    .set_expression_attribute_names(Some(names))
                                    .set_expression_attribute_values(values)
                                    .build()
                                    .map_err(build_error)?,
                            )
                            .build()
                    }
                    None => TransactWriteItem::builder()
                        .delete(
                            Delete::builder()
                                .table_name(&*self.table)
                                .set_key(Some(head_key(key)))
                                .condition_expression(condition)
                                .set_expression_attribute_names(Some(names))
                                .set_expression_attribute_values(values)
                                .build()
                                .map_err(build_error)?,
                        )
                        .build(),
                }
            };
            actions.push(head_action);
            // Member items: the current collection's changes, and every
            // stored member of a retired one.
            let mut members: Vec<(u64, Vec<u8>, bool)> = Vec::new();
            for coll in &model.retired {
                for (entry, present) in &coll.stored {
                    if *present {
                        members.push((coll.generation, entry.clone(), false));
                    }
                }
            }
            if let Some(coll) = &model.coll {
                for (entry, present) in &coll.changes {
                    let was = coll.stored.get(entry).copied().unwrap_or(false);
                    if *present != was {
                        members.push((coll.generation, entry.clone(), *present));
                    }
                }
            }
            for (generation, entry, present) in members {
                writes += 1;
                let item = member_key(key, generation, &entry);
                let action = if present {
                    let size = item_size(&item);
                    if size > MAX_ITEM_BYTES {
                        return Err(limit_error(
                            key,
                            format!(
                                "a member item would be {size} bytes, beyond DynamoDB's limit \
                                 of 400 KB per item"
                            ),
                        ));
                    }
                    total += size;
                    TransactWriteItem::builder()
                        .put(
                            Put::builder()
                                .table_name(&*self.table)
                                .set_item(Some(item))
                                .build()
                                .map_err(build_error)?,
                        )
                        .build()
                } else {
                    TransactWriteItem::builder()
                        .delete(
                            Delete::builder()
                                .table_name(&*self.table)
                                .set_key(Some(item))
                                .build()
                                .map_err(build_error)?,
                        )
                        .build()
                };
                actions.push(action);
            }
        }
        if writes == 0 && keys.len() <= MAX_ACTIONS {
            // Nothing to write and every head read in one snapshot: the
            // conditions held at that instant.
            return Ok(Attempt::Done(Outcome::Applied));
        }
        if actions.len() > MAX_ACTIONS {
            return Err(limit_error(
                keys[0],
                format!(
                    "it needs {} item writes and checks, beyond DynamoDB's limit of \
                     {MAX_ACTIONS} actions in one TransactWriteItems",
                    actions.len()
                ),
            ));
        }
        if total > MAX_TRANSACTION_BYTES {
            return Err(limit_error(
                keys[0],
                format!(
                    "it writes {total} bytes, beyond DynamoDB's limit of 4 MB in one \
                     TransactWriteItems"
                ),
            ));
        }
        self.send(actions).await
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

    /// Looks up the stored membership the ops need: each entry added or
    /// removed, and every member of a collection trimmed or (when small)
    /// deleted.
    async fn load_members<'b>(
        &self,
        batch: &'b Batch,
        models: &mut HashMap<&'b str, Model>,
    ) -> Result<()> {
        let mut full: Vec<&str> = Vec::new();
        let mut probes: Vec<(&str, Vec<u8>)> = Vec::new();
        for op in batch.ops() {
            let key = op.key();
            let Some(coll) = models.get(key).and_then(|m| m.coll.as_ref()) else {
                continue;
            };
            match op {
                Op::Trim { .. } => full.push(key),
                Op::Delete { .. } if coll.count <= DELETE_MEMBERS_UP_TO => full.push(key),
                Op::Add { sort, member, .. } | Op::Remove { sort, member, .. } => {
                    probes.push((key, encode_entry(sort, member)));
                }
                _ => {}
            }
        }
        full.sort_unstable();
        full.dedup();
        for key in &full {
            let model = models.get_mut(key).expect("every key has a model");
            let coll = model.coll.as_mut().expect("checked above");
            let entries = self
                .entries(
                    key,
                    coll.generation,
                    &Bound::Unbounded,
                    &Bound::Unbounded,
                    Direction::Ascending,
                    usize::MAX,
                )
                .await?;
            coll.stored = entries.into_iter().map(|e| (e, true)).collect();
            coll.full = true;
        }
        probes.retain(|(k, _)| !full.contains(k));
        let mut seen = HashSet::new();
        probes.retain(|(k, e)| seen.insert((*k, e.clone())));
        for chunk in probes.chunks(100) {
            let found = self.probe(chunk, models).await?;
            for ((key, entry), present) in chunk.iter().zip(found) {
                let model = models.get_mut(key).expect("every key has a model");
                if let Some(coll) = model.coll.as_mut() {
                    coll.stored.insert(entry.clone(), present);
                }
            }
        }
        Ok(())
    }

    /// Whether each `(key, entry)` is a stored member of the key's current
    /// generation (one `BatchGetItem`).
    async fn probe(
        &self,
        probes: &[(&str, Vec<u8>)],
        models: &HashMap<&str, Model>,
    ) -> Result<Vec<bool>> {
        let generation = |k: &str| {
            models
                .get(k)
                .and_then(|m| m.coll.as_ref())
                .map_or(0, |c| c.generation)
        };
        let wanted: Vec<Item> = probes
            .iter()
            .map(|(k, e)| member_key(k, generation(k), e))
            .collect();
        let mut found: HashSet<(String, Vec<u8>)> = HashSet::new();
        let mut pending = wanted;
        let mut attempt = 0;
        while !pending.is_empty() {
            let request = aws_sdk_dynamodb::types::KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .consistent_read(true)
                .build()
                .map_err(build_error)?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&*self.table, request)
                .send()
                .on_io()
                .await
                .map_err(|e| sdk_error("read collection members", e))?;
            for item in out
                .responses()
                .and_then(|r| r.get(&*self.table))
                .into_iter()
                .flatten()
            {
                if let (Some(AttributeValue::S(k)), Some(AttributeValue::B(sk))) =
                    (item.get(PK), item.get(SK))
                {
                    found.insert((k.clone(), sk.as_ref().to_vec()));
                }
            }
            if let Some(left) = out.unprocessed_keys().and_then(|u| u.get(&*self.table)) {
                pending = left.keys().to_vec();
            }
            if !pending.is_empty() {
                attempt += 1;
                if attempt > 20 {
                    return Err(Error::backend(
                        BACKEND,
                        "read collection members",
                        "DynamoDB left keys unprocessed 20 times (the table's read capacity \
                         is exhausted); try again later",
                    ));
                }
                tokio::time::sleep(backoff(attempt)).await;
            }
        }
        Ok(probes
            .iter()
            .map(|(k, e)| found.contains(&((*k).to_owned(), member_sk(generation(k), e))))
            .collect())
    }

    /// Sends the transaction: a refusal because a head changed since it was
    /// read is [`Attempt::Raced`]; an error after the request may have
    /// reached DynamoDB is [`Error::OutcomeUnknown`].
    async fn send(&self, actions: Vec<TransactWriteItem>) -> Result<Attempt> {
        let token = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(actions))
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
                if err.is_transaction_in_progress_exception() {
                    return Ok(Attempt::Raced);
                }
                Err(Error::backend(
                    BACKEND,
                    "commit",
                    describe(&SdkError::ServiceError(e)),
                ))
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
