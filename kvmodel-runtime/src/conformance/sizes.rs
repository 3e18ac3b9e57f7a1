//! The size of a sorted collection, as [`Store::collection_len`] reads it.

use std::time::Duration;

use super::Harness;
use crate::store::batch::Batch;
use crate::store::{Direction, RangeRequest, Store};

async fn len<S: Store>(s: &S, k: &str) -> u64 {
    s.collection_len(k).await.expect("collection_len")
}

/// `collection_len` counts the live members, the same number a full
/// range returns: 0 for an absent, deleted or expired collection.
pub async fn collection_len_counts_live_members<H: Harness>(h: &H) {
    let s = h.store();
    let (k, other) = (h.key("len:k"), h.key("len:k2"));
    assert_eq!(len(&s, &k).await, 0, "absent");
    // In batches of 50: a store may bound the writes of one batch
    // (DynamoDB: 100 items per transaction).
    for chunk in (0..1500u32).collect::<Vec<_>>().chunks(50) {
        let mut b = Batch::new();
        for i in chunk {
            b.add(
                &k,
                (i % 7).to_be_bytes().to_vec(),
                i.to_string().into_bytes(),
            );
        }
        assert!(s.commit(b).await.expect("commit").is_applied());
    }
    let mut b = Batch::new();
    b.add(&other, vec![], b"x".to_vec());
    assert!(s.commit(b).await.expect("commit").is_applied());
    assert_eq!(len(&s, &k).await, 1500);
    assert_eq!(len(&s, &other).await, 1, "a neighbour is not counted");
    let all = s.range(&k, RangeRequest::all(10_000)).await.expect("range");
    assert_eq!(all.members.len(), 1500);
    let mut b = Batch::new();
    b.remove(&k, 0u32.to_be_bytes().to_vec(), b"0".to_vec())
        .add(&k, 0u32.to_be_bytes().to_vec(), b"1".to_vec());
    assert!(s.commit(b).await.expect("commit").is_applied());
    assert_eq!(len(&s, &k).await, 1500, "one entry removed, one added");
    let mut b = Batch::new();
    b.expire(&other, Duration::from_millis(150)).delete(&k);
    assert!(s.commit(b).await.expect("commit").is_applied());
    assert_eq!(len(&s, &k).await, 0, "deleted");
    h.pass(Duration::from_millis(300)).await;
    assert_eq!(len(&s, &other).await, 0, "expired");
}

/// A range takes any limit, up to `usize::MAX` (what "no limit" looks
/// like to a caller): the whole collection, in either direction.
pub async fn range_takes_any_limit<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("limit:k");
    let mut b = Batch::new();
    for m in ["a", "b", "c"] {
        b.add(&k, vec![], m.as_bytes().to_vec());
    }
    assert!(s.commit(b).await.expect("commit").is_applied());
    for limit in [usize::MAX, usize::MAX - 1, 1 << 63] {
        for direction in [Direction::Ascending, Direction::Descending] {
            let mut req = RangeRequest::all(limit);
            req.direction = direction;
            let page = s.range(&k, req).await.expect("a range with a huge limit");
            assert_eq!(page.members.len(), 3, "limit {limit}, {direction:?}");
            assert_eq!(page.next, None, "limit {limit}, {direction:?}");
        }
    }
}
