//! Finishing or undoing cross-slot writes whose writer is gone.
//!
//! Every leftover of the protocol names its write and where its intent
//! lives: a lock (or a shared hold) holds `write|deadline|intent|token`, a
//! token its intent,
//! the intent its tokens and locked keys. The intent decides: committed
//! writes are finished (late operations applied once, locks released),
//! prepared ones past their lease (plus a margin of one more lease) are
//! marked aborted — so their writer can no longer commit — and undone. A
//! missing intent is written as an aborted tombstone first, for the same
//! reason. Three paths lead here: a write that meets a lock of a write past
//! its lease, `reconcile` (through [`Store::recover`](crate::Store::recover)),
//! and [`RedisClusterStore::recover_now`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;

use crate::error::{Error, Result};
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::cluster::protocol::unpack;
use crate::store::redis::cluster::slots::OWN;
use crate::store::redis::wire::{bytes, prefix_pattern, text};

/// What a recovery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Committed writes whose remaining effects were applied.
    pub finished: u64,
    /// Writes that never committed, whose early effects were undone.
    pub undone: u64,
    /// Unfinished writes still within their lease, left to their writers.
    pub live: u64,
}

/// What became of one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Finished,
    Undone,
    Live,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A lock's value: (write, deadline, intent, token).
fn parse_lock(held: &str) -> Option<(&str, u64, &str, &str)> {
    let mut parts = held.splitn(4, '|');
    let write = parts.next()?;
    let deadline = parts.next()?.parse().ok()?;
    let intent = parts.next()?;
    let token = parts.next()?;
    Some((write, deadline, intent, token))
}

impl RedisClusterStore {
    fn margin_ms(&self) -> u64 {
        u64::try_from(self.margin().as_millis()).unwrap_or(u64::MAX)
    }

    /// How long an aborted intent stays, so that its writer can never
    /// commit it: far longer than any step takes.
    fn tombstone(&self) -> Duration {
        (self.inner.lease * 20).max(Duration::from_secs(60))
    }

    /// Whether a write whose deadline is `deadline` is past its lease and
    /// margin, by this process's clock (moved on as far as the lease clock
    /// is ahead).
    fn overdue(&self, deadline: u64) -> bool {
        now_ms().saturating_add(self.lease_clock_ahead())
            > deadline.saturating_add(self.margin_ms())
    }

    /// A write met the lock `held`: once its holder is overdue, finish or
    /// undo the holder (the caller then retries). `true` when the holder
    /// was settled so.
    pub(crate) async fn meet_lock(&self, held: &str) -> Result<bool> {
        let Some((write, deadline, intent, token)) = parse_lock(held) else {
            return Ok(false);
        };
        if !self.overdue(deadline) {
            return Ok(false);
        }
        let token = (!token.is_empty()).then_some(token);
        Ok(self.resolve(write, intent, token, false).await? != Fate::Live)
    }

    /// After a lost commit reply, the writer settles its own write: `true`
    /// when it committed (and is now finished), `false` when it was undone.
    pub(crate) async fn settle_own(&self, intent: &str, write: &str) -> Result<bool> {
        Ok(self.resolve(write, intent, None, true).await? == Fate::Finished)
    }

    /// Decides and carries out the fate of `write` from its intent; `token`
    /// is a token of it met on the way (undone with the rest if the write
    /// aborted); `force` aborts a prepared write at once (its own writer).
    pub(crate) async fn resolve(
        &self,
        write: &str,
        intent: &str,
        token: Option<&str>,
        force: bool,
    ) -> Result<Fate> {
        let margin = if force {
            "-1".to_owned()
        } else {
            self.margin_ms().to_string()
        };
        let tombstone = self.tombstone().as_millis().to_string();
        let argv: Vec<Vec<u8>> = vec![
            write.as_bytes().to_vec(),
            self.lease_arg(Duration::ZERO),
            margin.into_bytes(),
            tombstone.into_bytes(),
            b"0".to_vec(),
            Vec::new(),
            b"0".to_vec(),
            b"0".to_vec(),
        ];
        let value = self
            .run(&self.inner.scripts.resolve, &[intent.to_owned()], &argv)
            .await?
            .map_err(|e| Error::backend("redis-cluster", "read the intent of a write", e))?;
        let Value::Array(items) = value else {
            return Err(Error::backend(
                "redis-cluster",
                "read the intent of a write",
                format!("unexpected reply {value:?}"),
            ));
        };
        let state = text(items.first());
        let groups: Vec<Vec<String>> = unpack(&bytes(items.get(1)));
        let locked: Vec<String> = unpack(&bytes(items.get(2)));
        match state.as_str() {
            "c" => {
                for keys in &groups {
                    self.token_step(&self.inner.scripts.apply, keys, write)
                        .await?;
                }
                self.finish(intent, &locked, write, b"c").await?;
                Ok(Fate::Finished)
            }
            "a" => {
                for keys in &groups {
                    self.token_step(&self.inner.scripts.undo, keys, write)
                        .await?;
                }
                if let Some(token) = token {
                    if !groups
                        .iter()
                        .any(|g| g.first().map(String::as_str) == Some(token))
                    {
                        let mut cmd = redis::cmd("HGET");
                        cmd.arg(token).arg("keys");
                        let keys: Option<Vec<u8>> = self.query(&cmd, "read a token").await?;
                        let keys: Vec<String> = unpack(&keys.unwrap_or_default());
                        if !keys.is_empty() {
                            self.token_step(&self.inner.scripts.undo, &keys, write)
                                .await?;
                        }
                    }
                }
                self.finish(intent, &locked, write, b"a").await?;
                Ok(Fate::Undone)
            }
            _ => Ok(Fate::Live),
        }
    }

    /// The store's own keys of one kind (`intent`, `token`, `lock`, `share`).
    async fn own_keys(&self, kind: &str) -> Result<Vec<String>> {
        let prefix = format!("{}{OWN}{kind}:", self.inner.prefix);
        self.scan_all(&prefix_pattern(&prefix)).await
    }

    /// Every unfinished write: (write, intent, token or "", deadline,
    /// committed), found from its intent, tokens and locks.
    async fn unfinished(&self) -> Result<Vec<(String, String, String, u64, bool)>> {
        let mut out: Vec<(String, String, String, u64, bool)> = Vec::new();
        for intent in self.own_keys("intent").await? {
            let mut cmd = redis::cmd("HMGET");
            cmd.arg(&intent).arg("w").arg("state").arg("deadline");
            let (w, state, deadline): (Option<String>, Option<String>, Option<u64>) =
                self.query(&cmd, "read an intent").await?;
            let (Some(w), Some(state)) = (w, state) else {
                continue;
            };
            if state == "a" {
                continue; // a tombstone
            }
            out.push((
                w,
                intent,
                String::new(),
                deadline.unwrap_or(0),
                state == "c",
            ));
        }
        for token in self.own_keys("token").await? {
            let mut cmd = redis::cmd("HMGET");
            cmd.arg(&token).arg("w").arg("intent").arg("deadline");
            let (w, intent, deadline): (Option<String>, Option<String>, Option<u64>) =
                self.query(&cmd, "read a token").await?;
            if let (Some(w), Some(intent)) = (w, intent) {
                out.push((w, intent, token, deadline.unwrap_or(0), false));
            }
        }
        for lock in self.own_keys("lock").await? {
            let mut cmd = redis::cmd("GET");
            cmd.arg(&lock);
            let held: Option<String> = self.query(&cmd, "read a lock").await?;
            if let Some((w, deadline, intent, token)) = held.as_deref().and_then(parse_lock) {
                out.push((w.into(), intent.into(), token.into(), deadline, false));
            }
        }
        for share in self.own_keys("share").await? {
            let mut cmd = redis::cmd("HVALS");
            cmd.arg(&share);
            let holds: Vec<String> = self.query(&cmd, "read shared holds").await?;
            for hold in &holds {
                // "S  held" or "I net held" (lua/cluster/locks.lua).
                let held = hold.splitn(3, ' ').nth(2).and_then(parse_lock);
                if let Some((w, deadline, intent, token)) = held {
                    out.push((w.into(), intent.into(), token.into(), deadline, false));
                }
            }
        }
        Ok(out)
    }

    /// A recovery pass: every cross-slot write left unfinished past its
    /// lease (plus the margin) is finished if it committed and undone if not;
    /// with `now`, every unfinished write is, whatever its age (only when no
    /// writer can be running, e.g. after a crash in a test).
    pub async fn recover_writes(&self, now: bool) -> Result<Recovery> {
        // A write is resolved from its intent (or the first leftover met);
        // an undone write's other tokens are undone too: a write killed
        // before its intent listed its tokens has tokens no intent names.
        let mut seen = std::collections::HashSet::new();
        let mut fates = std::collections::HashMap::new();
        for (write, intent, token, deadline, committed) in self.unfinished().await? {
            if !seen.insert((write.clone(), token.clone())) {
                continue;
            }
            match fates.get(&write) {
                None => {}
                Some(Fate::Undone) if !token.is_empty() => {}
                Some(_) => continue,
            }
            if !now && !committed && !self.overdue(deadline) {
                fates.insert(write, Fate::Live);
                continue;
            }
            let token = (!token.is_empty()).then_some(token.as_str());
            let fate = self.resolve(&write, &intent, token, now).await?;
            fates.insert(write, fate);
        }
        let mut done = Recovery::default();
        for fate in fates.into_values() {
            match fate {
                Fate::Finished => done.finished += 1,
                Fate::Undone => done.undone += 1,
                Fate::Live => done.live += 1,
            }
        }
        Ok(done)
    }

    /// [`recover_writes`](Self::recover_writes) of writes past their lease.
    pub async fn recover_now(&self) -> Result<Recovery> {
        self.recover_writes(false).await
    }

    /// The unfinished writes past their lease and margin, described.
    pub(crate) async fn stuck_writes(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (write, intent, _, deadline, committed) in self.unfinished().await? {
            if seen.insert(write.clone()) && self.overdue(deadline) {
                out.push(format!(
                    "cross-slot write {write} ({}; intent `{intent}`)",
                    if committed {
                        "committed, effects pending"
                    } else {
                        "not committed"
                    }
                ));
            }
        }
        out.sort();
        Ok(out)
    }
}
