//! `#[derive(KvCounter)]`: the handle of a standalone counter
//! (`XCounter<S>`, with `incr`, `get` and `reset`) and the key of each
//! counter (`X::key`).

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};

use super::ctx::{arg_type, ident, param, with_description};
use crate::ir::{FieldType, Tally};

/// Expands a standalone counter. A counter that did not check is expanded
/// all the same beside its errors (with its fields as its key), so code
/// that uses it reports the real error and no cascade.
pub(crate) fn expand(t: &Tally, errors: Option<TokenStream>) -> TokenStream {
    let k = match &t.crate_path {
        Some(path) => path.value.to_token_stream(),
        None => quote!(::kvmodel),
    };
    let p = quote!(#k::__private);
    let name = ident(&t.name);
    let handle = format_ident!("{}Counter", name);
    let vis = t.vis.to_token_stream();
    // The key fields, in template order (field order while in error).
    let order: Vec<&str> = match (&errors, &t.key) {
        (None, Some(key)) => key.placeholders().collect(),
        _ => t.fields.iter().map(|f| f.name.as_str()).collect(),
    };
    let fields: Vec<(syn::Ident, FieldType)> = order
        .iter()
        .filter_map(|f| Some((ident(f), t.field(f)?.ty.value.clone())))
        .collect();
    let args: Vec<syn::Ident> = fields.iter().map(|(a, _)| a.clone()).collect();
    let params = fields.iter().map(|(a, ty)| {
        let ty = arg_type(ty, &k);
        quote!(#a: #ty)
    });
    let params: Vec<TokenStream> = params.collect();
    // Beside errors the key is left unbuilt: a field that cannot be part of
    // a key is reported once, by the check, not again by the compiler.
    let in_error = errors.is_some();
    let parts: Vec<TokenStream> = fields
        .iter()
        .filter(|_| !in_error)
        .map(|(a, ty)| match ty {
            FieldType::String | FieldType::Bytes => quote!(.part(#a)),
            _ => quote!(.part(&#a)),
        })
        .collect();
    let own_parts: Vec<TokenStream> = args
        .iter()
        .filter(|_| !in_error)
        .map(|a| quote!(.part(&self.#a)))
        .collect();
    let unused = in_error.then(|| quote!(let _ = (#(#args,)*);));
    let by = param("by", &args);
    let (ns, space) = (
        t.namespace
            .as_ref()
            .map(|n| n.value.clone())
            .unwrap_or_default(),
        t.key.as_ref().map(|k| k.key_space()).unwrap_or_default(),
    );
    let tname = t.name.as_str();
    let shards = t.shards.as_ref().map_or(1, |s| s.value);
    let ttl = match &t.ttl_ms {
        Some(ms) => {
            let ms = ms.value;
            quote!(::core::option::Option::Some(#ms))
        }
        None => quote!(::core::option::Option::None),
    };
    let template = t.key.as_ref().map(|k| k.text.clone()).unwrap_or_default();
    let doc = with_description(
        format!(
            " The standalone counter `{tname}` (key `{template}`): `incr`, `get` and `reset` on any [`Store`]({}::Store).",
            k.to_string().replace(' ', "")
        ),
        t.description.as_ref(),
    );
    let ttl_doc = t.ttl_ms.as_ref().map(|ms| {
        let doc = format!(
            " Every shard's time to live is set to {} again in the same commit, so the counter expires that long after its last increment.",
            crate::vocab::format_duration_ms(ms.value)
        );
        quote!(#[doc = ""] #[doc = #doc])
    });
    quote! {
        #errors

        #[automatically_derived]
        impl #name {
            #[doc(hidden)]
            pub const __KV_COUNTER: #p::TallyDef = #p::TallyDef {
                name: #tname,
                namespace: #ns,
                key_space: #space,
                shards: #shards,
                ttl_ms: #ttl,
            };

            /// The store key of this counter (of its first shard, when it is sharded).
            #vis fn key(&self) -> ::std::string::String {
                #p::TallyKey::of(&Self::__KV_COUNTER) #(#own_parts)* .finish()
            }

            /// The counter's handle on `store`.
            #vis fn counter<__S: #k::Store>(store: __S) -> #handle<__S> {
                #handle::new(store)
            }
        }

        #doc
        #vis struct #handle<__S> {
            store: __S,
        }

        #[automatically_derived]
        impl<__S: ::core::clone::Clone> ::core::clone::Clone for #handle<__S> {
            fn clone(&self) -> Self {
                #handle { store: ::core::clone::Clone::clone(&self.store) }
            }
        }

        #[automatically_derived]
        impl<__S: ::core::fmt::Debug> ::core::fmt::Debug for #handle<__S> {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                __f.debug_struct(::core::stringify!(#handle)).field("store", &self.store).finish()
            }
        }

        #[automatically_derived]
        impl<__S: #k::Store> #handle<__S> {
            /// The handle on `store`.
            #vis fn new(store: __S) -> Self {
                #handle { store }
            }

            /// The store.
            #vis fn store(&self) -> &__S {
                &self.store
            }

            fn __key(#(#params),*) -> ::std::string::String {
                #unused
                #p::TallyKey::of(&#name::__KV_COUNTER) #(#parts)* .finish()
            }

            /// Adds `by` (negative to take away) to the counter, in one commit.
            /// A sum beyond what a 64-bit counter holds is refused
            /// (`Error::InvalidBatch`) and nothing is written. Returns nothing:
            /// read the value with `get`.
            #ttl_doc
            #vis async fn incr(&self, #(#params,)* #by: i64) -> #k::Result<()> {
                #p::tally::incr(&self.store, &#name::__KV_COUNTER, &Self::__key(#(#args),*), #by).await
            }

            /// The counter's value (the sum of its shards, in one round trip);
            /// 0 when it was never incremented, was reset or expired.
            #vis async fn get(&self, #(#params),*) -> #k::Result<i64> {
                #p::tally::get(&self.store, &#name::__KV_COUNTER, &Self::__key(#(#args),*)).await
            }

            /// Sets the counter to 0: removes every shard in one commit.
            #vis async fn reset(&self, #(#params),*) -> #k::Result<()> {
                #p::tally::reset(&self.store, &#name::__KV_COUNTER, &Self::__key(#(#args),*)).await
            }
        }
    }
}
