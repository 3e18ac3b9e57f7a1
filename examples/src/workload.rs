//! What the crash tests' writer processes (`src/bin/crash_writer.rs`,
//! `src/bin/feed_writer.rs`) share: their arguments, the store they open,
//! and the `begin OP` / `ack OP` protocol by which whoever kills them knows
//! which writes were acknowledged and which were in flight.

use std::future::Future;
use std::io::Write;

use kvmodel::AnyStore;

/// The process's `N` arguments, in order; with fewer, prints `usage` and
/// exits with status 64.
pub fn args<const N: usize>(usage: &str) -> [String; N] {
    let args: Vec<String> = std::env::args().skip(1).take(N).collect();
    args.try_into().unwrap_or_else(|_| {
        eprintln!("usage: {usage}");
        std::process::exit(64)
    })
}

/// The number in argument `name`; otherwise says so and exits with status 64.
pub fn number(name: &str, arg: &str) -> u64 {
    arg.parse().unwrap_or_else(|_| {
        eprintln!("{name} is a number, not `{arg}`");
        std::process::exit(64)
    })
}

/// The store at `url`; otherwise prints the error and exits with status 1.
pub async fn open(url: &str) -> AnyStore {
    AnyStore::open(url).await.unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    })
}

/// Prints `line` at once: the reader may kill this process right after.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Runs `write` between `begin OP` and `ack OP`; a failed write ends the
/// process with `fail OP: ERROR` (its outcome is unknown).
pub async fn step<F: Future<Output = kvmodel::Result<()>>>(op: String, write: F) {
    say(&format!("begin {op}"));
    match write.await {
        Ok(()) => say(&format!("ack {op}")),
        Err(e) => {
            say(&format!("fail {op}: {e}"));
            std::process::exit(2);
        }
    }
}
