//! The runtime's public surface stays what a store implementer needs: its
//! only public modules are `error`, `store`, `conformance` and the hidden
//! `__private`, and `__private` only re-exports (what kvmodel's own crates
//! use of the crate-private modules), so no logic hides in it.

use std::path::Path;

use super::layers::{Token, tokens};

/// The modules `kvmodel-runtime/src/lib.rs` may declare `pub mod`.
const PUBLIC_MODULES: &[&str] = &["error", "store", "conformance", "__private"];

fn runtime_source(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../kvmodel-runtime/src")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token::Ident(s)) => Some(s),
        _ => None,
    }
}

/// The names `src` declares `pub mod` (not `pub(crate) mod` and the like).
fn public_modules(src: &str) -> Vec<String> {
    let toks = tokens(src);
    toks.windows(3)
        .filter(|w| ident(w.first()) == Some("pub") && ident(w.get(1)) == Some("mod"))
        .filter_map(|w| ident(w.get(2)).map(str::to_owned))
        .collect()
}

/// Where `toks[i..]` holds something other than attributes, `pub use …;`
/// and `pub mod name { … }` blocks of the same: a description of the first
/// such item, and the index after the block that was read.
fn not_a_reexport(toks: &[Token], mut i: usize, in_block: bool) -> Result<usize, String> {
    while i < toks.len() {
        match &toks[i] {
            Token::Punct('}') if in_block => return Ok(i + 1),
            Token::Punct('#') => {
                // An attribute: skip its brackets.
                let mut depth = 0;
                i += 1;
                while i < toks.len() {
                    match toks[i] {
                        Token::Punct('[') => depth += 1,
                        Token::Punct(']') => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            Token::Ident(p) if p == "pub" && ident(toks.get(i + 1)) == Some("use") => {
                while i < toks.len() && toks[i] != Token::Punct(';') {
                    i += 1;
                }
                i += 1;
            }
            Token::Ident(p)
                if p == "pub"
                    && ident(toks.get(i + 1)) == Some("mod")
                    && toks.get(i + 3) == Some(&Token::Punct('{')) =>
            {
                i = not_a_reexport(toks, i + 4, true)?;
            }
            _ => {
                let item: Vec<String> = toks[i..toks.len().min(i + 4)]
                    .iter()
                    .map(|t| match t {
                        Token::Ident(s) => s.clone(),
                        Token::PathSep => "::".to_owned(),
                        Token::Punct(c) => c.to_string(),
                    })
                    .collect();
                return Err(item.join(" "));
            }
        }
    }
    Ok(i)
}

#[test]
fn the_runtime_keeps_its_internals_private() {
    let found = public_modules(&runtime_source("lib.rs"));
    let extra: Vec<&String> = found
        .iter()
        .filter(|m| !PUBLIC_MODULES.contains(&m.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "kvmodel-runtime/src/lib.rs declares `pub mod` {extra:?}: make the module `pub(crate)` \
         and re-export from `__private` (kvmodel-runtime/src/private.rs) what kvmodel's own \
         crates need of it"
    );
    assert!(
        found.iter().any(|m| m == "__private"),
        "lib.rs declares no `pub mod __private`: {found:?}"
    );
}

#[test]
fn the_private_facade_only_reexports() {
    let src = runtime_source("private.rs");
    if let Err(item) = not_a_reexport(&tokens(&src), 0, false) {
        panic!(
            "kvmodel-runtime/src/private.rs holds `{item} …`, which is not a re-export: move it \
             to the lowest module that needs it and re-export it"
        );
    }
}

/// The checks themselves: they tell a public module from a crate-private
/// one and a re-export from logic, comments and attributes aside.
#[test]
fn the_checks_read_declarations_and_items() {
    let lib = "//! pub mod docs;\npub mod store;\npub(crate) mod engine;\n#[doc(hidden)]\n\
               pub mod __private;\nmod exec;\nconst S: &str = \"pub mod text;\";";
    assert_eq!(public_modules(lib), ["store", "__private"]);

    let only_uses = "//! Docs.\n// A group.\npub use crate::a::{B, c as d};\n#[cfg(x)]\n\
                     pub use e;\n/// Docs.\npub mod f {\n    pub use crate::g::H;\n}\n";
    assert_eq!(
        not_a_reexport(&tokens(only_uses), 0, false),
        Ok(tokens(only_uses).len())
    );

    let with_fn = "pub use crate::a::B;\npub fn helper() {}\n";
    assert_eq!(
        not_a_reexport(&tokens(with_fn), 0, false),
        Err("pub fn helper (".to_owned())
    );
    let nested_macro = "pub mod f {\n    pub use crate::g::H;\n    macro_rules! m { () => {} }\n}";
    assert_eq!(
        not_a_reexport(&tokens(nested_macro), 0, false),
        Err("macro_rules ! m {".to_owned())
    );
}
