//! The protobuf fields of a protobuf-encoded entity (see [`crate::proto`]):
//! a constant the runtime encodes and decodes its records with.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::ctx::Ctx;
use crate::ir::{Encoding, FieldType};
use crate::proto::{self, ProtoField, Shape};

fn is_protobuf(cx: &Ctx<'_>) -> bool {
    cx.e.encoding.value == Encoding::Protobuf
}

/// A compile error naming the `protobuf` feature when the build lacks it.
pub(super) fn needs_feature(cx: &Ctx<'_>) -> TokenStream {
    if !is_protobuf(cx) {
        return TokenStream::new();
    }
    let p = cx.p();
    let name = cx.e.name.as_str();
    let span = cx.e.encoding.origin.span();
    quote_spanned!(span=> #p::require_protobuf!(#name);)
}

/// The runtime's `Scalar` of one value of type `ty` (a list's or a map's
/// is its items'; an enum is held as the `string` name of its variant).
fn runtime_kind(ty: &FieldType) -> TokenStream {
    match ty {
        FieldType::String => quote!(String),
        FieldType::Bool => quote!(Bool),
        FieldType::I32 => quote!(I32),
        FieldType::I64 => quote!(I64),
        FieldType::U32 => quote!(U32),
        FieldType::U64 => quote!(U64),
        FieldType::F64 => quote!(F64),
        FieldType::Bytes => quote!(Bytes),
        FieldType::Timestamp => quote!(Timestamp),
        FieldType::Date => quote!(Date),
        FieldType::Uuid => quote!(Uuid),
        FieldType::Named(_) => quote!(String),
        FieldType::List(t) | FieldType::Map(t) => runtime_kind(t),
    }
}

fn field_tokens(p: &TokenStream, f: &ProtoField) -> TokenStream {
    let name = f.name.as_str();
    let number = proc_macro2::Literal::u32_unsuffixed(f.number);
    let kind = runtime_kind(&f.ty);
    let shape = match f.shape {
        Shape::One => quote!(One),
        Shape::Optional => quote!(Optional),
        Shape::List => quote!(List),
        Shape::Map => quote!(Map),
    };
    quote! {
        #p::ProtoField {
            name: #name,
            number: #number,
            kind: #p::Scalar::#kind,
            shape: #p::ProtoShape::#shape,
        }
    }
}

/// The `Versioned` items of the protobuf fields: `PROTO` for a protobuf
/// entity, and `proto_at` answering with the older type's fields along a
/// `migrate_from` chain.
pub(super) fn versioned_items(cx: &Ctx<'_>) -> TokenStream {
    let p = cx.p();
    let e = cx.e;
    let chain = e.migrate_from.as_ref().map(|prev| {
        let prev: syn::Type = syn::parse_str(prev).unwrap_or_else(|_| syn::parse_quote!(()));
        quote! {
            fn proto_at(__version: u32) -> ::core::option::Option<&'static #p::ProtoMessage> {
                if __version < <Self as #p::Versioned>::VERSION {
                    <#prev as #p::Versioned>::proto_at(__version)
                } else {
                    <Self as #p::Versioned>::PROTO
                }
            }
        }
    });
    if !is_protobuf(cx) {
        return quote!(#chain);
    }
    let fields = proto::fields(None, e);
    let renamed = if e.migrate_from.is_some() {
        Vec::new()
    } else {
        proto::renamed(None, e)
    };
    let fields = fields.iter().map(|f| field_tokens(&p, f));
    let renamed = renamed.iter().map(|f| field_tokens(&p, f));
    quote! {
        const PROTO: ::core::option::Option<&'static #p::ProtoMessage> =
            ::core::option::Option::Some(&#p::ProtoMessage {
                fields: &[#(#fields),*],
                renamed: &[#(#renamed),*],
            });
        #chain
    }
}

/// Requires the type of every enum field of a protobuf entity to be a
/// `#[derive(KvEnum)]` enum (stored by its variant's name): the derive sees
/// no type declarations, so a struct there is a compile error at the field.
pub(super) fn enum_checks(cx: &Ctx<'_>) -> TokenStream {
    if !is_protobuf(cx) {
        return TokenStream::new();
    }
    let p = cx.p();
    let e = cx.e;
    let enums = e.fields.iter().filter_map(|f| {
        let field = proto::map_field(None, f).ok()?;
        let FieldType::Named(n) = &field.ty else {
            return None;
        };
        let path = n.syntax();
        let span = f.ty.origin.span();
        Some(quote_spanned!(span=> __enum::<#path>();))
    });
    let enums: Vec<TokenStream> = enums.collect();
    let enum_check = (!enums.is_empty()).then(|| {
        quote! {
            const _: fn() = || {
                fn __enum<__T: #p::ProtoEnum>() {}
                #(#enums)*
            };
        }
    });
    enum_check.unwrap_or_default()
}
