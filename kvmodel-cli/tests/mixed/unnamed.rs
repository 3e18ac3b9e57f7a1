//! `Account` without the `dependent(…)` that the cascade of `sessions.yaml`
//! needs.

use kvmodel::KvEntity;
use serde::{Deserialize, Serialize};

/// An account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "app", key = "account:{id}")]
pub struct Account {
    pub id: String,
    pub email: String,
}
