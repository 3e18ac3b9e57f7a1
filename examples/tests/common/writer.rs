//! A writer process of the crash tests (`src/bin/*_writer.rs`) and the lines
//! it has printed so far (`begin OP`, `ack OP`, `fail OP: ERROR`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running writer process.
pub struct Writer {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Writer {
    /// Starts the binary `program` with `args`, reading its output on a
    /// thread of its own.
    pub fn start(program: &str, args: &[&str]) -> Writer {
        let mut child = Command::new(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the writer");
        let out = BufReader::new(child.stdout.take().expect("its output is piped"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Writer {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits until the writer has acknowledged `n` writes in all.
    pub fn wait_for_acks(&mut self, n: usize) {
        while self.seen.iter().filter(|l| l.starts_with("ack ")).count() < n {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the writer makes progress");
            assert!(!line.starts_with("fail "), "the writer failed: {line}");
            self.seen.push(line);
        }
    }

    /// Kills it (SIGKILL) and returns everything it printed.
    pub fn kill(mut self) -> Vec<String> {
        self.child.kill().expect("kill the writer");
        self.finish()
    }

    /// Waits for it to exit and returns everything it printed.
    pub fn finish(mut self) -> Vec<String> {
        let _ = self.child.wait();
        self.seen.extend(self.lines.iter());
        self.seen
    }
}
