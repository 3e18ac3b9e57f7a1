//! `XKeys`: one function per key the entity writes.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::api::{Method, Param};
use super::ctx::{Ctx, Derived, group_arg_names, ident};
use crate::ir::{FieldExpr, FieldType, KeyTemplate, Segment};
use crate::origin::{Origin, Sp};

/// `.part(x)` or, for the co-location field, `.tag(x)`; `x` is an argument.
/// The call is spanned at `origin`, so a type without a key encoding is
/// reported where the user named the field.
fn push_part(cx: &Ctx<'_>, field: &str, arg: &syn::Ident, origin: &Origin) -> TokenStream {
    let ty = cx.field_type(field);
    let value = match ty {
        FieldType::String | FieldType::Bytes => quote!(#arg),
        _ => quote!(&#arg),
    };
    let span = origin.span();
    if cx.e.colocate.as_ref().is_some_and(|c| c.as_str() == field) {
        quote_spanned!(span=> .tag(#value))
    } else {
        quote_spanned!(span=> .part(#value))
    }
}

/// Parameters and builder calls for a list of plain fields; the calls name
/// the parameters by field, so a caller can bind locals of those names and
/// reuse them on a [`KeyMatch`](kvmodel_runtime) chain.
pub(crate) fn field_args(cx: &Ctx<'_>, fields: &[&Sp<String>]) -> (Vec<Param>, Vec<TokenStream>) {
    let mut params = Vec::new();
    let mut parts = Vec::new();
    for f in fields {
        let arg = ident(f);
        let ty = cx.arg_type(&cx.field_type(f));
        parts.push(push_part(cx, f, &arg, &f.origin));
        params.push(Param::modeled(arg, ty));
    }
    (params, parts)
}

/// Parameters and builder calls for the fields and time buckets of an
/// index or a counter (`group_by`): a field's value (its co-location tag
/// where it is the co-located field, lowercased for a normalized index), or
/// a bucket's date or hour.
pub(crate) fn group_args(
    cx: &Ctx<'_>,
    items: &[&Sp<FieldExpr>],
    normalize: bool,
) -> (Vec<Param>, Vec<TokenStream>) {
    let p = cx.p();
    let exprs: Vec<&FieldExpr> = items.iter().map(|x| &x.value).collect();
    let names = group_arg_names(&exprs);
    let mut params = Vec::new();
    let mut parts = Vec::new();
    for (x, arg) in items.iter().zip(names) {
        parts.push(match &x.value {
            FieldExpr::Field(_) if normalize => quote!(.part(&#p::lowercase(#arg))),
            FieldExpr::Field(f) => push_part(cx, f, &arg, &x.origin),
            FieldExpr::Hour(_) => quote!(.part(&#p::hour(#arg))),
            FieldExpr::Day(_) => quote!(.part(&#arg)),
            FieldExpr::Month(_) => quote!(.part(&#p::month(#arg))),
        });
        params.push(Param::modeled(arg, cx.group_arg_type(x)));
    }
    (params, parts)
}

/// The names of `params`, as arguments.
pub(crate) fn names(params: &[Param]) -> Vec<syn::Ident> {
    params.iter().map(|p| p.name.clone()).collect()
}

pub(crate) fn counter_fn(name: &str) -> syn::Ident {
    ident(&format!("counter_{name}"))
}

pub(crate) fn relation_fn(name: &str) -> syn::Ident {
    ident(&format!("relation_{name}"))
}

/// The key builder of the count of each parent's children in relation
/// `name` (`on_delete`).
pub(crate) fn children_fn(name: &str) -> syn::Ident {
    ident(&format!("__children_{name}"))
}

/// The private function that spells the segments of the key built by the
/// key builder `name` (after its kind), for both that builder and the
/// matchers of `Entity`: one spelling per key, so a component type without
/// a key encoding is reported once.
pub(crate) fn segments_fn(name: &str) -> syn::Ident {
    ident(&format!("__segments_{name}"))
}

/// A key builder of `XKeys`, with the private function that spells its
/// segments where matchers read them too.
pub(crate) struct KeyFn {
    pub segments: Option<TokenStream>,
    pub builder: Method,
}

/// The key builders of `XKeys`, in order.
pub(crate) fn key_fns(cx: &Ctx<'_>, template: &KeyTemplate) -> Vec<KeyFn> {
    let p = cx.p();
    let (name, e) = (&cx.name, cx.e);
    let ns = cx.namespace();
    let space = cx.key_space();
    let mut fns = Vec::new();
    // The private spelling of a key's segments, after `first`.
    let spell =
        |seg: &syn::Ident, params: &[Param], first: TokenStream, parts: Vec<TokenStream>| {
            Some(quote! {
                fn #seg<__B: #p::Segments>(__b: __B, #(#params),*) -> __B {
                    __b #first #(#parts)*
                }
            })
        };

    let mut params = Vec::new();
    let mut chain = Vec::new();
    for s in &template.segments {
        match s {
            Segment::Literal(l) => chain.push(quote!(.lit(#l))),
            Segment::Field(f) => {
                let arg = ident(f);
                chain.push(push_part(cx, f, &arg, &template.origin));
                params.push(Param::modeled(arg, cx.arg_type(&cx.field_type(f))));
            }
        }
    }
    let doc = format!(
        " The key of {} record: `{ns}:{}`.",
        crate::vocab::a(&format!("`{}`", *e.name)),
        template.text
    );
    let seg = segments_fn("record");
    let args = names(&params);
    let body = quote!(Self::#seg(#p::KeyBuilder::new(#ns), #(#args),*).finish());
    fns.push(KeyFn {
        segments: spell(&seg, &params, TokenStream::new(), chain),
        builder: Method {
            params,
            body,
            ..Method::builder("record".into(), quote!(#[doc = #doc]))
        },
    });

    for ix in &e.indexes {
        let fields: Vec<&Sp<FieldExpr>> = ix.fields.iter().collect();
        let (params, parts) = group_args(cx, &fields, ix.normalize.is_some());
        let ixname = ix.name.as_str();
        let (kind, doc) = if ix.unique {
            (
                cx.derived(Derived::Claim),
                format!(
                    " The unique claim of index `{ixname}`: holds the key of the record with this value."
                ),
            )
        } else {
            (
                cx.derived(Derived::Index),
                format!(
                    " The sorted collection of index `{ixname}`: keys of the records with this value."
                ),
            )
        };
        let seg = segments_fn(ixname);
        let args = names(&params);
        let body =
            quote!(Self::#seg(#p::KeyBuilder::derived(#ns, #space, #kind), #(#args),*).finish());
        fns.push(KeyFn {
            segments: spell(&seg, &params, quote!(.lit(#ixname)), parts),
            builder: Method {
                params,
                body,
                ..Method::builder(ixname.to_owned(), quote!(#[doc = #doc]))
            },
        });
    }

    for r in &e.relations {
        let (params, parts) = field_args(cx, &[&r.by]);
        let rname = r.name.as_str();
        let kind = cx.derived(Derived::Relation);
        let doc = format!(
            " The sorted collection of relation `{rname}`: keys of the `{}` records of one `{}`.",
            *e.name, *r.belongs_to
        );
        let seg = segments_fn(&format!("relation_{rname}"));
        let args = names(&params);
        let body =
            quote!(Self::#seg(#p::KeyBuilder::derived(#ns, #space, #kind), #(#args),*).finish());
        fns.push(KeyFn {
            segments: spell(&seg, &params, quote!(.lit(#rname)), parts),
            builder: Method {
                params,
                body,
                ..Method::builder(format!("relation_{rname}"), quote!(#[doc = #doc]))
            },
        });
    }

    for c in &e.counters {
        let items: Vec<&Sp<FieldExpr>> = c.group_by.iter().collect();
        let (params, parts) = group_args(cx, &items, false);
        let cname = c.name.as_str();
        let kind = cx.derived(Derived::Counter);
        let doc = format!(" The key of counter `{cname}`.");
        fns.push(KeyFn {
            segments: None,
            builder: Method {
                params,
                body: quote!(#p::KeyBuilder::derived(#ns, #space, #kind).lit(#cname) #(#parts)* .finish()),
                ..Method::builder(format!("counter_{cname}"), quote!(#[doc = #doc]))
            },
        });
    }

    // The count of each parent's children, one per relation, kept or not,
    // so a parent that names a relation which keeps its children gets the
    // one error that says so.
    for r in &e.relations {
        let (params, parts) = field_args(cx, &[&r.by]);
        let kind = cx.derived(Derived::Counter);
        let cname = format!("{}.children", *r.name);
        let doc = format!(
            " The count of the `{}` records of one `{}` in relation `{}` (`on_delete: {}`).",
            *e.name, *r.belongs_to, *r.name, *r.on_delete
        );
        fns.push(KeyFn {
            segments: None,
            builder: Method {
                params,
                body: quote!(#p::KeyBuilder::derived(#ns, #space, #kind).lit(#cname) #(#parts)* .finish()),
                ..Method::builder(
                    format!("__children_{}", *r.name),
                    quote!(#[doc = #doc] #[doc(hidden)]),
                )
            },
        });
    }

    let doc = format!(" The discovery set of every `{}` record.", *e.name);
    fns.push(KeyFn {
        segments: None,
        builder: Method {
            body: quote!(<#name as #p::Entity>::all_key()),
            ..Method::builder("all".into(), quote!(#[doc = #doc]))
        },
    });
    fns
}

pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let (vis, keys) = (&cx.vis, &cx.keys);
    let fns = key_fns(cx, template).into_iter().map(|f| {
        let (segments, builder) = (f.segments, f.builder.real(vis));
        quote!(#segments #builder)
    });
    let doc = format!(
        " Key builders of `{}`: every key its repository reads or writes.",
        *cx.e.name
    );
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy)]
        #vis struct #keys;

        #[automatically_derived]
        impl #keys {
            #(#fns)*
        }
    }
}
