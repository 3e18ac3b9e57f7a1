//! The `Entity` impl: a record's key and the facts its image derives.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::ctx::{Ctx, Derived, ident};
use super::keys::{children_fn, counter_fn, relation_fn, segments_fn};
use super::reads::{Read, Reads};
use crate::ir::{Codec, CounterKeep, Encoding, FieldExpr, KeyTemplate};
use crate::origin::Sp;

fn group_arg(cx: &Ctx<'_>, x: &FieldExpr, r: &Read) -> TokenStream {
    let p = cx.p();
    let v = r.copied();
    match x {
        FieldExpr::Field(f) => r.arg(&cx.field_type(f)),
        FieldExpr::Hour(_) => v,
        FieldExpr::Day(_) | FieldExpr::Month(_) => quote!(#p::day(#v)),
    }
}

/// `#p::#func(&sort value)`: the sort key of `x` built (`sort_of`), or
/// checked against `__sort` (`sort_is`).
fn sort_call(cx: &Ctx<'_>, x: &Sp<FieldExpr>, r: &Read, func: Sort) -> TokenStream {
    let p = cx.p();
    let span = x.origin.span();
    let (by_ref, v) = (r.by_ref(), r.copied());
    let value = match &x.value {
        FieldExpr::Field(_) => by_ref,
        FieldExpr::Hour(_) => quote!(&(#v).start_of_hour()),
        FieldExpr::Day(_) => quote!(&#p::day(#v)),
        FieldExpr::Month(_) => quote!(&#p::day(#v).first_of_month()),
    };
    match func {
        Sort::Build => quote_spanned!(span=> #p::sort_of(#value)),
        Sort::Check => quote_spanned!(span=> #p::sort_is(#value, __sort)),
    }
}

/// What [`sort_call`] does with a sort value.
#[derive(Clone, Copy)]
enum Sort {
    Build,
    Check,
}

/// One membership check of `derives_member`: when the record had the index
/// or relation at `__version` (`since`) and has every field it reads,
/// whether `__collection` is its collection (the key builder's segment
/// calls, on a matcher) and `__sort` its sort key.
fn member_check(
    cx: &Ctx<'_>,
    reads: &Reads,
    since: proc_macro2::Literal,
    segments: TokenStream,
    args: TokenStream,
    kind: TokenStream,
    sort: Option<TokenStream>,
) -> TokenStream {
    let p = cx.p();
    let (ns, space) = (cx.namespace(), cx.key_space());
    let sort = sort.unwrap_or_else(|| quote!(__sort.is_empty()));
    let check = reads.wrap(quote! {
        if #segments(#p::KeyMatch::derived(__collection, #ns, #space, #kind), #args).finish() {
            return #sort;
        }
    });
    quote! {
        if #since <= __version {
            #check
        }
    }
}

pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate, tag: Option<u64>) -> TokenStream {
    let p = cx.p();
    let (name, keys) = (&cx.name, &cx.keys);
    let e = cx.e;
    let mut facts = Vec::new();
    let mut claim_arms = Vec::new();
    let mut member_checks = Vec::new();
    // The declared names by kind, for maintenance (`Entity::declared`).
    let mut declared = Vec::new();
    for ix in &e.indexes {
        let kind = if ix.unique {
            Derived::Claim
        } else {
            Derived::Index
        };
        declared.push((cx.derived(kind), ix.name.as_str(), ix.since.value));
    }
    for r in &e.relations {
        declared.push((
            cx.derived(Derived::Relation),
            r.name.as_str(),
            r.since.value,
        ));
    }
    let children: Vec<(String, u32)> = e
        .relations
        .iter()
        .filter(|r| r.on_delete.enforced())
        .map(|r| (format!("{}.children", *r.name), r.since.value))
        .collect();
    for (name, since) in &children {
        declared.push((cx.derived(Derived::Counter), name.as_str(), *since));
    }
    for c in &e.counters {
        declared.push((cx.derived(Derived::Counter), c.name.as_str(), c.since.value));
    }
    let shard_arms: Vec<TokenStream> = e
        .counters
        .iter()
        .filter_map(|c| {
            let n = proc_macro2::Literal::u32_unsuffixed(c.shards.as_ref()?.value);
            let name = c.name.as_str();
            Some(quote!(#name => #n,))
        })
        .collect();
    let keep_arms: Vec<TokenStream> = e
        .counters
        .iter()
        .filter_map(|c| {
            let keep = counter_keep(cx, c.keep.as_ref()?.value);
            let name = c.name.as_str();
            Some(quote!(#name => #keep,))
        })
        .collect();
    let mut shards = if shard_arms.is_empty() {
        TokenStream::new()
    } else {
        quote! {
            fn counter_shards(__name: &str) -> u32 {
                match __name {
                    #(#shard_arms)*
                    _ => 1,
                }
            }
        }
    };
    if !keep_arms.is_empty() {
        shards.extend(quote! {
            fn counter_keep(__name: &str) -> #p::CounterKeep {
                match __name {
                    #(#keep_arms)*
                    _ => #p::CounterKeep::Follows,
                }
            }
        });
    }
    let declared = if declared.is_empty() {
        shards
    } else {
        let items = declared.iter().map(|(k, n, since)| {
            let since = proc_macro2::Literal::u32_unsuffixed(*since);
            quote!((#k, #n, #since))
        });
        quote! {
            fn declared() -> &'static [(#p::Derived, &'static str, u32)] {
                &[#(#items),*]
            }
            #shards
        }
    };

    for ix in &e.indexes {
        let mut fields: Vec<&str> = ix.fields.iter().map(|x| x.field()).collect();
        let order = if ix.unique {
            None
        } else {
            ix.order_by.as_ref()
        };
        if let Some(o) = order {
            fields.push(o.field());
        }
        let reads = Reads::new(cx, &fields);
        let n = ix.fields.len();
        let args: Vec<TokenStream> = ix
            .fields
            .iter()
            .zip(&reads.refs)
            .map(|(x, r)| group_arg(cx, x, r))
            .collect();
        let fname = ident(&ix.name);
        let (ixname, since) = (
            ix.name.as_str(),
            proc_macro2::Literal::u32_unsuffixed(ix.since.value),
        );
        let body = if ix.unique {
            claim_arms.push({
                // The key builder's own segment function, on a matcher.
                let seg = segments_fn(&ix.name);
                let (ns, space, kind) = (cx.namespace(), cx.key_space(), cx.derived(Derived::Claim));
                let found = reads.test(quote! {
                    #keys::#seg(#p::KeyMatch::derived(__claim, #ns, #space, #kind), #(#args),*).finish()
                });
                quote!(#ixname => #found,)
            });
            quote!(__facts.claim(#ixname, #since, #keys::#fname(#(#args),*));)
        } else {
            let sort = match order {
                Some(o) => sort_call(cx, o, &reads.refs[n], Sort::Build),
                None => quote!(::std::vec::Vec::new()),
            };
            let seg = segments_fn(&ix.name);
            member_checks.push(member_check(
                cx,
                &reads,
                since.clone(),
                quote!(#keys::#seg),
                quote!(#(#args),*),
                cx.derived(Derived::Index),
                order.map(|o| sort_call(cx, o, &reads.refs[n], Sort::Check)),
            ));
            match &ix.keep {
                Some(k) => {
                    let keep = proc_macro2::Literal::u32_unsuffixed(k.value);
                    quote!(__facts.member_capped(#since, #keep, #keys::#fname(#(#args),*), #sort);)
                }
                None => quote!(__facts.member(#since, #keys::#fname(#(#args),*), #sort);),
            }
        };
        facts.push(reads.wrap(body));
    }

    for r in &e.relations {
        let mut fields = vec![r.by.as_str()];
        if let Some(o) = &r.order_by {
            fields.push(o.field());
        }
        let reads = Reads::new(cx, &fields);
        let arg = reads.refs[0].arg(&cx.field_type(&r.by));
        let sort = match &r.order_by {
            Some(o) => sort_call(cx, o, &reads.refs[1], Sort::Build),
            None => quote!(::std::vec::Vec::new()),
        };
        let fname = relation_fn(&r.name);
        let since = proc_macro2::Literal::u32_unsuffixed(r.since.value);
        facts.push(reads.wrap(match &r.keep {
            Some(k) => {
                let keep = proc_macro2::Literal::u32_unsuffixed(k.value);
                quote!(__facts.member_capped(#since, #keep, #keys::#fname(#arg), #sort);)
            }
            None => quote!(__facts.member(#since, #keys::#fname(#arg), #sort);),
        }));
        if r.on_delete.enforced() {
            let cfn = children_fn(&r.name);
            facts.push(reads.wrap(quote!(__facts.count(#since, #keys::#cfn(#arg), 1);)));
        }
        let seg = segments_fn(&format!("relation_{}", *r.name));
        member_checks.push(member_check(
            cx,
            &reads,
            since,
            quote!(#keys::#seg),
            arg,
            cx.derived(Derived::Relation),
            r.order_by
                .as_ref()
                .map(|o| sort_call(cx, o, &reads.refs[1], Sort::Check)),
        ));
    }

    for c in &e.counters {
        let mut fields: Vec<&str> = c.group_by.iter().map(|g| g.field()).collect();
        if let Some(s) = &c.sum {
            fields.push(s.as_str());
        }
        let reads = Reads::new(cx, &fields);
        let args: Vec<TokenStream> = c
            .group_by
            .iter()
            .zip(&reads.refs)
            .map(|(g, r)| group_arg(cx, g, r))
            .collect();
        let delta = match &c.sum {
            Some(_) => {
                let v = reads.refs[c.group_by.len()].copied();
                quote!(#p::sum_i64(#v))
            }
            None => quote!(1),
        };
        let fname = counter_fn(&c.name);
        let since = proc_macro2::Literal::u32_unsuffixed(c.since.value);
        let key = quote!(#keys::#fname(#(#args),*));
        let n = proc_macro2::Literal::u32_unsuffixed(c.shards.as_ref().map_or(1, |n| n.value));
        facts.push(reads.wrap(match (&c.shards, &c.keep) {
            (_, Some(keep)) => {
                let keep = counter_keep(cx, keep.value);
                quote!(__facts.count_kept(#since, #n, #keep, #key, #delta);)
            }
            (Some(_), None) => quote!(__facts.count_sharded(#since, #n, #key, #delta);),
            (None, None) => quote!(__facts.count(#since, #key, #delta);),
        }));
    }

    let key_args = template
        .placeholders()
        .map(|f| {
            let member = ident(f);
            let ty = cx.field_type(f);
            Read::Place(quote!(self.#member)).arg(&ty)
        })
        .collect::<Vec<_>>();

    let ns = cx.namespace();
    let space = cx.key_space();
    let key_text = template
        .segments
        .iter()
        .map(|s| match s {
            crate::ir::Segment::Literal(l) => l.clone(),
            crate::ir::Segment::Field(f) => format!("{{{f}}}"),
        })
        .collect::<Vec<_>>()
        .join(":");
    let ename = e.name.as_str();
    let encoding = match e.encoding.value {
        Encoding::Json => quote!(#p::Encoding::Json),
        Encoding::MsgPack => quote!(#p::Encoding::MsgPack),
        Encoding::Protobuf => quote!(#p::Encoding::Protobuf),
    };
    let ttl = match &e.ttl {
        Some(t) => {
            let after = t.after_ms.value;
            let jitter = t.jitter_permille.as_ref().map_or(0, |j| j.value);
            quote!(::core::option::Option::Some(#p::Ttl { after_ms: #after, jitter_permille: #jitter }))
        }
        None => quote!(::core::option::Option::None),
    };
    let (expiry, expires_at) = match e.expiry_field() {
        Some(f) => {
            let fname = f.name.as_str();
            let field = ident(fname);
            let read = if f.optional {
                quote!(self.#field)
            } else {
                quote!(::core::option::Option::Some(self.#field))
            };
            // Spanned at the field's type, so a field that is no
            // `Timestamp` is an error there.
            let method = quote_spanned! {f.ty.origin.span()=>
                fn expires_at(&self) -> ::core::option::Option<#p::Timestamp> {
                    #read
                }
            };
            (quote!(::core::option::Option::Some(#fname)), method)
        }
        None => (quote!(::core::option::Option::None), quote!()),
    };
    let storage = storage(cx);
    // Only an entity with a feed says so: the trait's default is none.
    let feed = e.feed.as_ref().map(|f| {
        let ms = f.retain_ms.value;
        quote! {
            const FEED: ::core::option::Option<#p::FeedMeta> =
                ::core::option::Option::Some(#p::FeedMeta {
                    retain: ::core::time::Duration::from_millis(#ms),
                });
        }
    });
    let needs = needs_codec(cx);
    let tag = tag.map(|t| quote!(const PLAN_TAG: u64 = #t;));
    let on_delete = super::on_delete::entity_items(cx, template);
    // What the record derives; the parameters of what derives nothing are
    // `_`, so nothing is left unused.
    let facts = if facts.is_empty() {
        quote!(fn facts(&self, _: &mut #p::Facts) {})
    } else {
        quote! {
            fn facts(&self, __facts: &mut #p::Facts) {
                #(#facts)*
            }
        }
    };
    let derives_member = if member_checks.is_empty() {
        quote! {
            fn derives_member(&self, _: u32, _: &str, _: &[u8]) -> bool {
                false
            }
        }
    } else {
        quote! {
            fn derives_member(&self, __version: u32, __collection: &str, __sort: &[u8]) -> bool {
                #(#member_checks)*
                false
            }
        }
    };
    let claims = if claim_arms.is_empty() {
        quote! {
            fn claims(&self, _: &str, _: &str) -> bool {
                false
            }
        }
    } else {
        quote! {
            fn claims(&self, __index: &str, __claim: &str) -> bool {
                match __index {
                    #(#claim_arms)*
                    _ => false,
                }
            }
        }
    };
    quote! {
        #needs
        #[automatically_derived]
        impl #p::Entity for #name {
            const META: #p::EntityMeta = #p::EntityMeta {
                name: #ename,
                namespace: #ns,
                key_space: #space,
                key: #key_text,
                encoding: #encoding,
                ttl: #ttl,
                expiry: #expiry,
                storage: #storage,
            };

            #feed

            #tag

            fn record_key(&self) -> ::std::string::String {
                #keys::record(#(#key_args),*)
            }

            #declared

            #on_delete

            #facts

            #derives_member

            #expires_at

            fn is_at(&self, __key: &str) -> bool {
                #keys::__segments_record(#p::KeyMatch::new(__key, #ns), #(#key_args),*).finish()
            }

            #claims
        }
    }
}

/// The entity's `Storage`: `PLAIN` unless it declares a limit or
/// compression.
fn storage(cx: &Ctx<'_>) -> TokenStream {
    let p = cx.p();
    // Both checked to be at most 64 MiB, so they fit a `usize` of any target.
    let size =
        |n: u64| proc_macro2::Literal::usize_unsuffixed(usize::try_from(n).unwrap_or(usize::MAX));
    let mut out = quote!(#p::Storage::PLAIN);
    if let Some(max) = &cx.e.max_size {
        let max = size(max.value);
        out = quote!(#out.max_size(#max));
    }
    if let Some(c) = &cx.e.compress {
        let codec = match c.codec.value {
            Codec::Lz4 => quote!(#p::Codec::Lz4),
            Codec::Zstd => quote!(#p::Codec::Zstd),
        };
        let above = size(c.above.value);
        out = quote!(#out.compress(#codec, #above));
    }
    out
}

/// For an entity that compresses with zstd, the check that the build has
/// kvmodel's `zstd` feature: a compile error at the codec otherwise.
fn needs_codec(cx: &Ctx<'_>) -> TokenStream {
    let p = cx.p();
    let protobuf = super::proto::needs_feature(cx);
    let zstd = match &cx.e.compress {
        Some(c) if c.codec.value == Codec::Zstd => {
            let name = cx.e.name.as_str();
            let span = c.codec.origin.span();
            quote::quote_spanned!(span=> #p::require_zstd!(#name);)
        }
        _ => TokenStream::new(),
    };
    quote!(#protobuf #zstd)
}

/// The runtime's spelling of a counter's `keep`.
fn counter_keep(cx: &Ctx<'_>, keep: CounterKeep) -> TokenStream {
    let p = cx.p();
    match keep {
        CounterKeep::OnExpiry => quote!(#p::CounterKeep::OnExpiry),
        CounterKeep::Always => quote!(#p::CounterKeep::Always),
    }
}
