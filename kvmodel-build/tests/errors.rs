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
