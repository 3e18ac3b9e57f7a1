//! A record's own expiry (`#[kv(expiry)]` on a timestamp field): the record,
//! its claim, collection members and counter amounts follow the time its
//! field names, as they follow an entity `ttl`; an update moves it; a record
//! without the field set follows the entity's `ttl`, or never expires.

use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity, PageRequest, RangeRequest, Store, Timestamp};
use kvmodel_runtime::__private::{ModelDef, Walker};
use serde::{Deserialize, Serialize};

/// A short link with its own expiry date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "short", key = "link:{id}")]
#[kv(index(name = "by_owner", fields(owner), order_by = created_at))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "per_owner", group_by(owner)))]
pub struct Link {
    pub id: String,
    #[kv(unique)]
    pub slug: String,
    pub owner: String,
    pub created_at: Timestamp,
    #[kv(expiry)]
    pub expires_at: Option<Timestamp>,
}

/// An invitation that expires after a day unless it names its own time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "short", key = "invite:{id}", ttl = "2s")]
#[kv(counter(name = "total"))]
pub struct Invite {
    pub id: String,
    #[kv(unique)]
    pub email: String,
    #[kv(expiry)]
    pub until: Option<Timestamp>,
}

/// The store's clock plus `ms`.
async fn at<S: Store>(store: &S, ms: u64) -> Timestamp {
    let now = store.now_ms().await.unwrap();
    Timestamp::from_unix_millis(i64::try_from(now + ms).unwrap()).unwrap()
}

fn link(id: &str, slug: &str, expires_at: Option<Timestamp>) -> Link {
    Link {
        id: id.into(),
        slug: slug.into(),
        owner: "ann".into(),
        created_at: Timestamp::from_unix_millis(1_700_000_000_000).unwrap(),
        expires_at,
    }
}

async fn collection_len<S: Store>(s: &S, key: &str) -> usize {
    s.range(key, RangeRequest::all(1_000))
        .await
        .unwrap()
        .members
        .len()
}

/// `Link` as the `kvmodel` command reads it: through the run-time model.
fn link_model() -> ModelDef {
    use kvmodel_runtime::__private::{
        CounterModel, EntityModel, FieldExpr, FieldModel, IndexModel, Scalar, Segment, TypeModel,
    };
    let mut expires_at = FieldModel::new("expires_at", TypeModel::Scalar(Scalar::Timestamp));
    expires_at.optional = true;
    let mut m = EntityModel::new(
        "Link",
        "short",
        vec![Segment::lit("link"), Segment::field("id")],
    )
    .with_field(FieldModel::new("id", TypeModel::Scalar(Scalar::String)))
    .with_field(FieldModel::new("slug", TypeModel::Scalar(Scalar::String)))
    .with_field(FieldModel::new("owner", TypeModel::Scalar(Scalar::String)))
    .with_field(FieldModel::new(
        "created_at",
        TypeModel::Scalar(Scalar::Timestamp),
    ))
    .with_field(expires_at);
    m.expiry = Some("expires_at".into());
    let field = |f: &str| FieldExpr::Field(f.into());
    m.indexes = vec![
        IndexModel {
            name: "by_slug".into(),
            fields: vec![field("slug")],
            unique: true,
            lowercase: false,
            order_by: None,
            keep: 0,
            since: 1,
        },
        IndexModel {
            name: "by_owner".into(),
            fields: vec![field("owner")],
            unique: false,
            lowercase: false,
            order_by: Some(field("created_at")),
            keep: 0,
            since: 1,
        },
    ];
    let counter = |name: &str, group_by: Vec<FieldExpr>| CounterModel {
        name: name.into(),
        group_by,
        sum: None,
        shards: 1,
        keep: kvmodel_runtime::__private::CounterKeep::Follows,
        since: 1,
    };
    m.counters = vec![
        counter("total", Vec::new()),
        counter("per_owner", vec![field("owner")]),
    ];
    ModelDef::new(m)
}

/// Verify through the generated code and through the run-time model; both
/// must agree.
async fn verify_both<S: Store>(repo: &LinkRepo<S>, store: &S) -> kvmodel::Drift {
    let typed = repo.verify(100).await.unwrap();
    let def = link_model();
    let model = Walker::new(&def, store).run(false, 100).await.unwrap();
    assert_eq!(typed.is_clean(), model.is_clean(), "{typed:?}\n{model:?}");
    assert_eq!(typed.expired, model.expired);
    assert_eq!(typed.records, model.records);
    typed
}

/// After a record's own expiry every listing, count and `verify` agrees;
/// records without the field set never expire.
pub async fn own_expiry_reaches_listings_counts_and_verify<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LinkRepo::new(store.clone());
    let soon = link("l1", "soon", Some(at(&store, 1_000).await));
    let later = link("l2", "later", Some(at(&store, 4_000).await));
    let never = link("l3", "never", None);
    for l in [&soon, &later, &never] {
        repo.create(l).await.unwrap();
    }
    assert_eq!(repo.count_total().await.unwrap(), 3);
    assert!(verify_both(&repo, &store).await.is_clean());

    h.pass(Duration::from_millis(1_500)).await;
    assert_eq!(repo.get("l1").await.unwrap(), None);
    assert_eq!(repo.find_by_slug("soon").await.unwrap(), None);
    assert_eq!(
        store.get(&LinkKeys::by_slug("soon")).await.unwrap(),
        None,
        "the claim expired with the record"
    );
    let listed = repo
        .list_by_owner("ann", PageRequest::new(10))
        .await
        .unwrap();
    let ids: Vec<_> = listed.items.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["l2", "l3"], "the listing skips the expired record");
    // Until the sweep, counters still include it and verify says why.
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(drift.expired, 1);
    let sweep = repo.sweep_expired(100).await.unwrap();
    assert_eq!((sweep.expired, sweep.more), (1, false));
    assert_eq!(repo.count_total().await.unwrap(), 2);
    assert_eq!(repo.count_per_owner("ann").await.unwrap(), 2);
    assert_eq!(collection_len(&store, &LinkKeys::by_owner("ann")).await, 2);
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean() && drift.expired == 0, "{drift:?}");

    h.pass(Duration::from_millis(3_000)).await;
    assert_eq!(repo.get("l2").await.unwrap(), None);
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert_eq!(repo.count_per_owner("ann").await.unwrap(), 1);
    assert_eq!(repo.get("l3").await.unwrap(), Some(never.clone()));
    assert_eq!(repo.find_by_slug("never").await.unwrap(), Some(never));
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean() && drift.records == 1, "{drift:?}");
    // The slug of an expired link is free again.
    repo.create(&link("l4", "soon", None)).await.unwrap();
    assert_eq!(repo.count_total().await.unwrap(), 2);
}

/// A slug taken again after its first link expired stays taken when the
/// sweep later clears the expired link: the sweep gives up only a claim
/// that still names the expired link, never the new one's.
pub async fn a_claim_taken_after_an_expiry_survives_the_sweep<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LinkRepo::new(store.clone());
    repo.create(&link("l1", "soon", Some(at(&store, 1_000).await)))
        .await
        .unwrap();
    h.pass(Duration::from_millis(1_500)).await;
    let again = link("l2", "soon", None);
    // (A write sweeps a step now and then, inline: the create may have
    // swept the expired link already.)
    repo.create(&again).await.unwrap();
    let sweep = repo.sweep_expired(100).await.unwrap();
    assert!(sweep.expired <= 1 && !sweep.more, "{sweep:?}");
    assert_eq!(
        store.get(&LinkKeys::by_slug("soon")).await.unwrap(),
        Some(LinkKeys::record("l2").into_bytes()),
        "the new link's claim"
    );
    assert_eq!(repo.find_by_slug("soon").await.unwrap(), Some(again));
    let taken = repo.create(&link("l3", "soon", None)).await;
    assert!(
        matches!(taken, Err(Error::UniqueViolation { .. })),
        "{taken:?}"
    );
    let drift = verify_both(&repo, &store).await;
    assert!(
        drift.is_clean() && drift.records == 1 && drift.expired == 0,
        "{drift:?}"
    );
}

/// An update moves the expiry: later, away (the record and its claim then
/// stay), and back.
pub async fn update_moves_the_expiry<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LinkRepo::new(store.clone());
    let mut l = link("l1", "moving", Some(at(&store, 1_000).await));
    repo.create(&l).await.unwrap();
    l.expires_at = Some(at(&store, 3_000).await);
    repo.update(&l).await.unwrap();
    h.pass(Duration::from_millis(1_500)).await;
    assert_eq!(repo.get("l1").await.unwrap(), Some(l.clone()));
    assert_eq!(repo.find_by_slug("moving").await.unwrap(), Some(l.clone()));
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 0);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert!(verify_both(&repo, &store).await.is_clean());

    // Cleared: the record, its claim and its entries no longer expire.
    let cleared = repo.modify("l1", |l| l.expires_at = None).await.unwrap();
    assert_eq!(cleared.expires_at, None);
    h.pass(Duration::from_millis(3_000)).await;
    assert_eq!(repo.get("l1").await.unwrap(), Some(cleared.clone()));
    assert_eq!(
        store.get(&LinkKeys::by_slug("moving")).await.unwrap(),
        Some(LinkKeys::record("l1").into_bytes()),
        "the claim lost its TTL with the record"
    );
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 0);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean() && drift.records == 1, "{drift:?}");

    // Set again: it expires then, and the sweep takes its entries back.
    let until = at(&store, 500).await;
    repo.modify("l1", |l| l.expires_at = Some(until))
        .await
        .unwrap();
    h.pass(Duration::from_millis(1_000)).await;
    assert_eq!(repo.get("l1").await.unwrap(), None);
    assert_eq!(repo.find_by_slug("moving").await.unwrap(), None);
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(repo.count_total().await.unwrap(), 0);
    assert_eq!(repo.count_per_owner("ann").await.unwrap(), 0);
    assert_eq!(collection_len(&store, &LinkKeys::by_owner("ann")).await, 0);
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean() && drift.records == 0, "{drift:?}");
}

/// A time that is not after the store's clock is refused, and nothing is
/// written.
pub async fn a_passed_expiry_is_refused<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LinkRepo::new(store.clone());
    let past = Timestamp::from_unix_millis(1_000).unwrap();
    let err = repo
        .create(&link("l1", "past", Some(past)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::ExpiryPassed { ref field, .. } if field == "expires_at"),
        "{err}"
    );
    assert_eq!(repo.get("l1").await.unwrap(), None);
    assert_eq!(store.get(&LinkKeys::by_slug("past")).await.unwrap(), None);
    assert_eq!(repo.count_total().await.unwrap(), 0);

    let l = link("l1", "past", None);
    repo.create(&l).await.unwrap();
    let err = repo
        .modify("l1", |l| l.expires_at = Some(past))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ExpiryPassed { .. }), "{err}");
    assert_eq!(repo.get("l1").await.unwrap(), Some(l));
    assert!(verify_both(&repo, &store).await.is_clean());
}

/// With an entity `ttl`, the field wins when set; a record without it
/// follows the `ttl`.
pub async fn the_field_wins_over_the_entity_ttl<H: Harness>(h: &H) {
    let store = h.store();
    let repo = InviteRepo::new(store.clone());
    let own = Invite {
        id: "i1".into(),
        email: "a@x.io".into(),
        until: Some(at(&store, 4_000).await),
    };
    let default = Invite {
        id: "i2".into(),
        email: "b@x.io".into(),
        until: None,
    };
    repo.create(&own).await.unwrap();
    repo.create(&default).await.unwrap();
    h.pass(Duration::from_millis(2_500)).await;
    assert_eq!(repo.get("i1").await.unwrap(), Some(own.clone()));
    assert_eq!(
        repo.get("i2").await.unwrap(),
        None,
        "the entity ttl applies"
    );
    assert_eq!(repo.find_by_email("b@x.io").await.unwrap(), None);
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    h.pass(Duration::from_millis(2_000)).await;
    assert_eq!(repo.get("i1").await.unwrap(), None);
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(repo.count_total().await.unwrap(), 0);
    assert!(repo.verify(100).await.unwrap().is_clean());
}

/// A transaction's writes take their expiry from the field, as single
/// writes do: one record created to expire, another moved to never expire.
pub async fn transactions_follow_the_field<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LinkRepo::new(store.clone());
    let kept = link("l1", "kept", Some(at(&store, 1_000).await));
    repo.create(&kept).await.unwrap();
    let soon = at(&store, 1_000).await;
    kvmodel::transaction(&store, |tx| {
        let repo = &repo;
        async move {
            repo.in_tx(&tx)
                .create(&link("l2", "gone", Some(soon)))
                .await?;
            repo.in_tx(&tx)
                .modify(&LinkKeys::record("l1"), |l| l.expires_at = None)
                .await?;
            Ok(())
        }
    })
    .await
    .unwrap();
    h.pass(Duration::from_millis(1_500)).await;
    assert_eq!(repo.get("l2").await.unwrap(), None);
    assert_eq!(repo.find_by_slug("gone").await.unwrap(), None);
    let kept = repo.get("l1").await.unwrap().expect("no longer expires");
    assert_eq!(repo.find_by_slug("kept").await.unwrap(), Some(kept));
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean() && drift.records == 1, "{drift:?}");
}

/// A key written again, without an expiry, after its record expired and
/// before any sweep: the create sweeps the expired write first, so the new
/// record takes over none of its entries or counts.
pub async fn a_key_written_again_without_expiry_takes_over_nothing<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LinkRepo::new(store.clone());
    repo.create(&link("l1", "first", Some(at(&store, 1_000).await)))
        .await
        .unwrap();
    h.pass(Duration::from_millis(1_500)).await;
    let again = link("l1", "second", None);
    repo.create(&again).await.unwrap();
    let receipt = <Link as kvmodel::__private::Entity>::receipt_key(&LinkKeys::record("l1"));
    assert_eq!(
        store.get(&receipt).await.unwrap(),
        None,
        "swept by the create"
    );
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert_eq!(repo.count_per_owner("ann").await.unwrap(), 1);
    assert_eq!(collection_len(&store, &LinkKeys::by_owner("ann")).await, 1);
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 0);
    let drift = verify_both(&repo, &store).await;
    assert!(
        drift.is_clean() && drift.records == 1 && drift.expired == 0,
        "{drift:?}"
    );
    assert_eq!(repo.find_by_slug("second").await.unwrap(), Some(again));
}

// The cases after `real_time:` wait for records to expire (real time on
// Redis and Redis Cluster): there they run at once, so the waits overlap.
kvmodel_runtime::on_every_backend!(
    a_passed_expiry_is_refused;
    real_time:
    a_key_written_again_without_expiry_takes_over_nothing,
    a_claim_taken_after_an_expiry_survives_the_sweep,
    transactions_follow_the_field,
    own_expiry_reaches_listings_counts_and_verify,
    update_moves_the_expiry,
    the_field_wins_over_the_entity_ttl,
);
