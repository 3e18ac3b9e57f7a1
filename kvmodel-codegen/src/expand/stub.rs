//! The stand-in emitted beside the errors of an entity that did not check.
//!
//! Like thiserror's fallback impl, it keeps one mistake from cascading: the
//! user's code that calls `XRepo::new(store).get(id)` or
//! `XKeys::by_email(..)` still type-checks against it, so the compiler
//! reports the real error and not a screen of "no method named …". Its
//! bodies never run: the crate does not compile while the errors stand.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::Ctx;
use crate::ir::Entity;

/// `n` generic parameters `__A0 … __An` and their arguments `_: __Ai`.
fn any_args(n: usize) -> (Vec<syn::Ident>, Vec<TokenStream>) {
    let tys: Vec<syn::Ident> = (0..n).map(|i| format_ident!("__A{}", i)).collect();
    let args = tys.iter().map(|t| quote!(_: #t)).collect();
    (tys, args)
}

/// Names already emitted: a name the model declares twice (an error being
/// reported) is emitted once.
struct Names(std::collections::BTreeSet<String>);

impl Names {
    fn new(fixed: &[&str]) -> Self {
        Names(fixed.iter().map(|s| (*s).to_owned()).collect())
    }

    /// A new method name from the model, if it is a plain identifier.
    fn method(&mut self, prefix: &str, name: &str) -> Option<syn::Ident> {
        let full = format!("{prefix}{name}");
        let ident = syn::parse_str::<syn::Ident>(&full).ok()?;
        self.0.insert(full).then_some(ident)
    }
}

pub(crate) fn expand(e: &Entity, errors: TokenStream) -> TokenStream {
    if e.key.is_none() {
        return errors;
    }
    let cx = Ctx::new(e);
    let (vis, name, keys, repo, k) = (&cx.vis, &cx.name, &cx.keys, &cx.repo, &cx.krate);
    let never = quote!(::core::unreachable!());
    // The key's arity when the template names fields; one argument otherwise.
    let key_arity = e
        .key
        .as_ref()
        .map_or(1, |t| t.placeholders().count().max(1));
    let (key_tys, key_args) = any_args(key_arity);

    let mut key_names = Names::new(&["record", "all"]);
    let mut names = Names::new(&[
        "new",
        "store",
        "create",
        "update",
        "get",
        "get_many",
        "modify",
        "delete",
        "list_all",
        "exists",
        "count_all",
        "upsert",
        "try_modify",
        "create_many",
        "migrate_all",
        "verify",
        "reconcile",
        "with_partial_reads",
    ]);
    let mut key_fns = Vec::new();
    let mut methods = Vec::new();
    for ix in &e.indexes {
        let (tys, args) = any_args(ix.fields.len());
        if let Some(f) = key_names.method("", &ix.name) {
            key_fns.push(
                quote!(#vis fn #f<#(#tys),*>(#(#args),*) -> ::std::string::String { #never }),
            );
        }
        if ix.unique {
            if let Some(m) = names.method("find_", &ix.name) {
                methods.push(quote!(#vis async fn #m<#(#tys),*>(&self, #(#args),*) -> #k::Result<::core::option::Option<#name>> { #never }));
            }
        } else if let Some(m) = names.method("list_", &ix.name) {
            methods.push(quote!(#vis async fn #m<#(#tys),*>(&self, #(#args,)* _: #k::PageRequest) -> #k::Result<#k::Page<#name>> { #never }));
        }
    }
    for r in &e.relations {
        if let Some(f) = key_names.method("relation_", &r.name) {
            key_fns.push(quote!(#vis fn #f<__A0>(_: __A0) -> ::std::string::String { #never }));
        }
        if let Some(m) = names.method("list_by_", &r.name) {
            methods.push(quote!(#vis async fn #m<__A0>(&self, _: __A0, _: #k::PageRequest) -> #k::Result<#k::Page<#name>> { #never }));
        }
    }
    for c in &e.counters {
        let (tys, args) = any_args(c.group_by.len());
        if let Some(f) = key_names.method("counter_", &c.name) {
            key_fns.push(
                quote!(#vis fn #f<#(#tys),*>(#(#args),*) -> ::std::string::String { #never }),
            );
        }
        let prefix = if c.sum.is_some() { "sum_" } else { "count_" };
        if let Some(m) = names.method(prefix, &c.name) {
            methods.push(quote!(#vis async fn #m<#(#tys),*>(&self, #(#args),*) -> #k::Result<i64> { #never }));
        }
    }

    quote! {
        #errors

        #vis struct #keys;

        #[allow(dead_code, clippy::all)]
        impl #keys {
            #vis fn record<#(#key_tys),*>(#(#key_args),*) -> ::std::string::String { #never }
            #vis fn all() -> ::std::string::String { #never }
            #(#key_fns)*
        }

        #vis struct #repo<__S> { _store: __S }

        #[allow(dead_code, unused_variables, clippy::all)]
        impl<__S: #k::Store> #repo<__S> {
            #vis fn new(store: __S) -> Self { #repo { _store: store } }
            #vis fn store(&self) -> &__S { &self._store }
            #vis fn with_partial_reads(self) -> Self { self }
            #vis async fn create(&self, _: &#name) -> #k::Result<()> { #never }
            #vis async fn update(&self, _: &#name) -> #k::Result<()> { #never }
            #vis async fn get<#(#key_tys),*>(&self, #(#key_args),*) -> #k::Result<::core::option::Option<#name>> { #never }
            #vis async fn get_many<__Ids>(&self, _: __Ids) -> #k::Result<::std::vec::Vec<::core::option::Option<#name>>> { #never }
            #vis async fn modify<#(#key_tys,)* __F: ::core::ops::FnMut(&mut #name)>(&self, #(#key_args,)* _: __F) -> #k::Result<#name> { #never }
            #vis async fn delete<#(#key_tys),*>(&self, #(#key_args),*) -> #k::Result<bool> { #never }
            #vis async fn exists<#(#key_tys),*>(&self, #(#key_args),*) -> #k::Result<bool> { #never }
            #vis async fn count_all(&self) -> #k::Result<i64> { #never }
            #vis async fn upsert(&self, _: &#name) -> #k::Result<bool> { #never }
            #vis async fn create_many(&self, _: &[#name]) -> #k::Result<()> { #never }
            #vis async fn try_modify<#(#key_tys,)* __F, __X>(&self, #(#key_args,)* _: __F) -> ::core::result::Result<#name, __X>
            where
                __F: ::core::ops::FnMut(&mut #name) -> ::core::result::Result<(), __X>,
                __X: ::core::convert::From<#k::Error>,
            { #never }
            #vis async fn list_all(&self, _: #k::PageRequest) -> #k::Result<#k::Page<#name>> { #never }
            #vis async fn migrate_all<__F: ::core::ops::FnMut(&#k::Progress)>(&self, _: usize, _: __F) -> #k::Result<#k::Progress> { #never }
            #vis async fn verify(&self, _: usize) -> #k::Result<#k::Drift> { #never }
            #vis async fn reconcile(&self, _: usize) -> #k::Result<#k::Drift> { #never }
            #(#methods)*
        }
    }
}
