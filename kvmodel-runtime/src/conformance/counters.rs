//! Conformance cases for counter arithmetic and for operations that meet a
//! key of the other kind: every backend refuses the same batches, before
//! writing anything.

use std::time::Duration;

use super::Harness;
use crate::error::Error;
use crate::store::batch::Batch;
use crate::store::counter::parse_counter;
use crate::store::{RangeRequest, Store};

/// Stored texts and whether they are counters: exactly what Redis `INCRBY`
/// accepts (canonical decimal `i64`: optional `-`, no leading zero, no `+`,
/// not `-0`). [`parse_counter`] must agree with every row; the Redis harness
/// checks the script and `INCRBY` itself against the same rows.
pub const COUNTER_TEXTS: &[(&str, Option<i64>)] = &[
    ("0", Some(0)),
    ("7", Some(7)),
    ("-7", Some(-7)),
    ("10", Some(10)),
    ("9007199254740993", Some(9_007_199_254_740_993)),
    ("9223372036854775807", Some(i64::MAX)),
    ("-9223372036854775808", Some(i64::MIN)),
    ("9223372036854775808", None),
    ("-9223372036854775809", None),
    ("18446744073709551616", None),
    ("99999999999999999999", None),
    ("123456789012345678901", None),
    ("007", None),
    ("00", None),
    ("-07", None),
    ("-0", None),
    ("+5", None),
    ("-", None),
    ("", None),
    (" 5", None),
    ("5 ", None),
    ("\t5", None),
    ("5\n", None),
    ("5\0", None),
    ("1e3", None),
    ("0x10", None),
    ("5.0", None),
    ("1_000", None),
    ("--5", None),
    ("\u{0663}", None),
    ("\u{FF15}", None),
];

async fn refused<S: Store>(s: &S, b: Batch, what: &str) -> Error {
    let err = s
        .commit(b)
        .await
        .expect_err(&format!("{what}: must be refused"));
    assert!(
        matches!(err, Error::InvalidBatch { .. }),
        "{what}: expected a refused batch, got {err}"
    );
    err
}

async fn applied<S: Store>(s: &S, b: Batch, what: &str) {
    let outcome = s.commit(b).await;
    assert!(
        matches!(outcome, Ok(o) if o.is_applied()),
        "{what}: must apply, got {outcome:?}"
    );
}

async fn value<S: Store>(s: &S, k: &str) -> Option<Vec<u8>> {
    s.get(k).await.expect("get")
}

/// A stored value is a counter exactly when `INCRBY` would take it; an
/// increment of anything else, or past the 64-bit range, fails the batch and
/// writes nothing, whether the value was stored earlier or put by the same
/// batch. Reads of the counter follow the same rule.
pub async fn counter_syntax_is_one_rule<H: Harness>(h: &H) {
    let s = h.store();
    for (i, (text, want)) in COUNTER_TEXTS.iter().enumerate() {
        assert_eq!(
            parse_counter("k", text.as_bytes()).ok(),
            *want,
            "the Rust rule on {text:?}"
        );
        let k = h.key(&format!("syntax:{i}"));
        let mut seed = Batch::new();
        seed.put(&k, text.as_bytes().to_vec(), None);
        applied(&s, seed, text).await;
        assert_eq!(s.counter(&k).await.ok(), *want, "reading {text:?}");
        for delta in [1i64, -1] {
            let marker = h.key(&format!("syntax:{i}:{delta}:marker"));
            let fresh = h.key(&format!("syntax:{i}:{delta}:fresh"));
            let what = format!("{text:?} {delta:+}");
            let mut b = Batch::new();
            b.put(&marker, b"m".to_vec(), None)
                .put(&fresh, text.as_bytes().to_vec(), None)
                .incr(&fresh, delta)
                .incr(&k, delta);
            match want.and_then(|v| v.checked_add(delta)) {
                Some(next) => {
                    applied(&s, b, &what).await;
                    let text = next.to_string().into_bytes();
                    assert_eq!(value(&s, &k).await, Some(text.clone()), "{what}");
                    assert_eq!(value(&s, &fresh).await, Some(text), "{what}");
                    // Back to the seeded text for the other delta.
                    let mut back = Batch::new();
                    back.incr(&k, -delta);
                    applied(&s, back, &what).await;
                }
                None => {
                    refused(&s, b, &what).await;
                    assert_eq!(value(&s, &marker).await, None, "{what}");
                    assert_eq!(value(&s, &fresh).await, None, "{what}");
                    assert_eq!(value(&s, &k).await.as_deref(), Some(text.as_bytes()));
                }
            }
        }
    }
}

/// Reading a value that is not a counter as one is a read error that names
/// the key and says nothing of a batch.
pub async fn reading_a_non_counter_is_a_read_error<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("notcounter");
    let mut seed = Batch::new();
    seed.put(&k, b"hello".to_vec(), None);
    applied(&s, seed, "seed").await;
    let err = s.counter(&k).await.expect_err("a text is not a counter");
    assert!(matches!(err, Error::NotACounter { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&k) && !text.contains("batch"), "{text}");
}

/// Overflow is exact at the 64-bit edges, also for values too close to the
/// edge for a double to tell apart, and over several increments of one batch.
pub async fn counter_overflow_is_exact<H: Harness>(h: &H) {
    let s = h.store();
    let (k, marker) = (h.key("edge:k"), h.key("edge:marker"));
    let set = |v: i64| {
        let mut b = Batch::new();
        b.put(&k, v.to_string().into_bytes(), None);
        b
    };
    let cases: &[(i64, &[i64], Option<i64>)] = &[
        (i64::MAX - 807, &[807], Some(i64::MAX)),
        (i64::MAX - 807, &[808], None),
        (i64::MIN + 808, &[-808], Some(i64::MIN)),
        (i64::MIN + 808, &[-809], None),
        (-1, &[i64::MAX, 1], Some(i64::MAX)),
        (0, &[i64::MAX, 1], None),
        (0, &[i64::MIN], Some(i64::MIN)),
        (i64::MIN, &[i64::MAX, i64::MAX, 1], Some(i64::MAX)),
        (i64::MIN, &[i64::MAX, i64::MAX, 2], None),
        (
            9_100_000_000_000_000_000,
            &[100_000_000_000_000_000],
            Some(9_200_000_000_000_000_000),
        ),
        (9_007_199_254_740_993, &[1], Some(9_007_199_254_740_994)),
        (
            -9_100_000_000_000_000_000,
            &[-1],
            Some(-9_100_000_000_000_000_001),
        ),
    ];
    for (start, deltas, want) in cases {
        let what = format!("{start} + {deltas:?}");
        applied(&s, set(*start), &what).await;
        let mut b = Batch::new();
        b.put(&marker, b"m".to_vec(), None);
        for d in *deltas {
            b.incr(&k, *d);
        }
        match want {
            Some(want) => {
                applied(&s, b, &what).await;
                assert_eq!(s.counter(&k).await.expect("counter"), *want, "{what}");
                let mut clear = Batch::new();
                clear.delete(&marker);
                applied(&s, clear, &what).await;
            }
            None => {
                let err = refused(&s, b, &what).await;
                assert!(err.to_string().contains("overflow"), "{what}: {err}");
                assert_eq!(value(&s, &marker).await, None, "{what}");
                assert_eq!(s.counter(&k).await.expect("counter"), *start, "{what}");
            }
        }
    }
}

/// A key holds nothing, a value (counters are values) or a sorted
/// collection. An operation or condition that meets the other kind fails
/// the batch before anything is written; a delete empties the key for any.
pub async fn kinds_do_not_mix<H: Harness>(h: &H) {
    let s = h.store();
    let (v, c, fresh, marker) = (
        h.key("kind:value"),
        h.key("kind:set"),
        h.key("kind:fresh"),
        h.key("kind:marker"),
    );
    let mut seed = Batch::new();
    seed.put(&v, b"5".to_vec(), None)
        .add(&c, b"s".to_vec(), b"m".to_vec());
    applied(&s, seed, "seed").await;
    let mut cases: Vec<(&str, Batch)> = Vec::new();
    let mut b = Batch::new();
    b.add(&v, b"s".to_vec(), b"m".to_vec());
    cases.push(("add to a value", b));
    let mut b = Batch::new();
    b.remove(&v, b"s".to_vec(), b"m".to_vec());
    cases.push(("remove from a value", b));
    let mut b = Batch::new();
    b.incr(&c, 1);
    cases.push(("increment a collection", b));
    let mut b = Batch::new();
    b.put(&c, b"x".to_vec(), None);
    cases.push(("put over a collection", b));
    let mut b = Batch::new();
    b.add(&fresh, vec![], b"m".to_vec()).incr(&fresh, 1);
    cases.push(("increment what the batch made a collection", b));
    let mut b = Batch::new();
    b.put(&fresh, b"1".to_vec(), None)
        .add(&fresh, vec![], b"m".to_vec());
    cases.push(("add to what the batch made a value", b));
    let mut b = Batch::new();
    b.absent(&c);
    cases.push(("a condition on a collection", b));
    for (what, b) in cases {
        let mut with_marker = Batch::new();
        with_marker.put(&marker, b"m".to_vec(), None);
        let (conditions, ops) = b.into_parts();
        for c in conditions {
            with_marker.condition(c);
        }
        for op in ops {
            with_marker.op(op);
        }
        refused(&s, with_marker, what).await;
        assert_eq!(value(&s, &marker).await, None, "{what}");
        assert_eq!(value(&s, &fresh).await, None, "{what}");
    }
    assert_eq!(value(&s, &v).await.as_deref(), Some(&b"5"[..]));
    let members = s.range(&c, RangeRequest::all(10)).await.expect("range");
    assert_eq!(members.members.len(), 1);
    // A delete first makes room for the other kind, in the same batch.
    let mut b = Batch::new();
    b.delete(&c).put(&c, b"x".to_vec(), None).delete(&v);
    b.add(&v, vec![], b"m".to_vec());
    applied(&s, b, "delete, then the other kind").await;
    assert_eq!(value(&s, &c).await.as_deref(), Some(&b"x"[..]));
    let members = s.range(&v, RangeRequest::all(10)).await.expect("range");
    assert_eq!(members.members.len(), 1);
}

/// TTLs below one millisecond are accepted and expire at once (or within a
/// millisecond), for puts and expires alike.
pub async fn sub_millisecond_ttls_are_accepted<H: Harness>(h: &H) {
    let s = h.store();
    let (a, b_, c) = (h.key("subms:a"), h.key("subms:b"), h.key("subms:c"));
    let mut b = Batch::new();
    b.put(&a, b"x".to_vec(), Some(Duration::from_nanos(1)))
        .put(&b_, b"y".to_vec(), Some(Duration::from_micros(999)))
        .incr(&c, 1)
        .expire(&c, Duration::from_nanos(1));
    applied(&s, b, "sub-millisecond TTLs").await;
    h.pass(Duration::from_millis(20)).await;
    for k in [&a, &b_, &c] {
        assert_eq!(value(&s, k).await, None, "{k}");
    }
}

/// An increment with a limit (a shard of a sharded counter) fails the
/// batch, writing nothing, when it would take the counter beyond `±limit`;
/// up to the limit it applies like any increment.
pub async fn an_increment_stays_within_its_limit<H: Harness>(h: &H) {
    let s = h.store();
    let (c, other) = (h.key("limit:c"), h.key("limit:other"));
    let mut b = Batch::new();
    b.incr_within(&c, 10, 10);
    applied(&s, b, "up to the limit").await;
    let mut b = Batch::new();
    b.put(&other, b"x".to_vec(), None).incr_within(&c, 1, 10);
    let err = refused(&s, b, "past the limit").await;
    assert!(err.to_string().contains("sharded counter"), "{err}");
    assert_eq!(
        value(&s, &other).await,
        None,
        "a refused batch writes nothing"
    );
    let mut b = Batch::new();
    b.incr_within(&c, -20, 10);
    applied(&s, b, "down to the negative limit").await;
    let mut b = Batch::new();
    b.incr_within(&c, -1, 10);
    refused(&s, b, "past the negative limit").await;
    assert_eq!(s.counter(&c).await.expect("counter"), -10);
    // A counter already beyond its limit (written without one) may still
    // move back toward 0, never further out.
    let mut b = Batch::new();
    b.incr(&c, -5);
    applied(&s, b, "no limit").await;
    let mut b = Batch::new();
    b.incr_within(&c, 1, 10);
    applied(&s, b, "back toward 0").await;
    let mut b = Batch::new();
    b.incr_within(&c, -1, 10);
    refused(&s, b, "further out").await;
    assert_eq!(s.counter(&c).await.expect("counter"), -14);
}
