//! A damaged file can make redb panic while it reads a page (a key that is
//! no longer UTF-8, a length that points past its page). Every call into
//! redb runs under [`guarded`], which turns such a panic into an error that
//! names the file; a panic of the caller's own code (a reader or a plan the
//! caller hands the store, the clock it opened the store with: each run
//! under [`caller`]) passes through unchanged.
//!
//! The guard wraps the store's whole operation, kvmodel's code between redb's
//! calls included, so a panic it catches is likely, not certainly, damage:
//! the error says the file *may* be damaged and quotes the panic.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::Path;

use crate::error::{Error, Result};
use crate::store::clock::Clock;

/// A panic of the caller's code, on its way through [`guarded`].
struct CallerPanic(Box<dyn Any + Send>);

/// Runs the caller's code inside a guarded call: its panic stays the
/// caller's, and [`guarded`] lets it through as it was.
pub(super) fn caller<T>(f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(t) => t,
        Err(panic) => resume_unwind(Box::new(CallerPanic(panic))),
    }
}

/// The caller's clock, read as the caller's code (its panic stays the
/// caller's). Read only inside [`guarded`] calls.
#[derive(Debug)]
pub(super) struct CallerClock<C>(pub(super) C);

impl<C: Clock> Clock for CallerClock<C> {
    fn now_ms(&self) -> u64 {
        caller(|| self.0.now_ms())
    }
}

/// Runs `f`, which calls into redb on the file at `path`: a panic inside
/// redb is an error naming the file and saying what to do.
pub(super) fn guarded<T>(path: &Path, doing: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => match panic.downcast::<CallerPanic>() {
            Ok(theirs) => resume_unwind(theirs.0),
            Err(panic) => Err(Error::backend(
                "redb",
                format!("{doing} `{}`", path.display()),
                damage(&*panic),
            )),
        },
    }
}

/// The detail of an error for a panic caught around redb's reading of the
/// file: most likely damage to the file, but the panic is quoted in case it
/// is not.
pub(super) fn damage(panic: &(dyn Any + Send)) -> String {
    format!(
        "the file may be damaged: the store panicked while using it ({}); \
         if the file is damaged, restore it from a backup",
        panic_text(panic)
    )
}

/// What a panic said, when it said it with a string.
fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("no detail")
}
