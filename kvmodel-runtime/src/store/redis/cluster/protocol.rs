//! The cross-slot protocol: one attempt to commit a batch whose keys lie
//! in several hash slots (written down with every crash point in
//! `docs/cluster.md`). With a fresh write id:
//!
//! 1. **prepare**, every slot at once (but see below): the record's slot checks its
//!    conditions, takes its holds and writes the *intent* (prepared); every
//!    other slot checks its conditions, validates its operations, applies
//!    the early ones (claims, member additions), takes its holds and writes
//!    a *token* holding its late operations and what undoes the early ones
//!    (a slot that only gains members just gains them). A write that adds
//!    members early prepares the record's slot first and the others only
//!    once it holds the record: members carry no hold, so two writes of one
//!    record may add the same member, and the one that added it first must
//!    not take it back after the other found it there and committed;
//! 2. **commit**, the record's slot: the record's own operations applied
//!    and the intent marked committed — the commit point;
//! 3. **apply**, every token's slot at once: its late operations applied
//!    (counters, removals, deletes), its holds released, the token removed,
//!    in one script, so each applies once whoever runs it;
//! 4. **finish**, the record's slot: the intent removed, its holds released.
//!
//! A write holds a key exclusively (a lock), or shares it with writes that
//! also only read it in a condition, or that also only add to it
//! (`lua/cluster/locks.lua`). A failed condition or an invalid operation
//! anywhere undoes step 1 and reports as on one server. A key held against
//! it by another write makes this one undo step 1 and report it (`commit`
//! waits for that write, or finishes or undoes it once its lease has passed
//! twice, and starts again).

use std::time::Duration;

use futures_util::future::join_all;
use redis::Value;

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::cluster::commit::Attempt;
use crate::store::redis::cluster::plan::{Group, Role, guard_keys, never_waits, plan};
use crate::store::redis::cluster::slots::is_share_key;
use crate::store::redis::wire::{Met, Reply, reply};

/// Where a test makes a cross-slot commit stop, as if its process died
/// there ([`RedisClusterStore::crashing_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CrashPoint {
    /// Step 1 reached the record's slot and the first other slot only.
    PreparedPart,
    /// Step 1 reached every slot but the record's: tokens and early
    /// effects everywhere else, no intent.
    PreparedWithoutIntent,
    /// Step 1 done everywhere; nothing committed.
    Prepared,
    /// Step 2 done: committed, no late operation applied.
    Committed,
    /// Step 3 done in the first token's slot only.
    AppliedPart,
    /// Step 3 done everywhere; the intent and the record's locks remain.
    Applied,
}

impl CrashPoint {
    /// Every crash point, in protocol order.
    pub const ALL: [CrashPoint; 6] = [
        CrashPoint::PreparedPart,
        CrashPoint::PreparedWithoutIntent,
        CrashPoint::Prepared,
        CrashPoint::Committed,
        CrashPoint::AppliedPart,
        CrashPoint::Applied,
    ];
}

fn crashed(point: CrashPoint) -> Error {
    Error::backend(
        "redis-cluster",
        "commit a batch across slots",
        format!("the test hook stopped the write at {point:?}"),
    )
}

fn invalid(key: String, reason: String) -> Error {
    Error::InvalidBatch { key, reason }
}

/// What step 1 in one slot came to: the script's reply, or the error of
/// a lost reply (`None`: the test hook stopped it).
type Prepared = Result<std::result::Result<Reply, Option<redis::RedisError>>>;

/// A fresh write id for one attempt of the commit with `ticket`: the
/// ticket, then 64 random bits, in hex.
fn write_id(ticket: &str) -> String {
    format!("{ticket}{:016x}", fastrand::u64(..))
}

impl RedisClusterStore {
    /// `ARGV[2]` of a protocol script (`lua/cluster/step.lua`): `lease` in
    /// ms, then how far the lease clock is ahead, when it is.
    pub(crate) fn lease_arg(&self, lease: Duration) -> Vec<u8> {
        match self.lease_clock_ahead() {
            0 => lease.as_millis().to_string().into_bytes(),
            ahead => format!("{} {ahead}", lease.as_millis()).into_bytes(),
        }
    }

    /// Runs one protocol script for `group`: `KEYS` from the group, `ARGV`
    /// the write id, the lease, two step arguments and the group's own.
    async fn step(
        &self,
        script: &redis::Script,
        group: &Group,
        write: &str,
        extra: [&[u8]; 2],
        never_wait: bool,
    ) -> Result<std::result::Result<Reply, redis::RedisError>> {
        let keys = group.script_keys(&self.inner.prefix);
        let mut argv: Vec<Vec<u8>> = vec![
            write.as_bytes().to_vec(),
            self.lease_arg(self.inner.lease),
            extra[0].to_vec(),
            extra[1].to_vec(),
        ];
        argv.extend(group.script_args(never_wait));
        match self.run(script, &keys, &argv).await? {
            Ok(v) => Ok(Ok(reply(&v, "redis-cluster")?)),
            Err(e) => Ok(Err(e)),
        }
    }

    /// One attempt of the cross-slot protocol.
    pub(super) async fn commit_cross(&self, batch: &Batch, ticket: &str) -> Result<Attempt> {
        let write = write_id(ticket);
        let groups = plan(batch, &write, &self.inner.prefix);
        let prefix = &self.inner.prefix;
        // Tokens that append to a change feed come first, and step 3 (and
        // recovery, which follows this order) applies them before the
        // others: a record held in another slot is released only once its
        // events are in the feed, so no later write of it can put its own
        // event first.
        let mut tokens: Vec<&Group> = groups.iter().filter(|g| g.role == Role::Token).collect();
        tokens.sort_by_key(|g| g.appends.is_empty());
        let appending = tokens.iter().filter(|g| !g.appends.is_empty()).count();
        let token_keys: Vec<Vec<String>> = tokens.iter().map(|g| g.script_keys(prefix)).collect();
        let intent = groups[0].own.clone();
        let groups_arg = pack(&token_keys);
        let locks_arg = pack(&groups[0].keys);
        let scripts = &self.inner.scripts;

        // Step 1. A write that adds members early in other slots prepares
        // its record's slot first, and the others only once it holds the
        // record (`ordered`); any other write prepares every slot at once.
        let crash = self.crash;
        let nowait = never_waits(batch);
        let prepare = |i: usize| {
            let g = &groups[i];
            let own_keys = pack(&g.script_keys(prefix));
            let intent = intent.clone();
            let (groups_arg, locks_arg, write) = (&groups_arg, &locks_arg, write.as_str());
            async move {
                let stopped = match crash {
                    Some(CrashPoint::PreparedPart) => i > 1,
                    Some(CrashPoint::PreparedWithoutIntent) => g.role == Role::Primary,
                    _ => false,
                };
                if stopped {
                    return Ok(Err(None));
                }
                let r = match g.role {
                    Role::Primary => {
                        self.step(
                            &scripts.prepare_primary,
                            g,
                            write,
                            [groups_arg, locks_arg],
                            nowait,
                        )
                        .await?
                    }
                    Role::Token => {
                        self.step(
                            &scripts.prepare_group,
                            g,
                            write,
                            [intent.as_bytes(), &own_keys],
                            nowait,
                        )
                        .await?
                    }
                    Role::Adds => {
                        self.step(&scripts.prepare_adds, g, write, [b"", b""], nowait)
                            .await?
                    }
                };
                Ok::<_, Error>(r.map_err(Some))
            }
        };
        let ordered = groups.iter().skip(1).any(Group::adds_early);
        let prepared: Vec<Option<Prepared>> = if ordered {
            let first = prepare(0).await;
            // Refused in the record's slot: nothing else is sent (a stop
            // of the test hook goes on, as a crash there would not stop
            // the other slots of a write prepared all at once).
            let go_on = matches!(first, Ok(Ok(Reply::Done(_))) | Ok(Err(None)));
            let mut rest: Vec<Option<Prepared>> = if go_on {
                join_all((1..groups.len()).map(prepare))
                    .await
                    .into_iter()
                    .map(Some)
                    .collect()
            } else {
                (1..groups.len()).map(|_| None).collect()
            };
            rest.insert(0, Some(first));
            rest
        } else {
            join_all((0..groups.len()).map(prepare))
                .await
                .into_iter()
                .map(Some)
                .collect()
        };
        if let Some(
            point @ (CrashPoint::PreparedPart
            | CrashPoint::PreparedWithoutIntent
            | CrashPoint::Prepared),
        ) = crash
        {
            return Err(crashed(point));
        }
        let mut failed: Option<usize> = None;
        let mut contended = false;
        let mut bad: Option<Error> = None;
        let mut locked: Option<Met> = None;
        let mut again = false;
        let mut added: Vec<Option<Vec<u8>>> = vec![None; groups.len()];
        let sent: Vec<bool> = prepared.iter().map(Option::is_some).collect();
        for (i, r) in prepared.into_iter().enumerate() {
            let Some(r) = r else { continue };
            match r {
                Ok(Ok(Reply::Done(extra))) => added[i] = Some(extra),
                Ok(Ok(Reply::Failed { index, held })) => {
                    failed = Some(failed.map_or(index, |f| f.min(index)));
                    contended |= held;
                }
                Ok(Ok(Reply::Invalid { key, reason })) => bad = Some(invalid(key, reason)),
                Ok(Ok(Reply::Locked(met))) => locked = Some(met),
                Ok(Ok(Reply::Refused(_))) => again = true,
                Ok(Err(e)) => {
                    bad.get_or_insert_with(|| match e {
                        Some(e) => Error::OutcomeUnknown {
                            backend: "redis-cluster",
                            source: Box::new(e),
                        },
                        None => crashed(CrashPoint::PreparedPart),
                    });
                }
                Err(e) => bad = Some(e),
            }
        }
        let all_done = added.iter().all(Option::is_some);
        if !all_done {
            self.drop_prepared(&groups, &write, &added, &sent).await;
            if let Some(index) = failed {
                return Ok(if contended {
                    Attempt::Contended(index)
                } else {
                    Attempt::Done(Outcome::Failed { index })
                });
            }
            if let Some(Error::OutcomeUnknown { source, .. }) = bad {
                // Step 1 was undone, so nothing was written after all.
                return Err(Error::backend(
                    "redis-cluster",
                    "prepare a write across slots (it was undone; nothing was written)",
                    source,
                ));
            }
            if let Some(e) = bad {
                return Err(e);
            }
            if let Some(met) = locked {
                return Ok(Attempt::Locked(met));
            }
            debug_assert!(again);
            return Ok(Attempt::Again);
        }

        // Step 2: the commit point.
        let finish_now: &[u8] = if token_keys.is_empty() { b"1" } else { b"0" };
        let committed = self
            .step(
                &scripts.commit,
                &groups[0],
                &write,
                [finish_now, b""],
                nowait,
            )
            .await?;
        match committed {
            Ok(Reply::Done(_)) => {}
            Ok(other) => {
                self.drop_prepared(&groups, &write, &added, &sent).await;
                return Ok(match other {
                    Reply::Failed { index, held: false } => {
                        Attempt::Done(Outcome::Failed { index })
                    }
                    Reply::Failed { index, held: true } => Attempt::Contended(index),
                    Reply::Invalid { key, reason } => return Err(invalid(key, reason)),
                    Reply::Locked(met) => Attempt::Locked(met),
                    _ => Attempt::Again,
                });
            }
            Err(lost) => {
                // The reply was lost: the intent tells whether it committed.
                if !self
                    .settle_own(&intent, &write)
                    .await
                    .map_err(|_| Error::OutcomeUnknown {
                        backend: "redis-cluster",
                        source: Box::new(lost),
                    })?
                {
                    return Err(Error::backend(
                        "redis-cluster",
                        "commit a write across slots (it was undone; nothing was written)",
                        "the reply to the commit was lost",
                    ));
                }
            }
        }
        if token_keys.is_empty() {
            return Ok(Attempt::Done(Outcome::Applied));
        }
        if crash == Some(CrashPoint::Committed) {
            return Err(crashed(CrashPoint::Committed));
        }

        // Step 3, every token at once; step 4.
        let limit = if crash == Some(CrashPoint::AppliedPart) {
            1
        } else {
            token_keys.len()
        };
        let (first, rest) = token_keys[..limit].split_at(appending.min(limit));
        let mut applied = join_all(
            first
                .iter()
                .map(|keys| self.token_step(&scripts.apply, keys, &write)),
        )
        .await;
        if applied.iter().all(Result::is_ok) {
            let more = rest
                .iter()
                .map(|keys| self.token_step(&scripts.apply, keys, &write));
            applied.extend(join_all(more).await);
        }
        if let Some(point @ (CrashPoint::AppliedPart | CrashPoint::Applied)) = crash {
            return Err(crashed(point));
        }
        if applied.iter().all(Result::is_ok) {
            let _ = self.finish(&intent, &groups[0].keys, &write, b"c").await;
        }
        // After the commit point the write stands: what failed to apply is
        // applied by whoever meets its locks, or by recovery.
        Ok(Attempt::Done(Outcome::Applied))
    }

    /// Runs `apply` or `undo` for the token whose `KEYS` are `keys`.
    pub(crate) async fn token_step(
        &self,
        script: &redis::Script,
        keys: &[String],
        write: &str,
    ) -> Result<()> {
        let upgraded;
        let keys = if keys.len() > 1
            && !keys
                .last()
                .is_some_and(|k| is_share_key(&self.inner.prefix, k))
        {
            // A token of a version before shared holds: its own key, data
            // keys and locks; the shared holds' keys are added.
            let n = (keys.len() - 1) / 2;
            upgraded = std::iter::once(keys[0].clone())
                .chain(guard_keys(&keys[1..=n], &self.inner.prefix))
                .collect::<Vec<_>>();
            &upgraded[..]
        } else {
            keys
        };
        let n = keys.len().saturating_sub(1) / 3;
        let flags = "-".repeat(n);
        let n = n.to_string();
        let argv: Vec<Vec<u8>> = vec![
            write.as_bytes().to_vec(),
            b"0".to_vec(),
            Vec::new(),
            Vec::new(),
            n.into_bytes(),
            flags.into_bytes(),
            b"0".to_vec(),
            b"0".to_vec(),
        ];
        match self.run(script, keys, &argv).await? {
            Ok(_) => Ok(()),
            Err(e) => Err(Error::backend(
                "redis-cluster",
                "finish or undo a write in one slot",
                e,
            )),
        }
    }

    /// Step 4 (or its abort forms): `mode` `c`, `d` or `a` (see `lua/cluster/finish.lua`).
    pub(crate) async fn finish(
        &self,
        intent: &str,
        keys: &[String],
        write: &str,
        mode: &[u8],
    ) -> Result<()> {
        let mut all = vec![intent.to_owned()];
        all.extend(guard_keys(keys, &self.inner.prefix));
        let argv: Vec<Vec<u8>> = vec![
            write.as_bytes().to_vec(),
            b"0".to_vec(),
            mode.to_vec(),
            Vec::new(),
            keys.len().to_string().into_bytes(),
            "-".repeat(keys.len()).into_bytes(),
            b"0".to_vec(),
            b"0".to_vec(),
        ];
        match self.run(&self.inner.scripts.finish, &all, &argv).await? {
            Ok(_) => Ok(()),
            Err(e) => Err(Error::backend("redis-cluster", "finish a write", e)),
        }
    }

    /// Undoes step 1 of a write its writer gives up before the commit
    /// point: tokens undone and new members of member-only slots removed,
    /// then the intent dropped and the record's holds released — in that
    /// order, so that no early claim or member outlives the hold on its
    /// record (`verify` takes a member beside a held record for a write in
    /// flight). Best effort: what stays is a leftover that readers see
    /// through and others undo once the lease has passed.
    async fn drop_prepared(
        &self,
        groups: &[Group],
        write: &str,
        added: &[Option<Vec<u8>>],
        sent: &[bool],
    ) {
        let prefix = &self.inner.prefix;
        let undo = groups
            .iter()
            .zip(added)
            .zip(sent)
            .map(|((g, a), sent)| async move {
                if !sent {
                    return;
                }
                match g.role {
                    Role::Primary => {}
                    Role::Token => {
                        let keys = g.script_keys(prefix);
                        let _ = self
                            .token_step(&self.inner.scripts.undo, &keys, write)
                            .await;
                    }
                    Role::Adds => {
                        let Some(flags) = a else { return };
                        for ((op, _), flag) in g.ops.iter().zip(flags) {
                            if *flag == b'1' {
                                if let crate::store::Op::Add { key, sort, member } = op {
                                    let mut cmd = redis::cmd("ZREM");
                                    cmd.arg(key).arg(crate::store::encode_entry(sort, member));
                                    let _: Result<Value> = self.query(&cmd, "undo a member").await;
                                }
                            }
                        }
                    }
                }
            });
        join_all(undo).await;
        if let Some(primary) = groups.iter().find(|g| g.role == Role::Primary) {
            let _ = self.finish(&primary.own, &primary.keys, write, b"d").await;
        }
    }
}

/// The lists an intent or a token carries for recovery, in MessagePack
/// (read back by [`unpack`]).
pub(crate) fn pack<T: serde::Serialize>(value: &T) -> Vec<u8> {
    rmp_serde::to_vec(value).unwrap_or_default()
}

/// Reads a list [`pack`] wrote; an empty or unreadable one is empty.
pub(crate) fn unpack<T: serde::de::DeserializeOwned + Default>(bytes: &[u8]) -> T {
    rmp_serde::from_slice(bytes).unwrap_or_default()
}
