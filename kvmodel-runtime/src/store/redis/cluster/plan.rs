//! A cross-slot batch cut into one group per hash slot, and each group
//! encoded for the protocol's scripts.
//!
//! The *primary* group is the slot of the batch's first condition (the
//! record, in every batch a repository writes), or of its first operation;
//! its operations apply at the commit point. In every other slot an
//! operation is *early* (applied in step 1, before the commit point, and
//! undone if the write aborts) when readers can see through it until the
//! record commits: adding a collection member, or putting a value that a
//! condition of the batch requires absent (or already equal) — a unique
//! claim. Every other operation is *late* (applied after the commit point).
//! Early or late is decided per key, so the operations on one key keep
//! their order. A slot with nothing but member additions needs no token.
//!
//! A change-feed append is an operation (`f`) in its stream's slot: at the
//! commit point when that is the record's slot, otherwise always late, so
//! an event is never visible for a write that is undone, and it is applied
//! once, with its token. Appends take no hold on the stream: concurrent
//! writes of one entity append side by side.

use crate::store::batch::{Batch, Condition, Op};
use crate::store::feed::FeedAppend;
use std::collections::HashMap;

use crate::store::redis::cluster::slots::{intent_key, lock_key, share_key, slot_of, token_key};
use crate::store::redis::wire::{encode_append, encode_condition, encode_op};

/// What a group asks of its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The slot of the record: step 1 locks and writes the intent, step 2
    /// commits.
    Primary,
    /// Another slot with conditions, values or late operations: step 1
    /// prepares a token, step 3 applies it.
    Token,
    /// Another slot the write only adds members to: step 1 adds them.
    Adds,
}

/// The part of a batch in one hash slot.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) slot: u16,
    pub(crate) role: Role,
    /// The step's own key (the intent for the primary, else the token).
    pub(crate) own: String,
    /// Distinct data keys, in first-seen order.
    pub(crate) keys: Vec<String>,
    /// Per key, how the write holds it ([`hold_flags`]).
    pub(crate) holds: String,
    /// (batch index, condition).
    pub(crate) conditions: Vec<(usize, Condition)>,
    /// (operation, early).
    pub(crate) ops: Vec<(Op, bool)>,
    /// Change-feed appends to streams of this slot, applied after `ops`
    /// (at the commit point in the primary slot, late elsewhere).
    pub(crate) appends: Vec<FeedAppend>,
}

impl Group {
    fn index(&self, key: &str) -> usize {
        self.keys.iter().position(|k| k == key).map_or(0, |i| i + 1)
    }

    /// `KEYS`: own key, data keys, their locks and shared holds.
    pub(crate) fn script_keys(&self, prefix: &str) -> Vec<String> {
        let mut keys = vec![self.own.clone()];
        keys.extend(guard_keys(&self.keys, prefix));
        keys
    }

    /// `ARGV` after the write id, lease and the two step arguments: key
    /// count, hold flags (ending in `!` for a batch that never waits),
    /// conditions, operations (the feed appends last, as operations `f`,
    /// never early).
    pub(crate) fn script_args(&self, never_wait: bool) -> Vec<Vec<u8>> {
        let mut flags = self.holds.clone();
        if never_wait {
            flags.push('!');
        }
        let mut argv = vec![
            self.keys.len().to_string().into_bytes(),
            flags.into_bytes(),
            self.conditions.len().to_string().into_bytes(),
        ];
        for (index, c) in &self.conditions {
            let (kind, want) = encode_condition(c);
            argv.push(kind.to_vec());
            argv.push(self.index(c.key()).to_string().into_bytes());
            argv.push(want.to_vec());
            argv.push(index.to_string().into_bytes());
        }
        let count = self.ops.len() + self.appends.len();
        argv.push(count.to_string().into_bytes());
        for (op, early) in &self.ops {
            let (kind, a, b) = encode_op(op);
            argv.push(kind.to_vec());
            argv.push(self.index(op.key()).to_string().into_bytes());
            argv.push(a);
            argv.push(b);
            argv.push(if *early { b"1".to_vec() } else { b"0".to_vec() });
        }
        for append in &self.appends {
            let (kind, a, b) = encode_append(append);
            argv.push(kind.to_vec());
            argv.push(self.index(&append.feed).to_string().into_bytes());
            argv.push(a);
            argv.push(b);
            argv.push(b"0".to_vec());
        }
        argv
    }
}

/// `keys`, then the lock of each, then the shared holds of each: the
/// `KEYS` of a script that meets other writes' holds on `keys`.
pub(crate) fn guard_keys(keys: &[String], prefix: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(3 * keys.len());
    out.extend(keys.iter().cloned());
    out.extend(keys.iter().map(|k| lock_key(prefix, k)));
    out.extend(keys.iter().map(|k| share_key(prefix, k)));
    out
}

/// How a write holds each of `keys` until its last effect is applied, one
/// flag per key (`lua/cluster/locks.lua`): `L` exclusively when it puts or deletes
/// the key, or both conditions on and increments it; `S` shared when it
/// only conditions on it; `I` shared when it only increments it (writes
/// that add to one counter go on together); `-` not at all (collection
/// members, times to live, change-feed appends, which are not operations
/// here and so leave their stream's flag `-`).
pub(crate) fn hold_flags<'a>(
    keys: &[String],
    conditions: impl IntoIterator<Item = &'a Condition>,
    ops: impl IntoIterator<Item = &'a Op>,
) -> String {
    let at: HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    // Per key: (read, replaced, added to).
    let mut how = vec![(false, false, false); keys.len()];
    for c in conditions {
        if let Some(&i) = at.get(c.key()) {
            how[i].0 = true;
        }
    }
    for op in ops {
        if let Some(&i) = at.get(op.key()) {
            match op {
                Op::Put { .. } | Op::Delete { .. } | Op::DeleteIfEquals { .. } => how[i].1 = true,
                Op::Incr { .. } => how[i].2 = true,
                _ => {}
            }
        }
    }
    how.into_iter()
        .map(|(read, replaced, added)| match (read, replaced, added) {
            (_, true, _) | (true, _, true) => 'L',
            (true, false, false) => 'S',
            (false, false, true) => 'I',
            (false, false, false) => '-',
        })
        .collect()
}

/// Whether `batch` never waits for other writes: it does not write the
/// key of its first condition. Such a batch works on the entries of a
/// record it leaves alone (the clean-ups of listings and of expiry, the
/// repairs of `reconcile`), so a condition on a key another unfinished
/// write holds fails at once instead, and the work is left for later.
pub(crate) fn never_waits(batch: &Batch) -> bool {
    let Some(first) = batch.conditions().first() else {
        return false;
    };
    !batch.ops().iter().any(|op| op.key() == first.key())
}

/// The distinct hash slots of a batch's keys (its feeds' streams too).
pub(crate) fn slots(batch: &Batch) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::new();
    let keys = batch
        .conditions()
        .iter()
        .map(Condition::key)
        .chain(batch.ops().iter().map(Op::key))
        .chain(batch.appends().iter().map(|a| a.feed.as_str()));
    for k in keys {
        let s = slot_of(k);
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Whether a secondary-slot key's operations can all apply before the
/// commit point: only member additions, or only puts of the value a
/// condition of the batch requires absent or equal (a claim).
fn early_key(key: &str, ops: &[&Op], conditions: &[&Condition]) -> bool {
    if ops.iter().all(|op| matches!(op, Op::Add { .. })) {
        return true;
    }
    ops.iter().all(|op| match op {
        Op::Put { value, .. } => {
            conditions.iter().all(|c| match c {
                Condition::Absent(_) => true,
                Condition::AbsentOrEquals(_, want) => want == value,
                Condition::Equals(..) | Condition::Present(_) => false,
            }) && !conditions.is_empty()
                && conditions.iter().all(|c| c.key() == key)
        }
        _ => false,
    })
}

impl Group {
    fn new(slot: u16, primary: bool, write: &str, prefix: &str) -> Group {
        Group {
            slot,
            role: if primary { Role::Primary } else { Role::Token },
            own: if primary {
                intent_key(prefix, slot, write)
            } else {
                token_key(prefix, slot, write)
            },
            keys: Vec::new(),
            holds: String::new(),
            conditions: Vec::new(),
            ops: Vec::new(),
            appends: Vec::new(),
        }
    }

    /// Whether step 1 adds members here before the commit point. Another
    /// write of the record may add the same member meanwhile and rely on
    /// it, so such a write prepares this slot only while it holds its
    /// record (`protocol`): undoing the member is then safe.
    pub(crate) fn adds_early(&self) -> bool {
        self.ops
            .iter()
            .any(|(op, early)| *early && matches!(op, Op::Add { .. }))
    }

    /// Notes that the group touches `key`.
    fn touch(&mut self, key: &str) {
        if !self.keys.iter().any(|k| k == key) {
            self.keys.push(key.to_owned());
        }
    }

    /// Marks each operation early or late, and a group of member
    /// additions only as such.
    fn classify(&mut self) {
        let early: Vec<bool> = self
            .keys
            .iter()
            .map(|k| {
                let ops: Vec<&Op> = self
                    .ops
                    .iter()
                    .map(|(op, _)| op)
                    .filter(|op| op.key() == k)
                    .collect();
                let conditions: Vec<&Condition> = self
                    .conditions
                    .iter()
                    .map(|(_, c)| c)
                    .filter(|c| c.key() == k)
                    .collect();
                early_key(k, &ops, &conditions)
            })
            .collect();
        for (op, e) in &mut self.ops {
            *e = self
                .keys
                .iter()
                .position(|k| k == op.key())
                .is_some_and(|i| early[i]);
        }
        let adds_only =
            self.appends.is_empty() && self.ops.iter().all(|(op, _)| matches!(op, Op::Add { .. }));
        if self.conditions.is_empty() && adds_only {
            self.role = Role::Adds;
        }
    }
}

/// The group of `slot` in `groups`, added when missing.
fn group_of<'a>(groups: &'a mut Vec<Group>, slot: u16, write: &str, prefix: &str) -> &'a mut Group {
    let i = match groups.iter().position(|g| g.slot == slot) {
        Some(i) => i,
        None => {
            groups.push(Group::new(slot, false, write, prefix));
            groups.len() - 1
        }
    };
    &mut groups[i]
}

/// Cuts `batch` into groups for write `write`: the primary first.
pub(crate) fn plan(batch: &Batch, write: &str, prefix: &str) -> Vec<Group> {
    let primary = batch
        .conditions()
        .first()
        .map(|c| slot_of(c.key()))
        .or_else(|| batch.ops().first().map(|op| slot_of(op.key())))
        .unwrap_or(0);
    let mut groups = vec![Group::new(primary, true, write, prefix)];
    for (i, c) in batch.conditions().iter().enumerate() {
        let g = group_of(&mut groups, slot_of(c.key()), write, prefix);
        g.touch(c.key());
        g.conditions.push((i, c.clone()));
    }
    for op in batch.ops() {
        let g = group_of(&mut groups, slot_of(op.key()), write, prefix);
        g.touch(op.key());
        g.ops.push((op.clone(), false));
    }
    for a in batch.appends() {
        let g = group_of(&mut groups, slot_of(&a.feed), write, prefix);
        g.touch(&a.feed);
        g.appends.push(a.clone());
    }
    for g in &mut groups {
        // An increment is held too: a write that conditions on the counter
        // (a parent's delete on its count of children) must see it or wait
        // for it, never check between this write's commit point and the
        // increment's late application.
        g.holds = hold_flags(
            &g.keys,
            g.conditions.iter().map(|(_, c)| c),
            g.ops.iter().map(|(op, _)| op),
        );
    }
    for g in groups.iter_mut().skip(1) {
        g.classify();
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role_of(groups: &[Group], key: &str) -> (Role, bool) {
        let g = groups
            .iter()
            .find(|g| g.keys.iter().any(|k| k == key))
            .unwrap();
        let early = g
            .ops
            .iter()
            .find(|(op, _)| op.key() == key)
            .is_some_and(|(_, e)| *e);
        (g.role, early)
    }

    #[test]
    fn a_create_is_cut_into_record_claim_members_and_counters() {
        let mut b = Batch::new();
        b.absent("s:user:1")
            .put("s:user:1", b"{}".to_vec(), None)
            .absent_or_equals("s:user#uniq:email:a", b"s:user:1".to_vec())
            .put("s:user#uniq:email:a", b"s:user:1".to_vec(), None)
            .add("s:user#idx:status:x", vec![1], b"s:user:1".to_vec())
            .incr("s:user#count:total", 1)
            .delete("s:user#uniq:email:old");
        let groups = plan(&b, "w", "");
        assert_eq!(groups[0].role, Role::Primary);
        assert_eq!(groups[0].keys, ["s:user:1"]);
        assert_eq!(role_of(&groups, "s:user#uniq:email:a"), (Role::Token, true));
        assert_eq!(role_of(&groups, "s:user#idx:status:x"), (Role::Adds, true));
        assert!(!role_of(&groups, "s:user#count:total").1);
        assert!(!role_of(&groups, "s:user#uniq:email:old").1);
        // Only the member's slot adds early: the write holds its record
        // before it prepares the others.
        let adding: Vec<bool> = groups.iter().map(Group::adds_early).collect();
        let at = |key: &str| groups.iter().position(|g| g.keys.iter().any(|k| k == key));
        assert_eq!(adding.iter().filter(|a| **a).count(), 1, "{adding:?}");
        assert!(adding[at("s:user#idx:status:x").unwrap()]);
    }

    #[test]
    fn a_feed_append_is_late_and_held_by_nobody() {
        let feed = "s:user#feed";
        let mut b = Batch::new();
        b.absent("s:user:1").put("s:user:1", b"{}".to_vec(), None);
        b.append(feed, b"event".to_vec(), std::time::Duration::from_secs(60));
        assert_eq!(slots(&b).len(), 2, "the stream's slot is the batch's too");
        let groups = plan(&b, "w", "");
        let g = groups.iter().find(|g| g.keys == [feed]).unwrap();
        assert_eq!(g.role, Role::Token, "applied with a token, in step 3");
        assert_eq!(g.holds, "-", "appends share the stream");
        let args = g.script_args(false);
        // key count, flags, no condition, one operation: `f`, key 1, the
        // entry, the retention in ms, late.
        let tail: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        assert_eq!(
            tail,
            [
                &b"1"[..],
                b"-",
                b"0",
                b"1",
                b"f",
                b"1",
                b"event",
                b"60000",
                b"0"
            ]
        );
        // In the record's slot, it is the record's group's: the commit point.
        let mut c = Batch::new();
        c.absent("{t}a").put("{t}a", b"1".to_vec(), None);
        c.add("elsewhere", vec![], b"m".to_vec());
        c.append("{t}feed", b"e".to_vec(), std::time::Duration::from_secs(1));
        let groups = plan(&c, "w", "");
        assert_eq!(groups[0].keys, ["{t}a", "{t}feed"]);
        assert_eq!(groups[0].appends.len(), 1);
        assert_eq!(groups[1].role, Role::Adds);
    }

    #[test]
    fn ops_on_one_key_stay_together() {
        let mut b = Batch::new();
        b.absent("a").put("a", b"1".to_vec(), None);
        b.add("set", vec![], b"m".to_vec())
            .expire("set", std::time::Duration::from_secs(1));
        b.absent("claim")
            .put("claim", b"x".to_vec(), None)
            .incr("claim", 1);
        let groups = plan(&b, "w", "");
        assert_eq!(role_of(&groups, "set"), (Role::Token, false));
        assert_eq!(role_of(&groups, "claim"), (Role::Token, false));
    }
}
