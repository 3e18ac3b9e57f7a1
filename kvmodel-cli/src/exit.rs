//! The exit codes of every command, in one place: `cli.rs` and the store
//! commands (`ops`) return them, and the help texts that list them are
//! written from [`Code::ALL`].

use std::fmt::Write as _;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 0: done (`verify`: no drift).
    Success,
    /// 1: problems found: schema errors, `--check` differences,
    /// `--deny-warnings` warnings, a breaking `diff`, drift in a store,
    /// records a migration left behind, a record `purge` found changed at
    /// every attempt.
    Problems,
    /// 2: a usage, schema or I/O error (a store that cannot be opened).
    Failed,
    /// 3: refused: another migration holds the lease, or `purge` was given
    /// a record that reads (then nothing is purged).
    Refused,
    /// 4: unsettled: `verify`/`reconcile` found nothing else, but writers
    /// moved some counters while they were measured; run again.
    Unsettled,
    /// 130: interrupted; run the command again to resume.
    Interrupted,
}

impl Code {
    /// Every code, in numeric order.
    pub const ALL: [Code; 6] = [
        Code::Success,
        Code::Problems,
        Code::Failed,
        Code::Refused,
        Code::Unsettled,
        Code::Interrupted,
    ];

    /// The number the process exits with.
    pub const fn number(self) -> u8 {
        match self {
            Code::Success => 0,
            Code::Problems => 1,
            Code::Failed => 2,
            Code::Refused => 3,
            Code::Unsettled => 4,
            Code::Interrupted => 130,
        }
    }

    /// What the code says, as the top-level help lists it.
    pub const fn meaning(self) -> &'static str {
        match self {
            Code::Success => "success",
            Code::Problems => "problems found",
            Code::Failed => "usage or I/O error",
            Code::Refused => {
                "refused (another migration holds the lease, or purge was given a record that reads)"
            }
            Code::Unsettled => {
                "unsettled (verify/reconcile: writers moved counters while they were measured; run again)"
            }
            Code::Interrupted => "interrupted (run again to resume)",
        }
    }
}

impl From<Code> for std::process::ExitCode {
    fn from(code: Code) -> Self {
        std::process::ExitCode::from(code.number())
    }
}

/// `Exit codes: 0 success, 1 problems found, …`: the codes with what each
/// means, `meaning` giving a command's own wording (or `None` for the
/// general one); the codes a command never returns are left out by
/// `codes`.
pub fn help(codes: &[Code], meaning: impl Fn(Code) -> Option<&'static str>) -> String {
    let mut out = String::from("Exit codes:");
    for (i, code) in codes.iter().enumerate() {
        let sep = if i == 0 { " " } else { ", " };
        let text = meaning(*code).unwrap_or(code.meaning());
        let _ = write!(out, "{sep}{} {text}", code.number());
    }
    out.push('.');
    out
}

/// The exit-code lines of the top-level help: every code.
pub fn general_help() -> String {
    help(&Code::ALL, |_| None)
}

/// The exit-code lines of `purge --help`.
pub fn purge_help() -> String {
    help(
        &[Code::Success, Code::Problems, Code::Failed, Code::Refused],
        |code| match code {
            Code::Success => Some("every record given was purged or was not there"),
            Code::Problems => Some("a record kept changing (run again)"),
            Code::Refused => Some(
                "refused: a record given reads, or is at a version newer than the schema (then nothing is purged)",
            ),
            _ => None,
        },
    )
}

/// The exit-code lines of `acl --help`.
pub fn acl_help() -> String {
    help(
        &[Code::Success, Code::Problems, Code::Failed],
        |code| match code {
            Code::Problems => Some("the schema has errors"),
            _ => None,
        },
    )
}

/// A failure that ends a command: its message was printed, its code is
/// returned.
#[derive(Debug)]
pub struct Fail(pub Code);

/// Prints `error: {msg}` and fails with [`Code::Failed`].
pub fn fail(msg: impl std::fmt::Display) -> Fail {
    eprintln!("error: {msg}");
    Fail(Code::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_in_order() {
        let numbers: Vec<u8> = Code::ALL.iter().map(|c| c.number()).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(numbers, sorted);
    }

    #[test]
    fn the_general_help_lists_every_code() {
        assert_eq!(
            general_help(),
            "Exit codes: 0 success, 1 problems found, 2 usage or I/O error, 3 refused (another \
             migration holds the lease, or purge was given a record that reads), 4 unsettled \
             (verify/reconcile: writers moved counters while they were measured; run again), \
             130 interrupted (run again to resume)."
        );
    }
}
