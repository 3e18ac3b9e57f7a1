//! `exists`, `count_all`, `upsert`, `try_modify`, `create_many` and
//! `get_many` over owned keys, on a generated repository.

use kvmodel::conformance::Harness;
use kvmodel::{Error, PageRequest};

use super::model::*;

fn users<H: Harness>(h: &H) -> UserRepo<H::Store> {
    UserRepo::new(h.store())
}

async fn listed<H: Harness>(repo: &UserRepo<H::Store>, status: Status) -> Vec<String> {
    repo.list_by_status(status, PageRequest::new(100))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|u| u.id)
        .collect()
}

/// `get_many` takes `&[&str]`, `&[String]` and `&Vec<String>`, and tuples
/// with owned string parts for composite keys.
pub async fn get_many_takes_owned_and_borrowed_keys<H: Harness>(h: &H) {
    let repo = users(h);
    let ada = user("ada", "ada@x.io", Status::Active, "2026-01-01T00:00:00Z");
    repo.create(&ada).await.unwrap();
    let want = vec![Some(ada.clone()), None];
    assert_eq!(repo.get_many(&["ada", "bob"]).await.unwrap(), want);
    let owned: Vec<String> = vec!["ada".into(), "bob".into()];
    assert_eq!(repo.get_many(&owned).await.unwrap(), want);
    assert_eq!(repo.get_many(owned.as_slice()).await.unwrap(), want);
    let none: &[String] = &[];
    assert!(repo.get_many(none).await.unwrap().is_empty());

    let docs = DocRepo::new(h.store());
    let doc = Doc {
        tenant: "t1".into(),
        id: 7,
        title: "T".into(),
    };
    docs.create(&doc).await.unwrap();
    let keys = vec![("t1".to_owned(), 7), ("t1".to_owned(), 8)];
    assert_eq!(
        docs.get_many(&keys).await.unwrap(),
        vec![Some(doc.clone()), None]
    );
    assert_eq!(docs.get_many(&[("t1", 7)]).await.unwrap(), vec![Some(doc)]);
}

/// `exists` reads one key; `count_all` is the size of the discovery set,
/// following creates and deletes.
pub async fn exists_and_count_all<H: Harness>(h: &H) {
    let repo = users(h);
    assert!(!repo.exists("ada").await.unwrap());
    assert_eq!(repo.count_all().await.unwrap(), 0);
    for (id, email) in [("ada", "ada@x.io"), ("bob", "bob@x.io"), ("cy", "cy@x.io")] {
        repo.create(&user(id, email, Status::Active, "2026-01-01T00:00:00Z"))
            .await
            .unwrap();
    }
    assert!(repo.exists("ada").await.unwrap());
    assert!(!repo.exists("ad").await.unwrap());
    assert_eq!(repo.count_all().await.unwrap(), 3);
    assert!(repo.delete("bob").await.unwrap());
    assert!(!repo.exists("bob").await.unwrap());
    assert_eq!(repo.count_all().await.unwrap(), 2);
    let docs = DocRepo::new(h.store());
    assert!(!docs.exists("t1", 1).await.unwrap());
    assert_eq!(
        docs.count_all().await.unwrap(),
        0,
        "each entity counts its own"
    );
}

/// `upsert` creates a missing record, replaces a stored one with its
/// claims, members and counters moved, and refuses a taken unique value
/// without writing.
pub async fn upsert_creates_then_replaces_atomically<H: Harness>(h: &H) {
    let repo = users(h);
    let mut ada = user("ada", "ada@x.io", Status::Active, "2026-01-01T00:00:00Z");
    assert!(repo.upsert(&ada).await.unwrap(), "created");
    assert_eq!(repo.count_by_status(Status::Active).await.unwrap(), 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);

    ada.status = Status::Suspended;
    ada.email = "ada@new.io".into();
    assert!(!repo.upsert(&ada).await.unwrap(), "replaced");
    assert_eq!(repo.get("ada").await.unwrap(), Some(ada.clone()));
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert_eq!(repo.count_by_status(Status::Active).await.unwrap(), 0);
    assert_eq!(repo.count_by_status(Status::Suspended).await.unwrap(), 1);
    assert!(listed::<H>(&repo, Status::Active).await.is_empty());
    assert_eq!(listed::<H>(&repo, Status::Suspended).await, ["ada"]);
    assert_eq!(repo.find_by_email("ada@x.io").await.unwrap(), None);
    assert_eq!(
        repo.find_by_email("ada@new.io").await.unwrap(),
        Some(ada.clone())
    );

    let bob = user("bob", "ADA@new.io", Status::Active, "2026-01-02T00:00:00Z");
    let err = repo.upsert(&bob).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::UniqueViolation {
                index: "by_email",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!repo.exists("bob").await.unwrap(), "nothing written");
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert!(repo.verify(100).await.unwrap().is_clean());
}

/// The error `try_modify`'s closure returns comes back as is and nothing
/// is written; store errors arrive converted into the caller's type.
pub async fn try_modify_returns_the_refusal_without_writing<H: Harness>(h: &H) {
    #[derive(Debug)]
    enum AppError {
        TooMany(u64),
        Store(Error),
    }
    impl From<Error> for AppError {
        fn from(e: Error) -> Self {
            AppError::Store(e)
        }
    }
    let repo = users(h);
    let ada = user("ada", "ada@x.io", Status::Active, "2026-01-01T00:00:00Z");
    repo.create(&ada).await.unwrap();
    let visit = |u: &mut User| {
        let n = u.visits.unwrap_or(0) + 1;
        if n > 2 {
            return Err(AppError::TooMany(n));
        }
        u.visits = Some(n);
        u.status = Status::Inactive;
        Ok(())
    };
    let once = repo.try_modify("ada", visit).await.unwrap();
    assert_eq!(once.visits, Some(1));
    repo.try_modify("ada", visit).await.unwrap();
    let before = repo.get("ada").await.unwrap();
    match repo.try_modify("ada", visit).await {
        Err(AppError::TooMany(3)) => {}
        other => panic!("expected the closure's error, got {other:?}"),
    }
    assert_eq!(repo.get("ada").await.unwrap(), before, "nothing written");
    assert_eq!(repo.count_by_status(Status::Inactive).await.unwrap(), 1);
    match repo.try_modify("nobody", visit).await {
        Err(AppError::Store(Error::NotFound { .. })) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
    // With kvmodel's own error type, no conversion is needed.
    let renamed = repo
        .try_modify("ada", |u| {
            u.name = "Ada".into();
            Ok::<(), Error>(())
        })
        .await
        .unwrap();
    assert_eq!(renamed.name, "Ada");
}

/// `create_many` writes every record, claim, member and counter in one
/// commit.
pub async fn create_many_is_one_commit<H: Harness>(h: &H) {
    let repo = users(h);
    repo.create_many(&[]).await.unwrap();
    let batch: Vec<User> = (0..20)
        .map(|i| {
            let status = if i % 2 == 0 {
                Status::Active
            } else {
                Status::Inactive
            };
            user(
                &format!("u{i:02}"),
                &format!("u{i}@x.io"),
                status,
                "2026-01-01T00:00:00Z",
            )
        })
        .collect();
    repo.create_many(&batch).await.unwrap();
    assert_eq!(repo.count_all().await.unwrap(), 20);
    assert_eq!(repo.count_total().await.unwrap(), 20);
    assert_eq!(repo.count_by_status(Status::Active).await.unwrap(), 10);
    assert_eq!(listed::<H>(&repo, Status::Inactive).await.len(), 10);
    assert_eq!(
        repo.find_by_email("u7@x.io").await.unwrap(),
        Some(batch[7].clone())
    );
    assert!(repo.verify(100).await.unwrap().is_clean());
}

/// One bad record fails the whole batch, named by its index and key: a
/// stored key, a key or unique value repeated in the batch, a unique value
/// another record holds. Nothing of the batch is written.
pub async fn create_many_names_the_failing_record<H: Harness>(h: &H) {
    let repo = users(h);
    let stored = user("old", "old@x.io", Status::Active, "2026-01-01T00:00:00Z");
    repo.create(&stored).await.unwrap();
    let fresh = |id: &str, email: &str| user(id, email, Status::Inactive, "2026-01-02T00:00:00Z");
    let cases = [
        (
            vec![
                fresh("n1", "n1@x.io"),
                fresh("old", "n2@x.io"),
                fresh("n3", "n3@x.io"),
            ],
            1,
            "old",
            "AlreadyExists",
        ),
        (
            vec![
                fresh("n1", "n1@x.io"),
                fresh("n2", "n2@x.io"),
                fresh("n1", "n4@x.io"),
            ],
            2,
            "n1",
            "InvalidBatch",
        ),
        (
            vec![fresh("n1", "n1@x.io"), fresh("n2", "N1@x.io")],
            1,
            "n2",
            "UniqueViolation",
        ),
        (
            vec![
                fresh("n1", "n1@x.io"),
                fresh("n2", "n2@x.io"),
                fresh("n3", "OLD@x.io"),
            ],
            2,
            "n3",
            "UniqueViolation",
        ),
    ];
    for (batch, want_index, want_id, want_source) in cases {
        let err = repo.create_many(&batch).await.unwrap_err();
        let Error::Bulk { index, key, source } = &err else {
            panic!("expected Error::Bulk, got {err:?}");
        };
        assert_eq!(*index, want_index, "{err}");
        assert_eq!(key, &UserKeys::record(want_id), "{err}");
        assert!(format!("{source:?}").starts_with(want_source), "{source:?}");
        assert!(
            err.to_string().contains("nothing in the batch was"),
            "{err}"
        );
        for u in &batch {
            if u.id != "old" {
                assert!(!repo.exists(&u.id).await.unwrap(), "{} was written", u.id);
            }
        }
        assert_eq!(repo.count_all().await.unwrap(), 1);
        assert_eq!(repo.count_total().await.unwrap(), 1);
        assert_eq!(repo.count_by_status(Status::Inactive).await.unwrap(), 0);
        assert!(listed::<H>(&repo, Status::Inactive).await.is_empty());
        assert_eq!(repo.find_by_email("n1@x.io").await.unwrap(), None);
    }
    assert_eq!(repo.get("old").await.unwrap(), Some(stored));
}
