//! Links of records that expire (an expiry field or an entity `ttl`): once
//! a record expires no listing of either side shows it, `verify` counts its
//! links as awaiting the sweep, and the sweep removes its edges, its
//! registry, its collections and the far entries naming it, so every count
//! is exact. Redis and its cluster expire in real time: each scenario runs
//! in [`windows`], short ones first.

use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{Drift, KvEntity, PageRequest, Store, Timestamp};
use kvmodel_runtime::__private::{ModelDef, Typed, Walker};
use serde::{Deserialize, Serialize};

use crate::window::{Window, windows};

/// A short link with its own expiry date, tags, and links to other short
/// links (both ends expiring, at different times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lxp", key = "short:{id}")]
#[kv(link(name = "tags", to = Label, inverse = "shorts"))]
#[kv(link(name = "related", to = Short, inverse = "related_of"))]
pub struct Short {
    pub id: String,
    #[kv(expiry)]
    pub expires_at: Option<Timestamp>,
}

/// Never expires; its own link goes to expiring records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lxp", key = "label:{name}")]
#[kv(link(name = "featured", to = Short, inverse = "featured_in"))]
pub struct Label {
    pub name: String,
}

/// Expires by the entity's `ttl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lxp", key = "visit:{id}", ttl = "4s")]
#[kv(link(name = "labels", to = Label, inverse = "visits"))]
pub struct Visit {
    pub id: String,
}

/// The two expiries from a scenario's start at the shortest scale of its
/// [`windows`], and `Visit`'s `ttl`.
const SOON: u64 = 1_500;
const LATER: u64 = 4_000;
const VISIT_TTL: Duration = Duration::from_secs(4);

/// The namespace's keys, wiped between attempts of a scenario.
const PREFIX: &str = "lxp:";

fn short(id: &str, expires_at: Option<Timestamp>) -> Short {
    Short {
        id: id.into(),
        expires_at,
    }
}

struct Repos<S: Store> {
    shorts: ShortRepo<S>,
    labels: LabelRepo<S>,
    visits: VisitRepo<S>,
}

impl<S: Store> Repos<S> {
    async fn new(store: &S, labels: &[&str]) -> Self {
        let r = Repos {
            shorts: ShortRepo::new(store.clone()),
            labels: LabelRepo::new(store.clone()),
            visits: VisitRepo::new(store.clone()),
        };
        for name in labels {
            r.labels
                .create(&Label {
                    name: (*name).into(),
                })
                .await
                .unwrap();
        }
        r
    }
}

fn ids<T>(items: Vec<T>, id: impl Fn(T) -> String) -> Vec<String> {
    items.into_iter().map(id).collect()
}

fn page() -> PageRequest {
    PageRequest::new(100)
}

async fn tags<S: Store>(r: &Repos<S>, id: &str) -> Vec<String> {
    let items = r.shorts.list_tags(id, page()).await.unwrap().items;
    ids(items, |l| l.name)
}

async fn shorts<S: Store>(r: &Repos<S>, label: &str) -> Vec<String> {
    let items = r.labels.list_shorts(label, page()).await.unwrap().items;
    ids(items, |s| s.id)
}

async fn related<S: Store>(r: &Repos<S>, id: &str) -> (Vec<String>, Vec<String>) {
    let to = r.shorts.list_related(id, page()).await.unwrap().items;
    let of = r.shorts.list_related_of(id, page()).await.unwrap().items;
    (ids(to, |s| s.id), ids(of, |s| s.id))
}

async fn featured<S: Store>(r: &Repos<S>, label: &str) -> Vec<String> {
    let items = r.labels.list_featured(label, page()).await.unwrap().items;
    ids(items, |s| s.id)
}

async fn featured_in<S: Store>(r: &Repos<S>, id: &str) -> Vec<String> {
    let items = r.shorts.list_featured_in(id, page()).await.unwrap().items;
    ids(items, |l| l.name)
}

/// `Short` and `Label` as the `kvmodel` command reads them: through the
/// run-time model, which declares no links (a walk judges link keys from
/// what they hold) but does declare the expiry field.
fn models() -> (ModelDef, ModelDef) {
    use kvmodel_runtime::__private::{EntityModel, FieldModel, Scalar, Segment, TypeModel};
    let mut expires_at = FieldModel::new("expires_at", TypeModel::Scalar(Scalar::Timestamp));
    expires_at.optional = true;
    let mut short = EntityModel::new(
        "Short",
        "lxp",
        vec![Segment::lit("short"), Segment::field("id")],
    )
    .with_field(FieldModel::new("id", TypeModel::Scalar(Scalar::String)))
    .with_field(expires_at);
    short.expiry = Some("expires_at".into());
    let label = EntityModel::new(
        "Label",
        "lxp",
        vec![Segment::lit("label"), Segment::field("name")],
    )
    .with_field(FieldModel::new("name", TypeModel::Scalar(Scalar::String)));
    (ModelDef::new(short), ModelDef::new(label))
}

/// `verify` of `Short` and `Label`, through the generated code and through
/// the run-time model: both must agree, and be clean.
async fn verify_both<S: Store>(store: &S) -> (Drift, Drift) {
    let (short_model, label_model) = models();
    let typed = (
        Walker::new(&Typed::<Short>::new(), store)
            .run(false, 3)
            .await
            .unwrap(),
        Walker::new(&Typed::<Label>::new(), store)
            .run(false, 3)
            .await
            .unwrap(),
    );
    let model = (
        Walker::new(&short_model, store)
            .run(false, 3)
            .await
            .unwrap(),
        Walker::new(&label_model, store)
            .run(false, 3)
            .await
            .unwrap(),
    );
    assert_eq!(typed, model);
    assert!(typed.0.is_clean() && typed.1.is_clean(), "{typed:?}");
    typed
}

/// The derived keys of the test's namespace that name `id` (edges,
/// registries, collections, counts, receipts).
async fn derived_naming<S: Store>(store: &S, id: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.scan("lxp:", cursor, 100).await.unwrap();
        out.extend(
            page.keys
                .into_iter()
                .filter(|k| k.contains('#') && k.contains(id)),
        );
        match page.next {
            Some(n) => cursor = Some(n),
            None => return out,
        }
    }
}

/// After a record expires, no listing of either side shows it and
/// `verify` counts it as awaiting the sweep; the sweep removes its edges
/// and the far entries naming it, and every count is exact. Two expiring
/// ends expire apart: the pair is gone with the earlier.
pub async fn links_of_an_expired_record_are_listed_nowhere_and_swept<H: Harness>(h: &H) {
    windows(h, PREFIX, async |w| {
        links_of_an_expired_record_are_listed_nowhere_and_swept_in(h, w).await
    })
    .await;
}

async fn links_of_an_expired_record_are_listed_nowhere_and_swept_in<H: Harness>(
    h: &H,
    w: &Window<'_, H>,
) {
    let store = h.store();
    let r = Repos::new(&store, &["a", "b"]).await;
    let (soon, later) = (w.expiry(SOON), w.expiry(LATER));
    for s in [
        short("s1", soon.at),
        short("s2", later.at),
        short("s3", None),
    ] {
        r.shorts.create(&s).await.unwrap();
    }
    for (s, l) in [("s1", "a"), ("s1", "b"), ("s2", "a"), ("s3", "a")] {
        assert!(r.shorts.link_tags(s, l).await.unwrap());
    }
    assert!(r.shorts.link_related("s1", "s2").await.unwrap());
    assert!(r.shorts.link_related("s2", "s3").await.unwrap());
    assert!(r.labels.link_featured("a", "s1").await.unwrap());
    assert!(r.labels.link_featured("a", "s3").await.unwrap());
    assert_eq!(shorts(&r, "a").await, ["s1", "s2", "s3"]);
    assert_eq!(
        related(&r, "s2").await,
        (vec!["s3".into()], vec!["s1".into()])
    );
    verify_both(&store).await;

    w.pass(&[soon]).await;
    assert_eq!(r.shorts.get("s1").await.unwrap(), None);
    // Neither side lists it: not its own links, not the far entries.
    assert_eq!(tags(&r, "s1").await, Vec::<String>::new());
    assert_eq!(related(&r, "s1").await, (vec![], vec![]));
    assert_eq!(featured_in(&r, "s1").await, Vec::<String>::new());
    assert_eq!(shorts(&r, "a").await, ["s2", "s3"]);
    assert_eq!(shorts(&r, "b").await, Vec::<String>::new());
    assert_eq!(related(&r, "s2").await, (vec!["s3".into()], vec![]));
    assert_eq!(featured(&r, "a").await, ["s3"]);
    // Awaiting the sweep: not drift, on either side.
    let (s, _) = verify_both(&store).await;
    assert_eq!(s.expired, 1, "{s:?}");

    let sweep = r.shorts.sweep_expired(100).await.unwrap();
    assert_eq!((sweep.expired, sweep.more), (1, false));
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 2);
    assert_eq!(r.labels.count_shorts("b").await.unwrap(), 0);
    assert_eq!(r.labels.count_featured("a").await.unwrap(), 1);
    assert_eq!(r.shorts.count_related_of("s2").await.unwrap(), 0);
    assert_eq!(r.shorts.count_related("s2").await.unwrap(), 1);
    assert_eq!(r.shorts.count_tags("s1").await.unwrap(), 0);
    assert_eq!(derived_naming(&store, "s1").await, Vec::<String>::new());
    let (s, l) = verify_both(&store).await;
    assert_eq!((s.expired, s.records, l.records), (0, 2, 2));

    w.pass(&[later]).await;
    assert_eq!(shorts(&r, "a").await, ["s3"]);
    assert_eq!(related(&r, "s3").await, (vec![], vec![]));
    assert_eq!(r.shorts.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 1);
    assert_eq!(r.shorts.count_related_of("s3").await.unwrap(), 0);
    assert_eq!(derived_naming(&store, "s2").await, Vec::<String>::new());
    assert_eq!(tags(&r, "s3").await, ["a"]);
    assert_eq!(featured_in(&r, "s3").await, ["a"]);
    let (s, _) = verify_both(&store).await;
    assert_eq!((s.expired, s.records), (0, 1));
}

/// An update moves a record's expiry, and its links follow: later, earlier,
/// and away.
pub async fn moving_the_expiry_moves_the_links<H: Harness>(h: &H) {
    windows(h, PREFIX, async |w| {
        moving_the_expiry_moves_the_links_in(h, w).await
    })
    .await;
}

async fn moving_the_expiry_moves_the_links_in<H: Harness>(h: &H, w: &Window<'_, H>) {
    let store = h.store();
    let r = Repos::new(&store, &["a"]).await;
    let (soon, later) = (w.expiry(SOON), w.expiry(LATER));
    r.shorts.create(&short("s1", soon.at)).await.unwrap();
    r.shorts.create(&short("s2", later.at)).await.unwrap();
    r.shorts.create(&short("s3", soon.at)).await.unwrap();
    for s in ["s1", "s2", "s3"] {
        r.shorts.link_tags(s, "a").await.unwrap();
    }
    r.shorts
        .modify("s1", |s| s.expires_at = later.at)
        .await
        .unwrap();
    r.shorts
        .modify("s2", |s| s.expires_at = soon.at)
        .await
        .unwrap();
    r.shorts
        .modify("s3", |s| s.expires_at = None)
        .await
        .unwrap();

    w.pass(&[soon]).await;
    assert_eq!(shorts(&r, "a").await, ["s1", "s3"]);
    assert_eq!(tags(&r, "s1").await, ["a"]);
    assert_eq!(tags(&r, "s2").await, Vec::<String>::new());
    assert_eq!(r.shorts.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 2);
    verify_both(&store).await;

    w.pass(&[later]).await;
    assert_eq!(shorts(&r, "a").await, ["s3"]);
    assert_eq!(r.shorts.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 1);
    assert_eq!(r.shorts.count_tags("s3").await.unwrap(), 1);
    let (s, _) = verify_both(&store).await;
    assert_eq!(s.records, 1);
}

/// Unlink and delete of expiring records, a `ttl` entity's links, and a key
/// written again after its record expired: the old links do not come
/// back, and the create sweeps them.
pub async fn unlink_delete_ttl_and_a_key_written_again<H: Harness>(h: &H) {
    windows(h, PREFIX, async |w| {
        unlink_delete_ttl_and_a_key_written_again_in(h, w).await
    })
    .await;
}

async fn unlink_delete_ttl_and_a_key_written_again_in<H: Harness>(h: &H, w: &Window<'_, H>) {
    let store = h.store();
    let r = Repos::new(&store, &["a"]).await;
    let soon = w.expiry(SOON);
    for id in ["s1", "s2", "s3"] {
        r.shorts.create(&short(id, soon.at)).await.unwrap();
        r.shorts.link_tags(id, "a").await.unwrap();
    }
    let (created, visit) = w
        .expiring(VISIT_TTL, r.visits.create(&Visit { id: "v1".into() }))
        .await;
    created.unwrap();
    assert!(r.visits.link_labels("v1", "a").await.unwrap());
    assert!(r.shorts.unlink_tags("s1", "a").await.unwrap());
    r.shorts.delete("s2").await.unwrap();
    assert_eq!(shorts(&r, "a").await, ["s3"]);
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 1);
    assert_eq!(r.labels.count_visits("a").await.unwrap(), 1);

    w.pass(&[soon, visit]).await;
    assert_eq!(shorts(&r, "a").await, Vec::<String>::new());
    let visits = r.labels.list_visits("a", page()).await.unwrap().items;
    assert!(visits.is_empty(), "{visits:?}");
    // Written again before any sweep: a new record, without the old links.
    r.shorts.create(&short("s3", None)).await.unwrap();
    assert_eq!(tags(&r, "s3").await, Vec::<String>::new());
    assert_eq!(r.shorts.count_tags("s3").await.unwrap(), 0);
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 0);
    assert_eq!(r.visits.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(r.labels.count_visits("a").await.unwrap(), 0);
    // `s1` (unlinked, then expired): swept now, unless the create's own
    // sweep step got to it first.
    assert!(!r.shorts.sweep_expired(100).await.unwrap().more);
    assert_eq!(derived_naming(&store, "s1").await, Vec::<String>::new());
    assert!(r.shorts.link_tags("s3", "a").await.unwrap());
    assert_eq!(shorts(&r, "a").await, ["s3"]);
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 1);
    assert!(r.visits.verify(3).await.unwrap().is_clean());
    let (s, l) = verify_both(&store).await;
    assert_eq!((s.records, l.records), (1, 1));
}

/// `reconcile` through the run-time model (what `kvmodel reconcile` runs)
/// sweeps expired records with their links, and leaves what the generated
/// code's `verify` finds clean.
pub async fn the_model_reconcile_sweeps_the_links_of_expired_records<H: Harness>(h: &H) {
    windows(h, PREFIX, async |w| {
        the_model_reconcile_sweeps_the_links_of_expired_records_in(h, w).await
    })
    .await;
}

async fn the_model_reconcile_sweeps_the_links_of_expired_records_in<H: Harness>(
    h: &H,
    w: &Window<'_, H>,
) {
    let store = h.store();
    let r = Repos::new(&store, &["a"]).await;
    let soon = w.expiry(SOON);
    r.shorts.create(&short("s1", soon.at)).await.unwrap();
    r.shorts.create(&short("s2", None)).await.unwrap();
    r.shorts.link_tags("s1", "a").await.unwrap();
    r.shorts.link_related("s2", "s1").await.unwrap();
    r.labels.link_featured("a", "s1").await.unwrap();
    w.pass(&[soon]).await;
    let (short_model, label_model) = models();
    let drift = Walker::new(&short_model, &store)
        .run(true, 3)
        .await
        .unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    Walker::new(&label_model, &store)
        .run(true, 3)
        .await
        .unwrap();
    assert_eq!(derived_naming(&store, "s1").await, Vec::<String>::new());
    assert_eq!(r.labels.count_shorts("a").await.unwrap(), 0);
    assert_eq!(r.labels.count_featured("a").await.unwrap(), 0);
    assert_eq!(r.shorts.count_related("s2").await.unwrap(), 0);
    assert!(r.shorts.verify(3).await.unwrap().is_clean());
    assert!(r.labels.verify(3).await.unwrap().is_clean());
    let (s, _) = verify_both(&store).await;
    assert_eq!((s.records, s.expired), (1, 0));
}
