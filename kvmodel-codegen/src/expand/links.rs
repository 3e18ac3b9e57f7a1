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
use quote::{ToTokens, format_ident, quote};

use super::api::{Generic, Method, Param};
use super::ctx::{Ctx, ident, param, respan, with_description};
use crate::ir::{FieldType, KeyTemplate, Link};
use crate::vocab;

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
    let (k, name, keys) = (&cx.krate, &cx.name, &cx.keys);
    let (ids, types) = key_params(cx, template, true);
    let (ty, bind) = match (ids.as_slice(), types.as_slice()) {
        ([id], [t]) => (quote!(#t), quote!(#id)),
        _ => (quote!((#(#types,)*)), quote!((#(#ids,)*))),
    };
    quote! {
        #[automatically_derived]
        impl #k::KeyArgs for #name {
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
    let taken = |name: &str| ids.iter().any(|a| vocab::unraw(a) == name);
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

/// What one link adds to both repositories.
pub(crate) struct LinkMethods {
    /// The far entity's name (`Tag`).
    pub far_entity: String,
    /// The far entity's repository, as a path spanned where `to` is
    /// written.
    pub far_repo: TokenStream,
    /// `link_x`, `unlink_x`, `list_x` and `count_x`, on this entity's
    /// repository.
    pub own: Vec<Method>,
    /// `list_{inverse}` and `count_{inverse}`, on the far one.
    pub far: Vec<Method>,
    /// `link_x` and `unlink_x`, on this entity's transaction view
    /// (`XTx`, what `XRepo::in_tx` returns).
    pub tx: Vec<Method>,
    /// The link's `Link`, spelled once for all of them (a private function
    /// of `XKeys`), and the check that the far entity does not expire.
    pub items: TokenStream,
}

/// The methods of every link of the entity (whose far entity is a path).
pub(crate) fn methods(cx: &Ctx<'_>, template: &KeyTemplate) -> Vec<LinkMethods> {
    cx.e.links
        .iter()
        .filter_map(|l| link(cx, template, l))
        .collect()
}

/// The private function of `XKeys` that spells the link `name`.
fn spec_fn(name: &str) -> syn::Ident {
    ident(&format!("__link_{name}"))
}

fn link(cx: &Ctx<'_>, template: &KeyTemplate, l: &Link) -> Option<LinkMethods> {
    let (to, far_repo) = far_paths(l)?;
    let (p, k, name, keys) = (cx.p(), &cx.krate, &cx.name, &cx.keys);
    let (ids, types) = key_params(cx, template, false);
    let own_params = || -> Vec<Param> {
        ids.iter()
            .zip(&types)
            .map(|(id, t)| Param::modeled(id.clone(), t.clone()))
            .collect()
    };
    let own_key = quote!(&#keys::record(#(#ids),*));
    let far = far_param(l.to_name(), &ids);
    let far_ty = quote!(<#to as #k::KeyArgs>::Args<'__a>);
    let far_param = || Param::modeled(far.clone(), far_ty.clone());
    let far_key = quote!(&<#to as #k::KeyArgs>::key_of(#far));
    let lifetime = || Generic::modeled(quote!('__a));
    let page = param("page", &ids);
    let inv_page = param("page", std::slice::from_ref(&far));
    let (lname, inverse) = (l.name.as_str(), l.inverse.as_str());
    let spec_fn = spec_fn(lname);
    let spec = quote!(&#keys::#spec_fn());
    let (ename, tname) = (cx.e.name.as_str(), l.to_name());
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
    let tx_link_doc = format!(
        " Stages the link of this `{ename}` with the `{tname}` (link `{lname}`, inverse `{inverse}`) in the transaction: both entries, both counts and the registries, committed with its other writes. Sees what the transaction staged before (a record it created, an earlier link). `true` when they were not linked; `NotFound` at once when either record does not exist."
    );
    let tx_unlink_doc = format!(
        " Stages the unlink of this `{ename}` and the `{tname}` in the transaction, both directions and both counts; `true` when they were linked, as the transaction sees it."
    );
    let link_method = |doc: TokenStream, on: TokenStream, name: &str| Method {
        generics: vec![lifetime()],
        params: [own_params(), vec![far_param()]].concat(),
        ret: quote!(#k::Result<bool>),
        body: if name == "link" {
            quote!(#on.link::<#to>(#spec, #own_key, #far_key).await)
        } else {
            quote!(#on.unlink(#spec, #own_key, #far_key).await)
        },
        ..Method::repo(format!("{name}_{lname}"), doc)
    };
    let tx = vec![
        link_method(quote!(#[doc = #tx_link_doc]), quote!(self.0), "link"),
        link_method(quote!(#[doc = #tx_unlink_doc]), quote!(self.0), "unlink"),
    ];
    let own = vec![
        link_method(link_doc, quote!(self.engine), "link"),
        link_method(quote!(#[doc = #unlink_doc]), quote!(self.engine), "unlink"),
        Method {
            params: [
                own_params(),
                vec![Param::fixed(page.clone(), quote!(#k::PageRequest))],
            ]
            .concat(),
            ret: quote!(#k::Result<#k::Page<#to>>),
            body: quote!(self.engine.list_linked::<#to>(#spec, #p::End::From, #own_key, #page).await),
            ..Method::repo(format!("list_{lname}"), list_doc)
        },
        Method {
            params: own_params(),
            ret: quote!(#k::Result<i64>),
            body: quote!(self.engine.count_linked(#spec, #p::End::From, #own_key).await),
            ..Method::repo(format!("count_{lname}"), count_doc)
        },
    ];
    let far = vec![
        Method {
            generics: vec![lifetime()],
            params: vec![
                far_param(),
                Param::fixed(inv_page.clone(), quote!(#k::PageRequest)),
            ],
            ret: quote!(#k::Result<#k::Page<#name>>),
            body: quote!(self.__engine().list_linked::<#name>(#spec, #p::End::To, #far_key, #inv_page).await),
            ..Method::repo(format!("list_{inverse}"), quote!(#[doc = #inv_list_doc]))
        },
        Method {
            generics: vec![lifetime()],
            params: vec![far_param()],
            ret: quote!(#k::Result<i64>),
            body: quote!(self.__engine().count_linked(#spec, #p::End::To, #far_key).await),
            ..Method::repo(format!("count_{inverse}"), quote!(#[doc = #inv_count_doc]))
        },
    ];
    let spec_doc = format!(" Link `{lname}` of `{ename}`, as both its ends see it.");
    let items = quote! {
        #[automatically_derived]
        impl #keys {
            #[doc = #spec_doc]
            fn #spec_fn() -> #p::Link<'static> {
                #p::Link {
                    from: <#name as #p::Entity>::space(),
                    name: #lname,
                    to: <#to as #p::Entity>::space(),
                    inverse: #inverse,
                }
            }
        }
    };
    Some(LinkMethods {
        far_entity: tname.to_owned(),
        far_repo,
        own,
        far,
        tx,
        items,
    })
}

/// The transaction view `XTx<'t, S>` of an entity that declares links:
/// the runtime's `TxRepo` (which it dereferences to, for the record
/// writes) with the links' `link_x` and `unlink_x`. `methods` writes each
/// method (real or stand-in).
pub(crate) fn tx_view(cx: &Ctx<'_>, methods: impl Iterator<Item = TokenStream>) -> TokenStream {
    let (k, vis, name) = (&cx.krate, &cx.vis, &cx.name);
    let tx = tx_ident(cx);
    let ename = cx.e.name.as_str();
    let doc = format!(
        " The `{ename}` records inside a transaction, as `{ename}Repo::in_tx` gives them: the writes of [`TxRepo`]({}::TxRepo) (which it dereferences to) and the links' `link_*` and `unlink_*`.",
        k.to_string().replace(' ', "")
    );
    quote! {
        #[doc = #doc]
        #vis struct #tx<'__t, __S>(#k::TxRepo<'__t, #name, __S>);

        #[automatically_derived]
        impl<'__t, __S> #tx<'__t, __S> {
            /// The view over the runtime's transaction repository.
            #[doc(hidden)]
            #vis fn __new(inner: #k::TxRepo<'__t, #name, __S>) -> Self {
                #tx(inner)
            }
        }

        #[automatically_derived]
        impl<'__t, __S> ::core::ops::Deref for #tx<'__t, __S> {
            type Target = #k::TxRepo<'__t, #name, __S>;
            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }

        #[automatically_derived]
        impl<'__t, __S: ::core::fmt::Debug> ::core::fmt::Debug for #tx<'__t, __S> {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Debug::fmt(&self.0, __f)
            }
        }

        #[automatically_derived]
        impl<'__t, __S: #k::Store> #tx<'__t, __S> {
            #(#methods)*
        }
    }
}

/// `XTx`: the name of the entity's transaction view.
pub(crate) fn tx_ident(cx: &Ctx<'_>) -> syn::Ident {
    format_ident!("{}Tx", cx.name)
}

/// The methods of every link of the entity, on both repositories.
pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let (k, vis, repo) = (&cx.krate, &cx.vis, &cx.repo);
    let mut out = TokenStream::new();
    let all = methods(cx, template);
    if !all.is_empty() {
        out.extend(tx_view(
            cx,
            all.iter().flat_map(|l| &l.tx).map(|m| m.real(vis)),
        ));
    }
    for l in all {
        let LinkMethods {
            far_repo,
            own,
            far,
            items,
            ..
        } = l;
        let own = own.iter().map(|m| m.real(vis));
        let far = far.iter().map(|m| m.real(vis));
        out.extend(quote! {
            #items

            #[automatically_derived]
            impl<__S: #k::Store> #repo<__S> {
                #(#own)*
            }

            #[automatically_derived]
            impl<__S: #k::Store> #far_repo<__S> {
                #(#far)*
            }
        });
    }
    out
}
