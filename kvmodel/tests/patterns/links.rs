//! `links:`: many-to-many links without a junction record. Link and unlink
//! write both directions and both counts in one commit; listings skip (and
//! remove) entries of records deleted since; counts equal the collections.

use std::collections::BTreeSet;

use kvmodel::conformance::{CountingStore, Harness};
use kvmodel::{Error, KvEntity, PageRequest, Store};
use kvmodel_runtime::__private::cost::Access;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lnk", key = "post:{id}")]
#[kv(link(name = "tags", to = Tag, inverse = "posts"))]
pub struct Post {
    pub id: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lnk", key = "tag:{name}")]
pub struct Tag {
    pub name: String,
}

/// A composite far key, and a link of an entity to itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lnk", key = "team:{id}")]
#[kv(link(name = "members", to = Member, inverse = "teams"))]
pub struct Team {
    pub id: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lnk", key = "member:{org}:{user}")]
#[kv(link(name = "mentors", to = Member, inverse = "mentees"))]
pub struct Member {
    pub org: String,
    pub user: String,
}

fn post(id: &str) -> Post {
    Post {
        id: id.into(),
        title: format!("about {id}"),
    }
}

fn tag(name: &str) -> Tag {
    Tag { name: name.into() }
}

async fn setup<S: Store>(store: &S, posts: &[&str], tags: &[&str]) -> (PostRepo<S>, TagRepo<S>) {
    let (p, t) = (PostRepo::new(store.clone()), TagRepo::new(store.clone()));
    for id in posts {
        p.create(&post(id)).await.unwrap();
    }
    for name in tags {
        t.create(&tag(name)).await.unwrap();
    }
    (p, t)
}

async fn tags_of<S: Store>(p: &PostRepo<S>, id: &str) -> Vec<String> {
    let page = p.list_tags(id, PageRequest::new(100)).await.unwrap();
    page.items.into_iter().map(|t| t.name).collect()
}

async fn posts_of<S: Store>(t: &TagRepo<S>, name: &str) -> Vec<String> {
    let page = t.list_posts(name, PageRequest::new(100)).await.unwrap();
    page.items.into_iter().map(|p| p.id).collect()
}

/// Every key under the test namespace with its value (a collection with
/// its size).
async fn snapshot<S: Store>(store: &S) -> BTreeSet<(String, Vec<u8>)> {
    let mut out = BTreeSet::new();
    let mut cursor = None;
    loop {
        let page = store.scan("lnk:", cursor, 100).await.unwrap();
        for k in page.keys {
            let value = match store.get(&k).await {
                Ok(Some(v)) => v,
                _ => {
                    let len = store.collection_len(&k).await.unwrap();
                    format!("{len} members").into_bytes()
                }
            };
            out.insert((k, value));
        }
        match page.next {
            Some(n) => cursor = Some(n),
            None => return out,
        }
    }
}

pub async fn link_writes_both_directions_and_both_counts<H: Harness>(h: &H) {
    let store = h.store();
    let (p, t) = setup(&store, &["p1", "p2"], &["rust", "redis"]).await;
    assert!(p.link_tags("p1", "rust").await.unwrap());
    assert!(
        !p.link_tags("p1", "rust").await.unwrap(),
        "linking twice changes nothing"
    );
    assert!(p.link_tags("p1", "redis").await.unwrap());
    assert!(p.link_tags("p2", "rust").await.unwrap());
    assert_eq!(tags_of(&p, "p1").await, ["redis", "rust"]);
    assert_eq!(tags_of(&p, "p2").await, ["rust"]);
    assert_eq!(posts_of(&t, "rust").await, ["p1", "p2"]);
    assert_eq!(posts_of(&t, "redis").await, ["p1"]);
    assert_eq!(p.count_tags("p1").await.unwrap(), 2);
    assert_eq!(t.count_posts("rust").await.unwrap(), 2);
    assert_eq!(t.count_posts("redis").await.unwrap(), 1);

    assert!(p.unlink_tags("p1", "rust").await.unwrap());
    assert!(
        !p.unlink_tags("p1", "rust").await.unwrap(),
        "unlinking twice changes nothing"
    );
    assert!(!p.unlink_tags("p2", "redis").await.unwrap(), "never linked");
    assert_eq!(tags_of(&p, "p1").await, ["redis"]);
    assert_eq!(posts_of(&t, "rust").await, ["p2"]);
    assert_eq!(p.count_tags("p1").await.unwrap(), 1);
    assert_eq!(t.count_posts("rust").await.unwrap(), 1);
}

pub async fn listings_page_in_key_order<H: Harness>(h: &H) {
    let store = h.store();
    let names: Vec<String> = (0..7).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (p, _) = setup(&store, &["p"], &refs).await;
    for n in refs.iter().rev() {
        p.link_tags("p", n).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut req = PageRequest::new(3);
    loop {
        let page = p.list_tags("p", req).await.unwrap();
        seen.extend(page.items.into_iter().map(|t| t.name));
        match page.next {
            Some(c) => req = PageRequest::new(3).after(c),
            None => break,
        }
    }
    assert_eq!(seen, names);
}

pub async fn linking_a_missing_record_is_refused_and_writes_nothing<H: Harness>(h: &H) {
    let store = h.store();
    let (p, t) = setup(&store, &["p1"], &["rust"]).await;
    let before = snapshot(&store).await;
    match p.link_tags("p1", "nope").await {
        Err(Error::NotFound { entity, key }) => {
            assert_eq!((entity, key.as_str()), ("Tag", "lnk:tag:nope"));
        }
        other => panic!("expected NotFound for the tag, got {other:?}"),
    }
    match p.link_tags("nope", "rust").await {
        Err(e @ Error::NotFound { .. }) => {
            assert!(
                e.to_string().contains("Post `lnk:post:nope` was not found"),
                "{e}"
            );
        }
        other => panic!("expected NotFound for the post, got {other:?}"),
    }
    assert_eq!(
        snapshot(&store).await,
        before,
        "a refused link wrote something"
    );
    assert_eq!(p.count_tags("p1").await.unwrap(), 0);
    assert_eq!(t.count_posts("rust").await.unwrap(), 0);
}

pub async fn deleting_an_end_removes_its_collection_and_listings_skip_it<H: Harness>(h: &H) {
    let store = h.store();
    let (p, t) = setup(&store, &["p1", "p2"], &["rust", "redis"]).await;
    p.link_tags("p1", "rust").await.unwrap();
    p.link_tags("p1", "redis").await.unwrap();
    p.link_tags("p2", "rust").await.unwrap();

    // The far side's delete (it declares no link) removes its collection.
    assert!(t.delete("rust").await.unwrap());
    let collection = kvmodel::__private::Link {
        from: <Post as kvmodel::__private::Entity>::space(),
        name: "tags",
        to: <Tag as kvmodel::__private::Entity>::space(),
        inverse: "posts",
    }
    .collection_key(kvmodel::__private::End::To, &TagKeys::record("rust"));
    assert_eq!(store.collection_len(&collection).await.unwrap(), 0);
    assert_eq!(t.count_posts("rust").await.unwrap(), 0);
    // The entries left on the posts' side are counted until a listing
    // meets them, never listed, and removed by that listing.
    assert_eq!(p.count_tags("p1").await.unwrap(), 2);
    assert_eq!(tags_of(&p, "p1").await, ["redis"]);
    assert_eq!(p.count_tags("p1").await.unwrap(), 1);

    // A tag created again under the name is another tag: the old links
    // do not come back, on either side.
    t.create(&tag("rust")).await.unwrap();
    assert_eq!(posts_of(&t, "rust").await, Vec::<String>::new());
    assert_eq!(tags_of(&p, "p2").await, Vec::<String>::new());
    assert_eq!(p.count_tags("p2").await.unwrap(), 0);
    assert!(p.link_tags("p2", "rust").await.unwrap());
    assert_eq!(posts_of(&t, "rust").await, ["p2"]);
    assert_eq!(
        (
            p.count_tags("p2").await.unwrap(),
            t.count_posts("rust").await.unwrap()
        ),
        (1, 1)
    );

    // The declaring side's delete, likewise.
    assert!(p.delete("p1").await.unwrap());
    assert_eq!(t.count_posts("redis").await.unwrap(), 1);
    assert_eq!(posts_of(&t, "redis").await, Vec::<String>::new());
    assert_eq!(t.count_posts("redis").await.unwrap(), 0);
    p.create(&post("p1")).await.unwrap();
    assert_eq!(tags_of(&p, "p1").await, Vec::<String>::new());
    assert!(
        p.link_tags("p1", "redis").await.unwrap(),
        "a new incarnation links anew"
    );
    assert_eq!(
        (
            p.count_tags("p1").await.unwrap(),
            t.count_posts("redis").await.unwrap()
        ),
        (1, 1)
    );
}

pub async fn a_stale_entry_is_unlinked_exactly_once<H: Harness>(h: &H) {
    let store = h.store();
    let (p, t) = setup(&store, &["p1"], &["rust"]).await;
    p.link_tags("p1", "rust").await.unwrap();
    t.delete("rust").await.unwrap();
    // Unlinking the pair removes the entry left on the post's side.
    assert!(p.unlink_tags("p1", "rust").await.unwrap());
    assert_eq!(p.count_tags("p1").await.unwrap(), 0);
    assert!(!p.unlink_tags("p1", "rust").await.unwrap());
    assert_eq!(p.count_tags("p1").await.unwrap(), 0);
}

pub async fn composite_and_self_links_name_each_end_by_its_key<H: Harness>(h: &H) {
    let store = h.store();
    let teams = TeamRepo::new(store.clone());
    let members = MemberRepo::new(store.clone());
    teams.create(&Team { id: 7 }).await.unwrap();
    for (o, u) in [("acme", "ann"), ("acme", "bob"), ("zed", "ann")] {
        members
            .create(&Member {
                org: o.into(),
                user: u.into(),
            })
            .await
            .unwrap();
    }
    assert!(teams.link_members(7, ("acme", "bob")).await.unwrap());
    assert!(teams.link_members(7, ("zed", "ann")).await.unwrap());
    let listed: Vec<(String, String)> = teams
        .list_members(7, PageRequest::new(10))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|m| (m.org, m.user))
        .collect();
    assert_eq!(
        listed,
        [("acme".into(), "bob".into()), ("zed".into(), "ann".into())]
    );
    let of_bob = members
        .list_teams(("acme", "bob"), PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(of_bob.items, [Team { id: 7 }]);
    assert_eq!(members.count_teams(("zed", "ann")).await.unwrap(), 1);

    // A member mentoring itself and another: both sides of one record.
    assert!(
        members
            .link_mentors("acme", "ann", ("acme", "ann"))
            .await
            .unwrap()
    );
    assert!(
        members
            .link_mentors("acme", "bob", ("acme", "ann"))
            .await
            .unwrap()
    );
    assert_eq!(members.count_mentors("acme", "ann").await.unwrap(), 1);
    assert_eq!(members.count_mentees(("acme", "ann")).await.unwrap(), 2);
    assert!(members.delete("acme", "ann").await.unwrap());
    assert_eq!(members.count_mentees(("acme", "ann")).await.unwrap(), 0);
    let mentors = members
        .list_mentors("acme", "bob", PageRequest::new(10))
        .await
        .unwrap();
    assert!(mentors.items.is_empty());
    assert_eq!(members.count_mentors("acme", "bob").await.unwrap(), 0);
}

pub async fn concurrent_links_and_unlinks_agree_exactly<H: Harness>(h: &H) {
    let store = h.store();
    let (posts, tags) = (["a", "b", "c"], ["x", "y", "z"]);
    let (p, t) = setup(&store, &posts, &tags).await;
    let mut tasks = Vec::new();
    for task in 0..8u64 {
        let repo = p.clone();
        tasks.push(tokio::spawn(async move {
            // Per pair: +1 for each link that changed something, -1 for
            // each unlink that did.
            let mut net = std::collections::BTreeMap::new();
            let mut rng = fastrand::Rng::with_seed(task);
            for _ in 0..25 {
                let (a, b) = (posts[rng.usize(..3)], tags[rng.usize(..3)]);
                let delta = if rng.bool() {
                    i32::from(repo.link_tags(a, b).await.unwrap())
                } else {
                    -i32::from(repo.unlink_tags(a, b).await.unwrap())
                };
                *net.entry((a, b)).or_insert(0) += delta;
            }
            net
        }));
    }
    let mut net = std::collections::BTreeMap::new();
    for task in tasks {
        for (pair, d) in task.await.unwrap() {
            *net.entry(pair).or_insert(0) += d;
        }
    }
    for a in posts {
        let listed = tags_of(&p, a).await;
        assert_eq!(
            p.count_tags(a).await.unwrap(),
            listed.len() as i64,
            "count of {a}"
        );
        for b in tags {
            let linked = listed.iter().any(|x| x == b);
            let back = posts_of(&t, b).await.iter().any(|x| x == a);
            assert_eq!(linked, back, "{a}-{b}: the two directions disagree");
            let changes = net.get(&(a, b)).copied().unwrap_or(0);
            assert_eq!(
                changes,
                i32::from(linked),
                "{a}-{b}: the returned changes add up to {changes}"
            );
        }
    }
    for b in tags {
        let listed = posts_of(&t, b).await;
        assert_eq!(
            t.count_posts(b).await.unwrap(),
            listed.len() as i64,
            "count of {b}"
        );
    }
}

pub async fn link_operations_take_the_documented_store_calls<H: Harness>(h: &H) {
    let store = CountingStore::new(h.store());
    let (p, t) = setup(&store, &["p"], &["a", "b"]).await;
    let mut before = store.calls();
    let mut took = |access: Access, store: &CountingStore<H::Store>| {
        let now = store.calls();
        assert_eq!(now - before, u64::from(access.calls()), "{access:?}");
        before = now;
    };
    p.link_tags("p", "a").await.unwrap();
    took(Access::Link, &store);
    p.link_tags("p", "b").await.unwrap();
    took(Access::Link, &store);
    assert_eq!(tags_of(&p, "p").await.len(), 2);
    took(Access::ListLinked, &store);
    assert_eq!(posts_of(&t, "a").await.len(), 1);
    took(Access::ListLinked, &store);
    t.count_posts("a").await.unwrap();
    took(Access::CountLinked, &store);
    p.unlink_tags("p", "a").await.unwrap();
    took(Access::Unlink, &store);
    assert!(Access::ListLinked.round_trips() <= 2);
}

pub async fn verify_judges_link_entries_and_counts_and_reconcile_repairs_them<H: Harness>(h: &H) {
    let store = h.store();
    let (p, t) = setup(&store, &["p1", "p2"], &["rust", "redis", "go"]).await;
    p.link_tags("p1", "rust").await.unwrap();
    p.link_tags("p1", "redis").await.unwrap();
    p.link_tags("p2", "rust").await.unwrap();
    p.link_tags("p2", "go").await.unwrap();
    assert!(p.verify(2).await.unwrap().is_clean());
    assert!(t.verify(2).await.unwrap().is_clean());

    // A deleted tag leaves entries on the posts' side: counted, reported.
    t.delete("rust").await.unwrap();
    let drift = p.verify(2).await.unwrap();
    let stale: Vec<&str> = drift
        .orphan_members
        .iter()
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(stale, ["lnk:tag:rust", "lnk:tag:rust"], "{drift:?}");
    assert!(
        drift.counters.is_empty(),
        "the counts equal the collections: {drift:?}"
    );

    // Damage by hand: an entry lost from a tag's side, a count set off.
    let link = kvmodel::__private::Link {
        from: <Post as kvmodel::__private::Entity>::space(),
        name: "tags",
        to: <Tag as kvmodel::__private::Entity>::space(),
        inverse: "posts",
    };
    let (p2, go) = (PostKeys::record("p2"), TagKeys::record("go"));
    let mut b = kvmodel::Batch::new();
    b.remove(
        link.collection_key(kvmodel::__private::End::To, &go),
        link.edge_key(&p2, &go).into_bytes(),
        p2.clone().into_bytes(),
    )
    .incr(
        link.count_key(kvmodel::__private::End::From, &PostKeys::record("p1")),
        5,
    );
    assert!(store.commit(b).await.unwrap().is_applied());
    let drift = p.verify(2).await.unwrap();
    assert_eq!(
        drift.missing_members,
        [(
            link.collection_key(kvmodel::__private::End::To, &go),
            p2.clone()
        )]
    );
    assert_eq!(drift.counters.len(), 1, "{drift:?}");
    // The tag's count is judged by the walk of tags, against its collection.
    let drift = t.verify(2).await.unwrap();
    assert_eq!(drift.counters.len(), 1, "{drift:?}");
    assert_eq!(
        drift.counters[0].key,
        link.count_key(kvmodel::__private::End::To, &go)
    );

    // Each walk repairs its entity's keys; the maintenance command walks
    // every entity.
    assert!(!p.reconcile(2).await.unwrap().is_clean());
    assert!(!t.reconcile(2).await.unwrap().is_clean());
    assert!(
        p.verify(2).await.unwrap().is_clean(),
        "{:?}",
        p.verify(2).await.unwrap()
    );
    assert!(t.verify(2).await.unwrap().is_clean());
    assert_eq!(tags_of(&p, "p1").await, ["redis"]);
    assert_eq!(tags_of(&p, "p2").await, ["go"]);
    assert_eq!(posts_of(&t, "go").await, ["p2"]);
    assert_eq!(p.count_tags("p1").await.unwrap(), 1);
    assert_eq!(p.count_tags("p2").await.unwrap(), 1);
    assert_eq!(t.count_posts("go").await.unwrap(), 1);
}

pub async fn reconcile_removes_the_edge_of_a_pair_whose_records_are_both_gone<H: Harness>(h: &H) {
    let store = h.store();
    let (p, t) = setup(&store, &["p1"], &["rust"]).await;
    p.link_tags("p1", "rust").await.unwrap();
    t.delete("rust").await.unwrap();
    p.delete("p1").await.unwrap();
    let left: Vec<String> = snapshot(&store).await.into_iter().map(|(k, _)| k).collect();
    assert_eq!(left, ["lnk:post#edge:tags:post:p1:lnk:tag:rust"]);
    let drift = p.verify(10).await.unwrap();
    assert_eq!(
        drift.orphan_members,
        [(
            "lnk:post#edge:tags:post:p1:lnk:tag:rust".to_owned(),
            "lnk:tag:rust".to_owned()
        )]
    );
    p.reconcile(10).await.unwrap();
    assert!(snapshot(&store).await.is_empty());
    assert!(p.verify(10).await.unwrap().is_clean());
}

/// The run-time model (what `kvmodel verify` and `reconcile` walk) judges
/// the link keys as the generated entities do: links need no description
/// in the model, their keys say what they are.
pub async fn the_model_walk_agrees_on_every_link_key<H: Harness>(h: &H) {
    use kvmodel_runtime::__private::Walker;
    use kvmodel_runtime::__private::{EntityModel, FieldModel, Scalar, Segment, TypeModel};
    use kvmodel_runtime::__private::{ModelDef, Typed};
    let model = |name: &str, lit: &str, key: &str, extra: Option<&str>| {
        let mut m = EntityModel::new(name, "lnk", vec![Segment::lit(lit), Segment::field(key)])
            .with_field(FieldModel::new(key, TypeModel::Scalar(Scalar::String)));
        if let Some(f) = extra {
            m = m.with_field(FieldModel::new(f, TypeModel::Scalar(Scalar::String)));
        }
        ModelDef::new(m)
    };
    let (post_model, tag_model) = (
        model("Post", "post", "id", Some("title")),
        model("Tag", "tag", "name", None),
    );
    let store = h.store();
    let (p, t) = setup(&store, &["p1", "p2"], &["rust", "go"]).await;
    p.link_tags("p1", "rust").await.unwrap();
    p.link_tags("p2", "rust").await.unwrap();
    p.link_tags("p2", "go").await.unwrap();
    t.delete("go").await.unwrap();
    p.delete("p1").await.unwrap();
    let mut b = kvmodel::Batch::new();
    b.incr(
        kvmodel::__private::Link {
            from: <Post as kvmodel::__private::Entity>::space(),
            name: "tags",
            to: <Tag as kvmodel::__private::Entity>::space(),
            inverse: "posts",
        }
        .count_key(kvmodel::__private::End::To, &TagKeys::record("rust")),
        4,
    );
    assert!(store.commit(b).await.unwrap().is_applied());
    let (typed_post, typed_tag) = (Typed::<Post>::new(), Typed::<Tag>::new());
    let by_model = (
        Walker::new(&post_model, &store)
            .run(false, 3)
            .await
            .unwrap(),
        Walker::new(&tag_model, &store).run(false, 3).await.unwrap(),
    );
    let by_type = (
        Walker::new(&typed_post, &store)
            .run(false, 3)
            .await
            .unwrap(),
        Walker::new(&typed_tag, &store).run(false, 3).await.unwrap(),
    );
    assert_eq!(by_model, by_type);
    // p2's entry for the deleted `go`, and `rust`'s entry for the deleted
    // p1 (with its count, set off by 4 besides).
    assert_eq!(by_model.0.orphan_members.len(), 1, "{:?}", by_model.0);
    assert_eq!(by_model.1.orphan_members.len(), 1, "{:?}", by_model.1);
    assert_eq!(by_model.1.counters.len(), 1, "{:?}", by_model.1);
    Walker::new(&post_model, &store).run(true, 3).await.unwrap();
    Walker::new(&tag_model, &store).run(true, 3).await.unwrap();
    assert!(
        Walker::new(&typed_post, &store)
            .run(false, 3)
            .await
            .unwrap()
            .is_clean()
    );
    assert!(
        Walker::new(&typed_tag, &store)
            .run(false, 3)
            .await
            .unwrap()
            .is_clean()
    );
    assert_eq!(posts_of(&t, "rust").await, ["p2"]);
    assert_eq!(t.count_posts("rust").await.unwrap(), 1);
    assert_eq!(p.count_tags("p2").await.unwrap(), 1);
}

/// A walk that began before a post was deleted, made again and linked to
/// one of its old tags: on a store whose walk reads through a view of its
/// start (memory, redb), the entries the view still holds must not be
/// removed again from the new collection, nor its count moved.
pub async fn a_walk_beside_an_owner_made_again_leaves_its_count_true<H: Harness>(h: &H) {
    for drift in [0, 2] {
        owner_made_again_during_a_walk(h, drift).await;
    }
}

/// [`a_walk_beside_an_owner_made_again_leaves_its_count_true`] with the
/// post's count `drift` above its collection when the walk starts: the
/// delete takes that drift with it, so the walk must not repair the new
/// count by it.
async fn owner_made_again_during_a_walk<H: Harness>(h: &H, drift: i64) {
    use kvmodel_runtime::__private::{Typed, WalkState, Walker};
    let store = h.store();
    let (p, t) = setup(&store, &["p1"], &[]).await;
    for name in ["a", "b", "c"] {
        t.upsert(&tag(name)).await.unwrap();
        p.link_tags("p1", name).await.unwrap();
    }
    let link = kvmodel::__private::Link {
        from: <Post as kvmodel::__private::Entity>::space(),
        name: "tags",
        to: <Tag as kvmodel::__private::Entity>::space(),
        inverse: "posts",
    };
    let count = link.count_key(kvmodel::__private::End::From, &PostKeys::record("p1"));
    let mut b = kvmodel::Batch::new();
    b.incr(count, drift);
    assert!(store.commit(b).await.unwrap().is_applied());
    let def = Typed::<Post>::new();
    let walker = Walker::new(&def, &store);
    let mut state = WalkState::new(true);
    walker.start(&mut state).await.unwrap();
    walker.step(&mut state, 1).await.unwrap();
    assert!(!state.is_done());
    p.delete("p1").await.unwrap();
    p.create(&post("p1")).await.unwrap();
    assert!(p.link_tags("p1", "a").await.unwrap());
    while !state.is_done() {
        walker.step(&mut state, 1).await.unwrap();
    }
    drop(walker);
    assert_eq!(tags_of(&p, "p1").await, ["a"]);
    assert_eq!(
        p.count_tags("p1").await.unwrap(),
        1,
        "drift {drift}: {:?}",
        state.drift
    );
    p.reconcile(10).await.unwrap();
    let after = p.verify(10).await.unwrap();
    assert!(after.is_clean(), "{after:?}");
    assert_eq!(p.count_tags("p1").await.unwrap(), 1);
    p.delete("p1").await.unwrap();
}

/// `purge` of a post that no longer decodes takes its links with it, far
/// entries and counts too: the post made again at that key has none.
pub async fn a_purged_record_leaves_no_links_to_come_back<H: Harness>(h: &H) {
    let store = h.store();
    let (p, t) = setup(&store, &["p1"], &["a", "b"]).await;
    assert!(p.link_tags("p1", "a").await.unwrap());
    assert!(p.link_tags("p1", "b").await.unwrap());
    let mut b = kvmodel::Batch::new();
    b.put(PostKeys::record("p1"), b"not a record".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert!(p.purge("p1").await.unwrap());

    p.create(&post("p1")).await.unwrap();
    assert!(tags_of(&p, "p1").await.is_empty());
    assert_eq!(p.count_tags("p1").await.unwrap(), 0);
    for name in ["a", "b"] {
        assert!(posts_of(&t, name).await.is_empty(), "{name}");
        assert_eq!(t.count_posts(name).await.unwrap(), 0, "{name}");
    }
    let drift = p.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    let drift = t.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}
