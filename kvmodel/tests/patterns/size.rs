//! `max_size`: a record larger than the limit, encoded and before
//! compression, is refused with `ValueTooLarge`, and nothing is written.

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity, PageRequest, RangeRequest, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "pat", key = "note:{id}", max_size = "1KiB")]
#[kv(index(name = "by_owner", fields(owner), order_by = id))]
#[kv(counter(name = "per_owner", group_by(owner)))]
pub struct Note {
    pub id: String,
    #[kv(unique)]
    pub slug: String,
    pub owner: String,
    pub body: String,
}

const LIMIT: usize = 1024;

fn note(id: &str, body_len: usize) -> Note {
    Note {
        id: id.into(),
        slug: format!("slug-{id}"),
        owner: "ada".into(),
        body: "x".repeat(body_len),
    }
}

/// The body length that makes the encoded record of `id` exactly `size` bytes.
fn body_for(id: &str, size: usize) -> usize {
    let empty = kvmodel::__private::serde_json::to_vec(&note(id, 0)).unwrap();
    // `{"v":1,"d":` + payload + `}`
    size - (empty.len() + 12)
}

/// Everything a `Note` write may touch.
async fn footprint<S: Store>(s: &S, ids: &[&str]) -> Vec<String> {
    let mut keys = vec![NoteKeys::counter_per_owner("ada")];
    for id in ids {
        keys.push(NoteKeys::record(id));
        keys.push(NoteKeys::by_slug(&format!("slug-{id}")));
    }
    let values = s.get_many(&keys).await.unwrap();
    let mut out: Vec<String> = keys
        .iter()
        .zip(values)
        .map(|(k, v)| format!("{k} = {:?}", v.map(|v| v.len())))
        .collect();
    for c in [NoteKeys::by_owner("ada"), NoteKeys::all()] {
        let page = s.range(&c, RangeRequest::all(100)).await.unwrap();
        out.push(format!("{c} has {}", page.members.len()));
    }
    out
}

fn assert_too_large(err: &Error, id: &str, size: usize) {
    match err {
        Error::ValueTooLarge {
            entity,
            key,
            size: s,
            limit,
        } => {
            assert_eq!(
                (*entity, key.as_str(), *s, *limit),
                ("Note", NoteKeys::record(id).as_str(), size, LIMIT)
            );
        }
        other => panic!("expected ValueTooLarge, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("Note") && text.contains("nothing was written") && text.contains("max_size"),
        "{text}"
    );
}

pub async fn a_record_at_the_limit_is_stored<H: Harness>(h: &H) {
    let repo = NoteRepo::new(h.store());
    let n = note("n1", body_for("n1", LIMIT));
    repo.create(&n).await.unwrap();
    let stored = h.store().get(&NoteKeys::record("n1")).await.unwrap();
    assert_eq!(stored.map(|b| b.len()), Some(LIMIT));
    assert_eq!(repo.get("n1").await.unwrap(), Some(n));
}

pub async fn a_record_over_the_limit_writes_nothing<H: Harness>(h: &H) {
    let (store, repo) = (h.store(), NoteRepo::new(h.store()));
    let before = footprint(&store, &["n1"]).await;
    let err = repo
        .create(&note("n1", body_for("n1", LIMIT + 1)))
        .await
        .unwrap_err();
    assert_too_large(&err, "n1", LIMIT + 1);
    let err = repo
        .upsert(&note("n1", body_for("n1", LIMIT) + 5000))
        .await
        .unwrap_err();
    assert_too_large(&err, "n1", LIMIT + 5000);
    assert_eq!(footprint(&store, &["n1"]).await, before);
    assert_eq!(repo.count_per_owner("ada").await.unwrap(), 0);
    assert!(
        repo.list_all(PageRequest::new(10))
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

pub async fn an_update_over_the_limit_leaves_the_stored_record<H: Harness>(h: &H) {
    let (store, repo) = (h.store(), NoteRepo::new(h.store()));
    let n = note("n1", 10);
    repo.create(&n).await.unwrap();
    let before = footprint(&store, &["n1"]).await;
    let stored = store.get(&NoteKeys::record("n1")).await.unwrap();
    let big = note("n1", body_for("n1", LIMIT + 1));
    assert_too_large(&repo.update(&big).await.unwrap_err(), "n1", LIMIT + 1);
    let grow = body_for("n1", LIMIT + 1);
    let err = repo
        .modify("n1", |n| n.body = "y".repeat(grow))
        .await
        .unwrap_err();
    assert_too_large(&err, "n1", LIMIT + 1);
    assert_eq!(store.get(&NoteKeys::record("n1")).await.unwrap(), stored);
    assert_eq!(footprint(&store, &["n1"]).await, before);
    assert_eq!(repo.get("n1").await.unwrap(), Some(n));
}

pub async fn a_bulk_create_with_one_large_record_writes_nothing<H: Harness>(h: &H) {
    let (store, repo) = (h.store(), NoteRepo::new(h.store()));
    let before = footprint(&store, &["n1", "n2", "n3"]).await;
    let notes = [
        note("n1", 10),
        note("n2", body_for("n2", LIMIT + 100)),
        note("n3", 10),
    ];
    match repo.create_many(&notes).await.unwrap_err() {
        Error::Bulk { index, source, .. } => {
            assert_eq!(index, 1);
            assert_too_large(&source, "n2", LIMIT + 100);
        }
        other => panic!("expected Bulk, got {other:?}"),
    }
    assert_eq!(footprint(&store, &["n1", "n2", "n3"]).await, before);
}
