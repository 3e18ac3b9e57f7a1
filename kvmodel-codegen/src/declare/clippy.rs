//! Whether clippy's `duplicated_attributes` would report an item's
//! `#[kv(…)]` attributes, so the printer allows it there and only there.
//!
//! The lint reads every attribute that rustc can read as a meta item (each
//! value a literal: `name = "by_email"` is one, `order_by = at` is not) as
//! paths of names, `kv:index:unique` or `kv:counter:name=by_status`, and
//! reports a path met twice on one item (rust-clippy#13238): two unique
//! indexes, two counters grouped by one field, two migration steps `from`
//! some version are distinct constructs to kvmodel, repeated attributes to
//! clippy.

use std::collections::BTreeSet;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A meta item as rustc reads it.
enum Meta {
    /// `unique`, or a name whose value is a literal other than a string
    /// (`keep = 100`).
    Word(String),
    /// `name = "by_email"`.
    Str(String, String),
    /// `fields(email, day(at))`; literals in the list are no meta items.
    List(String, Vec<Meta>),
}

impl Meta {
    /// The paths the lint compares, as it writes them.
    fn paths(&self, parent: &mut Vec<String>, out: &mut Vec<String>) {
        match self {
            Meta::Word(n) => out.push(format!("{}:{n}", parent.join(":"))),
            Meta::Str(n, v) => out.push(format!("{}:{n}={v}", parent.join(":"))),
            Meta::List(n, items) => {
                parent.push(n.clone());
                for i in items {
                    i.paths(parent, out);
                }
                parent.pop();
            }
        }
    }
}

type Tokens = std::iter::Peekable<proc_macro2::token_stream::IntoIter>;

fn is_punct(t: Option<&TokenTree>, c: char) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

/// A literal as rustc reads one: a literal token, `true` or `false`.
fn is_literal(t: Option<&TokenTree>) -> bool {
    match t {
        Some(TokenTree::Literal(_)) => true,
        Some(TokenTree::Ident(i)) => i == "true" || i == "false",
        _ => false,
    }
}

/// `a` or `a::b`, with an optional leading `::`.
fn path(it: &mut Tokens) -> Option<String> {
    let mut segments = Vec::new();
    let mut separator = is_punct(it.peek(), ':');
    loop {
        if separator {
            it.next();
            if !is_punct(it.next().as_ref(), ':') {
                return None;
            }
        }
        match it.next() {
            Some(TokenTree::Ident(i)) => segments.push(i.to_string()),
            _ => return None,
        }
        separator = is_punct(it.peek(), ':');
        if !separator {
            return Some(segments.join("::"));
        }
    }
}

/// One meta item; `None` when the tokens are none.
fn item(it: &mut Tokens) -> Option<Meta> {
    let name = path(it)?;
    match it.peek() {
        Some(TokenTree::Group(g)) => {
            if g.delimiter() != Delimiter::Parenthesis {
                return None;
            }
            let inner = g.stream();
            it.next();
            Some(Meta::List(name, list(inner)?))
        }
        Some(TokenTree::Punct(p)) if p.as_char() == '=' => {
            it.next();
            let value = it.next();
            if !is_literal(value.as_ref()) {
                return None;
            }
            Some(match value {
                Some(TokenTree::Literal(l)) => match syn::Lit::new(l) {
                    syn::Lit::Str(s) => Meta::Str(name, s.value()),
                    _ => Meta::Word(name),
                },
                _ => Meta::Word(name),
            })
        }
        _ => Some(Meta::Word(name)),
    }
}

/// The meta items of a parenthesized list; `None` when an entry is neither
/// a meta item nor a literal.
fn list(tokens: TokenStream) -> Option<Vec<Meta>> {
    let mut it = tokens.into_iter().peekable();
    let mut items = Vec::new();
    while it.peek().is_some() {
        if is_literal(it.peek()) {
            it.next();
        } else {
            items.push(item(&mut it)?);
        }
        match it.next() {
            None => {}
            Some(t) if is_punct(Some(&t), ',') => {}
            Some(_) => return None,
        }
    }
    Some(items)
}

/// Whether two of an item's attributes, each given by what its brackets
/// hold (`kv(…)`), give the lint one path.
pub(super) fn repeated(attrs: &[TokenStream]) -> bool {
    let mut paths = Vec::new();
    for attr in attrs {
        let mut it = attr.clone().into_iter().peekable();
        if let Some(meta) = item(&mut it) {
            if it.peek().is_none() {
                meta.paths(&mut Vec::new(), &mut paths);
            }
        }
    }
    let mut seen = BTreeSet::new();
    !paths.into_iter().all(|p| seen.insert(p))
}

#[cfg(test)]
mod tests {
    use super::repeated;

    fn attrs(texts: &[&str]) -> Vec<proc_macro2::TokenStream> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    #[test]
    fn repeated_paths_of_meta_items_are_found() {
        for case in [
            &[
                "kv(index(name = \"a\", unique))",
                "kv(index(name = \"b\", unique))",
            ][..],
            &[
                "kv(counter(name = \"a\", group_by(hour(at))))",
                "kv(counter(name = \"b\", group_by(kind, hour(at))))",
            ],
            &["kv(migration(from = 1))", "kv(migration(from = 2))"],
            &["kv(index(name = \"a\", fields(x, x)))"],
        ] {
            assert!(repeated(&attrs(case)), "{case:?}");
        }
    }

    #[test]
    fn attributes_rustc_reads_as_no_meta_item_repeat_nothing() {
        for case in [
            &["kv(index(name = \"a\", unique))", "kv(index(name = \"b\"))"][..],
            &[
                "kv(index(name = \"a\", unique, order_by = at))",
                "kv(index(name = \"b\", unique))",
            ],
            &["kv(index(name = a, unique))", "kv(index(name = b, unique))"],
            &[
                "kv(migration(from = 1, add(n = -1)))",
                "kv(migration(from = 2))",
            ],
            &[
                "kv(migration(from = 1, add(n = [])))",
                "kv(migration(from = 2))",
            ],
            &[
                "kv(migration(from = 1, add(n = None)))",
                "kv(migration(from = 2))",
            ],
            &[
                "kv(index(name = \"a\", fields(x)))",
                "kv(counter(name = \"a\", group_by(x)))",
            ],
            &["kv(namespace = \"a\", version = 2)", "kv(allow(W001))"],
        ] {
            assert!(!repeated(&attrs(case)), "{case:?}");
        }
    }
}
