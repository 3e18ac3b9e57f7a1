//! An index added without `since` (version unchanged): upkeep takes every
//! stored record to have its entry already, so neither an update that
//! leaves the indexed field alone nor `migrate_all` adds one; `reconcile`
//! fills it. `kvmodel diff` says exactly this; this test keeps the runtime
//! and those words in step, on every backend.

use kvmodel::PageRequest;
use kvmodel::conformance::Harness;

/// The entity as deployed: no index.
mod deployed {
    use kvmodel::KvEntity;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "shop", key = "item:{id}")]
    pub struct Item {
        pub id: String,
        pub kind: String,
        pub note: String,
    }
}

/// The same entity with an index added, without `since`.
mod changed {
    use kvmodel::KvEntity;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "shop", key = "item:{id}")]
    #[kv(index(name = "by_kind", fields(kind)))]
    pub struct Item {
        pub id: String,
        pub kind: String,
        pub note: String,
    }
}

kvmodel_runtime::on_every_backend!(only_reconcile_fills_an_index_added_without_since);

async fn only_reconcile_fills_an_index_added_without_since<H: Harness>(h: &H) {
    let old = deployed::ItemRepo::new(h.store());
    for id in ["a", "b"] {
        old.create(&deployed::Item {
            id: id.into(),
            kind: "tool".into(),
            note: String::new(),
        })
        .await
        .unwrap();
    }
    let new = changed::ItemRepo::new(h.store());
    let listed = |page: kvmodel::Page<changed::Item>| -> Vec<String> {
        page.items.into_iter().map(|i| i.id).collect()
    };

    let progress = new.migrate_all(10, |_| {}).await.unwrap();
    assert_eq!(
        progress.changed, 0,
        "nothing is older than the current version"
    );
    new.modify("a", |i| i.note = "touched".into())
        .await
        .unwrap();
    let page = new
        .list_by_kind("tool", PageRequest::new(10))
        .await
        .unwrap();
    assert!(
        listed(page).is_empty(),
        "neither migrate_all nor an update of another field adds the entry"
    );

    let drift = new.reconcile(10).await.unwrap();
    assert_eq!(drift.missing_members.len(), 2, "{drift:?}");
    let page = new
        .list_by_kind("tool", PageRequest::new(10))
        .await
        .unwrap();
    let mut ids = listed(page);
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    assert!(new.verify(10).await.unwrap().is_clean());
}
