//! The entity of `clicks.yaml`, declared for the tests that write it
//! (`kvmodel generate kvmodel-cli/tests/ops/clicks.yaml`).

use kvmodel::KvEntity;
use serde::{Deserialize, Serialize};

/// A click on a short link: it expires, its kept counts stay.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "clicks", key = "click:{id}", ttl = "1h")]
#[kv(counter(name = live, group_by(link)))]
#[kv(counter(name = per_link, group_by(link), keep = "on_expiry"))]
#[kv(counter(name = ever, group_by(link), keep = "always"))]
pub struct Click {
    pub id: String,
    pub link: String,
}

/// Click `id` on `link`.
pub fn click(id: &str, link: &str) -> Click {
    Click {
        id: id.into(),
        link: link.into(),
    }
}
