//! The `kvmodel` binary: help texts, outputs and exit codes
//! (0 ok, 1 problems found, 2 usage or I/O error).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn kvmodel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvmodel"))
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_texts() {
    for args in [
        &["--help"][..],
        &["check", "--help"],
        &["generate", "--help"],
        &["expand", "--help"],
        &["keys", "--help"],
        &["verify", "--help"],
        &["reconcile", "--help"],
        &["migrate", "--help"],
        &["inspect", "--help"],
        &["purge", "--help"],
        &["diff", "--help"],
        &["proto", "--help"],
        &["acl", "--help"],
    ] {
        let o = kvmodel(args);
        assert_eq!(code(&o), 0);
        insta::assert_snapshot!(args.join("_").replace("--", ""), text(&o.stdout));
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(code(&kvmodel(&[])), 2);
    assert_eq!(code(&kvmodel(&["frobnicate"])), 2);
    assert_eq!(code(&kvmodel(&["check"])), 2);
    let o = kvmodel(&["check", "no/such/file.yaml"]);
    assert_eq!(code(&o), 2);
    assert!(
        text(&o.stderr).contains("cannot read `no/such/file.yaml`"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn check_reports_and_exits_1_on_errors() {
    assert_eq!(
        code(&kvmodel(&[
            "check",
            "schemas/shop.yaml",
            "schemas/sessions.yaml"
        ])),
        0
    );
    let o = kvmodel(&[
        "check",
        "kvmodel-build/tests/errors/index_errors/schema.yaml",
    ]);
    assert_eq!(code(&o), 1);
    let err = text(&o.stderr);
    assert!(
        err.contains("kvmodel-build/tests/errors/index_errors/schema.yaml:13:27: error[E103]"),
        "{err}"
    );
    assert!(
        err.contains("^^^^"),
        "a caret under the offending text: {err}"
    );
    let lint = "kvmodel-build/tests/errors/lint_warnings/schema.yaml";
    assert_eq!(code(&kvmodel(&["check", lint])), 0, "warnings alone pass");
    assert_eq!(code(&kvmodel(&["check", "--deny-warnings", lint])), 1);
    // Information (I001) is printed but is no warning, even when denied.
    let dir = tempfile::tempdir().unwrap();
    let info = dir.path().join("cluster.yaml");
    std::fs::write(
        &info,
        "kvmodel: 1\nnamespace: shop\nentities:\n  Order:\n    key: \"order:{user_id}:{id}\"\n    colocate: user_id\n    fields: { id: string, user_id: string, number: string }\n    indexes:\n      by_number: { fields: [number], unique: true }\n",
    )
    .unwrap();
    let o = kvmodel(&["check", "--deny-warnings", info.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains(":6:15: info[I001]: on a Redis Cluster, `Order`"),
        "{err}"
    );
    assert!(!err.contains("warning(s)"), "{err}");
}

#[test]
fn generate_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = kvmodel(&[
        "generate",
        "schemas/shop.yaml",
        "schemas/sessions.yaml",
        "-o",
        out,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let shop = std::fs::read_to_string(dir.path().join("shop.rs")).unwrap();
    assert!(shop.starts_with("// @generated"));
    assert_eq!(
        code(&kvmodel(&[
            "generate",
            "schemas/shop.yaml",
            "schemas/sessions.yaml",
            "-o",
            out,
            "--check"
        ])),
        0
    );
    std::fs::write(
        dir.path().join("shop.rs"),
        shop.replace("pub struct User", "pub struct Usr"),
    )
    .unwrap();
    let o = kvmodel(&["generate", "schemas/shop.yaml", "-o", out, "--check"]);
    assert_eq!(code(&o), 1);
    assert!(
        text(&o.stderr).contains("out of date"),
        "{}",
        text(&o.stderr)
    );
    let file = dir.path().join("one.rs");
    assert_eq!(
        code(&kvmodel(&[
            "generate",
            "schemas/shop.yaml",
            "-o",
            file.to_str().unwrap()
        ])),
        0
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), shop);
    assert_eq!(
        code(&kvmodel(&[
            "generate",
            "schemas/shop.yaml",
            "schemas/sessions.yaml",
            "-o",
            file.to_str().unwrap()
        ])),
        2
    );
    let bad = "kvmodel-build/tests/errors/ttl_errors/schema.yaml";
    assert_eq!(code(&kvmodel(&["generate", bad, "-o", out])), 1);
}

#[test]
fn proto_prints_the_proto_of_protobuf_entities() {
    let o = kvmodel(&["proto", "schemas/activity.yaml"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("syntax = \"proto3\";"), "{out}");
    assert!(out.contains("message Reading {"), "{out}");
    assert!(
        !out.contains("message Event {"),
        "JSON entities have no message: {out}"
    );
    assert_eq!(code(&kvmodel(&["proto"])), 2);
    let bad = "kvmodel-build/tests/errors/protobuf_errors/schema.yaml";
    assert_eq!(code(&kvmodel(&["proto", bad])), 1);
}

#[test]
fn expand_and_keys_print_to_stdout() {
    let o = kvmodel(&["expand", "schemas/activity.yaml"]);
    assert_eq!(code(&o), 0);
    assert!(text(&o.stdout).contains("impl<__S: ::kvmodel::Store> EventRepo<__S>"));
    let diff = kvmodel(&[
        "diff",
        "kvmodel-build/tests/diff/old.yaml",
        "kvmodel-build/tests/diff/new.yaml",
    ]);
    assert_eq!(code(&diff), 1, "breaking changes exit 1");
    assert!(text(&diff.stdout).contains("verdict: breaking"));
    assert_eq!(
        code(&kvmodel(&[
            "diff",
            "schemas/shop.yaml",
            "schemas/shop.yaml"
        ])),
        0
    );
    let o = kvmodel(&["keys", "--format", "markdown", "schemas/activity.yaml"]);
    assert_eq!(code(&o), 0);
    assert!(
        text(&o.stdout).contains("| `list_by_actor` |"),
        "{}",
        text(&o.stdout)
    );
    let o = kvmodel(&["keys", "--store", "dynamodb", "schemas/shop.yaml"]);
    assert_eq!(code(&o), 0);
    let out = text(&o.stdout);
    assert!(
        out.contains("User (DynamoDB)")
            && out.contains("pk shop:user#uniq:by_email:<email>")
            && out.contains(
                "create                 3 (1 BatchGetItem + 1 TransactGetItems + 1 TransactWriteItems)"
            ),
        "{out}"
    );
    let default = kvmodel(&["keys", "schemas/shop.yaml"]);
    let redis = kvmodel(&["keys", "--store", "redis", "schemas/shop.yaml"]);
    assert_eq!(default.stdout, redis.stdout, "redis is the default view");
    assert!(!text(&default.stdout).contains("DynamoDB)"));
    assert_eq!(
        code(&kvmodel(&[
            "keys",
            "--store",
            "cassandra",
            "schemas/shop.yaml"
        ])),
        2
    );
    let o = kvmodel(&["keys", "--format", "mermaid", "schemas/shop.yaml"]);
    assert_eq!(code(&o), 0);
    assert!(
        text(&o.stdout).starts_with("erDiagram\n")
            && text(&o.stdout).contains("User |o--o{ Order : \"user (on_delete: keep)\""),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(
        code(&kvmodel(&[
            "keys",
            "--format",
            "html",
            "schemas/activity.yaml"
        ])),
        2
    );
}

#[test]
fn generate_prints_to_stdout_with_dash_or_without_output() {
    let committed =
        std::fs::read_to_string(repo().join("examples/src/generated/sessions.rs")).unwrap();
    for args in [
        &["generate", "schemas/sessions.yaml", "-o", "-"][..],
        &["generate", "schemas/sessions.yaml"],
    ] {
        let o = kvmodel(args);
        assert_eq!(code(&o), 0, "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout), committed);
    }
    assert!(!repo().join("-").exists(), "no file or directory named `-`");
    let o = kvmodel(&["generate", "schemas/sessions.yaml", "--check"]);
    assert_eq!(code(&o), 2);
    assert!(text(&o.stderr).contains("pass `-o FILE|DIR`"));
}

/// Derive users have `diff`, `check` and `keys` too: a Rust source file of
/// `#[derive(KvEntity)]` structs reads as the derive reads it.
#[test]
fn diff_check_and_keys_read_derive_sources() {
    let (old, new) = (
        "kvmodel-cli/tests/derive/old.rs",
        "kvmodel-cli/tests/derive/new.rs",
    );
    let o = kvmodel(&["diff", old, new]);
    assert_eq!(code(&o), 1, "breaking changes exit 1: {}", text(&o.stderr));
    insta::assert_snapshot!("diff_of_derive_sources", text(&o.stdout));
    assert_eq!(code(&kvmodel(&["diff", new, new])), 0);

    let o = kvmodel(&["check", old]);
    assert_eq!(code(&o), 0);
    assert!(
        text(&o.stderr).contains(
            "kvmodel-cli/tests/derive/old.rs:21:23: warning[W002]: index `by_tier` of `User`"
        ),
        "lints of derive sources, located: {}",
        text(&o.stderr)
    );
    let o = kvmodel(&["keys", new]);
    assert_eq!(code(&o), 0);
    assert!(
        text(&o.stdout).contains("shop:user:<id>"),
        "{}",
        text(&o.stdout)
    );

    let o = kvmodel(&["generate", new]);
    assert_eq!(code(&o), 2, "generate reads schema files only");
    assert!(
        text(&o.stderr).contains("is Rust source"),
        "{}",
        text(&o.stderr)
    );
}

/// The files of a model split between the derive and a schema file.
const MIXED: [&str; 2] = [
    "kvmodel-cli/tests/mixed/accounts.rs",
    "kvmodel-cli/tests/mixed/sessions.yaml",
];

/// A Rust source file and a schema file read as one model: the relations
/// between them resolve, `keys` prints the entities of both, and the
/// declarations of the schema file list the dependents the Rust source
/// adds (the file the tests compile is up to date).
#[test]
fn rust_sources_and_schema_files_mix() {
    let o = kvmodel(&["check", MIXED[0], MIXED[1]]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("ok kvmodel-cli/tests/mixed/accounts.rs (2 entities)"),
        "{}",
        text(&o.stderr)
    );
    let o = kvmodel(&["keys", MIXED[0], MIXED[1]]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    for key in [
        "app:account:<id>",
        "app:apikey:<id>",
        "app:session:<id>",
        "app:workspace:<id>",
    ] {
        assert!(text(&o.stdout).contains(key), "{key}: {}", text(&o.stdout));
    }
    let o = kvmodel(&[
        "generate",
        MIXED[0],
        MIXED[1],
        "-o",
        "kvmodel-cli/tests/mixed/sessions.rs",
        "--check",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let o = kvmodel(&["acl", "--schema", MIXED[0], MIXED[1]]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("~app:*"), "{}", text(&o.stdout));
}

/// Keys of two files that meet are E126, reported in the file of the
/// later entity; a name declared in both files is E125.
#[test]
fn collisions_across_files_are_found() {
    let clash = "kvmodel-cli/tests/mixed/clash.yaml";
    let o = kvmodel(&["check", MIXED[0], MIXED[1], clash]);
    assert_eq!(code(&o), 1);
    assert!(
        text(&o.stderr).contains(
            "kvmodel-cli/tests/mixed/clash.yaml:6:10: error[E126]: the key template `account:{id}` of `Login` shares a key space with `Account`"
        ),
        "{}",
        text(&o.stderr)
    );
    let o = kvmodel(&["check", clash, MIXED[0], MIXED[1]]);
    assert_eq!(code(&o), 1);
    assert!(
        text(&o.stderr).contains(
            "kvmodel-cli/tests/mixed/accounts.rs:13:31: error[E126]: the key template `account:{id}` of `Account` shares a key space with `Login`"
        ),
        "{}",
        text(&o.stderr)
    );
    let o = kvmodel(&[
        "check",
        MIXED[0],
        MIXED[1],
        "kvmodel-cli/tests/mixed/unnamed.rs",
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        text(&o.stderr).contains("kvmodel-cli/tests/mixed/unnamed.rs:10:12: error[E125]: the entity `Account` is declared twice"),
        "{}",
        text(&o.stderr)
    );
}

/// Standalone counters of two files (a schema file's `counters:` and a
/// Rust source's `#[derive(KvCounter)]`) are checked against each other:
/// one key space (E153) or one name (E154) is reported in the file of the
/// later counter, at its key or its name, in either order and for
/// `--schema` too; a counter named like another file's entity is E154 in
/// the counter's file, whichever file comes first.
#[test]
fn counter_clashes_across_files_are_found() {
    let yaml = "kvmodel-cli/tests/mixed/counters.yaml";
    let rust = "kvmodel-cli/tests/mixed/counters.rs";
    let o = kvmodel(&["check", rust]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let in_rust = [
        "kvmodel-cli/tests/mixed/counters.rs:9:31: error[E153]: the counter `PageVisits` has the key space `visits` of counter `Visits`",
        "kvmodel-cli/tests/mixed/counters.rs:17:12: error[E154]: the counter `Signups` clashes with another counter `Signups`",
    ];
    let in_yaml = [
        "kvmodel-cli/tests/mixed/counters.yaml:7:10: error[E153]: the counter `Visits` has the key space `visits` of counter `PageVisits`",
        "kvmodel-cli/tests/mixed/counters.yaml:10:3: error[E154]: the counter `Signups` clashes with another counter `Signups`",
    ];
    for (args, found, not) in [
        (&["check", yaml, rust][..], &in_rust, &in_yaml),
        (&["check", rust, yaml], &in_yaml, &in_rust),
        (&["acl", "--schema", yaml, rust], &in_rust, &in_yaml),
        (&["acl", "--schema", rust, yaml], &in_yaml, &in_rust),
    ] {
        let o = kvmodel(args);
        assert_eq!(code(&o), 1, "{args:?}");
        let stderr = text(&o.stderr);
        for line in found {
            assert!(stderr.contains(line), "{args:?}: {line}\n{stderr}");
        }
        for line in not {
            assert!(!stderr.contains(line), "{args:?}: {line}\n{stderr}");
        }
        assert!(stderr.contains("kvmodel: 2 error(s)"), "{args:?}: {stderr}");
    }
    let clash = "kvmodel-cli/tests/mixed/clash.yaml";
    for args in [["check", clash, rust], ["check", rust, clash]] {
        let o = kvmodel(&args);
        assert_eq!(code(&o), 1, "{args:?}");
        let stderr = text(&o.stderr);
        assert!(
            stderr.contains("kvmodel-cli/tests/mixed/counters.rs:24:12: error[E154]: the counter `Login` clashes with an entity `Login`"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("kvmodel: 1 error(s)"), "{args:?}: {stderr}");
    }
}

/// A relation of a schema file's entity whose delete a derived parent
/// enforces needs the parent's `dependent(…)`: the message says so in
/// the parent's file, in attribute syntax.
#[test]
fn a_derived_parent_is_told_to_name_its_dependents() {
    let o = kvmodel(&["check", "kvmodel-cli/tests/mixed/unnamed.rs", MIXED[1]]);
    assert_eq!(code(&o), 1);
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("kvmodel-cli/tests/mixed/unnamed.rs:10:12: error[E148]: `Session` (in `kvmodel-cli/tests/mixed/sessions.yaml`) has the relation `account` to `Account` with `on_delete: cascade`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "add `#[kv(dependent(entity = Session, relation = \"account\"))]` to `Account`"
        ),
        "{stderr}"
    );
}

/// `diff` of two directories: each side is every schema file and Rust
/// source file under it, subdirectories included, read as one model; other
/// files and Rust files without entities are passed over.
#[test]
fn diff_reads_a_directory_as_one_model() {
    let dirs = tempfile::tempdir().unwrap();
    let (old, new) = (dirs.path().join("old"), dirs.path().join("new"));
    for side in [&old, &new] {
        std::fs::create_dir_all(side.join("model")).unwrap();
        std::fs::copy(repo().join(MIXED[0]), side.join("model/accounts.rs")).unwrap();
        std::fs::write(side.join("main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(side.join("README.md"), "not a schema\n").unwrap();
    }
    let sessions = std::fs::read_to_string(repo().join(MIXED[1])).unwrap();
    std::fs::write(old.join("sessions.yaml"), &sessions).unwrap();
    let changed = sessions.replace(
        "      name: string\n",
        "      name: string\n      plan: string\n",
    );
    assert_ne!(changed, sessions);
    std::fs::write(new.join("sessions.yaml"), changed).unwrap();
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());

    let o = kvmodel(&["diff", old, old]);
    assert_eq!(code(&o), 0, "{}{}", text(&o.stdout), text(&o.stderr));
    let o = kvmodel(&["diff", old, new]);
    let report = text(&o.stdout);
    assert_eq!(code(&o), 1, "a new required field breaks: {report}");
    assert!(report.contains("Workspace.plan"), "{report}");
    assert!(
        !report.contains("Account"),
        "only the changed entity: {report}"
    );

    let empty = dirs.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = kvmodel(&["diff", empty.to_str().unwrap(), new]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("holds no schema file"),
        "{}",
        text(&o.stderr)
    );
}

/// Standalone counters: `check` counts them, `keys` prints their keys and
/// `diff` says what a change does to their stored counts.
#[test]
fn check_keys_and_diff_know_standalone_counters() {
    let file = "kvmodel-build/tests/compiles/standalone_counters.yaml";
    let o = kvmodel(&["check", file]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("(1 entities, 3 standalone counters)"),
        "{}",
        text(&o.stderr)
    );
    let o = kvmodel(&["keys", file]);
    assert_eq!(code(&o), 0);
    let keys = text(&o.stdout);
    assert!(keys.contains("PageViews (standalone counter)"), "{keys}");
    assert!(keys.contains("site:views#tally:{<page>:<day>}"), "{keys}");
    let o = kvmodel(&[
        "diff",
        "kvmodel-build/tests/diff/counters_old.yaml",
        "kvmodel-build/tests/diff/counters_new.yaml",
    ]);
    assert_eq!(code(&o), 1, "breaking changes exit 1: {}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("Logins: standalone counter removed"),
        "{}",
        text(&o.stdout)
    );
}
