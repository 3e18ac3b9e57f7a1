//! `#[derive(KvEntity)]` and `#[derive(KvEnum)]` for kvmodel: a shim over
//! `kvmodel-codegen`, where the logic lives.

#![warn(missing_docs)]

use proc_macro::TokenStream;

/// Generates key builders (`XKeys`), a repository (`XRepo<S>`) and the
/// record impls of an entity. See the `kvmodel` crate for the attributes.
#[proc_macro_derive(KvEntity, attributes(kv))]
pub fn derive_kv_entity(input: TokenStream) -> TokenStream {
    kvmodel_codegen::derive_entity(input.into()).into()
}

/// Generates the handle of a standalone counter (`XCounter<S>`: `incr`,
/// `get`, `reset`) whose key fields are the struct's fields. See the
/// `kvmodel` crate for the attributes.
#[proc_macro_derive(KvCounter, attributes(kv))]
pub fn derive_kv_counter(input: TokenStream) -> TokenStream {
    kvmodel_codegen::derive_counter(input.into()).into()
}

/// Key and sort encodings of a fieldless enum, so it can be part of keys,
/// group counters and orderings.
#[proc_macro_derive(KvEnum, attributes(kv))]
pub fn derive_kv_enum(input: TokenStream) -> TokenStream {
    kvmodel_codegen::derive_enum(input.into()).into()
}
