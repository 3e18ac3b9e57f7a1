//! `XKeys`: one function per key the entity writes.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::{Ctx, Derived, group_arg_names, ident};
use crate::ir::{FieldExpr, KeyTemplate, Segment};
use crate::origin::{Origin, Sp};

/// `.part(x)` or, for the co-location field, `.tag(x)`; `x` is an argument.
/// The call is spanned at `origin`, so a type without a key encoding is
/// reported where the user named the field.
fn push_part(cx: &Ctx<'_>, field: &str, arg: &syn::Ident, origin: &Origin) -> TokenStream {
    let ty = cx.field_type(field);
    let value = match ty {
        crate::ir::FieldType::String | crate::ir::FieldType::Bytes => quote!(#arg),
        _ => quote!(&#arg),
    };
    let span = origin.span();
    if cx.e.colocate.as_ref().is_some_and(|c| c.as_str() == field) {
        quote_spanned!(span=> .tag(#value))
    } else {
        quote_spanned!(span=> .part(#value))
    }
}

/// Arguments and builder calls for a list of plain fields; the calls name
/// the arguments by field, so a caller can bind locals of those names and
/// reuse them on a [`KeyMatch`](kvmodel_runtime) chain.
pub(crate) fn field_args(
    cx: &Ctx<'_>,
    fields: &[&Sp<String>],
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut params = Vec::new();
    let mut parts = Vec::new();
    for f in fields {
        let arg = ident(f);
        let ty = cx.arg_type(&cx.field_type(f));
        params.push(quote!(#arg: #ty));
        parts.push(push_part(cx, f, &arg, &f.origin));
    }
    (params, parts)
}

/// Argument names, parameters and builder calls for the fields and time
/// buckets of an index or a counter (`group_by`): a field's value (its
/// co-location tag where it is the co-located field, lowercased for a
/// normalized index), or a bucket's date or hour.
pub(crate) fn group_args(
    cx: &Ctx<'_>,
    items: &[&Sp<FieldExpr>],
    normalize: bool,
) -> (Vec<syn::Ident>, Vec<TokenStream>, Vec<TokenStream>) {
    let p = cx.p();
    let exprs: Vec<&FieldExpr> = items.iter().map(|x| &x.value).collect();
    let names = group_arg_names(&exprs);
    let mut params = Vec::new();
    let mut parts = Vec::new();
    for (x, arg) in items.iter().zip(&names) {
        let ty = cx.group_arg_type(x);
        params.push(quote!(#arg: #ty));
        parts.push(match &x.value {
            FieldExpr::Field(_) if normalize => quote!(.part(&#p::lowercase(#arg))),
            FieldExpr::Field(f) => push_part(cx, f, arg, &x.origin),
            FieldExpr::Hour(_) => quote!(.part(&#p::hour(#arg))),
            FieldExpr::Day(_) => quote!(.part(&#arg)),
            FieldExpr::Month(_) => quote!(.part(&#p::month(#arg))),
        });
    }
    (names, params, parts)
}

pub(crate) fn counter_fn(name: &str) -> syn::Ident {
    format_ident!("counter_{}", name)
}

pub(crate) fn relation_fn(name: &str) -> syn::Ident {
    format_ident!("relation_{}", name)
}

/// The private function that spells the segments of the key built by the
/// key builder `name` (after its kind), for both that builder and the
/// matchers of `Entity`: one spelling per key, so a component type without
/// a key encoding is reported once.
pub(crate) fn segments_fn(name: &str) -> syn::Ident {
    format_ident!("__segments_{}", name)
}

fn arg_names(fields: &[&str]) -> Vec<syn::Ident> {
    fields.iter().map(|f| ident(f)).collect()
}

pub(crate) fn expand(cx: &Ctx<'_>, template: &KeyTemplate) -> TokenStream {
    let p = cx.p();
    let (vis, keys, name) = (&cx.vis, &cx.keys, &cx.name);
    let e = cx.e;
    let ns = cx.namespace();
    let space = cx.key_space();
    let mut fns = Vec::new();

    let mut params = Vec::new();
    let mut chain = Vec::new();
    for s in &template.segments {
        match s {
            Segment::Literal(l) => chain.push(quote!(.lit(#l))),
            Segment::Field(f) => {
                let arg = ident(f);
                let ty = cx.arg_type(&cx.field_type(f));
                params.push(quote!(#arg: #ty));
                chain.push(push_part(cx, f, &arg, &template.origin));
            }
        }
    }
    let doc = format!(
        " The key of {} record: `{ns}:{}`.",
        crate::vocab::a(&format!("`{}`", *e.name)),
        template.text
    );
    let names = arg_names(&template.placeholders().collect::<Vec<_>>());
    fns.push(quote! {
        fn __segments_record<__B: #p::Segments>(__b: __B, #(#params),*) -> __B {
            __b #(#chain)*
        }

        #[doc = #doc]
        #vis fn record(#(#params),*) -> ::std::string::String {
            Self::__segments_record(#p::KeyBuilder::new(#ns), #(#names),*).finish()
        }
    });

    for ix in &e.indexes {
        let fields: Vec<&Sp<FieldExpr>> = ix.fields.iter().collect();
        let (names, params, parts) = group_args(cx, &fields, ix.normalize.is_some());
        let fname = ident(&ix.name);
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
        let seg = segments_fn(&ix.name);
        fns.push(quote! {
            fn #seg<__B: #p::Segments>(__b: __B, #(#params),*) -> __B {
                __b.lit(#ixname) #(#parts)*
            }

            #[doc = #doc]
            #vis fn #fname(#(#params),*) -> ::std::string::String {
                Self::#seg(#p::KeyBuilder::derived(#ns, #space, #kind), #(#names),*).finish()
            }
        });
    }

    for r in &e.relations {
        let (params, parts) = field_args(cx, &[&r.by]);
        let fname = relation_fn(&r.name);
        let rname = r.name.as_str();
        let kind = cx.derived(Derived::Relation);
        let doc = format!(
            " The sorted collection of relation `{rname}`: keys of the `{}` records of one `{}`.",
            *e.name, *r.belongs_to
        );
        let seg = segments_fn(&format!("relation_{rname}"));
        let by = ident(&r.by);
        fns.push(quote! {
            fn #seg<__B: #p::Segments>(__b: __B, #(#params),*) -> __B {
                __b.lit(#rname) #(#parts)*
            }

            #[doc = #doc]
            #vis fn #fname(#(#params),*) -> ::std::string::String {
                Self::#seg(#p::KeyBuilder::derived(#ns, #space, #kind), #by).finish()
            }
        });
    }

    for c in &e.counters {
        let items: Vec<&Sp<FieldExpr>> = c.group_by.iter().collect();
        let (_, params, parts) = group_args(cx, &items, false);
        let fname = counter_fn(&c.name);
        let cname = c.name.as_str();
        let kind = cx.derived(Derived::Counter);
        let doc = format!(" The key of counter `{cname}`.");
        fns.push(quote! {
            #[doc = #doc]
            #vis fn #fname(#(#params),*) -> ::std::string::String {
                #p::KeyBuilder::derived(#ns, #space, #kind).lit(#cname) #(#parts)* .finish()
            }
        });
    }

    let doc = format!(
        " Key builders of `{}`: every key its repository reads or writes.",
        *e.name
    );
    let all_doc = format!(" The discovery set of every `{}` record.", *e.name);
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy)]
        #vis struct #keys;

        #[automatically_derived]
        impl #keys {
            #(#fns)*

            #[doc = #all_doc]
            #vis fn all() -> ::std::string::String {
                <#name as #p::Entity>::all_key()
            }
        }
    }
}
