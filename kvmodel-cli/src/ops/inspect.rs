//! `kvmodel inspect`: live data through the schema, as JSON. Reads only.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use kvmodel_runtime::__private::{
    Derived, EdgeValue, End, EntityDef, EntityModel, FieldExpr, Link, ModelDef, Records, Registry,
    Scalar, TypeModel, hex, parse_arg, registry_key, shards, stands, state,
};
use kvmodel_runtime::{AnyStore, Date, RangeRequest, Store, Timestamp};

use super::{Code, Context, Fail, fail, print, store_error};

/// `kvmodel inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
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
    /// Values: the key parts of records (one per placeholder of the key
    /// template, in order; several records in turn), or with `--index`,
    /// `--relation` or `--counter` the values that name one (with `--link`,
    /// the key parts of the one record whose links to page).
    pub values: Vec<String>,
    /// Look a record up by this unique index, or read a page of this
    /// ordered index.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["relation", "counter", "link"])]
    pub index: Option<String>,
    /// Read a page of this relation (the value is the parent's id).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["counter", "link"])]
    pub relation: Option<String>,
    /// Read a page of a record's link collection: the records linked to it
    /// by this link (its name on either side, `tags` or `posts`), with the
    /// link count; entries the listing would skip are shown under `skipped`.
    #[arg(long, value_name = "NAME", conflicts_with = "counter")]
    pub link: Option<String>,
    /// Read this counter as the repository reads it, every shard of a
    /// sharded one summed (the values are its groups: a field's value, a
    /// timestamp for `hour(…)`, a date for `day(…)` and `month(…)`).
    #[arg(long, value_name = "NAME")]
    pub counter: Option<String>,
    /// Records per page of a listing.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub limit: usize,
    /// Continue a listing after this position (the `next` of a page).
    #[arg(long, value_name = "POSITION")]
    pub after: Option<String>,
    /// Read an index, relation or counter a migration has not backfilled
    /// yet (its results leave out the records written before it existed).
    #[arg(long)]
    pub partial: bool,
}

/// Prints what was asked for as JSON; exit 0.
pub async fn inspect(args: InspectArgs) -> Result<Code, Fail> {
    let cx = Context::open(&args.schema, &args.store).await?;
    let model = cx.entity(&args.entity)?;
    let def = ModelDef::new(model.clone());
    let doc = if let Some(name) = &args.index {
        let ix = model
            .indexes
            .iter()
            .find(|i| &i.name == name)
            .ok_or_else(|| unknown("index", name, &model))?;
        let values = grouped(&model, "index", name, &ix.fields, &args.values)?;
        let kind = if ix.unique {
            Derived::Claim
        } else {
            Derived::Index
        };
        readable(&cx, &def, &args, kind, name, ix.since).await?;
        if ix.unique {
            let claim = model.claim_key(name, &values).map_err(fail)?;
            let record = lookup(&cx, &def, &claim).await?;
            json!({ "entity": model.name, "index": name, "claim": claim, "record": record })
        } else {
            let key = model.index_key(name, &values).map_err(fail)?;
            page(&cx, &def, &args, &key, "index", name).await?
        }
    } else if let Some(name) = &args.relation {
        let r = model
            .relations
            .iter()
            .find(|r| &r.name == name)
            .ok_or_else(|| unknown("relation", name, &model))?;
        let values = typed(&model, &[r.by.as_str()], &args.values)?;
        readable(&cx, &def, &args, Derived::Relation, name, r.since).await?;
        let key = model.relation_key(name, &values[0]).map_err(fail)?;
        page(&cx, &def, &args, &key, "relation", name).await?
    } else if let Some(name) = &args.link {
        linked(&cx, &model, &args, name).await?
    } else if let Some(name) = &args.counter {
        let c = model
            .counters
            .iter()
            .find(|c| &c.name == name)
            .ok_or_else(|| unknown("counter", name, &model))?;
        let groups = grouped(&model, "counter", name, &c.group_by, &args.values)?;
        readable(&cx, &def, &args, Derived::Counter, name, c.since).await?;
        let key = model.counter_key(name, &groups).map_err(fail)?;
        counter(&cx.store, &model.name, name, &key, c.shards).await?
    } else if args.values.is_empty() {
        let all = def.space().all_key();
        page(&cx, &def, &args, &all, "all", "").await?
    } else {
        let mut records = Vec::new();
        for key in record_keys(&model, &args.values)? {
            records.push(read(&cx, &def, &key).await?);
        }
        json!({ "entity": model.name, "records": records })
    };
    print(&format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    ))?;
    Ok(Code::Success)
}

/// A page of the link collection `name` of the record whose key parts are
/// `args.values`: the linked records (of the far entity) whose entries
/// stand, as the repository's `list_*` lists them, and the entries it would
/// skip and remove, with why. Reads only.
async fn linked(
    cx: &Context,
    model: &EntityModel,
    args: &InspectArgs,
    name: &str,
) -> Result<Value, Fail> {
    // The run-time model has no links; the schema's model does.
    let schema = kvmodel_build::load_files(&args.schema).map_err(fail)?;
    let mut sides = Vec::new();
    for e in &schema.model.entities {
        for l in &e.links {
            if *e.name == model.name {
                sides.push((l.name.as_str(), End::From, e.name.as_str(), l));
            }
            if l.to_name() == model.name {
                sides.push((l.inverse.as_str(), End::To, e.name.as_str(), l));
            }
        }
    }
    let Some(&(_, end, declaring, l)) = sides.iter().find(|(n, ..)| *n == name) else {
        let known: Vec<String> = sides.iter().map(|(n, ..)| format!("`{n}`")).collect();
        return Err(fail(format_args!(
            "`{}` takes part in no link `{name}`; {}",
            model.name,
            if known.is_empty() {
                "it takes part in none".to_owned()
            } else {
                format!("its links: {}", known.join(", "))
            }
        )));
    };
    let from = ModelDef::new(cx.entity(declaring)?);
    let to = ModelDef::new(cx.entity(l.to_name())?);
    let link = Link {
        from: from.space(),
        name: l.name.as_str(),
        to: to.space(),
        inverse: l.inverse.as_str(),
    };
    let far = match end {
        End::From => &to,
        End::To => &from,
    };
    let keys = record_keys(model, &args.values)?;
    let [key] = keys.as_slice() else {
        return Err(fail(format_args!(
            "`--link` pages the links of one record; give the key parts of one `{}`",
            model.name
        )));
    };
    let collection = link.collection_key(end, key);
    let count = cx
        .store
        .counter(&link.count_key(end, key))
        .await
        .map_err(store_error)?;
    let mut req = RangeRequest::all(args.limit.max(1));
    if let Some(after) = &args.after {
        req.after = Some(hex::decode(after).ok_or_else(|| {
            fail(format_args!(
                "`{after}` is not a position; pass the `next` of an earlier page"
            ))
        })?);
    }
    let (read, next) = Records::Set(collection.clone())
        .page_with(&cx.store, req, |m, v| {
            (m.to_member(), v.map(<[u8]>::to_vec))
        })
        .await
        .map_err(store_error)?;
    let own_reg = registry_key(link.side(end).0, key);
    let far_space = link.side(end.other()).0;
    let mut wanted = vec![own_reg.clone(), key.clone()];
    for (m, _) in &read {
        wanted.push(String::from_utf8_lossy(&m.sort).into_owned());
        wanted.push(registry_key(far_space, &String::from_utf8_lossy(&m.member)));
    }
    let mut got = cx
        .store
        .get_many(&wanted)
        .await
        .map_err(store_error)?
        .into_iter();
    let registry = |k: &str, b: Option<Vec<u8>>| b.and_then(|b| Registry::read(k, &b).ok());
    let own = registry(&own_reg, got.next().flatten());
    let own_gone = got.next().flatten().is_none();
    let (mut items, mut stale) = (Vec::new(), Vec::new());
    for (m, bytes) in read {
        let k = String::from_utf8_lossy(&m.member).into_owned();
        let edge_key = String::from_utf8_lossy(&m.sort).into_owned();
        let edge = got
            .next()
            .flatten()
            .and_then(|b| EdgeValue::read(&edge_key, &b).ok());
        let far_reg = registry(&registry_key(far_space, &k), got.next().flatten());
        let why = match &bytes {
            _ if own_gone => Some(
                "this record is gone (expired or deleted): its expiry sweep or `kvmodel reconcile` removes its links"
                    .to_owned(),
            ),
            None => Some("no such record: deleted or expired since it was linked".to_owned()),
            Some(_) if edge.is_none() => Some(format!(
                "no edge `{edge_key}` (`kvmodel reconcile` removes the entry)"
            )),
            Some(_) if !stands(edge.as_ref(), far_reg.as_ref(), end.other()) => {
                Some("the record was deleted and created again since it was linked".to_owned())
            }
            Some(_) if !stands(edge.as_ref(), own.as_ref(), end) => {
                Some("this record was deleted and created again since the link".to_owned())
            }
            Some(_) => None,
        };
        match (why, bytes) {
            (Some(why), _) => stale.push(json!({ "key": k, "why": why })),
            (None, Some(b)) => match far.read(&k, &b) {
                Ok((version, r)) => {
                    items.push(json!({ "key": k, "version": version, "record": r.value }));
                }
                Err(e) => stale.push(json!({ "key": k, "why": e.to_string() })),
            },
            (None, None) => {}
        }
    }
    let mut doc = json!({
        "entity": model.name,
        "link": name,
        "key": key,
        "collection": collection,
        "count": count,
        "items": items,
        "next": next.map(|n| hex::encode(&n)),
    });
    if !stale.is_empty() {
        doc["skipped"] = Value::Array(stale);
    }
    Ok(doc)
}

/// The keys of the records whose key parts are `values` (one per
/// placeholder of the key template, in order; several records in turn).
pub(super) fn record_keys(model: &EntityModel, values: &[String]) -> Result<Vec<String>, Fail> {
    let fields = model.key_fields();
    if fields.is_empty() || !values.len().is_multiple_of(fields.len()) {
        return Err(fail(format_args!(
            "a `{}` key has {} part(s) ({}); give them for each record",
            model.name,
            fields.len(),
            fields.join(", ")
        )));
    }
    values
        .chunks(fields.len())
        .map(|parts| {
            let values = typed(model, &fields, parts)?;
            model.key_of_parts(&values).map_err(fail)
        })
        .collect()
}

/// The counter `name` of `entity` at `key`, spread over `shards` keys, read
/// as the repository reads it (every shard, summed): its value and, when
/// sharded, what each shard holds. A total a read cannot return is shown
/// with the error the repository's read fails with.
async fn counter(
    store: &AnyStore,
    entity: &str,
    name: &str,
    key: &str,
    shards: u32,
) -> Result<Value, Fail> {
    let values = shards::read(store, key, shards)
        .await
        .map_err(store_error)?;
    let mut doc = json!({ "entity": entity, "counter": name, "key": key });
    match shards::sum(key, shards, &values) {
        Ok(value) => doc["value"] = json!(value),
        Err(e) => {
            doc["value"] = Value::Null;
            doc["error"] = Value::String(e.to_string());
        }
    }
    if shards > 1 {
        doc["shards"] = values
            .iter()
            .map(|(k, v)| json!({ "key": k, "value": v }))
            .collect();
    }
    Ok(doc)
}

/// Refuses `text` unless it names a bucket of the time group `bucket` of
/// counter `counter`: a timestamp for `hour(f)`, a date or a timestamp for
/// `day(f)` and `month(f)`.
fn bucket_arg(what: &str, name: &str, bucket: &FieldExpr, text: &str) -> Result<(), Fail> {
    let (kind, form) = match bucket {
        FieldExpr::Hour(_) => ("hour", "a timestamp such as 2026-03-01T10:00:00Z"),
        FieldExpr::Day(_) => ("day", "a date such as 2026-03-01 (or a timestamp)"),
        FieldExpr::Month(_) => ("month", "a date in it such as 2026-03-01 (or a timestamp)"),
        FieldExpr::Field(_) => return Ok(()),
    };
    let ok = text.parse::<Timestamp>().is_ok() || (kind != "hour" && text.parse::<Date>().is_ok());
    if ok {
        return Ok(());
    }
    Err(fail(format_args!(
        "`{text}` names no {kind} of {what} `{name}`, which reads `{kind}({})`; write {form}",
        bucket.field()
    )))
}

fn unknown(what: &str, name: &str, model: &EntityModel) -> Fail {
    fail(format_args!(
        "`{}` declares no {what} `{name}`; see `kvmodel keys` for its indexes, relations and counters",
        model.name
    ))
}

/// `text` as a value of the field `field`.
fn arg(model: &EntityModel, field: &str, text: &str) -> Result<Value, Fail> {
    let ty = model
        .field(field)
        .map(|f| &f.ty)
        .unwrap_or(&TypeModel::Scalar(Scalar::String));
    parse_arg(ty, text).map_err(|e| fail(format_args!("{field}: {e}")))
}

/// The values of `fields`, one argument each.
/// The values of an index's fields or a counter's groups (`what` `name`),
/// from the command line: a field's value, or a bucket's date or hour.
fn grouped(
    model: &EntityModel,
    what: &str,
    name: &str,
    items: &[FieldExpr],
    texts: &[String],
) -> Result<Vec<Value>, Fail> {
    if texts.len() != items.len() {
        return Err(fail(format_args!(
            "{what} `{name}` takes {} value(s), {} were given",
            items.len(),
            texts.len()
        )));
    }
    items
        .iter()
        .zip(texts)
        .map(|(g, text)| match g {
            FieldExpr::Field(f) => arg(model, f, text),
            bucket => {
                bucket_arg(what, name, bucket, text)?;
                Ok(Value::String(text.clone()))
            }
        })
        .collect()
}

fn typed(model: &EntityModel, fields: &[&str], texts: &[String]) -> Result<Vec<Value>, Fail> {
    if texts.len() != fields.len() {
        return Err(fail(format_args!(
            "this needs {} value(s) ({}), {} were given",
            fields.len(),
            fields.join(", "),
            texts.len()
        )));
    }
    fields
        .iter()
        .zip(texts)
        .map(|(f, t)| arg(model, f, t))
        .collect()
}

/// Refuses a read of what a migration has not backfilled, unless
/// `--partial`.
async fn readable(
    cx: &Context,
    def: &ModelDef,
    args: &InspectArgs,
    kind: Derived,
    name: &str,
    since: u32,
) -> Result<(), Fail> {
    if since <= 1 || args.partial {
        return Ok(());
    }
    state::require(
        &cx.store,
        def.space(),
        &def.records(&cx.store),
        def.name(),
        def.version(),
        kind,
        name,
        since,
    )
    .await
    .map(drop)
    .map_err(|e| fail(format_args!("{e} (for `kvmodel inspect`: `--partial`)")))
}

/// The record at `key` as JSON: its version and value, `null` when there
/// is none, or the error that keeps it from being read.
async fn read(cx: &Context, def: &ModelDef, key: &str) -> Result<Value, Fail> {
    let bytes = cx.store.get(key).await.map_err(store_error)?;
    Ok(match bytes {
        None => json!({ "key": key, "record": null }),
        Some(b) => match def.read(key, &b) {
            Ok((version, r)) => json!({ "key": key, "version": version, "record": r.value }),
            Err(e) => json!({ "key": key, "error": e.to_string() }),
        },
    })
}

/// The record a unique claim names, if it still has the value.
async fn lookup(cx: &Context, def: &ModelDef, claim: &str) -> Result<Value, Fail> {
    let Some(holder) = cx.store.get(claim).await.map_err(store_error)? else {
        return Ok(Value::Null);
    };
    let key = String::from_utf8_lossy(&holder).into_owned();
    let Some(bytes) = cx.store.get(&key).await.map_err(store_error)? else {
        return Ok(json!({ "key": key, "stale": "the claim names a record that is gone" }));
    };
    Ok(match def.stored_facts(&key, &bytes) {
        Ok((_, facts)) if facts.has_claim(claim) => read(cx, def, &key).await?,
        Ok(_) => json!({ "key": key, "stale": "the record no longer has this value" }),
        Err(e) => json!({ "key": key, "error": e.to_string() }),
    })
}

/// A page of the collection at `key`: the records it lists, and those
/// listed that are gone or no longer belong (which listings skip).
async fn page(
    cx: &Context,
    def: &ModelDef,
    args: &InspectArgs,
    key: &str,
    what: &str,
    name: &str,
) -> Result<Value, Fail> {
    let mut req = RangeRequest::all(args.limit.max(1));
    if let Some(after) = &args.after {
        req.after = Some(hex::decode(after).ok_or_else(|| {
            fail(format_args!(
                "`{after}` is not a position; pass the `next` of an earlier page"
            ))
        })?);
    }
    let all = what == "all";
    let source = if all {
        def.records(&cx.store)
    } else {
        Records::Set(key.to_owned())
    };
    let (read, next) = source
        .page_with(&cx.store, req, |m, v| {
            (m.to_member(), v.map(<[u8]>::to_vec))
        })
        .await
        .map_err(store_error)?;
    let (mut items, mut stale) = (Vec::new(), Vec::new());
    for (m, bytes) in read {
        let k = String::from_utf8_lossy(&m.member);
        let k = k.as_ref();
        let Some(bytes) = bytes else {
            stale.push(json!({ "key": k, "why": "no such record" }));
            continue;
        };
        match def.read(k, &bytes) {
            Ok((version, r)) => {
                let belongs = all
                    || def.facts(&r).is_ok_and(|mut f| {
                        f.retain_since(version);
                        f.has_member(key, &m.sort)
                    });
                if belongs {
                    items.push(json!({ "key": k, "version": version, "record": r.value }));
                } else {
                    stale.push(json!({ "key": k, "why": "the record does not belong here" }));
                }
            }
            Err(e) => stale.push(json!({ "key": k, "why": e.to_string() })),
        }
    }
    let mut doc = json!({
        "entity": def.name(),
        "collection": key,
        "items": items,
        "next": next.map(|n| hex::encode(&n)),
    });
    if !all {
        doc[what] = Value::String(name.to_owned());
    }
    if !stale.is_empty() {
        doc["skipped"] = Value::Array(stale);
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use kvmodel_examples::social::{Like, LikeRepo};

    use super::*;
    use crate::ops::testing::def;

    /// A counter spread over 16 shards is read as the repository reads
    /// it: every shard, summed (shard 0 alone holds a part).
    #[tokio::test]
    async fn a_sharded_counter_is_the_sum_of_its_shards() {
        let store = AnyStore::open("memory:").await.unwrap();
        let likes = LikeRepo::new(store.clone());
        for i in 0..50 {
            likes
                .create(&Like {
                    post_id: "p1".into(),
                    user_id: format!("u{i}"),
                    at: "2026-03-01T10:00:00Z".parse().unwrap(),
                })
                .await
                .unwrap();
        }
        let def = def("schemas/social.yaml", "Like");
        let key = def.model().counter_key("per_post", &[json!("p1")]).unwrap();
        let Ok(doc) = counter(&store, "Like", "per_post", &key, 16).await else {
            panic!("the counter reads");
        };
        assert_eq!(doc["value"], 50);
        assert_eq!(likes.count_per_post("p1").await.unwrap(), 50);
        let shards = doc["shards"].as_array().unwrap();
        assert!(shards.len() > 1, "{doc}");
        let sum: i64 = shards.iter().map(|s| s["value"].as_i64().unwrap()).sum();
        assert_eq!(sum, 50);
        assert!(
            store.counter(&key).await.unwrap() < 50,
            "shard 0 holds a part"
        );
        let total = def.model().counter_key("total", &[]).unwrap();
        let Ok(doc) = counter(&store, "Like", "total", &total, 8).await else {
            panic!("the counter reads");
        };
        assert_eq!(doc["value"], 50);
    }
}
