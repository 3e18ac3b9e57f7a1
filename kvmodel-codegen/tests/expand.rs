//! Snapshots of derive expansions, one per input file in `tests/expand/`.
//! Update with `INSTA_UPDATE=always cargo test`.

use quote::ToTokens;

/// Expands every `#[derive(KvEntity)]` / `#[derive(KvEnum)]` item of a file
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

#[test]
fn expansion_is_deterministic() {
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand/shop.rs"),
    )
    .unwrap();
    assert_eq!(expand_file(&source), expand_file(&source));
}
