//! Bytes written into a Redis collection behind the store's back: an entry
//! that does not decode (no sort-key terminator, or a bad escape) is left
//! out of every page, so listings, paging and `range_values` keep working
//! and never show a made-up member.

use kvmodel_runtime::conformance::RedisServer;
use kvmodel_runtime::{Batch, Direction, RangeRequest, RedisStore, Store};

const SET: &str = "ns:thing#idx:by_x:a";

async fn zadd(server: &RedisServer, entry: &[u8]) {
    let mut admin = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let added: i64 = redis::cmd("ZADD")
        .arg(SET)
        .arg(0)
        .arg(entry)
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(added, 1);
}

/// Two members written by the store, with their records, and junk entries
/// before, between and after them in byte order.
async fn damaged() -> (RedisServer, RedisStore) {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut b = Batch::new();
    for (sort, key) in [(b"b".as_slice(), "ns:thing:1"), (b"d", "ns:thing:2")] {
        b.put(key, key.as_bytes().to_vec(), None);
        b.add(SET, sort.to_vec(), key.as_bytes().to_vec());
    }
    assert!(store.commit(b).await.unwrap().is_applied());
    // `ns:thing:0`: no terminator; `c\0\x07…`: a bad escape; `z…`: no
    // terminator, last in byte order.
    for junk in [b"ns:thing:0".as_slice(), b"c\x00\x07ns:thing:1", b"zzz"] {
        zadd(&server, junk).await;
    }
    (server, store)
}

fn members(r: &kvmodel_runtime::RangeResult) -> Vec<String> {
    r.members
        .iter()
        .map(|m| String::from_utf8(m.member.clone()).unwrap())
        .collect()
}

#[tokio::test]
async fn undecodable_entries_are_left_out_of_a_page() {
    let (_server, store) = damaged().await;
    for direction in [Direction::Ascending, Direction::Descending] {
        let req = RangeRequest {
            direction,
            ..RangeRequest::all(100)
        };
        let page = store.range(SET, req.clone()).await.unwrap();
        let mut want = vec!["ns:thing:1", "ns:thing:2"];
        if direction == Direction::Descending {
            want.reverse();
        }
        assert_eq!(members(&page), want);
        assert_eq!(page.next, None);

        let (page, values) = store.range_values(SET, req).await.unwrap();
        assert_eq!(members(&page), want);
        let values: Vec<String> = values
            .into_iter()
            .map(|v| String::from_utf8(v.unwrap()).unwrap())
            .collect();
        assert_eq!(values, want, "each value is its own member's record");
    }
}

#[tokio::test]
async fn paging_one_at_a_time_passes_over_undecodable_entries() {
    let (_server, store) = damaged().await;
    let (mut seen, mut after, mut pages) = (Vec::new(), None, 0);
    loop {
        let req = RangeRequest {
            after: after.take(),
            ..RangeRequest::all(1)
        };
        let (page, values) = store.range_values(SET, req).await.unwrap();
        assert_eq!(page.members.len(), values.len());
        seen.extend(members(&page));
        pages += 1;
        assert!(pages <= 5, "five entries, at most five pages");
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen, ["ns:thing:1", "ns:thing:2"]);
}
