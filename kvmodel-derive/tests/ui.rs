//! The catalogue of derive errors: one rule per file, each `.stderr` pointing
//! at the offending tokens. Update with `TRYBUILD=overwrite cargo test`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
