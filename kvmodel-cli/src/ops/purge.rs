//! `kvmodel purge`: removes records that cannot be read, with the entries
//! found to point to them, through the code behind the repository's
//! `purge` (`kvmodel_runtime::__private::orphans`). A record that reads is
//! refused: removing it is a `delete`, which the program does with its
//! relations' `on_delete` rules.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use kvmodel_runtime::__private::{
    EntityDef, EntityModel, MAX_ATTEMPTS, Model, ModelDef, OnDelete, hex,
    orphans::{self, Found, Purge},
    parse_arg,
};
use kvmodel_runtime::{AnyStore, Error, Store};

use super::inspect::record_keys;
use super::{Code, Context, Fail, Format, print, store_error};

/// `kvmodel purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// The schema files the store's data follows: schema files (YAML) and
    /// Rust source files (`.rs`) of `#[derive(KvEntity)]` structs, read as
    /// one model (repeat `--schema` for more).
    #[arg(long, value_name = "SCHEMA", required = true)]
    pub schema: Vec<PathBuf>,
    /// The store: `redb:PATH`, `redis://HOST:PORT`, `redis+cluster://HOST:PORT,…`
    /// (`rediss://`, `rediss+cluster://` over TLS).
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// The entity (its type name in the schema).
    pub entity: String,
    /// The key parts of the records to purge, as `inspect` takes them: one
    /// per placeholder of the key template, in order; several records in
    /// turn.
    #[arg(required = true, value_name = "KEY")]
    pub values: Vec<String>,
    /// Report what would be removed and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The report's format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// What became of one record key.
#[derive(Debug)]
pub enum Outcome {
    /// Removed (with `--dry-run`: would be).
    Purged(Box<Purge>),
    /// No record there, nor an expired write awaiting the sweep.
    Nothing,
    /// Left alone: the record reads (at `version`), or is newer than the
    /// schema (`newer`), so the schema cannot tell all its entries.
    Refused {
        /// The version it is stored at.
        version: u32,
        /// Whether that version is newer than the schema's.
        newer: bool,
    },
    /// Changed by another writer at every attempt.
    KeptChanging,
}

/// Records of another entity that a relation lists under a purged record
/// (its children): a purge leaves them, whatever the relation's
/// `on_delete` says.
#[derive(Debug)]
pub struct Left {
    /// The children's entity.
    pub entity: String,
    /// The relation.
    pub relation: String,
    /// What the program's delete of the parent does to them.
    pub on_delete: OnDelete,
    /// The relation's collection of the purged record's children.
    pub collection: String,
    /// How many it lists.
    pub records: u64,
}

/// Every record key given, with what became of it.
pub struct Report {
    /// The entity.
    pub entity: String,
    /// Its version in the schema.
    pub version: u32,
    /// Whether the entity declares counters.
    pub counted: bool,
    /// Its discovery set, which lists every record, on a store that keeps
    /// one.
    pub listing: Option<String>,
    /// Nothing was written.
    pub dry_run: bool,
    /// Per key, in the order given.
    pub outcomes: Vec<(String, Outcome)>,
    /// Per purged record key, the children its relations list.
    pub left: BTreeMap<String, Vec<Left>>,
}

impl Report {
    fn refused(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Refused { .. }))
    }

    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.outcomes.iter().filter(|(_, o)| f(o)).count()
    }

    /// The exit code: 0 when every record given was purged or was not
    /// there, 3 when one was refused, 1 when one kept changing.
    pub fn code(&self) -> Code {
        if self.refused() > 0 {
            Code::Refused
        } else if self.count(|o| matches!(o, Outcome::KeptChanging)) > 0 {
            Code::Problems
        } else {
            Code::Success
        }
    }
}

/// Purges the records given; exit 0, 1 or 3 (see [`Report::code`]).
pub async fn purge(args: PurgeArgs) -> Result<Code, Fail> {
    let cx = Context::open(&args.schema, &args.store).await?;
    let entity = cx.entity(&args.entity)?;
    let report = purge_keys(&cx.store, &cx.model, &entity, &args.values, args.dry_run).await?;
    match args.format {
        Format::Text => print(&text(&report))?,
        Format::Json => print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json(&report)).unwrap_or_default()
        ))?,
    }
    Ok(report.code())
}

/// Purges the records of `entity` (of `model`) whose key parts are
/// `values`. Judges every key first: when any holds a record that reads (or
/// one newer than the schema), nothing is purged. Then purges each (with
/// `dry_run`, plans only), planning again when a writer changed a record
/// between the plan and its commit, and counts the children each purged
/// record's relations list.
pub async fn purge_keys(
    store: &AnyStore,
    model: &Model,
    entity: &EntityModel,
    values: &[String],
    dry_run: bool,
) -> Result<Report, Fail> {
    let keys = record_keys(entity, values)?;
    let def = ModelDef::new(entity.clone());
    let mut report = judge_and_purge(store, &def, &keys, dry_run)
        .await
        .map_err(store_error)?;
    let parts = values.len() / keys.len().max(1);
    for ((key, outcome), id) in report.outcomes.iter().zip(values.chunks(parts)) {
        if let (Outcome::Purged(_), [id]) = (outcome, id) {
            let left = children(store, model, entity, id).await?;
            if !left.is_empty() {
                report.left.insert(key.clone(), left);
            }
        }
    }
    Ok(report)
}

/// The children that the relations of `model` list under the record of
/// `parent` whose id is `id`.
async fn children(
    store: &AnyStore,
    model: &Model,
    parent: &EntityModel,
    id: &str,
) -> Result<Vec<Left>, Fail> {
    let mut left = Vec::new();
    for child in &model.entities {
        for r in child
            .relations
            .iter()
            .filter(|r| r.belongs_to == parent.name)
        {
            // The parent's id as the child's field holds it (a schema
            // whose types disagree names no collection to count).
            let Some(field) = child.field(&r.by) else {
                continue;
            };
            let Ok(value) = parse_arg(&field.ty, id) else {
                continue;
            };
            let Ok(collection) = child.relation_key(&r.name, &value) else {
                continue;
            };
            let records = store
                .collection_len(&collection)
                .await
                .map_err(store_error)?;
            if records > 0 {
                left.push(Left {
                    entity: child.name.clone(),
                    relation: r.name.clone(),
                    on_delete: r.on_delete,
                    collection,
                    records,
                });
            }
        }
    }
    Ok(left)
}

/// Judges every key, then purges each unless one was refused or `dry_run`.
async fn judge_and_purge(
    store: &AnyStore,
    def: &ModelDef,
    keys: &[String],
    dry_run: bool,
) -> kvmodel_runtime::Result<Report> {
    let mut outcomes = Vec::new();
    for key in keys {
        let found = orphans::plan(def, store, key).await?;
        outcomes.push((key.clone(), judge(found)));
    }
    let refused = outcomes
        .iter()
        .any(|(_, o)| matches!(o, Outcome::Refused { .. }));
    if !dry_run && !refused {
        for (key, outcome) in &mut outcomes {
            if matches!(outcome, Outcome::Purged(_)) {
                *outcome = apply(
                    store,
                    def,
                    key,
                    std::mem::replace(outcome, Outcome::Nothing),
                )
                .await?;
            }
        }
    }
    Ok(Report {
        entity: def.name().to_owned(),
        version: def.version(),
        counted: !def.model().counters.is_empty(),
        listing: def.records(store).is_set().then(|| def.space().all_key()),
        dry_run: dry_run || refused,
        outcomes,
        left: BTreeMap::new(),
    })
}

/// What a plan means for `kvmodel purge`.
fn judge(found: Found) -> Outcome {
    match found {
        Found::Nothing => Outcome::Nothing,
        Found::Readable { version } => Outcome::Refused {
            version,
            newer: false,
        },
        Found::Unreadable(p) => match p.newer() {
            Some(version) => Outcome::Refused {
                version,
                newer: true,
            },
            None => Outcome::Purged(p),
        },
    }
}

/// Commits the planned purge `outcome` of `key`, planning again while
/// another writer changes the record first.
async fn apply(
    store: &AnyStore,
    def: &ModelDef,
    key: &str,
    mut outcome: Outcome,
) -> kvmodel_runtime::Result<Outcome> {
    for _ in 0..MAX_ATTEMPTS {
        let Outcome::Purged(p) = &outcome else {
            return Ok(outcome);
        };
        if p.apply(store).await? {
            return Ok(outcome);
        }
        // A writer changed the record, its receipt or a claim (or a sweep
        // took the expired write): judge what is there now.
        outcome = judge(orphans::plan(def, store, key).await?);
    }
    Ok(Outcome::KeptChanging)
}

/// The report as lines: one per record key, the entries each purge
/// removed under it, and a summary.
pub fn text(r: &Report) -> String {
    let (verb, remove) = if r.dry_run {
        ("would purge", "would remove")
    } else {
        ("purged", "removed")
    };
    let mut out = String::new();
    for (key, outcome) in &r.outcomes {
        match outcome {
            Outcome::Purged(p) => {
                let why = match &p.error {
                    Some(e) => e.to_string(),
                    None => "no record is left, only its expired write awaiting the sweep".into(),
                };
                out.push_str(&format!("{verb} {key} ({why})\n"));
                for line in removed(p, r.listing.as_deref()) {
                    out.push_str(&format!("  {remove} {line}\n"));
                }
                for l in r.left.get(key).into_iter().flatten() {
                    out.push_str(&format!("  {}\n", left_line(l, r.dry_run)));
                }
                if !p.counters_known && r.counted {
                    out.push_str(&format!(
                        "  what it added to counters cannot be known without its receipt: run \
                         `kvmodel reconcile --entity {}` to bring them back in step\n",
                        r.entity
                    ));
                }
            }
            Outcome::Nothing => out.push_str(&format!("nothing to purge at {key}: no record\n")),
            Outcome::Refused {
                version,
                newer: false,
            } => out.push_str(&format!(
                "refused {key}: it reads (version {version}); purge removes only records that \
                 cannot be read: delete it through the program, whose `delete` keeps its \
                 relations' on_delete rules\n"
            )),
            Outcome::Refused {
                version,
                newer: true,
            } => out.push_str(&format!(
                "refused {key}: it is at version {version}, newer than this schema's {} \
                 (version {}), which cannot tell all its entries; purge it with the schema \
                 that wrote it\n",
                r.entity, r.version
            )),
            Outcome::KeptChanging => out.push_str(&format!(
                "{key} kept changing ({MAX_ATTEMPTS} attempts, another writer got there first); \
                 run purge again\n"
            )),
        }
    }
    let purged = r.count(|o| matches!(o, Outcome::Purged(_)));
    let mut summary = format!(
        "purge: {purged} {}, {} not found",
        if r.dry_run {
            "would be purged"
        } else {
            "purged"
        },
        r.count(|o| matches!(o, Outcome::Nothing))
    );
    if r.refused() > 0 {
        summary.push_str(&format!(", {} refused", r.refused()));
    }
    let changing = r.count(|o| matches!(o, Outcome::KeptChanging));
    if changing > 0 {
        summary.push_str(&format!(", {changing} kept changing"));
    }
    if r.dry_run {
        summary.push_str("; nothing was written");
    }
    out.push_str(&summary);
    out.push('\n');
    out
}

/// The children a purge leaves, in words.
fn left_line(l: &Left, dry_run: bool) -> String {
    let verb = if dry_run { "would leave" } else { "left" };
    let action = match l.on_delete {
        OnDelete::Keep => "on_delete: keep, so they stay".to_owned(),
        OnDelete::Restrict => {
            "on_delete: restrict, so the program's delete would refuse: delete or purge them"
                .to_owned()
        }
        OnDelete::Cascade => {
            "on_delete: cascade, so the program's delete would delete them: delete or purge them"
                .to_owned()
        }
    };
    format!(
        "{verb} {} record(s) of {} in {} (relation `{}`, {action})",
        l.records, l.entity, l.collection, l.relation
    )
}

/// What a purge removes, one line each.
fn removed(p: &Purge, listing: Option<&str>) -> Vec<String> {
    let mut lines = Vec::new();
    match (p.record, listing) {
        (true, Some(listing)) => {
            lines.push(format!("record {} and its member of {listing}", p.key));
        }
        (true, None) => lines.push(format!("record {}", p.key)),
        (false, _) => {}
    }
    if p.receipt {
        lines.push("its expiry receipt and ledger entry".to_owned());
    }
    for c in &p.removed.claims {
        lines.push(format!("claim {}", c.key));
    }
    for m in &p.removed.members {
        lines.push(format!("member of {}", m.collection));
    }
    for c in &p.removed.counters {
        lines.push(format!("{} from counter {}", c.delta, c.key));
    }
    lines
}

/// The report as one JSON document.
pub fn json(r: &Report) -> Value {
    let records: Vec<Value> = r
        .outcomes
        .iter()
        .map(|(key, outcome)| match outcome {
            Outcome::Purged(p) => json!({
                "key": key,
                "outcome": if r.dry_run { "would_purge" } else { "purged" },
                "error": p.error.as_ref().map(Error::to_string),
                "record": p.record,
                "receipt": p.receipt,
                "claims": p.removed.claims.iter().map(|c| &c.key).collect::<Vec<_>>(),
                "members": p.removed.members.iter().map(|m| json!({
                    "collection": m.collection,
                    "sort": hex::encode(&m.sort),
                })).collect::<Vec<_>>(),
                "counters": p.removed.counters.iter().map(|c| json!({
                    "key": c.key,
                    "amount": i64::try_from(c.delta).map_or_else(|_| json!(c.delta.to_string()), |d| json!(d)),
                })).collect::<Vec<_>>(),
                "counters_known": p.counters_known || !r.counted,
                "children": r.left.get(key).into_iter().flatten().map(|l| json!({
                    "entity": l.entity,
                    "relation": l.relation,
                    "on_delete": l.on_delete.as_str(),
                    "collection": l.collection,
                    "records": l.records,
                })).collect::<Vec<_>>(),
            }),
            Outcome::Nothing => json!({ "key": key, "outcome": "not_found" }),
            Outcome::Refused { version, newer } => json!({
                "key": key,
                "outcome": "refused",
                "version": version,
                "newer": newer,
            }),
            Outcome::KeptChanging => json!({ "key": key, "outcome": "kept_changing" }),
        })
        .collect();
    json!({
        "command": "purge",
        "entity": r.entity,
        "dry_run": r.dry_run,
        "records": records,
        "purged": r.count(|o| matches!(o, Outcome::Purged(_))),
        "not_found": r.count(|o| matches!(o, Outcome::Nothing)),
        "refused": r.refused(),
    })
}

/// On an in-memory store (which the command refuses, since it would see an
/// empty one): the command's own code over stores the repositories wrote.
#[cfg(test)]
mod tests {
    use kvmodel::{Batch, Store};
    use kvmodel_examples::shop::{Order, OrderRepo, User, UserKeys, UserRepo, UserStatus};
    use kvmodel_runtime::__private::Walker;

    use super::*;
    use crate::ops::testing::{def, model};

    use crate::ops::visit::{Visit, VisitKeys, VisitRepo, visit};

    fn user(i: usize) -> User {
        User {
            id: format!("u{i}"),
            email: format!("U{i}@Example.com"),
            name: format!("User {i}"),
            status: UserStatus::Active,
            age: None,
            address: None,
            tags: vec![],
            created_at: "2026-03-01T10:00:00Z".parse().unwrap(),
        }
    }

    async fn put(store: &AnyStore, key: &str, bytes: &[u8]) {
        let mut b = Batch::new();
        b.put(key, bytes.to_vec(), None);
        assert!(store.commit(b).await.unwrap().is_applied());
    }

    /// Four users, `u1` damaged behind the store's back.
    async fn users() -> AnyStore {
        let store = AnyStore::open("memory:").await.unwrap();
        let repo = UserRepo::new(store.clone());
        for i in 0..4 {
            repo.create(&user(i)).await.unwrap();
        }
        put(&store, &UserKeys::record("u1"), b"\x00not a record").await;
        store
    }

    const SHOP: &str = "schemas/shop.yaml";
    const VISITS: &str = "kvmodel-cli/tests/ops/visits.yaml";

    /// `purge` of the records of `entity` (in the schema at `path`) whose
    /// key parts are `values`.
    async fn run(
        store: &AnyStore,
        path: &str,
        entity: &str,
        values: &[&str],
        dry_run: bool,
    ) -> Report {
        let model = model(path);
        let entity = model.entity(entity).unwrap().clone();
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        purge_keys(store, &model, &entity, &values, dry_run)
            .await
            .unwrap()
    }

    fn purged(r: &Report, i: usize) -> &Purge {
        match &r.outcomes[i].1 {
            Outcome::Purged(p) => p,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn an_unreadable_record_goes_with_its_claim_and_members() {
        let store = users().await;
        OrderRepo::new(store.clone())
            .create(&Order {
                id: "o1".into(),
                user_id: "u1".into(),
                total_cents: 100,
                created_at: "2026-03-02T10:00:00Z".parse().unwrap(),
            })
            .await
            .unwrap();
        let def = def(SHOP, "User");
        let key = UserKeys::record("u1");
        let claim = UserKeys::by_email("u1@example.com");

        let r = run(&store, SHOP, "User", &["u1"], true).await;
        assert_eq!(r.code(), Code::Success);
        let p = purged(&r, 0);
        assert!(p.record && !p.counters_known);
        let claims: Vec<&str> = p.removed.claims.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(claims, [claim.as_str()]);
        let text = super::text(&r);
        assert!(
            text.starts_with(&format!("would purge {key} (the record at `{key}`")),
            "{text}"
        );
        for line in [
            // The test store ranges over its keys: no discovery set.
            format!("  would remove record {key}"),
            format!("  would remove claim {claim}"),
            "  would leave 1 record(s) of Order in shop:order#rel:user:u1 (relation `user`, \
             on_delete: keep, so they stay)"
                .to_owned(),
            "  what it added to counters cannot be known without its receipt: run \
             `kvmodel reconcile --entity User` to bring them back in step"
                .to_owned(),
            "purge: 1 would be purged, 0 not found; nothing was written".to_owned(),
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(store.get(&key).await.unwrap().is_some(), "a dry run");
        assert!(store.get(&claim).await.unwrap().is_some(), "a dry run");

        let r = run(&store, SHOP, "User", &["u1", "u9"], false).await;
        assert_eq!(r.code(), Code::Success);
        assert!(matches!(r.outcomes[1].1, Outcome::Nothing));
        let text = super::text(&r);
        assert!(text.starts_with(&format!("purged {key} (")), "{text}");
        assert!(
            text.ends_with(
                "nothing to purge at shop:user:u9: no record\npurge: 1 purged, 1 not found\n"
            ),
            "{text}"
        );
        assert_eq!(store.get(&key).await.unwrap(), None);
        assert_eq!(store.get(&claim).await.unwrap(), None);
        assert_eq!(def.records(&store).count(&store).await.unwrap(), 3);

        // What it added to the counters is all that is left, and reconcile
        // repairs it.
        let drift = Walker::new(&def, &store).run(false, 100).await.unwrap();
        assert!(drift.undecodable.is_empty(), "{drift:?}");
        assert!(drift.missing_claims.is_empty() && drift.orphan_claims.is_empty());
        assert_eq!(drift.counters.len(), 2, "{drift:?}");
        Walker::new(&def, &store).run(true, 100).await.unwrap();
        assert!(
            Walker::new(&def, &store)
                .run(false, 100)
                .await
                .unwrap()
                .is_clean()
        );
        let repo = UserRepo::new(store.clone());
        assert_eq!(repo.count_by_status(UserStatus::Active).await.unwrap(), 3);
    }

    #[tokio::test]
    async fn a_record_that_reads_or_is_newer_is_refused_and_nothing_goes() {
        let store = users().await;
        put(&store, &UserKeys::record("u3"), br#"{"v":3,"d":{}}"#).await;
        let keys = [
            UserKeys::record("u1"),
            UserKeys::record("u2"),
            UserKeys::record("u3"),
        ];
        let r = run(&store, SHOP, "User", &["u1", "u2", "u3"], false).await;
        assert_eq!(r.code(), Code::Refused);
        assert!(matches!(
            r.outcomes[1].1,
            Outcome::Refused {
                version: 2,
                newer: false
            }
        ));
        assert!(matches!(
            r.outcomes[2].1,
            Outcome::Refused {
                version: 3,
                newer: true
            }
        ));
        let text = super::text(&r);
        for line in [
            "would purge shop:user:u1 (",
            "refused shop:user:u2: it reads (version 2); purge removes only records that cannot \
             be read: delete it through the program, whose `delete` keeps its relations' \
             on_delete rules",
            "refused shop:user:u3: it is at version 3, newer than this schema's User (version 2), \
             which cannot tell all its entries; purge it with the schema that wrote it",
            "purge: 1 would be purged, 0 not found, 2 refused; nothing was written",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(line)),
                "no {line:?} in\n{text}"
            );
        }
        for key in &keys {
            assert!(store.get(key).await.unwrap().is_some(), "{key} was kept");
        }
        assert!(
            store
                .get(&UserKeys::by_email("u1@example.com"))
                .await
                .unwrap()
                .is_some()
        );
    }

    #[tokio::test]
    async fn an_expiring_record_gives_back_exactly_what_its_receipt_lists() {
        let store = AnyStore::open("memory:").await.unwrap();
        let repo = VisitRepo::new(store.clone());
        for (id, seconds) in [("a", 10), ("b", 20), ("c", 30)] {
            repo.create(&visit(id, "home", seconds)).await.unwrap();
        }
        let key = VisitKeys::record("b");
        put(&store, &key, b"\x00not a record").await;
        let def = def(VISITS, "Visit");
        let r = run(&store, VISITS, "Visit", &["b"], false).await;
        assert_eq!(r.code(), Code::Success);
        let p = purged(&r, 0);
        assert!(p.record && p.receipt && p.counters_known);
        let text = super::text(&r);
        for line in [
            "  removed claim visits:visit#uniq:by_token:t-b",
            "  removed member of visits:visit#idx:by_page:home",
            "  removed 20 from counter visits:visit#count:seconds_per_page:home",
            "  removed its expiry receipt and ledger entry",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("cannot be known"), "{text}");
        assert_eq!(repo.count_per_page("home").await.unwrap(), 2);
        assert_eq!(repo.sum_seconds_per_page("home").await.unwrap(), 40);
        assert_eq!(repo.count_total().await.unwrap(), 2);
        assert_eq!(repo.find_by_token("t-b").await.unwrap(), None::<Visit>);
        assert!(
            Walker::new(&def, &store)
                .run(false, 100)
                .await
                .unwrap()
                .is_clean(),
            "clean at once: the receipt told the counter amounts"
        );
    }
}
