//! A model of two files, `tests/mixed/accounts.rs` (derived entities) and
//! `tests/mixed/sessions.yaml` (a schema file, declared in
//! `tests/mixed/sessions.rs`), with relations both ways: the maintenance
//! commands read both files as one model.

use kvmodel::{Batch, Store};

use super::support::*;

#[path = "../mixed/accounts.rs"]
pub mod accounts;

/// The declarations `kvmodel generate` writes of `sessions.yaml`.
pub mod sessions {
    use super::accounts::*;

    include!("../mixed/sessions.rs");
}

use accounts::{Account, AccountRepo, ApiKey, ApiKeyRepo};
use sessions::{Session, SessionKeys, SessionRepo, Workspace, WorkspaceRepo};

const SCHEMAS: [&str; 2] = [
    "kvmodel-cli/tests/mixed/accounts.rs",
    "kvmodel-cli/tests/mixed/sessions.yaml",
];

/// `verify` walks the entities of both files, and finds a record of one of
/// them that cannot be read.
pub async fn entities_of_both_files_are_verified(b: Backend) {
    let store = b.open().await;
    AccountRepo::new(store.clone())
        .create(&Account {
            id: "a1".into(),
            email: "ada@example.com".into(),
        })
        .await
        .unwrap();
    SessionRepo::new(store.clone())
        .create(&Session {
            id: "s1".into(),
            account_id: "a1".into(),
            started: 1,
        })
        .await
        .unwrap();
    WorkspaceRepo::new(store.clone())
        .create(&Workspace {
            id: "w1".into(),
            name: "lab".into(),
        })
        .await
        .unwrap();
    ApiKeyRepo::new(store.clone())
        .create(&ApiKey {
            id: "k1".into(),
            workspace_id: "w1".into(),
        })
        .await
        .unwrap();
    drop(store);
    let url = b.url();
    let verify = || {
        kvmodel(&[
            "verify", "--schema", SCHEMAS[0], SCHEMAS[1], "--store", &url, "-q",
        ])
    };
    let o = verify();
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    for entity in ["Account", "ApiKey", "Session", "Workspace"] {
        assert!(
            out(&o).contains(&format!("{entity} (1 records): clean")),
            "{}",
            out(&o)
        );
    }

    let store = b.open().await;
    let mut batch = Batch::new();
    batch.put(SessionKeys::record("s2"), b"not a session".to_vec(), None);
    assert!(store.commit(batch).await.unwrap().is_applied());
    drop(store);
    let o = verify();
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("app:session:s2"), "{}", out(&o));
}
