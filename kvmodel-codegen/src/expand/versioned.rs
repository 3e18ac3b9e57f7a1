//! The `Versioned` impl: reading records of older versions.

use proc_macro2::TokenStream;
use quote::quote;

use super::ctx::Ctx;

/// Code that builds `value` directly, so no default is parsed on a read.
fn value_tokens(p: &TokenStream, value: &serde_json::Value) -> TokenStream {
    use serde_json::Value;
    let json = quote!(#p::serde_json);
    match value {
        Value::Null => quote!(#json::Value::Null),
        Value::Bool(b) => quote!(#json::Value::Bool(#b)),
        Value::Number(n) => {
            let lit = if let Some(u) = n.as_u64() {
                proc_macro2::Literal::u64_suffixed(u)
            } else if let Some(i) = n.as_i64() {
                proc_macro2::Literal::i64_suffixed(i)
            } else {
                proc_macro2::Literal::f64_suffixed(n.as_f64().unwrap_or_default())
            };
            quote!(#json::Value::from(#lit))
        }
        Value::String(s) => quote!(#json::Value::String(::std::string::String::from(#s))),
        Value::Array(items) => {
            let items = items.iter().map(|v| value_tokens(p, v));
            quote!(#json::Value::Array(::std::vec![#(#items),*]))
        }
        Value::Object(map) => {
            let entries = map.iter().map(|(k, v)| {
                let v = value_tokens(p, v);
                quote!(__map.insert(::std::string::String::from(#k), #v);)
            });
            quote!({
                let mut __map = #json::Map::new();
                #(#entries)*
                #json::Value::Object(__map)
            })
        }
    }
}

pub(crate) fn expand(cx: &Ctx<'_>) -> TokenStream {
    let p = cx.p();
    let name = &cx.name;
    let e = cx.e;
    let version = proc_macro2::Literal::u32_unsuffixed(e.version.value);
    // The parameters the body reads are named; the others are `_`.
    let (version_param, value_param, body) = if let Some(prev) = &e.migrate_from {
        let prev: syn::Type = syn::parse_str(prev).unwrap_or_else(|_| syn::parse_quote!(()));
        let span = e
            .migrate_from
            .as_ref()
            .map(|m| m.origin.span())
            .unwrap_or_else(proc_macro2::Span::call_site);
        let assert = quote::quote_spanned! {span=>
            const _: () = ::core::assert!(
                <#prev as #p::Versioned>::VERSION + 1 == #version,
                "the `migrate_from` type must be exactly one version older"
            );
        };
        let body = quote! {
            #assert
            let __prev: #prev = if __version == <#prev as #p::Versioned>::VERSION {
                #p::from_value(__key, __value)?
            } else {
                <#prev as #p::Versioned>::upcast(__key, __version, __value)?
            };
            ::core::result::Result::Ok(<Self as ::core::convert::From<#prev>>::from(__prev))
        };
        (quote!(__version), quote!(__value), body)
    } else {
        // Steps that change nothing are left out.
        let mut steps: Vec<_> = e
            .migrations
            .iter()
            .filter(|m| !m.rename.is_empty() || !m.add.is_empty() || !m.remove.is_empty())
            .collect();
        steps.sort_by_key(|m| m.from.value);
        let (version_param, value_param) = if steps.is_empty() {
            (quote!(_), quote!(__value))
        } else {
            (quote!(__version), quote!(mut __value))
        };
        let steps = steps.iter().map(|m| {
            let from = m.from.value;
            let renames = m.rename.iter().map(|(a, b)| {
                let (a, b) = (a.as_str(), b.as_str());
                quote!(#p::migrate::rename(&mut __value, #a, #b);)
            });
            let adds = m.add.iter().map(|(f, v)| {
                let (f, v) = (f.as_str(), value_tokens(&p, &v.value));
                quote!(#p::migrate::add(&mut __value, #f, #v);)
            });
            let removes = m.remove.iter().map(|f| {
                let f = f.as_str();
                quote!(#p::migrate::remove(&mut __value, #f);)
            });
            quote! {
                if __version <= #from {
                    #(#renames)*
                    #(#adds)*
                    #(#removes)*
                }
            }
        });
        let body = quote! {
            #(#steps)*
            #p::from_value(__key, __value)
        };
        (version_param, value_param, body)
    };
    let proto = super::proto::versioned_items(cx);
    quote! {
        #[automatically_derived]
        impl #p::Versioned for #name {
            const VERSION: u32 = #version;
            #proto

            fn upcast(
                __key: &str,
                #version_param: u32,
                #value_param: #p::serde_json::Value,
            ) -> #p::Result<Self> {
                #body
            }
        }
    }
}
