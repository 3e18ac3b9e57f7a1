//! The conformance cases: each takes a [`Harness`] and panics on failure.

use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use super::Harness;
use crate::codec::key::sort_key;
use crate::store::batch::{Batch, Outcome};
use crate::store::{Direction, RangeRequest, Store};

async fn commit<S: Store>(s: &S, b: &Batch) -> Outcome {
    s.commit(b.clone()).await.expect("commit")
}

async fn get<S: Store>(s: &S, k: &str) -> Option<Vec<u8>> {
    s.get(k).await.expect("get")
}

async fn members<S: Store>(s: &S, k: &str) -> Vec<Vec<u8>> {
    let r = s.range(k, RangeRequest::all(10_000)).await.expect("range");
    r.members.into_iter().map(|m| m.member).collect()
}

/// `Absent` holds only when the key has no value.
pub async fn absent_condition<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("cond:absent");
    let mut b = Batch::new();
    b.absent(&k).put(&k, b"1".to_vec(), None);
    assert_eq!(commit(&s, &b).await, Outcome::Applied);
    assert_eq!(commit(&s, &b).await, Outcome::Failed { index: 0 });
    assert_eq!(get(&s, &k).await.as_deref(), Some(&b"1"[..]));
}

/// `Equals` holds only on exactly equal bytes, never on an absent key.
pub async fn equals_condition<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("cond:eq");
    let mut b = Batch::new();
    b.equals(&k, b"a".to_vec()).put(&k, b"b".to_vec(), None);
    assert_eq!(
        commit(&s, &b).await,
        Outcome::Failed { index: 0 },
        "absent key"
    );
    let mut seed = Batch::new();
    seed.put(&k, b"a".to_vec(), None);
    assert!(commit(&s, &seed).await.is_applied());
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(
        commit(&s, &b).await,
        Outcome::Failed { index: 0 },
        "stale value"
    );
    assert_eq!(get(&s, &k).await.as_deref(), Some(&b"b"[..]));
}

/// `AbsentOrEquals` holds on absent or equal, fails on different bytes.
pub async fn absent_or_equals_condition<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("cond:aoe");
    let mut b = Batch::new();
    b.absent_or_equals(&k, b"me".to_vec())
        .put(&k, b"me".to_vec(), None);
    assert!(commit(&s, &b).await.is_applied(), "absent");
    assert!(commit(&s, &b).await.is_applied(), "equal");
    let mut other = Batch::new();
    other
        .absent_or_equals(&k, b"you".to_vec())
        .put(&k, b"you".to_vec(), None);
    assert_eq!(commit(&s, &other).await, Outcome::Failed { index: 0 });
    assert_eq!(get(&s, &k).await.as_deref(), Some(&b"me"[..]));
}

/// `Present` holds on any value, fails on an absent key.
pub async fn present_condition<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("cond:present");
    let out = h.key("cond:present:out");
    let mut b = Batch::new();
    b.present(&k).put(&out, b"x".to_vec(), None);
    assert_eq!(
        commit(&s, &b).await,
        Outcome::Failed { index: 0 },
        "absent key"
    );
    assert_eq!(get(&s, &out).await, None, "nothing written");
    let mut seed = Batch::new();
    seed.put(&k, b"any".to_vec(), None);
    assert!(commit(&s, &seed).await.is_applied());
    assert!(commit(&s, &b).await.is_applied(), "present");
    assert_eq!(get(&s, &out).await.as_deref(), Some(&b"x"[..]));
}

async fn snapshot<S: Store>(
    s: &S,
    keys: &[String],
    sets: &[String],
) -> (Vec<Option<Vec<u8>>>, Vec<Vec<Vec<u8>>>) {
    let values = s.get_many(keys).await.expect("get_many");
    let mut all = Vec::new();
    for k in sets {
        all.push(members(s, k).await);
    }
    (values, all)
}

/// A failed condition writes nothing, whatever kinds of operations the batch held.
pub async fn failed_condition_applies_nothing<H: Harness>(h: &H) {
    let s = h.store();
    let (v, gone, n, set, tmp, guard) = (
        h.key("nothing:v"),
        h.key("nothing:gone"),
        h.key("nothing:n"),
        h.key("nothing:set"),
        h.key("nothing:tmp"),
        h.key("nothing:guard"),
    );
    let mut seed = Batch::new();
    seed.put(&v, b"old".to_vec(), None)
        .put(&gone, b"keep".to_vec(), None)
        .put(&tmp, b"t".to_vec(), None)
        .incr(&n, 5)
        .add(&set, b"s1".to_vec(), b"m1".to_vec())
        .put(&guard, b"x".to_vec(), None);
    assert!(commit(&s, &seed).await.is_applied());
    let keys = vec![v.clone(), gone.clone(), n.clone(), tmp.clone()];
    let sets = vec![set.clone()];
    let before = snapshot(&s, &keys, &sets).await;

    let mut b = Batch::new();
    b.absent(h.key("nothing:free"))
        .absent(&guard)
        .put(&v, b"new".to_vec(), None)
        .delete(&gone)
        .incr(&n, 10)
        .add(&set, b"s2".to_vec(), b"m2".to_vec())
        .remove(&set, b"s1".to_vec(), b"m1".to_vec())
        .expire(&tmp, Duration::from_millis(1));
    assert_eq!(commit(&s, &b).await, Outcome::Failed { index: 1 });
    h.pass(Duration::from_millis(20)).await;
    assert_eq!(snapshot(&s, &keys, &sets).await, before);
}

/// The first failing condition, in batch order, is the one reported.
pub async fn failed_condition_reports_first_failing<H: Harness>(h: &H) {
    let s = h.store();
    let (a, b_, c) = (h.key("first:a"), h.key("first:b"), h.key("first:c"));
    let mut seed = Batch::new();
    seed.put(&b_, b"1".to_vec(), None)
        .put(&c, b"1".to_vec(), None);
    assert!(commit(&s, &seed).await.is_applied());
    let mut b = Batch::new();
    b.absent(&a)
        .absent(&b_)
        .absent(&c)
        .put(&a, b"x".to_vec(), None);
    assert_eq!(commit(&s, &b).await, Outcome::Failed { index: 1 });
    assert_eq!(get(&s, &a).await, None);
}

/// An increment of a non-integer value is an error and writes nothing.
pub async fn invalid_increment_applies_nothing<H: Harness>(h: &H) {
    let s = h.store();
    let (text, other) = (h.key("badincr:text"), h.key("badincr:other"));
    let mut seed = Batch::new();
    seed.put(&text, b"hello".to_vec(), None);
    assert!(commit(&s, &seed).await.is_applied());
    let mut b = Batch::new();
    b.put(&other, b"1".to_vec(), None).incr(&text, 1);
    let err = s.commit(b).await.expect_err("incr of text must fail");
    assert!(
        err.to_string().contains("nothing was written")
            || matches!(
                err,
                crate::Error::InvalidBatch { .. } | crate::Error::Backend { .. }
            ),
        "{err}"
    );
    assert_eq!(get(&s, &other).await, None);
    assert_eq!(get(&s, &text).await.as_deref(), Some(&b"hello"[..]));
}

/// A conditional delete removes a value only where it holds exactly the
/// bytes named (a counter too, by its decimal text); another value and an
/// absent key are left as they are. It refuses a sorted collection, and an
/// operation after it that needs to know what the key holds; a put after it
/// applies. A refused batch writes nothing.
pub async fn delete_if_equals_deletes_only_its_value<H: Harness>(h: &H) {
    let s = h.store();
    let (mine, theirs, none, count, set, out) = (
        h.key("dif:mine"),
        h.key("dif:theirs"),
        h.key("dif:none"),
        h.key("dif:count"),
        h.key("dif:set"),
        h.key("dif:out"),
    );
    let mut seed = Batch::new();
    seed.put(&mine, b"me".to_vec(), None)
        .put(&theirs, b"you".to_vec(), None)
        .incr(&count, 5)
        .add(&set, b"s".to_vec(), b"me".to_vec());
    assert!(commit(&s, &seed).await.is_applied());
    let mut b = Batch::new();
    b.delete_if_equals(&mine, b"me".to_vec())
        .delete_if_equals(&theirs, b"me".to_vec())
        .delete_if_equals(&none, b"me".to_vec())
        .delete_if_equals(&count, b"5".to_vec());
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(get(&s, &mine).await, None, "the value named goes");
    assert_eq!(get(&s, &theirs).await.as_deref(), Some(&b"you"[..]));
    assert_eq!(get(&s, &none).await, None);
    assert_eq!(s.counter(&count).await.expect("counter"), 0);
    // A prefix or an extension of the value is another value.
    let mut near = Batch::new();
    near.delete_if_equals(&theirs, b"yo".to_vec())
        .delete_if_equals(&theirs, b"you!".to_vec());
    assert!(commit(&s, &near).await.is_applied());
    assert_eq!(get(&s, &theirs).await.as_deref(), Some(&b"you"[..]));

    // Refused: a collection, and an increment or a member after it.
    let mut on_set = Batch::new();
    on_set
        .put(&out, b"x".to_vec(), None)
        .delete_if_equals(&set, b"me".to_vec());
    s.commit(on_set)
        .await
        .expect_err("a conditional delete of a collection");
    let mut then_incr = Batch::new();
    then_incr
        .put(&out, b"x".to_vec(), None)
        .delete_if_equals(&theirs, b"you".to_vec())
        .incr(&theirs, 1);
    s.commit(then_incr)
        .await
        .expect_err("an increment after a conditional delete");
    let mut then_add = Batch::new();
    then_add
        .put(&out, b"x".to_vec(), None)
        .delete_if_equals(&theirs, b"zz".to_vec())
        .add(&theirs, b"s".to_vec(), b"m".to_vec());
    s.commit(then_add)
        .await
        .expect_err("a member added after a conditional delete");
    assert_eq!(get(&s, &out).await, None, "a refused batch writes nothing");
    assert_eq!(get(&s, &theirs).await.as_deref(), Some(&b"you"[..]));
    assert_eq!(members(&s, &set).await, vec![b"me".to_vec()]);

    // A put after it applies, whichever way the delete went.
    let mut then_put = Batch::new();
    then_put
        .delete_if_equals(&theirs, b"you".to_vec())
        .put(&theirs, b"new".to_vec(), None)
        .delete_if_equals(&mine, b"me".to_vec())
        .put(&mine, b"back".to_vec(), None);
    assert!(commit(&s, &then_put).await.is_applied());
    assert_eq!(get(&s, &theirs).await.as_deref(), Some(&b"new"[..]));
    assert_eq!(get(&s, &mine).await.as_deref(), Some(&b"back"[..]));
}

/// Operations apply in order: a put then an increment of the same key adds up.
pub async fn ops_see_earlier_ops_of_the_batch<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("order:k");
    let mut b = Batch::new();
    b.put(&k, b"40".to_vec(), None).incr(&k, 2);
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(s.counter(&k).await.expect("counter"), 42);
    let mut d = Batch::new();
    d.delete(&k).incr(&k, -1);
    assert!(commit(&s, &d).await.is_applied());
    assert_eq!(s.counter(&k).await.expect("counter"), -1);
}

/// A put replaces both value and TTL.
pub async fn put_replaces_value_and_ttl<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("ttl:replace");
    let mut b = Batch::new();
    b.put(&k, b"short".to_vec(), Some(Duration::from_millis(150)));
    assert!(commit(&s, &b).await.is_applied());
    let mut b = Batch::new();
    b.put(&k, b"forever".to_vec(), None);
    assert!(commit(&s, &b).await.is_applied());
    h.pass(Duration::from_millis(300)).await;
    assert_eq!(get(&s, &k).await.as_deref(), Some(&b"forever"[..]));
}

/// Extreme TTLs are accepted: a zero TTL and one of centuries.
pub async fn extreme_ttls_are_accepted<H: Harness>(h: &H) {
    let s = h.store();
    let (long, short) = (h.key("ttl:long"), h.key("ttl:short"));
    let mut b = Batch::new();
    b.put(
        &long,
        b"x".to_vec(),
        Some(Duration::from_secs(u64::MAX / 4)),
    )
    .put(&short, b"y".to_vec(), Some(Duration::ZERO))
    .expire(&long, Duration::from_secs(u64::MAX / 4));
    assert!(commit(&s, &b).await.is_applied());
    h.pass(Duration::from_millis(50)).await;
    assert_eq!(get(&s, &long).await.as_deref(), Some(&b"x"[..]));
    assert_eq!(get(&s, &short).await, None, "a zero TTL expires at once");
}

/// A value with a TTL is absent to reads and to `Absent` once it expired.
pub async fn values_expire<H: Harness>(h: &H) {
    let s = h.store();
    let (k, stay) = (h.key("ttl:v"), h.key("ttl:stay"));
    let mut b = Batch::new();
    b.put(&k, b"x".to_vec(), Some(Duration::from_millis(150)))
        .put(&stay, b"y".to_vec(), Some(Duration::from_secs(3600)));
    assert!(commit(&s, &b).await.is_applied());
    assert!(get(&s, &k).await.is_some());
    h.pass(Duration::from_millis(300)).await;
    assert_eq!(get(&s, &k).await, None);
    assert_eq!(
        s.get_many(std::slice::from_ref(&k))
            .await
            .expect("get_many"),
        vec![None]
    );
    assert!(get(&s, &stay).await.is_some());
    let mut again = Batch::new();
    again.absent(&k).put(&k, b"z".to_vec(), None);
    assert!(
        commit(&s, &again).await.is_applied(),
        "expired key counts as absent"
    );
    // An increment of an expired counter starts again from zero.
    let c = h.key("ttl:c");
    let mut b = Batch::new();
    b.incr(&c, 7).expire(&c, Duration::from_millis(150));
    assert!(commit(&s, &b).await.is_applied());
    h.pass(Duration::from_millis(300)).await;
    let mut b = Batch::new();
    b.incr(&c, 1);
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(s.counter(&c).await.expect("counter"), 1);
}

/// `Expire` applies to counters and collections too, and ignores absent keys.
pub async fn expire_sets_ttl_on_counters_and_collections<H: Harness>(h: &H) {
    let s = h.store();
    let (c, set, none) = (h.key("exp:c"), h.key("exp:set"), h.key("exp:none"));
    let mut b = Batch::new();
    b.incr(&c, 3)
        .add(&set, vec![], b"m".to_vec())
        .expire(&c, Duration::from_millis(150))
        .expire(&set, Duration::from_millis(150))
        .expire(&none, Duration::from_millis(150));
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(s.counter(&c).await.expect("counter"), 3);
    assert_eq!(members(&s, &set).await.len(), 1);
    h.pass(Duration::from_millis(300)).await;
    assert_eq!(s.counter(&c).await.expect("counter"), 0);
    assert!(members(&s, &set).await.is_empty());
    assert_eq!(get(&s, &none).await, None);
    let mut b = Batch::new();
    b.add(&set, vec![], b"fresh".to_vec());
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(members(&s, &set).await, vec![b"fresh".to_vec()]);
}

/// `get_many` keeps the order of the keys and gives `None` for missing ones.
pub async fn get_many_keeps_order<H: Harness>(h: &H) {
    let s = h.store();
    let keys: Vec<String> = (0..6).map(|i| h.key(&format!("many:{i}"))).collect();
    let mut b = Batch::new();
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| i.is_multiple_of(2)) {
        b.put(k, format!("v{i}").into_bytes(), None);
    }
    assert!(commit(&s, &b).await.is_applied());
    let mut ask = keys.clone();
    ask.reverse();
    ask.push(keys[0].clone());
    let got = s.get_many(&ask).await.expect("get_many");
    let want: Vec<Option<Vec<u8>>> = ask
        .iter()
        .map(|k| {
            let i: usize = k.rsplit(':').next().unwrap().parse().unwrap();
            i.is_multiple_of(2).then(|| format!("v{i}").into_bytes())
        })
        .collect();
    assert_eq!(got, want);
    assert!(s.get_many(&[]).await.expect("empty get_many").is_empty());
}

/// Counters start at zero and add signed deltas.
pub async fn counters_add_up<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("count:k");
    assert_eq!(s.counter(&k).await.expect("counter"), 0);
    for d in [5, -2, 10, -20] {
        let mut b = Batch::new();
        b.incr(&k, d);
        assert!(commit(&s, &b).await.is_applied());
    }
    assert_eq!(s.counter(&k).await.expect("counter"), -7);
    assert_eq!(
        get(&s, &k).await.as_deref(),
        Some(&b"-7"[..]),
        "counters are decimal text"
    );
}

async fn fill<S: Store>(s: &S, k: &str, sorts: &[i64]) {
    let mut b = Batch::new();
    for v in sorts {
        b.add(k, sort_key(v), format!("m{v}").into_bytes());
    }
    assert!(commit(s, &b).await.is_applied());
}

async fn range_members<S: Store>(s: &S, k: &str, req: RangeRequest) -> Vec<String> {
    s.range(k, req)
        .await
        .expect("range")
        .members
        .into_iter()
        .map(|m| String::from_utf8(m.member).unwrap())
        .collect()
}

/// Inclusive and exclusive bounds on the sort key, including negatives.
pub async fn range_bounds<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("range:bounds");
    fill(&s, &k, &[-5, -1, 0, 3, 7, 100]).await;
    let req = |lower, upper| RangeRequest {
        lower,
        upper,
        ..RangeRequest::all(100)
    };
    use Bound::*;
    let got = range_members(
        &s,
        &k,
        req(Included(sort_key(&-1i64)), Included(sort_key(&7i64))),
    )
    .await;
    assert_eq!(got, ["m-1", "m0", "m3", "m7"]);
    let got = range_members(
        &s,
        &k,
        req(Excluded(sort_key(&-1i64)), Excluded(sort_key(&7i64))),
    )
    .await;
    assert_eq!(got, ["m0", "m3"]);
    let got = range_members(&s, &k, req(Unbounded, Excluded(sort_key(&0i64)))).await;
    assert_eq!(got, ["m-5", "m-1"]);
    let got = range_members(&s, &k, req(Included(sort_key(&4i64)), Unbounded)).await;
    assert_eq!(got, ["m7", "m100"]);
    let got = range_members(
        &s,
        &k,
        req(Included(sort_key(&50i64)), Included(sort_key(&4i64))),
    )
    .await;
    assert!(got.is_empty(), "inverted bounds give an empty page");
    let got = range_members(&s, &h.key("range:none"), RangeRequest::all(10)).await;
    assert!(got.is_empty());
}

/// Limits and both directions; `next` is `None` on the last page.
pub async fn range_limit_and_direction<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("range:dir");
    fill(&s, &k, &[1, 2, 3, 4, 5]).await;
    let page = s.range(&k, RangeRequest::all(2)).await.expect("range");
    assert_eq!(page.members.len(), 2);
    assert!(page.next.is_some());
    let desc = RangeRequest {
        direction: Direction::Descending,
        upper: Bound::Included(sort_key(&4i64)),
        ..RangeRequest::all(3)
    };
    assert_eq!(range_members(&s, &k, desc).await, ["m4", "m3", "m2"]);
    let all = s.range(&k, RangeRequest::all(5)).await.expect("range");
    assert_eq!(all.members.len(), 5);
    assert_eq!(all.next, None, "exact fit has no next page");
    let zero = s.range(&k, RangeRequest::all(0)).await.expect("range");
    assert!(zero.members.is_empty());
}

/// Cursor pagination in both directions sees every member exactly once, in
/// order, while other members are inserted between pages.
pub async fn range_cursor_resumes_across_inserts<H: Harness>(h: &H) {
    let s = h.store();
    for direction in [Direction::Ascending, Direction::Descending] {
        let k = h.key(&format!("range:cursor:{direction:?}"));
        fill(&s, &k, &[10, 20, 30, 40, 50, 60, 70]).await;
        // Several members share one sort key: ties are ordered by member.
        let mut b = Batch::new();
        b.add(&k, sort_key(&30i64), b"m30b".to_vec());
        assert!(commit(&s, &b).await.is_applied());
        let mut seen = Vec::new();
        let mut after = None;
        let mut inserted = false;
        loop {
            let req = RangeRequest {
                direction,
                after: after.clone(),
                ..RangeRequest::all(3)
            };
            let page = s.range(&k, req).await.expect("range");
            seen.extend(
                page.members
                    .iter()
                    .map(|m| String::from_utf8(m.member.clone()).unwrap()),
            );
            if !inserted {
                // One before the cursor, one after it.
                fill(&s, &k, &[5, 75]).await;
                inserted = true;
            }
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let mut want: Vec<&str> = match direction {
            Direction::Ascending => vec![
                "m10", "m20", "m30", "m30b", "m40", "m50", "m60", "m70", "m75",
            ],
            Direction::Descending => vec![
                "m70", "m60", "m50", "m40", "m30b", "m30", "m20", "m10", "m5",
            ],
        };
        if direction == Direction::Descending {
            // The member inserted past the first page (75) is behind the cursor.
            want.retain(|m| *m != "m75");
        }
        assert_eq!(seen, want, "{direction:?}");
    }
}

/// Adding a member twice keeps one; remove needs the sort key it was added
/// with; delete clears a whole collection.
pub async fn collections_are_sets_and_delete_clears<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("set:k");
    let mut b = Batch::new();
    b.add(&k, b"a".to_vec(), b"x".to_vec())
        .add(&k, b"a".to_vec(), b"x".to_vec())
        .add(&k, b"b".to_vec(), b"x".to_vec())
        .add(&k, vec![0, 0xff], b"y\0z".to_vec());
    assert!(commit(&s, &b).await.is_applied());
    let all = s.range(&k, RangeRequest::all(10)).await.expect("range");
    assert_eq!(all.members.len(), 3);
    assert_eq!(
        all.members[0].sort,
        vec![0, 0xff],
        "binary sort keys survive"
    );
    assert_eq!(
        all.members[0].member,
        b"y\0z".to_vec(),
        "binary members survive"
    );
    let mut b = Batch::new();
    b.remove(&k, b"a".to_vec(), b"x".to_vec());
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(members(&s, &k).await, vec![b"y\0z".to_vec(), b"x".to_vec()]);
    let mut b = Batch::new();
    b.delete(&k);
    assert!(commit(&s, &b).await.is_applied());
    assert!(members(&s, &k).await.is_empty());
}

/// Sixteen tasks race an `Absent` condition on one key: exactly one wins.
pub async fn concurrent_absent_race_has_one_winner<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("race:claim");
    let barrier = Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for i in 0..16u32 {
        let (s, k, barrier) = (s.clone(), k.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut b = Batch::new();
            b.absent(&k).put(&k, i.to_string().into_bytes(), None);
            s.commit(b).await.expect("commit").is_applied().then_some(i)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let Some(i) = t.await.expect("task") {
            winners.push(i);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner: {winners:?}");
    assert_eq!(get(&s, &k).await, Some(winners[0].to_string().into_bytes()));
}

/// Eight tasks each do five compare-and-swap increments of one value.
pub async fn concurrent_compare_and_swap_loses_nothing<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("race:cas");
    let mut seed = Batch::new();
    seed.put(&k, b"0".to_vec(), None);
    assert!(commit(&s, &seed).await.is_applied());
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (s, k) = (s.clone(), k.clone());
        tasks.push(tokio::spawn(async move {
            let mut attempts = 0u32;
            for _ in 0..5 {
                loop {
                    attempts += 1;
                    let cur = s.get(&k).await.expect("get").expect("seeded");
                    let n: u64 = std::str::from_utf8(&cur).unwrap().parse().unwrap();
                    let mut b = Batch::new();
                    b.equals(&k, cur)
                        .put(&k, (n + 1).to_string().into_bytes(), None);
                    if s.commit(b).await.expect("commit").is_applied() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
            }
            attempts
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(get(&s, &k).await, Some(b"40".to_vec()));
}

/// A read of the empty key (the owner named by an emptied claim, say)
/// finds nothing, alone or among other keys, whether or not the store can
/// hold such a key.
pub async fn the_empty_key_reads_as_absent<H: Harness>(h: &H) {
    let s = h.store();
    let k = h.key("empty:neighbour");
    let mut b = Batch::new();
    b.put(&k, b"1".to_vec(), None);
    assert!(commit(&s, &b).await.is_applied());
    assert_eq!(get(&s, "").await, None);
    let many = s
        .get_many(&[String::new(), k.clone(), String::new()])
        .await
        .expect("get_many");
    assert_eq!(many, [None, Some(b"1".to_vec()), None]);
    let r = s.range("", RangeRequest::all(10)).await.expect("range");
    assert!(r.members.is_empty());
}
