//! The diagnostics of a corpus of bad schemas, one per directory in
//! `tests/errors/`. Update with `INSTA_UPDATE=always cargo test`.

#[test]
fn diagnostics() {
    insta::glob!("errors/*/schema.yaml", |path| {
        let source = std::fs::read_to_string(path).unwrap();
        let case = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        let schema = kvmodel_build::load(&format!("{case}/schema.yaml"), &source);
        assert!(
            !schema.diagnostics.is_empty(),
            "{case} must report something"
        );
        if case != "lint_warnings" {
            assert!(schema.has_errors(), "{case} must report an error");
        }
        insta::assert_snapshot!(schema.render_diagnostics(false));
    });
}

#[test]
fn bad_input_never_panics() {
    // Truncations of a valid schema at every byte: every prefix is handled.
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/shop.yaml"))
            .unwrap();
    for end in (0..source.len()).filter(|i| source.is_char_boundary(*i)) {
        let s = kvmodel_build::load("shop.yaml", &source[..end]);
        let _ = s.render_diagnostics(false);
    }
}

#[test]
fn huge_key_template_reports_its_keys() {
    // A literal segment of 70,000 bytes: past any formatting width.
    let source = format!(
        "kvmodel: 1\nnamespace: big\nentities:\n  Thing:\n    key: \"t{}:{{id}}\"\n    fields: {{ id: string }}\n    counters: {{ total: {{}} }}\n",
        "a".repeat(70_000)
    );
    let schema = kvmodel_build::load("big.yaml", &source);
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    for format in [
        kvmodel_build::keys::Format::Text,
        kvmodel_build::keys::Format::Markdown,
    ] {
        let report = kvmodel_build::keys::report(&schema.model, format);
        assert!(report.contains(&"a".repeat(70_000)));
    }
}

#[test]
fn build_scripts_get_each_warning_on_one_line_and_its_help_on_the_next() {
    let source = "kvmodel: 1\nnamespace: app\nentities:\n  Session:\n    key: \"session:{id}\"\n    fields: { id: string }\n";
    let schema = kvmodel_build::load("app.yaml", source);
    assert!(!schema.has_errors());
    let lines = schema.warning_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("app.yaml:4:3: warning[W004]: `Session` looks like short-lived data"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("  help: add `ttl:")
            && lines[1].ends_with("add `allow: [W004]` to the entity"),
        "{}",
        lines[1]
    );
}

#[test]
fn deeply_nested_types_are_refused() {
    // Lists nested 100,000 deep: refused, never a stack overflow.
    let depth = 100_000;
    let ty = format!("{}string{}", "list<".repeat(depth), ">".repeat(depth));
    let source = format!(
        "kvmodel: 1\nnamespace: deep\nentities:\n  Thing:\n    key: \"t:{{id}}\"\n    fields: {{ id: string, x: \"{ty}\" }}\n"
    );
    let schema = kvmodel_build::load("deep.yaml", &source);
    let text = schema.render_diagnostics(false);
    assert!(
        text.contains("error[E013]: this type nests lists and maps more than 16 deep"),
        "{}",
        &text[..text.len().min(500)]
    );
    let ok = format!(
        "kvmodel: 1\nnamespace: deep\nentities:\n  Thing:\n    key: \"t:{{id}}\"\n    fields: {{ id: string, x: \"{}string{}\" }}\n",
        "list<".repeat(16),
        ">".repeat(16)
    );
    let schema = kvmodel_build::load("deep.yaml", &ok);
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
}
