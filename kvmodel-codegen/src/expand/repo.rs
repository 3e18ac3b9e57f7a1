//! `XRepo<S>`: the typed repository.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::keys::{counter_fn, relation_fn};
use super::{Ctx, group_arg_names, ident, param, with_description};
use crate::ir::{FieldExpr, FieldType, KeyTemplate};
use crate::origin::Sp;

pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let p = cx.p();
    let k = &cx.krate;
    let (vis, name, keys, repo) = (&cx.vis, &cx.name, &cx.keys, &cx.repo);
    let e = cx.e;
    let ename = e.name.as_str();

    let key_fields: Vec<&str> = template.placeholders().collect();
    let key_idents: Vec<syn::Ident> = key_fields.iter().map(|f| ident(f)).collect();
    let key_types: Vec<TokenStream> = key_fields
        .iter()
        .map(|f| cx.arg_type(&cx.field_type(f)))
        .collect();
    let key_params = quote!(#(#key_idents: #key_types),*);
    let f = param("f", &key_idents);
    let key_call = quote!(#keys::record(#(#key_idents),*));
    let (many_generics, many_param, many_map) = many_keys(cx, &key_fields);
    let mut methods = Vec::new();
    for ix in &e.indexes {
        let items: Vec<&Sp<FieldExpr>> = ix.fields.iter().collect();
        let (args, params, _) = super::keys::group_args(cx, &items, false);
        let kfn = ident(&ix.name);
        let ixname = ix.name.as_str();
        let fields = ix
            .fields
            .iter()
            .map(|x| format!("`{}`", x.value))
            .collect::<Vec<_>>()
            .join(", ");
        if ix.unique {
            let m = format_ident!("find_{}", *ix.name);
            let norm = if ix.normalize.is_some() {
                " (compared in lowercase)"
            } else {
                ""
            };
            let docs = with_description(
                format!(
                    " Finds the `{ename}` whose {fields} equals the given value{norm}: unique index `{}`.",
                    *ix.name
                ),
                ix.description.as_ref(),
            );
            let gate = gate(cx, super::Derived::Claim, ixname, ix.since.value);
            methods.push(quote! {
                #docs
                #vis async fn #m(&self, #(#params),*) -> #k::Result<::core::option::Option<#name>> {
                    #gate
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
            let docs = with_description(
                format!(
                    " A page of the `{ename}` records with the given {fields}{order}: index `{}`.",
                    *ix.name
                ),
                ix.description.as_ref(),
            );
            let page = param("page", &args);
            let (page_type, resolve) = page_of(cx, ix.order_by.as_ref(), &page);
            let gate = gate(cx, super::Derived::Index, ixname, ix.since.value);
            methods.push(quote! {
                #docs
                #vis async fn #m(&self, #(#params,)* #page: #page_type) -> #k::Result<#k::Page<#name>> {
                    #gate
                    self.engine.list(&#keys::#kfn(#(#args),*), #resolve).await
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
        let docs = with_description(
            format!(
                " A page of the `{ename}` records of one `{}`{order}: relation `{}`.",
                *r.belongs_to, *r.name
            ),
            r.description.as_ref(),
        );
        let page = param("page", std::slice::from_ref(&id));
        let (page_type, resolve) = page_of(cx, r.order_by.as_ref(), &page);
        let gate = gate(cx, super::Derived::Relation, &r.name, r.since.value);
        methods.push(quote! {
            #docs
            #vis async fn #m(&self, #id: #t, #page: #page_type) -> #k::Result<#k::Page<#name>> {
                #gate
                self.engine.list(&#keys::#kfn(#id), #resolve).await
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
        let docs = with_description(
            format!(" {what}{group}: counter `{}`.", *c.name),
            c.description.as_ref(),
        );
        let gate = gate(cx, super::Derived::Counter, &c.name, c.since.value);
        let read = match &c.shards {
            Some(n) => {
                let n = proc_macro2::Literal::u32_unsuffixed(n.value);
                quote!(self.engine.count_sharded(&#keys::#kfn(#(#names),*), #n).await)
            }
            None => quote!(self.engine.count(&#keys::#kfn(#(#names),*)).await),
        };
        methods.push(quote! {
            #docs
            #vis async fn #m(&self, #(#names: #types),*) -> #k::Result<i64> {
                #gate
                #read
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
    let a_name = crate::vocab::a(&format!("`{ename}`"));
    let modify_doc = format!(
        " Reads {a_name}, applies `f` and writes it back atomically, retrying if another writer changed it meanwhile (`f` may run more than once).\n\n On the in-memory and embedded (redb) stores `f` runs inside the store's write transaction, which holds off every other write to the store: keep it short (no I/O, no waiting)."
    );
    let exists_doc = format!(" Whether {a_name} is stored under this key (one read).");
    let count_all_doc = format!(
        " The number of `{ename}` records: the size of the discovery set, one read. With a TTL it may include expired records not yet swept by a listing or `reconcile`."
    );
    let upsert_doc = format!(
        " Stores {a_name}, creating it or replacing the stored one; indexes and counters move in the same commit. `true` when it was created. Fails with `UniqueViolation` or, after retries, `Conflict`."
    );
    let create_many_doc = format!(
        " Stores new `{ename}` records in one commit, all or none: a stored or repeated key or a taken or repeated unique value fails the whole batch with `Error::Bulk`, naming the record."
    );
    let try_modify_doc = format!(
        " Like `modify`, but `f` may refuse the change: its error is returned and nothing is written to this `{ename}`. Store errors come back converted into the closure's error type (which implements `From<Error>`); `f` may run more than once. Like `modify`, `f` runs inside the write transaction on the in-memory and embedded stores."
    );
    let delete_doc = format!(
        " Deletes {a_name} with its index entries and counter contributions; `false` if it did not exist."
    );
    let all_doc =
        format!(" A page of every `{ename}` record, from the discovery set (never a key scan).");
    let migrate_doc = format!(
        " Rewrites every `{ename}` stored at an older version, `page_size` records at a time, calling `on_progress` after each page; fills in indexes and counters introduced since."
    );
    let verify_doc = format!(
        " Recomputes every claim, index entry and counter of `{ename}` from the records and reports what is out of step; writes nothing."
    );
    let sweep_doc = if e.ttl.is_some() {
        format!(
            " Lets expiry reach derived data: examines up to `limit` due entries of the `{ename}` expiry ledger and, for each record that expired (and was not written again), removes its index, relation and discovery members and takes its counter amounts back. After a sweep that returns `more: false`, counters equal the live records. Writes also sweep, in small steps."
        )
    } else {
        format!(
            " Lets expiry reach derived data. `{ename}` records do not expire, so this finds work only for records written while an earlier schema gave them a TTL."
        )
    };
    let purge_doc = format!(
        " Removes the `{ename}` at this key even when it cannot be decoded, with the entries found to point to it (a record that decodes is deleted as `delete` does); `false` if there was none. Without an expiry receipt its counter amounts are unknown: run `reconcile` afterwards."
    );
    let partial_doc = format!(
        " This repository, reading the `{ename}` indexes, relations and counters added after version 1 even while they are write-only (not yet backfilled by `migrate_all` or `kvmodel migrate`): such reads leave out the records written before they were added. By default they fail with `NotReadable`."
    );
    let reconcile_doc = format!(
        " Like `verify`, and repairs what it finds in the `{ename}` indexes and counters (run while writers are paused, or verify again after)."
    );
    quote! {
        #[doc = #doc]
        #vis struct #repo<__S> {
            engine: #p::Engine<#name, __S>,
            gate: #p::ReadGate,
        }

        #[automatically_derived]
        impl<__S: ::core::clone::Clone> ::core::clone::Clone for #repo<__S> {
            fn clone(&self) -> Self {
                #repo {
                    engine: ::core::clone::Clone::clone(&self.engine),
                    gate: ::core::clone::Clone::clone(&self.gate),
                }
            }
        }

        #[automatically_derived]
        impl<__S: ::core::fmt::Debug> ::core::fmt::Debug for #repo<__S> {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                __f.debug_struct(::core::stringify!(#repo)).field("engine", &self.engine).finish()
            }
        }

        #[automatically_derived]
        impl<__S: #k::Store> #repo<__S> {
            /// A repository on `store`.
            #vis fn new(store: __S) -> Self {
                #repo { engine: #p::Engine::new(store), gate: #p::ReadGate::new() }
            }

            #[doc = #partial_doc]
            #vis fn with_partial_reads(self) -> Self {
                #repo { engine: self.engine, gate: self.gate.partial() }
            }

            /// The store this repository writes to.
            #vis fn store(&self) -> &__S {
                self.engine.store()
            }

            /// The engine behind this repository, for the methods the links
            /// of other entities add to it.
            #[doc(hidden)]
            #vis fn __engine(&self) -> &#p::Engine<#name, __S> {
                &self.engine
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
            #vis async fn get_many<#(#many_generics),*>(&self, #many_param) -> #k::Result<::std::vec::Vec<::core::option::Option<#name>>> {
                self.engine.get_many(#many_map).await
            }

            #[doc = #exists_doc]
            #vis async fn exists(&self, #key_params) -> #k::Result<bool> {
                self.engine.exists(&#key_call).await
            }

            #[doc = #count_all_doc]
            #vis async fn count_all(&self) -> #k::Result<i64> {
                self.engine.count_all().await
            }

            #[doc = #upsert_doc]
            #vis async fn upsert(&self, value: &#name) -> #k::Result<bool> {
                self.engine.upsert(value).await
            }

            #[doc = #create_many_doc]
            #vis async fn create_many(&self, values: &[#name]) -> #k::Result<()> {
                self.engine.create_many(values).await
            }

            #[doc = #update_doc]
            #vis async fn update(&self, value: &#name) -> #k::Result<()> {
                self.engine.update(value).await
            }

            #[doc = #modify_doc]
            #vis async fn modify<__F>(&self, #key_params, #f: __F) -> #k::Result<#name>
            where
                __F: ::core::ops::FnMut(&mut #name) + ::core::marker::Send,
            {
                self.engine.modify(&#key_call, #f).await
            }

            #[doc = #try_modify_doc]
            #vis async fn try_modify<__F, __X>(&self, #key_params, #f: __F) -> ::core::result::Result<#name, __X>
            where
                __F: ::core::ops::FnMut(&mut #name) -> ::core::result::Result<(), __X> + ::core::marker::Send,
                __X: ::core::convert::From<#k::Error> + ::core::marker::Send,
            {
                self.engine.try_modify(&#key_call, #f).await
            }

            #[doc = #delete_doc]
            #vis async fn delete(&self, #key_params) -> #k::Result<bool> {
                self.engine.delete(&#key_call).await
            }

            #(#methods)*

            #[doc = #migrate_doc]
            #vis async fn migrate_all<__F>(&self, page_size: usize, on_progress: __F) -> #k::Result<#k::Progress>
            where
                __F: ::core::ops::FnMut(&#k::Progress) + ::core::marker::Send,
            {
                self.engine.migrate_all(page_size, on_progress).await
            }

            #[doc = #verify_doc]
            #vis async fn verify(&self, page_size: usize) -> #k::Result<#k::Drift> {
                self.engine.verify(page_size).await
            }

            #[doc = #sweep_doc]
            #vis async fn sweep_expired(&self, limit: usize) -> #k::Result<#k::Sweep> {
                self.engine.sweep_expired(limit).await
            }

            #[doc = #purge_doc]
            #vis async fn purge(&self, #key_params) -> #k::Result<bool> {
                self.engine.purge(&#key_call).await
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

/// The generic parameters, parameter and key list of `get_many`: string and
/// byte key components take anything that is `AsRef<str>` / `AsRef<[u8]>`
/// (`&[&str]`, `&[String]`, …), the others their own type.
fn many_keys(cx: &Ctx<'_>, key_fields: &[&str]) -> (Vec<TokenStream>, TokenStream, TokenStream) {
    let keys = &cx.keys;
    let mut generics = Vec::new();
    let mut types = Vec::new();
    let mut args = Vec::new();
    let binds: Vec<syn::Ident> = (0..key_fields.len())
        .map(|i| format_ident!("__k{}", i))
        .collect();
    for (i, (f, id)) in key_fields.iter().zip(&binds).enumerate() {
        let ty = cx.field_type(f);
        let target = match ty {
            FieldType::String => Some(quote!(str)),
            FieldType::Bytes => Some(quote!([u8])),
            _ => None,
        };
        match target {
            Some(target) => {
                let g = format_ident!("__K{}", i);
                generics.push(quote!(#g: ::core::convert::AsRef<#target>));
                types.push(quote!(#g));
                args.push(quote!(::core::convert::AsRef::<#target>::as_ref(#id)));
            }
            None => {
                types.push(cx.arg_type(&ty));
                args.push(match ty {
                    FieldType::Named(_) => quote!(::core::clone::Clone::clone(#id)),
                    _ => quote!(*#id),
                });
            }
        }
    }
    let (param, map) = if key_fields.len() == 1 {
        let (t, id, a) = (&types[0], &binds[0], &args[0]);
        (
            quote!(ids: &[#t]),
            quote!(ids.iter().map(|#id| #keys::record(#a)).collect()),
        )
    } else {
        (
            quote!(ids: &[(#(#types),*)]),
            quote!(ids.iter().map(|(#(#binds),*)| #keys::record(#(#args),*)).collect()),
        )
    };
    (generics, param, map)
}

/// The request type of a listing ordered by `order` (`PageRequest<T>`, `T`
/// the order_by value's type, bucket applied; plain `PageRequest` without
/// one) and the expression that turns the request `page` into sort-key
/// bounds.
fn page_of(
    cx: &Ctx<'_>,
    order: Option<&Sp<FieldExpr>>,
    page: &syn::Ident,
) -> (TokenStream, TokenStream) {
    let (k, p) = (&cx.krate, cx.p());
    let typed = |t: TokenStream, sort: TokenStream| {
        (
            quote!(#k::PageRequest<#t>),
            quote!(#page.resolve(|__v: &#t| #sort)),
        )
    };
    match order.map(|o| &o.value) {
        None => (
            quote!(#k::PageRequest),
            quote!(#p::ListRequest::from(#page)),
        ),
        Some(FieldExpr::Field(f)) => {
            typed(cx.rust_type(&cx.field_type(f)), quote!(#p::sort_of(__v)))
        }
        Some(FieldExpr::Hour(_)) => typed(
            quote!(#k::Timestamp),
            quote!(#p::sort_of(&__v.start_of_hour())),
        ),
        Some(FieldExpr::Day(_)) => typed(quote!(#k::Date), quote!(#p::sort_of(__v))),
        Some(FieldExpr::Month(_)) => {
            typed(quote!(#k::Date), quote!(#p::sort_of(&__v.first_of_month())))
        }
    }
}

/// Checks the state of what version `since` added before reading it
/// (nothing for what version 1 had).
fn gate(cx: &Ctx<'_>, kind: super::Derived, name: &str, since: u32) -> TokenStream {
    if since <= 1 {
        return TokenStream::new();
    }
    let kind = cx.derived(kind);
    let since = proc_macro2::Literal::u32_unsuffixed(since);
    quote!(self.engine.require_readable(&self.gate, #kind, #name, #since).await?;)
}
