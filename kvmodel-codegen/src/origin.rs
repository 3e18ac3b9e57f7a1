//! Where an IR node came from, and diagnostics that point there.

use std::fmt;
use std::sync::Arc;

use proc_macro2::Span;

/// The origin of an IR node: a span in Rust source (derive), or a location in
/// a schema file (YAML). Origins never take part in equality, so a model
/// parsed from YAML equals the same model parsed from attributes.
#[derive(Clone, Default)]
pub enum Origin {
    /// A span from the derive input.
    Span(Span),
    /// `file:line:column` in a schema file (1-based).
    Location {
        /// Schema file path as given.
        file: Arc<str>,
        /// Line, 1-based.
        line: u32,
        /// Column, 1-based.
        column: u32,
    },
    /// Built in code.
    #[default]
    Unknown,
}

impl Origin {
    /// The span to attach generated tokens and errors to.
    pub fn span(&self) -> Span {
        match self {
            Origin::Span(s) => *s,
            _ => Span::call_site(),
        }
    }
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Span(_) => f.write_str("span"),
            Origin::Location { file, line, column } => write!(f, "{file}:{line}:{column}"),
            Origin::Unknown => f.write_str("?"),
        }
    }
}

impl PartialEq for Origin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Origin {}

/// A value with its origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sp<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    pub origin: Origin,
}

impl<T> Sp<T> {
    /// Wraps a value.
    pub fn new(value: T, origin: Origin) -> Self {
        Sp { value, origin }
    }
}

impl<T> std::ops::Deref for Sp<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Something worth knowing about the model that needs no change (how
    /// its writes fare on a Redis Cluster); never fails a build.
    Info,
    /// A lint: the model works, but practice says otherwise.
    Warning,
    /// The model cannot be generated.
    Error,
}

/// One problem, located.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable code, e.g. `E012`.
    pub code: &'static str,
    /// What is wrong and what is expected, as a sentence.
    pub message: String,
    /// Where.
    pub origin: Origin,
    /// An optional hint.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error.
    pub fn error(code: &'static str, origin: &Origin, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            origin: origin.clone(),
            help: None,
        }
    }

    /// Adds a hint.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The message with its help, as one text (for compile errors).
    pub fn full_message(&self) -> String {
        match &self.help {
            Some(h) => format!("{}\n  = help: {h}", self.message),
            None => self.message.clone(),
        }
    }
}

/// Collects diagnostics; every stage reports all it finds.
#[derive(Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Empty.
    pub fn new() -> Self {
        Diagnostics::default()
    }

    /// Adds one.
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    /// Adds an error.
    pub fn error(&mut self, code: &'static str, origin: &Origin, message: impl Into<String>) {
        self.push(Diagnostic::error(code, origin, message));
    }

    /// True if any error was reported.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    /// All of them, in report order.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    /// All of them.
    pub fn as_slice(&self) -> &[Diagnostic] {
        &self.items
    }

    /// Combines into one `syn::Error` (for the derive).
    pub fn to_syn_error(&self) -> Option<syn::Error> {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| syn::Error::new(d.origin.span(), d.full_message()))
            .reduce(|mut a, b| {
                a.combine(b);
                a
            })
    }
}

/// The closest candidate to `word`, if any is close enough to suggest.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// ` (did you mean `x`?)` or nothing.
pub fn suggestion<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(word, candidates)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}
