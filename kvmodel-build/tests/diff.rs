//! `kvmodel diff` between two versions of a schema.

#[test]
fn classifies_every_change() {
    let load = |name: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/diff")
            .join(name);
        let s = kvmodel_build::load_file(&path).unwrap();
        assert!(!s.has_errors(), "{}", s.render_diagnostics(false));
        s.model
    };
    let (old, new) = (load("old.yaml"), load("new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    assert!(
        kvmodel_build::diff::diff(&new, &new).is_empty(),
        "no change, no report"
    );
}
