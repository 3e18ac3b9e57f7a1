//! Referential actions in generated code: a child's count of each parent's
//! children and the parents it names; a parent's dependents, the entity of
//! each one's children (a `Kind` for its delete's worklist), and the
//! compile-time checks that parent and child agree.
//!
//! The derive sees one struct at a time, so each side names the other: the
//! child's relation says `on_delete`, the parent lists the relation in
//! `dependent(entity = …, relation = …)`. Each side asserts in a constant
//! that the other agrees, so a mismatch is a compile error on the
//! attribute that is out of step.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::ctx::{Ctx, ident};
use super::keys::{children_fn, relation_fn};
use super::reads::{Read, Reads};
use crate::ir::{KeyTemplate, OnDelete, Relation};

/// The last segment of a type path (`Post` of `crate::blog::Post`).
fn last(path: &str) -> String {
    path.rsplit("::").next().unwrap_or(path).trim().to_owned()
}

/// The path of the `…Keys` type of the entity at `path`.
fn keys_path(path: &str, span: proc_macro2::Span) -> Option<TokenStream> {
    let mut p: syn::Path = syn::parse_str(path).ok()?;
    let seg = p.segments.last_mut()?;
    seg.ident = format_ident!("{}Keys", seg.ident, span = span);
    Some(quote_spanned!(span=> #p))
}

fn action(cx: &Ctx<'_>, a: OnDelete) -> TokenStream {
    let p = cx.p();
    match a {
        OnDelete::Keep => quote!(#p::OnDelete::Keep),
        OnDelete::Restrict => quote!(#p::OnDelete::Restrict),
        OnDelete::Cascade => quote!(#p::OnDelete::Cascade),
    }
}

/// The items of the `Entity` impl: `ENFORCED` and `parents` for a child,
/// `DEPENDENTS`, `dependents` and `dependent_kind` for a parent.
pub(crate) fn entity_items(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let p = cx.p();
    let e = cx.e;
    let mut out = TokenStream::new();
    let enforced: Vec<&Relation> = e
        .relations
        .iter()
        .filter(|r| r.on_delete.enforced())
        .collect();
    if !enforced.is_empty() {
        let mut entries = Vec::new();
        let mut pushes = Vec::new();
        for r in &enforced {
            let rel = r.name.as_str();
            let parent = last(&r.belongs_to);
            let a = action(cx, *r.on_delete);
            entries.push(quote!((#rel, #parent, #a)));
            let Some(pkeys) = keys_path(&r.belongs_to, r.belongs_to.origin.span()) else {
                continue;
            };
            let reads = Reads::new(cx, &[r.by.as_str()]);
            let arg = reads.refs[0].arg(&cx.field_type(&r.by));
            let since = proc_macro2::Literal::u32_unsuffixed(r.since.value);
            pushes.push(reads.wrap(quote! {
                __out.push(#p::ParentFact {
                    relation: #rel,
                    entity: #parent,
                    key: #pkeys::record(#arg),
                    on_delete: #a,
                    since: #since,
                });
            }));
        }
        out.extend(quote! {
            const ENFORCED: &'static [(&'static str, &'static str, #p::OnDelete)] = &[#(#entries),*];
        });
        if !pushes.is_empty() {
            out.extend(quote! {
                fn parents(&self) -> ::std::vec::Vec<#p::ParentFact> {
                    let mut __out = ::std::vec::Vec::new();
                    #(#pushes)*
                    __out
                }
            });
        }
    }
    if e.dependents.is_empty() {
        return out;
    }
    let ids: Vec<&str> = template.placeholders().collect();
    let [id] = ids.as_slice() else {
        return out; // E138
    };
    let member = ident(id);
    let arg = Read::Place(quote!(self.#member)).arg(&cx.field_type(id));
    let mut entries = Vec::new();
    let mut facts = Vec::new();
    let mut arms = Vec::new();
    let mut cascades = Vec::new();
    for (i, d) in e.dependents.iter().enumerate() {
        let child = last(&d.entity);
        let rel = d.relation.as_str();
        let parent = e.name.as_str();
        entries.push(quote!((#child, #rel)));
        let span = d.origin.span();
        let (Ok(ty), Some(ckeys)) = (
            syn::parse_str::<syn::Path>(&d.entity),
            keys_path(&d.entity, span),
        ) else {
            continue;
        };
        let ty = quote_spanned!(span=> #ty);
        let (rfn, cfn) = (relation_fn(rel), children_fn(rel));
        facts.push(quote! {
            #p::DependentFact {
                entity: #child,
                relation: #rel,
                on_delete: #p::on_delete_of(<#ty as #p::Entity>::ENFORCED, #rel, #parent),
                collection: #ckeys::#rfn(#arg),
                children: #ckeys::#cfn(#arg),
            }
        });
        cascades.push(quote! {
            || ::core::matches!(
                #p::on_delete_of(<#ty as #p::Entity>::ENFORCED, #rel, #parent),
                #p::OnDelete::Cascade
            )
        });
        arms.push(quote! {
            #i => ::core::option::Option::Some(#p::Kind::<__S>::of::<#ty>()),
        });
    }
    out.extend(quote! {
        const CASCADES: bool = false #(#cascades)*;

        const DEPENDENTS: &'static [(&'static str, &'static str)] = &[#(#entries),*];

        fn dependents(&self) -> ::std::vec::Vec<#p::DependentFact> {
            ::std::vec![#(#facts),*]
        }

        fn dependent_kind<__S: #p::Store>(__dependent: usize) -> ::core::option::Option<#p::Kind<__S>> {
            match __dependent {
                #(#arms)*
                _ => ::core::option::Option::None,
            }
        }
    });
    out
}

/// The compile-time checks that parent and child agree: a child's
/// enforcing relation is listed by its parent, and a parent's dependent is
/// a relation of the child to it that enforces `on_delete`.
pub(crate) fn checks(cx: &Ctx<'_>) -> TokenStream {
    let p = cx.p();
    let e = cx.e;
    let child = e.name.as_str();
    let mut out = Vec::new();
    for r in e.relations.iter().filter(|r| r.on_delete.enforced()) {
        let Ok(parent) = syn::parse_str::<syn::Path>(&r.belongs_to) else {
            continue;
        };
        let span = r.on_delete.origin.span();
        let rel = r.name.as_str();
        let named = last(&r.belongs_to);
        let msg = format!(
            "`{child}` relation `{rel}` has `on_delete = {}`, so `{named}` must name it: add `#[kv(dependent(entity = {child}, relation = \"{rel}\"))]` to `{named}`, or, when `{named}` is generated from a schema file, run `kvmodel generate` on that file and this one together, which names it",
            *r.on_delete,
        );
        out.push(quote_spanned! {span=>
            const _: () = ::core::assert!(
                #p::names_dependent(<#parent as #p::Entity>::DEPENDENTS, #child, #rel),
                #msg
            );
        });
    }
    for d in &e.dependents {
        let Ok(ty) = syn::parse_str::<syn::Path>(&d.entity) else {
            continue;
        };
        let span = d.origin.span();
        let rel = d.relation.as_str();
        let c = last(&d.entity);
        let msg = format!(
            "`{}` names the dependent `{c}` relation `{rel}`, but `{c}` has no relation `{rel}` to `{}` with `on_delete = restrict` or `cascade`: declare `on_delete` on that relation, or remove this `dependent(…)`",
            *e.name, *e.name
        );
        let parent = e.name.as_str();
        out.push(quote_spanned! {span=>
            const _: () = ::core::assert!(
                #p::on_delete_of(<#ty as #p::Entity>::ENFORCED, #rel, #parent).enforced(),
                #msg
            );
        });
    }
    quote!(#(#out)*)
}
