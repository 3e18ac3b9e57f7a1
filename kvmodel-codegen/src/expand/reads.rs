//! Reads of a record's fields in generated code (`self.f`), for the key
//! builders it calls.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::ctx::{Ctx, arg_from_ref, ident};
use crate::ir::FieldType;

/// Reads fields of `self`: optional ones are bound from their `Some`, so a
/// fact exists only when every field it needs has a value.
pub(crate) struct Reads {
    /// `(pattern, place)` of each optional field: `Some(__v0)`, `&self.f`.
    guards: Vec<(TokenStream, TokenStream)>,
    pub(crate) refs: Vec<Read>,
}

/// A field value: a place (`self.f`) or a reference bound from an `Option`.
#[derive(Clone)]
pub(crate) enum Read {
    Place(TokenStream),
    Ref(TokenStream),
}

impl Read {
    /// `&T`.
    pub(crate) fn by_ref(&self) -> TokenStream {
        match self {
            Read::Place(p) => quote!(&#p),
            Read::Ref(r) => r.clone(),
        }
    }

    /// The value of a `Copy` field.
    pub(crate) fn copied(&self) -> TokenStream {
        match self {
            Read::Place(p) => p.clone(),
            Read::Ref(r) => quote!(*#r),
        }
    }

    /// The argument form for a key builder.
    pub(crate) fn arg(&self, ty: &FieldType) -> TokenStream {
        match (self, ty) {
            (Read::Ref(r), _) => arg_from_ref(ty, r.clone()),
            (Read::Place(p), FieldType::String | FieldType::Bytes) => quote!(&#p),
            (Read::Place(p), FieldType::Named(_)) => quote!(::core::clone::Clone::clone(&#p)),
            (Read::Place(p), _) => p.clone(),
        }
    }
}

impl Reads {
    pub(crate) fn new(cx: &Ctx<'_>, fields: &[&str]) -> Reads {
        let mut guards = Vec::new();
        let mut refs = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let member = ident(f);
            let span =
                cx.e.field(f)
                    .map(|x| x.name.origin.span())
                    .unwrap_or_else(proc_macro2::Span::call_site);
            if cx.is_optional(f) {
                let b = format_ident!("__v{}", i);
                guards.push((
                    quote!(::core::option::Option::Some(#b)),
                    quote_spanned!(span=> &self.#member),
                ));
                refs.push(Read::Ref(quote!(#b)));
            } else {
                refs.push(Read::Place(quote_spanned!(span=> self.#member)));
            }
        }
        Reads { guards, refs }
    }

    /// `body`, run when every optional field has a value.
    pub(crate) fn wrap(&self, body: TokenStream) -> TokenStream {
        self.guards.iter().rev().fold(
            body,
            |inner, (pat, place)| quote!(if let #pat = #place { #inner }),
        )
    }

    /// The boolean `test` when every optional field has a value, `false`
    /// otherwise.
    pub(crate) fn test(&self, test: TokenStream) -> TokenStream {
        match self.guards.as_slice() {
            [] => test,
            [(pat, place)] => quote!(match #place { #pat => #test, _ => false }),
            guards => {
                let (pats, places): (Vec<_>, Vec<_>) = guards.iter().cloned().unzip();
                quote!(match (#(#places),*) { (#(#pats),*) => #test, _ => false })
            }
        }
    }
}
