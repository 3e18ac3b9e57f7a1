//! The actions of one `TransactWriteItems`, key by key: a versioned head
//! and its members, a collection moved without its version, a member item.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem};

use super::blind;
use super::commit::{MAX_ITEM_BYTES, limit_error};
use super::model::{Model, member_key};
use super::{
    DynamoStore, Head, Item, MAX_SORT_KEY_BYTES, PK, SK, VERSION, build_error, check_partition_key,
    head_key,
};
use crate::error::Result;

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

/// The size of `item` (`what` of `key`), or the error naming DynamoDB's
/// limit on one item.
fn sized(key: &str, item: &Item, what: &str) -> Result<usize> {
    // A member item's partition key (a shard of a collection) may be longer
    // than the batch key it serves.
    if let Some(AttributeValue::S(pk)) = item.get(PK) {
        check_partition_key(key, pk)?;
    }
    if let Some(AttributeValue::B(sk)) = item.get(SK)
        && sk.as_ref().len() > MAX_SORT_KEY_BYTES
    {
        return Err(limit_error(
            key,
            format!(
                "a member's entry (its sort part and member) would take {} bytes of the sort \
                 key, beyond DynamoDB's limit of {MAX_SORT_KEY_BYTES} bytes",
                sk.as_ref().len()
            ),
        ));
    }
    let size = item_size(item);
    if size > MAX_ITEM_BYTES {
        return Err(limit_error(
            key,
            format!("{what} would be {size} bytes, beyond DynamoDB's limit of 400 KB per item"),
        ));
    }
    Ok(size)
}

/// The actions of one `TransactWriteItems`, as they are built.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) actions: Vec<TransactWriteItem>,
    /// `unread[i]`: action `i` increments a counter it did not read.
    pub(super) unread: Vec<bool>,
    /// How many items are written (not only checked).
    pub(super) writes: usize,
    /// The bytes of the items written.
    pub(super) bytes: usize,
}

impl Plan {
    pub(super) fn push(&mut self, action: TransactWriteItem, bytes: usize, unread: bool) {
        self.actions.push(action);
        self.unread.push(unread);
        self.bytes += bytes;
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
    /// The actions of a key written under the version it was read at: its
    /// head, the current collection's member changes, and every stored
    /// member of a collection the batch retired.
    pub(super) fn versioned_actions(
        &self,
        plan: &mut Plan,
        key: &str,
        stored: Option<&Head>,
        model: Model,
    ) -> Result<()> {
        let (condition, names, values) = unchanged(stored);
        if !model.changed {
            let check = ConditionCheck::builder()
                .table_name(&*self.table)
                .set_key(Some(head_key(key)))
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(values)
                .build()
                .map_err(build_error)?;
            plan.push(
                TransactWriteItem::builder().condition_check(check).build(),
                0,
                false,
            );
        } else {
            plan.writes += 1;
            match model.kind() {
                Some(kind) => {
                    let item = Head::item(key, &kind, model.exp, &blind::version());
                    let size = sized(key, &item, "its item")?;
                    let put = Put::builder()
                        .table_name(&*self.table)
                        .set_item(Some(item))
                        .condition_expression(condition)
                        .set_expression_attribute_names(Some(names))
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build_error)?;
                    plan.push(TransactWriteItem::builder().put(put).build(), size, false);
                }
                None => {
                    let delete = Delete::builder()
                        .table_name(&*self.table)
                        .set_key(Some(head_key(key)))
                        .condition_expression(condition)
                        .set_expression_attribute_names(Some(names))
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build_error)?;
                    plan.push(
                        TransactWriteItem::builder().delete(delete).build(),
                        0,
                        false,
                    );
                }
            }
        }
        for coll in &model.retired {
            for (entry, present) in &coll.stored {
                if *present {
                    self.member_action(plan, key, coll.generation, entry, false, None)?;
                }
            }
        }
        if let Some(coll) = &model.coll {
            for (entry, present) in &coll.changes {
                let was = coll.stored.get(entry).copied().unwrap_or(false);
                if *present != was {
                    self.member_action(plan, key, coll.generation, entry, *present, None)?;
                }
            }
        }
        Ok(())
    }

    /// The actions of members added to and removed from a live collection
    /// (its generation and count as read) without its version: its count
    /// moved by `ADD`, and each member looked up conditioned on being as it
    /// was.
    pub(super) fn count_actions(
        &self,
        plan: &mut Plan,
        key: &str,
        (generation, count): (u64, u64),
        model: &Model,
        now: u64,
    ) -> Result<()> {
        let coll = model
            .coll
            .as_ref()
            .expect("a counted key holds a collection");
        let (mut added, mut removed) = (0u64, 0u64);
        for (entry, was) in &coll.stored {
            match (*was, coll.present(entry)) {
                (false, true) => added += 1,
                (true, false) => removed += 1,
                _ => {}
            }
        }
        let delta =
            i64::try_from(added).unwrap_or(i64::MAX) - i64::try_from(removed).unwrap_or(i64::MAX);
        let writes = added + removed > 0;
        let head = blind::count_update(
            &self.table,
            &blind::CountMove {
                key,
                generation,
                delta,
                dip: count.saturating_sub(coll.low),
                writes,
                now,
            },
        )?;
        plan.push(head, 0, false);
        if writes {
            plan.writes += 1;
        }
        for (entry, was) in &coll.stored {
            self.member_action(
                plan,
                key,
                generation,
                entry,
                coll.present(entry),
                Some(*was),
            )?;
        }
        Ok(())
    }

    /// The action on one member item: written (`present`) or deleted; with
    /// `was`, conditioned on being as it was looked up (only checked when
    /// it does not change).
    fn member_action(
        &self,
        plan: &mut Plan,
        key: &str,
        generation: u64,
        entry: &[u8],
        present: bool,
        was: Option<bool>,
    ) -> Result<()> {
        let item = member_key(key, generation, entry);
        let guard = was.map(blind::member_was);
        let (condition, names) = match guard {
            Some((c, n)) => (Some(c.to_owned()), Some(n)),
            None => (None, None),
        };
        if was == Some(present) {
            let check = ConditionCheck::builder()
                .table_name(&*self.table)
                .set_key(Some(item))
                .set_condition_expression(condition)
                .set_expression_attribute_names(names)
                .build()
                .map_err(build_error)?;
            plan.push(
                TransactWriteItem::builder().condition_check(check).build(),
                0,
                false,
            );
            return Ok(());
        }
        plan.writes += 1;
        if present {
            let size = sized(key, &item, "a member item")?;
            let put = Put::builder()
                .table_name(&*self.table)
                .set_item(Some(item))
                .set_condition_expression(condition)
                .set_expression_attribute_names(names)
                .build()
                .map_err(build_error)?;
            plan.push(TransactWriteItem::builder().put(put).build(), size, false);
        } else {
            let delete = Delete::builder()
                .table_name(&*self.table)
                .set_key(Some(item))
                .set_condition_expression(condition)
                .set_expression_attribute_names(names)
                .build()
                .map_err(build_error)?;
            plan.push(
                TransactWriteItem::builder().delete(delete).build(),
                0,
                false,
            );
        }
        Ok(())
    }
}
