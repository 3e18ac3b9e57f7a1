//! A schema that `check` accepts generates code that compiles.
//!
//! Two sources of schemas: the corpus in `tests/compiles/` (one file per
//! case that once generated broken code) and a seeded generator of schemas
//! built from adversarial names. Every schema `check` accepts must also
//! declare, expand and report its keys without a panic, read back from its
//! declarations as the same model, and compile: the generated files become
//! the modules of one scratch crate, checked with every warning denied.
//!
//! `KVMODEL_SCHEMA_SEED` and `KVMODEL_SCHEMA_COUNT` explore other seeds and
//! batch sizes locally; CI runs the fixed seed below with
//! `KVMODEL_LONG_TESTS=1` (160 schemas where a plain run compiles 40).

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};

use support::schema_gen::{self, Rng};
use support::scratch::{self, Unit};

/// Seeds of the generated batch, and how many accepted schemas to compile
/// (more with `KVMODEL_LONG_TESTS=1`, as `.ci/run` runs it).
const SEED: u64 = 0x6b76_6d6f_6465_6c01;
const ACCEPTED: usize = 40;
const ACCEPTED_LONG: usize = 160;
/// Candidates drawn at most while looking for `ACCEPTED` accepted ones.
const CANDIDATES: usize = 4000;

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic".to_owned())
}

/// The declarations of an accepted schema (`Err` with the codes of its
/// errors if `check` refuses it), after making sure that every output is produced without a panic
/// and that the declarations read back as the same model.
fn declarations(file: &str, source: &str) -> Result<Result<String, Vec<&'static str>>, String> {
    let run = catch_unwind(AssertUnwindSafe(|| {
        let schema = kvmodel_build::load(file, source);
        let _ = schema.render_diagnostics(false);
        if schema.has_errors() {
            let codes = schema
                .diagnostics
                .iter()
                .filter(|d| d.severity == kvmodel_build::Severity::Error)
                .map(|d| d.code)
                .collect();
            return Ok(Err(codes));
        }
        let model = &schema.model;
        let _ = kvmodel_build::keys::report(model, kvmodel_build::keys::Format::Text);
        kvmodel_build::expand(model).map_err(|e| format!("expand failed: {e}"))?;
        let files = kvmodel_build::generate(std::slice::from_ref(&schema))
            .map_err(|e| format!("generate failed: {e}"))?;
        let code = files[0].contents.clone();
        let parsed = syn::parse_file(&code).map_err(|e| format!("unparsable: {e}"))?;
        let mut diags = kvmodel_codegen::Diagnostics::new();
        let read = kvmodel_build::declare::read(&parsed, &mut diags);
        if !diags.as_slice().is_empty() {
            return Err(format!(
                "reading the declarations back: {:?}",
                diags.as_slice()
            ));
        }
        if read != *model {
            return Err(format!(
                "the declarations read back as another model:\n{}",
                difference(&format!("{model:#?}"), &format!("{read:#?}"))
            ));
        }
        Ok(Ok(code))
    }));
    run.unwrap_or_else(|p| Err(format!("panicked: {}", panic_text(p))))
}

/// The lines where two models' texts differ (after their common start and
/// end), leaving out origins, which take no part in equality.
fn difference(expected: &str, found: &str) -> String {
    let lines = |t: &'_ str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.trim_start().starts_with("origin: "))
            .map(str::to_owned)
            .collect()
    };
    let (a, b) = (lines(expected), lines(found));
    let start = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let end = a[start..]
        .iter()
        .rev()
        .zip(b[start..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let context = start.saturating_sub(6);
    format!(
        "{}\n--- expected:\n{}\n--- found:\n{}",
        a[context..start].join("\n"),
        a[start..a.len() - end].join("\n"),
        b[start..b.len() - end].join("\n")
    )
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[test]
fn corpus_compiles() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/compiles");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    let mut units = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let source = std::fs::read_to_string(&path).unwrap();
        let case = path.file_stem().unwrap().to_string_lossy().into_owned();
        let file = format!("{case}.yaml");
        match declarations(&file, &source) {
            Ok(Ok(code)) => units.push(Unit {
                module: case,
                schema: source,
                code,
            }),
            Ok(Err(_)) => problems.push(format!(
                "===== {file} must be accepted:\n{}",
                kvmodel_build::load(&file, &source).render_diagnostics(false)
            )),
            Err(e) => problems.push(format!("===== {file}: {e}")),
        }
    }
    if let Err(f) = scratch::check("corpus", &units) {
        problems.push(f.to_string());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn generated_schemas_that_check_compile() {
    let seed = env_number("KVMODEL_SCHEMA_SEED").unwrap_or(SEED);
    let long = std::env::var_os("KVMODEL_LONG_TESTS").is_some_and(|v| !v.is_empty() && v != "0");
    let wanted = env_number("KVMODEL_SCHEMA_COUNT")
        .map_or(if long { ACCEPTED_LONG } else { ACCEPTED }, |n| n as usize);
    let mut rng = Rng::new(seed);
    let mut units = Vec::new();
    let mut problems = Vec::new();
    let mut drawn = 0;
    let mut refused: std::collections::BTreeMap<&str, usize> = Default::default();
    while units.len() < wanted && drawn < CANDIDATES.max(wanted * 25) {
        drawn += 1;
        let source = schema_gen::schema(&mut rng);
        match declarations(&format!("s{drawn}.yaml"), &source) {
            Ok(Ok(code)) => units.push(Unit {
                module: format!("s{drawn}"),
                schema: source,
                code,
            }),
            Ok(Err(codes)) => {
                for c in codes {
                    *refused.entry(c).or_default() += 1;
                }
            }
            Err(e) => problems.push(format!("===== schema s{drawn}:\n{source}\n----- {e}")),
        }
    }
    assert!(
        units.len() == wanted,
        "only {} of {drawn} generated schemas were accepted (seed {seed:#x}); errors by code: {refused:?}",
        units.len()
    );
    if let Err(f) = scratch::check("generated", &units) {
        problems.push(f.to_string());
    }
    assert!(
        problems.is_empty(),
        "seed {seed:#x}: generated schemas broke an output or did not compile:\n{}",
        problems.join("\n")
    );
}
