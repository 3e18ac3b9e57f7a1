//! A schema's namespace-level `counters:`: the declarations `generate`
//! writes for them and what `kvmodel keys` says of them. Update snapshots
//! with `INSTA_UPDATE=always cargo test`.

fn load() -> kvmodel_build::Schema {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compiles/standalone_counters.yaml");
    let s = kvmodel_build::load_file(&path).unwrap();
    assert!(s.diagnostics.is_empty(), "{}", s.render_diagnostics(false));
    s
}

#[test]
fn counters_are_declared_as_kv_counter_structs() {
    let s = load();
    assert_eq!(s.model.tallies.len(), 3);
    let files = kvmodel_build::generate(&[s]).unwrap();
    insta::assert_snapshot!(files[0].contents);
}

#[test]
fn keys_lists_each_counter_with_its_shards_ttl_and_costs() {
    let model = load().model;
    let text = kvmodel_build::keys::report(&model, kvmodel_build::keys::Format::Text);
    // The example key is the one the runtime builds.
    assert!(
        text.contains("site:views#tally:{page-1:2026-01-01}"),
        "{text}"
    );
    let md = kvmodel_build::keys::report(&model, kvmodel_build::keys::Format::Markdown);
    insta::assert_snapshot!(format!("{text}\n----- markdown -----\n{md}"));
}
