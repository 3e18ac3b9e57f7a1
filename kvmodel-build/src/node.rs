//! A YAML document as the located value tree both front-ends share
//! ([`Value`]), read under YAML 1.2's core schema: `y`, `n`, `yes`, `no`,
//! `on` and `off` are strings, and a plain scalar that reads as nothing, a
//! boolean or a number keeps its text as written, for where a name or a
//! string is expected.

use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use kvmodel_codegen::Origin;
use kvmodel_codegen::origin::{Diagnostics, Sp};
pub use kvmodel_codegen::value::Value;

/// A node as the parser gives it, before its plain scalars get their text.
#[derive(Debug)]
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Raw>, Spanned<Raw>)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Raw;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_unit<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_none<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
                Ok(Raw::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
                Ok(Raw::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
                i64::try_from(v)
                    .map(Raw::Int)
                    .map_err(|_| E::custom("the integer is larger than 2^63 - 1"))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
                Ok(Raw::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
                Ok(Raw::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Raw, E> {
                Ok(Raw::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
                let mut items = Vec::new();
                while let Some(x) = a.next_element()? {
                    items.push(x);
                }
                Ok(Raw::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = a.next_entry()? {
                    entries.push(entry);
                }
                Ok(Raw::Map(entries))
            }
        }
        d.deserialize_any(V)
    }
}

/// How a schema file is read: YAML 1.2's core schema, one document.
fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.strict_booleans = true;
    o.underscored_numbers_as_strings = true;
    o.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    o.with_snippet = false;
    o
}

/// Parses one schema file into the shared value tree. Mapping keys are
/// names: a key that is not one is reported, and its entry left out.
pub fn parse(
    source: &str,
    loc: &Locator,
    diags: &mut Diagnostics,
) -> Result<Sp<Value>, serde_saphyr::Error> {
    let raw = serde_saphyr::from_str_with_options::<Spanned<Raw>>(source, options())?;
    Ok(Tree { source, loc, diags }.value(raw))
}

struct Tree<'a> {
    source: &'a str,
    loc: &'a Locator,
    diags: &'a mut Diagnostics,
}

impl Tree<'_> {
    /// A plain scalar's text as written, from where it is defined (an
    /// alias's anchor); the parser's reading when the text is not at hand.
    fn text(&self, n: &Spanned<Raw>) -> String {
        let span = n.defined.span();
        let written = span
            .byte_offset()
            .zip(span.byte_len())
            .and_then(|(at, len)| {
                let at = usize::try_from(at).ok()?;
                self.source
                    .get(at..at.checked_add(usize::try_from(len).ok()?)?)
            });
        match (written, &n.value) {
            (Some(t), _) => t.to_owned(),
            (None, Raw::Bool(b)) => b.to_string(),
            (None, Raw::Int(i)) => i.to_string(),
            (None, Raw::Float(f)) => f.to_string(),
            (None, _) => String::new(),
        }
    }

    fn value(&mut self, n: Spanned<Raw>) -> Sp<Value> {
        let origin = self.loc.at(&n);
        let typed = match n.value {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::Int(i) => Value::Int(i),
            Raw::Float(f) => Value::Float(f),
            Raw::Str(s) => return Sp::new(Value::Str(s), origin),
            Raw::Seq(items) => {
                let items = items.into_iter().map(|i| self.value(i)).collect();
                return Sp::new(Value::List(items), origin);
            }
            Raw::Map(entries) => {
                let entries = entries
                    .into_iter()
                    .filter_map(|(k, v)| Some((self.key(k)?, self.value(v))))
                    .collect();
                return Sp::new(Value::Map(entries), origin);
            }
        };
        let text = self.text(&n);
        if text.is_empty() {
            // An empty value (`default:`): nothing was written, so there is
            // no text to take either.
            return Sp::new(Value::Null, origin);
        }
        Sp::new(
            Value::Plain {
                text,
                typed: Box::new(typed),
            },
            origin,
        )
    }

    /// A mapping key: a name, taken as written (`n:`, `on:`, `1:` name
    /// fields called `n`, `on` and `1`).
    fn key(&mut self, k: Spanned<Raw>) -> Option<Sp<String>> {
        let origin = self.loc.at(&k);
        let text = match &k.value {
            Raw::Str(s) => s.clone(),
            Raw::Seq(_) | Raw::Map(_) => {
                self.diags.error(
                    "E010",
                    &origin,
                    "a mapping key must be a name, not a list or a mapping",
                );
                return None;
            }
            _ => self.text(&k),
        };
        if text.is_empty() {
            self.diags.error(
                "E010",
                &origin,
                "this mapping key is empty; write a name before the `:`",
            );
            return None;
        }
        Some(Sp::new(text, origin))
    }
}

/// What is wrong with a file the parser refused, in our words: the
/// parser's sentence without its location (the diagnostic has it) or advice
/// about its own API.
pub fn syntax_error(e: &serde_saphyr::Error) -> String {
    use serde_saphyr::MessageFormatter as _;
    if let serde_saphyr::Error::MultipleDocuments { .. } = e {
        return "a schema file holds one YAML document, and a second one starts here; \
                remove the `---` before it, or put each schema in a file of its own"
            .to_owned();
    }
    let message = serde_saphyr::DefaultMessageFormatter.format_message(e);
    let message = message
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or_default()
        .trim();
    format!("the file is not valid YAML: {message}")
}

/// Turns saphyr locations into IR origins for one file.
#[derive(Debug, Clone)]
pub struct Locator {
    file: Arc<str>,
}

impl Locator {
    /// For `file`.
    pub fn new(file: &str) -> Self {
        Locator {
            file: Arc::from(file),
        }
    }

    /// The origin of a spanned node.
    pub fn at<T>(&self, s: &Spanned<T>) -> Origin {
        self.loc(&s.referenced)
    }

    /// The origin of a location.
    pub fn loc(&self, l: &serde_saphyr::Location) -> Origin {
        Origin::Location {
            file: self.file.clone(),
            line: l.line() as u32,
            column: l.column() as u32,
        }
    }

    /// The start of the file.
    pub fn start(&self) -> Origin {
        Origin::Location {
            file: self.file.clone(),
            line: 1,
            column: 1,
        }
    }
}
