//! Links and unlinks inside transactions, on every backend: a record
//! created and linked in one commit, links and unlinks of one record that
//! see each other, refused transactions that leave nothing behind, and
//! concurrent transactions that keep every count exact.

use std::sync::Arc;
use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity, PageRequest, Store};
use kvmodel_runtime::__private::{Entity, registry_key};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "txl", key = "post:{id}")]
#[kv(link(name = "tags", to = Tag, inverse = "posts"))]
#[kv(counter(name = "total"))]
pub struct Post {
    pub id: String,
    #[kv(unique)]
    pub slug: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "txl", key = "tag:{name}")]
pub struct Tag {
    pub name: String,
}

/// Expires by the entity's `ttl`; its links go with the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "txl", key = "visit:{id}", ttl = "6s")]
#[kv(link(name = "tags", to = Tag, inverse = "visits"))]
pub struct Visit {
    pub id: String,
}

fn post(id: &str, slug: &str) -> Post {
    Post {
        id: id.into(),
        slug: slug.into(),
    }
}

fn tag(name: &str) -> Tag {
    Tag { name: name.into() }
}

async fn setup<S: Store>(store: &S, tags: &[&str]) -> (PostRepo<S>, TagRepo<S>) {
    let (p, t) = (PostRepo::new(store.clone()), TagRepo::new(store.clone()));
    for name in tags {
        t.create(&tag(name)).await.unwrap();
    }
    (p, t)
}

async fn names<S: Store>(posts: &PostRepo<S>, id: &str) -> Vec<String> {
    let page = posts.list_tags(id, PageRequest::new(100)).await.unwrap();
    page.items.into_iter().map(|t| t.name).collect()
}

async fn post_ids<S: Store>(tags: &TagRepo<S>, name: &str) -> Vec<String> {
    let page = tags.list_posts(name, PageRequest::new(100)).await.unwrap();
    page.items.into_iter().map(|p| p.id).collect()
}

/// A post created and tagged twice in one transaction: both links see the
/// post the transaction created and the registry the first link wrote.
async fn a_new_record_is_linked_in_its_creating_transaction<H: Harness>(h: &H) {
    let store = h.store();
    let (posts, tags) = setup(&store, &["rust", "kv"]).await;
    let p = &posts;
    kvmodel::transaction(&store, |tx| async move {
        let view = p.in_tx(&tx);
        view.create(&post("p1", "hello")).await?;
        assert!(view.link_tags("p1", "rust").await?);
        assert!(view.link_tags("p1", "kv").await?);
        assert!(
            !view.link_tags("p1", "kv").await?,
            "the transaction sees its own link"
        );
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(names(&posts, "p1").await, ["kv", "rust"]);
    assert_eq!(posts.count_tags("p1").await.unwrap(), 2);
    assert_eq!(tags.count_posts("rust").await.unwrap(), 1);
    assert_eq!(tags.count_posts("kv").await.unwrap(), 1);
    assert_eq!(post_ids(&tags, "kv").await, ["p1"]);
    assert_eq!(posts.count_total().await.unwrap(), 1);
    // A missing far record refuses the link at once, and the transaction
    // writes nothing.
    let refused = kvmodel::transaction(&store, |tx| async move {
        p.in_tx(&tx).create(&post("p2", "other")).await?;
        p.in_tx(&tx).link_tags("p2", "missing").await
    })
    .await;
    assert!(
        matches!(refused, Err(Error::NotFound { .. })),
        "{refused:?}"
    );
    assert_eq!(posts.get("p2").await.unwrap(), None);
    assert!(posts.verify(16).await.unwrap().is_clean());
    assert!(tags.verify(16).await.unwrap().is_clean());
}

/// Links and unlinks of one record in one transaction compose: the
/// unlink sees the link staged before it, the counts add up.
async fn links_and_unlinks_in_one_transaction<H: Harness>(h: &H) {
    let store = h.store();
    let (posts, tags) = setup(&store, &["a", "b", "c"]).await;
    posts.create(&post("p1", "one")).await.unwrap();
    posts.link_tags("p1", "a").await.unwrap();
    let p = &posts;
    let tx = kvmodel::Transaction::new(store.clone());
    let view = p.in_tx(&tx);
    assert!(view.unlink_tags("p1", "a").await.unwrap());
    assert!(view.link_tags("p1", "b").await.unwrap());
    assert!(view.link_tags("p1", "c").await.unwrap());
    assert!(
        view.unlink_tags("p1", "c").await.unwrap(),
        "the unlink sees the link staged before it"
    );
    assert!(!view.unlink_tags("p1", "c").await.unwrap());
    assert!(!view.unlink_tags("p1", "a").await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(names(&posts, "p1").await, ["b"]);
    assert_eq!(posts.count_tags("p1").await.unwrap(), 1);
    for (name, n) in [("a", 0), ("b", 1), ("c", 0)] {
        assert_eq!(tags.count_posts(name).await.unwrap(), n, "tag {name}");
    }
    // A record linked in a transaction cannot be deleted in it.
    let tx = kvmodel::Transaction::new(store.clone());
    p.in_tx(&tx).link_tags("p1", "a").await.unwrap();
    let refused = p.in_tx(&tx).delete(&PostKeys::record("p1")).await;
    assert!(
        matches!(refused, Err(Error::InvalidBatch { .. })),
        "{refused:?}"
    );
    let refused = tags.in_tx(&tx).delete(&TagKeys::record("a")).await;
    assert!(
        matches!(refused, Err(Error::InvalidBatch { .. })),
        "{refused:?}"
    );
    drop(tx);
    assert_eq!(tags.count_posts("a").await.unwrap(), 0, "nothing committed");
    assert!(posts.verify(16).await.unwrap().is_clean());
    assert!(tags.verify(16).await.unwrap().is_clean());
}

/// A transaction refused at the commit (the unique value is taken) leaves
/// no record, edge, count or registry behind.
async fn a_refused_transaction_leaves_no_link<H: Harness>(h: &H) {
    let store = h.store();
    let (posts, tags) = setup(&store, &["a", "b"]).await;
    posts.create(&post("p1", "taken")).await.unwrap();
    let p = &posts;
    let refused = kvmodel::transaction(&store, |tx| async move {
        p.in_tx(&tx).create(&post("p2", "taken")).await?;
        p.in_tx(&tx).link_tags("p2", "a").await?;
        p.in_tx(&tx).link_tags("p2", "b").await?;
        p.in_tx(&tx).link_tags("p1", "a").await?;
        Ok(())
    })
    .await;
    assert!(
        matches!(refused, Err(Error::UniqueViolation { .. })),
        "{refused:?}"
    );
    assert_eq!(posts.get("p2").await.unwrap(), None);
    assert_eq!(posts.count_tags("p1").await.unwrap(), 0);
    assert_eq!(posts.count_tags("p2").await.unwrap(), 0);
    assert_eq!(tags.count_posts("a").await.unwrap(), 0);
    assert_eq!(tags.count_posts("b").await.unwrap(), 0);
    assert!(post_ids(&tags, "a").await.is_empty());
    let registries = [
        registry_key(<Post as Entity>::space(), &PostKeys::record("p2")),
        registry_key(<Tag as Entity>::space(), &TagKeys::record("a")),
    ];
    for key in registries {
        assert_eq!(store.get(&key).await.unwrap(), None, "{key}");
    }
    assert!(posts.verify(16).await.unwrap().is_clean());
    assert!(tags.verify(16).await.unwrap().is_clean());
}

/// 16 transactions race, each creating a post and linking it to the same
/// two tags: every count is exact.
async fn concurrent_transactions_keep_link_counts_exact<H: Harness>(h: &H) {
    let store = h.store();
    let (posts, tags) = setup(&store, &["hot", "cold"]).await;
    let shared = Arc::new((store.clone(), posts.clone()));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let (store, posts) = &*shared;
                let id = format!("p{i:02}");
                let id = id.as_str();
                kvmodel::transaction(store, |tx| async move {
                    let view = posts.in_tx(&tx);
                    view.create(&post(id, id)).await?;
                    view.link_tags(id, "hot").await?;
                    view.link_tags(id, "cold").await?;
                    Ok(())
                })
                .await
            })
        })
        .collect();
    let mut done = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => done += 1,
            // Under heavy contention a transaction may give up; it wrote
            // nothing.
            Err(Error::Conflict { .. }) => {}
            Err(e) => panic!("a transaction failed: {e}"),
        }
    }
    assert!(done > 0);
    assert_eq!(posts.count_total().await.unwrap(), done);
    assert_eq!(tags.count_posts("hot").await.unwrap(), done);
    assert_eq!(tags.count_posts("cold").await.unwrap(), done);
    assert_eq!(
        post_ids(&tags, "hot").await.len(),
        usize::try_from(done).unwrap()
    );
    for i in 0..16 {
        let id = format!("p{i:02}");
        let n = i64::from(posts.get(&id).await.unwrap().is_some()) * 2;
        assert_eq!(posts.count_tags(&id).await.unwrap(), n, "{id}");
    }
    assert!(posts.verify(16).await.unwrap().is_clean());
    assert!(tags.verify(16).await.unwrap().is_clean());
}

/// A record of an expiring entity created and linked in one transaction:
/// its links follow the rules of expiring records (kept until the sweep,
/// which removes them with the far entries).
async fn an_expiring_record_linked_in_a_transaction_is_swept_with_its_links<H: Harness>(h: &H) {
    let store = h.store();
    let (_, tags) = setup(&store, &["a"]).await;
    let visits = VisitRepo::new(store.clone());
    let v = &visits;
    kvmodel::transaction(&store, |tx| async move {
        v.in_tx(&tx).create(&Visit { id: "v1".into() }).await?;
        v.in_tx(&tx).link_tags("v1", "a").await?;
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(tags.count_visits("a").await.unwrap(), 1);
    assert_eq!(visits.count_tags("v1").await.unwrap(), 1);
    h.pass(Duration::from_secs(7)).await;
    let page = tags.list_visits("a", PageRequest::new(10)).await.unwrap();
    assert!(page.items.is_empty(), "an expired visit is not listed");
    assert_eq!(visits.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(tags.count_visits("a").await.unwrap(), 0);
    assert_eq!(visits.count_tags("v1").await.unwrap(), 0);
    assert!(visits.verify(16).await.unwrap().is_clean());
    assert!(tags.verify(16).await.unwrap().is_clean());
}

kvmodel_runtime::on_every_backend!(
    a_new_record_is_linked_in_its_creating_transaction,
    links_and_unlinks_in_one_transaction,
    a_refused_transaction_leaves_no_link,
    concurrent_transactions_keep_link_counts_exact,
    an_expiring_record_linked_in_a_transaction_is_swept_with_its_links,
);
