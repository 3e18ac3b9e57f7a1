//! Counter upkeep is exact and identical on every store: sums reach the
//! 64-bit edges without saturating, a write that would overflow a counter (or
//! meets a counter that is not a canonical integer) writes nothing at all.

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity, PageRequest, RangeRequest, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "arith", key = "score:{id}")]
#[kv(index(name = "by_board", fields(board), order_by = score))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "points", sum = score, group_by(board)))]
struct Score {
    id: String,
    #[kv(unique)]
    handle: String,
    board: String,
    score: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "arith", key = "transfer:{id}")]
#[kv(counter(name = "volume", sum = amount))]
#[kv(counter(name = "transfers"))]
struct Transfer {
    id: String,
    amount: u64,
}

fn score(id: &str, handle: &str, score: i64) -> Score {
    Score {
        id: id.into(),
        handle: handle.into(),
        board: "b".into(),
        score,
    }
}

async fn members<S: Store>(s: &S, key: &str) -> Vec<Vec<u8>> {
    let page = s.range(key, RangeRequest::all(100)).await.unwrap();
    page.members.into_iter().map(|m| m.member).collect()
}

/// Everything a `Score` write may touch, to compare before and after.
async fn footprint<S: Store>(s: &S, ids: &[&str], handles: &[&str]) -> Vec<String> {
    let mut keys = vec![ScoreKeys::counter_total(), ScoreKeys::counter_points("b")];
    keys.extend(ids.iter().map(|id| ScoreKeys::record(id)));
    keys.extend(handles.iter().map(|h| ScoreKeys::by_handle(h)));
    let values = s.get_many(&keys).await.unwrap();
    let mut out: Vec<String> = keys
        .iter()
        .zip(values)
        .map(|(k, v)| {
            format!(
                "{k} = {:?}",
                v.map(|v| String::from_utf8_lossy(&v).into_owned())
            )
        })
        .collect();
    for set in [ScoreKeys::by_board("b"), ScoreKeys::all()] {
        out.push(format!("{set} has {:?}", members(s, &set).await));
    }
    out
}

fn assert_refused(err: &Error, what: &str) {
    assert!(
        matches!(err, Error::InvalidBatch { .. }),
        "{what}: expected a refused batch, got {err}"
    );
    assert!(err.to_string().contains("nothing was written"), "{err}");
}

/// A sum moves from -1 to `i64::MAX` in one update (a net delta of 2^63, which
/// no single increment holds) and back to 0 on delete, exactly.
pub async fn sums_reach_the_edges_exactly<H: Harness>(h: &H) {
    let repo = ScoreRepo::new(h.store());
    let mut s = score("1", "ada", -1);
    repo.create(&s).await.unwrap();
    assert_eq!(repo.sum_points("b").await.unwrap(), -1);
    s.score = i64::MAX;
    repo.update(&s).await.unwrap();
    assert_eq!(repo.sum_points("b").await.unwrap(), i64::MAX);
    s.score = i64::MIN;
    repo.update(&s).await.unwrap();
    assert_eq!(repo.sum_points("b").await.unwrap(), i64::MIN);
    assert!(repo.delete("1").await.unwrap());
    assert_eq!(repo.sum_points("b").await.unwrap(), 0);
    assert_eq!(repo.count_total().await.unwrap(), 0);
}

/// A create or update whose counter would overflow is refused before
/// anything is written: no record, claim, index entry, discovery member or
/// other counter moves.
pub async fn overflow_writes_nothing<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ScoreRepo::new(store.clone());
    repo.create(&score("1", "ada", i64::MAX - 1)).await.unwrap();
    let before = footprint(&store, &["1", "2"], &["ada", "bob"]).await;
    let err = repo.create(&score("2", "bob", 2)).await.unwrap_err();
    assert_refused(&err, "create");
    assert!(err.to_string().contains("overflow"), "{err}");
    assert_eq!(
        footprint(&store, &["1", "2"], &["ada", "bob"]).await,
        before
    );
    repo.modify("1", |s| s.score = i64::MIN).await.unwrap();
    assert_eq!(
        repo.sum_points("b").await.unwrap(),
        i64::MIN,
        "a move of almost 2^64 that lands in range is applied"
    );
    repo.create(&score("2", "bob", 0)).await.unwrap();
    let before = footprint(&store, &["1", "2"], &["ada", "bob", "cy"]).await;
    let err = repo
        .modify("2", |s| {
            s.handle = "cy".into();
            s.score = -2;
        })
        .await
        .unwrap_err();
    assert_refused(&err, "update");
    assert_eq!(
        footprint(&store, &["1", "2"], &["ada", "bob", "cy"]).await,
        before
    );
    assert_eq!(repo.count_total().await.unwrap(), 2);
    assert_eq!(
        repo.list_by_board("b", PageRequest::new(10))
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

/// A `u64` sum contribution above `i64::MAX` is refused with a clear error,
/// never saturated; the largest that fits is accepted.
pub async fn u64_sums_beyond_i64_are_refused<H: Harness>(h: &H) {
    let store = h.store();
    let repo = TransferRepo::new(store.clone());
    let big = Transfer {
        id: "t1".into(),
        amount: u64::MAX,
    };
    let err = repo.create(&big).await.unwrap_err();
    assert_refused(&err, "create");
    assert!(err.to_string().contains("18446744073709551615"), "{err}");
    assert_eq!(repo.get("t1").await.unwrap(), None);
    assert_eq!(repo.sum_volume().await.unwrap(), 0);
    assert_eq!(repo.count_transfers().await.unwrap(), 0);
    let fits = Transfer {
        id: "t2".into(),
        amount: i64::MAX as u64,
    };
    repo.create(&fits).await.unwrap();
    assert_eq!(repo.sum_volume().await.unwrap(), i64::MAX);
    let err = repo
        .modify("t2", |t| t.amount = i64::MAX as u64 + 1)
        .await
        .unwrap_err();
    assert_refused(&err, "update");
    assert_eq!(repo.get("t2").await.unwrap(), Some(fits));
    assert_eq!(repo.sum_volume().await.unwrap(), i64::MAX);
}

/// Counter values that `INCRBY` would reject (put behind the repository's
/// back) fail the whole commit on every store, with nothing written.
pub async fn odd_stored_counters_fail_the_whole_commit<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ScoreRepo::new(store.clone());
    let odd = [
        "007",
        "-0",
        "+5",
        " 5",
        "5 ",
        "1e3",
        "0x10",
        "",
        "9223372036854775808",
    ];
    for (i, text) in odd.into_iter().enumerate() {
        let mut b = kvmodel::Batch::new();
        b.put(ScoreKeys::counter_total(), text.as_bytes().to_vec(), None);
        assert!(store.commit(b).await.unwrap().is_applied());
        let id = format!("odd{i}");
        let before = footprint(&store, &[&id], &["odd"]).await;
        let err = repo.create(&score(&id, "odd", 1)).await.unwrap_err();
        assert_refused(&err, text);
        assert_eq!(
            footprint(&store, &[&id], &["odd"]).await,
            before,
            "`{text}` leaves everything as it was"
        );
        assert!(
            repo.count_total().await.is_err(),
            "`{text}` does not read as a counter either"
        );
    }
}

kvmodel_runtime::on_every_backend!(
    sums_reach_the_edges_exactly,
    overflow_writes_nothing,
    u64_sums_beyond_i64_are_refused,
    odd_stored_counters_fail_the_whole_commit,
);
