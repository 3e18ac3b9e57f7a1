//! What a batch does to each key it reads: the key's model as the ops are
//! applied to it, and the member items they need looked up.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use super::{DynamoStore, Head, Item, Kind, PK, SK, member_sk};
use crate::error::Result;
use crate::store::batch::{Batch, Op};
use crate::store::clock::deadline;
use crate::store::counter::{add_to_counter, parse_counter};
use crate::store::{Direction, encode_entry};

/// A deleted collection of at most this many members has its member items
/// deleted in the same transaction; a larger one leaves them behind,
/// unreachable (its head is gone, and a new collection at the key starts a
/// new generation).
const DELETE_MEMBERS_UP_TO: u64 = 25;

/// What is known of a collection's member items as stored.
#[derive(Debug, Default)]
pub(super) struct Coll {
    pub(super) generation: u64,
    pub(super) count: u64,
    /// The fewest members it held as the batch was applied (from `count`
    /// as read).
    pub(super) low: u64,
    /// Stored membership of the entries looked up (every one, when `full`).
    pub(super) stored: HashMap<Vec<u8>, bool>,
    /// Membership this batch decided, where it differs or may differ.
    pub(super) changes: BTreeMap<Vec<u8>, bool>,
    /// `stored` holds every member.
    pub(super) full: bool,
}

impl Coll {
    fn fresh() -> Coll {
        Coll {
            generation: fastrand::u64(..u64::MAX),
            ..Coll::default()
        }
    }

    pub(super) fn present(&self, entry: &[u8]) -> bool {
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
pub(super) struct Model {
    pub(super) value: Option<Vec<u8>>,
    /// The value is a counter the batch incremented or read as one: it is
    /// stored as a number.
    pub(super) counter: bool,
    pub(super) coll: Option<Coll>,
    pub(super) exp: Option<u64>,
    /// Collections the batch emptied or deleted: their stored members go.
    pub(super) retired: Vec<Coll>,
    pub(super) changed: bool,
}

impl Model {
    /// What a key whose live head is `head` holds.
    pub(super) fn of(head: Option<&Head>) -> Model {
        let mut model = Model::default();
        if let Some(head) = head {
            model.exp = head.exp;
            match &head.kind {
                Kind::Value(v) => model.value = Some(v.clone()),
                Kind::Counter(n) => {
                    model.value = Some(n.to_string().into_bytes());
                    model.counter = true;
                }
                Kind::Collection { count, generation } if *count > 0 => {
                    model.coll = Some(Coll {
                        generation: *generation,
                        count: *count,
                        low: *count,
                        ..Coll::default()
                    });
                }
                Kind::Collection { .. } => {}
            }
        }
        model
    }

    /// What the head holds after the batch: `None` when the key is empty.
    pub(super) fn kind(&self) -> Option<Kind> {
        match (&self.value, &self.coll) {
            (Some(v), _) => Some(
                self.counter
                    .then(|| crate::store::counter::counter_value(v))
                    .flatten()
                    .map_or_else(|| Kind::Value(v.clone()), Kind::Counter),
            ),
            (None, Some(c)) if c.count > 0 => Some(Kind::Collection {
                count: c.count,
                generation: c.generation,
            }),
            _ => None,
        }
    }

    fn delete(&mut self) {
        self.retire();
        self.value = None;
        self.counter = false;
        self.exp = None;
        self.changed = true;
    }

    fn retire(&mut self) {
        if let Some(c) = self.coll.take() {
            self.retired.push(c);
        }
    }

    pub(super) fn apply(&mut self, op: &Op, store: &DynamoStore, now: u64) -> Result<()> {
        match op {
            Op::Put { value, ttl, .. } => {
                self.retire();
                self.value = Some(value.clone());
                self.counter = false;
                self.exp = ttl.map(|t| deadline(&*store.clock, t));
                self.changed = true;
            }
            Op::Delete { .. } => self.delete(),
            Op::DeleteIfEquals { value, .. } => {
                // `check` refused a collection here: a value or nothing.
                if self.value.as_ref() == Some(value) {
                    self.delete();
                }
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
                self.counter = true;
                self.changed = true;
            }
            Op::Add { sort, member, .. } => {
                if self.coll.is_none() {
                    self.exp = None;
                    self.value = None;
                    self.counter = false;
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
                        coll.low = coll.low.min(coll.count);
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
pub(super) fn member_key(key: &str, generation: u64, entry: &[u8]) -> Item {
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(key.to_owned())),
        (
            SK.to_owned(),
            AttributeValue::B(Blob::new(member_sk(generation, entry))),
        ),
    ])
}

impl DynamoStore {
    /// Looks up the stored membership the ops need: each entry added or
    /// removed, and every member of a collection trimmed or (when small)
    /// deleted.
    pub(super) async fn load_members<'b>(
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
        for item in self.batch_get(wanted, "read collection members").await? {
            if let (Some(AttributeValue::S(k)), Some(AttributeValue::B(sk))) =
                (item.get(PK), item.get(SK))
            {
                found.insert((k.clone(), sk.as_ref().to_vec()));
            }
        }
        Ok(probes
            .iter()
            .map(|(k, e)| found.contains(&((*k).to_owned(), member_sk(generation(k), e))))
            .collect())
    }
}
