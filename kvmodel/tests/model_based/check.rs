//! What every read must return, given the model: each record, each unique
//! lookup, every listing read page by page in both directions, each
//! counter and the number of records.

use std::future::Future;

use kvmodel::{Cursor, Page, PageRequest, Store};

use super::entities::*;
use super::steps::Repos;

/// Records per page: small, so that listings span several pages.
const PAGE: usize = 2;

/// Every page of a listing, following `next` until it is `None`.
async fn all_pages<T, F, Fut>(what: &str, mut read: F) -> Vec<T>
where
    F: FnMut(Option<Cursor>) -> Fut,
    Fut: Future<Output = kvmodel::Result<Page<T>>>,
{
    let mut out = Vec::new();
    let mut cursor = None;
    for _ in 0..100 {
        let page = read(cursor.take())
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(page.items.len() <= PAGE, "{what}: an oversized page");
        assert!(page.skipped.is_empty(), "{what}: {:?}", page.skipped);
        out.extend(page.items);
        match page.next {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
    panic!("{what}: a listing that does not end");
}

fn page<T>(cursor: Option<Cursor>, descending: bool) -> PageRequest<T> {
    let mut p = PageRequest::new(PAGE);
    if descending {
        p = p.descending();
    }
    match cursor {
        Some(c) => p.after(c),
        None => p,
    }
}

/// `records` in listing order: by `sort`, then by record key; reversed
/// when descending.
fn ordered<T: Clone, K: Ord>(records: &[&T], sort: impl Fn(&T) -> K, desc: bool) -> Vec<T> {
    let mut out: Vec<T> = records.iter().map(|r| (*r).clone()).collect();
    out.sort_by_key(|r| sort(r));
    if desc {
        out.reverse();
    }
    out
}

/// Compares every read of the store with the model.
pub async fn check<S: Store>(r: &Repos<S>, m: &Model) {
    check_items(r, m).await;
    check_leases(r, m).await;
    super::feed::check_entries(r, m).await;
}

async fn check_items<S: Store>(r: &Repos<S>, m: &Model) {
    let repo = &r.items;
    let items: Vec<&Item> = m.items.values().collect();
    for id in IDS {
        assert_eq!(
            repo.get(id).await.unwrap().as_ref(),
            m.items.get(*id),
            "item {id}"
        );
    }
    for sku in SKUS {
        let want = m.sku_holder(sku, "");
        assert_eq!(
            repo.find_by_sku(sku).await.unwrap().as_ref(),
            want,
            "sku {sku}"
        );
    }
    for desc in [false, true] {
        for group in GROUPS {
            let got = all_pages("list_by_group", |c| {
                repo.list_by_group(group, page(c, desc))
            })
            .await;
            let of: Vec<&Item> = items
                .iter()
                .copied()
                .filter(|i| i.group == *group)
                .collect();
            let want = ordered(&of, |i| (i.rank, i.id.clone()), desc);
            assert_eq!(got, want, "list_by_group({group}), descending: {desc}");
        }
        for owner in OWNERS {
            let got = all_pages("items list_by_owner", |c| {
                repo.list_by_owner(owner, page(c, desc))
            })
            .await;
            let of: Vec<&Item> = items
                .iter()
                .copied()
                .filter(|i| i.owner == *owner)
                .collect();
            let want = ordered(&of, |i| i.id.clone(), desc);
            assert_eq!(
                got, want,
                "items list_by_owner({owner}), descending: {desc}"
            );
        }
        let got = all_pages("items list_all", |c| repo.list_all(page(c, desc))).await;
        assert_eq!(
            got,
            ordered(&items, |i| i.id.clone(), desc),
            "items list_all"
        );
    }
    for group in GROUPS {
        let want = items.iter().filter(|i| i.group == *group).count() as i64;
        assert_eq!(
            repo.count_per_group(group).await.unwrap(),
            want,
            "count_per_group({group})"
        );
    }
    for owner in OWNERS {
        let want: i64 = items
            .iter()
            .filter(|i| i.owner == *owner)
            .map(|i| i.qty)
            .sum();
        assert_eq!(
            repo.sum_qty_per_owner(owner).await.unwrap(),
            want,
            "sum_qty_per_owner({owner})"
        );
    }
    assert_eq!(
        repo.count_all().await.unwrap(),
        items.len() as i64,
        "items count_all"
    );
}

async fn check_leases<S: Store>(r: &Repos<S>, m: &Model) {
    let repo = &r.leases;
    let leases: Vec<&Lease> = m.leases.values().map(|h| &h.lease).collect();
    for id in IDS {
        assert_eq!(
            repo.get(id).await.unwrap().as_ref(),
            m.lease(id),
            "lease {id}"
        );
    }
    for token in TOKENS {
        let want = m.token_holder(token, "");
        assert_eq!(
            repo.find_by_token(token).await.unwrap().as_ref(),
            want,
            "token {token}"
        );
    }
    for desc in [false, true] {
        for owner in OWNERS {
            let got = all_pages("leases list_by_owner", |c| {
                repo.list_by_owner(owner, page(c, desc))
            })
            .await;
            let of: Vec<&Lease> = leases
                .iter()
                .copied()
                .filter(|l| l.owner == *owner)
                .collect();
            let want = ordered(&of, |l| (l.rank, l.id.clone()), desc);
            assert_eq!(
                got, want,
                "leases list_by_owner({owner}), descending: {desc}"
            );
        }
        let got = all_pages("leases list_all", |c| repo.list_all(page(c, desc))).await;
        assert_eq!(
            got,
            ordered(&leases, |l| l.id.clone(), desc),
            "leases list_all"
        );
    }
    // Until the sweep, counters may still include expired leases.
    for owner in OWNERS {
        let want = m.lease_bounds(|l| (l.owner == *owner).then_some(1));
        within(
            repo.count_per_owner(owner).await.unwrap(),
            want,
            &format!("count_per_owner({owner})"),
        );
        let kept = m.issued.get(*owner).copied().unwrap_or(0);
        assert_eq!(
            repo.count_issued_per_owner(owner).await.unwrap(),
            kept,
            "count_issued_per_owner({owner}), kept when leases expire"
        );
    }
    let weight = m.lease_bounds(|l| Some(l.weight));
    within(repo.sum_weight().await.unwrap(), weight, "sum_weight");
    let all = m.lease_bounds(|_| Some(1));
    within(repo.count_all().await.unwrap(), all, "leases count_all");
}

/// `got` lies within the model's bounds (one value once nothing awaits the
/// sweep).
fn within(got: i64, (lo, hi): (i64, i64), what: &str) {
    assert!(
        (lo..=hi).contains(&got),
        "{what}: {got}, where the model says {lo}..={hi}"
    );
}

/// After a sequence: `verify` finds nothing out of step.
pub async fn verify<S: Store>(r: &Repos<S>) {
    let drift = r.items.verify(3).await.unwrap();
    assert!(drift.is_clean(), "items: {drift:?}");
    let drift = r.leases.verify(3).await.unwrap();
    assert!(drift.is_clean(), "leases: {drift:?}");
    let drift = r.entries.verify(3).await.unwrap();
    assert!(drift.is_clean(), "entries: {drift:?}");
}
