//! The keys of a `#[kv(…)]` construct: their names as written, and the
//! unknown ones, reported once the construct's name is known.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;

use super::value::{self, Reader};
use crate::origin::Origin;
use crate::vocab;

/// The name of a key as written (`r#type` is `type`).
pub(super) fn meta_name(meta: &ParseNestedMeta<'_>) -> String {
    match meta.path.get_ident() {
        Some(id) => vocab::unraw(id),
        None => crate::syntax::text(&meta.path),
    }
}

/// The keys a construct knows; unknown ones are collected and reported once
/// the construct's name is known.
pub(super) struct Keys {
    known: Vec<&'static str>,
    unknown: Vec<(String, Span)>,
}

impl Keys {
    pub(super) fn new(extra: &[&'static str], known: &[&'static str]) -> Self {
        Keys {
            known: extra.iter().chain(known).copied().collect(),
            unknown: Vec::new(),
        }
    }

    /// Records an unknown key and skips its value.
    pub(super) fn unknown(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        self.unknown.push((meta_name(meta), meta.path.span()));
        value::skip(meta)
    }

    pub(super) fn report(self, what: &str, r: &mut Reader<'_>) {
        for (key, span) in self.unknown {
            r.report(
                vocab::unknown_key(&key, what, &self.known),
                &Origin::Span(span),
            );
        }
    }
}
