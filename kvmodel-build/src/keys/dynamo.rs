//! The DynamoDB view of `kvmodel keys` (`--store dynamodb`): the items each
//! key is stored as in the table, and the requests, capacity units and
//! transaction actions of each access pattern, from the runtime's table
//! ([`dynamo_cost`](kvmodel_runtime::__private::dynamo_cost)).

use kvmodel_codegen::ir::{CounterKeep, Entity, Model, Tally};
use kvmodel_runtime::__private::cost::Access as Cost;
use kvmodel_runtime::__private::dynamo_cost::{
    DISCOVERY_SHARDS, DynamoCost, DynamoShape, MAX_ACTIONS, Requests,
};

use super::{Format, Row, column_width, rows, wrap};

/// The parts of `e` that decide what its writes send to DynamoDB.
pub(crate) fn shape(e: &Entity, model: &Model) -> DynamoShape {
    let ordered = || e.indexes.iter().filter(|i| !i.unique);
    let enforced = e
        .relations
        .iter()
        .filter(|r| r.on_delete.enforced())
        .count();
    let dependents = e
        .dependents
        .iter()
        .filter(|d| {
            model
                .entities
                .iter()
                .find(|c| *c.name == *d.entity)
                .and_then(|c| c.relations.iter().find(|r| *r.name == *d.relation))
                .is_some_and(|r| r.on_delete.enforced())
        })
        .count();
    let moving: usize = e
        .counters
        .iter()
        .map(|c| match (c.group_by.is_empty(), c.sum.is_some()) {
            (false, _) => 2,
            (true, true) => 1,
            (true, false) => 0,
        })
        .sum();
    DynamoShape {
        claims: e.indexes.iter().filter(|i| i.unique).count(),
        collections: ordered().count() + e.relations.len(),
        grouped: ordered().filter(|i| !i.fields.is_empty()).count() + e.relations.len(),
        capped: ordered().filter(|i| i.keep.is_some()).count()
            + e.relations.iter().filter(|r| r.keep.is_some()).count(),
        counters: e.counters.len() + enforced,
        kept_on_delete: e
            .counters
            .iter()
            .filter(|c| {
                c.keep
                    .as_ref()
                    .is_some_and(|k| k.value == CounterKeep::Always)
            })
            .count(),
        moving_counters: moving + 2 * enforced,
        parents: enforced,
        dependents,
        expires: e.expires(),
    }
}

/// The largest write of an entity on DynamoDB: its name and its actions.
pub(crate) fn largest_write(shape: &DynamoShape) -> (&'static str, u32) {
    [
        ("create", shape.create().actions()),
        ("update", shape.update().actions()),
        ("delete", shape.delete().actions()),
    ]
    .into_iter()
    .fold(("create", 0), |best, w| if w.1 > best.1 { w } else { best })
}

/// How the table stores one row's key: its items and what they hold.
fn items(r: &Row) -> String {
    const COLLECTION: &str = "sk 00: head (kind c, n = members, g = generation); \
                              sk 01 ‖ g ‖ entry: one item per member (sort score, then member)";
    match r.kind {
        "record" => "sk 00: kind v, v (B) = the encoded record, ver".into(),
        "unique" => "sk 00: kind v, v (B) = the record key, ver".into(),
        "index" | "relation" | "link" | "ledger" => COLLECTION.into(),
        "counter" | "linkcount" => {
            "sk 00: kind n, v (N) = the count or sum, ADDed to; its change stamp is a counter item too, pk `~` + the key".into()
        }
        "discovery" => format!(
            "{DISCOVERY_SHARDS} collections, pk the key + `:0` … `:{}`; a member goes to the one the \
             FNV-1a hash of the record key picks; each: {COLLECTION}",
            DISCOVERY_SHARDS - 1
        ),
        _ => "sk 00: kind v, v (B) = the value, ver".into(),
    }
}

/// The requests as `3 (1 BatchGetItem + 1 TransactGetItems + …)`.
fn requests(r: &Requests) -> String {
    let parts: Vec<String> = r
        .by_operation()
        .iter()
        .map(|(op, n)| format!("{n} {op}"))
        .collect();
    format!("{} ({})", r.total(), parts.join(" + "))
}

/// One priced access pattern.
struct Priced {
    method: String,
    requests: String,
    units: String,
    note: String,
}

fn priced(method: String, c: &DynamoCost, page: u32) -> Priced {
    let mut note = Vec::new();
    if c.actions() > 0 {
        note.push(format!(
            "{} of {MAX_ACTIONS} transaction actions ({} written, {} checked); {} head(s) read \
             transactionally",
            c.actions(),
            c.writes,
            c.checks,
            c.transact_reads
        ));
    }
    if page > 0 {
        note.push(format!("for a page of {page}"));
    }
    if !c.note.is_empty() {
        note.push(c.note.to_owned());
    }
    Priced {
        method,
        requests: requests(&c.requests),
        units: format!("{} RCU, {} WCU", c.rcu(), c.wcu()),
        note: note.join("; "),
    }
}

fn data(method: String, requests: &str, note: &str) -> Priced {
    Priced {
        method,
        requests: requests.to_owned(),
        units: "depends on the data".to_owned(),
        note: note.to_owned(),
    }
}

/// Pages are priced for this many records.
const PAGE: u32 = 10;

fn accesses(e: &Entity, model: &Model, shape: &DynamoShape) -> Vec<Priced> {
    let at = |m: &str, a: Cost, page: u32| priced(m.to_owned(), &shape.cost(a, page), page);
    let mut out = vec![
        at("create", Cost::Create, 0),
        at("get", Cost::Get, 0),
        at("get_many", Cost::GetMany, PAGE),
        at("update / modify", Cost::Update, 0),
        at("delete", Cost::Delete, 0),
    ];
    if shape.dependents > 0 {
        out.push(data(
            "delete (on_delete)".into(),
            "as delete",
            "each dependent's count of children deleted on the condition that it is 0, with its \
             stamp (counted above); a cascade first deletes each child with its own delete, one \
             transaction each",
        ));
    }
    for ix in &e.indexes {
        out.push(if ix.unique {
            at(&format!("find_{}", *ix.name), Cost::FindUnique, 0)
        } else {
            at(&format!("list_{}", *ix.name), Cost::ListCollection, PAGE)
        });
    }
    for r in &e.relations {
        out.push(at(
            &format!("list_by_{}", *r.name),
            Cost::ListCollection,
            PAGE,
        ));
    }
    for c in &e.counters {
        let m = if c.sum.is_some() { "sum" } else { "count" };
        let method = format!("{m}_{}", *c.name);
        out.push(match &c.shards {
            Some(s) => at(&method, Cost::ReadShardedCounter, s.value),
            None => at(&method, Cost::ReadCounter, 0),
        });
    }
    for (method, access) in super::links::methods(e, model) {
        out.push(match access {
            Cost::Link => data(
                method,
                "4 (2 BatchGetItem + 1 TransactGetItems + 1 TransactWriteItems)",
                "reads both records, both link registries and the edge, then one transaction: \
                 the records checked, the registries and the edge written, a member item and \
                 head in each side's link collection, each side's link count and its stamp",
            ),
            Cost::Unlink => data(
                method,
                "4 (2 BatchGetItem + 1 TransactGetItems + 1 TransactWriteItems)",
                "reads both link registries and the edge, then one transaction removing the \
                 edge, each side's member item and uncounting it",
            ),
            Cost::ListLinked => data(
                method,
                "3 (1 GetItem + 1 Query + 1 BatchGetItem) per page",
                "the head, a Query of the page's members, one BatchGetItem of the records, \
                 edges and far registries; a stale entry met adds a commit removing it",
            ),
            other => priced(method, &shape.cost(other, 0), 0),
        });
    }
    out.push(at("list_all", Cost::ListAll, PAGE));
    out.push(priced(
        "count_all".into(),
        &DynamoCost {
            requests: Requests {
                batch_get_item: 1,
                ..Requests::default()
            },
            reads: DISCOVERY_SHARDS as u32,
            note: "the 8 shard heads",
            ..DynamoCost::default()
        },
        0,
    ));
    if shape.expires {
        out.push(data(
            "sweep_expired".into(),
            "per page: 1 GetItem + 1 Query (the ledger) + 1 BatchGetItem + per record a commit",
            "each expired record's commit as a delete; one write in 8 is followed by a sweep \
             step (1 GetItem + 1 Query when nothing is due), which the writes above leave out",
        ));
    }
    out
}

/// The standalone counter `t` on DynamoDB: its items and accesses.
fn tally(t: &Tally) -> (String, Vec<Priced>) {
    let shards = t.shards.as_ref().map_or(1, |s| s.value);
    let items = if shards > 1 {
        format!(
            "{shards} counter items (the key, then `#1`…`#{}`), each sk 00: kind n, v (N); \
             each change stamp a counter item too, pk `~` + the key",
            shards - 1
        )
    } else {
        "sk 00: kind n, v (N) = the count; its change stamp a counter item too, pk `~` + the key"
            .to_owned()
    };
    let incr = if t.ttl_ms.is_some() {
        DynamoCost {
            requests: Requests {
                transact_get_items: 1,
                transact_write_items: 1,
                ..Requests::default()
            },
            transact_reads: 1,
            writes: 2,
            note: "one shard, read because its expiry is set again, and its stamp",
            ..DynamoCost::default()
        }
    } else {
        DynamoCost {
            requests: Requests {
                transact_write_items: 1,
                ..Requests::default()
            },
            writes: 2,
            note: "an ADD to one shard, unread, and its stamp",
            ..DynamoCost::default()
        }
    };
    let get = DynamoCost {
        requests: Requests {
            get_item: u32::from(shards == 1),
            batch_get_item: u32::from(shards > 1),
            ..Requests::default()
        },
        reads: shards,
        ..DynamoCost::default()
    };
    let reset = DynamoCost {
        requests: Requests {
            transact_get_items: 1,
            transact_write_items: 1,
            ..Requests::default()
        },
        transact_reads: shards,
        writes: shards,
        note: "every shard deleted (checked where it holds nothing)",
        ..DynamoCost::default()
    };
    (
        items,
        vec![
            priced("incr".into(), &incr, 0),
            priced("get".into(), &get, 0),
            priced("reset".into(), &reset, 0),
        ],
    )
}

/// What the capacity units assume.
const UNITS: &str = "Capacity units for items of at most 1 KB, reads strongly consistent: \
                     GetItem, BatchGetItem and Query 1 RCU per 4 KB read (a Query rounds up the \
                     page's member items together), TransactGetItems and a transaction's \
                     ConditionCheck 2 RCU per 4 KB item, TransactWriteItems 2 WCU per 1 KB \
                     item written. A larger record costs 1 RCU more per 4 KB and 2 WCU more \
                     per 1 KB.";

/// The table's attributes, said once.
const LAYOUT: &str = "DynamoDB: one table; every item has pk (S) = the key as below and sk (B): \
                      00 on a key's head item, 01, the collection's generation (8 bytes) and the \
                      member's entry on a member item; heads carry kind (v value, n counter, c \
                      collection), ver (a version every write replaces) and, where the key \
                      expires, exp (ms) and ttl (s). A commit is one TransactWriteItems of at \
                      most 100 actions, one per item.";

fn table(out: &mut String, format: Format, priced: &[Priced]) {
    match format {
        Format::Markdown => {
            out.push_str(
                "\n| access | requests | capacity | transaction and notes |\n|---|---|---|---|\n",
            );
            for p in priced {
                out.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    p.method, p.requests, p.units, p.note
                ));
            }
        }
        Format::Text | Format::Mermaid => {
            out.push_str("  access patterns (requests; capacity units):\n");
            let w = column_width(priced.iter().map(|p| p.method.len()));
            let r = column_width(priced.iter().map(|p| p.requests.len()));
            for p in priced {
                out.push_str(&format!(
                    "    {:<w$}  {:<r$}  {}\n",
                    p.method, p.requests, p.units
                ));
                if !p.note.is_empty() {
                    for line in wrap(&p.note, 88).lines() {
                        out.push_str(&format!("      {line}\n"));
                    }
                }
            }
        }
    }
}

/// The DynamoDB report for a whole model.
pub(super) fn report(model: &Model, format: Format) -> String {
    let mut out = match format {
        Format::Markdown => format!("{LAYOUT}\n\n"),
        Format::Text | Format::Mermaid => format!("{}\n", wrap(LAYOUT, 100)),
    };
    for e in model.entities.iter().filter(|e| e.key.is_some()) {
        // DynamoDB keeps no delete plans.
        let rows: Vec<_> = rows(e, model)
            .into_iter()
            .filter(|r| r.kind != "plan")
            .collect();
        let shape = shape(e, model);
        let acc = accesses(e, model, &shape);
        let feed = e.feed.is_some().then_some(
            "Its change feed is not kept on DynamoDB: DynamoStore refuses the writes of an \
             entity with `feed:`.",
        );
        match format {
            Format::Markdown => {
                out.push_str(&format!(
                    "## {} (DynamoDB)\n\n| kind | pk | example | items |\n|---|---|---|---|\n",
                    *e.name
                ));
                for r in &rows {
                    out.push_str(&format!(
                        "| {} | `{}` | `{}` | {} |\n",
                        r.kind,
                        r.pattern,
                        r.example,
                        items(r)
                    ));
                }
                table(&mut out, format, &acc);
                if let Some(feed) = feed {
                    out.push_str(&format!("\n{feed}\n"));
                }
                out.push('\n');
            }
            Format::Text | Format::Mermaid => {
                out.push_str(&format!("{} (DynamoDB)\n", *e.name));
                let w = column_width(rows.iter().map(|r| r.pattern.len()));
                for r in &rows {
                    out.push_str(&format!(
                        "  {:<9}  pk {:<w$}  e.g. {}\n",
                        r.kind, r.pattern, r.example
                    ));
                    for line in wrap(&items(r), 88).lines() {
                        out.push_str(&format!("             {line}\n"));
                    }
                }
                table(&mut out, format, &acc);
                if let Some(feed) = feed {
                    for line in wrap(feed, 96).lines() {
                        out.push_str(&format!("  {line}\n"));
                    }
                }
                out.push('\n');
            }
        }
    }
    for t in model.tallies.iter().filter(|t| t.key.is_some()) {
        let (pattern, example) = super::tallies::key(t, model);
        let (items, acc) = tally(t);
        match format {
            Format::Markdown => {
                out.push_str(&format!(
                    "## {} (standalone counter, DynamoDB)\n\n| kind | pk | example | items |\n|---|---|---|---|\n| counter | `{pattern}` | `{example}` | {items} |\n",
                    *t.name
                ));
                table(&mut out, format, &acc);
                out.push('\n');
            }
            Format::Text | Format::Mermaid => {
                out.push_str(&format!(
                    "{} (standalone counter, DynamoDB)\n  counter    pk {pattern}  e.g. {example}\n",
                    *t.name
                ));
                for line in wrap(&items, 88).lines() {
                    out.push_str(&format!("             {line}\n"));
                }
                table(&mut out, format, &acc);
                out.push('\n');
            }
        }
    }
    out.push_str(&match format {
        Format::Markdown => format!("{UNITS}\n"),
        Format::Text | Format::Mermaid => wrap(UNITS, 100),
    });
    out
}
