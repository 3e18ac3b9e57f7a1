//! Group commit: concurrent commits share one durable write transaction.
//!
//! redb runs one write transaction at a time, and a durable commit waits
//! for the disk. So callers queue their batches, and the first caller that
//! finds no committer at work *leads*: it takes every queued batch (its own
//! among them) into one write transaction, checks and applies each in queue
//! order against the state the batches before it left, commits once, and
//! only then answers each caller — applied, its failed condition, or its
//! error. Callers that arrive meanwhile wait; when the leader has answered,
//! the first of them leads the next group with everything queued by then.
//! A lone caller finds nobody at work and commits at once: no timer, no
//! added latency.
//!
//! A batch that is invalid or whose condition fails leaves nothing and
//! fails no other; an error that breaks the transaction (a write or the
//! commit itself failing) is every caller's of that group, and nothing of
//! theirs is written. Nobody is answered before the commit that covers
//! them returned, and readers see a group only once it committed.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};

/// Where a queued caller waits for its turn or its answer.
#[derive(Default)]
struct Slot {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
enum State {
    #[default]
    Waiting,
    /// The caller leads the next group.
    Lead,
    Done(Result<Outcome>),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Slot {
    fn set(&self, state: State) {
        *lock(&self.state) = state;
        self.changed.notify_one();
    }

    /// Blocks until the caller leads (`None`) or is answered.
    fn wait(&self) -> Option<Result<Outcome>> {
        let mut state = lock(&self.state);
        loop {
            match std::mem::take(&mut *state) {
                State::Waiting => {
                    state = self
                        .changed
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                State::Lead => return None,
                State::Done(answer) => return Some(answer),
            }
        }
    }
}

struct Queued {
    batch: Batch,
    slot: Arc<Slot>,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Queued>,
    /// Whether a caller leads a group now.
    leading: bool,
}

/// The commit queue of one open database.
#[derive(Default)]
pub(super) struct Committer {
    queue: Mutex<Queue>,
}

/// What committing a group came to: an answer per batch, in order, or an
/// error that broke the transaction (every batch's).
pub(super) type GroupResult = Result<Vec<Result<Outcome>>>;

impl Committer {
    /// Commits `batch` together with whatever other callers queue beside
    /// it; `commit_group` writes one group in one transaction.
    pub(super) fn commit(
        &self,
        batch: Batch,
        commit_group: impl Fn(&[&Batch]) -> GroupResult,
    ) -> Result<Outcome> {
        let slot = Arc::new(Slot::default());
        let lead = {
            let mut q = lock(&self.queue);
            q.pending.push(Queued {
                batch,
                slot: Arc::clone(&slot),
            });
            !std::mem::replace(&mut q.leading, true)
        };
        if !lead {
            if let Some(answer) = slot.wait() {
                return answer;
            }
        }
        let group = std::mem::take(&mut lock(&self.queue).pending);
        let mut handover = Handover {
            committer: self,
            group,
        };
        let batches: Vec<&Batch> = handover.group.iter().map(|q| &q.batch).collect();
        let answers = commit_group(&batches);
        drop(batches);
        handover.answer(answers, &slot)
    }
}

/// A leader's group: answered once, and the lead handed on even if the
/// leader unwinds.
struct Handover<'c> {
    committer: &'c Committer,
    group: Vec<Queued>,
}

impl Handover<'_> {
    /// Answers every other caller of the group, and returns the answer of
    /// the one whose slot is `own`.
    fn answer(&mut self, answers: GroupResult, own: &Arc<Slot>) -> Result<Outcome> {
        let group = std::mem::take(&mut self.group);
        let mut mine = None;
        match answers {
            Ok(answers) => {
                let mut answers = answers.into_iter();
                for queued in group {
                    let answer = answers.next().unwrap_or_else(|| {
                        Err(Error::backend(
                            "redb",
                            "commit a group of writes",
                            "the group's answers did not include this write",
                        ))
                    });
                    if Arc::ptr_eq(&queued.slot, own) {
                        mine = Some(answer);
                    } else {
                        queued.slot.set(State::Done(answer));
                    }
                }
            }
            Err(e) => {
                let text = e.to_string();
                for queued in group {
                    if Arc::ptr_eq(&queued.slot, own) {
                        continue;
                    }
                    queued.slot.set(State::Done(Err(Error::backend(
                        "redb",
                        "commit a group of writes (nothing of this one was written)",
                        text.clone(),
                    ))));
                }
                mine = Some(Err(e));
            }
        }
        mine.unwrap_or_else(|| {
            Err(Error::backend(
                "redb",
                "commit a group of writes",
                "the group's answers did not include this write",
            ))
        })
    }
}

impl Drop for Handover<'_> {
    fn drop(&mut self) {
        // Whoever was not answered (the leader unwound) learns it.
        for queued in std::mem::take(&mut self.group) {
            queued.slot.set(State::Done(Err(Error::backend(
                "redb",
                "commit a group of writes",
                "the write that committed the group stopped before its commit; nothing was written",
            ))));
        }
        let mut q = lock(&self.committer.queue);
        match q.pending.first() {
            Some(next) => next.slot.set(State::Lead),
            None => q.leading = false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn a_lone_caller_commits_at_once_in_a_group_of_one() {
        let c = Committer::default();
        let sizes = Mutex::new(Vec::new());
        for _ in 0..3 {
            let out = c
                .commit(Batch::new(), |group| {
                    lock(&sizes).push(group.len());
                    Ok(group.iter().map(|_| Ok(Outcome::Applied)).collect())
                })
                .unwrap();
            assert!(out.is_applied());
        }
        assert_eq!(*lock(&sizes), [1, 1, 1]);
    }

    #[test]
    fn callers_queued_behind_a_commit_share_the_next_one() {
        let c = Committer::default();
        let groups = AtomicUsize::new(0);
        let committed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for i in 0..32 {
                let (c, groups, committed) = (&c, &groups, &committed);
                s.spawn(move || {
                    let mut b = Batch::new();
                    b.put(format!("k{i}"), vec![], None);
                    let out = c
                        .commit(b, |group| {
                            groups.fetch_add(1, Ordering::SeqCst);
                            // A durable commit takes a while.
                            std::thread::sleep(Duration::from_millis(20));
                            committed.fetch_add(group.len(), Ordering::SeqCst);
                            Ok(group.iter().map(|_| Ok(Outcome::Applied)).collect())
                        })
                        .unwrap();
                    assert!(out.is_applied());
                });
            }
        });
        assert_eq!(committed.load(Ordering::SeqCst), 32);
        assert!(
            groups.load(Ordering::SeqCst) < 32,
            "{} groups for 32 callers",
            groups.load(Ordering::SeqCst)
        );
    }

    #[test]
    fn each_caller_gets_its_own_answer_and_a_broken_group_fails_all() {
        let c = Committer::default();
        let failed = c
            .commit(Batch::new(), |group| {
                Ok(group
                    .iter()
                    .map(|_| Ok(Outcome::Failed { index: 3 }))
                    .collect())
            })
            .unwrap();
        assert_eq!(failed, Outcome::Failed { index: 3 });
        let broken = c.commit(Batch::new(), |_| {
            Err(Error::backend("redb", "commit a batch", "disk full"))
        });
        assert!(broken.unwrap_err().to_string().contains("disk full"));
        // A panicking leader hands the lead on: the next caller commits.
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.commit(Batch::new(), |_| panic!("boom"))
        }));
        assert!(panicked.is_err());
        let out = c
            .commit(Batch::new(), |g| {
                Ok(g.iter().map(|_| Ok(Outcome::Applied)).collect())
            })
            .unwrap();
        assert!(out.is_applied());
    }
}
