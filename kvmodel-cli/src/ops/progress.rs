//! Progress on standard error: an `indicatif` bar (count, total, rate and
//! time left) on a terminal, plain lines every few seconds otherwise,
//! nothing with `--quiet`.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often a plain (non-terminal) progress line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(2);

/// The bar of a phase whose total is known.
const BAR: &str = "{msg} [{bar:30}] {pos}/{len} ({percent}%), {rate}, about {eta} left";

/// The line of a phase whose total is not known.
const SPINNER: &str = "{spinner} {msg}: {pos}, {rate}";

/// Where progress goes.
enum Output {
    /// `--quiet`: nowhere.
    Quiet,
    /// A terminal: the bar of the current phase, if one started.
    Terminal(Option<ProgressBar>),
    /// A log or a pipe: a line every [`PLAIN_EVERY`] of a phase, the first
    /// once it has run that long.
    Plain { shown: Instant },
}

/// Progress of one command.
pub struct Progress {
    output: Output,
    phase: String,
    started: Instant,
}

impl Progress {
    /// Progress on standard error, unless `quiet`.
    pub fn new(quiet: bool) -> Progress {
        Progress::on(quiet, std::io::stderr().is_terminal())
    }

    fn on(quiet: bool, terminal: bool) -> Progress {
        let output = match (quiet, terminal) {
            (true, _) => Output::Quiet,
            (false, true) => Output::Terminal(None),
            (false, false) => Output::Plain {
                shown: Instant::now(),
            },
        };
        Progress {
            output,
            phase: String::new(),
            started: Instant::now(),
        }
    }

    /// Reports `done` of `total` (when known) in the phase `label`; rate
    /// and time left count from the first report of the phase.
    pub fn update(&mut self, label: &str, done: u64, total: Option<u64>) {
        let new_phase = self.phase != label;
        if new_phase {
            self.phase = label.to_owned();
            self.started = Instant::now();
        }
        match &mut self.output {
            Output::Quiet => {}
            Output::Terminal(bar) => {
                if new_phase || bar.is_none() {
                    if let Some(old) = bar.take() {
                        old.finish_and_clear();
                    }
                    *bar = Some(new_bar(label, total));
                }
                if let Some(bar) = bar {
                    bar.set_position(done);
                }
            }
            Output::Plain { shown } => {
                if new_phase {
                    *shown = self.started;
                }
                if shown.elapsed() < PLAIN_EVERY {
                    return;
                }
                *shown = Instant::now();
                let line = line(label, done, total, self.started.elapsed());
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{line}");
                let _ = err.flush();
            }
        }
    }

    /// Ends the phase with a line that stays.
    pub fn done(&mut self, text: &str) {
        match &mut self.output {
            Output::Quiet => return,
            Output::Terminal(bar) => {
                if let Some(bar) = bar.take() {
                    bar.finish_and_clear();
                }
            }
            Output::Plain { .. } => {}
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
        let _ = err.flush();
        self.phase.clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Output::Terminal(Some(bar)) = &self.output {
            bar.finish_and_clear();
        }
    }
}

/// A bar (or, without a total, a counter) on standard error for the phase
/// `label`.
fn new_bar(label: &str, total: Option<u64>) -> ProgressBar {
    let (bar, template) = match total.filter(|t| *t > 0) {
        Some(total) => (ProgressBar::new(total), BAR),
        None => (ProgressBar::no_length(), SPINNER),
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        )
        .progress_chars("=> ");
    bar.set_draw_target(ProgressDrawTarget::stderr());
    bar.set_style(style);
    bar.set_message(label.to_owned());
    bar
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

    #[test]
    fn quiet_and_plain_progress_draw_no_bar() {
        for (quiet, terminal) in [(true, true), (true, false), (false, false)] {
            let mut p = Progress::on(quiet, terminal);
            p.update("verify User records", 1, Some(10));
            assert!(!matches!(p.output, Output::Terminal(_)));
        }
        let mut p = Progress::on(false, true);
        p.update("verify User records", 1, Some(10));
        p.update("verify User derived keys", 1, None);
        assert!(matches!(&p.output, Output::Terminal(Some(bar)) if bar.length().is_none()));
        p.done("verify User: 1 records, 0 problem(s)");
        assert!(matches!(p.output, Output::Terminal(None)));
    }
}
