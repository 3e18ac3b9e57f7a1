//! Conformance cases of the maintenance calls: the store's clock and the
//! key scan by prefix.

use std::collections::BTreeSet;
use std::time::Duration;

use super::Harness;
use crate::store::Store;
use crate::store::batch::Batch;

/// Every key a full scan of `prefix` returns, in pages of `count`; panics
/// if a page fails or the scan does not end within 10,000 pages.
pub async fn scan_all<S: Store>(s: &S, prefix: &str, count: usize) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let page = s.scan(prefix, cursor.take(), count).await.expect("scan");
        keys.extend(page.keys);
        match page.next {
            Some(n) => cursor = Some(n),
            None => return keys,
        }
    }
    panic!("the scan of `{prefix}` did not end");
}

/// `scan` finds every live value, counter and collection under a prefix,
/// across pages, and nothing else: not a key outside the prefix (also when
/// the prefix holds glob characters), not an expired value, not an emptied
/// collection.
pub async fn scan_lists_keys_by_prefix<H: Harness>(h: &H) {
    let s = h.store();
    let prefix = h.key("scan*?[x]\\^-:");
    let mut b = Batch::new();
    let mut want = BTreeSet::new();
    for i in 0..25 {
        let k = format!("{prefix}v{i:02}");
        b.put(&k, b"x".to_vec(), None);
        want.insert(k);
    }
    for i in 0..5 {
        let k = format!("{prefix}c{i}");
        b.incr(&k, 3);
        want.insert(k);
        let k = format!("{prefix}z{i}");
        b.add(&k, vec![1], b"m".to_vec());
        want.insert(k);
    }
    // Outside the prefix: the glob characters must not match anything else.
    for outside in ["scanX?[x]\\^-:v", "scan*?[y]\\^-:v", "scan", "other"] {
        b.put(h.key(outside), b"x".to_vec(), None);
    }
    let emptied = format!("{prefix}emptied");
    b.add(&emptied, Vec::new(), b"m".to_vec());
    b.remove(&emptied, Vec::new(), b"m".to_vec());
    b.put(
        format!("{prefix}short-lived"),
        b"x".to_vec(),
        Some(Duration::from_millis(50)),
    );
    assert!(s.commit(b).await.expect("commit").is_applied());
    h.pass(Duration::from_millis(120)).await;

    for count in [1, 7, 1000] {
        assert_eq!(scan_all(&s, &prefix, count).await, want, "pages of {count}");
    }
    assert!(scan_all(&s, &h.key("nothing-here:"), 10).await.is_empty());
}

/// `now_ms` is the clock TTLs count on: a value put with a TTL is gone
/// once `now_ms` has passed its deadline, and present before.
pub async fn now_ms_is_the_ttl_clock<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("clock:v");
    let before = s.now_ms().await.expect("now_ms");
    let mut b = Batch::new();
    b.put(&k, b"x".to_vec(), Some(Duration::from_millis(300)));
    assert!(s.commit(b).await.expect("commit").is_applied());
    let after = s.now_ms().await.expect("now_ms");
    assert!(after >= before, "{after} < {before}");
    assert!(after < before + 300, "the clock ran {} ms", after - before);
    assert!(s.get(&k).await.expect("get").is_some());
    h.pass(Duration::from_millis(400)).await;
    let later = s.now_ms().await.expect("now_ms");
    assert!(later >= before + 300, "{later} < {before} + 300");
    assert!(s.get(&k).await.expect("get").is_none());
}

/// A store that gives a [`Store::snapshot`] reads, through it, the data of
/// its instant: commits made afterwards (a put, a delete, an increment, a
/// collection change) are invisible to it, and a commit to the view fails
/// with nothing written.
pub async fn a_snapshot_reads_one_instant<H: Harness>(h: &H) {
    let s = h.store();
    let (v, c, set, gone) = (
        h.key("snap:v"),
        h.key("snap:c"),
        h.key("snap:set"),
        h.key("snap:gone"),
    );
    let mut b = Batch::new();
    b.put(&v, b"before".to_vec(), None)
        .incr(&c, 5)
        .add(&set, b"a".to_vec(), b"1".to_vec())
        .put(&gone, b"x".to_vec(), None);
    assert!(s.commit(b).await.expect("seed").is_applied());
    let Some(view) = s.snapshot().await.expect("snapshot") else {
        return; // this store shows no instant: walks use change stamps
    };
    let mut b = Batch::new();
    b.put(&v, b"after".to_vec(), None)
        .incr(&c, 2)
        .add(&set, b"b".to_vec(), b"2".to_vec())
        .delete(&gone);
    assert!(s.commit(b).await.expect("later").is_applied());
    assert_eq!(
        view.get(&v).await.expect("get").as_deref(),
        Some(&b"before"[..])
    );
    assert_eq!(view.counter(&c).await.expect("counter"), 5);
    assert_eq!(view.collection_len(&set).await.expect("len"), 1);
    assert!(view.get(&gone).await.expect("get").is_some());
    assert_eq!(
        s.get(&v).await.expect("get").as_deref(),
        Some(&b"after"[..])
    );
    let mut b = Batch::new();
    b.put(h.key("snap:new"), b"x".to_vec(), None);
    assert!(
        view.commit(b).await.is_err(),
        "a commit to a view must fail"
    );
    assert_eq!(s.get(&h.key("snap:new")).await.expect("get"), None);
}

/// A store that keeps [`Store::change_stamps`] raises a counter's stamp in
/// every commit that moves it, and only then; a counter never moved has
/// stamp 0, and a removed one has that of a removed counter. (Keys spelt
/// as kvmodel spells derived counters: only those have stamps.)
pub async fn change_stamps_follow_every_move<H: Harness>(h: &H) {
    let s = h.store();
    let (c, d) = (h.key("stamp#count:c"), h.key("stamp#count:d"));
    let keys = vec![c.clone(), d.clone()];
    let Some(first) = s.change_stamps(&keys).await.expect("stamps") else {
        return; // this store shows one instant instead (`snapshot`)
    };
    assert_eq!(first, [0, 0]);
    let mut b = Batch::new();
    b.incr(&c, 3).incr(&c, 4);
    assert!(s.commit(b).await.expect("incr").is_applied());
    let second = s.change_stamps(&keys).await.expect("stamps").expect("kept");
    assert!(second[0] > first[0] && second[1] == 0, "{second:?}");
    let mut b = Batch::new();
    b.put(h.key("stamp:other"), b"x".to_vec(), None);
    assert!(s.commit(b).await.expect("put").is_applied());
    assert_eq!(
        s.change_stamps(&keys).await.expect("stamps").expect("kept"),
        second
    );
    // A refused batch moves nothing.
    let mut b = Batch::new();
    b.incr(&c, 1).absent(h.key("stamp:other"));
    assert!(!s.commit(b).await.expect("refused").is_applied());
    assert_eq!(
        s.change_stamps(&keys).await.expect("stamps").expect("kept"),
        second
    );
    let mut b = Batch::new();
    b.incr(&c, -7).incr(&d, 1);
    assert!(s.commit(b).await.expect("incr").is_applied());
    let third = s.change_stamps(&keys).await.expect("stamps").expect("kept");
    assert!(third[0] > second[0] && third[1] > 0, "{third:?}");
    assert_eq!(s.counter(&c).await.expect("counter"), 0);
    // A removed counter's stamp reads as removed: it proves nothing, and
    // goes after its afterlife. A key spelt otherwise has no stamp.
    let e = h.key("stamp#count:e");
    let mut b = Batch::new();
    b.incr(&e, 1);
    assert!(s.commit(b).await.expect("incr").is_applied());
    let mut b = Batch::new();
    b.delete(&e);
    assert!(s.commit(b).await.expect("delete").is_applied());
    let plain = h.key("stamp:plain");
    let mut b = Batch::new();
    b.incr(&plain, 1);
    assert!(s.commit(b).await.expect("incr").is_applied());
    let removed = s
        .change_stamps(&[e, d, plain])
        .await
        .expect("stamps")
        .expect("kept");
    assert!(
        removed[0] >= crate::store::counter::REMOVED_STAMP
            && removed[1] == third[1]
            && removed[2] == 0,
        "{removed:?}"
    );
}

/// A store that ranges over its keys ([`Store::orders_keys`]) pages through
/// the value keys under a prefix in byte order, both ways, resuming after
/// each page's position: every kept key once, none outside the prefix, no
/// counter or collection, and an expired value left out or handed over as
/// `None`.
/// Other stores are not asked.
pub async fn range_keys_pages_value_keys_in_order<H: Harness>(h: &H) {
    use crate::store::{Direction, RangeRequest};
    let s = h.store();
    if !s.orders_keys() {
        return;
    }
    let prefix = h.key("rk:");
    let mut b = Batch::new();
    let mut want = Vec::new();
    for i in 0..23 {
        let k = format!("{prefix}{i:02}");
        b.put(&k, format!("v{i}").into_bytes(), None);
        want.push(k);
    }
    b.put(format!("{prefix}skip:1"), b"x".to_vec(), None);
    b.put(h.key("rj:outside"), b"x".to_vec(), None);
    b.put(h.key("rk"), b"x".to_vec(), None);
    b.incr(format!("{prefix}counter"), 1);
    b.add(format!("{prefix}set"), b"s".to_vec(), b"m".to_vec());
    b.put(
        format!("{prefix}zz"),
        b"brief".to_vec(),
        Some(Duration::from_millis(50)),
    );
    assert!(s.commit(b).await.expect("commit").is_applied());
    h.pass(Duration::from_millis(120)).await;
    let keep = |k: &str| !k.contains("skip") && !k.ends_with("counter");
    for direction in [Direction::Ascending, Direction::Descending] {
        for limit in [1, 5, 100] {
            let (mut seen, mut after) = (Vec::new(), None);
            for _ in 0..100 {
                let mut req = RangeRequest::all(limit);
                req.direction = direction;
                req.after = after.take();
                let (page, next) = s
                    .range_keys_with(&prefix, keep, req, |k, v| {
                        (k.to_owned(), v.map(<[u8]>::to_vec))
                    })
                    .await
                    .expect("range_keys_with");
                assert!(
                    page.len() <= limit,
                    "a page of {} for a limit of {limit}",
                    page.len()
                );
                seen.extend(page);
                match next {
                    Some(n) => after = Some(n),
                    None => break,
                }
            }
            let (expired, live): (Vec<_>, Vec<_>) =
                seen.into_iter().partition(|(k, _)| k.ends_with("zz"));
            // An expired value is left out or handed over as `None`.
            assert!(
                expired.is_empty() || expired == vec![(format!("{prefix}zz"), None)],
                "{direction:?}, {limit}: {expired:?}"
            );
            let mut expect = want.clone();
            if direction == Direction::Descending {
                expect.reverse();
            }
            let keys: Vec<String> = live.iter().map(|(k, _)| k.clone()).collect();
            assert_eq!(keys, expect, "{direction:?}, pages of {limit}");
            for (k, v) in &live {
                let i: u32 = k[prefix.len()..].parse().expect("a test key");
                assert_eq!(v.as_deref(), Some(format!("v{i}").as_bytes()), "{k}");
            }
        }
    }
    let (none, next) = s
        .range_keys_with(
            &h.key("nothing:"),
            |_| true,
            RangeRequest::all(10),
            |k, _| k.to_owned(),
        )
        .await
        .expect("range_keys_with");
    assert!(none.is_empty() && next.is_none());
}
