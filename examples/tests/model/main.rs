//! The run-time model agrees with generated code: for every schema in
//! `schemas/` and one that uses every type and construct
//! (`tests/model/every.yaml`), random records and random damage to them
//! read, key, derive and encode the same through the model as through the
//! generated types.

#[allow(dead_code, missing_docs)]
#[rustfmt::skip]
#[path = "every.rs"]
mod every;

use std::collections::BTreeMap;
use std::path::Path;

use kvmodel::{Date, Timestamp, Uuid};
use kvmodel_examples::{activity, forum, links, sessions, shop, social};
use kvmodel_runtime::__private::{Encoding, Entity, EntityModel, Facts, Model, entity, record};
use kvmodel_runtime::{Error, Result};
use proptest::prelude::*;
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The run-time model of a schema file.
fn load(path: &Path) -> Model {
    let schema = kvmodel_build::load_file(path).unwrap();
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    kvmodel_build::runtime_model::lower(&schema.model).unwrap()
}

fn schema(name: &str) -> Model {
    load(&root().join(format!("../schemas/{name}.yaml")))
}

fn every_model() -> Model {
    load(&root().join("tests/model/every.yaml"))
}

fn entity_model(m: &Model, name: &str) -> EntityModel {
    m.entity(name).unwrap().clone()
}

#[test]
fn the_test_schema_is_up_to_date() {
    let schema = kvmodel_build::load_file(&root().join("tests/model/every.yaml")).unwrap();
    let files = kvmodel_build::generate(&[schema]).unwrap();
    let committed = std::fs::read_to_string(root().join("tests/model/every.rs")).unwrap();
    assert!(
        committed == files[0].contents,
        "examples/tests/model/every.rs is out of date; run `kvmodel generate \
         examples/tests/model/every.yaml -o examples/tests/model/every.rs`"
    );
}

/// Every entity of every schema has a property below.
#[test]
fn every_entity_is_compared() {
    let covered = [
        "User",
        "Product",
        "Order",
        "Session",
        "RateWindow",
        "Invite",
        "Actor",
        "Event",
        "Reading",
        "Item",
        "Owner",
        "Author",
        "Post",
        "Like",
        "Tag",
        "Board",
        "Thread",
        "Reply",
        "Tenant",
        "ShortLink",
        "Click",
    ];
    let mut files: Vec<_> = std::fs::read_dir(root().join("../schemas"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.push(root().join("tests/model/every.yaml"));
    for file in files {
        for e in load(&file).entities {
            assert!(
                covered.contains(&e.name.as_str()),
                "{} of {} has no property in tests/model/main.rs",
                e.name,
                file.display()
            );
        }
    }
}

/// A record written by generated code reads, keys, derives and encodes
/// the same through the model, which keeps the same expiry and feed.
fn agree<E: Entity + std::fmt::Debug>(m: &EntityModel, v: &E) -> Result<(), TestCaseError> {
    prop_assert_eq!(m.feed, E::FEED.map(|f| f.retain));
    prop_assert_eq!(m.ttl, E::META.ttl);
    let key = v.record_key();
    let bytes = entity::encode(&key, v).unwrap();
    let rec = m
        .read(&key, &bytes)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(rec.version, E::VERSION);
    prop_assert_eq!(m.record_key(&rec.value).unwrap(), key.clone());
    prop_assert_eq!(m.facts(&rec.value).unwrap(), Facts::of(v));
    prop_assert_eq!(m.encode(&key, &rec.value).unwrap(), bytes);
    Ok(())
}

/// Which error a read failed with.
fn kind(e: &Error) -> &'static str {
    match e {
        Error::Decode { .. } => "decode",
        Error::FutureVersion { .. } => "future version",
        _ => "other",
    }
}

/// Stored bytes read the same through the model as through the generated
/// type: both fail alike, or both read the same record with the same
/// entries at its stored version, and encode it again alike.
fn agree_on_bytes<E: Entity + std::fmt::Debug>(
    m: &EntityModel,
    key: &str,
    bytes: &[u8],
) -> Result<(), TestCaseError> {
    let typed = entity::decode_at::<E>(key, bytes);
    let model = m.read(key, bytes);
    match (typed, model) {
        (Ok((version, value)), Ok(rec)) => {
            prop_assert_eq!(rec.version, version);
            let mut facts = m.facts(&rec.value).unwrap();
            facts.retain_since(version);
            prop_assert_eq!(facts, Facts::stored(&value, version));
            prop_assert_eq!(
                m.encode(key, &rec.value).unwrap(),
                entity::encode(key, &value).unwrap()
            );
        }
        (Err(t), Err(r)) => prop_assert_eq!(kind(&t), kind(&r), "{} / {}", t, r),
        (t, r) => prop_assert!(
            false,
            "generated code read {:?}, the model read {:?}",
            t.map(|(_, v)| v),
            r
        ),
    }
    Ok(())
}

/// One change to a stored payload.
#[derive(Debug, Clone)]
enum Damage {
    Remove(usize),
    Set(usize, Value),
    Rename(usize, usize),
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(1u64 << 40)),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(json!("")),
        Just(json!("active")),
        Just(json!("very_high")),
        Just(json!("2026-01-01T00:00:00Z")),
        Just(json!("2026-01-01")),
        Just(json!("67e55044-10b1-426f-9247-bb680e5fe0c8")),
        Just(json!([])),
        Just(json!([1, 2])),
        Just(json!({})),
        Just(json!({"a": 1})),
    ]
}

fn damage() -> impl Strategy<Value = Vec<Damage>> {
    let one = prop_oneof![
        (0..20usize).prop_map(Damage::Remove),
        (0..20usize, scalar()).prop_map(|(f, v)| Damage::Set(f, v)),
        (0..20usize, 0..20usize).prop_map(|(a, b)| Damage::Rename(a, b)),
    ];
    prop::collection::vec(one, 0..3)
}

/// Applies `damage` to a payload; field numbers index the entity's fields
/// and a few names old versions used.
fn apply(m: &EntityModel, mut payload: Value, damage: &[Damage]) -> Value {
    let mut names: Vec<String> = m.fields.iter().map(|f| f.name.clone()).collect();
    names.extend(["full_name", "old_code", "legacy", "zzz"].map(String::from));
    let name = |i: usize| names[i % names.len()].clone();
    let Some(obj) = payload.as_object_mut() else {
        return payload;
    };
    for d in damage {
        match d {
            Damage::Remove(f) => {
                obj.remove(&name(*f));
            }
            Damage::Set(f, v) => {
                obj.insert(name(*f), v.clone());
            }
            Damage::Rename(a, b) => {
                if let Some(v) = obj.remove(&name(*a)) {
                    obj.insert(name(*b), v);
                }
            }
        }
    }
    payload
}

/// A record of `v`, damaged, stored at `version`, read both ways.
fn agree_damaged<E: Entity + std::fmt::Debug>(
    m: &EntityModel,
    v: &E,
    version: u32,
    damage: &[Damage],
) -> Result<(), TestCaseError> {
    let key = v.record_key();
    let payload = apply(m, serde_json::to_value(v).unwrap(), damage);
    let Ok(bytes) = record::encode_with(&key, m.encoding, m.proto, version, &payload) else {
        // A protobuf record holds only what its fields' types can: a value
        // damaged into another type has no protobuf bytes.
        prop_assert_eq!(m.encoding, Encoding::Protobuf);
        return Ok(());
    };
    agree_on_bytes::<E>(m, &key, &bytes)?;
    if version == E::VERSION && damage.is_empty() {
        // Written by generated code at an older version: the same bytes a
        // record of that version has.
        let bytes = entity::encode(&key, v).unwrap();
        agree_on_bytes::<E>(m, &key, &bytes)?;
    }
    Ok(())
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9:%{}#é _-]{0,6}"
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    (Timestamp::MIN.as_unix_millis()..=Timestamp::MAX.as_unix_millis())
        .prop_map(|ms| Timestamp::from_unix_millis(ms).unwrap())
}

fn date() -> impl Strategy<Value = Date> {
    timestamp().prop_map(|t| t.date())
}

fn uuid() -> impl Strategy<Value = Uuid> {
    any::<[u8; 16]>().prop_map(Uuid::from_bytes)
}

fn user() -> impl Strategy<Value = shop::User> {
    let status = prop_oneof![
        Just(shop::UserStatus::Active),
        Just(shop::UserStatus::Inactive),
        Just(shop::UserStatus::Suspended),
    ];
    let address =
        prop::option::of(
            (text(), text(), text(), text()).prop_map(|(s, c, p, n)| shop::Address {
                street: s,
                city: c,
                postal_code: p,
                country: n,
            }),
        );
    (
        text(),
        text(),
        text(),
        status,
        prop::option::of(any::<u32>()),
        address,
        prop::collection::vec(text(), 0..3),
        timestamp(),
    )
        .prop_map(
            |(id, email, name, status, age, address, tags, created_at)| shop::User {
                id,
                email,
                name,
                status,
                age,
                address,
                tags,
                created_at,
            },
        )
}

fn product() -> impl Strategy<Value = shop::Product> {
    (text(), text(), text(), any::<i64>()).prop_map(|(sku, category, title, price_cents)| {
        shop::Product {
            sku,
            category,
            title,
            price_cents,
        }
    })
}

fn order() -> impl Strategy<Value = shop::Order> {
    (text(), text(), any::<i64>(), timestamp()).prop_map(
        |(id, user_id, total_cents, created_at)| shop::Order {
            id,
            user_id,
            total_cents,
            created_at,
        },
    )
}

fn session() -> impl Strategy<Value = sessions::Session> {
    let role = prop_oneof![Just(sessions::Role::Member), Just(sessions::Role::Admin)];
    (text(), text(), text(), role, timestamp()).prop_map(
        |(id, token, user_id, role, started_at)| sessions::Session {
            id,
            token,
            user_id,
            role,
            started_at,
        },
    )
}

fn invite() -> impl Strategy<Value = sessions::Invite> {
    (text(), text(), proptest::option::of(timestamp())).prop_map(|(code, email, expires_at)| {
        sessions::Invite {
            code,
            email,
            expires_at,
        }
    })
}

fn rate_window() -> impl Strategy<Value = sessions::RateWindow> {
    (text(), any::<i64>(), any::<u32>()).prop_map(|(client, window, hits)| sessions::RateWindow {
        client,
        window,
        hits,
    })
}

fn actor() -> impl Strategy<Value = activity::Actor> {
    (text(), text()).prop_map(|(id, name)| activity::Actor { id, name })
}

fn event() -> impl Strategy<Value = activity::Event> {
    let kind = prop_oneof![
        Just(activity::EventKind::Created),
        Just(activity::EventKind::Updated),
        Just(activity::EventKind::Deleted),
        Just(activity::EventKind::Commented),
    ];
    (
        uuid(),
        text(),
        text(),
        kind,
        timestamp(),
        prop::collection::btree_map(text(), text(), 0..3),
    )
        .prop_map(
            |(id, actor_id, subject, kind, at, attributes)| activity::Event {
                id,
                actor_id,
                subject,
                kind,
                at,
                attributes,
            },
        )
}

fn reading() -> impl Strategy<Value = activity::Reading> {
    let kind = prop_oneof![
        Just(None),
        Just(Some(activity::EventKind::Created)),
        Just(Some(activity::EventKind::Commented)),
    ];
    (
        text(),
        timestamp(),
        any::<f64>().prop_filter("JSON has no NaN or infinity", |x| x.is_finite()),
        kind,
        prop::collection::btree_map(text(), text(), 0..3),
    )
        .prop_map(|(sensor, at, value, kind, labels)| activity::Reading {
            sensor,
            at,
            value,
            kind,
            labels,
        })
}

fn item() -> impl Strategy<Value = every::Item> {
    let level = prop_oneof![
        Just(every::Level::Low),
        Just(every::Level::High),
        Just(every::Level::VeryHigh),
    ];
    let nested = prop::option::of(
        (any::<i64>(), text(), prop::option::of(timestamp()))
            .prop_map(|(a, b, when)| every::Inner { a, b, when }),
    );
    let finite = any::<f64>().prop_filter("finite", |f| f.is_finite());
    (
        (
            text(),
            any::<u64>(),
            text(),
            prop::collection::vec(any::<u8>(), 0..20),
        ),
        (finite, any::<bool>(), any::<i32>(), any::<u64>(), date()),
        (prop::option::of(timestamp()), uuid(), level, nested),
        prop::collection::vec(any::<i64>(), 0..3),
    )
        .prop_map(
            |(
                (tenant, id, code, blob),
                (ratio, flag, small, big, born),
                (at, uid, level, nested),
                numbers,
            )| every::Item {
                tenant,
                id,
                code,
                blob,
                ratio,
                flag,
                small,
                big,
                born,
                at,
                uid,
                level,
                nested,
                numbers,
            },
        )
}

fn owner() -> impl Strategy<Value = every::Owner> {
    (text(), timestamp()).prop_map(|(code, since)| every::Owner { code, since })
}

fn author() -> impl Strategy<Value = social::Author> {
    (text(), text()).prop_map(|(id, name)| social::Author { id, name })
}

/// A body on either side of the social schema's 1 KiB `compress`
/// threshold.
fn body() -> impl Strategy<Value = String> {
    (text(), 0..400usize).prop_map(|(t, n)| format!("{t}{}", "word ".repeat(n)))
}

fn post() -> impl Strategy<Value = social::Post> {
    (text(), text(), text(), body(), timestamp()).prop_map(
        |(id, author_id, title, body, created_at)| social::Post {
            id,
            author_id,
            title,
            body,
            created_at,
        },
    )
}

fn tag() -> impl Strategy<Value = social::Tag> {
    (text(), text()).prop_map(|(name, title)| social::Tag { name, title })
}

fn like() -> impl Strategy<Value = social::Like> {
    (text(), text(), timestamp()).prop_map(|(post_id, user_id, at)| social::Like {
        post_id,
        user_id,
        at,
    })
}

fn board() -> impl Strategy<Value = forum::Board> {
    (text(), text()).prop_map(|(id, title)| forum::Board { id, title })
}

fn thread() -> impl Strategy<Value = forum::Thread> {
    (text(), text(), text(), timestamp()).prop_map(|(id, board_id, title, created_at)| {
        forum::Thread {
            id,
            board_id,
            title,
            created_at,
        }
    })
}

fn reply() -> impl Strategy<Value = forum::Reply> {
    (text(), text(), text(), timestamp()).prop_map(|(id, thread_id, body, at)| forum::Reply {
        id,
        thread_id,
        body,
        at,
    })
}

fn tenant() -> impl Strategy<Value = links::Tenant> {
    (text(), text(), timestamp()).prop_map(|(id, name, created_at)| links::Tenant {
        id,
        name,
        created_at,
    })
}

fn short_link() -> impl Strategy<Value = links::ShortLink> {
    (
        text(),
        text(),
        text(),
        timestamp(),
        prop::option::of(timestamp()),
    )
        .prop_map(
            |(tenant_id, code, target, created_at, expires_at)| links::ShortLink {
                tenant_id,
                code,
                target,
                created_at,
                expires_at,
            },
        )
}

fn tenant_tag() -> impl Strategy<Value = links::Tag> {
    (text(), text()).prop_map(|(tenant_id, name)| links::Tag { tenant_id, name })
}

fn click() -> impl Strategy<Value = links::Click> {
    (
        text(),
        uuid(),
        text(),
        timestamp(),
        prop::option::of(text()),
    )
        .prop_map(|(tenant_id, id, code, at, referrer)| links::Click {
            tenant_id,
            id,
            code,
            at,
            referrer,
        })
}

macro_rules! compare {
    ($($test:ident: $schema:expr, $entity:literal, $strategy:expr, $ty:ty;)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(96))]
            #[test]
            fn $test(
                v in $strategy,
                version in 0..=(<$ty as kvmodel_runtime::__private::Versioned>::VERSION + 1),
                damage in damage(),
            ) {
                let m = entity_model(&$schema, $entity);
                agree(&m, &v)?;
                agree_damaged(&m, &v, version, &damage)?;
            }
        }
    )*};
}

compare! {
    shop_user: schema("shop"), "User", user(), shop::User;
    shop_product: schema("shop"), "Product", product(), shop::Product;
    shop_order: schema("shop"), "Order", order(), shop::Order;
    sessions_session: schema("sessions"), "Session", session(), sessions::Session;
    sessions_rate_window: schema("sessions"), "RateWindow", rate_window(), sessions::RateWindow;
    sessions_invite: schema("sessions"), "Invite", invite(), sessions::Invite;
    activity_actor: schema("activity"), "Actor", actor(), activity::Actor;
    activity_event: schema("activity"), "Event", event(), activity::Event;
    activity_reading: schema("activity"), "Reading", reading(), activity::Reading;
    every_item: every_model(), "Item", item(), every::Item;
    every_owner: every_model(), "Owner", owner(), every::Owner;
    social_author: schema("social"), "Author", author(), social::Author;
    social_post: schema("social"), "Post", post(), social::Post;
    social_like: schema("social"), "Like", like(), social::Like;
    social_tag: schema("social"), "Tag", tag(), social::Tag;
    forum_board: schema("forum"), "Board", board(), forum::Board;
    forum_thread: schema("forum"), "Thread", thread(), forum::Thread;
    forum_reply: schema("forum"), "Reply", reply(), forum::Reply;
    links_tenant: schema("links"), "Tenant", tenant(), links::Tenant;
    links_short_link: schema("links"), "ShortLink", short_link(), links::ShortLink;
    links_tag: schema("links"), "Tag", tenant_tag(), links::Tag;
    links_click: schema("links"), "Click", click(), links::Click;
}

/// Old records as old code wrote them: a version 1 user (before `status`
/// and `tags`, with `full_name`), and items at versions 1 and 2 in
/// MessagePack with their uuid as raw bytes.
#[test]
fn old_records_read_alike() {
    let shop = schema("shop");
    let users = entity_model(&shop, "User");
    let key = shop::UserKeys::record("u1");
    let v1 = json!({"id": "u1", "email": "A@x.io", "full_name": "Ada", "legacy_flag": true,
        "created_at": "2026-01-01T00:00:00Z"});
    let bytes = record::encode(&key, Encoding::Json, 1, &v1).unwrap();
    agree_on_bytes::<shop::User>(&users, &key, &bytes).unwrap();
    assert_eq!(users.read(&key, &bytes).unwrap().value["name"], "Ada");

    let every = every_model();
    let items = entity_model(&every, "Item");
    #[derive(serde::Serialize)]
    struct ItemV1 {
        tenant: String,
        id: u64,
        old_code: String,
        blob: Vec<u8>,
        ratio: f64,
        flag: bool,
        small: i32,
        big: u64,
        born: Date,
        at: Option<Timestamp>,
        uid: Uuid,
        legacy: bool,
    }
    let old = ItemV1 {
        tenant: "t".into(),
        id: 7,
        old_code: "C".into(),
        blob: vec![0, 1],
        ratio: 0.5,
        flag: true,
        small: -3,
        big: 9,
        born: "2026-02-03".parse().unwrap(),
        at: Some("2026-02-03T04:05:06Z".parse().unwrap()),
        uid: Uuid::from_bytes([7; 16]),
        legacy: true,
    };
    let key = every::ItemKeys::record("t", 7);
    // Version 2 renamed `old_code` to `code`.
    let mut v2 = serde_json::to_value(&old).unwrap();
    v2["code"] = v2["old_code"].take();
    let v2: BTreeMap<String, Value> = serde_json::from_value(v2).unwrap();
    let mut v2: BTreeMap<String, ItemField> = v2
        .into_iter()
        .map(|(k, v)| (k, ItemField::Json(v)))
        .collect();
    v2.remove("old_code");
    v2.insert("uid".into(), ItemField::Uuid(old.uid));
    let payloads = [
        record::encode(&key, Encoding::MsgPack, 1, &old).unwrap(),
        record::encode(&key, Encoding::MsgPack, 2, &v2).unwrap(),
    ];
    for bytes in payloads {
        let (_, typed) = entity::decode_at::<every::Item>(&key, &bytes).unwrap();
        assert_eq!(typed.code, "C");
        assert_eq!(typed.uid, Uuid::from_bytes([7; 16]));
        agree_on_bytes::<every::Item>(&items, &key, &bytes).unwrap();
    }
}

/// A field of a hand-written MessagePack record: a uuid as raw bytes,
/// anything else as its JSON value.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum ItemField {
    Uuid(Uuid),
    Json(Value),
}

/// Key builders of the model agree with the generated ones, for what
/// `kvmodel inspect` looks up.
#[test]
fn lookups_build_the_generated_keys() {
    let every = every_model();
    let items = entity_model(&every, "Item");
    let uid = Uuid::from_bytes([1; 16]);
    assert_eq!(
        items.key_of_parts(&[json!("a:b"), json!(5)]).unwrap(),
        every::ItemKeys::record("a:b", 5)
    );
    assert_eq!(
        items.claim_key("by_code", &[json!("MiXed")]).unwrap(),
        every::ItemKeys::by_code("MiXed")
    );
    assert_eq!(
        items
            .claim_key("by_uid", &[json!(uid.to_string()), json!("t")])
            .unwrap(),
        every::ItemKeys::by_uid(uid, "t")
    );
    assert_eq!(
        items
            .index_key("by_flag", &[json!(true), json!(-4)])
            .unwrap(),
        every::ItemKeys::by_flag(true, -4)
    );
    let day: Date = "2026-05-06".parse().unwrap();
    assert_eq!(
        items
            .counter_key(
                "per_level_day",
                &[json!("high"), json!("2026-05-06"), json!("2026-05-06")]
            )
            .unwrap(),
        every::ItemKeys::counter_per_level_day(every::Level::High, day, day)
    );
    assert_eq!(
        items
            .counter_key("per_month", &[json!("2026-05-06")])
            .unwrap(),
        every::ItemKeys::counter_per_month(day)
    );
    let orders = entity_model(&schema("shop"), "Order");
    assert_eq!(
        orders.relation_key("user", &json!("u%1")).unwrap(),
        shop::OrderKeys::relation_user("u%1")
    );
    let events = entity_model(&schema("activity"), "Event");
    let at: Timestamp = "2026-05-06T07:08:09Z".parse().unwrap();
    assert_eq!(
        events
            .counter_key("per_hour", &[json!(at.to_string())])
            .unwrap(),
        activity::EventKeys::counter_per_hour(at)
    );
}
