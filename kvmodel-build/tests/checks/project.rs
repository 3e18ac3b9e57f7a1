//! Projects: a Rust source file of derived entities and a schema file read
//! as one model.

use kvmodel_build::{Severity, load_project};

const ACCOUNTS: &str = r#"
use kvmodel::KvEntity;

#[derive(KvEntity)]
#[kv(namespace = "app", key = "account:{id}")]
#[kv(dependent(entity = Session, relation = account))]
pub struct Account {
    pub id: String,
}

#[derive(KvEntity)]
#[kv(namespace = "app", key = "apikey:{id}")]
#[kv(relation(name = workspace, belongs_to = Workspace, by = workspace_id, on_delete = "cascade"))]
pub struct ApiKey {
    pub id: String,
    pub workspace_id: String,
}
"#;

const SESSIONS: &str = "kvmodel: 1
namespace: app
entities:
  Session:
    allow: [W004]
    key: \"session:{id}\"
    fields: { id: string, account_id: string }
    relations:
      account: { belongs_to: Account, by: account_id, on_delete: cascade }
  Workspace:
    key: \"workspace:{id}\"
    fields: { id: string }
";

fn project(files: &[(&str, &str)]) -> kvmodel_build::Project {
    let inputs: Vec<(String, String)> = files
        .iter()
        .map(|(f, s)| ((*f).to_owned(), (*s).to_owned()))
        .collect();
    load_project(&inputs)
}

/// Relations resolve across the files both ways, and a schema file's
/// parent lists the dependents of the Rust source's children.
#[test]
fn relations_cross_the_files() {
    let p = project(&[("accounts.rs", ACCOUNTS), ("sessions.yaml", SESSIONS)]);
    assert!(!p.has_errors(), "{}", p.render_diagnostics(false));
    assert_eq!(
        p.count(Severity::Warning),
        0,
        "{}",
        p.render_diagnostics(false)
    );
    let names: Vec<&str> = p.model.entities.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["Account", "ApiKey", "Session", "Workspace"]);
    let workspace = &p.schemas[1].model.entities[1];
    assert_eq!(workspace.dependents.len(), 1);
    assert_eq!(workspace.dependents[0].entity.as_str(), "ApiKey");
}

/// Keys that meet across files are E126 in the file of the later entity.
#[test]
fn key_spaces_meet_across_files() {
    let clash = "kvmodel: 1\nnamespace: app\nentities:\n  Login:\n    key: \"account:{id}\"\n    fields: { id: string }\n";
    let p = project(&[
        ("accounts.rs", ACCOUNTS),
        ("sessions.yaml", SESSIONS),
        ("clash.yaml", clash),
    ]);
    let d = &p.schemas[2].diagnostics;
    assert!(
        d.iter().any(|d| d.code == "E126"),
        "{}",
        p.render_diagnostics(false)
    );
    let p = project(&[
        ("clash.yaml", clash),
        ("accounts.rs", ACCOUNTS),
        ("sessions.yaml", SESSIONS),
    ]);
    assert!(
        p.schemas[1]
            .render_diagnostics(false)
            .contains("accounts.rs:5:31: error[E126]"),
        "{}",
        p.render_diagnostics(false)
    );
}

/// A derived parent that does not name a schema file's child is told to,
/// in attribute syntax, in its own file.
#[test]
fn a_derived_parent_names_its_dependents() {
    let accounts = ACCOUNTS.replace(
        "#[kv(dependent(entity = Session, relation = account))]\n",
        "",
    );
    let p = project(&[("accounts.rs", &accounts), ("sessions.yaml", SESSIONS)]);
    let text = p.schemas[0].render_diagnostics(false);
    assert!(text.contains("accounts.rs:6:12: error[E148]"), "{text}");
    assert!(
        text.contains(
            "add `#[kv(dependent(entity = Session, relation = \"account\"))]` to `Account`"
        ),
        "{text}"
    );
}
