//! Field types: their schema spelling (`list<u32>`) and their Rust spelling
//! (`Vec<u32>`), each read and written here.

use std::fmt;

use proc_macro2::TokenStream;
use quote::quote;

use super::mistake::Mistake;
use crate::ir::{FieldType, Syntax};
use crate::origin::suggestion;

/// The scalar field types, by their schema spelling.
const SCALARS: &[(&str, FieldType)] = &[
    ("string", FieldType::String),
    ("bool", FieldType::Bool),
    ("i32", FieldType::I32),
    ("i64", FieldType::I64),
    ("u32", FieldType::U32),
    ("u64", FieldType::U64),
    ("f64", FieldType::F64),
    ("bytes", FieldType::Bytes),
    ("timestamp", FieldType::Timestamp),
    ("date", FieldType::Date),
    ("uuid", FieldType::Uuid),
];

/// How deep lists and maps may nest in a field type: deep enough for any
/// model, and a bound on every walk over a type.
const MAX_NESTING: usize = 16;

impl FieldType {
    /// Parses the schema spelling (`string`, `list<u32>`, `map<string, T>`,
    /// or one of `named`, the types the schema declares). E013 otherwise.
    pub fn parse_schema(text: &str, named: &[&str]) -> Result<FieldType, Mistake> {
        Self::parse_nested(text, named, 0)
    }

    /// [`parse_schema`](Self::parse_schema) inside `depth` lists and maps.
    fn parse_nested(text: &str, named: &[&str], depth: usize) -> Result<FieldType, Mistake> {
        let t = text.trim();
        if let Some((_, ty)) = SCALARS.iter().find(|(n, _)| *n == t) {
            return Ok(ty.clone());
        }
        let nested = t.starts_with("list<") || t.starts_with("map<");
        if nested && depth >= MAX_NESTING {
            return Err(Mistake::new(
                "E013",
                format!(
                    "this type nests lists and maps more than {MAX_NESTING} deep; declare a struct under `types:` for the inner levels"
                ),
            ));
        }
        if let Some(inner) = t.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
            return Ok(FieldType::List(Box::new(Self::parse_nested(
                inner,
                named,
                depth + 1,
            )?)));
        }
        if let Some(inner) = t.strip_prefix("map<").and_then(|r| r.strip_suffix('>')) {
            let Some((key, value)) = inner.split_once(',') else {
                return Err(Mistake::new(
                    "E013",
                    format!("`{t}` is not a map type; expected `map<string, T>`"),
                ));
            };
            if key.trim() != "string" {
                return Err(Mistake::new(
                    "E013",
                    format!(
                        "map keys must be strings; write `map<string, {}>`",
                        value.trim()
                    ),
                ));
            }
            return Ok(FieldType::Map(Box::new(Self::parse_nested(
                value,
                named,
                depth + 1,
            )?)));
        }
        if named.contains(&t) {
            return Syntax::parse_str(t).map(FieldType::Named).map_err(|_| {
                Mistake::new(
                    "E013",
                    format!("the type `{t}` cannot be named in Rust; declare it with an UpperCamelCase name"),
                )
            });
        }
        let scalars = SCALARS.iter().map(|(n, _)| *n);
        let hint = suggestion(t, scalars.clone().chain(named.iter().copied()));
        let all: Vec<&str> = scalars.collect();
        Err(
            Mistake::new("E013", format!("unknown type `{t}`{hint}")).help(format!(
                "use {}, list<T>, map<string, T>, or a name declared under `types:`",
                all.join(", ")
            )),
        )
    }

    /// The schema spelling (`string`, `list<u32>`, `UserStatus`).
    pub fn schema_name(&self) -> String {
        match self {
            FieldType::List(t) => format!("list<{}>", t.schema_name()),
            FieldType::Map(t) => format!("map<string, {}>", t.schema_name()),
            FieldType::Named(n) => n.to_string(),
            scalar => SCALARS
                .iter()
                .find(|(_, t)| t == scalar)
                .map(|(n, _)| (*n).to_owned())
                .unwrap_or_default(),
        }
    }

    /// Reads the Rust spelling of a field's type: the IR type and whether it
    /// is `Option<…>`. Types it does not know are named types.
    pub fn from_rust(ty: &syn::Type) -> (FieldType, bool) {
        if let Some(seg) = last_segment(ty) {
            let args = generic_args(seg);
            if seg.ident == "Option" && args.len() == 1 {
                return (Self::from_rust_inner(args[0]), true);
            }
        }
        (Self::from_rust_inner(ty), false)
    }

    fn from_rust_inner(ty: &syn::Type) -> FieldType {
        Self::from_rust_nested(ty, 0)
    }

    /// A type inside `depth` lists, maps and boxes; past [`MAX_NESTING`]
    /// the rest is a type the derive does not look into.
    fn from_rust_nested(ty: &syn::Type, depth: usize) -> FieldType {
        let named = || FieldType::Named(Syntax::new(ty.clone()));
        let Some(seg) = last_segment(ty) else {
            return named();
        };
        if depth >= MAX_NESTING {
            return named();
        }
        let args = generic_args(seg);
        match (seg.ident.to_string().as_str(), args.as_slice()) {
            ("String", []) => FieldType::String,
            ("bool", []) => FieldType::Bool,
            ("i32", []) => FieldType::I32,
            ("i64", []) => FieldType::I64,
            ("u32", []) => FieldType::U32,
            ("u64", []) => FieldType::U64,
            ("f64", []) => FieldType::F64,
            ("Timestamp", []) => FieldType::Timestamp,
            ("Date", []) => FieldType::Date,
            ("Uuid", []) => FieldType::Uuid,
            ("Vec", [inner]) if last_segment(inner).is_some_and(|s| s.ident == "u8") => {
                FieldType::Bytes
            }
            ("Vec", [inner]) => FieldType::List(Box::new(Self::from_rust_nested(inner, depth + 1))),
            // A box changes where a value lives, not what it is: the
            // declarations box the fields that close a recursive type.
            ("Box", [inner]) => Self::from_rust_nested(inner, depth + 1),
            ("BTreeMap", [_, v]) => FieldType::Map(Box::new(Self::from_rust_nested(v, depth + 1))),
            _ => named(),
        }
    }

    /// The Rust spelling. `krate` is the path of the kvmodel facade (for
    /// `Timestamp`, `Date`, `Uuid`); `short` writes prelude names (`String`,
    /// `Vec`) for declarations people read, instead of absolute paths.
    pub fn to_rust(&self, krate: &TokenStream, short: bool) -> TokenStream {
        let (string, vec) = if short {
            (quote!(String), quote!(Vec))
        } else {
            (quote!(::std::string::String), quote!(::std::vec::Vec))
        };
        match self {
            FieldType::String => string,
            FieldType::Bool => quote!(bool),
            FieldType::I32 => quote!(i32),
            FieldType::I64 => quote!(i64),
            FieldType::U32 => quote!(u32),
            FieldType::U64 => quote!(u64),
            FieldType::F64 => quote!(f64),
            FieldType::Bytes => quote!(#vec<u8>),
            FieldType::Timestamp => quote!(#krate::Timestamp),
            FieldType::Date => quote!(#krate::Date),
            FieldType::Uuid => quote!(#krate::Uuid),
            FieldType::List(t) => {
                let t = t.to_rust(krate, short);
                quote!(#vec<#t>)
            }
            FieldType::Map(t) => {
                let t = t.to_rust(krate, short);
                quote!(::std::collections::BTreeMap<#string, #t>)
            }
            FieldType::Named(t) => quote!(#t),
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.schema_name())
    }
}

fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn generic_args(seg: &syn::PathSegment) -> Vec<&syn::Type> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
