//! A word outside the vocabulary, before it is located.

use std::fmt;

use crate::origin::{Diagnostic, Origin};

/// A word outside the vocabulary: a diagnostic still waiting for the place
/// it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mistake {
    /// Stable code, e.g. `E010`.
    pub code: &'static str,
    /// What is wrong and what is expected, as a sentence.
    pub message: String,
    /// An optional hint.
    pub help: Option<String>,
}

impl Mistake {
    /// A mistake without a hint.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Mistake {
            code,
            message: message.into(),
            help: None,
        }
    }

    /// Adds a hint.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The diagnostic, located at `origin`.
    pub fn at(self, origin: &Origin) -> Diagnostic {
        let d = Diagnostic::error(self.code, origin, self.message);
        match self.help {
            Some(h) => d.help(h),
            None => d,
        }
    }
}

impl fmt::Display for Mistake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
