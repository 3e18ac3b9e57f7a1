//! W006: an entity whose largest write cannot be one DynamoDB transaction
//! (100 actions), or whose `max_size` is beyond an item's 400 KB.

fn codes(schema: &kvmodel_build::Schema) -> Vec<&'static str> {
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    schema.diagnostics.iter().map(|d| d.code).collect()
}

/// An entity with `n` counters grouped by `team`, each a sum of its own
/// field: an update that moves the record to another team moves every one
/// of them (two counters and two change stamps each).
fn counters(n: usize, entity: &str) -> kvmodel_build::Schema {
    let fields: String = (0..n).map(|i| format!(", f{i}: i64")).collect();
    let counters: String = (0..n)
        .map(|i| format!("      c{i}: {{ sum: f{i}, group_by: [team] }}\n"))
        .collect();
    let source = format!(
        "kvmodel: 1\nnamespace: wide\nentities:\n  Wide:\n    key: \"wide:{{id}}\"\n{entity}    fields: {{ id: string, team: string{fields} }}\n    counters:\n{counters}"
    );
    kvmodel_build::load("wide.yaml", &source)
}

#[test]
fn an_update_beyond_one_transaction_is_warned_of() {
    // 1 record + 25 × (2 counters + 2 stamps) written, + the discovery
    // member and its head checked: 103 actions.
    let s = counters(25, "");
    assert_eq!(codes(&s), ["W006"]);
    let d = &s.diagnostics[0];
    assert!(
        d.message
            .contains("`Wide`'s update needs 103 actions in one TransactWriteItems"),
        "{}",
        d.message
    );
    assert!(
        d.message.contains("beyond DynamoDB's limit of 100"),
        "{}",
        d.message
    );
    let help = d.help.as_deref().unwrap();
    assert!(help.contains("kvmodel keys --store dynamodb"), "{help}");
    assert!(
        help.ends_with("add `allow: [W006]` to the entity"),
        "{help}"
    );
    // Located at the entity's name.
    let rendered = s.render_diagnostics(false);
    assert!(rendered.contains("wide.yaml:4:3"), "{rendered}");
}

#[test]
fn a_write_that_fits_is_not_warned_of() {
    // 1 + 24 × 4 + 2 = 99 actions: within the limit.
    assert_eq!(codes(&counters(24, "")), Vec::<&str>::new());
    assert_eq!(codes(&counters(3, "")), Vec::<&str>::new());
}

#[test]
fn allow_on_the_entity_silences_it() {
    assert_eq!(
        codes(&counters(25, "    allow: [W006]\n")),
        Vec::<&str>::new()
    );
}

#[test]
fn a_max_size_beyond_an_item_is_warned_of_unless_compressed() {
    let source = |size: &str, more: &str| {
        format!(
            "kvmodel: 1\nnamespace: docs\nentities:\n  Doc:\n    key: \"doc:{{id}}\"\n    max_size: {size}\n{more}    fields: {{ id: string, body: bytes }}\n"
        )
    };
    let s = kvmodel_build::load("docs.yaml", &source("1MiB", ""));
    assert_eq!(codes(&s), ["W006"]);
    assert!(
        s.diagnostics[0].message.contains("400 KB per item"),
        "{}",
        s.diagnostics[0].message
    );
    assert!(
        s.render_diagnostics(false).contains("docs.yaml:6:"),
        "located at max_size: {}",
        s.render_diagnostics(false)
    );
    let fits = kvmodel_build::load("docs.yaml", &source("256KiB", ""));
    assert_eq!(codes(&fits), Vec::<&str>::new());
    let compressed = kvmodel_build::load(
        "docs.yaml",
        &source("1MiB", "    compress: { codec: zstd, above: 4KiB }\n"),
    );
    assert_eq!(codes(&compressed), Vec::<&str>::new());
}

#[test]
fn the_shipped_schemas_fit() {
    for name in ["activity", "forum", "sessions", "shop", "social"] {
        let path = format!("{}/../schemas/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(&path).unwrap();
        let s = kvmodel_build::load(&path, &source);
        assert!(
            !s.diagnostics.iter().any(|d| d.code == "W006"),
            "{name}: {}",
            s.render_diagnostics(false)
        );
    }
}
