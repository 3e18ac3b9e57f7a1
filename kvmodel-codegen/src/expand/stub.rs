//! The stand-in emitted beside the errors of an entity that did not check.
//!
//! Like thiserror's fallback impl, it keeps one mistake from cascading: the
//! user's code that calls `XRepo::new(store).get(id)`, `XKeys::by_email(..)`
//! or a link's methods still type-checks against it, so the compiler
//! reports the real error and not a screen of "no method named …". It is
//! the API's method table ([`api`](super::api)) written with bodies that
//! never run: the crate does not compile while the errors stand.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::quote;

use super::api::stubs;
use super::ctx::Ctx;
use super::{keys, links, repo};
use crate::ir::{Entity, KeyTemplate, Segment};

pub(crate) fn expand(e: &Entity, errors: TokenStream) -> TokenStream {
    let Some(template) = &e.key else {
        return errors;
    };
    // A template that did not parse stands for a key of one component.
    let template = if template.placeholders().next().is_some() {
        template.clone()
    } else {
        KeyTemplate {
            segments: vec![Segment::Field("id".into())],
            ..template.clone()
        }
    };
    let cx = Ctx::new(e);
    let (vis, keys, repo, k) = (&cx.vis, &cx.keys, &cx.repo, &cx.krate);
    let builders = keys::key_fns(&cx, &template);
    let builders = stubs(
        vis,
        builders.iter().map(|f| &f.builder),
        &mut BTreeSet::new(),
    );
    // The names written on each repository, by entity: a link of the
    // entity to itself adds its inverse's methods to its own repository.
    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let links = links::methods(&cx, &template);
    let tx_view = (!links.is_empty()).then(|| {
        let tx = links.iter().flat_map(|l| &l.tx);
        let methods = stubs(vis, tx, &mut BTreeSet::new());
        links::tx_view(&cx, methods.into_iter())
    });
    let own = repo::methods(&cx, &template);
    let own = own.iter().chain(links.iter().flat_map(|l| &l.own));
    let methods = stubs(vis, own, seen.entry(e.name.as_str()).or_default());
    let far: Vec<TokenStream> = links
        .iter()
        .map(|l| {
            let seen = seen.entry(l.far_entity.as_str()).or_default();
            let (far_repo, methods) = (&l.far_repo, stubs(vis, &l.far, seen));
            quote! {
                impl<__S: #k::Store> #far_repo<__S> {
                    #(#methods)*
                }
            }
        })
        .collect();
    quote! {
        #errors

        #vis struct #keys;

        impl #keys {
            #(#builders)*
        }

        #vis struct #repo<__S>(::core::marker::PhantomData<__S>);

        impl<__S: #k::Store> #repo<__S> {
            #(#methods)*
        }

        #(#far)*

        #tx_view
    }
}
