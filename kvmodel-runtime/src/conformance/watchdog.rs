//! What the test harnesses start outside this process ends with it.
//!
//! A harness may live in a `static` (one server shared by a whole test
//! binary), whose destructor never runs, and a test process may be killed.
//! So every `redis-server` runs under a small `sh` watchdog that reads its
//! standard input, a pipe from this process: the pipe closes when this
//! process drops the server's handle or ends in any way (even `SIGKILL`),
//! and the watchdog then kills the server it started, by its PID. Temporary
//! files go in one directory per process ([`scratch`]), which a watchdog of
//! the same kind removes when the process ends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
#[cfg(feature = "redis")]
use std::{
    io::{BufRead, BufReader},
    sync::Arc,
    sync::atomic::{AtomicBool, Ordering},
};

/// The directory of this process's temporary files
/// (`<temp dir>/kvmodel-test-<pid>`), created on first use and removed when
/// the process ends.
pub(crate) fn scratch() -> &'static Path {
    /// Removes `$1` once standard input closes. A server killed at the same
    /// moment may still write a file into it meanwhile: a directory not yet
    /// gone is tried again.
    const CLEANER: &str = r#"
dir="$1"
while read -r _; do :; done
rm -rf "$dir"
n=0
while [ -e "$dir" ] && [ "$n" -lt 10 ]; do
  sleep 1
  rm -rf "$dir"
  n=$((n + 1))
done
"#;
    static SCRATCH: OnceLock<(PathBuf, Mutex<Option<Child>>)> = OnceLock::new();
    let (dir, _) = SCRATCH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kvmodel-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the tests' temporary directory");
        // Without `sh` the directory stays behind; each harness still
        // removes its own files when dropped.
        let cleaner = Command::new("sh")
            .arg("-c")
            .arg(CLEANER)
            .arg("sh")
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        // Held, never dropped: its standard input closes when the process ends.
        (dir, Mutex::new(cleaner))
    });
    dir
}

/// Starts `redis-server` with the arguments it is given, prints its PID,
/// passes its output through, and kills it once standard input closes (this
/// process dropped the handle, or ended). The server is not reaped before
/// that kill, so the PID is still the server's when it is signalled.
#[cfg(feature = "redis")]
const SERVER: &str = r#"
redis-server "$@" 2>&1 &
server=$!
echo "$server"
exec >/dev/null 2>&1
while read -r _; do :; done
kill -KILL "$server" 2>/dev/null
wait "$server"
"#;

/// Panics, saying how to install it, if `redis-server` cannot be run
/// (checked once per process).
#[cfg(feature = "redis")]
fn installed() {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    let installed = *INSTALLED.get_or_init(|| {
        Command::new("redis-server")
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    assert!(
        installed,
        "`redis-server` is not installed: the Redis tests start their own servers. \
         Run the tests with `scripts/test`, which installs it when it is missing, \
         or install it yourself (`apt-get install redis-server`, `brew install redis`)"
    );
}

/// A `redis-server` process under its watchdog. Dropping it kills the
/// server and waits until it is gone.
#[cfg(feature = "redis")]
#[derive(Debug)]
pub(crate) struct Watched {
    watchdog: Child,
    pid: u32,
    exited: Arc<AtomicBool>,
}

#[cfg(feature = "redis")]
impl Watched {
    /// Starts `redis-server` with `args`; `None` if it exits before it has
    /// told its PID. Panics if `sh` cannot be started.
    pub(crate) fn spawn<I, S>(args: I) -> Option<Watched>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        installed();
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(SERVER)
            .arg("sh")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start `sh` to run `redis-server`");
        let out = watchdog.stdout.take().expect("the watchdog's output");
        let exited = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let flag = exited.clone();
        // The server's output ends when the server does (the watchdog lets
        // go of its copy once it has printed the PID); read until then.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Ok(pid) = line.trim().parse::<u32>() {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(pid);
                    }
                }
            }
            flag.store(true, Ordering::SeqCst);
        });
        let Ok(pid) = rx.recv() else {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
            return None;
        };
        Some(Watched {
            watchdog,
            pid,
            exited,
        })
    }

    /// The server's PID.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the server has exited (its output ended).
    pub(crate) fn exited(&self) -> bool {
        self.exited.load(Ordering::SeqCst)
    }
}

#[cfg(feature = "redis")]
impl Drop for Watched {
    fn drop(&mut self) {
        // Closing its input tells the watchdog to kill the server (SIGKILL);
        // it exits once the server is gone.
        drop(self.watchdog.stdin.take());
        let _ = self.watchdog.wait();
    }
}
