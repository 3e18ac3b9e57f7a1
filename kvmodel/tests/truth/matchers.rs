//! The generated matchers a listing uses (`derives_member`, `is_at`) agree
//! with the facts and key builders they stand for.

use kvmodel::__private::{Entity, Facts};

use super::model::*;

#[path = "../repo/model.rs"]
#[allow(dead_code, unused_imports)]
mod repo;

/// Every membership of `value` (whatever its `since`), and near misses,
/// checked at every version against the facts.
fn agrees<E: Entity>(value: &E, other: &E) {
    let all = Facts::of(value);
    for version in 1..=E::VERSION {
        let stored = Facts::stored(value, version);
        for m in all.members.iter().chain(&Facts::of(other).members) {
            let mut longer = m.sort.clone();
            longer.push(0);
            let cases = [
                (m.collection.clone(), m.sort.clone()),
                (m.collection.clone(), longer),
                (m.collection.clone(), Vec::new()),
                (format!("{}x", m.collection), m.sort.clone()),
                (
                    m.collection[..m.collection.len() - 1].to_owned(),
                    m.sort.clone(),
                ),
            ];
            for (collection, sort) in cases {
                assert_eq!(
                    value.derives_member(version, &collection, &sort),
                    stored.has_member(&collection, &sort),
                    "{collection} {sort:?} at version {version}"
                );
            }
        }
    }
    let key = value.record_key();
    assert!(value.is_at(&key));
    assert!(!value.is_at(&format!("{key}x")));
    assert!(!value.is_at(&key[..key.len() - 1]));
    assert!(!value.is_at(&other.record_key()));
}

#[test]
fn generated_matchers_agree_with_facts() {
    let at = ts("2026-03-04T05:06:07Z");
    let note = |id: i64, tag: Option<&str>| Note {
        tenant: "t:1{x}".into(),
        id,
        tag: tag.map(Into::into),
        author: "a%b".into(),
        at,
    };
    agrees(&note(1, Some("red")), &note(2, Some("blue")));
    agrees(&note(1, None), &note(2, Some("red")));
    agrees(&session("tok", "u1"), &session("tok2", "u2"));
    agrees(&order("1", "u1", 5), &order("2", "u2", 5));
    let user =
        |id: &str, status| repo::user(id, &format!("{id}@x.io"), status, "2026-01-01T00:00:00Z");
    agrees(
        &user("1", repo::Status::Active),
        &user("2", repo::Status::Suspended),
    );
    let doc = |id| repo::Doc {
        tenant: "acme".into(),
        id,
        title: "t".into(),
    };
    agrees(&doc(-7), &doc(7));
}
