//! Progress on standard error: one line redrawn in place on a terminal
//! (count, total, rate and time left), plain lines every few seconds
//! otherwise, nothing with `--quiet`.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a plain (non-terminal) progress line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(2);

/// How often the terminal line is redrawn.
const DRAW_EVERY: Duration = Duration::from_millis(100);

/// Progress of one command.
pub struct Progress {
    enabled: bool,
    tty: bool,
    phase: String,
    started: Instant,
    shown: Option<Instant>,
    drawn: bool,
}

impl Progress {
    /// Progress on standard error, unless `quiet`.
    pub fn new(quiet: bool) -> Progress {
        Progress {
            enabled: !quiet,
            tty: std::io::stderr().is_terminal(),
            phase: String::new(),
            started: Instant::now(),
            shown: None,
            drawn: false,
        }
    }

    /// Reports `done` of `total` (when known) in the phase `label`; rate
    /// and time left count from the first report of the phase.
    pub fn update(&mut self, label: &str, done: u64, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        if self.phase != label {
            self.phase = label.to_owned();
            self.started = Instant::now();
            // A terminal shows the phase at once; a log gets a line only
            // once a phase has run for a while.
            self.shown = (!self.tty).then_some(self.started);
        }
        let every = if self.tty { DRAW_EVERY } else { PLAIN_EVERY };
        if self.shown.is_some_and(|s| s.elapsed() < every) {
            return;
        }
        self.shown = Some(Instant::now());
        let line = line(label, done, total, self.started.elapsed());
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
            self.drawn = true;
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Ends the phase with a line that stays.
    pub fn done(&mut self, text: &str) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.drawn {
            let _ = write!(err, "\r\x1b[2K");
            self.drawn = false;
        }
        let _ = writeln!(err, "{text}");
        self.phase.clear();
    }
}

/// `User: records 1200/5000 (24%), 850/s, about 4s left`.
fn line(label: &str, done: u64, total: Option<u64>, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let mut out = format!("{label}: {done}");
    if let Some(total) = total.filter(|t| *t > 0) {
        let pct = (done.min(total) * 100) / total;
        out.push_str(&format!("/{total} ({pct}%)"));
        if rate > 0.0 && done < total {
            let left = ((total - done) as f64 / rate).ceil() as u64;
            out.push_str(&format!(", {rate:.0}/s, about {} left", human(left)));
            return out;
        }
    }
    out.push_str(&format!(", {rate:.0}/s"));
    out
}

/// Seconds as `42s`, `3m 5s`, `2h 1m`.
fn human(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        _ => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_count_rate_and_time_left() {
        let l = line(
            "verify User records",
            250,
            Some(1000),
            Duration::from_secs(1),
        );
        assert_eq!(
            l,
            "verify User records: 250/1000 (25%), 250/s, about 3s left"
        );
        let l = line("derived keys", 40, None, Duration::from_secs(2));
        assert_eq!(l, "derived keys: 40, 20/s");
        assert_eq!(human(3725), "1h 2m");
    }
}
