//! Snapshots of derive expansions, one per input file in `tests/expand/`.
//! Update with `INSTA_UPDATE=always cargo test`.

use std::collections::{BTreeMap, BTreeSet};

use quote::ToTokens;

/// Expands every `#[derive(KvEntity)]` / `#[derive(KvCounter)]` /
/// `#[derive(KvEnum)]` item of a file
/// and pretty-prints the result.
fn expand_file(source: &str) -> String {
    let file = syn::parse_file(source).expect("test input parses");
    let mut items = Vec::new();
    for item in &file.items {
        let derives = |attrs: &[syn::Attribute], name: &str| {
            attrs.iter().any(|a| {
                a.path().is_ident("derive") && a.to_token_stream().to_string().contains(name)
            })
        };
        let (tokens, attrs) = match item {
            syn::Item::Struct(s) => (s.to_token_stream(), &s.attrs),
            syn::Item::Enum(e) => (e.to_token_stream(), &e.attrs),
            _ => continue,
        };
        let out = if derives(attrs, "KvEntity") {
            kvmodel_codegen::derive_entity(tokens)
        } else if derives(attrs, "KvCounter") {
            kvmodel_codegen::derive_counter(tokens)
        } else if derives(attrs, "KvEnum") {
            kvmodel_codegen::derive_enum(tokens)
        } else {
            continue;
        };
        let parsed: syn::File = syn::parse2(out).expect("expansion parses as items");
        items.extend(parsed.items);
    }
    prettyplease::unparse(&syn::File {
        shebang: None,
        frontmatter: None,
        attrs: Vec::new(),
        items,
    })
}

#[test]
fn expansions() {
    insta::glob!("expand/*.rs", |path| {
        let source = std::fs::read_to_string(path).unwrap();
        insta::assert_snapshot!(expand_file(&source));
    });
}

/// A public method as callers see it.
#[derive(Debug, PartialEq)]
struct Sig {
    asyncness: bool,
    /// The receiver, then each parameter's type; `None` for a type the
    /// stand-in leaves open (`__A0`).
    inputs: Vec<Option<String>>,
    output: String,
}

/// The public methods an expansion declares, by type and name.
fn api(tokens: proc_macro2::TokenStream) -> BTreeMap<(String, String), Sig> {
    let file: syn::File = syn::parse2(tokens).expect("expansion parses as items");
    let mut api = BTreeMap::new();
    for item in &file.items {
        let syn::Item::Impl(imp) = item else { continue };
        if imp.trait_.is_some() {
            continue;
        }
        let syn::Type::Path(ty) = &*imp.self_ty else {
            continue;
        };
        let ty = ty.path.segments.last().unwrap().ident.to_string();
        for f in &imp.items {
            let syn::ImplItem::Fn(f) = f else { continue };
            if matches!(f.vis, syn::Visibility::Inherited) {
                continue;
            }
            let open: BTreeSet<String> = f
                .sig
                .generics
                .type_params()
                .map(|p| p.ident.to_string())
                .filter(|p| p.starts_with("__A"))
                .collect();
            let inputs = f
                .sig
                .inputs
                .iter()
                .map(|i| match i {
                    syn::FnArg::Receiver(r) => Some(r.to_token_stream().to_string()),
                    syn::FnArg::Typed(t) => {
                        Some(t.ty.to_token_stream().to_string()).filter(|t| !open.contains(t))
                    }
                })
                .collect();
            let sig = Sig {
                asyncness: f.sig.asyncness.is_some(),
                inputs,
                output: f.sig.output.to_token_stream().to_string(),
            };
            let name = f.sig.ident.to_string();
            assert!(api.insert((ty.clone(), name), sig).is_none());
        }
    }
    api
}

/// The stand-in beside the errors of an entity declares the very API its
/// expansion would: for every entity of every fixture, the same public
/// methods on the same types, with the same parameters (those typed after
/// the model left open) and return types. Code using any of them then
/// compiles against the stand-in, and the derive's errors stay the only
/// ones.
#[test]
fn stub_declares_the_expanded_api() {
    insta::glob!("expand/*.rs", |path| {
        let source = std::fs::read_to_string(path).unwrap();
        let file = syn::parse_file(&source).unwrap();
        for item in &file.items {
            let syn::Item::Struct(s) = item else { continue };
            let mut diags = kvmodel_codegen::Diagnostics::new();
            let input: syn::DeriveInput = syn::parse2(s.to_token_stream()).unwrap();
            let Some(entity) = kvmodel_codegen::attr::parse_derive(&input, &mut diags) else {
                continue;
            };
            kvmodel_codegen::check::check_entity(&entity, None, &mut diags);
            if diags.has_errors() || entity.key.is_none() {
                continue;
            }
            let real = api(kvmodel_codegen::expand::expand_entity(&entity));
            let stub = api(kvmodel_codegen::expand::expand_stub(
                &entity,
                proc_macro2::TokenStream::new(),
            ));
            assert_eq!(
                real.keys().collect::<Vec<_>>(),
                stub.keys().collect::<Vec<_>>(),
                "{}: the public methods",
                s.ident
            );
            for (method, real) in &real {
                let stub = &stub[method];
                let open = |(r, s): (&Option<String>, &Option<String>)| s.is_none() || r == s;
                assert!(
                    real.asyncness == stub.asyncness
                        && real.output == stub.output
                        && real.inputs.len() == stub.inputs.len()
                        && real.inputs.iter().zip(&stub.inputs).all(open),
                    "{}: `{}::{}` is {real:?} but its stand-in {stub:?}",
                    s.ident,
                    method.0,
                    method.1
                );
            }
        }
    });
}

#[test]
fn expansion_is_deterministic() {
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand/shop.rs"),
    )
    .unwrap();
    assert_eq!(expand_file(&source), expand_file(&source));
}
