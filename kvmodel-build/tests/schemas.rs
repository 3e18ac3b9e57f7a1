//! Every schema in `schemas/`: it checks clean, its outputs are snapshotted,
//! and declaring then reading back the declarations gives the same model.
//! Update snapshots with `INSTA_UPDATE=always cargo test`.

use std::path::Path;

fn load(path: &Path) -> kvmodel_build::Schema {
    let source = std::fs::read_to_string(path).unwrap();
    let name = format!("schemas/{}", path.file_name().unwrap().to_string_lossy());
    kvmodel_build::load(&name, &source)
}

#[test]
fn schemas_check_clean() {
    insta::glob!("../../schemas", "*.yaml", |path| {
        let s = load(path);
        assert!(s.diagnostics.is_empty(), "{}", s.render_diagnostics(false));
    });
}

#[test]
fn generate_snapshots() {
    insta::glob!("../../schemas", "*.yaml", |path| {
        let files = kvmodel_build::generate(&[load(path)]).unwrap();
        assert_eq!(files.len(), 1);
        insta::assert_snapshot!(files[0].contents);
    });
}

#[test]
fn expand_snapshots() {
    insta::glob!("../../schemas", "*.yaml", |path| {
        insta::assert_snapshot!(kvmodel_build::expand(&load(path).model).unwrap());
    });
}

#[test]
fn keys_snapshots() {
    insta::glob!("../../schemas", "*.yaml", |path| {
        let model = load(path).model;
        let text = kvmodel_build::keys::report(&model, kvmodel_build::keys::Format::Text);
        let md = kvmodel_build::keys::report(&model, kvmodel_build::keys::Format::Markdown);
        insta::assert_snapshot!(format!("{text}\n----- markdown -----\n{md}"));
    });
}

/// `kvmodel keys --store dynamodb`: every schema's DynamoDB items and
/// costs, as text and Markdown; the default report is not this one.
#[test]
fn dynamodb_keys_snapshots() {
    use kvmodel_build::keys::{Format, Store, report, report_for};
    insta::glob!("../../schemas", "*.yaml", |path| {
        let model = load(path).model;
        let text = report_for(&model, Format::Text, Store::Dynamodb);
        let md = report_for(&model, Format::Markdown, Store::Dynamodb);
        assert_eq!(
            report_for(&model, Format::Text, Store::Redis),
            report(&model, Format::Text)
        );
        assert_ne!(text, report(&model, Format::Text));
        insta::assert_snapshot!(format!("{text}\n----- markdown -----\n{md}"));
    });
}

/// `kvmodel keys --format mermaid`: the shop as the diagram in README.md,
/// and the social schema for its links.
#[test]
fn mermaid_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
    let shop = kvmodel_build::keys::report(
        &load(&dir.join("shop.yaml")).model,
        kvmodel_build::keys::Format::Mermaid,
    );
    insta::assert_snapshot!("mermaid_shop", shop);
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    assert!(
        readme.contains(&format!("```mermaid\n{shop}```")),
        "README.md shows the shop's diagram as `kvmodel keys --format mermaid` prints it"
    );
    let social = kvmodel_build::keys::report(
        &load(&dir.join("social.yaml")).model,
        kvmodel_build::keys::Format::Mermaid,
    );
    insta::assert_snapshot!("mermaid_social", social);
}

/// `kvmodel proto`: the .proto of each schema's protobuf-encoded entities.
#[test]
fn proto_snapshots() {
    insta::glob!("../../schemas", "*.yaml", |path| {
        insta::assert_snapshot!(kvmodel_build::proto::print(&load(path).model));
    });
}

/// `read(declare(model)) == model`: the YAML front-end and the derive agree.
#[test]
fn declarations_round_trip() {
    insta::glob!("../../schemas", "*.yaml", |path| {
        let schema = load(path);
        let declared = kvmodel_build::declare::declare(&schema.model).unwrap();
        let file = syn::parse_file(&declared).unwrap();
        let mut diags = kvmodel_codegen::Diagnostics::new();
        let read = kvmodel_build::declare::read(&file, &mut diags);
        assert!(diags.as_slice().is_empty(), "{:?}", diags.as_slice());
        assert_eq!(read, schema.model);
    });
}

#[test]
fn generation_is_deterministic() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/shop.yaml");
    let a = kvmodel_build::generate(&[load(&path)]).unwrap();
    let b = kvmodel_build::generate(&[load(&path)]).unwrap();
    assert_eq!(a, b);
    assert!(a[0].contents.starts_with("// @generated"));
    assert!(
        !a[0].contents.contains(env!("CARGO_PKG_VERSION")),
        "no version in the output"
    );
}

#[test]
fn builder_writes_only_when_changed() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/sessions.yaml");
    let mut b = kvmodel_build::Builder::new();
    b.schema(&schema).out_dir(dir.path());
    let written = b.compile().unwrap();
    assert_eq!(written, vec![dir.path().join("sessions.rs")]);
    let first = std::fs::metadata(&written[0]).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    b.compile().unwrap();
    assert_eq!(
        std::fs::metadata(&written[0]).unwrap().modified().unwrap(),
        first
    );
    let mut bad = kvmodel_build::Builder::new();
    bad.schema(dir.path().join("missing.yaml"))
        .out_dir(dir.path());
    assert!(matches!(
        bad.compile(),
        Err(kvmodel_build::BuildError::Io { .. })
    ));
}

/// A schema whose relations reach a derived entity builds beside the Rust
/// source that declares it: the schema's file is written as `kvmodel
/// generate` writes it, nothing for the Rust source; alone, the schema is
/// refused (its relation names an entity it does not know).
#[test]
fn builder_reads_rust_sources_beside_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kvmodel-cli/tests/mixed");
    let written = kvmodel_build::Builder::new()
        .schema(mixed.join("accounts.rs"))
        .schema(mixed.join("sessions.yaml"))
        .out_dir(dir.path())
        .compile()
        .unwrap();
    assert_eq!(written, vec![dir.path().join("sessions.rs")]);
    assert_eq!(
        std::fs::read_to_string(&written[0]).unwrap(),
        std::fs::read_to_string(mixed.join("sessions.rs")).unwrap(),
        "the file `kvmodel generate accounts.rs sessions.yaml` writes"
    );
    let alone = kvmodel_build::Builder::new()
        .schema(mixed.join("sessions.yaml"))
        .out_dir(dir.path())
        .compile();
    assert!(
        matches!(&alone, Err(kvmodel_build::BuildError::Schema(text)) if text.contains("Account")),
        "{alone:?}"
    );
}

/// The schema the child run of `builder_passes_warnings_to_cargo` builds:
/// two entities that look short-lived and have no TTL (W004), one of them
/// allowing it.
const WARNED: &str = "kvmodel: 1\nnamespace: app\nentities:\n  Session:\n    key: \"session:{id}\"\n    fields: { id: string }\n  CacheEntry:\n    key: \"cache:{id}\"\n    allow: [W004]\n    fields: { id: string }\n";

/// Builds `WARNED` as a build script would, when run as the child of
/// `builder_passes_warnings_to_cargo` (which reads what it prints).
#[test]
fn builder_child() {
    let Some(dir) = std::env::var_os("KVMODEL_BUILDER_CHILD") else {
        return;
    };
    let dir = Path::new(&dir);
    let schema = dir.join("app.yaml");
    std::fs::write(&schema, WARNED).unwrap();
    let written = kvmodel_build::Builder::new()
        .schema(&schema)
        .out_dir(dir.join("out"))
        .compile()
        .unwrap();
    assert_eq!(written, vec![dir.join("out/app.rs")]);
}

#[test]
fn builder_passes_warnings_to_cargo() {
    let dir = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "builder_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("KVMODEL_BUILDER_CHILD", dir.path())
        // Cargo sets this for every build script it runs.
        .env("CARGO", "cargo")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The test harness may print `test builder_child ... ` before them.
    let cargo: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.find("cargo:").map(|at| &l[at..]))
        .collect();
    let schema = dir.path().join("app.yaml");
    assert_eq!(
        cargo,
        [
            format!("cargo:rerun-if-changed={}", schema.display()),
            format!(
                "cargo:warning={}:4:3: warning[W004]: `Session` looks like short-lived data but has no `ttl`, so its records are never removed",
                schema.display()
            ),
            "cargo:warning=  help: add `ttl: { after: 30m, jitter: 10% }` (or the lifetime it needs); if this is intended, add `allow: [W004]` to the entity".to_owned(),
        ],
        "one warning with its help, for the entity that does not allow it:\n{stdout}"
    );
}

/// `kvmodel keys` on a co-located entity: the claim and counter keyed by the
/// co-located field share the record's slot; a global claim does not, and
/// it makes creates take the 4-step protocol.
#[test]
fn keys_show_the_slot_grouping_of_a_colocated_entity() {
    let schema = |extra: &str| {
        format!(
            "kvmodel: 1\nnamespace: docs\nentities:\n  Note:\n    key: \"tenant:{{tenant}}:note:{{id}}\"\n    \
             colocate: tenant\n    fields: {{ tenant: string, id: string, title: string, slug: string }}\n    \
             indexes:\n      by_title: {{ fields: [tenant, title], unique: true }}\n{extra}    \
             counters: {{ per_tenant: {{ group_by: [tenant] }} }}\n"
        )
    };
    let report = |source: &str| {
        let s = kvmodel_build::load("note.yaml", source);
        assert!(
            !s.has_errors() && !s.has_warnings(),
            "{}",
            s.render_diagnostics(false)
        );
        let codes: Vec<_> = s.diagnostics.iter().map(|d| d.code).collect();
        let report = kvmodel_build::keys::report(&s.model, kvmodel_build::keys::Format::Markdown);
        (report, codes)
    };
    let (local, codes) = report(&schema(""));
    assert!(codes.is_empty(), "{codes:?}");
    assert!(
        local.contains(
            "in the record's slot: record, unique by_title, counter per_tenant; elsewhere: \
             discovery (sharded). Sequential round trips per commit, after the reads above: \
             create 3, update 3, delete 4"
        ),
        "{local}"
    );
    // `check` says so too, as information (I001).
    let (global, codes) = report(&schema("      by_slug: { fields: [slug], unique: true }\n"));
    assert_eq!(codes, ["I001"]);
    assert!(
        global.contains(
            "in the record's slot: record, unique by_title, counter per_tenant; elsewhere: \
             unique by_slug, discovery (sharded). Sequential round trips per commit, after the \
             reads above: create 5, update 5 (3 when it moves nothing kept in another slot), \
             delete 4"
        ),
        "{global}"
    );
    // A change feed is a stream in a slot of its own, appended to after the
    // commit point: co-located writes cross slots again.
    let (fed, _) = report(&schema("").replace(
        "    colocate: tenant\n",
        "    colocate: tenant\n    feed: { retain: 1d }\n",
    ));
    assert!(
        fed.contains(
            "in the record's slot: record, unique by_title, counter per_tenant; elsewhere: \
             discovery (sharded), change feed (stream). Sequential round trips per commit, \
             after the reads above: create 5, update 5, delete 4"
        ),
        "{fed}"
    );
}

/// `kvmodel keys` of links whose records expire: the registry of an
/// expiring entity says the sweep removes it, and a collection of links to
/// an expiring entity says its entries go with that entity's sweep; the
/// schema checks clean.
#[test]
fn keys_tell_how_links_of_expiring_records_go() {
    let source = r#"
kvmodel: 1
namespace: short
entities:
  Link:
    key: "link:{id}"
    fields:
      id: string
      expires_at: { type: timestamp, optional: true, expiry: true }
    links:
      tags: { to: Tag, inverse: links }
  Tag:
    key: "tag:{name}"
    fields: { name: string }
"#;
    let s = kvmodel_build::load("schemas/short.yaml", source);
    assert!(s.diagnostics.is_empty(), "{}", s.render_diagnostics(false));
    let text = kvmodel_build::keys::report(&s.model, kvmodel_build::keys::Format::Text);
    let registry = "no TTL: when the record expires, its expiry sweep removes it";
    assert_eq!(text.matches(registry).count(), 1, "{text}");
    let entries = "entries of Link records that expired are skipped by listings and removed by the Link expiry sweep";
    assert_eq!(text.matches(entries).count(), 1, "{text}");
}
