//! Many-to-many links: `link_x`, `unlink_x`, `list_x` and `count_x` on the
//! declaring repository, `list_{inverse}` and `count_{inverse}` on the far
//! one, and the `KeyArgs` every entity implements so that a link can name
//! its far end by its key arguments.
//!
//! The far entity's derive does not see the links to it, so the declaring
//! entity's derive writes the far repository's methods as an inherent impl
//! of it (both types live in the user's crate), and reaches its engine
//! through a hidden accessor. Deleting a record removes its link
//! collections through its link registry, whichever side declared them.

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};

use super::{Ctx, ident, param, respan, with_description};
use crate::ir::{FieldType, KeyTemplate, Link};

/// The key placeholders of `template` as parameter names and argument
/// types (`&'__a str` for a string when `lifetime`).
fn key_params(
    cx: &Ctx<'_>,
    template: &KeyTemplate,
    lifetime: bool,
) -> (Vec<syn::Ident>, Vec<TokenStream>) {
    template
        .placeholders()
        .map(|f| {
            let ty = cx.field_type(f);
            let t = match (&ty, lifetime) {
                (FieldType::String, true) => quote!(&'__a str),
                (FieldType::Bytes, true) => quote!(&'__a [u8]),
                _ => cx.arg_type(&ty),
            };
            (ident(f), t)
        })
        .unzip()
}

/// `impl KeyArgs for X`: the key arguments as one value.
pub(crate) fn key_args(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let (p, name, keys) = (cx.p(), &cx.name, &cx.keys);
    let (ids, types) = key_params(cx, template, true);
    let (ty, bind) = match (ids.as_slice(), types.as_slice()) {
        ([id], [t]) => (quote!(#t), quote!(#id)),
        _ => (quote!((#(#types,)*)), quote!((#(#ids,)*))),
    };
    quote! {
        #[automatically_derived]
        impl #p::KeyArgs for #name {
            type Args<'__a> = #ty;
            fn key_of(__args: Self::Args<'_>) -> ::std::string::String {
                let #bind = __args;
                #keys::record(#(#ids),*)
            }
        }
    }
}

/// The parameter naming the far end: the far entity's name in snake case
/// (`tag`), `__`-prefixed when a key argument has that name, `end` when it
/// is a word Rust reserves even as a raw identifier.
fn far_param(to: &str, ids: &[syn::Ident]) -> syn::Ident {
    let snake = to.to_snake_case();
    let taken = |name: &str| ids.iter().any(|a| crate::vocab::unraw(a) == name);
    match snake.as_str() {
        "self" | "super" | "crate" | "extern" | "_" => param("end", ids),
        name if taken(name) => format_ident!("__{}", name),
        name => ident(name),
    }
}

/// The far entity's path as written, spanned there, and its repository's.
fn far_paths(l: &Link) -> Option<(TokenStream, TokenStream)> {
    let path: syn::Path = syn::parse_str(&l.to).ok()?;
    let mut repo = path.clone();
    let last = repo.segments.last_mut()?;
    last.ident = format_ident!("{}Repo", last.ident);
    let span = l.to.origin.span();
    Some((
        respan(path.to_token_stream(), span),
        respan(repo.to_token_stream(), span),
    ))
}

/// The methods of every link of the entity, on both repositories.
pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let mut out = TokenStream::new();
    for l in &cx.e.links {
        if let Some((to, to_repo)) = far_paths(l) {
            out.extend(link(cx, template, l, &to, &to_repo));
        }
    }
    out
}

fn link(
    cx: &Ctx<'_>,
    template: &KeyTemplate,
    l: &Link,
    to: &TokenStream,
    to_repo: &TokenStream,
) -> TokenStream {
    let (p, k, vis, name, keys, repo) = (cx.p(), &cx.krate, &cx.vis, &cx.name, &cx.keys, &cx.repo);
    let (ids, types) = key_params(cx, template, false);
    let own_key = quote!(&#keys::record(#(#ids),*));
    let far = far_param(l.to_name(), &ids);
    let far_ty = quote!(<#to as #p::KeyArgs>::Args<'__a>);
    let far_key = quote!(&<#to as #p::KeyArgs>::key_of(#far));
    let page = param("page", &ids);
    let inv_page = param("page", std::slice::from_ref(&far));
    let (lname, inverse) = (l.name.as_str(), l.inverse.as_str());
    let spec = quote!(#p::Link {
        from: <#name as #p::Entity>::space(),
        name: #lname,
        to: <#to as #p::Entity>::space(),
        inverse: #inverse,
    });
    let (ename, tname) = (cx.e.name.as_str(), l.to_name());
    let m_link = format_ident!("link_{}", lname);
    let m_unlink = format_ident!("unlink_{}", lname);
    let m_list = format_ident!("list_{}", lname);
    let m_count = format_ident!("count_{}", lname);
    let m_inv_list = format_ident!("list_{}", inverse);
    let m_inv_count = format_ident!("count_{}", inverse);
    let link_doc = with_description(
        format!(
            " Links this `{ename}` with the `{tname}`: link `{lname}` and its inverse `{inverse}` in one commit, with both counts. `true` when they were not linked; `NotFound` when either record does not exist (nothing written)."
        ),
        l.description.as_ref(),
    );
    let unlink_doc = format!(
        " Unlinks this `{ename}` and the `{tname}`, both directions and both counts in one commit; `true` when they were linked."
    );
    let list_doc = with_description(
        format!(
            " A page of the `{tname}` records linked to this `{ename}` (link `{lname}`), ordered by their keys; two round trips. Entries of `{tname}` records deleted since are skipped and removed."
        ),
        l.description.as_ref(),
    );
    let count_doc = with_description(
        format!(
            " The number of entries in this `{ename}`'s `{lname}` link collection: its links, including any to `{tname}` records deleted since whose entries no listing or `reconcile` has removed yet."
        ),
        l.description.as_ref(),
    );
    let inv_list_doc = format!(
        " A page of the `{ename}` records linked to this `{tname}` (link `{ename}.{lname}`, inverse `{inverse}`), ordered by their keys; two round trips. Entries of `{ename}` records deleted since are skipped and removed."
    );
    let inv_count_doc = format!(
        " The number of entries in this `{tname}`'s `{inverse}` link collection: its links, including any to `{ename}` records deleted since whose entries no listing or `reconcile` has removed yet."
    );
    let expiring = format!(
        "link `{lname}` of `{ename}` goes to `{tname}`, whose records expire (`ttl`); links join records that do not expire"
    );
    // Spanned at `to`, so a far entity with a TTL is an error there.
    let assert = quote_spanned! {l.to.origin.span()=>
        const _: () = ::core::assert!(<#to as #p::Entity>::META.ttl.is_none(), #expiring);
    };
    quote! {
        #assert

        #[automatically_derived]
        impl<__S: #k::Store> #repo<__S> {
            #link_doc
            #vis async fn #m_link<'__a>(&self, #(#ids: #types,)* #far: #far_ty) -> #k::Result<bool> {
                self.engine.link::<#to>(&#spec, #own_key, #far_key).await
            }

            #[doc = #unlink_doc]
            #vis async fn #m_unlink<'__a>(&self, #(#ids: #types,)* #far: #far_ty) -> #k::Result<bool> {
                self.engine.unlink(&#spec, #own_key, #far_key).await
            }

            #list_doc
            #vis async fn #m_list(&self, #(#ids: #types,)* #page: #k::PageRequest) -> #k::Result<#k::Page<#to>> {
                self.engine.list_linked::<#to>(&#spec, #p::End::From, #own_key, #page).await
            }

            #count_doc
            #vis async fn #m_count(&self, #(#ids: #types),*) -> #k::Result<i64> {
                self.engine.count_linked(&#spec, #p::End::From, #own_key).await
            }
        }

        #[automatically_derived]
        impl<__S: #k::Store> #to_repo<__S> {
            #[doc = #inv_list_doc]
            #vis async fn #m_inv_list<'__a>(&self, #far: #far_ty, #inv_page: #k::PageRequest) -> #k::Result<#k::Page<#name>> {
                self.__engine().list_linked::<#name>(&#spec, #p::End::To, #far_key, #inv_page).await
            }

            #[doc = #inv_count_doc]
            #vis async fn #m_inv_count<'__a>(&self, #far: #far_ty) -> #k::Result<i64> {
                self.__engine().count_linked(&#spec, #p::End::To, #far_key).await
            }
        }
    }
}
