//! How the runtime blocks, runs blocking work and sleeps: decided here, once,
//! from the tokio runtime the caller runs on, if any.
//!
//! - On a multi-threaded tokio runtime, blocking work runs in place
//!   (`block_in_place` moves the worker's other tasks off it) and sleeps are
//!   tokio timers.
//! - On a current-thread tokio runtime, the one worker must not block:
//!   blocking work goes to the blocking pool, and sleeps are tokio timers.
//! - Outside tokio (another executor, or a plain `block_on`), blocking work
//!   runs directly, as the caller's executor expects of a blocking store, and
//!   sleeps use [`Sleep`], a timer that needs no runtime: one shared helper
//!   thread waits for the deadlines and wakes the futures, so a sleeping
//!   future never blocks the thread that polls it. It costs no dependency;
//!   `futures-timer` would do the same with one more crate to build.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Where the caller may run work that blocks its thread.
#[cfg(feature = "redb")]
enum Blocking {
    /// A worker of a multi-threaded tokio runtime: in place, under
    /// `block_in_place`.
    InPlace,
    /// A current-thread tokio runtime: on its blocking pool.
    Pool(tokio::runtime::Handle),
    /// Outside tokio: directly.
    Direct,
}

#[cfg(feature = "redb")]
impl Blocking {
    fn here() -> Blocking {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => Blocking::InPlace,
            Ok(h) => Blocking::Pool(h),
            Err(_) => Blocking::Direct,
        }
    }
}

/// Runs `f(input)`, which blocks, on the caller's thread when the caller may
/// block it; hands `input` back when it may not (a current-thread tokio
/// runtime), for the caller to take a path that does not block.
#[cfg(feature = "redb")]
pub(crate) fn block_here<A, T>(input: A, f: impl FnOnce(A) -> T) -> Result<T, A> {
    match Blocking::here() {
        Blocking::InPlace => Ok(tokio::task::block_in_place(move || f(input))),
        Blocking::Pool(_) => Err(input),
        Blocking::Direct => Ok(f(input)),
    }
}

/// Runs `f`, which blocks, without stalling the caller's runtime: in place on
/// a multi-threaded tokio runtime, on the blocking pool of a current-thread
/// one, directly outside tokio. The error is a panic or cancellation of the
/// pool's task.
#[cfg(feature = "redb")]
pub(crate) async fn spawn_blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    match Blocking::here() {
        Blocking::InPlace => Ok(tokio::task::block_in_place(f)),
        Blocking::Pool(h) => h.spawn_blocking(f).await,
        Blocking::Direct => Ok(f()),
    }
}

/// Waits `d` without blocking the polling thread: a tokio timer on tokio, a
/// [`Sleep`] elsewhere.
pub(crate) async fn sleep(d: Duration) {
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(d).await;
    } else {
        Sleep::new(d).await;
    }
}

/// Runs `fut` for at most `d`: `None` when the time ran out first. Like
/// [`sleep`], it needs no async runtime.
pub(crate) async fn timeout<F: Future>(d: Duration, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut alarm = std::pin::pin!(sleep(d));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        alarm.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// A jittered exponential backoff before retry `attempt` (from 1): a wait
/// drawn from 0 to `first · 2^(attempt-1)`, at most `cap`. Concurrent
/// writers that raced each other draw different waits, so they do not meet
/// again in step.
pub(crate) fn jitter(attempt: u32, first: Duration, cap: Duration) -> Duration {
    let first = u64::try_from(first.as_micros()).unwrap_or(u64::MAX);
    let cap = u64::try_from(cap.as_micros()).unwrap_or(u64::MAX);
    let bound = first
        .saturating_mul(1u64 << attempt.saturating_sub(1).min(32))
        .min(cap);
    Duration::from_micros(fastrand::u64(0..=bound))
}

/// A future that completes at a deadline, woken by the shared timer thread;
/// it needs no async runtime.
pub(crate) struct Sleep {
    deadline: Instant,
    /// The waker the timer thread wakes, once the timer knows the deadline.
    waker: Option<Arc<Mutex<Option<Waker>>>>,
}

impl Sleep {
    pub(crate) fn new(d: Duration) -> Sleep {
        Sleep {
            deadline: Instant::now() + d,
            waker: None,
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        match &self.waker {
            Some(slot) => {
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
            }
            None => {
                let slot = Arc::new(Mutex::new(Some(cx.waker().clone())));
                // The timer thread lives as long as the process, so its
                // receiver never hangs up.
                let _ = timer().send((self.deadline, Arc::clone(&slot)));
                self.waker = Some(slot);
            }
        }
        Poll::Pending
    }
}

/// A deadline and the waker to wake at it.
type Alarm = (Instant, Arc<Mutex<Option<Waker>>>);

/// The shared timer thread, started by the first [`Sleep`] that waits.
fn timer() -> &'static Sender<Alarm> {
    static TIMER: OnceLock<Sender<Alarm>> = OnceLock::new();
    TIMER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Alarm>();
        std::thread::Builder::new()
            .name("kvmodel-timer".into())
            .spawn(move || {
                let mut alarms: Vec<Alarm> = Vec::new();
                loop {
                    let now = Instant::now();
                    alarms.retain(|(at, slot)| {
                        if *at > now {
                            return true;
                        }
                        let waker = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                        if let Some(w) = waker {
                            w.wake();
                        }
                        false
                    });
                    let next = alarms.iter().map(|(at, _)| *at).min();
                    let got = match next {
                        Some(at) => rx.recv_timeout(at.saturating_duration_since(now)),
                        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    };
                    match got {
                        Ok(alarm) => alarms.push(alarm),
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .expect("start kvmodel's timer thread");
        tx
    })
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::Thread;
    use std::time::{Duration, Instant};

    use super::{Sleep, jitter, sleep, timeout};

    /// Wakes by unparking the thread that polls.
    struct Unpark(Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    /// A minimal executor with no tokio in it.
    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            match f.as_mut().poll(&mut cx) {
                Poll::Ready(out) => return out,
                Poll::Pending => std::thread::park(),
            }
        }
    }

    #[test]
    fn sleeping_outside_tokio_waits_without_blocking_the_poller() {
        assert!(tokio::runtime::Handle::try_current().is_err());
        let d = Duration::from_millis(40);
        // A poll returns at once: the wait happens on the timer thread.
        let mut s = std::pin::pin!(Sleep::new(d));
        let mut cx = Context::from_waker(Waker::noop());
        let polled = Instant::now();
        assert!(s.as_mut().poll(&mut cx).is_pending());
        assert!(polled.elapsed() < d);

        let started = Instant::now();
        block_on(sleep(d));
        assert!(started.elapsed() >= d);
        block_on(s);
    }

    #[test]
    fn a_short_sleep_is_not_held_up_by_a_longer_one() {
        let started = Instant::now();
        let long = std::thread::spawn(move || {
            block_on(sleep(Duration::from_millis(400)));
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(20));
        block_on(sleep(Duration::from_millis(10)));
        let short = started.elapsed();
        let long = long.join().unwrap();
        assert!(short >= Duration::from_millis(30), "{short:?}");
        assert!(short < long, "{short:?} {long:?}");
        assert!(long >= Duration::from_millis(400), "{long:?}");
    }

    #[test]
    fn a_timeout_outside_tokio_answers_the_first_to_finish() {
        assert!(tokio::runtime::Handle::try_current().is_err());
        let started = Instant::now();
        let never = std::future::pending::<()>();
        assert_eq!(block_on(timeout(Duration::from_millis(30), never)), None);
        assert!(started.elapsed() >= Duration::from_millis(30));
        let soon = sleep(Duration::from_millis(5));
        assert_eq!(block_on(timeout(Duration::from_secs(30), soon)), Some(()));
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn jitter_stays_within_its_doubling_bound_and_its_cap() {
        let first = Duration::from_millis(1);
        let cap = Duration::from_millis(64);
        for attempt in 0u32..80 {
            let bound = (first * 2u32.pow(attempt.saturating_sub(1).min(20))).min(cap);
            for _ in 0..50 {
                assert!(jitter(attempt, first, cap) <= bound, "attempt {attempt}");
            }
        }
        // The draws spread over the range instead of sitting at one value.
        let draws: std::collections::HashSet<_> =
            (0..200).map(|_| jitter(10, first, cap)).collect();
        assert!(draws.len() > 20, "{}", draws.len());
    }
}
