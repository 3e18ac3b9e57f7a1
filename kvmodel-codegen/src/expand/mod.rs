//! Emits the impls, key builders and repository of an entity.
//!
//! Output is hygienic: trait impls live in `const _: () = { … };`, every
//! path is absolute (`::core::…`, `::kvmodel::…` or the `crate = "…"`
//! override), locals start with `__`.

mod api;
mod ctx;
mod facts;
mod keys;
mod links;
mod on_delete;
mod proto;
mod reads;
mod repo;
mod stub;
mod tally;
mod versioned;

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

use crate::ir::{Entity, FieldType, Tally};
use ctx::{Ctx, respan};

/// The Rust type of a field type: see [`FieldType::to_rust`].
pub fn rust_type(ty: &FieldType, krate: &TokenStream, short: bool) -> TokenStream {
    ty.to_rust(krate, short)
}

/// Expands `#[derive(KvEntity)]` for a checked entity.
pub fn expand_entity(e: &Entity) -> TokenStream {
    let cx = Ctx::new(e);
    let versioned = versioned::expand(&cx);
    let enums = proto::enum_checks(&cx);
    let Some(template) = &e.key else {
        return quote!(const _: () = { #versioned #enums };);
    };
    let keys = keys::expand(&cx, template);
    // The fingerprint of the code that derives a record's keys and
    // entries: a delete plan written under other code is never used.
    let tag = plan_tag(&[&facts::expand(&cx, template, None), &keys]);
    let entity_impl = facts::expand(&cx, template, Some(tag));
    let repo = repo::expand(&cx, template);
    let parents = parents(&cx);
    let key_args = links::key_args(&cx, template);
    let links = links::expand(&cx, template);
    let checks = on_delete::checks(&cx);
    quote! {
        const _: () = {
            #versioned
            #enums
            #entity_impl
            #key_args
            #parents
            #checks
        };
        #keys
        #repo
        #links
    }
}

/// The FNV-1a hash of the text of `code`, never 0 (0 is "keeps no delete
/// plan"): equal for equal code (a toolchain that prints tokens otherwise
/// only leaves plans unused).
fn plan_tag(code: &[&TokenStream]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for c in code {
        for b in c.to_string().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h.max(1)
}

/// Names each relation's parent as an entity, so a parent that does not
/// exist (or is no entity) is a compile error on the `belongs_to` the user
/// wrote: the path carries that span.
fn parents(cx: &Ctx<'_>) -> TokenStream {
    let p = cx.p();
    let checks = cx.e.relations.iter().filter_map(|r| {
        let path: syn::Path = syn::parse_str(&r.belongs_to).ok()?;
        let path = respan(path.to_token_stream(), r.belongs_to.origin.span());
        Some(quote!(let _ = __parent::<#path>;))
    });
    let checks: Vec<TokenStream> = checks.collect();
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote! {
        fn __parent<__E: #p::Entity>() {}
        #(#checks)*
    }
}

/// The errors of an entity that did not check, with a stand-in for its
/// repository and key builders so that code using them adds no cascade of
/// unrelated errors.
pub fn expand_stub(e: &Entity, errors: TokenStream) -> TokenStream {
    stub::expand(e, errors)
}

/// Expands `#[derive(KvCounter)]`: the standalone counter's handle and
/// key, beside `errors` when it did not check.
pub fn expand_tally(t: &Tally, errors: Option<TokenStream>) -> TokenStream {
    tally::expand(t, errors)
}

/// Expands `#[derive(KvEnum)]`: key and sort encodings of a fieldless enum.
pub fn expand_enum(input: &syn::DeriveInput) -> Result<TokenStream, syn::Error> {
    let syn::Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "`KvEnum` needs a fieldless enum",
        ));
    };
    let mut krate = quote!(::kvmodel);
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("kv")) {
        attr.parse_nested_meta(|m| {
            if m.path.is_ident("crate") {
                let s: syn::LitStr = m.value()?.parse()?;
                let p: syn::Path = s.parse()?;
                krate = quote!(#p);
                Ok(())
            } else {
                Err(m.error("unknown kv attribute on an enum; expected `crate = \"…\"`"))
            }
        })?;
    }
    let name = &input.ident;
    let mut texts = Vec::new();
    let mut arms_key = Vec::new();
    let mut arms_sort = Vec::new();
    for (i, v) in data.variants.iter().enumerate() {
        if !matches!(v.fields, syn::Fields::Unit) {
            return Err(syn::Error::new_spanned(
                &v.fields,
                "`KvEnum` variants cannot have fields: a key component must be a plain name",
            ));
        }
        let vi = &v.ident;
        let text = vi.to_string().to_snake_case();
        let idx = i as u32;
        arms_key.push(quote!(Self::#vi => #text));
        arms_sort.push(quote!(Self::#vi => #idx));
        texts.push(text);
    }
    let p = quote!(#krate::__private);
    Ok(quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::KeyPart for #name {
                fn write_key(&self, __out: &mut ::std::string::String) {
                    __out.push_str(match self { #(#arms_key,)* });
                }
                fn match_key(&self, __key: &str) -> ::core::option::Option<::core::primitive::usize> {
                    let __text: &str = match self { #(#arms_key,)* };
                    __key.starts_with(__text).then_some(__text.len())
                }
            }
            #[automatically_derived]
            impl #p::ProtoEnum for #name {}
            #[automatically_derived]
            impl #p::SortPart for #name {
                fn write_sort(&self, __out: &mut ::std::vec::Vec<u8>) {
                    let __index: u32 = match self { #(#arms_sort,)* };
                    #p::SortPart::write_sort(&__index, __out);
                }
                fn match_sort(&self, __sort: &[u8]) -> ::core::option::Option<::core::primitive::usize> {
                    let __index: u32 = match self { #(#arms_sort,)* };
                    #p::SortPart::match_sort(&__index, __sort)
                }
            }
        };
    })
}
