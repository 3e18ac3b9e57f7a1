//! `XRepo<S>`: the typed repository.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::api::{Generic, Method, Param, Receiver};
use super::ctx::{Ctx, Derived, group_arg_names, ident, param, with_description};
use super::keys::{counter_fn, group_args, names, relation_fn};
use crate::ir::{FieldExpr, FieldType, KeyTemplate};
use crate::origin::Sp;

/// The repository type and its methods.
pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let (p, k) = (cx.p(), &cx.krate);
    let (vis, name, repo) = (&cx.vis, &cx.name, &cx.repo);
    let ename = cx.e.name.as_str();
    let store_path = k.to_string().replace(' ', "");
    let doc = format!(
        " Typed repository of `{ename}` records on any [`Store`]({store_path}::Store): every write keeps indexes and counters in step in one atomic commit."
    );
    let methods = methods(cx, template);
    let methods = methods.iter().map(|m| m.real(vis));
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
            #(#methods)*
        }
    }
}

/// Every method of the repository, in order: those every repository has
/// (the names [`REPOSITORY_METHODS`](crate::check::names::REPOSITORY_METHODS)
/// reserves) around those the entity's indexes, relations and counters add.
pub(crate) fn methods(cx: &Ctx<'_>, template: &KeyTemplate) -> Vec<Method> {
    let p = cx.p();
    let k = &cx.krate;
    let (name, keys, repo) = (&cx.name, &cx.keys, &cx.repo);
    let ename = cx.e.name.as_str();
    let a_name = crate::vocab::a(&format!("`{ename}`"));

    // A method every repository has, documented by `doc`.
    let fixed = |name: &str, doc: String| Method::repo(name.to_owned(), quote!(#[doc = #doc]));
    let key_params: Vec<Param> = template
        .placeholders()
        .map(|f| Param::modeled(ident(f), cx.arg_type(&cx.field_type(f))))
        .collect();
    let key_args = names(&key_params);
    let key_call = quote!(#keys::record(#(#key_args),*));
    // The key's parameters, then `more`.
    let keyed = |more: Vec<Param>| [key_params.clone(), more].concat();
    let f = param("f", &key_args);
    let closure = || Param::fixed(f.clone(), quote!(__F));
    let value = || Param::fixed(format_ident!("value"), quote!(&#name));
    let page_size = || Param::fixed(format_ident!("page_size"), quote!(usize));
    // An entity that declares links views a transaction through `XTx`,
    // which adds the links' `link_x` and `unlink_x` to `TxRepo`.
    let (in_tx_ret, in_tx_body) = if super::links::methods(cx, template).is_empty() {
        (
            quote!(#k::TxRepo<'__t, #name, __S>),
            quote!(#k::TxRepo::new(&self.engine, tx)),
        )
    } else {
        let tx = super::links::tx_ident(cx);
        (
            quote!(#tx<'__t, __S>),
            quote!(#tx::__new(#k::TxRepo::new(&self.engine, tx))),
        )
    };
    let (many_generics, many, many_map) =
        many_keys(cx, &template.placeholders().collect::<Vec<_>>());

    let mut out = vec![
        Method {
            asyncness: false,
            receiver: Receiver::None,
            params: vec![Param::fixed(format_ident!("store"), quote!(__S))],
            ret: quote!(Self),
            body: quote!(#repo { engine: #p::Engine::new(store), gate: #p::ReadGate::new() }),
            ..fixed("new", " A repository on `store`.".into())
        },
        Method {
            asyncness: false,
            receiver: Receiver::Value,
            ret: quote!(Self),
            body: quote!(#repo { engine: self.engine, gate: self.gate.partial() }),
            ..fixed(
                "with_partial_reads",
                format!(
                    " This repository, reading the `{ename}` indexes, relations and counters added after version 1 even while they are write-only (not yet backfilled by `migrate_all` or `kvmodel migrate`): such reads leave out the records written before they were added. By default they fail with `NotReadable`."
                ),
            )
        },
        Method {
            asyncness: false,
            ret: quote!(&__S),
            body: quote!(self.engine.store()),
            ..fixed("store", " The store this repository writes to.".into())
        },
        Method {
            docs: quote! {
                /// The engine behind this repository, for the methods the links
                /// of other entities add to it.
                #[doc(hidden)]
            },
            asyncness: false,
            ret: quote!(&#p::Engine<#name, __S>),
            body: quote!(&self.engine),
            ..fixed("__engine", String::new())
        },
        Method {
            asyncness: false,
            generics: vec![Generic::fixed(quote!('__t))],
            params: vec![Param::fixed(
                format_ident!("tx"),
                quote!(&'__t #k::Transaction<__S>),
            )],
            ret: in_tx_ret.clone(),
            body: in_tx_body,
            ..fixed(
                "in_tx",
                format!(
                    " The `{ename}` records inside the transaction `tx` on this repository's store: reads become conditions of its commit, writes are staged with their upkeep and committed with the others, all or none."
                ),
            )
        },
        Method {
            params: vec![value()],
            ret: quote!(#k::Result<()>),
            body: quote!(self.engine.create(value).await),
            ..fixed(
                "create",
                format!(
                    " Stores a new `{ename}` with its index entries and counters, in one commit. Fails with `AlreadyExists` or `UniqueViolation`, writing nothing."
                ),
            )
        },
        Method {
            params: keyed(vec![]),
            ret: quote!(#k::Result<::core::option::Option<#name>>),
            body: quote!(self.engine.get(&#key_call).await),
            ..fixed(
                "get",
                format!(
                    " Reads one `{ename}`, migrating it if it was written at an older version."
                ),
            )
        },
        Method {
            generics: many_generics,
            params: vec![many],
            ret: quote!(#k::Result<::std::vec::Vec<::core::option::Option<#name>>>),
            body: quote!(self.engine.get_many(#many_map).await),
            ..fixed(
                "get_many",
                format!(
                    " Reads many `{ename}` records in one round trip, in the order asked; missing ones are `None`."
                ),
            )
        },
        Method {
            params: keyed(vec![]),
            ret: quote!(#k::Result<bool>),
            body: quote!(self.engine.exists(&#key_call).await),
            ..fixed(
                "exists",
                format!(" Whether {a_name} is stored under this key (one read)."),
            )
        },
        Method {
            ret: quote!(#k::Result<i64>),
            body: quote!(self.engine.count_all().await),
            ..fixed(
                "count_all",
                format!(
                    " The number of `{ename}` records: the size of the discovery set, one read. With a TTL it may include expired records not yet swept by a listing or `reconcile`."
                ),
            )
        },
        Method {
            params: vec![value()],
            ret: quote!(#k::Result<bool>),
            body: quote!(self.engine.upsert(value).await),
            ..fixed(
                "upsert",
                format!(
                    " Stores {a_name}, creating it or replacing the stored one; indexes and counters move in the same commit. `true` when it was created. Fails with `UniqueViolation` or, after retries, `Conflict`."
                ),
            )
        },
        Method {
            params: vec![Param::fixed(format_ident!("values"), quote!(&[#name]))],
            ret: quote!(#k::Result<()>),
            body: quote!(self.engine.create_many(values).await),
            ..fixed(
                "create_many",
                format!(
                    " Stores new `{ename}` records in one commit, all or none: a stored or repeated key or a taken or repeated unique value fails the whole batch with `Error::Bulk`, naming the record."
                ),
            )
        },
        Method {
            params: vec![value()],
            ret: quote!(#k::Result<()>),
            body: quote!(self.engine.update(value).await),
            ..fixed(
                "update",
                format!(
                    " Replaces a stored `{ename}`; indexes and counters move with it atomically. Fails with `NotFound`, `UniqueViolation` or, after retries, `Conflict`."
                ),
            )
        },
        Method {
            generics: vec![Generic::fixed(quote!(__F))],
            params: keyed(vec![closure()]),
            ret: quote!(#k::Result<#name>),
            bounds: vec![quote!(__F: ::core::ops::FnMut(&mut #name) + ::core::marker::Send)],
            body: quote!(self.engine.modify(&#key_call, #f).await),
            ..fixed(
                "modify",
                format!(
                    " Reads {a_name}, applies `f` and writes it back atomically, retrying if another writer changed it meanwhile (`f` may run more than once).\n\n On the in-memory and embedded (redb) stores `f` runs inside the store's write transaction, which holds off every other write to the store: keep it short (no I/O, no waiting)."
                ),
            )
        },
        Method {
            generics: vec![Generic::fixed(quote!(__F)), Generic::fixed(quote!(__X))],
            params: keyed(vec![closure()]),
            ret: quote!(::core::result::Result<#name, __X>),
            bounds: vec![
                quote!(__F: ::core::ops::FnMut(&mut #name) -> ::core::result::Result<(), __X> + ::core::marker::Send),
                quote!(__X: ::core::convert::From<#k::Error> + ::core::marker::Send),
            ],
            body: quote!(self.engine.try_modify(&#key_call, #f).await),
            ..fixed(
                "try_modify",
                format!(
                    " Like `modify`, but `f` may refuse the change: its error is returned and nothing is written to this `{ename}`. Store errors come back converted into the closure's error type (which implements `From<Error>`); `f` may run more than once. Like `modify`, `f` runs inside the write transaction on the in-memory and embedded stores."
                ),
            )
        },
        Method {
            params: keyed(vec![]),
            ret: quote!(#k::Result<bool>),
            body: quote!(self.engine.delete(&#key_call).await),
            ..fixed(
                "delete",
                format!(
                    " Deletes {a_name} with its index entries and counter contributions; `false` if it did not exist."
                ),
            )
        },
    ];

    if cx.e.feed.is_some() {
        out.push(Method {
            asyncness: false,
            ret: quote!(#p::Feed<#name, __S>),
            body: quote!(self.engine.feed()),
            ..fixed(
                "feed",
                format!(
                    " The change feed of `{ename}`: `.from(Position::Start | Position::Now | Position::After(p))` replays the retained changes, then follows new ones, each record's in its commit order{}.",
                    if cx.e.expires() {
                        " (`Event::Expired` when the expiry sweep takes a record back)"
                    } else {
                        ""
                    }
                ),
            )
        });
    }

    out.extend(derived_methods(cx));

    let sweep_doc = if cx.e.expires() {
        format!(
            " Lets expiry reach derived data: examines up to `limit` due entries of the `{ename}` expiry ledger and, for each record that expired (and was not written again), removes its index, relation and discovery members and takes its counter amounts back. After a sweep that returns `more: false` and nothing in `skipped` (receipts that do not decode: `purge` those records), counters equal the live records. Writes also sweep, in small steps."
        )
    } else {
        format!(
            " Lets expiry reach derived data. `{ename}` records do not expire, so this finds work only for records written while an earlier schema gave them a TTL."
        )
    };
    out.extend([
        Method {
            generics: vec![Generic::fixed(quote!(__F))],
            params: vec![
                page_size(),
                Param::fixed(format_ident!("on_progress"), quote!(__F)),
            ],
            ret: quote!(#k::Result<#k::Progress>),
            bounds: vec![quote!(__F: ::core::ops::FnMut(&#k::Progress) + ::core::marker::Send)],
            body: quote!(self.engine.migrate_all(page_size, on_progress).await),
            ..fixed("migrate_all", format!(" Rewrites every `{ename}` stored at an older version, `page_size` records at a time, calling `on_progress` after each page; fills in indexes and counters introduced since."))
        },
        Method {
            params: vec![page_size()],
            ret: quote!(#k::Result<#k::Drift>),
            body: quote!(self.engine.verify(page_size).await),
            ..fixed("verify", format!(" Recomputes every claim, index entry and counter of `{ename}` from the records and reports what is out of step; writes nothing."))
        },
        Method {
            params: vec![Param::fixed(format_ident!("limit"), quote!(usize))],
            ret: quote!(#k::Result<#k::Sweep>),
            body: quote!(self.engine.sweep_expired(limit).await),
            ..fixed("sweep_expired", sweep_doc)
        },
        Method {
            params: keyed(vec![]),
            ret: quote!(#k::Result<bool>),
            body: quote!(self.engine.purge(&#key_call).await),
            ..fixed("purge", format!(" Removes the `{ename}` at this key even when it cannot be decoded, with the entries found to point to it (a record that decodes is deleted as `delete` does); `false` if there was none. Without an expiry receipt its counter amounts are unknown: run `reconcile` afterwards."))
        },
        Method {
            params: vec![page_size()],
            ret: quote!(#k::Result<#k::Drift>),
            body: quote!(self.engine.reconcile(page_size).await),
            ..fixed("reconcile", format!(" Like `verify`, and repairs what it finds in the `{ename}` indexes and counters (run while writers are paused, or verify again after)."))
        },
        Method {
            params: vec![Param::fixed(format_ident!("page"), quote!(#k::PageRequest))],
            ret: quote!(#k::Result<#k::Page<#name>>),
            body: quote!(self.engine.list_all(page).await),
            ..fixed("list_all", format!(" A page of every `{ename}` record, from the discovery set (never a key scan)."))
        },
    ]);
    out
}

/// The methods the entity's indexes, relations and counters add.
fn derived_methods(cx: &Ctx<'_>) -> Vec<Method> {
    let k = &cx.krate;
    let (name, keys) = (&cx.name, &cx.keys);
    let e = cx.e;
    let ename = e.name.as_str();
    let mut methods = Vec::new();
    for ix in &e.indexes {
        let items: Vec<&Sp<FieldExpr>> = ix.fields.iter().collect();
        let (mut params, _) = group_args(cx, &items, false);
        let args = names(&params);
        let kfn = ident(&ix.name);
        let ixname = ix.name.as_str();
        let fields = ix
            .fields
            .iter()
            .map(|x| format!("`{}`", x.value))
            .collect::<Vec<_>>()
            .join(", ");
        if ix.unique {
            let norm = if ix.normalize.is_some() {
                " (compared in lowercase)"
            } else {
                ""
            };
            let docs = with_description(
                format!(
                    " Finds the `{ename}` whose {fields} equals the given value{norm}: unique index `{ixname}`."
                ),
                ix.description.as_ref(),
            );
            let gate = gate(cx, Derived::Claim, ixname, ix.since.value);
            methods.push(Method {
                params,
                ret: quote!(#k::Result<::core::option::Option<#name>>),
                body: quote! {
                    #gate
                    self.engine.find_unique(#ixname, &#keys::#kfn(#(#args),*)).await
                },
                ..Method::repo(format!("find_{ixname}"), docs)
            });
        } else {
            let order = ix
                .order_by
                .as_ref()
                .map(|o| format!(", ordered by `{}`", o.value))
                .unwrap_or_default();
            let docs = with_description(
                format!(
                    " A page of the `{ename}` records with the given {fields}{order}: index `{ixname}`."
                ),
                ix.description.as_ref(),
            );
            let (page, resolve) = page_of(cx, ix.order_by.as_ref(), param("page", &args));
            params.push(page);
            let gate = gate(cx, Derived::Index, ixname, ix.since.value);
            methods.push(Method {
                params,
                ret: quote!(#k::Result<#k::Page<#name>>),
                body: quote! {
                    #gate
                    self.engine.list(&#keys::#kfn(#(#args),*), #resolve).await
                },
                ..Method::repo(format!("list_{ixname}"), docs)
            });
        }
    }
    for r in &e.relations {
        let id = ident(&r.by);
        let t = cx.arg_type(&cx.field_type(&r.by));
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
        let (page, resolve) = page_of(
            cx,
            r.order_by.as_ref(),
            param("page", std::slice::from_ref(&id)),
        );
        let gate = gate(cx, Derived::Relation, &r.name, r.since.value);
        methods.push(Method {
            params: vec![Param::modeled(id.clone(), t), page],
            ret: quote!(#k::Result<#k::Page<#name>>),
            body: quote! {
                #gate
                self.engine.list(&#keys::#kfn(#id), #resolve).await
            },
            ..Method::repo(format!("list_by_{}", *r.name), docs)
        });
    }
    for c in &e.counters {
        let items: Vec<&FieldExpr> = c.group_by.iter().map(|g| &g.value).collect();
        let args = group_arg_names(&items);
        let params = items
            .iter()
            .zip(&args)
            .map(|(x, a)| Param::modeled(a.clone(), cx.group_arg_type(x)))
            .collect();
        let (prefix, what) = match &c.sum {
            Some(s) => ("sum", format!("The sum of `{}`", **s)),
            None => ("count", format!("The number of `{ename}` records")),
        };
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
        let gate = gate(cx, Derived::Counter, &c.name, c.since.value);
        let read = match &c.shards {
            Some(n) => {
                let n = proc_macro2::Literal::u32_unsuffixed(n.value);
                quote!(self.engine.count_sharded(&#keys::#kfn(#(#args),*), #n).await)
            }
            None => quote!(self.engine.count(&#keys::#kfn(#(#args),*)).await),
        };
        methods.push(Method {
            params,
            ret: quote!(#k::Result<i64>),
            body: quote! {
                #gate
                #read
            },
            ..Method::repo(format!("{prefix}_{}", *c.name), docs)
        });
    }
    methods
}

/// The generic parameters, parameter and key list of `get_many`: string and
/// byte key components take anything that is `AsRef<str>` / `AsRef<[u8]>`
/// (`&[&str]`, `&[String]`, …), the others their own type.
fn many_keys(cx: &Ctx<'_>, key_fields: &[&str]) -> (Vec<Generic>, Param, TokenStream) {
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
                generics.push(Generic::modeled(
                    quote!(#g: ::core::convert::AsRef<#target>),
                ));
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
    let ids = format_ident!("ids");
    let (param, map) = match (types.as_slice(), binds.as_slice(), args.as_slice()) {
        ([t], [id], [a]) => (
            Param::modeled(ids, quote!(&[#t])),
            quote!(ids.iter().map(|#id| #keys::record(#a)).collect()),
        ),
        _ => (
            Param::modeled(ids, quote!(&[(#(#types),*)])),
            quote!(ids.iter().map(|(#(#binds),*)| #keys::record(#(#args),*)).collect()),
        ),
    };
    (generics, param, map)
}

/// The request parameter `page` of a listing ordered by `order`
/// (`PageRequest<T>`, `T` the order_by value's type, bucket applied; plain
/// `PageRequest` without one) and the expression that turns the request
/// into sort-key bounds.
fn page_of(cx: &Ctx<'_>, order: Option<&Sp<FieldExpr>>, page: syn::Ident) -> (Param, TokenStream) {
    let (k, p) = (&cx.krate, cx.p());
    let typed = |t: TokenStream, sort: TokenStream| {
        (
            quote!(#page.resolve(|__v: &#t| #sort)),
            Param::modeled(page.clone(), quote!(#k::PageRequest<#t>)),
        )
    };
    let (resolve, param) = match order.map(|o| &o.value) {
        None => (
            quote!(#p::ListRequest::from(#page)),
            Param::fixed(page.clone(), quote!(#k::PageRequest)),
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
    };
    (param, resolve)
}

/// Checks the state of what version `since` added before reading it
/// (nothing for what version 1 had).
fn gate(cx: &Ctx<'_>, kind: Derived, name: &str, since: u32) -> TokenStream {
    if since <= 1 {
        return TokenStream::new();
    }
    let kind = cx.derived(kind);
    let since = proc_macro2::Literal::u32_unsuffixed(since);
    quote!(self.engine.require_readable(&self.gate, #kind, #name, #since).await?;)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::names::REPOSITORY_METHODS;
    use crate::ir::Entity;
    use crate::origin::Origin;

    /// The methods every repository has are the names `check` keeps
    /// indexes, counters, relations and links from generating.
    #[test]
    fn every_repository_has_the_reserved_methods() {
        let unknown = |s: &str| Sp::new(s.to_owned(), Origin::Unknown);
        let mut e = Entity::new(unknown("Note"), syn::parse_quote!(pub));
        e.namespace = Some(unknown("app"));
        let template = KeyTemplate::new(unknown("note:{id}"));
        e.key = Some(template.clone());
        let cx = Ctx::new(&e);
        let public: Vec<String> = methods(&cx, &template)
            .into_iter()
            .map(|m| m.name)
            .filter(|n| !n.starts_with("__"))
            .collect();
        assert_eq!(public, REPOSITORY_METHODS);
    }
}
