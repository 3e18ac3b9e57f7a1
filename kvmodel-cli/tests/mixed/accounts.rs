//! Accounts, declared with the derive; `sessions.yaml` declares their
//! sessions, and `kvmodel` reads both files as one model.

use kvmodel::KvEntity;
use serde::{Deserialize, Serialize};

// The tests declare the entities of `sessions.yaml` beside these
// (`kvmodel generate accounts.rs sessions.yaml -o sessions.rs`).
use super::sessions::*;

/// An account: a session of `sessions.yaml` belongs to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "app", key = "account:{id}")]
#[kv(index(name = by_email, fields(email), unique))]
#[kv(dependent(entity = Session, relation = account))]
pub struct Account {
    pub id: String,
    pub email: String,
}

/// An API key of a workspace of `sessions.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "app", key = "apikey:{id}")]
#[kv(relation(name = workspace, belongs_to = Workspace, by = workspace_id, on_delete = "cascade"))]
pub struct ApiKey {
    pub id: String,
    pub workspace_id: String,
}
