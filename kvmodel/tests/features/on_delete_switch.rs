//! Switching a relation from `on_delete: keep` to `restrict` changes no
//! stored record: each parent's count of children is new, so until
//! `reconcile` counts the children already stored, a parent's delete does
//! not see them (and `verify` reports the count). `kvmodel diff` and
//! docs/schema.md say exactly this; this test keeps the runtime and those
//! words in step, on every backend.

use kvmodel::Error;
use kvmodel::conformance::Harness;

/// As deployed: `keep`, the default.
mod deployed {
    use kvmodel::KvEntity;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "sw", key = "author:{id}")]
    pub struct Author {
        pub id: String,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "sw", key = "post:{id}")]
    #[kv(relation(name = author, belongs_to = Author, by = author_id))]
    pub struct Post {
        pub id: String,
        pub author_id: String,
    }
}

/// The same entities with the relation switched to `restrict`.
mod changed {
    use kvmodel::KvEntity;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "sw", key = "author:{id}")]
    #[kv(dependent(entity = Post, relation = author))]
    pub struct Author {
        pub id: String,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "sw", key = "post:{id}")]
    #[kv(relation(name = author, belongs_to = Author, by = author_id, on_delete = "restrict"))]
    pub struct Post {
        pub id: String,
        pub author_id: String,
    }
}

kvmodel_runtime::on_every_backend!(
    after_keep_becomes_restrict_reconcile_counts_the_children_already_stored
);

async fn after_keep_becomes_restrict_reconcile_counts_the_children_already_stored<H: Harness>(
    h: &H,
) {
    let (old_authors, old_posts) = (
        deployed::AuthorRepo::new(h.store()),
        deployed::PostRepo::new(h.store()),
    );
    for a in ["ada", "bob"] {
        old_authors
            .create(&deployed::Author { id: a.into() })
            .await
            .unwrap();
    }
    for (id, a) in [("p1", "ada"), ("p2", "ada"), ("p3", "bob")] {
        let p = deployed::Post {
            id: id.into(),
            author_id: a.into(),
        };
        old_posts.create(&p).await.unwrap();
    }

    let (authors, posts) = (
        changed::AuthorRepo::new(h.store()),
        changed::PostRepo::new(h.store()),
    );
    // Before reconcile: the counts are missing, and verify says so.
    let drift = posts.verify(10).await.unwrap();
    let mut counted: Vec<_> = drift
        .counters
        .iter()
        .map(|c| (c.key.clone(), c.actual, c.expected))
        .collect();
    counted.sort();
    assert_eq!(
        counted,
        [
            ("sw:post#count:author.children:ada".to_owned(), 0, 2),
            ("sw:post#count:author.children:bob".to_owned(), 0, 1),
        ],
        "{drift:?}"
    );
    // …and a delete does not see the children stored before the switch.
    assert!(
        authors.delete("bob").await.unwrap(),
        "a delete counts only the children counted so far"
    );

    // reconcile counts them; from then on restrict holds.
    posts.reconcile(10).await.unwrap();
    assert!(posts.verify(10).await.unwrap().counters.is_empty());
    match authors.delete("ada").await {
        Err(Error::Restricted { relation, .. }) => assert_eq!(relation, "author"),
        other => panic!("expected Restricted, got {other:?}"),
    }
    assert!(authors.get("ada").await.unwrap().is_some());
    for id in ["p1", "p2"] {
        posts.delete(id).await.unwrap();
    }
    assert!(authors.delete("ada").await.unwrap());
}
