//! `on_delete` on a relation: `restrict` refuses to delete a parent with
//! children, `cascade` deletes the children first (paged, resumable), and
//! with either a child may only name a parent that exists.

use kvmodel::conformance::{FaultyStore, Harness};
use kvmodel::{Error, KvEntity, PageRequest, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "od", key = "author:{id}")]
#[kv(dependent(entity = Post, relation = author))]
pub struct Author {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "od", key = "post:{id}")]
#[kv(relation(name = author, belongs_to = Author, by = author_id, order_by = at, on_delete = "cascade"))]
#[kv(index(name = by_slug, fields(slug), unique))]
#[kv(counter(name = per_author, group_by(author_id)))]
#[kv(dependent(entity = Comment, relation = post))]
pub struct Post {
    pub id: String,
    pub author_id: String,
    pub slug: String,
    pub at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "od", key = "comment:{id}")]
#[kv(relation(name = post, belongs_to = Post, by = post_id, on_delete = "cascade"))]
#[kv(link(name = "labels", to = Label, inverse = "comments"))]
pub struct Comment {
    pub id: String,
    pub post_id: String,
}

/// The far end of the comments' links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "od", key = "label:{name}")]
pub struct Label {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "od", key = "team:{id}")]
#[kv(dependent(entity = Member, relation = team))]
pub struct Team {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "od", key = "member:{id}")]
#[kv(relation(name = team, belongs_to = Team, by = team_id, on_delete = "restrict"))]
pub struct Member {
    pub id: String,
    pub team_id: String,
}

fn post(id: &str, author: &str, at: i64) -> Post {
    Post {
        id: id.into(),
        author_id: author.into(),
        slug: format!("slug-{id}"),
        at,
    }
}

fn member(id: &str, team: &str) -> Member {
    Member {
        id: id.into(),
        team_id: team.into(),
    }
}

pub async fn a_child_of_a_missing_parent_is_refused<H: Harness>(h: &H) {
    let store = h.store();
    let posts = PostRepo::new(store.clone());
    let err = posts.create(&post("p1", "ghost", 1)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::MissingParent {
                relation: "author",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(posts.get("p1").await.unwrap().is_none(), "nothing written");
    assert!(posts.find_by_slug("slug-p1").await.unwrap().is_none());
    // Upsert and bulk create are refused alike.
    assert!(matches!(
        posts.upsert(&post("p1", "ghost", 1)).await,
        Err(Error::MissingParent { .. })
    ));
    assert!(matches!(
        posts.create_many(&[post("p2", "ghost", 1)]).await,
        Err(Error::Bulk { .. })
    ));
    AuthorRepo::new(store.clone())
        .create(&Author { id: "a".into() })
        .await
        .unwrap();
    posts.create(&post("p1", "a", 1)).await.unwrap();
    // Moving a child to a parent that does not exist is refused too.
    let err = posts
        .modify("p1", |p| p.author_id = "ghost".into())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::MissingParent { .. }), "{err}");
    assert_eq!(posts.get("p1").await.unwrap().unwrap().author_id, "a");
    assert!(posts.verify(10).await.unwrap().is_clean());
}

/// A parent's condition that fails while the parent is there (on a Redis
/// Cluster, when another unfinished write holds the parent) is read again
/// and retried: a create, an update that moves to another parent, an upsert
/// and a bulk create all apply, none reports a missing parent.
pub async fn a_contended_parent_condition_is_retried_not_refused<H: Harness>(h: &H) {
    let store = FaultyStore::new(h.store());
    let (authors, posts) = (AuthorRepo::new(store.clone()), PostRepo::new(store.clone()));
    for id in ["a", "b", "c"] {
        authors.create(&Author { id: id.into() }).await.unwrap();
    }
    let parent = AuthorKeys::record;
    store.contend_next(&parent("a"));
    posts.create(&post("p1", "a", 1)).await.unwrap();
    assert!(!store.contending(), "the create met the contention");
    store.contend_next(&parent("b"));
    posts.update(&post("p1", "b", 2)).await.unwrap();
    assert!(!store.contending(), "the update met the contention");
    store.contend_next(&parent("c"));
    posts.upsert(&post("p1", "c", 3)).await.unwrap();
    assert!(!store.contending(), "the upsert met the contention");
    store.contend_next(&parent("a"));
    posts
        .create_many(&[post("p2", "b", 4), post("p3", "a", 5)])
        .await
        .unwrap();
    assert!(!store.contending(), "the bulk create met the contention");
    assert_eq!(posts.count_per_author("a").await.unwrap(), 1);
    assert_eq!(posts.get("p1").await.unwrap(), Some(post("p1", "c", 3)));
    assert_eq!(posts.count_per_author("c").await.unwrap(), 1);
}

pub async fn restrict_refuses_a_parent_with_children<H: Harness>(h: &H) {
    let store = h.store();
    let teams = TeamRepo::new(store.clone());
    let members = MemberRepo::new(store.clone());
    teams.create(&Team { id: "t".into() }).await.unwrap();
    members.create(&member("m1", "t")).await.unwrap();
    let err = teams.delete("t").await.unwrap_err();
    match &err {
        Error::Restricted {
            entity,
            relation,
            child,
            ..
        } => assert_eq!((*entity, *relation, *child), ("Team", "team", "Member")),
        other => panic!("expected Restricted, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("still has Member records"), "{text}");
    assert!(text.contains("Nothing was deleted"), "{text}");
    assert!(teams.get("t").await.unwrap().is_some(), "nothing deleted");
    assert!(teams.verify(10).await.unwrap().is_clean());
    // Once the children are gone, the delete goes through.
    members.delete("m1").await.unwrap();
    assert!(teams.delete("t").await.unwrap());
    assert!(teams.get("t").await.unwrap().is_none());
}

pub async fn cascade_deletes_children_and_grandchildren_with_their_upkeep<H: Harness>(h: &H) {
    let store = h.store();
    let authors = AuthorRepo::new(store.clone());
    let posts = PostRepo::new(store.clone());
    let comments = CommentRepo::new(store.clone());
    for a in ["a", "b"] {
        authors.create(&Author { id: a.into() }).await.unwrap();
    }
    // More children than one cascade page.
    for i in 0..150 {
        let author = if i % 10 == 0 { "b" } else { "a" };
        posts
            .create(&post(&format!("p{i}"), author, i))
            .await
            .unwrap();
    }
    for i in 0..5 {
        comments
            .create(&Comment {
                id: format!("c{i}"),
                post_id: "p1".into(),
            })
            .await
            .unwrap();
    }
    assert_eq!(posts.count_per_author("a").await.unwrap(), 135);
    assert!(authors.delete("a").await.unwrap());
    assert!(authors.get("a").await.unwrap().is_none());
    // Every child of `a` is gone with its claim, counter and listing entry;
    // `b`'s stay.
    assert_eq!(posts.count_all().await.unwrap(), 15);
    assert_eq!(posts.count_per_author("a").await.unwrap(), 0);
    assert_eq!(posts.count_per_author("b").await.unwrap(), 15);
    assert!(posts.find_by_slug("slug-p1").await.unwrap().is_none());
    assert!(posts.find_by_slug("slug-p10").await.unwrap().is_some());
    let listed = posts
        .list_by_author("a", PageRequest::new(10))
        .await
        .unwrap();
    assert!(listed.items.is_empty());
    assert_eq!(
        store
            .collection_len(&PostKeys::relation_author("a"))
            .await
            .unwrap(),
        0
    );
    // The grandchildren went with their post.
    assert_eq!(comments.count_all().await.unwrap(), 0);
    for d in [
        posts.verify(50).await.unwrap(),
        comments.verify(50).await.unwrap(),
        authors.verify(50).await.unwrap(),
    ] {
        assert!(d.is_clean(), "{d:?}");
    }
}

pub async fn a_cascade_that_dies_midway_lies_nowhere_and_finishes_when_run_again<H: Harness>(
    h: &H,
) {
    let store = h.store();
    let authors = AuthorRepo::new(store.clone());
    let posts = PostRepo::new(store.clone());
    authors.create(&Author { id: "a".into() }).await.unwrap();
    for i in 0..100 {
        posts.create(&post(&format!("p{i}"), "a", i)).await.unwrap();
    }
    let dying = FaultyStore::new(store.clone());
    dying.die_after(37);
    let err = AuthorRepo::new(dying).delete("a").await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    // The parent is still there, with the children not yet deleted; every
    // listing, lookup and counter says so.
    assert!(authors.get("a").await.unwrap().is_some());
    let left = posts.count_all().await.unwrap();
    assert!(left > 0 && left < 100, "{left} left");
    assert_eq!(posts.count_per_author("a").await.unwrap(), left);
    let mut listed = 0;
    let mut page = PageRequest::new(30);
    loop {
        let p = posts.list_by_author("a", page.clone()).await.unwrap();
        listed += p.items.len() as i64;
        match p.next {
            Some(next) => page = page.after(next),
            None => break,
        }
    }
    assert_eq!(listed, left);
    for d in [
        posts.verify(50).await.unwrap(),
        authors.verify(50).await.unwrap(),
    ] {
        assert!(d.is_clean(), "{d:?}");
    }
    // Running the delete again finishes the job.
    assert!(authors.delete("a").await.unwrap());
    assert_eq!(posts.count_all().await.unwrap(), 0);
    assert_eq!(posts.count_per_author("a").await.unwrap(), 0);
    assert!(posts.verify(50).await.unwrap().is_clean());
}

pub async fn a_child_created_during_a_restricted_delete_never_outlives_its_parent<H: Harness>(
    h: &H,
) {
    let store = h.store();
    let teams = TeamRepo::new(store.clone());
    let members = MemberRepo::new(store.clone());
    for round in 0..20 {
        let team = format!("t{round}");
        teams.create(&Team { id: team.clone() }).await.unwrap();
        let (t2, m2) = (teams.clone(), MemberRepo::new(store.clone()));
        let (tid, mid) = (team.clone(), format!("m{round}"));
        let deleting = tokio::spawn(async move { t2.delete(&tid).await });
        let joining = tokio::spawn(async move { m2.create(&member(&mid, &tid_of(&mid))).await });
        let deleted = deleting.await.unwrap();
        let joined = joining.await.unwrap();
        let parent = teams.get(&team).await.unwrap();
        let child = members.get(&format!("m{round}")).await.unwrap();
        match (deleted, joined) {
            // The delete went first: the child was refused.
            (Ok(true), Err(Error::MissingParent { .. })) => {
                assert!(parent.is_none() && child.is_none());
            }
            // The child went first: the delete was refused.
            (Err(Error::Restricted { .. }), Ok(())) => {
                assert!(parent.is_some() && child.is_some());
            }
            (d, j) => panic!("round {round}: delete {d:?}, create {j:?}"),
        }
    }
    assert!(members.verify(50).await.unwrap().is_clean());
}

/// The team a member of the concurrency test joins: `m7` joins `t7`.
fn tid_of(member: &str) -> String {
    format!("t{}", &member[1..])
}

/// A cascade deletes each child with all of its upkeep, links included: the
/// deleted comment's link collection goes with it, and the far side's
/// listing skips (and removes) the entry that pointed to it.
pub async fn a_cascade_removes_the_links_of_the_children_it_deletes<H: Harness>(h: &H) {
    let store = h.store();
    let authors = AuthorRepo::new(store.clone());
    let posts = PostRepo::new(store.clone());
    let comments = CommentRepo::new(store.clone());
    let labels = LabelRepo::new(store.clone());
    authors.create(&Author { id: "a".into() }).await.unwrap();
    posts.create(&post("p1", "a", 1)).await.unwrap();
    for id in ["c1", "c2"] {
        let c = Comment {
            id: id.into(),
            post_id: "p1".into(),
        };
        comments.create(&c).await.unwrap();
    }
    labels.create(&Label { name: "red".into() }).await.unwrap();
    assert!(comments.link_labels("c1", "red").await.unwrap());
    assert!(comments.link_labels("c2", "red").await.unwrap());
    assert_eq!(labels.count_comments("red").await.unwrap(), 2);

    assert!(authors.delete("a").await.unwrap());
    assert_eq!(comments.get("c1").await.unwrap(), None);
    assert_eq!(comments.count_labels("c1").await.unwrap(), 0);
    let page = comments
        .list_labels("c1", PageRequest::new(10))
        .await
        .unwrap();
    assert!(
        page.items.is_empty(),
        "the deleted comment's own links are gone"
    );

    let page = labels
        .list_comments("red", PageRequest::new(10))
        .await
        .unwrap();
    assert!(
        page.items.is_empty(),
        "entries of deleted comments are skipped"
    );
    assert_eq!(
        labels.count_comments("red").await.unwrap(),
        0,
        "the listing removed the stale entries with their count"
    );
    // Nothing of the comments' links is left in the store.
    let left = store.scan("od:comment", None, 100).await.unwrap();
    assert!(left.keys.is_empty(), "left: {:?}", left.keys);
}
