//! Real-time windows for scenarios whose records expire at set times.
//!
//! Redis and its cluster expire records on the real clock, so a scenario
//! there must finish each phase's steps before the next expiry. A scenario
//! first runs with short expiries; only when the machine was too slow to
//! finish a phase before its deadline (a panic, or a check, after the
//! deadline had come) does it run again, from a wiped namespace, with
//! longer ones. A failure that happens well within its window is reported
//! as it is, and so is any failure at the longest scale.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, panic_any, resume_unwind};
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{Batch, Store, Timestamp};

/// The scales tried in turn: the last gives the expiries the scenarios
/// were first written with (12 s and 32 s).
const SCALES: [u64; 3] = [1, 3, 8];

/// How far before a deadline a phase must have finished (clock reading,
/// the store's expiry granularity).
const GUARD_MS: u64 = 150;

/// How long after the last deadline a pass waits.
const SLACK_MS: u64 = 150;

/// One expiry a scenario registered.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    /// Until when the record is surely alive.
    alive_until: u64,
    /// From when it is surely gone.
    gone_from: u64,
    passed: bool,
}

/// An expiry time of a scenario, and the handle to pass it.
#[derive(Debug, Clone, Copy)]
pub struct Expiry {
    /// The time to store in the record's expiry field.
    pub at: Option<Timestamp>,
    id: usize,
}

/// The panic of a phase that finished after its deadline.
struct Overran;

/// One attempt of a scenario at one scale.
pub struct Window<'h, H: Harness> {
    h: &'h H,
    store: H::Store,
    start: u64,
    scale: u64,
    deadlines: Mutex<Vec<Deadline>>,
}

impl<H: Harness> Window<'_, H> {
    async fn now(&self) -> u64 {
        self.store.now_ms().await.unwrap()
    }

    fn register(&self, alive_until: u64, gone_from: u64) -> usize {
        let mut d = self.deadlines.lock().unwrap();
        d.push(Deadline {
            alive_until,
            gone_from,
            passed: false,
        });
        d.len() - 1
    }

    /// The expiry `ms` (at the shortest scale) after the attempt started.
    pub fn expiry(&self, ms: u64) -> Expiry {
        let at = self.start + ms * self.scale;
        Expiry {
            at: Some(Timestamp::from_unix_millis(i64::try_from(at).unwrap()).unwrap()),
            id: self.register(at, at),
        }
    }

    /// Runs `write`, which writes a record that expires `ttl` after it
    /// (an entity `ttl`), and registers that expiry.
    pub async fn expiring<T>(&self, ttl: Duration, write: impl Future<Output = T>) -> (T, Expiry) {
        let ttl = u64::try_from(ttl.as_millis()).unwrap();
        let before = self.now().await;
        let out = write.await;
        let after = self.now().await;
        let id = self.register(before + ttl, after + ttl);
        (out, Expiry { at: None, id })
    }

    /// The earliest time a record not yet passed may expire.
    fn next_deadline(&self) -> Option<u64> {
        let d = self.deadlines.lock().unwrap();
        d.iter().filter(|d| !d.passed).map(|d| d.alive_until).min()
    }

    /// Ends a phase: checks that every record not yet passed is still
    /// alive (else the machine overran the window), then lets the store's
    /// time pass until every expiry of `these` has come.
    pub async fn pass(&self, these: &[Expiry]) {
        let now = self.now().await;
        if self.next_deadline().is_some_and(|d| now + GUARD_MS >= d) {
            panic_any(Overran);
        }
        let until = {
            let mut d = self.deadlines.lock().unwrap();
            let until = these.iter().map(|e| d[e.id].gone_from).max().unwrap();
            for e in these {
                d[e.id].passed = true;
            }
            until
        };
        let wait = (until + SLACK_MS).saturating_sub(now);
        self.h.pass(Duration::from_millis(wait)).await;
    }
}

/// Runs `scenario` at the shortest scale first, and again at a longer one
/// (after deleting every key under `prefix`) while the machine overran a
/// window.
pub async fn windows<H: Harness>(h: &H, prefix: &str, scenario: impl AsyncFn(&Window<'_, H>)) {
    for (i, scale) in SCALES.into_iter().enumerate() {
        let store = h.store();
        let w = Window {
            h,
            start: store.now_ms().await.unwrap(),
            store,
            scale,
            deadlines: Mutex::new(Vec::new()),
        };
        let Err(panic) = CatchUnwind(Box::pin(scenario(&w))).await else {
            return;
        };
        let overran = panic.is::<Overran>()
            || match w.next_deadline() {
                Some(d) => w.now().await + GUARD_MS >= d,
                None => false,
            };
        if !overran {
            resume_unwind(panic);
        }
        let Some(next) = SCALES.get(i + 1) else {
            panic!("the machine overran even the longest window ({scale}×)");
        };
        eprintln!("the machine overran the {scale}× window: running again at {next}×");
        wipe(&w.store, prefix).await;
    }
}

/// Deletes every key under `prefix`.
async fn wipe<S: Store>(store: &S, prefix: &str) {
    let mut keys = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.scan(prefix, cursor, 100).await.unwrap();
        keys.extend(page.keys);
        match page.next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    for key in keys {
        let mut batch = Batch::new();
        batch.delete(key);
        assert!(store.commit(batch).await.unwrap().is_applied());
    }
}

/// A future that turns its inner future's panic into an `Err`.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future<Output = ()>> Future for CatchUnwind<F> {
    type Output = Result<(), Box<dyn std::any::Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(())) => Poll::Ready(Ok(())),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use kvmodel::conformance::MemoryHarness;

    use super::*;

    /// A phase that ends after its deadline runs again at the next scale,
    /// from a wiped namespace.
    #[tokio::test]
    async fn an_overrun_window_runs_again_longer_from_a_wiped_namespace() {
        let h = MemoryHarness::new();
        let attempts = AtomicU64::new(0);
        windows(&h, "win:", async |w| {
            let store = h.store();
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            assert_eq!(store.get("win:k").await.unwrap(), None, "not wiped");
            let mut b = Batch::new();
            b.put("win:k", b"v".to_vec(), None);
            assert!(store.commit(b).await.unwrap().is_applied());
            let soon = w.expiry(1_000);
            if n == 0 {
                // The steps took longer than the window.
                h.pass(Duration::from_millis(1_000)).await;
            }
            w.pass(&[soon]).await;
        })
        .await;
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
    }

    /// A failure well within its window is reported, not retried.
    #[tokio::test]
    #[should_panic(expected = "a real failure")]
    async fn a_failure_within_the_window_is_reported() {
        let h = MemoryHarness::new();
        windows(&h, "win:", async |w| {
            let _soon = w.expiry(60_000);
            panic!("a real failure");
        })
        .await;
    }
}
