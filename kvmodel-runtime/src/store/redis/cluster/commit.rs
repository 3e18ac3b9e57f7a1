//! Committing a batch: one attempt after another until one is done, each
//! either one script within one slot (`lua/commit.lua` behind the holds of
//! unfinished cross-slot writes) or the cross-slot protocol (`protocol`);
//! between attempts, waiting for the writes whose holds an attempt met,
//! and finishing or undoing them once they are overdue (`recovery`).
//!
//! A condition on a key whose holder will change it is given up as failed
//! after a while; a write that met others and then failed waits a random
//! share of its time, so that writers that waited together spread out.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::cluster::plan::{guard_keys, hold_flags, never_waits, slots};
use crate::store::redis::cluster::slots::is_share_key;
use crate::store::redis::shape::handed_on;
use crate::store::redis::wire::{Met, Reply, commit_args, reply};

/// The longest [`spread`](RedisClusterStore::spread) after a contended
/// failure.
const SPREAD_CAP: Duration = Duration::from_millis(100);

/// How often a write that waits for others' shared holds tries again,
/// renewing the claim that keeps new readers and adders behind it: well
/// within the 500 ms after which a claim lapses (`lua/cluster/locks.lua`).
const RENEW: Duration = Duration::from_millis(150);

/// What one attempt came to.
pub(crate) enum Attempt {
    Done(Outcome),
    /// Condition number `.0` failed on meeting another unfinished write.
    Contended(usize),
    /// A key is held by another write: wait until it is released, retry.
    Locked(Met),
    /// Refused for a reason that passes (the lease ran out): retry.
    Again,
}

/// The index of the batch's first condition on the key the lock `lock`
/// guards (`{prefix}kvmodel~lock:{tag}:{key}`), if it has one.
fn held_condition(batch: &Batch, lock: &str, prefix: &str) -> Option<usize> {
    let rest = lock.strip_prefix(prefix)?;
    let key = &rest[rest.find("}:")? + 2..];
    batch.conditions().iter().position(|c| c.key() == key)
}

/// A fresh ticket: what every attempt of one commit shares (64 random
/// bits, in hex), so that the claim an attempt leaves on a key it waits for
/// is its own when it comes back (`lua/cluster/locks.lua`).
fn ticket() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// Waits for locks held by other writes, within a bound.
pub(crate) struct Wait {
    start: Instant,
    attempt: u32,
}

impl Wait {
    pub(crate) fn new() -> Wait {
        Wait {
            start: Instant::now(),
            attempt: 0,
        }
    }

    /// Sleeps a little (jittered, growing to 0–32 ms), or fails once the
    /// write has waited `limit` in all.
    pub(crate) async fn pause(&mut self, limit: Duration, key: &str) -> Result<()> {
        if self.start.elapsed() > limit {
            return Err(Error::backend(
                "redis-cluster",
                "commit a batch",
                format!(
                    "`{key}` stayed locked by an unfinished cross-slot write for {limit:?}; \
                     nothing was written: retry later, or run recovery if a writer died"
                ),
            ));
        }
        self.attempt += 1;
        let cap_us = 500u64 << self.attempt.min(6);
        crate::exec::sleep(Duration::from_micros(fastrand::u64(0..=cap_us))).await;
        Ok(())
    }
}

impl RedisClusterStore {
    /// How long past its deadline a write's locks are waited for before
    /// others finish or undo it: one more lease.
    pub(crate) fn margin(&self) -> Duration {
        self.inner.lease
    }

    /// The longest a commit waits for other writes' locks.
    fn wait_limit(&self) -> Duration {
        self.inner.lease * 4 + Duration::from_secs(1)
    }

    pub(crate) async fn commit_physical(&self, batch: Batch) -> Result<Outcome> {
        let single = slots(&batch).len() == 1;
        let start = Instant::now();
        let mut wait = Wait::new();
        let mut met = false;
        let mut patience = None;
        let ticket = ticket();
        loop {
            let attempt = if single {
                self.commit_single(&batch, &ticket).await?
            } else {
                self.commit_cross(&batch, &ticket).await?
            };
            // How long a live write is waited for before a condition on a
            // key it holds is given up as failed: twice what one attempt
            // of this write takes, at least 50 ms.
            let patience = *patience
                .get_or_insert_with(|| (start.elapsed() * 2).max(Duration::from_millis(50)));
            match attempt {
                Attempt::Done(outcome) => {
                    if met && !outcome.is_applied() {
                        self.spread(start).await;
                    }
                    return Ok(outcome);
                }
                Attempt::Contended(index) => {
                    if met {
                        self.spread(start).await;
                    }
                    return Ok(Outcome::Failed { index });
                }
                Attempt::Locked(Met {
                    lock,
                    held,
                    changes,
                }) => {
                    met = true;
                    // A condition on a key whose holder will change it
                    // outside its commit point (its hold names a token) is
                    // given up after a while. On a key the holder changes
                    // at its commit point (the record's slot), one instant
                    // decides, so it waits for that (or settles a crashed
                    // holder once overdue); on one that is only read, or
                    // claimed, by others, it waits its turn.
                    let late = !held.ends_with('|');
                    let given_up = held_condition(&batch, &lock, &self.inner.prefix)
                        .filter(|_| changes && late);
                    if !self
                        .wait_for_lock(&lock, &held, &mut wait, patience, given_up.is_some())
                        .await?
                    {
                        if let Some(index) = given_up {
                            return Ok(Outcome::Failed { index });
                        }
                    }
                }
                Attempt::Again => wait.pause(self.wait_limit(), "a key").await?,
            }
        }
    }

    /// After a batch waited for another write and then failed (the other
    /// write changed what this one read): waits a random share of the time
    /// this commit took, so that the writers that waited together (and will
    /// read and try again) do not meet again at once. On a cluster a write
    /// takes several round trips, which is the scale their retries must
    /// spread over.
    async fn spread(&self, start: Instant) {
        let spent = start.elapsed().min(SPREAD_CAP).as_micros();
        let spent = u64::try_from(spent).unwrap_or(u64::MAX);
        crate::exec::sleep(Duration::from_micros(fastrand::u64(0..=spent))).await;
    }

    /// Waits until the lock `lock` no longer holds `held` (its write
    /// finished or was undone), finishing or undoing that write once it is
    /// overdue; `true` when it was released, or when the wait met shared
    /// holds and has lasted [`RENEW`] (the next attempt renews the claim
    /// this one may have left, `lua/cluster/locks.lua`). With `may_give_up`, gives
    /// up (`false`) once `patience` has passed: the waiting batch has a
    /// condition on the held key and fails it instead.
    async fn wait_for_lock(
        &self,
        lock: &str,
        held: &str,
        wait: &mut Wait,
        patience: Duration,
        may_give_up: bool,
    ) -> Result<bool> {
        let start = Instant::now();
        loop {
            // A holder settled here is gone, however long settling took:
            // try again rather than give the condition up.
            if self.meet_lock(held).await? {
                return Ok(true);
            }
            if may_give_up && start.elapsed() > patience {
                return Ok(false);
            }
            wait.pause(self.wait_limit(), lock).await?;
            let shared = is_share_key(&self.inner.prefix, lock);
            if (shared && start.elapsed() > RENEW) || !self.still_held(lock, held).await? {
                return Ok(true);
            }
        }
    }

    /// Whether the hold `held` met at `lock` (a lock, or the shared holds of
    /// a key) is still there. A claim is met again by trying again.
    async fn still_held(&self, lock: &str, held: &str) -> Result<bool> {
        if held == "!" {
            return Ok(false);
        }
        if is_share_key(&self.inner.prefix, lock) {
            let write = held.split('|').next().unwrap_or_default();
            let mut cmd = redis::cmd("HEXISTS");
            cmd.arg(lock).arg(write);
            let there: bool = self.query(&cmd, "read a shared hold").await?;
            return Ok(there);
        }
        let mut cmd = redis::cmd("GET");
        cmd.arg(lock);
        let now: Option<String> = self.query(&cmd, "read a lock").await?;
        Ok(now.as_deref() == Some(held))
    }

    /// A batch within one slot: the server's commit script, with the same
    /// `KEYS` and `ARGV`, behind the check of other writes' holds.
    async fn commit_single(&self, batch: &Batch, ticket: &str) -> Result<Attempt> {
        let (keys, mut argv) = commit_args(batch)?;
        let shape = self.inner.scripts.shapes.get(&argv[0]);
        let keys: Vec<String> = keys.into_iter().map(str::to_owned).collect();
        argv.push(ticket.as_bytes().to_vec());
        argv.push(hold_flags(&keys, batch.conditions(), batch.ops()).into_bytes());
        argv.push(if never_waits(batch) {
            b"1".to_vec()
        } else {
            b"0".to_vec()
        });
        argv.push(keys.len().to_string().into_bytes());
        let keys = guard_keys(&keys, &self.inner.prefix);
        let unknown = |e| Error::OutcomeUnknown {
            backend: "redis-cluster",
            source: Box::new(e),
        };
        let single = &self.inner.scripts.single;
        let mut value = self
            .run(shape.as_deref().unwrap_or(single), &keys, &argv)
            .await?
            .map_err(unknown)?;
        // A shape script that met what it does not check hands the batch
        // on, having written nothing.
        if shape.is_some() && handed_on(&value) {
            value = self.run(single, &keys, &argv).await?.map_err(unknown)?;
        }
        Ok(match reply(&value, "redis-cluster")? {
            Reply::Done(_) => Attempt::Done(Outcome::Applied),
            Reply::Failed { index, held: false } => Attempt::Done(Outcome::Failed { index }),
            Reply::Failed { index, held: true } => Attempt::Contended(index),
            Reply::Invalid { key, reason } => return Err(Error::InvalidBatch { key, reason }),
            Reply::Locked(met) => Attempt::Locked(met),
            Reply::Refused(why) => {
                return Err(Error::backend("redis-cluster", "commit a batch", why));
            }
        })
    }
}
