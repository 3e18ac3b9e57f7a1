//! A value as either front-end wrote it, and a [`Reader`] that takes the
//! words of a model out of it.
//!
//! The YAML front-end (in `kvmodel-build`) and the attribute parser
//! ([`attr`](crate::attr)) each build this one located tree, and read every
//! key's value through the same [`Reader`]: a value of the wrong kind gets
//! the same code and the same words from either.

use crate::ir::FieldExpr;
use crate::origin::{Diagnostics, Origin, Sp};
use crate::vocab::{self, Mistake};

/// A value as written: in a YAML schema or in a `#[kv(…)]` attribute.
#[derive(Clone, Debug)]
pub enum Value {
    /// Nothing: an empty YAML value, or `None` in an attribute.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer, possibly negative.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string: quoted, or a YAML plain scalar the core schema reads as a
    /// string.
    Str(String),
    /// A YAML plain scalar that YAML 1.2's core schema reads as nothing, a
    /// boolean or a number (`~`, `true`, `2`, `1.50`), with its text as
    /// written: where a name or a string is expected, the text is what
    /// counts (a field may be called `null`; a string default may be `1.50`).
    Plain {
        /// The scalar's text, exactly as in the file.
        text: String,
        /// What the core schema reads it as: [`Value::Null`],
        /// [`Value::Bool`], [`Value::Int`] or [`Value::Float`].
        typed: Box<Value>,
    },
    /// A list: `[a, b]`.
    List(Vec<Sp<Value>>),
    /// A mapping, in the order written.
    Map(Vec<(Sp<String>, Sp<Value>)>),
    /// A bare name or path in an attribute (`created_at`, `crate::User`).
    Path(syn::Path),
    /// A name applied to arguments in an attribute (`day(created_at)`).
    Call(syn::Path, Vec<Sp<Value>>),
}

impl Value {
    /// What the value means where no text is expected: a plain scalar's
    /// reading, any other value itself.
    pub fn typed(&self) -> &Value {
        match self {
            Value::Plain { typed, .. } => typed,
            v => v,
        }
    }

    /// The text a string or a name is taken from: a string's, a plain
    /// scalar's as written (never empty: an empty YAML value is
    /// [`Value::Null`]).
    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Str(s) | Value::Plain { text: s, .. } => Some(s),
            _ => None,
        }
    }

    /// What kind of value this is, for messages (`a string`, `a list`).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Plain { typed, .. } => typed.kind(),
            Value::List(_) => "a list",
            Value::Map(_) => "a mapping",
            Value::Path(_) => "a name",
            Value::Call(..) => "a call",
        }
    }

    /// The single identifier this value names, if it is one.
    fn ident(&self) -> Option<&syn::Ident> {
        match self {
            Value::Path(p) if p.leading_colon.is_none() && p.segments.len() == 1 => {
                Some(&p.segments[0].ident)
            }
            _ => None,
        }
    }
}

/// The value as JSON, as the core schema reads it; a name or a call inside
/// has none, and is returned as the culprit.
pub fn to_json(v: &Sp<Value>) -> Result<serde_json::Value, &Sp<Value>> {
    use serde_json::Value as J;
    Ok(match v.value.typed() {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::Float(f) => J::Number(serde_json::Number::from_f64(*f).ok_or(v)?),
        Value::Str(s) => J::String(s.clone()),
        Value::List(items) => J::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Map(entries) => J::Object(
            entries
                .iter()
                .map(|(k, v)| Ok((k.value.clone(), to_json(v)?)))
                .collect::<Result<_, _>>()?,
        ),
        Value::Plain { .. } | Value::Path(_) | Value::Call(..) => return Err(v),
    })
}

/// Words YAML 1.1 read as booleans, and YAML 1.2 (the schema's YAML) reads
/// as strings.
const YAML_1_1_BOOLEANS: &[&str] = &["y", "n", "yes", "no", "on", "off"];

/// Reads values of keys: each reader reports a value of the wrong kind to
/// the diagnostics and goes on, returning `None`.
#[derive(Debug)]
pub struct Reader<'d> {
    /// Where mistakes go.
    pub diags: &'d mut Diagnostics,
}

impl Reader<'_> {
    /// Reports a mistake at `origin`.
    pub fn report(&mut self, m: Mistake, origin: &Origin) {
        self.diags.push(m.at(origin));
    }

    /// Reports `v` as not being `expected` (`a string`) for `what`.
    pub fn wrong<T>(&mut self, v: &Sp<Value>, expected: &str, what: &str) -> Option<T> {
        self.report(
            vocab::wrong_kind(&format!("{expected} for {what}"), v.kind()),
            &v.origin,
        );
        None
    }

    /// A string (`key: "user:{id}"`, `key = "user:{id}"`); a YAML plain
    /// scalar's text as written.
    pub fn string(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<String>> {
        match v.text() {
            Some(s) => Some(Sp::new(s.to_owned(), v.origin.clone())),
            None => self.wrong(v, "a string", what),
        }
    }

    /// A string parsed by the vocabulary (`encoding`, `normalize`).
    pub fn word<T: std::str::FromStr<Err = Mistake>>(
        &mut self,
        v: &Sp<Value>,
        what: &str,
    ) -> Option<Sp<T>> {
        let s = self.string(v, what)?;
        match s.parse::<T>() {
            Ok(t) => Some(Sp::new(t, s.origin)),
            Err(m) => {
                self.report(m, &s.origin);
                None
            }
        }
    }

    /// A name, bare or quoted (`by: user_id`, `by = user_id`,
    /// `name = "by_email"`).
    pub fn name(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<String>> {
        if let Some(id) = v.value.ident() {
            return Some(Sp::new(vocab::unraw(id), Origin::Span(id.span())));
        }
        match v.text() {
            Some(s) if !s.is_empty() => Some(Sp::new(s.to_owned(), v.origin.clone())),
            _ => self.wrong(v, "a name", what),
        }
    }

    /// Names: a list of them, or one alone (`fields: [email]`,
    /// `remove: legacy`).
    pub fn names(&mut self, v: &Sp<Value>, what: &str) -> Vec<Sp<String>> {
        match &v.value {
            Value::List(items) => items.iter().filter_map(|i| self.name(i, what)).collect(),
            Value::Str(_) | Value::Plain { .. } | Value::Path(_) => {
                self.name(v, what).into_iter().collect()
            }
            _ => {
                self.wrong::<()>(v, "a list of names", what);
                Vec::new()
            }
        }
    }

    /// Words of the vocabulary, bare or quoted: a list of them, or one
    /// alone (`allow: [W002]`, `allow(W002)`).
    pub fn words<T: std::str::FromStr<Err = Mistake>>(
        &mut self,
        v: &Sp<Value>,
        what: &str,
    ) -> Vec<Sp<T>> {
        self.names(v, what)
            .into_iter()
            .filter_map(|s| match s.parse::<T>() {
                Ok(t) => Some(Sp::new(t, s.origin)),
                Err(m) => {
                    self.report(m, &s.origin);
                    None
                }
            })
            .collect()
    }

    /// A path, bare or quoted, as text (`belongs_to = User`).
    pub fn path(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<String>> {
        match &v.value {
            Value::Path(p) => {
                let text = crate::syntax::text(p);
                Some(Sp::new(text, Origin::Span(syn::spanned::Spanned::span(p))))
            }
            _ => self.name(v, what),
        }
    }

    /// A record version (`version`, `since`, `from`).
    pub fn version(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<u32>> {
        match v.value.typed() {
            Value::Int(i) => match vocab::version_number(*i, what) {
                Ok(n) => Some(Sp::new(n, v.origin.clone())),
                Err(m) => {
                    self.report(m, &v.origin);
                    None
                }
            },
            _ => self.wrong(v, "a version number", what),
        }
    }

    /// A whole number within `lo..=hi` (`shards`, `keep`), E131 outside.
    pub fn bounded(&mut self, v: &Sp<Value>, what: &str, lo: u32, hi: u32) -> Option<Sp<u32>> {
        match v.value.typed() {
            Value::Int(i) => match vocab::bounded_number(*i, what, lo, hi) {
                Ok(n) => Some(Sp::new(n, v.origin.clone())),
                Err(m) => {
                    self.report(m, &v.origin);
                    None
                }
            },
            _ => self.wrong(v, &format!("a whole number from {lo} to {hi}"), what),
        }
    }

    /// A duration with a unit (`2d`, `30m`), in milliseconds; E116 when
    /// it is not one.
    pub fn duration(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<u64>> {
        let text = self.string(v, what)?;
        match vocab::parse_duration_ms(&text) {
            Ok(ms) => Some(Sp::new(ms, text.origin)),
            Err(m) => {
                self.report(m, &text.origin);
                None
            }
        }
    }

    /// A size in bytes: text with a unit (`256KiB`) or a number of bytes
    /// (`1024`).
    pub fn size(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<u64>> {
        let parsed = match (v.value.typed(), v.value.text()) {
            (Value::Int(i), _) => vocab::size_from_int(*i),
            (_, Some(s)) => vocab::parse_size(s),
            _ => return self.wrong(v, "a size such as `256KiB`", what),
        };
        match parsed {
            Ok(n) => Some(Sp::new(n, v.origin.clone())),
            Err(m) => {
                self.report(m, &v.origin);
                None
            }
        }
    }

    /// `true` or `false` (YAML 1.2: also `True`, `TRUE`, `False`, `FALSE`;
    /// never `yes`, `no`, `on` or `off`).
    pub fn boolean(&mut self, v: &Sp<Value>, what: &str) -> Option<bool> {
        match v.value.typed() {
            Value::Bool(b) => Some(*b),
            Value::Str(s) if YAML_1_1_BOOLEANS.contains(&s.to_ascii_lowercase().as_str()) => {
                let m = vocab::wrong_kind(&format!("true or false for {what}"), "a string").help(
                    format!("`{s}` is a string in YAML 1.2; write `true` or `false`"),
                );
                self.report(m, &v.origin);
                None
            }
            _ => self.wrong(v, "true or false", what),
        }
    }

    /// A description, kept as [`vocab::description`] normalizes it.
    pub fn description(&mut self, v: &Sp<Value>) -> Option<String> {
        self.string(v, "`description`")
            .and_then(|s| vocab::description(&s))
    }

    /// A field or a time bucket (`created_at`, `day(created_at)`, quoted or
    /// not).
    pub fn field_expr(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<FieldExpr>> {
        let text = match &v.value {
            Value::Path(_) => match v.value.ident() {
                Some(id) => vocab::unraw(id),
                None => return self.wrong(v, "a field or a time bucket", what),
            },
            Value::Call(f, args) => {
                let arg = match args.as_slice() {
                    [a] => a.value.ident().map(vocab::unraw),
                    _ => None,
                };
                let f = crate::syntax::text(f);
                format!("{f}({})", arg.unwrap_or_default())
            }
            other => match other.text() {
                Some(s) => s.to_owned(),
                None => return self.wrong(v, "a field or a time bucket", what),
            },
        };
        match text.parse::<FieldExpr>() {
            Ok(x) => Some(Sp::new(x, v.origin.clone())),
            Err(m) => {
                self.report(m, &v.origin);
                None
            }
        }
    }

    /// Fields or time buckets: a list of them, or one alone (`fields:
    /// [stream, "day(at)"]`, `group_by: status`).
    pub fn field_exprs(&mut self, v: &Sp<Value>, what: &str) -> Vec<Sp<FieldExpr>> {
        match &v.value {
            Value::List(items) => items
                .iter()
                .filter_map(|i| self.field_expr(i, what))
                .collect(),
            _ => self.field_expr(v, what).into_iter().collect(),
        }
    }

    /// A value of any field type, as JSON (`add(tags = [])`).
    pub fn json(&mut self, v: &Sp<Value>, what: &str) -> Option<Sp<serde_json::Value>> {
        match to_json(v) {
            Ok(j) => Some(Sp::new(j, v.origin.clone())),
            Err(culprit) => {
                let culprit = culprit.clone();
                self.wrong(&culprit, "a string, number, boolean, list or mapping", what)
            }
        }
    }
}
