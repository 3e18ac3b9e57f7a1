//! `XRepo<S>`: the typed repository.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::keys::{counter_fn, relation_fn};
use super::{Ctx, group_arg_names, ident};
use crate::ir::{FieldExpr, FieldType, KeyTemplate, Segment};

pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let p = cx.p();
    let k = &cx.krate;
    let (vis, name, keys, repo) = (&cx.vis, &cx.name, &cx.keys, &cx.repo);
    let e = cx.e;
    let ename = e.name.as_str();

    let key_fields: Vec<&str> = template
        .segments
        .iter()
        .filter_map(|s| match s {
            Segment::Field(f) => Some(f.as_str()),
            Segment::Literal(_) => None,
        })
        .collect();
    let key_idents: Vec<syn::Ident> = key_fields.iter().map(|f| ident(f)).collect();
    let key_types: Vec<TokenStream> = key_fields
        .iter()
        .map(|f| cx.arg_type(&cx.field_type(f)))
        .collect();
    let key_params = quote!(#(#key_idents: #key_types),*);
    let key_call = quote!(#keys::record(#(#key_idents),*));
    let deref = |f: &str, id: &syn::Ident| match cx.field_type(f) {
        FieldType::Named(_) => quote!(::core::clone::Clone::clone(#id)),
        _ => quote!(*#id),
    };
    let (many_param, many_map) = if key_fields.len() == 1 {
        let t = &key_types[0];
        let id = format_ident!("__id");
        let a = deref(key_fields[0], &id);
        (
            quote!(ids: &[#t]),
            quote!(ids.iter().map(|__id| #keys::record(#a)).collect()),
        )
    } else {
        let ids: Vec<syn::Ident> = (0..key_fields.len())
            .map(|i| format_ident!("__k{}", i))
            .collect();
        let args = key_fields.iter().zip(&ids).map(|(f, id)| deref(f, id));
        (
            quote!(ids: &[(#(#key_types),*)]),
            quote!(ids.iter().map(|(#(#ids),*)| #keys::record(#(#args),*)).collect()),
        )
    };

    let mut methods = Vec::new();
    for ix in &e.indexes {
        let params: Vec<TokenStream> = ix
            .fields
            .iter()
            .map(|f| {
                let id = ident(f);
                let t = cx.arg_type(&cx.field_type(f));
                quote!(#id: #t)
            })
            .collect();
        let args: Vec<syn::Ident> = ix.fields.iter().map(|f| ident(f)).collect();
        let kfn = ident(&ix.name);
        let ixname = ix.name.as_str();
        let fields = ix
            .fields
            .iter()
            .map(|f| format!("`{}`", **f))
            .collect::<Vec<_>>()
            .join(", ");
        if ix.unique {
            let m = format_ident!("find_{}", *ix.name);
            let norm = if ix.normalize.is_some() {
                " (compared in lowercase)"
            } else {
                ""
            };
            let doc = format!(
                " Finds the `{ename}` whose {fields} equals the given value{norm}: unique index `{}`.",
                *ix.name
            );
            methods.push(quote! {
                #[doc = #doc]
                #vis async fn #m(&self, #(#params),*) -> #k::Result<::core::option::Option<#name>> {
                    self.engine.find_unique(#ixname, &#keys::#kfn(#(#args),*)).await
                }
            });
        } else {
            let m = format_ident!("list_{}", *ix.name);
            let order = ix
                .order_by
                .as_ref()
                .map(|o| format!(", ordered by `{}`", o.value))
                .unwrap_or_default();
            let doc = format!(
                " A page of the `{ename}` records with the given {fields}{order}: index `{}`.",
                *ix.name
            );
            methods.push(quote! {
                #[doc = #doc]
                #vis async fn #m(&self, #(#params,)* page: #k::PageRequest) -> #k::Result<#k::Page<#name>> {
                    self.engine.list(&#keys::#kfn(#(#args),*), page).await
                }
            });
        }
    }
    for r in &e.relations {
        let id = ident(&r.by);
        let t = cx.arg_type(&cx.field_type(&r.by));
        let m = format_ident!("list_by_{}", *r.name);
        let kfn = relation_fn(&r.name);
        let order = r
            .order_by
            .as_ref()
            .map(|o| format!(", ordered by `{}`", o.value))
            .unwrap_or_default();
        let doc = format!(
            " A page of the `{ename}` records of one `{}`{order}: relation `{}`.",
            *r.belongs_to, *r.name
        );
        methods.push(quote! {
            #[doc = #doc]
            #vis async fn #m(&self, #id: #t, page: #k::PageRequest) -> #k::Result<#k::Page<#name>> {
                self.engine.list(&#keys::#kfn(#id), page).await
            }
        });
    }
    for c in &e.counters {
        let items: Vec<&FieldExpr> = c.group_by.iter().map(|g| &g.value).collect();
        let names = group_arg_names(&items);
        let types: Vec<TokenStream> = items.iter().map(|x| cx.group_arg_type(x)).collect();
        let (prefix, what) = match &c.sum {
            Some(s) => ("sum", format!("The sum of `{}`", **s)),
            None => ("count", format!("The number of `{ename}` records")),
        };
        let m = format_ident!("{}_{}", prefix, *c.name);
        let kfn = counter_fn(&c.name);
        let group = if items.is_empty() {
            String::new()
        } else {
            format!(
                " in the group {}",
                items
                    .iter()
                    .map(|x| format!("`{x}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let doc = format!(" {what}{group}: counter `{}`.", *c.name);
        methods.push(quote! {
            #[doc = #doc]
            #vis async fn #m(&self, #(#names: #types),*) -> #k::Result<i64> {
                self.engine.count(&#keys::#kfn(#(#names),*)).await
            }
        });
    }

    let store_path = k.to_string().replace(' ', "");
    let doc = format!(
        " Typed repository of `{ename}` records on any [`Store`]({store_path}::Store): every write keeps indexes and counters in step in one atomic commit."
    );
    let create_doc = format!(
        " Stores a new `{ename}` with its index entries and counters, in one commit. Fails with `AlreadyExists` or `UniqueViolation`, writing nothing."
    );
    let get_doc =
        format!(" Reads one `{ename}`, migrating it if it was written at an older version.");
    let many_doc = format!(
        " Reads many `{ename}` records in one round trip, in the order asked; missing ones are `None`."
    );
    let update_doc = format!(
        " Replaces a stored `{ename}`; indexes and counters move with it atomically. Fails with `NotFound`, `UniqueViolation` or, after retries, `Conflict`."
    );
    let modify_doc = format!(
        " Reads a `{ename}`, applies `f` and writes it back atomically, retrying if another writer changed it meanwhile (`f` may run more than once)."
    );
    let delete_doc = format!(
        " Deletes a `{ename}` with its index entries and counter contributions; `false` if it did not exist."
    );
    let all_doc =
        format!(" A page of every `{ename}` record, from the discovery set (never a key scan).");
    let migrate_doc = format!(
        " Rewrites every `{ename}` stored at an older version, `page_size` records at a time, calling `on_progress` after each page; fills in indexes and counters introduced since."
    );
    let verify_doc = format!(
        " Recomputes every claim, index entry and counter of `{ename}` from the records and reports what is out of step; writes nothing."
    );
    let reconcile_doc = format!(
        " Like `verify`, and repairs what it finds in the `{ename}` indexes and counters (run while writers are paused, or verify again after)."
    );
    quote! {
        #[doc = #doc]
        #vis struct #repo<S> {
            engine: #p::Engine<#name, S>,
        }

        #[automatically_derived]
        impl<S: ::core::clone::Clone> ::core::clone::Clone for #repo<S> {
            fn clone(&self) -> Self {
                #repo { engine: ::core::clone::Clone::clone(&self.engine) }
            }
        }

        #[automatically_derived]
        impl<S: ::core::fmt::Debug> ::core::fmt::Debug for #repo<S> {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                __f.debug_struct(::core::stringify!(#repo)).field("engine", &self.engine).finish()
            }
        }

        #[automatically_derived]
        impl<S: #k::Store> #repo<S> {
            /// A repository on `store`.
            #vis fn new(store: S) -> Self {
                #repo { engine: #p::Engine::new(store) }
            }

            /// The store this repository writes to.
            #vis fn store(&self) -> &S {
                self.engine.store()
            }

            #[doc = #create_doc]
            #vis async fn create(&self, value: &#name) -> #k::Result<()> {
                self.engine.create(value).await
            }

            #[doc = #get_doc]
            #vis async fn get(&self, #key_params) -> #k::Result<::core::option::Option<#name>> {
                self.engine.get(&#key_call).await
            }

            #[doc = #many_doc]
            #vis async fn get_many(&self, #many_param) -> #k::Result<::std::vec::Vec<::core::option::Option<#name>>> {
                self.engine.get_many(#many_map).await
            }

            #[doc = #update_doc]
            #vis async fn update(&self, value: &#name) -> #k::Result<()> {
                self.engine.update(value).await
            }

            #[doc = #modify_doc]
            #vis async fn modify<F>(&self, #key_params, f: F) -> #k::Result<#name>
            where
                F: ::core::ops::FnMut(&mut #name) + ::core::marker::Send,
            {
                self.engine.modify(&#key_call, f).await
            }

            #[doc = #delete_doc]
            #vis async fn delete(&self, #key_params) -> #k::Result<bool> {
                self.engine.delete(&#key_call).await
            }

            #(#methods)*

            #[doc = #migrate_doc]
            #vis async fn migrate_all<F>(&self, page_size: usize, on_progress: F) -> #k::Result<#k::Progress>
            where
                F: ::core::ops::FnMut(&#k::Progress) + ::core::marker::Send,
            {
                self.engine.migrate_all(page_size, on_progress).await
            }

            #[doc = #verify_doc]
            #vis async fn verify(&self, page_size: usize) -> #k::Result<#k::Drift> {
                self.engine.verify(page_size).await
            }

            #[doc = #reconcile_doc]
            #vis async fn reconcile(&self, page_size: usize) -> #k::Result<#k::Drift> {
                self.engine.reconcile(page_size).await
            }

            #[doc = #all_doc]
            #vis async fn list_all(&self, page: #k::PageRequest) -> #k::Result<#k::Page<#name>> {
                self.engine.list_all(page).await
            }
        }
    }
}
