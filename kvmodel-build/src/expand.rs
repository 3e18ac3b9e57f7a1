//! `kvmodel expand`: the declarations with every derive expanded, as one
//! compilable, formatted file for review.

use quote::ToTokens;

use kvmodel_codegen::ir::Model;

fn strip_kv(attrs: &mut Vec<syn::Attribute>) -> Option<&'static str> {
    let mut which = None;
    attrs.retain(|a| !a.path().is_ident("kv"));
    for a in attrs.iter_mut().filter(|a| a.path().is_ident("derive")) {
        let Ok(paths) = a.parse_args_with(
            syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
        ) else {
            continue;
        };
        let kept: Vec<&syn::Path> = paths
            .iter()
            .filter(|p| match p.segments.last().map(|s| s.ident.to_string()) {
                Some(n) if n == "KvEntity" => {
                    which = Some("entity");
                    false
                }
                Some(n) if n == "KvCounter" => {
                    which = Some("counter");
                    false
                }
                Some(n) if n == "KvEnum" => {
                    which = Some("enum");
                    false
                }
                _ => true,
            })
            .collect();
        *a = syn::parse_quote!(#[derive(#(#kept),*)]);
    }
    which
}

/// The fully expanded code of a model.
pub fn expand(model: &Model) -> Result<String, syn::Error> {
    let mut items = crate::declare::print(model)?;
    let mut expansions = Vec::new();
    for item in &mut items {
        let (tokens, which) = match item {
            syn::Item::Struct(s) => {
                let tokens = s.to_token_stream();
                (tokens, strip_kv(&mut s.attrs))
            }
            syn::Item::Enum(e) => {
                let tokens = e.to_token_stream();
                (tokens, strip_kv(&mut e.attrs))
            }
            _ => continue,
        };
        let out = match which {
            Some("entity") => kvmodel_codegen::derive_entity(tokens),
            Some("counter") => kvmodel_codegen::derive_counter(tokens),
            Some(_) => kvmodel_codegen::derive_enum(tokens),
            None => continue,
        };
        let parsed: syn::File = syn::parse2(out)?;
        expansions.extend(parsed.items);
    }
    items.extend(expansions);
    Ok(crate::declare::file(items))
}
