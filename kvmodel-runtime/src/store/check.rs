//! The pre-write check every backend applies to a batch (the Redis commit
//! script mirrors it step by step).

use std::collections::HashMap;

use super::batch::{Batch, Op, Outcome};
use super::counter::{NOT_A_COUNTER, add_within, counter_value};
use crate::error::{Error, Result};

/// What a key holds now, as a backend reports it to [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Nothing, or only expired data.
    Nothing,
    /// A value (counters are values too).
    Value(Vec<u8>),
    /// A sorted collection with at least one member.
    Collection,
}

/// What the batch expects a key it asks about to hold: a backend that keeps
/// values and collections apart (redb's two tables) looks where the
/// expected kind lives first. The answer must not depend on it: a live key
/// never holds both kinds, since every commit checks this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A value: a condition, a put or an increment asks.
    Value,
    /// A sorted collection: an add, a remove or a trim asks.
    Collection,
}

/// What a key will hold at one point of a batch being checked.
#[derive(Clone, Copy)]
enum Slot {
    Nothing,
    Counter(i64),
    Text,
    Collection,
    /// After a conditional delete of a value: nothing, or the value.
    Unsure,
}

impl Slot {
    fn value(bytes: &[u8]) -> Slot {
        counter_value(bytes).map_or(Slot::Text, Slot::Counter)
    }

    fn of(held: &Held) -> Slot {
        match held {
            Held::Nothing => Slot::Nothing,
            Held::Value(v) => Slot::value(v),
            Held::Collection => Slot::Collection,
        }
    }
}

/// Why an increment or a sorted-collection operation after a conditional
/// delete of its key is refused.
const AFTER_CONDITIONAL: &str =
    "an operation that needs to know what the key holds follows a conditional delete of it";

fn refuse(key: &str, reason: &str) -> Error {
    Error::InvalidBatch {
        key: key.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Decides, before anything is written, what committing `batch` does:
/// [`Outcome::Failed`] for the first condition (in order) that does not hold,
/// an error for the first operation (in order) that could not be applied,
/// otherwise [`Outcome::Applied`], and then applying every operation cannot
/// fail. `current` tells what a key holds now, given what the batch expects
/// there.
///
/// The rules, which the Redis commit script applies in the same order:
/// a key holds nothing, a value or a sorted collection; a condition on a
/// collection, a put over a collection, an increment of a collection, and an
/// add to or remove from a value fail the batch (a delete first makes room
/// for the other kind); a conditional delete of a collection fails the
/// batch, and so does an increment or a sorted-collection operation after a
/// conditional delete of the same key (what the key holds then depends on
/// what it held); an increment needs a counter as [`parse_counter`](super::counter::parse_counter)
/// reads it and a sum within 64 bits ([`add_to_counter`](super::counter::add_to_counter)). Each operation sees
/// what the earlier ones of the batch left.
/// `current` gets each key borrowed from `batch`, so a backend may keep
/// what it learned for applying the batch.
pub fn check<'b>(
    batch: &'b Batch,
    mut current: impl FnMut(&'b str, Expect) -> Result<Held>,
) -> Result<Outcome> {
    let mut slots: HashMap<&'b str, Slot> = HashMap::new();
    for (index, cond) in batch.conditions().iter().enumerate() {
        let key = cond.key();
        let held = current(key, Expect::Value)?;
        let value = match &held {
            Held::Nothing => None,
            Held::Value(v) => Some(v.as_slice()),
            Held::Collection => {
                return Err(refuse(
                    key,
                    "a condition inspects a key that holds a sorted collection",
                ));
            }
        };
        if !cond.holds(value) {
            return Ok(Outcome::Failed { index });
        }
        slots.insert(key, Slot::of(&held));
    }
    for op in batch.ops() {
        let key = op.key();
        if matches!(op, Op::Expire { .. }) {
            continue; // any kind expires; nothing changes
        }
        let slot = match (op, slots.get(key)) {
            (Op::Delete { .. }, _) => Slot::Nothing,
            (_, Some(slot)) => *slot,
            (_, None) => {
                let expect = match op {
                    Op::Add { .. } | Op::Remove { .. } | Op::Trim { .. } => Expect::Collection,
                    _ => Expect::Value,
                };
                Slot::of(&current(key, expect)?)
            }
        };
        let next = match (op, slot) {
            (Op::Delete { .. }, _) => Slot::Nothing,
            (Op::DeleteIfEquals { .. }, Slot::Collection) => {
                return Err(refuse(
                    key,
                    "a conditional delete meets a sorted collection",
                ));
            }
            (Op::DeleteIfEquals { .. }, Slot::Nothing) => Slot::Nothing,
            (Op::DeleteIfEquals { .. }, _) => Slot::Unsure,
            (Op::Put { .. }, Slot::Collection) => {
                return Err(refuse(
                    key,
                    "a put meets a sorted collection; delete it first",
                ));
            }
            (Op::Put { value, .. }, _) => Slot::value(value),
            (Op::Incr { delta, limit, .. }, Slot::Nothing) => {
                Slot::Counter(add_within(key, 0, *delta, *limit)?)
            }
            (Op::Incr { delta, limit, .. }, Slot::Counter(v)) => {
                Slot::Counter(add_within(key, v, *delta, *limit)?)
            }
            (Op::Incr { .. }, Slot::Text) => return Err(refuse(key, NOT_A_COUNTER)),
            (Op::Incr { .. }, Slot::Unsure) => return Err(refuse(key, AFTER_CONDITIONAL)),
            (Op::Incr { .. }, Slot::Collection) => {
                return Err(refuse(
                    key,
                    "an increment meets a sorted collection, not a counter",
                ));
            }
            (
                Op::Add { .. } | Op::Remove { .. } | Op::Trim { .. },
                Slot::Counter(_) | Slot::Text,
            ) => {
                return Err(refuse(key, "a sorted-collection operation meets a value"));
            }
            (Op::Add { .. } | Op::Remove { .. } | Op::Trim { .. }, Slot::Unsure) => {
                return Err(refuse(key, AFTER_CONDITIONAL));
            }
            (Op::Add { .. }, _) => Slot::Collection,
            (Op::Remove { .. } | Op::Trim { .. } | Op::Expire { .. }, slot) => slot,
        };
        slots.insert(key, next);
    }
    Ok(Outcome::Applied)
}
