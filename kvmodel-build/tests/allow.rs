//! Lints a schema means to break: `allow` on an index, a counter, an
//! entity or the whole file silences exactly those warnings, in YAML and in
//! `#[kv(…)]` attributes; an unknown lint code is an error with a
//! did-you-mean.

fn codes(schema: &kvmodel_build::Schema) -> Vec<&'static str> {
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    schema.diagnostics.iter().map(|d| d.code).collect()
}

/// A leaderboard (W002: ordered by a field with few values), a hot
/// counter (W001), a long key (W003) and a session without TTL (W004),
/// with `{allow}` spliced in where each test wants it.
fn yaml(top: &str, entity: &str, index: &str, counter: &str) -> kvmodel_build::Schema {
    let source = format!(
        "kvmodel: 1\nnamespace: game\n{top}entities:\n  Score:\n    key: \"score_entry_of_a_very_long_leaderboard_name_for_all:{{id}}\"\n{entity}    fields: {{ id: string, tier: Tier, points: i64 }}\n    indexes:\n      by_tier: {{ fields: [tier], order_by: points{index} }}\n    counters:\n      total: {{ sum: points{counter} }}\n  Session:\n    key: \"session:{{id}}\"\n    fields: {{ id: string }}\ntypes:\n  Tier: {{ enum: [bronze, silver, gold] }}\n"
    );
    kvmodel_build::load("game.yaml", &source)
}

#[test]
fn every_lint_fires_without_allow() {
    assert_eq!(
        codes(&yaml("", "", "", "")),
        ["W003", "W002", "W001", "W004"]
    );
    let s = yaml("", "", "", "");
    let help = s.diagnostics[1].help.as_deref().unwrap();
    assert!(
        help.ends_with("if this is intended, add `allow: [W002]` to the index"),
        "{help}"
    );
}

#[test]
fn allow_on_an_index_or_a_counter_silences_only_it() {
    assert_eq!(
        codes(&yaml("", "", ", allow: [W002]", "")),
        ["W003", "W001", "W004"]
    );
    assert_eq!(
        codes(&yaml("", "", "", ", allow: W001")),
        ["W003", "W002", "W004"]
    );
    // Allowing a lint where it cannot fire silences nothing else.
    assert_eq!(
        codes(&yaml("", "", ", allow: [W001]", ", allow: [W002]")),
        ["W003", "W002", "W001", "W004"]
    );
}

#[test]
fn allow_on_an_entity_covers_what_it_declares() {
    assert_eq!(
        codes(&yaml("", "    allow: [W001, W002, W003]\n", "", "")),
        ["W004"]
    );
}

#[test]
fn allow_on_an_entity_covers_a_record_without_max_size() {
    let source = |allow: &str| {
        format!(
            "kvmodel: 1\nnamespace: docs\nentities:\n  Doc:\n    key: \"doc:{{id}}\"\n{allow}    fields: {{ id: string, body: bytes }}\n"
        )
    };
    let s = kvmodel_build::load("docs.yaml", &source(""));
    assert_eq!(codes(&s), ["W005"]);
    let help = s.diagnostics[0].help.as_deref().unwrap();
    assert!(help.contains("add `max_size: 256KiB`"), "{help}");
    assert!(
        help.ends_with("add `allow: [W005]` to the entity"),
        "{help}"
    );
    let allowed = kvmodel_build::load("docs.yaml", &source("    allow: [W005]\n"));
    assert!(codes(&allowed).is_empty());
}

#[test]
fn allow_at_the_top_covers_every_entity() {
    assert!(codes(&yaml("allow: [W001, W002, W003, W004]\n", "", "", "")).is_empty());
    let s = yaml("allow: [W004]\n", "    allow: [W002]\n", "", "");
    assert_eq!(codes(&s), ["W003", "W001"]);
    let score = &s.model.entities[0];
    let allowed: Vec<&str> = score.allow.iter().map(|a| a.code()).collect();
    assert_eq!(
        allowed,
        ["W002", "W004"],
        "the entity's own, then the file's"
    );
}

#[test]
fn unknown_codes_are_errors_with_a_did_you_mean() {
    let s = yaml("allow: [W0004]\n", "", ", allow: [w002]", ", allow: [W9]");
    let said: Vec<(&str, &str)> = s
        .diagnostics
        .iter()
        .map(|d| (d.code, d.message.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            (
                "E010",
                "unknown lint `W0004`; expected `W001`, `W002`, `W003`, `W004`, `W005` or `I001`; did you mean `W004`?"
            ),
            (
                "E010",
                "unknown lint `w002`; expected `W001`, `W002`, `W003`, `W004`, `W005` or `I001`; did you mean `W002`?"
            ),
            (
                "E010",
                "unknown lint `W9`; expected `W001`, `W002`, `W003`, `W004`, `W005` or `I001`"
            ),
        ]
    );
    // Each is located at the code itself.
    let text = s.render_diagnostics(false);
    for at in ["game.yaml:3:9:", "game.yaml:9:60:", "game.yaml:11:37:"] {
        assert!(text.contains(at), "{at} in:\n{text}");
    }
}

#[test]
fn allow_round_trips_through_the_declared_form() {
    let s = yaml("allow: [W004]\n", "", ", allow: [W002]", ", allow: [W001]");
    let declared = kvmodel_build::declare::declare(&s.model).unwrap();
    assert!(declared.contains("allow(W004)"), "{declared}");
    assert!(
        declared.contains("order_by = points, allow(W002)"),
        "{declared}"
    );
    assert!(declared.contains("sum = points, allow(W001)"), "{declared}");
    let file = syn::parse_file(&declared).unwrap();
    let mut diags = kvmodel_codegen::Diagnostics::new();
    let read = kvmodel_build::declare::read(&file, &mut diags);
    assert!(diags.as_slice().is_empty(), "{:?}", diags.as_slice());
    assert_eq!(read, s.model);
}

#[test]
fn attributes_allow_on_the_struct_an_index_a_counter_or_a_field() {
    let source = |attrs: &str, field: &str| {
        format!(
            "#[derive(kvmodel::KvEnum)] pub enum Tier {{ Bronze, Gold }}\n#[derive(kvmodel::KvEntity)]\n#[kv(namespace = \"game\", key = \"score:{{id}}\")]\n{attrs}\npub struct Score {{ pub id: String, pub tier: Tier, {field} pub kind: bool, pub points: i64 }}\n"
        )
    };
    let load =
        |attrs: &str, field: &str| kvmodel_build::load_rust("score.rs", &source(attrs, field));
    let board = "#[kv(index(name = by_tier, fields(tier), order_by = points))]";
    let total = "#[kv(counter(name = total, sum = points))]";
    let kind = "#[kv(index)]";
    assert_eq!(
        codes(&load(&format!("{board}\n{total}"), kind)),
        ["W002", "W001", "W002"]
    );
    let s = load(&format!("{board}\n{total}"), kind);
    let help = s.diagnostics[0].help.as_deref().unwrap();
    assert!(help.ends_with("add `allow(W002)` to the index"), "{help}");
    assert_eq!(
        codes(&load(
            "#[kv(index(name = by_tier, fields(tier), order_by = points, allow(W002)))]\n#[kv(counter(name = total, sum = points, allow(W001)))]",
            "#[kv(index, allow(W002))]"
        )),
        Vec::<&str>::new()
    );
    assert_eq!(
        codes(&load(
            &format!("#[kv(allow(W001, W002))]\n{board}\n{total}"),
            kind
        )),
        Vec::<&str>::new()
    );
}

#[test]
fn allowing_a_lint_changes_nothing_stored() {
    let before = yaml("", "", "", "");
    let after = yaml(
        "allow: [W004]\n",
        "    allow: [W003]\n",
        ", allow: [W002]",
        ", allow: [W001]",
    );
    assert!(kvmodel_build::diff::diff(&before.model, &after.model).is_empty());
}

/// I001 is information: an entity that co-locates on a Redis Cluster but
/// keeps a claim or a counter in another slot is told which write paths
/// span slots, without counting as a warning or reaching a build script.
#[test]
fn cross_slot_writes_of_a_co_located_entity_are_information() {
    let source = |allow: &str, unique: &str| {
        format!(
            "kvmodel: 1\nnamespace: shop\nentities:\n  Order:\n    key: \"order:{{user_id}}:{{id}}\"\n    colocate: user_id\n{allow}    fields: {{ id: string, user_id: string, number: string, at: timestamp }}\n    indexes:\n      by_number: {{ fields: [{unique}], unique: true }}\n      by_user: {{ fields: [user_id], order_by: at }}\n    counters:\n      per_user: {{ group_by: [user_id] }}\n"
        )
    };
    let s = kvmodel_build::load("shop.yaml", &source("", "number"));
    assert_eq!(codes(&s), ["I001"]);
    let d = &s.diagnostics[0];
    assert_eq!(d.severity, kvmodel_build::Severity::Info);
    assert!(
        d.message
            .contains("its unique `by_number` lies in other slots")
            && d.message
                .contains("a create takes 4 sequential round trips"),
        "{}",
        d.message
    );
    assert!(!s.has_warnings());
    assert!(s.warning_lines().is_empty());
    assert!(
        s.render_diagnostics(false)
            .starts_with("shop.yaml:6:15: info[I001]: on a Redis Cluster, `Order`"),
        "{}",
        s.render_diagnostics(false)
    );
    // Everything derived from the co-location field shares the record's
    // slot: nothing to say.
    let home = kvmodel_build::load("shop.yaml", &source("", "user_id, number"));
    assert!(codes(&home).is_empty(), "{:?}", home.diagnostics);
    let allowed = kvmodel_build::load("shop.yaml", &source("    allow: [I001]\n", "number"));
    assert!(codes(&allowed).is_empty());
}
