//! Conformance cases for the compound calls: a planned write
//! ([`Store::commit_after_read`]) and the reads that follow keys
//! ([`Store::get_via`], [`Store::range_values`]).

use std::sync::Arc;
use std::time::Duration;

use super::Harness;
use crate::error::Error;
use crate::store::batch::{Batch, Outcome, Planned};
use crate::store::{Direction, MemberRef, RangeRequest, Store};

fn put(b: &mut Batch, k: &str, v: &[u8]) {
    b.put(k, v.to_vec(), None);
}

/// A planned write sees the values of its keys in order, commits the batch
/// it plans, and returns what the plan returned; a plan that skips or fails
/// writes nothing, and a failed condition of its batch is reported.
pub async fn commit_after_read_plans_one_write<H: Harness>(h: &H) {
    let s = h.store();
    let (a, gone) = (h.key("plan:a"), h.key("plan:gone"));
    let mut seed = Batch::new();
    put(&mut seed, &a, b"1");
    assert!(s.commit(seed).await.unwrap().is_applied());

    let keys = [a.clone(), gone.clone()];
    let (outcome, seen) = s
        .commit_after_read(&keys, |values, now| {
            assert!(now > 0, "the store's clock");
            let mut b = Batch::new();
            b.equals(&a, b"1".to_vec());
            put(&mut b, &a, b"2");
            Ok(Planned::Commit(b, values))
        })
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(seen, vec![Some(b"1".to_vec()), None]);
    assert_eq!(s.get(&a).await.unwrap().as_deref(), Some(&b"2"[..]));

    let (outcome, t) = s
        .commit_after_read(&keys, |_, _| Ok(Planned::Skip(7)))
        .await
        .unwrap();
    assert_eq!((outcome, t), (Outcome::Applied, 7));

    let err = s
        .commit_after_read(&keys, |_, _| -> crate::Result<Planned<()>> {
            Err(Error::NotFound {
                entity: "Doc",
                key: gone.clone(),
            })
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");

    let (outcome, ()) = s
        .commit_after_read(&keys, |_, _| {
            let mut b = Batch::new();
            put(&mut b, &gone, b"x");
            b.absent(&a);
            Ok(Planned::Commit(b, ()))
        })
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Failed { index: 0 });
    assert_eq!(s.get(&gone).await.unwrap(), None, "nothing written");
    assert_eq!(s.get(&a).await.unwrap().as_deref(), Some(&b"2"[..]));
}

/// Concurrent planned increments that retry on a failed condition lose
/// nothing, whatever protocol the store chose.
pub async fn concurrent_planned_writes_lose_nothing<H: Harness>(h: &H) {
    let s = h.store();
    let k = Arc::new(h.key("plan:hot"));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (s, k) = (s.clone(), k.clone());
        tasks.push(tokio::spawn(async move {
            let keys = [k.to_string()];
            for _ in 0..10 {
                loop {
                    let (outcome, ()) = s
                        .commit_after_read(&keys, |values, _| {
                            let mut b = Batch::new();
                            let next = match &values[0] {
                                Some(v) => {
                                    b.equals(k.as_str(), v.clone());
                                    let n: u64 = String::from_utf8_lossy(v).parse().unwrap();
                                    n + 1
                                }
                                None => {
                                    b.absent(k.as_str());
                                    1
                                }
                            };
                            put(&mut b, &k, next.to_string().as_bytes());
                            Ok(Planned::Commit(b, ()))
                        })
                        .await
                        .unwrap();
                    if outcome.is_applied() {
                        break;
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(s.get(&k).await.unwrap().as_deref(), Some(&b"40"[..]));
}

/// `get_via` returns the value at a key and the value at the key it holds:
/// nothing for an absent key, `None` for a target that is absent, expired,
/// a collection, or not named by UTF-8.
pub async fn get_via_follows_one_key<H: Harness>(h: &H) {
    let s = h.store();
    let k = |n: &str| h.key(n);
    let (claim, record) = (k("via:claim"), k("via:record"));
    let mut b = Batch::new();
    put(&mut b, &claim, record.as_bytes());
    put(&mut b, &record, b"{}");
    put(&mut b, &k("via:to-gone"), k("via:gone").as_bytes());
    put(&mut b, &k("via:to-set"), k("via:set").as_bytes());
    b.add(k("via:set"), b"s".to_vec(), b"m".to_vec());
    put(&mut b, &k("via:to-brief"), k("via:brief").as_bytes());
    b.put(
        k("via:brief"),
        b"x".to_vec(),
        Some(Duration::from_millis(50)),
    );
    put(&mut b, &k("via:binary"), &[0xff, 0xfe]);
    assert!(s.commit(b).await.unwrap().is_applied());

    let via = |key: String| {
        let s = s.clone();
        async move { s.get_via(&key).await.unwrap() }
    };
    assert_eq!(
        via(claim.clone()).await,
        Some((record.as_bytes().to_vec(), Some(b"{}".to_vec())))
    );
    assert_eq!(via(k("via:nothing")).await, None);
    assert_eq!(
        via(k("via:to-gone")).await,
        Some((k("via:gone").into_bytes(), None))
    );
    assert_eq!(
        via(k("via:to-set")).await,
        Some((k("via:set").into_bytes(), None))
    );
    assert_eq!(via(k("via:binary")).await, Some((vec![0xff, 0xfe], None)));
    h.pass(Duration::from_millis(80)).await;
    assert_eq!(
        via(k("via:to-brief")).await,
        Some((k("via:brief").into_bytes(), None))
    );
}

/// `range_values` returns what `range` returns, with the value at each
/// member's key: `None` where that key holds nothing (or only expired data
/// or a collection) and for a member that is not UTF-8.
pub async fn range_values_reads_each_members_value<H: Harness>(h: &H) {
    let s = h.store();
    let c = h.key("rv:set");
    let names: Vec<Vec<u8>> = vec![
        h.key("rv:a").into_bytes(),
        h.key("rv:gone").into_bytes(),
        h.key("rv:brief").into_bytes(),
        vec![0xff, 0x00, 0x01],
        h.key("rv:set").into_bytes(),
        h.key("rv:b").into_bytes(),
    ];
    let mut b = Batch::new();
    for (i, n) in names.iter().enumerate() {
        b.add(&c, vec![i as u8, 0], n.clone());
    }
    put(&mut b, &h.key("rv:a"), b"A");
    put(&mut b, &h.key("rv:b"), b"B");
    b.put(
        h.key("rv:brief"),
        b"x".to_vec(),
        Some(Duration::from_millis(50)),
    );
    assert!(s.commit(b).await.unwrap().is_applied());
    h.pass(Duration::from_millis(80)).await;

    let want = |i: usize| match i {
        0 => Some(b"A".to_vec()),
        5 => Some(b"B".to_vec()),
        _ => None,
    };
    for direction in [Direction::Ascending, Direction::Descending] {
        let mut req = RangeRequest::all(4);
        req.direction = direction;
        let plain = s.range(&c, req.clone()).await.unwrap();
        let (range, values) = s.range_values(&c, req.clone()).await.unwrap();
        assert_eq!(range, plain);
        let order: Vec<usize> = match direction {
            Direction::Ascending => (0..4).collect(),
            Direction::Descending => (2..6).rev().collect(),
        };
        assert_eq!(values, order.iter().map(|&i| want(i)).collect::<Vec<_>>());
        req.after = range.next.clone();
        let (rest, values) = s.range_values(&c, req).await.unwrap();
        assert_eq!(rest.members.len(), 2);
        assert_eq!(rest.next, None);
        let order: Vec<usize> = match direction {
            Direction::Ascending => vec![4, 5],
            Direction::Descending => vec![1, 0],
        };
        assert_eq!(values, order.iter().map(|&i| want(i)).collect::<Vec<_>>());
    }
    let (empty, values) = s
        .range_values(&h.key("rv:none"), RangeRequest::all(10))
        .await
        .unwrap();
    assert!(empty.members.is_empty() && values.is_empty());
}

/// `range_values_with` hands `read` each member of the page with the value
/// `range_values` returns for it, in member order, and returns the same
/// page: in both directions, across a cursor, for a page that ends exactly
/// at the last member (no cursor) and for a page of no members.
pub async fn range_values_with_lends_each_members_value<H: Harness>(h: &H) {
    let s = h.store();
    let c = h.key("rvw:set");
    let names: Vec<Vec<u8>> = vec![
        h.key("rvw:a").into_bytes(),
        h.key("rvw:gone").into_bytes(),
        vec![0xff, 0x00, 0x01],
        h.key("rvw:b").into_bytes(),
    ];
    let mut b = Batch::new();
    for (i, n) in names.iter().enumerate() {
        b.add(&c, vec![i as u8, 0], n.clone());
    }
    put(&mut b, &h.key("rvw:a"), b"A");
    put(&mut b, &h.key("rvw:b"), b"B");
    assert!(s.commit(b).await.unwrap().is_applied());

    let lend = |m: MemberRef<'_>, v: Option<&[u8]>| (m.to_member(), v.map(<[u8]>::to_vec));
    for direction in [Direction::Ascending, Direction::Descending] {
        for limit in [0, 1, 3, 4, 10] {
            let mut req = RangeRequest::all(limit);
            req.direction = direction;
            let mut pages = 0;
            loop {
                let (range, values) = s.range_values(&c, req.clone()).await.unwrap();
                let (lent, next) = s.range_values_with(&c, req.clone(), lend).await.unwrap();
                assert_eq!(next, range.next, "{direction:?}, limit {limit}");
                let want: Vec<_> = range.members.iter().cloned().zip(values).collect();
                assert_eq!(lent, want, "{direction:?}, limit {limit}");
                assert!(range.members.len() <= limit);
                pages += 1;
                match range.next {
                    Some(next) => req.after = Some(next),
                    None => break,
                }
            }
            let want_pages = match limit {
                0 => 1,
                l => 4usize.div_ceil(l),
            };
            assert_eq!(pages, want_pages, "{direction:?}, limit {limit}");
        }
    }
    let (lent, next) = s
        .range_values_with(&c, RangeRequest::all(4), lend)
        .await
        .unwrap();
    assert_eq!(next, None, "a page that ends at the last member");
    let lent: Vec<_> = lent.into_iter().map(|(m, v)| (m.member, v)).collect();
    assert_eq!(
        lent,
        vec![
            (names[0].clone(), Some(b"A".to_vec())),
            (names[1].clone(), None),
            (names[2].clone(), None),
            (names[3].clone(), Some(b"B".to_vec())),
        ]
    );
}

/// `get_with` hands `read` what `get` returns: a value, an expired value
/// (absent), a missing key.
pub async fn get_with_lends_the_value<H: Harness>(h: &H) {
    let s = h.store();
    let (live, gone, missing) = (h.key("gw:live"), h.key("gw:gone"), h.key("gw:missing"));
    let mut b = Batch::new();
    put(&mut b, &live, b"value");
    b.put(&gone, b"old".to_vec(), Some(Duration::from_millis(50)));
    assert!(s.commit(b).await.unwrap().is_applied());
    h.pass(Duration::from_millis(80)).await;
    for key in [&live, &gone, &missing] {
        let lent = s.get_with(key, |v| v.map(<[u8]>::to_vec)).await.unwrap();
        assert_eq!(lent, s.get(key).await.unwrap(), "{key}");
    }
    let lent = s.get_with(&live, |v| v.map(<[u8]>::len)).await.unwrap();
    assert_eq!(lent, Some(5));
}
