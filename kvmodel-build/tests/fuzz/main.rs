//! Fuzz targets of the YAML front-end. Whatever the file, `load` returns
//! located diagnostics, never a panic; and a schema it accepts goes all the
//! way: its declarations parse and read back to the same model, the derive
//! accepts every declared struct (the two front-ends agree), and the
//! expanded code, the key report and a diff are produced.
//!
//! `yaml_bytes` takes arbitrary bytes; its corpus
//! (`tests/fuzz/__fuzz__/yaml_bytes/corpus`) holds the example schemas, the
//! error-snapshot schemas and every crash found. `yaml_mutations` applies
//! line and token mutations to the example schemas in `schemas/`.
//! docs/testing.md says how to run either for longer.

use std::sync::OnceLock;
use std::time::Duration;

use bolero::{TypeGenerator, check};
use kvmodel_build::keys::Format;

const BUDGET: Duration = Duration::from_secs(2);

/// Inputs larger than this are skipped: a schema is a few kilobytes, and
/// the front-end's time grows with the input, not with its shape.
const MAX_INPUT: usize = 64 * 1024;

/// Loads `source` and, when it has no errors, takes it through every later
/// stage.
fn front_end(source: &str) {
    if source.len() > MAX_INPUT {
        return;
    }
    let schema = kvmodel_build::load("fuzz.yaml", source);
    let rendered = schema.render_diagnostics(false);
    let _ = schema.render_diagnostics(true);
    let _ = schema.warning_lines();
    for d in &schema.diagnostics {
        assert!(!d.message.is_empty(), "an empty diagnostic: {d:?}");
    }
    if schema.has_errors() {
        assert!(rendered.contains("error"), "{rendered}");
        return;
    }
    let model = &schema.model;
    let declared = kvmodel_build::declare::declare(model)
        .unwrap_or_else(|e| panic!("an accepted schema does not declare: {e}"));
    let file = syn::parse_file(&declared)
        .unwrap_or_else(|e| panic!("the declarations do not parse: {e}\n{declared}"));
    let mut diags = kvmodel_codegen::Diagnostics::new();
    let read = kvmodel_build::declare::read(&file, &mut diags);
    assert!(
        diags.as_slice().is_empty(),
        "reading the declarations back reports {:?}\n{declared}",
        diags.as_slice()
    );
    assert_eq!(&read, model, "read(declare(model)) differs\n{declared}");
    let expanded = kvmodel_build::expand(model)
        .unwrap_or_else(|e| panic!("an accepted schema does not expand: {e}"));
    assert!(
        !expanded.contains("compile_error"),
        "the derive refuses what the YAML front-end accepts:\n{source}\n{expanded}"
    );
    kvmodel_build::generate(std::slice::from_ref(&schema)).expect("an accepted schema generates");
    let _ = kvmodel_build::keys::report(model, Format::Text);
    let _ = kvmodel_build::keys::report(model, Format::Markdown);
    let same = kvmodel_build::diff::diff(model, model);
    assert!(
        same.iter()
            .all(|c| c.impact == kvmodel_build::diff::Impact::Safe),
        "a schema differs from itself: {same:?}"
    );
}

#[test]
fn yaml_bytes() {
    check!(name = "yaml_bytes")
        .with_test_time(BUDGET)
        .for_each(|bytes: &[u8]| {
            if let Ok(s) = std::str::from_utf8(bytes) {
                front_end(s);
            }
        });
}

/// The example schemas, read once.
fn examples() -> &'static [String] {
    static EXAMPLES: OnceLock<Vec<String>> = OnceLock::new();
    EXAMPLES.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        paths.sort();
        let texts: Vec<String> = paths
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert!(!texts.is_empty(), "no schema in {}", dir.display());
        texts
    })
}

/// Words of the schema language, and values at and past its edges.
const WORDS: &[&str] = &[
    "string",
    "i32",
    "i64",
    "u32",
    "u64",
    "f64",
    "bool",
    "bytes",
    "timestamp",
    "uuid",
    "list<string>",
    "list<list<i64>>",
    "map<string, i64>",
    "map<i64, string>",
    "list<",
    "optional: true",
    "unique: true",
    "normalize: lowercase",
    "order_by: created_at",
    "group_by: [status]",
    "group_by: [\"day(created_at)\"]",
    "sum: total_cents",
    "day(created_at)",
    "hour(created_at)",
    "month(x)",
    "since: 2",
    "since: 0",
    "version: 3",
    "version: 4294967296",
    "ttl: { after: 30m, jitter: 10% }",
    "ttl: { after: 0ms }",
    "after: 99999999999999999999d",
    "jitter: 200%",
    "colocate: id",
    "belongs_to: User",
    "by: user_id",
    "encoding: msgpack",
    "encoding: protobuf",
    "enum: [a, b]",
    "enum: []",
    "default: active",
    "default: [1, 2]",
    "fields: {}",
    "fields: { id: string }",
    "migrations: [{ from: 1, add: { x: 1 } }]",
    "rename: { a: b }",
    "remove: [a]",
    "key: \"user:{id}\"",
    "key: \"{id}\"",
    "key: \"a:{id}:{id}\"",
    "key: \"a:{\"",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    ":",
    "- ",
    "~",
    "null",
    "0",
    "-1",
    "1e309",
    ".nan",
    "&a",
    "*a",
    "!!str",
    "!!binary",
    "? ",
    "|",
    ">",
    "#",
    "%YAML 1.2",
    "---",
    "...",
    "y",
    "no",
    "on",
    "User",
    "Order",
    "UserStatus",
    "id",
    "namespace",
    "kvmodel",
    "entities",
    "types",
    "fields",
    "indexes",
    "counters",
    "relations",
    "migrations",
    "description",
    "é",
    "\t",
    "",
];

#[derive(Debug, TypeGenerator)]
enum Mutation {
    DeleteLine(u16),
    DuplicateLine(u16),
    SwapLines(u16, u16),
    /// Moves a line from one place to another (a field into another
    /// entity, an index into `types:`).
    MoveLine(u16, u16),
    /// Replaces the nth word of a line with a word of the language.
    ReplaceWord {
        line: u16,
        word: u8,
        with: u8,
    },
    /// Inserts a word at a column of a line.
    InsertWord {
        line: u16,
        column: u8,
        word: u8,
    },
    /// Changes a line's indentation.
    Indent {
        line: u16,
        by: i8,
    },
    /// Cuts the file at a line.
    Truncate(u16),
}

#[derive(Debug, TypeGenerator)]
struct Mutated {
    schema: u8,
    mutations: Vec<Mutation>,
}

fn mutate(source: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = source.lines().map(str::to_owned).collect();
    for m in mutations.iter().take(8) {
        if lines.is_empty() {
            break;
        }
        let n = lines.len();
        let at = |i: u16| usize::from(i) % n;
        match *m {
            Mutation::DeleteLine(i) => {
                lines.remove(at(i));
            }
            Mutation::DuplicateLine(i) => {
                let line = lines[at(i)].clone();
                lines.insert(at(i), line);
            }
            Mutation::SwapLines(a, b) => lines.swap(at(a), at(b)),
            Mutation::MoveLine(a, b) => {
                let line = lines.remove(at(a));
                lines.insert(usize::from(b) % n, line);
            }
            Mutation::ReplaceWord { line, word, with } => {
                let l = &mut lines[at(line)];
                let indent = l.len() - l.trim_start().len();
                let mut words: Vec<&str> = l.split_whitespace().collect();
                if !words.is_empty() {
                    let w = usize::from(word) % words.len();
                    words[w] = WORDS[usize::from(with) % WORDS.len()];
                }
                *l = format!("{}{}", " ".repeat(indent), words.join(" "));
            }
            Mutation::InsertWord { line, column, word } => {
                let l = &mut lines[at(line)];
                let mut col = usize::from(column).min(l.len());
                while !l.is_char_boundary(col) {
                    col -= 1;
                }
                l.insert_str(col, WORDS[usize::from(word) % WORDS.len()]);
            }
            Mutation::Indent { line, by } => {
                let l = &mut lines[at(line)];
                let indent = l.len() - l.trim_start().len();
                let new = (indent as i64 + i64::from(by % 8)).max(0) as usize;
                *l = format!("{}{}", " ".repeat(new), l.trim_start());
            }
            Mutation::Truncate(i) => lines.truncate(at(i) + 1),
        }
    }
    lines.join("\n")
}

#[test]
fn yaml_mutations() {
    check!(name = "yaml_mutations")
        .with_test_time(BUDGET)
        .with_type::<Mutated>()
        .for_each(|m| {
            let examples = examples();
            let source = &examples[usize::from(m.schema) % examples.len()];
            front_end(&mutate(source, &m.mutations));
        });
}

/// The example schemas themselves pass every stage.
#[test]
fn examples_pass_every_stage() {
    for source in examples() {
        front_end(source);
    }
}
