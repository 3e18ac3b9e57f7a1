//! Values of `#[kv(…)]` keys, described with the words YAML values are
//! described with (`a string`, `a list`, …), so a value of the wrong kind
//! gets the same diagnostic from either front-end.

use proc_macro2::Span;
use syn::ext::IdentExt as _;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Token, token};

use crate::ir::{FieldExpr, Syntax};
use crate::origin::{Diagnostics, Origin, Sp};
use crate::vocab::{self, Mistake};

/// A value as written in an attribute.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// `None`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer literal, possibly negative.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// A string literal.
    Str(String),
    /// `[a, b]`.
    List(Vec<Sp<Value>>),
    /// `{ key = value, "other key": value }` (`=` or `:`).
    Map(Vec<(Sp<String>, Sp<Value>)>),
    /// A name or path (`created_at`, `crate::User`).
    Path(syn::Path),
    /// A name applied to arguments (`day(created_at)`).
    Call(syn::Path, Vec<Sp<Value>>),
}

impl Value {
    /// What kind of value this is, in the words of YAML's diagnostics.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
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

/// The value as JSON, for migration values; a name or a call inside has
/// none, and is returned as the culprit.
fn to_json(v: &Sp<Value>) -> Result<serde_json::Value, &Sp<Value>> {
    use serde_json::Value as J;
    Ok(match &v.value {
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
        Value::Path(_) | Value::Call(..) => return Err(v),
    })
}

fn sp<T>(value: T, span: Span) -> Sp<T> {
    Sp::new(value, Origin::Span(span))
}

/// A path of identifiers (keywords allowed, as in `r#type` or `crate::x`).
fn path(input: ParseStream<'_>) -> syn::Result<syn::Path> {
    let leading_colon: Option<Token![::]> = input.parse()?;
    let mut segments = syn::punctuated::Punctuated::new();
    loop {
        segments.push_value(syn::PathSegment::from(input.call(syn::Ident::parse_any)?));
        if !input.peek(Token![::]) {
            break;
        }
        segments.push_punct(input.parse()?);
    }
    Ok(syn::Path {
        leading_colon,
        segments,
    })
}

fn number(input: ParseStream<'_>, negative: bool) -> syn::Result<Value> {
    if input.peek(syn::LitFloat) {
        let f: syn::LitFloat = input.parse()?;
        let v: f64 = f.base10_parse()?;
        if !v.is_finite() {
            return Err(syn::Error::new(f.span(), "the number is not finite"));
        }
        return Ok(Value::Float(if negative { -v } else { v }));
    }
    let i: syn::LitInt = input.parse()?;
    let v: i128 = i.base10_parse()?;
    i64::try_from(if negative { -v } else { v })
        .map(Value::Int)
        .map_err(|_| syn::Error::new(i.span(), "the integer does not fit in 64 bits"))
}

/// Parses one value: a literal, a list, a mapping, a name or a call.
pub(crate) fn parse(input: ParseStream<'_>) -> syn::Result<Sp<Value>> {
    let span = input.span();
    let value = if input.peek(syn::LitStr) {
        Value::Str(input.parse::<syn::LitStr>()?.value())
    } else if input.peek(syn::LitBool) {
        Value::Bool(input.parse::<syn::LitBool>()?.value)
    } else if input.peek(Token![-]) {
        input.parse::<Token![-]>()?;
        number(input, true)?
    } else if input.peek(syn::LitInt) || input.peek(syn::LitFloat) {
        number(input, false)?
    } else if input.peek(token::Bracket) {
        let content;
        syn::bracketed!(content in input);
        Value::List(
            content
                .parse_terminated(parse, Token![,])?
                .into_iter()
                .collect(),
        )
    } else if input.peek(token::Brace) {
        let content;
        syn::braced!(content in input);
        let entries = content.parse_terminated(
            |e| {
                let key = if e.peek(syn::LitStr) {
                    let s: syn::LitStr = e.parse()?;
                    sp(s.value(), s.span())
                } else {
                    let id = e.call(syn::Ident::parse_any)?;
                    sp(vocab::unraw(&id), id.span())
                };
                if e.peek(Token![=]) {
                    e.parse::<Token![=]>()?;
                } else {
                    e.parse::<Token![:]>()?;
                }
                Ok((key, parse(e)?))
            },
            Token![,],
        )?;
        Value::Map(entries.into_iter().collect())
    } else if input.peek(syn::Ident::peek_any) || input.peek(Token![::]) {
        let p = path(input)?;
        if input.peek(token::Paren) {
            let content;
            syn::parenthesized!(content in input);
            let args = content.parse_terminated(parse, Token![,])?;
            Value::Call(p, args.into_iter().collect())
        } else if p.is_ident("None") {
            Value::Null
        } else {
            Value::Path(p)
        }
    } else {
        return Err(
            input.error("expected a value: a string, number, boolean, list, mapping or name")
        );
    };
    Ok(sp(value, span))
}

/// Skips whatever follows a key (`= value` or `(…)`), so parsing goes on
/// after a key that is reported.
pub(crate) fn skip(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        parse(meta.value()?)?;
    } else if meta.input.peek(token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

/// The values of a parenthesized list (`fields(a, b)`).
pub(crate) fn list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<Sp<Value>>> {
    let content;
    syn::parenthesized!(content in meta.input);
    Ok(content
        .parse_terminated(parse, Token![,])?
        .into_iter()
        .collect())
}

/// Reads values of one key: each reader reports a value of the wrong kind
/// to the diagnostics and goes on; only broken syntax stops the attribute.
pub(crate) struct Reader<'d> {
    pub diags: &'d mut Diagnostics,
}

impl Reader<'_> {
    /// Reports a mistake at `origin`.
    pub fn report(&mut self, m: Mistake, origin: &Origin) {
        self.diags.push(m.at(origin));
    }

    fn wrong<T>(&mut self, v: &Sp<Value>, expected: &str, what: &str) -> Option<T> {
        self.report(
            vocab::wrong_kind(&format!("{expected} for {what}"), v.kind()),
            &v.origin,
        );
        None
    }

    /// A string (`key = "user:{id}"`).
    pub fn string(&mut self, v: Sp<Value>, what: &str) -> Option<Sp<String>> {
        match v.value {
            Value::Str(s) => Some(Sp::new(s, v.origin)),
            _ => self.wrong(&v, "a string", what),
        }
    }

    /// A string parsed by the vocabulary (`encoding = "json"`).
    pub fn word<T: std::str::FromStr<Err = Mistake>>(
        &mut self,
        v: Sp<Value>,
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

    /// A record version (`version = 2`, `since = 2`, `from = 1`).
    pub fn version(&mut self, v: Sp<Value>, what: &str) -> Option<Sp<u32>> {
        match v.value {
            Value::Int(i) => match vocab::version_number(i, what) {
                Ok(n) => Some(Sp::new(n, v.origin)),
                Err(m) => {
                    self.report(m, &v.origin);
                    None
                }
            },
            _ => self.wrong(&v, "a version number", what),
        }
    }

    /// A name, bare or quoted (`by = user_id`, `name = "by_email"`).
    pub fn name(&mut self, v: Sp<Value>, what: &str) -> Option<Sp<String>> {
        if let Some(id) = v.ident() {
            return Some(Sp::new(vocab::unraw(id), Origin::Span(id.span())));
        }
        match v.value {
            Value::Str(s) => Some(Sp::new(s, v.origin)),
            _ => self.wrong(&v, "a name", what),
        }
    }

    /// A path, bare or quoted, as text (`belongs_to = User`).
    pub fn path(&mut self, v: Sp<Value>, what: &str) -> Option<Sp<String>> {
        match &v.value {
            Value::Path(p) => {
                let text = crate::syntax::text(p);
                Some(Sp::new(text, Origin::Span(p.span())))
            }
            Value::Str(_) => self.string(v, what),
            _ => self.wrong(&v, "a name", what),
        }
    }

    /// Rust syntax, bare or quoted (`migrate_from = UserV1`,
    /// `crate = "::kvmodel"`), parsed here once. `expected` names what it
    /// must be (`a type`), `example` what that means for this key.
    pub fn rust<T: syn::parse::Parse + quote::ToTokens>(
        &mut self,
        input: ParseStream<'_>,
        (expected, example): (&str, &str),
        what: &str,
    ) -> syn::Result<Option<Sp<Syntax<T>>>> {
        use syn::parse::discouraged::Speculative as _;
        if input.peek(syn::LitStr) {
            let lit: syn::LitStr = input.parse()?;
            let origin = Origin::Span(lit.span());
            return Ok(match Syntax::parse_lit(&lit) {
                Ok(s) => Some(Sp::new(s, origin)),
                Err(_) => {
                    let m = Mistake::new(
                        "E010",
                        format!("`{}` is not {expected}; expected {example}", lit.value()),
                    );
                    self.report(m, &origin);
                    None
                }
            });
        }
        let fork = input.fork();
        if let Ok(t) = fork.parse::<T>() {
            if fork.is_empty() || fork.peek(Token![,]) {
                input.advance_to(&fork);
                let origin = Origin::Span(t.span());
                return Ok(Some(Sp::new(Syntax::new(t), origin)));
            }
        }
        let v = parse(input)?;
        Ok(self.wrong(&v, expected, what))
    }

    /// A field or a time bucket (`created_at`, `day(created_at)`, or either
    /// quoted).
    pub fn field_expr(&mut self, v: Sp<Value>, what: &str) -> Option<Sp<FieldExpr>> {
        let text = match &v.value {
            Value::Str(s) => s.clone(),
            Value::Path(_) => match v.ident() {
                Some(id) => vocab::unraw(id),
                None => return self.wrong(&v, "a field or a time bucket", what),
            },
            Value::Call(f, args) => {
                let arg = match args.as_slice() {
                    [a] => a.ident().map(vocab::unraw),
                    _ => None,
                };
                let f = crate::syntax::text(f);
                format!("{f}({})", arg.unwrap_or_default())
            }
            _ => return self.wrong(&v, "a field or a time bucket", what),
        };
        match text.parse::<FieldExpr>() {
            Ok(x) => Some(Sp::new(x, v.origin)),
            Err(m) => {
                self.report(m, &v.origin);
                None
            }
        }
    }

    /// A value of any field type, as JSON (`add(tags = [])`).
    pub fn json(&mut self, v: Sp<Value>, what: &str) -> Option<Sp<serde_json::Value>> {
        match to_json(&v) {
            Ok(j) => Some(Sp::new(j, v.origin)),
            Err(culprit) => {
                let culprit = culprit.clone();
                self.wrong(&culprit, "a string, number, boolean, list or mapping", what)
            }
        }
    }
}
