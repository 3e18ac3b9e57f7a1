//! The catalogue of derive errors: one rule per file, each `.stderr` pointing
//! at the offending tokens. Update with `TRYBUILD=overwrite cargo test`.
//! The programs in `tests/run/` must build and run to the end: they check
//! what kvmodel does without optional features (these tests build it with
//! `derive` alone).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/run/*.rs");
}
