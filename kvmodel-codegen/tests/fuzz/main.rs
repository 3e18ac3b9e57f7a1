//! Fuzz targets of the derive front-end: derive input text parsed as a
//! `syn::DeriveInput`, then through `derive_entity` and `derive_enum`.
//! Whatever the input, the derive returns tokens that parse as items (the
//! expansion, or errors with a stub), never a panic.
//!
//! `derive_text` takes arbitrary text; its corpus
//! (`tests/fuzz/__fuzz__/derive_text/corpus`) holds the structs and enums
//! of the expansion snapshots and the UI tests. `derive_attrs` assembles
//! structs from the attribute vocabulary and mutates them token by token.
//! docs/testing.md says how to run either for longer.

use std::fmt::Write as _;
use std::time::Duration;

use bolero::{TypeGenerator, check};

const BUDGET: Duration = Duration::from_secs(2);

/// Inputs larger than this are skipped: the derive's time is linear in its
/// input, and the point is the shape, not the size.
const MAX_INPUT: usize = 16 * 1024;

/// Runs both derives on `source` when it is a derive input.
fn derive(source: &str) {
    if source.len() > MAX_INPUT {
        return;
    }
    let Ok(input) = syn::parse_str::<syn::DeriveInput>(source) else {
        return;
    };
    let tokens = quote::ToTokens::to_token_stream(&input);
    for (which, out) in [
        ("entity", kvmodel_codegen::derive_entity(tokens.clone())),
        ("enum", kvmodel_codegen::derive_enum(tokens)),
    ] {
        if let Err(e) = syn::parse2::<syn::File>(out.clone()) {
            panic!("the {which} derive returned tokens that are not items ({e}):\n{out}");
        }
    }
}

#[test]
fn derive_text() {
    check!(name = "derive_text")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| {
            if let Ok(s) = std::str::from_utf8(bytes) {
                derive(s);
            }
        });
}

/// Entity-level `#[kv(…)]` arguments, one per construct, with typical and
/// edge values.
const ENTITY_ARGS: &[&str] = &[
    r#"namespace = "shop""#,
    r#"namespace = "Bad Name""#,
    r#"key = "user:{id}""#,
    r#"key = "t:{a}:n:{id}""#,
    r#"key = "{id}""#,
    r#"key = "x:{id""#,
    r#"key = "x:{}""#,
    "version = 2",
    "version = 4294967295",
    "version = 0",
    r#"encoding = "msgpack""#,
    r#"encoding = "json""#,
    r#"encoding = "protobuf""#,
    r#"ttl = "30m""#,
    r#"ttl = "0s""#,
    r#"ttl = "99999999999999999999d""#,
    r#"ttl_jitter = "10%""#,
    r#"ttl_jitter = "150%""#,
    "colocate = a",
    r#"crate = "::kvmodel""#,
    "crate = ::kvmodel",
    "migrate_from = UserV1",
    "migrate_from = Vec<u8>",
    r#"index(name = "by_a", fields(a), order_by = at)"#,
    r#"index(name = "by_a", fields(a, day(at)), order_by = hour(at), since = 2)"#,
    r#"index(name = "by_u", fields(a), unique, normalize = "lowercase")"#,
    r#"index(fields(), order_by = month(at))"#,
    r#"counter(name = "total")"#,
    r#"counter(name = "by_a", group_by(a, day(at)), since = 2)"#,
    r#"counter(name = "sum_n", sum = n, group_by(a))"#,
    r#"counter(name = "c", sum = at)"#,
    r#"relation(name = "owner", belongs_to = User, by = a, order_by = at)"#,
    r#"relation(name = "owner", belongs_to = crate::x::User<T>, by = a)"#,
    r#"migration(from = 1, rename(full_name = a), add(n = 3), remove(legacy))"#,
    r#"migration(from = 1, add(tags = [], m = {}, opt = null, f = -1.5))"#,
    r#"migration(from = 2, add(a = "x"))"#,
    "unknown_key = 1",
    "index",
    "counter()",
];

/// Field-level `#[kv(…)]` arguments.
const FIELD_ARGS: &[&str] = &[
    "unique",
    r#"unique, normalize = "lowercase""#,
    r#"index, order_by = at"#,
    r#"unique, name = "by_x""#,
    "since = 2",
    r#"normalize = "upper""#,
    "order_by = day(at)",
];

/// Field types, with the ones a key, an index and a counter refuse.
const TYPES: &[&str] = &[
    "String",
    "u32",
    "i64",
    "u64",
    "f64",
    "bool",
    "Vec<u8>",
    "Timestamp",
    "Date",
    "Uuid",
    "Option<String>",
    "Option<u32>",
    "Vec<String>",
    "std::collections::BTreeMap<String, i64>",
    "Status",
    "(i32, i32)",
    "[u8; 4]",
    "&'a str",
    "T",
    "Option<Vec<Option<u8>>>",
    "fn()",
];

/// Field names: the ones the arguments above mention, and awkward ones.
const NAMES: &[&str] = &[
    "id", "a", "n", "at", "tags", "m", "opt", "f", "legacy", "r#type", "self_", "_x", "é",
];

/// Tokens a mutation puts in place of another.
const TOKENS: &[&str] = &[
    "=",
    ",",
    "(",
    ")",
    "()",
    "\"\"",
    "\"x\"",
    "0",
    "-1",
    "1.5",
    "99999999999999999999",
    "b\"x\"",
    "'c'",
    "true",
    "a::b",
    "day(at)",
    "hour(a)",
    "month(at)",
    "[]",
    "{}",
    "#",
    "id",
    "unique",
    "name",
    "fields",
    "since",
    "index",
    "key",
    "\"{id}\"",
    "r#type",
    "_",
    "..",
    "Self",
];

#[derive(Debug, TypeGenerator)]
struct Field {
    name: u8,
    ty: u8,
    args: Vec<u8>,
}

#[derive(Debug, TypeGenerator)]
enum Mutation {
    /// Replaces the nth token of the text with a vocabulary token.
    Replace(u16, u8),
    /// Inserts a vocabulary token before the nth token.
    Insert(u16, u8),
    /// Removes the nth token.
    Remove(u16),
}

#[derive(Debug, TypeGenerator)]
struct Item {
    is_enum: bool,
    generics: bool,
    attrs: Vec<Vec<u8>>,
    fields: Vec<Field>,
    mutations: Vec<Mutation>,
}

fn pick<'a>(list: &[&'a str], i: impl Into<usize>) -> &'a str {
    list[i.into() % list.len()]
}

/// The item's text, then its mutations applied to a whitespace-separated
/// token list (delimiters stay balanced only by chance, which is the point:
/// what does not parse as a derive input is skipped).
fn text(item: &Item) -> String {
    let mut s = String::from("#[derive(KvEntity)]\n");
    for attr in item.attrs.iter().take(8) {
        let args: Vec<&str> = attr.iter().take(6).map(|i| pick(ENTITY_ARGS, *i)).collect();
        let _ = writeln!(s, "#[kv({})]", args.join(", "));
    }
    let generics = if item.generics { "<'a, T: Clone>" } else { "" };
    if item.is_enum {
        let _ = writeln!(
            s,
            "pub enum Status{generics} {{ Active, Gone(u8), Other {{ x: u8 }} }}"
        );
    } else {
        let _ = writeln!(s, "pub struct Thing{generics} {{");
        for f in item.fields.iter().take(12) {
            if !f.args.is_empty() {
                let args: Vec<&str> = f
                    .args
                    .iter()
                    .take(3)
                    .map(|i| pick(FIELD_ARGS, *i))
                    .collect();
                let _ = writeln!(s, "    #[kv({})]", args.join(", "));
            }
            let _ = writeln!(s, "    pub {}: {},", pick(NAMES, f.name), pick(TYPES, f.ty));
        }
        s.push('}');
    }
    let mut tokens: Vec<String> = s
        .replace('(', " ( ")
        .replace(')', " ) ")
        .replace(',', " , ")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    for m in item.mutations.iter().take(4) {
        let at = |i: u16, extra: usize| usize::from(i) % (tokens.len() + extra).max(1);
        match *m {
            Mutation::Replace(i, t) if !tokens.is_empty() => {
                let i = at(i, 0);
                tokens[i] = pick(TOKENS, t).to_owned();
            }
            Mutation::Insert(i, t) => {
                let i = at(i, 1);
                tokens.insert(i, pick(TOKENS, t).to_owned());
            }
            Mutation::Remove(i) if !tokens.is_empty() => {
                let i = at(i, 0);
                tokens.remove(i);
            }
            _ => {}
        }
    }
    tokens.join(" ")
}

#[test]
fn derive_attrs() {
    check!(name = "derive_attrs")
        .with_test_time(BUDGET)
        .with_type::<Item>()
        .for_each(|item| derive(&text(item)));
}
