//! The crates' modules form layers: no module imports, directly or through
//! others, a module that imports it back. Checked on the module graph of
//! every workspace crate's `src/`, with modules grouped at depth 1
//! (`engine`) and at depth 2 (`engine::repo`): an edge is a `use crate::…`,
//! a `crate::…` path or a `super::…` path outside comments, string
//! literals and `#[cfg(test)]` items, from one module to another that is
//! neither inside it nor around it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module graph: each module (`a::b`) and the modules it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// One crate's source: each file's path under its root directory (the
/// directory of `lib.rs` or `main.rs`) and its text.
type Files = Vec<(PathBuf, String)>;

/// The module path of the file at `rel` (`engine/walk/mod.rs` is
/// `engine::walk`; `lib.rs` and `main.rs` are the root, `[]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

/// A token of Rust source with comments, literals and whitespace gone:
/// identifiers (and keywords), `::`, and single punctuation characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The tokens of `src`, skipping comments, string, byte-string, raw-string
/// and character literals.
pub(crate) fn tokens(src: &str) -> Vec<Token> {
    let s: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&s, i + 1);
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && raw_string_start(&s, i + usize::from(c == 'b') + 1).is_some()
        {
            let at = i + usize::from(c == 'b') + 1;
            let hashes = raw_string_start(&s, at).unwrap_or(0);
            i = at + hashes + 1;
            loop {
                if i >= s.len() {
                    break;
                }
                if s[i] == '"'
                    && s[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
        } else if c == 'b' && next == Some('"') {
            i = skip_string(&s, i + 2);
        } else if c == '\'' {
            // A character literal (`'x'`, `'\n'`, `b'x'` came through `b`
            // as an identifier) or a lifetime (`'a`), which has no closing quote.
            if next == Some('\\') {
                i += 3;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if s.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(s[start..i].iter().collect()));
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// The index just past the closing quote of a string whose text starts at `i`.
fn skip_string(s: &[char], mut i: usize) -> usize {
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The number of `#`s of a raw string whose `r` is just before `i`, when
/// one starts there.
fn raw_string_start(s: &[char], i: usize) -> Option<usize> {
    let hashes = s[i.min(s.len())..]
        .iter()
        .take_while(|&&c| c == '#')
        .count();
    (s.get(i + hashes) == Some(&'"')).then_some(hashes)
}

/// `toks` without the items marked `#[cfg(test)]`, and the names of the
/// file modules among them (`#[cfg(test)] mod tests;`).
fn without_test_items(toks: &[Token]) -> (Vec<Token>, Vec<String>) {
    let cfg_test = [
        Token::Punct('#'),
        Token::Punct('['),
        Token::Ident("cfg".into()),
        Token::Punct('('),
        Token::Ident("test".into()),
        Token::Punct(')'),
        Token::Punct(']'),
    ];
    let mut out = Vec::new();
    let mut test_files = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !toks[i..].starts_with(&cfg_test) {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        i += cfg_test.len();
        // The item ends at a `;` outside brackets or at the `}` closing
        // its first brace.
        let mut depth = 0i32;
        let start = i;
        while i < toks.len() {
            match toks[i] {
                Token::Punct('{' | '(' | '[') => depth += 1,
                Token::Punct('}' | ')' | ']') => {
                    depth -= 1;
                    if depth == 0 && toks[i] == Token::Punct('}') {
                        i += 1;
                        break;
                    }
                }
                Token::Punct(';') if depth == 0 => {
                    if let [.., Token::Ident(m), Token::Ident(name)] = &toks[start..i]
                        && m == "mod"
                    {
                        test_files.push(name.clone());
                    }
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    (out, test_files)
}

/// Every path `toks` names from `crate::` or `super::`, as `(supers, path)`:
/// how many `super`s it climbs (`None` for a `crate::` path) and the
/// segments after them. A `use` tree (`crate::{a::{b, c}, d}`) gives one
/// path per leaf (`self` names its parent).
fn paths(toks: &[Token]) -> Vec<(Option<usize>, Vec<String>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let after_sep = i > 0 && toks[i - 1] == Token::PathSep;
        let Token::Ident(head) = &toks[i] else {
            i += 1;
            continue;
        };
        if after_sep
            || !(head == "crate" || head == "super")
            || toks.get(i + 1) != Some(&Token::PathSep)
        {
            i += 1;
            continue;
        }
        let mut supers = None;
        if head == "super" {
            let mut n = 0;
            while toks.get(i) == Some(&Token::Ident("super".into()))
                && toks.get(i + 1) == Some(&Token::PathSep)
            {
                n += 1;
                i += 2;
            }
            supers = Some(n);
        } else {
            i += 2;
        }
        let mut leaves = Vec::new();
        i = use_tree(toks, i, Vec::new(), &mut leaves);
        out.extend(leaves.into_iter().map(|p| (supers, p)));
    }
    out
}

/// Reads the path or use tree starting at `i` below `base`, pushing its
/// leaves; returns the index after it.
fn use_tree(
    toks: &[Token],
    mut i: usize,
    mut base: Vec<String>,
    leaves: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match toks.get(i) {
            Some(Token::Ident(seg)) => {
                if seg != "self" {
                    base.push(seg.clone());
                }
                i += 1;
                if toks.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                leaves.push(base);
                return i;
            }
            Some(Token::Punct('{')) => {
                i += 1;
                while i < toks.len() && toks[i] != Token::Punct('}') {
                    if toks[i] == Token::Punct(',') {
                        i += 1;
                        continue;
                    }
                    let before = i;
                    i = use_tree(toks, i, base.clone(), leaves);
                    // Skip what a leaf may carry (`as name`, `*`).
                    while i < toks.len() && !matches!(toks[i], Token::Punct(',' | '}')) {
                        i += 1;
                    }
                    if i == before {
                        i += 1;
                    }
                }
                return i + 1;
            }
            _ => {
                if !base.is_empty() {
                    leaves.push(base);
                }
                return i;
            }
        }
    }
}

/// The module graph of one crate, its modules grouped at `depth`.
fn module_graph(files: &Files, depth: usize) -> Graph {
    let mut kept = Vec::new();
    let mut test_modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for (rel, text) in files {
        let (toks, test_files) = without_test_items(&tokens(text));
        let module = module_of(rel);
        for name in test_files {
            let mut m = module.clone();
            m.push(name);
            test_modules.insert(m);
        }
        kept.push((module, toks));
    }
    let is_test = |m: &[String]| (1..=m.len()).any(|n| test_modules.contains(&m[..n]));
    kept.retain(|(m, _)| !is_test(m));
    let modules: BTreeSet<Vec<String>> = kept.iter().map(|(m, _)| m.clone()).collect();
    let group = |p: &[String]| -> Option<String> {
        (1..=depth.min(p.len()))
            .rev()
            .find(|&n| modules.contains(&p[..n]))
            .map(|n| p[..n].join("::"))
    };
    let mut graph = Graph::new();
    for (module, toks) in &kept {
        let Some(from) = group(module) else { continue };
        for (supers, path) in paths(toks) {
            let mut full = match supers {
                None => Vec::new(),
                Some(n) => module[..module.len().saturating_sub(n)].to_vec(),
            };
            full.extend(path);
            let Some(to) = group(&full) else { continue };
            let nested = |a: &str, b: &str| b.starts_with(&format!("{a}::"));
            if to != from && !nested(&from, &to) && !nested(&to, &from) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// The strongly connected components of more than one module: each a cycle
/// of imports, its modules sorted.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    // Two modules are in one component when each reaches the other.
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in graph.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut placed = BTreeSet::new();
    let mut out = Vec::new();
    for (m, from_m) in &reached {
        if placed.contains(*m) || !from_m.contains(*m) {
            continue;
        }
        let component: Vec<String> = from_m
            .iter()
            .filter(|n| reached.get(n).is_some_and(|r| r.contains(*m)))
            .cloned()
            .collect();
        placed.extend(component.iter().cloned());
        out.push(component);
    }
    out
}

/// The `.rs` files under `dir`, by path relative to `dir`, leaving out
/// `bin/` (each binary there is a crate of its own).
fn read_tree(dir: &Path, rel: &Path, out: &mut Files) {
    let mut entries: Vec<_> = std::fs::read_dir(dir.join(rel))
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.join(rel).display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_owned();
        let rel = rel.join(&name);
        if path.is_dir() {
            if rel != Path::new("bin") {
                read_tree(dir, &rel, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// The workspace's member crates, from its `Cargo.toml`.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let list = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("the workspace manifest lists its members")
        .0;
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crates = members(&root);
    assert!(crates.iter().any(|c| c == "kvmodel-runtime"), "{crates:?}");
    let mut found = Vec::new();
    for krate in &crates {
        let src = root.join(krate).join("src");
        let mut files = Files::new();
        read_tree(&src, Path::new(""), &mut files);
        assert!(
            !files.is_empty(),
            "{krate} has no source under {}",
            src.display()
        );
        for depth in [1, 2] {
            for cycle in cycles(&module_graph(&files, depth)) {
                found.push(format!("{krate} (depth {depth}): {}", cycle.join(", ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "these modules import each other, directly or through one another; move what they \
         share to a module below them:\n{}",
        found.join("\n")
    );
}

/// A small crate in memory: `a` and `b` import each other through every
/// form the check reads, and `c` only seems to import `a` (in a comment, a
/// string and a test module), so only `a` and `b` form a cycle.
#[test]
fn the_check_finds_a_cycle_and_ignores_comments_strings_and_tests() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_owned());
    let files = vec![
        file(
            "lib.rs",
            "pub mod a;\npub mod b;\npub mod c;\npub(crate) fn f() {}",
        ),
        file(
            "a/mod.rs",
            "mod inner;\nuse crate::{c::Z, b::{self as bee}};\n",
        ),
        file("a/inner.rs", "pub fn g() -> super::super::c::Z { todo() }"),
        file(
            "b.rs",
            "pub(crate) struct Y;\nfn h() { let _ = crate::a::inner::g(); }\nconst S: &str = r#\"crate::c\"#;",
        ),
        file(
            "c.rs",
            "pub struct Z;\n// use crate::a::X;\n/* crate::b::Y */\nconst T: &str = \"crate::a\";\n\
             fn lifetime<'a>(x: &'a str) -> char { '\"' }\n\
             #[cfg(test)]\nmod tests {\n    use crate::a::X;\n}\n#[cfg(test)]\nmod more;\n",
        ),
        file("c/more.rs", "use crate::b::Y;"),
    ];
    let depth1 = module_graph(&files, 1);
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(depth1.get("a"), Some(&names(&["b", "c"])), "{depth1:?}");
    assert_eq!(depth1.get("b"), Some(&names(&["a"])), "{depth1:?}");
    assert_eq!(depth1.get("c"), None, "{depth1:?}");
    assert_eq!(cycles(&depth1), vec![vec!["a".to_owned(), "b".to_owned()]]);

    // At depth 2 `a::inner` is a module of its own: the cycle goes through it.
    let depth2 = module_graph(&files, 2);
    assert_eq!(depth2.get("a::inner"), Some(&names(&["c"])), "{depth2:?}");
    assert_eq!(depth2.get("b"), Some(&names(&["a::inner"])), "{depth2:?}");
    assert_eq!(cycles(&depth2), Vec::<Vec<String>>::new(), "{depth2:?}");

    // Once `inner` names `b` (with an escaped quote before it, so a
    // character literal cannot hide it), the two form a cycle.
    let mut looped = files.clone();
    looped[2]
        .1
        .push_str("\nconst Q: char = '\\'';\nuse super::super::b::Y;");
    let found = cycles(&module_graph(&looped, 2));
    assert_eq!(found, vec![vec!["a::inner".to_owned(), "b".to_owned()]]);
}
