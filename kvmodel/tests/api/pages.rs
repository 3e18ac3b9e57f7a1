//! Cursors belong to one listing and one direction; bounds take the
//! listing's `order_by` type.

use kvmodel::conformance::Harness;
use kvmodel::{Cursor, Date, Error, KvEntity, Page, PageRequest, Timestamp};
use serde::{Deserialize, Serialize};

use super::model::*;

fn ids(page: &Page<User>) -> Vec<&str> {
    page.items.iter().map(|u| u.id.as_str()).collect()
}

async fn seed<H: Harness>(h: &H) -> UserRepo<H::Store> {
    let repo = UserRepo::new(h.store());
    for i in 0..5 {
        let at = format!("2026-01-0{}T00:00:00Z", i + 1);
        repo.create(&user(
            &format!("a{i}"),
            &format!("a{i}@x.io"),
            Status::Active,
            &at,
        ))
        .await
        .unwrap();
        repo.create(&user(
            &format!("i{i}"),
            &format!("i{i}@x.io"),
            Status::Inactive,
            &at,
        ))
        .await
        .unwrap();
    }
    repo
}

fn invalid_cursor<T: std::fmt::Debug>(r: kvmodel::Result<T>, what: &str) -> String {
    match r {
        Err(e @ Error::InvalidCursor { .. }) => e.to_string(),
        other => panic!("{what}: expected InvalidCursor, got {other:?}"),
    }
}

/// A cursor of one listing is refused by every other listing (another
/// group of the same index, the discovery set), as text too.
pub async fn cursor_of_another_listing_is_refused<H: Harness>(h: &H) {
    let repo = seed(h).await;
    let active = repo
        .list_by_status(Status::Active, PageRequest::new(2))
        .await
        .unwrap();
    let cursor = active.next.clone().expect("more active users");
    let msg = invalid_cursor(
        repo.list_by_status(Status::Inactive, PageRequest::new(2).after(cursor.clone()))
            .await,
        "an active cursor on the inactive listing",
    );
    assert!(msg.contains("another listing"), "{msg}");
    invalid_cursor(
        repo.list_all(PageRequest::new(2).after(cursor.clone()))
            .await,
        "an index cursor on list_all",
    );
    let all = repo.list_all(PageRequest::new(3)).await.unwrap();
    invalid_cursor(
        repo.list_by_status(Status::Active, PageRequest::new(2).after(all.next.unwrap()))
            .await,
        "a list_all cursor on an index",
    );
    // Its own listing takes it, also after a trip through text.
    let text: Cursor = cursor.to_string().parse().unwrap();
    let next = repo
        .list_by_status(Status::Active, PageRequest::new(2).after(text))
        .await
        .unwrap();
    assert_eq!(ids(&next), ["a2", "a3"]);
}

/// Page 2 asked for without `.descending()` continues a descending
/// listing where page 1 stopped; asking for the other direction than the
/// cursor's is refused.
pub async fn next_page_continues_in_the_cursor_direction<H: Harness>(h: &H) {
    let repo = seed(h).await;
    let mut seen = Vec::new();
    let mut page = repo
        .list_by_status(Status::Active, PageRequest::new(2).descending())
        .await
        .unwrap();
    loop {
        seen.extend(ids(&page).into_iter().map(str::to_owned));
        let Some(c) = page.next.take() else { break };
        page = repo
            .list_by_status(Status::Active, PageRequest::new(2).after(c))
            .await
            .unwrap();
    }
    assert_eq!(seen, ["a4", "a3", "a2", "a1", "a0"]);

    let asc = repo
        .list_by_status(Status::Active, PageRequest::new(2))
        .await
        .unwrap();
    let msg = invalid_cursor(
        repo.list_by_status(
            Status::Active,
            PageRequest::new(2).after(asc.next.unwrap()).descending(),
        )
        .await,
        "descending after an ascending cursor",
    );
    assert!(
        msg.contains(
            "it continues a listing in ascending order, but the request asks for descending order"
        ),
        "{msg}"
    );
}

/// Bounds are values of the `order_by` type (a `Timestamp` here).
pub async fn bounds_take_the_order_by_type<H: Harness>(h: &H) {
    let repo = seed(h).await;
    let from = ts("2026-01-02T00:00:00Z");
    let page = repo
        .list_by_status(
            Status::Active,
            PageRequest::new(10)
                .start_at(from)
                .end_before(ts("2026-01-04T00:00:00Z")),
        )
        .await
        .unwrap();
    assert_eq!(ids(&page), ["a1", "a2"]);
    let page = repo
        .list_by_status(
            Status::Active,
            PageRequest::new(10).start_after(from).descending(),
        )
        .await
        .unwrap();
    assert_eq!(ids(&page), ["a4", "a3", "a2"]);
    // A bound includes its own value when asked to.
    let page = repo
        .list_by_status(Status::Active, PageRequest::new(10).end_at(from))
        .await
        .unwrap();
    assert_eq!(ids(&page), ["a0", "a1"]);
}

/// Readings listed by the hour, day and month of `at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bucket", key = "reading:{id}")]
#[kv(index(name = "by_hour", fields(sensor), order_by = hour(at)))]
#[kv(index(name = "by_day", fields(sensor), order_by = day(at)))]
#[kv(index(name = "by_month", fields(sensor), order_by = month(at)))]
pub struct Reading {
    pub id: String,
    pub sensor: String,
    pub at: Timestamp,
}

/// A bound on a bucketed listing is bucketed too: `start_at(05:30)` on
/// an hour listing keeps the readings of 05:00–05:59, a `Date` bound on a
/// month listing means that date's month.
pub async fn bounds_on_buckets_cover_the_bucket<H: Harness>(h: &H) {
    let repo = ReadingRepo::new(h.store());
    let at = [
        "2026-03-01T04:10:00Z",
        "2026-03-01T05:10:00Z",
        "2026-03-02T05:50:00Z",
        "2026-04-01T00:00:00Z",
    ];
    for (i, a) in at.iter().enumerate() {
        let r = Reading {
            id: format!("r{i}"),
            sensor: "s".into(),
            at: ts(a),
        };
        repo.create(&r).await.unwrap();
    }
    let ids = |p: Page<Reading>| p.items.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let hour = repo
        .list_by_hour(
            "s",
            PageRequest::new(10).start_at(ts("2026-03-01T05:30:00Z")),
        )
        .await
        .unwrap();
    assert_eq!(ids(hour), ["r1", "r2", "r3"]);
    let day = repo
        .list_by_day(
            "s",
            PageRequest::new(10).end_at(Date::from_ymd(2026, 3, 1).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(ids(day), ["r0", "r1"]);
    let month = repo
        .list_by_month(
            "s",
            PageRequest::new(10).start_at(Date::from_ymd(2026, 3, 31).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(ids(month), ["r0", "r1", "r2", "r3"]);
    let april = repo
        .list_by_month(
            "s",
            PageRequest::new(10).start_after(Date::from_ymd(2026, 3, 31).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(ids(april), ["r3"]);
}
