//! The declared form of constructs the example schemas do not use: every
//! kind of migration value, descriptions everywhere, several migration
//! steps. Printing and reading back gives the same model.

fn round_trip(source: &str) -> String {
    let schema = kvmodel_build::load("case.yaml", source);
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    let declared = kvmodel_build::declare::declare(&schema.model).unwrap();
    let file = syn::parse_file(&declared).unwrap();
    let mut diags = kvmodel_codegen::Diagnostics::new();
    let read = kvmodel_build::declare::read(&file, &mut diags);
    assert!(diags.as_slice().is_empty(), "{:?}", diags.as_slice());
    assert_eq!(read, schema.model);
    declared
}

const SCHEMA: &str = r#"
kvmodel: 1
namespace: app
entities:
  Account:
    description: |
      An account.

      It has  two paragraphs, and   spaces.
    key: "account:{id}"
    version: 3
    fields:
      id: { type: string, description: The id. }
      owner: { type: Person, optional: true }
      scores: list<i64>
      ratio: { type: f64, optional: true }
      labels: map<string, string>
      people: list<Person>
      state: State
    indexes:
      by_state: { fields: [state], description: "Accounts of one state." }
      by_owner: { fields: [id], unique: true, description: Unique. }
    counters:
      total: { description: "Every account." }
    migrations:
      - from: 1
        add:
          owner: { name: Ada, "e-mail": ada@example.com, age: 36 }
          scores: [-3, 0, 9223372036854775807, -9223372036854775808]
          ratio: -0.25
          labels: {}
          people: [{ name: A, age: 1 }, { name: B, age: 2, tags: [x, "y z"] }]
      - from: 2
        add: { state: on_hold, ratio: ~ }
  Note:
    key: "note:{id}"
    fields: { id: string, account: string }
    relations:
      account: { belongs_to: Account, by: account, description: "Notes of an account." }
types:
  Person:
    description: Someone.
    fields:
      name: { type: string, description: Their name. }
      age: u32
      email: { type: string, optional: true }
      tags: { type: list<string>, default: [] }
  State: { enum: [open, on_hold], description: Where an account stands. }
"#;

#[test]
fn every_value_and_description_round_trips() {
    let declared = round_trip(SCHEMA);
    // A construct's description goes inside its attribute (onto the
    // repository methods that read it), not onto the struct's docs.
    assert!(declared.contains("description = \"Accounts of one state.\""));
    assert!(!declared.contains("/// Accounts of one state."));
    assert!(declared.contains("description = \"Notes of an account.\""));
    assert!(!declared.contains("/// Notes of an account."));
    assert!(declared.contains("/// The id.\n    pub id: String,"));
    assert!(declared.contains("///\n/// It has  two paragraphs, and   spaces.\n"));
}

/// Clippy's `duplicated_attributes` reads quoted names' attributes as meta
/// items: entities where two of them share a part (`unique`, `from = N`)
/// carry its allowance, the others do not.
#[test]
fn the_clippy_allowance_goes_where_attributes_share_a_part() {
    let declared = round_trip(
        r#"
kvmodel: 1
namespace: app
entities:
  Both:
    key: "both:{id}"
    fields: { id: string, a: string, b: string }
    indexes:
      by_a: { fields: [a], unique: true }
      by_b: { fields: [b], unique: true }
  Steps:
    key: "steps:{id}"
    version: 3
    fields: { id: string, a: string, n: i64 }
    migrations:
      - { from: 1, add: { a: x } }
      - { from: 2, add: { n: 1 } }
  Apart:
    key: "apart:{id}"
    version: 3
    fields: { id: string, a: string, b: string, n: i64 }
    indexes:
      by_a: { fields: [a], unique: true }
      by_b: { fields: [b], order_by: n }
    migrations:
      - { from: 1, add: { a: x } }
      - { from: 2, add: { n: -1 } }
"#,
    );
    let allowed: Vec<&str> = declared
        .split("pub struct ")
        .skip(1)
        .filter_map(|item| {
            let name = item.split_whitespace().next()?;
            // The allowance sits in the attributes before the struct: at
            // the end of the previous piece.
            let before = &declared[..declared.find(&format!("pub struct {name} "))?];
            let attrs = &before[before.rfind("#[derive(")?..];
            attrs
                .contains("#[allow(clippy::duplicated_attributes)]")
                .then_some(name)
        })
        .collect();
    assert_eq!(allowed, ["Both", "Steps"], "{declared}");
    assert!(
        declared.contains(r#"index(name = "by_a", fields(a), unique)"#),
        "{declared}"
    );
}

#[test]
fn names_written_as_yaml_1_1_words_round_trip() {
    let declared = round_trip(include_str!("../scalars/names.yaml"));
    assert!(declared.contains("rename(x = on, yes = no)"), "{declared}");
}

/// `feed:` reads from YAML, prints as `feed(retain = …)` and reads back;
/// a `feed` without `retain` or with a bad duration is an error.
#[test]
fn a_change_feed_round_trips() {
    let declared = round_trip(
        r#"
kvmodel: 1
namespace: app
entities:
  Order:
    key: "order:{id}"
    feed: { retain: 7d }
    fields:
      id: string
"#,
    );
    assert!(declared.contains(r#"feed(retain = "7d")"#), "{declared}");
    for (feed, want) in [("{}", "`retain`"), ("{ retain: soon }", "soon")] {
        let source = format!(
            "kvmodel: 1\nnamespace: app\nentities:\n  Order:\n    key: \"order:{{id}}\"\n    \
             feed: {feed}\n    fields:\n      id: string\n"
        );
        let schema = kvmodel_build::load("case.yaml", &source);
        let text = schema.render_diagnostics(false);
        assert!(schema.has_errors() && text.contains(want), "{text}");
    }
}
