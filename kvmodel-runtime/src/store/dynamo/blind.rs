//! Writes that condition on no version: an increment `ADD`ed to a counter
//! it did not read, and the count of a live collection moved by `ADD` when
//! members are added or removed. Each is conditioned only on what keeps
//! the result exact, so concurrent writers of one counter or one
//! collection never refuse each other; when such a condition fails, the
//! commit reads the key and decides again ([`Attempt`](super::commit)).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem, Update};

use super::model::Model;
use super::{
    COUNT, EXPIRES, GENERATION, Head, KIND, KIND_COLLECTION, KIND_COUNTER, Kind, PK, VALUE,
    VERSION, build_error, head_key,
};
use crate::error::Result;
use crate::store::batch::{Batch, Op};

/// How far from 0 a counter may be before an increment of `delta` (with
/// the contract's `limit`, see [`add_within`](crate::store::counter::add_within))
/// is refused: `Some((">=", low))` or `Some(("<=", high))`, the condition
/// on the stored number under which it applies; `None` when no stored
/// counter can refuse it (a `delta` of 0).
pub(super) fn counter_bound(delta: i64, limit: Option<i64>) -> Option<(&'static str, i128)> {
    // For delta > 0 an increment is refused when the sum passes i64::MAX
    // (current > MAX - delta), or when it ends beyond +limit further from
    // 0 than it started (current > limit - delta and 2·current + delta > 0,
    // i.e. current > floor(-delta / 2)). A negative delta mirrors it.
    let d = i128::from(delta);
    let limited = |d: i128| {
        limit.map(|l| {
            let l = i128::from(l.unsigned_abs());
            (l - d).max((-d).div_euclid(2))
        })
    };
    match delta {
        0 => None,
        1.. => {
            let overflow = i128::from(i64::MAX) - d;
            Some(("<=", limited(d).map_or(overflow, |b| b.min(overflow))))
        }
        _ => {
            let overflow = i128::from(i64::MIN) - d;
            Some((">=", limited(-d).map_or(overflow, |b| (-b).max(overflow))))
        }
    }
}

/// A fresh version token.
pub(super) fn version() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// The `Update` that adds `delta` to the counter at `key` without reading
/// it: it applies when the key holds nothing, or a counter that is live at
/// `now` and stays within range; it leaves the expiry as it is (a counter
/// made by it has none).
pub(super) fn counter_update(
    table: &str,
    key: &str,
    delta: i64,
    limit: Option<i64>,
    now: u64,
) -> Result<TransactWriteItem> {
    let mut condition = "(attribute_not_exists(#pk) OR (#kind = :kind AND \
                         (attribute_not_exists(#exp) OR #exp > :now)))"
        .to_owned();
    let mut values: HashMap<String, AttributeValue> = HashMap::from([
        (
            ":kind".to_owned(),
            AttributeValue::S(KIND_COUNTER.to_owned()),
        ),
        (":now".to_owned(), AttributeValue::N(now.to_string())),
        (":d".to_owned(), AttributeValue::N(delta.to_string())),
        (":ver".to_owned(), AttributeValue::S(version())),
    ]);
    if let Some((op, bound)) = counter_bound(delta, limit) {
        condition.push_str(&format!(
            " AND (attribute_not_exists(#v) OR #v {op} :bound)"
        ));
        values.insert(":bound".to_owned(), AttributeValue::N(bound.to_string()));
    }
    let names = HashMap::from([
        ("#pk".to_owned(), PK.to_owned()),
        ("#kind".to_owned(), KIND.to_owned()),
        ("#exp".to_owned(), EXPIRES.to_owned()),
        ("#v".to_owned(), VALUE.to_owned()),
        ("#ver".to_owned(), VERSION.to_owned()),
    ]);
    Ok(TransactWriteItem::builder()
        .update(
            Update::builder()
                .table_name(table)
                .set_key(Some(head_key(key)))
                .update_expression("SET #kind = :kind, #ver = :ver ADD #v :d")
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .build()
                .map_err(build_error)?,
        )
        .build())
}

/// What an add-and-remove of members does to a live collection's head.
pub(super) struct CountMove<'a> {
    pub key: &'a str,
    /// The generation read: the member items written belong to it.
    pub generation: u64,
    /// Members added minus members removed.
    pub delta: i64,
    /// How far below its count as read the batch takes the collection on
    /// the way (removals before additions): it must hold more than that,
    /// so it never empties (emptying it is a versioned write).
    pub dip: u64,
    /// Whether member items change (the version is replaced); when not, the
    /// head is only checked.
    pub writes: bool,
    pub now: u64,
}

/// The action on a live collection's head for a [`CountMove`]: an `Update`
/// that moves its count and replaces its version, or a `ConditionCheck`
/// when no member changes; either holds only while the head is the same
/// live generation holding more than `dip` members.
pub(super) fn count_update(table: &str, m: &CountMove<'_>) -> Result<TransactWriteItem> {
    let condition = "#kind = :kind AND #g = :g AND #n > :dip AND \
                     (attribute_not_exists(#exp) OR #exp > :now)";
    let mut names = HashMap::from([
        ("#kind".to_owned(), KIND.to_owned()),
        ("#g".to_owned(), GENERATION.to_owned()),
        ("#n".to_owned(), COUNT.to_owned()),
        ("#exp".to_owned(), EXPIRES.to_owned()),
    ]);
    let mut values: HashMap<String, AttributeValue> = HashMap::from([
        (
            ":kind".to_owned(),
            AttributeValue::S(KIND_COLLECTION.to_owned()),
        ),
        (":g".to_owned(), AttributeValue::N(m.generation.to_string())),
        (":dip".to_owned(), AttributeValue::N(m.dip.to_string())),
        (":now".to_owned(), AttributeValue::N(m.now.to_string())),
    ]);
    if !m.writes {
        return Ok(TransactWriteItem::builder()
            .condition_check(
                ConditionCheck::builder()
                    .table_name(table)
                    .set_key(Some(head_key(m.key)))
                    .condition_expression(condition)
                    .set_expression_attribute_names(Some(names))
                    .set_expression_attribute_values(Some(values))
                    .build()
                    .map_err(build_error)?,
            )
            .build());
    }
    names.insert("#ver".to_owned(), VERSION.to_owned());
    values.insert(":ver".to_owned(), AttributeValue::S(version()));
    values.insert(":d".to_owned(), AttributeValue::N(m.delta.to_string()));
    Ok(TransactWriteItem::builder()
        .update(
            Update::builder()
                .table_name(table)
                .set_key(Some(head_key(m.key)))
                .update_expression("SET #ver = :ver ADD #n :d")
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .build()
                .map_err(build_error)?,
        )
        .build())
}

/// The condition that a member item exists (`true`) or not, as it was
/// looked up.
pub(super) fn member_was(present: bool) -> (&'static str, HashMap<String, String>) {
    let expression = if present {
        "attribute_exists(#pk)"
    } else {
        "attribute_not_exists(#pk)"
    };
    (
        expression,
        HashMap::from([("#pk".to_owned(), PK.to_owned())]),
    )
}

/// What the batch does to one key.
#[derive(Debug, Default)]
pub(super) struct Shape {
    conditioned: bool,
    ops: usize,
    /// Increments, their sum, the last one's limit, and their signs.
    incrs: usize,
    sum: i128,
    limit: Option<i64>,
    up: bool,
    down: bool,
    /// An op on the key does more than add or remove a member.
    others: bool,
}

impl Shape {
    /// The increment of a counter the batch does nothing else to, as one
    /// delta: it can be `ADD`ed unread. Several increments are one delta
    /// when they share a sign and have no limit: applied one by one, they
    /// pass only between the start and the sum, so they overflow exactly
    /// when the sum does.
    pub(super) fn blind(&self) -> Option<(i64, Option<i64>)> {
        if self.conditioned || self.incrs == 0 || self.ops != self.incrs {
            return None;
        }
        if self.incrs > 1 && (self.limit.is_some() || (self.up && self.down)) {
            return None;
        }
        Some((i64::try_from(self.sum).ok()?, self.limit))
    }

    /// The batch only adds and removes members of the key.
    pub(super) fn members_only(&self) -> bool {
        !self.conditioned && self.ops > 0 && !self.others
    }
}

pub(super) fn shapes(batch: &Batch) -> HashMap<&str, Shape> {
    let mut shapes: HashMap<&str, Shape> = HashMap::new();
    for c in batch.conditions() {
        shapes.entry(c.key()).or_default().conditioned = true;
    }
    for op in batch.ops() {
        let shape = shapes.entry(op.key()).or_default();
        shape.ops += 1;
        shape.others |= !matches!(op, Op::Add { .. } | Op::Remove { .. });
        if let Op::Incr { delta, limit, .. } = op {
            shape.incrs += 1;
            shape.sum += i128::from(*delta);
            shape.limit = shape.limit.or(*limit);
            shape.up |= *delta > 0;
            shape.down |= *delta < 0;
        }
    }
    shapes
}

/// The generation and count of the live collection a key holds, when the
/// batch only adds and removes its members and never empties it: those are
/// written without its version ([`count_update`]).
pub(super) fn counted(shape: &Shape, live: Option<&Head>, model: &Model) -> Option<(u64, u64)> {
    let Some(Kind::Collection { count, generation }) = live.map(|h| &h.kind) else {
        return None;
    };
    let stays = model.retired.is_empty()
        && model
            .coll
            .as_ref()
            .is_some_and(|c| c.generation == *generation && c.count > 0);
    (shape.members_only() && *count > 0 && stays).then_some((*generation, *count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::counter::add_within;

    /// Whether the stored counter `current` passes the bound's condition.
    fn passes(current: i64, delta: i64, limit: Option<i64>) -> bool {
        match counter_bound(delta, limit) {
            None => true,
            Some(("<=", b)) => i128::from(current) <= b,
            Some((_, b)) => i128::from(current) >= b,
        }
    }

    #[test]
    fn the_bound_refuses_exactly_what_the_contract_refuses() {
        for limit in [None, Some(0), Some(1), Some(5), Some(-5)] {
            for current in -20..=20 {
                for delta in -30..=30 {
                    assert_eq!(
                        passes(current, delta, limit),
                        add_within("k", current, delta, limit).is_ok(),
                        "{current} + {delta} within {limit:?}"
                    );
                }
            }
        }
        let edges = [
            i64::MIN,
            i64::MIN + 1,
            -808,
            -1,
            0,
            1,
            807,
            i64::MAX - 1,
            i64::MAX,
        ];
        let limits = [None, Some(i64::MAX), Some(i64::MAX / 16), Some(3)];
        for current in edges {
            for delta in edges {
                for limit in limits {
                    assert_eq!(
                        passes(current, delta, limit),
                        add_within("k", current, delta, limit).is_ok(),
                        "{current} + {delta} within {limit:?}"
                    );
                }
            }
        }
    }
}
