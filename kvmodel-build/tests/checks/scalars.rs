//! YAML 1.2 core scalars: where a name or a string is expected, a plain
//! scalar's text is taken as written (`n`, `on`, `no`, `1.50`, `null`);
//! only `true`/`false` (`True`, `TRUE`, `False`, `FALSE`) are booleans.

use kvmodel_codegen::ir::{Entity, Model};
use serde_json::json;

fn load(source: &str) -> kvmodel_build::Schema {
    kvmodel_build::load("case.yaml", source)
}

fn accepted(source: &str) -> Model {
    let schema = load(source);
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    schema.model
}

fn entity<'m>(model: &'m Model, name: &str) -> &'m Entity {
    model.entities.iter().find(|e| *e.name == name).unwrap()
}

/// Fields, indexes, counters and a migration named with YAML 1.1 words.
const NAMES: &str = include_str!("../scalars/names.yaml");

#[test]
fn plain_scalars_name_fields_indexes_counters_and_migrations() {
    let model = accepted(NAMES);
    let e = entity(&model, "Thing");
    let fields: Vec<&str> = e.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        fields,
        ["id", "n", "y", "on", "off", "no", "null", "count", "state"]
    );
    let ix = &e.indexes[0];
    assert_eq!(ix.fields[0].field(), "on");
    assert!(ix.unique, "`TRUE` is a YAML 1.2 boolean");
    assert!(!e.indexes[1].unique);
    let c = &e.counters[0];
    assert_eq!(c.sum.as_ref().map(|s| s.as_str()), Some("n"));
    assert_eq!(c.group_by[0].to_string(), "on");
    let m = &e.migrations[0];
    let renames: Vec<(&str, &str)> = m
        .rename
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(renames, [("x", "on"), ("yes", "no")]);
    let removed: Vec<&str> = m.remove.iter().map(|r| r.as_str()).collect();
    assert_eq!(removed, ["off_flag", "n_old"]);
}

#[test]
fn values_take_the_text_where_the_type_is_a_string() {
    let model = accepted(NAMES);
    let e = entity(&model, "Thing");
    let default = |name: &str| {
        e.field(name)
            .and_then(|f| f.default.as_ref())
            .map(|d| d.value.clone())
    };
    assert_eq!(default("no"), Some(json!("yes")));
    assert_eq!(default("null"), Some(json!("1.50")), "the text, not 1.5");
    assert_eq!(default("off"), Some(json!(false)));
    assert_eq!(
        default("count"),
        Some(json!(16)),
        "a number where one is expected"
    );
    assert_eq!(default("state"), Some(json!("on")));
    let added: Vec<(&str, serde_json::Value)> = e.migrations[0]
        .add
        .iter()
        .map(|(f, v)| (f.as_str(), v.value.clone()))
        .collect();
    assert_eq!(
        added,
        [
            ("n", json!(7)),
            ("off", json!(false)),
            ("y", json!(null)),
            ("state", json!("off")),
            ("null", json!("2")),
        ]
    );
    assert_eq!(model.types[0].name.as_str(), "Switch");
}

#[test]
fn yaml_1_1_booleans_are_not_booleans() {
    for word in ["y", "Y", "yes", "Yes", "on", "ON", "n", "no", "off", "Off"] {
        let schema = load(&format!(
            "kvmodel: 1\nnamespace: app\nentities:\n  Thing:\n    key: \"thing:{{id}}\"\n    fields: {{ id: string, a: string }}\n    indexes: {{ by_a: {{ fields: [a], unique: {word} }} }}\n"
        ));
        let d: Vec<_> = schema
            .diagnostics
            .iter()
            .map(|d| d.full_message())
            .collect();
        assert_eq!(
            d,
            [format!(
                "expected true or false for `unique`, found a string\n  = help: `{word}` is a string in YAML 1.2; write `true` or `false`"
            )]
        );
    }
}

#[test]
fn an_empty_value_is_nothing_and_not_a_name() {
    let schema = load(
        "kvmodel: 1\nnamespace: app\nentities:\n  Thing:\n    key: \"thing:{id}\"\n    fields: { id: string, n: i64 }\n    counters: { total: { sum: } }\n",
    );
    let d: Vec<&str> = schema
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(d, ["expected a name for `sum`, found nothing"]);
}

#[test]
fn keys_are_names_as_written() {
    let model = accepted(
        "kvmodel: 1\nnamespace: app\nentities:\n  Thing:\n    key: \"thing:{id}\"\n    fields: { id: string, yes: string, null: i64, off: bool }\n",
    );
    let fields: Vec<&str> = entity(&model, "Thing")
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(fields, ["id", "yes", "null", "off"]);
}
