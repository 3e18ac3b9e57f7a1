//! `kvmodel keys`: the key layout of a model and what each access pattern
//! costs, as text or Markdown.

mod dynamo;
mod links;
mod mermaid;
mod tallies;

use heck::ToSnakeCase;
use kvmodel_runtime::__private::{
    Derived, KeyBuilder,
    cost::{self, Access as Cost, Shape},
};

use kvmodel_codegen::ir::{Entity, FieldExpr, FieldType, Model, OnDelete, Segment, TypeKind};

/// Output format of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned plain text.
    #[default]
    Text,
    /// Markdown tables.
    Markdown,
    /// A Mermaid entity-relationship diagram of the entities, their
    /// relations (with `on_delete`), links and counters, to put in a
    /// ```` ```mermaid ```` block.
    Mermaid,
}

fn sample(e: &Entity, field: &str, model: &Model) -> String {
    match e.field(field) {
        Some(f) => sample_of(&f.ty, field, model),
        None => "?".into(),
    }
}

/// An example value of a key field called `field` of type `ty`, as it
/// reads in a key.
fn sample_of(ty: &FieldType, field: &str, model: &Model) -> String {
    match ty {
        FieldType::String => format!("{field}-1"),
        FieldType::Bool => "true".into(),
        FieldType::I32 | FieldType::I64 | FieldType::U32 | FieldType::U64 => "42".into(),
        FieldType::Timestamp => "1767225600000".into(),
        FieldType::Date => "2026-01-01".into(),
        FieldType::Uuid => "00000000-0000-0000-0000-000000000001".into(),
        FieldType::Named(n) => model
            .types
            .iter()
            .find(|t| *t.name == *n)
            .and_then(|t| match &t.kind {
                TypeKind::Enum(v) => v.first().map(|v| v.value.clone()),
                TypeKind::Struct(_) => None,
            })
            .unwrap_or_else(|| n.to_snake_case()),
        _ => "?".into(),
    }
}

fn part(e: &Entity, x: &FieldExpr, model: &Model) -> (String, String) {
    let tag = |s: String| {
        if e.colocate.as_ref().is_some_and(|c| c.as_str() == x.field()) {
            format!("{{{s}}}")
        } else {
            s
        }
    };
    match x {
        FieldExpr::Field(f) => (tag(format!("<{f}>")), tag(sample(e, f, model))),
        FieldExpr::Hour(f) => (format!("<hour({f})>"), "2026-01-01T00".into()),
        FieldExpr::Day(f) => (format!("<day({f})>"), "2026-01-01".into()),
        FieldExpr::Month(f) => (format!("<month({f})>"), "2026-01".into()),
    }
}

struct Row {
    kind: &'static str,
    pattern: String,
    example: String,
    note: String,
}

fn rows(e: &Entity, model: &Model) -> Vec<Row> {
    let ns = e
        .namespace
        .as_ref()
        .map(|n| n.value.clone())
        .unwrap_or_default();
    let space = e.key.as_ref().map(|k| k.key_space()).unwrap_or_default();
    let mut out = Vec::new();
    let (mut pat, mut ex) = (ns.clone(), ns.clone());
    for s in e.key.iter().flat_map(|k| &k.segments) {
        let (p, x) = match s {
            Segment::Literal(l) => (l.clone(), l.clone()),
            Segment::Field(f) => part(e, &FieldExpr::Field(f.clone()), model),
        };
        pat = format!("{pat}:{p}");
        ex = format!("{ex}:{x}");
    }
    let enc = e.encoding.as_str();
    let ttl = e
        .ttl
        .as_ref()
        .map(|t| {
            format!(
                ", ttl {}",
                kvmodel_codegen::vocab::format_duration_ms(t.after_ms.value)
            )
        })
        .unwrap_or_default();
    let ttl = match (e.expiry_field(), e.ttl.is_some()) {
        (Some(f), false) => format!(", expires at its `{}` when set", *f.name),
        (Some(f), true) => format!("{ttl} (or at its `{}` when set)", *f.name),
        (None, _) => ttl,
    };
    let max = e
        .max_size
        .as_ref()
        .map(|m| {
            format!(
                ", at most {} encoded (larger: ValueTooLarge)",
                kvmodel_codegen::vocab::format_size(m.value)
            )
        })
        .unwrap_or_default();
    let packed = e
        .compress
        .as_ref()
        .map(|c| {
            format!(
                ", stored {}-compressed from {} encoded",
                c.codec.as_str(),
                kvmodel_codegen::vocab::format_size(c.above.value)
            )
        })
        .unwrap_or_default();
    out.push(Row {
        kind: "record",
        pattern: pat,
        example: ex,
        note: format!(
            "{enc} record, version {}{ttl}{max}{packed}",
            e.version.value
        ),
    });
    // The runtime's own builder spells every derived key; placeholders and
    // samples are appended as they are, for reading.
    let derived = |kind: Derived, name: Option<&str>, parts: &[(String, String)]| {
        let mut p = KeyBuilder::derived(&ns, &space, kind);
        if let Some(name) = name {
            p = p.lit(name);
        }
        let mut x = p.clone();
        for (a, b) in parts {
            p = p.lit(a);
            x = x.lit(b);
        }
        (p.finish(), x.finish())
    };
    for ix in &e.indexes {
        let parts: Vec<(String, String)> = ix.fields.iter().map(|x| part(e, x, model)).collect();
        if ix.unique {
            let (p, x) = derived(Derived::Claim, Some(&ix.name), &parts);
            let norm = if ix.normalize.is_some() {
                ", value lowercased"
            } else {
                ""
            };
            out.push(Row {
                kind: "unique",
                pattern: p,
                example: x,
                note: format!("holds the record key{norm}{ttl}"),
            });
        } else {
            let (p, x) = derived(Derived::Index, Some(&ix.name), &parts);
            let order = ix
                .order_by
                .as_ref()
                .map(|o| format!("sorted by {}", o.value))
                .unwrap_or_else(|| "sorted by record key".into());
            out.push(Row {
                kind: "index",
                pattern: p,
                example: x,
                note: format!(
                    "sorted collection of record keys, {order}{}",
                    capped(ix.keep.as_ref())
                ),
            });
        }
    }
    for r in &e.relations {
        let parts = vec![part(e, &FieldExpr::Field(r.by.value.clone()), model)];
        let (p, x) = derived(Derived::Relation, Some(&r.name), &parts);
        let order = r
            .order_by
            .as_ref()
            .map(|o| format!("sorted by {}", o.value))
            .unwrap_or_else(|| "sorted by record key".into());
        out.push(Row {
            kind: "relation",
            pattern: p,
            example: x,
            note: format!(
                "keys of the {} of one {}, {order}{}",
                e.name.value,
                *r.belongs_to,
                capped(r.keep.as_ref())
            ),
        });
    }
    for r in e.relations.iter().filter(|r| r.on_delete.enforced()) {
        let parts = vec![part(e, &FieldExpr::Field(r.by.value.clone()), model)];
        let name = format!("{}.children", *r.name);
        let (p, x) = derived(Derived::Counter, Some(&name), &parts);
        out.push(Row {
            kind: "counter",
            pattern: p,
            example: x,
            note: format!(
                "count of the {} of one {} (relation {}, on_delete: {}), decimal integer: the {}'s delete conditions on it being 0; a write that names a parent conditions on that record existing",
                e.name.value, *r.belongs_to, *r.name, *r.on_delete, *r.belongs_to
            ),
        });
    }
    for c in &e.counters {
        let parts: Vec<(String, String)> = c.group_by.iter().map(|g| part(e, g, model)).collect();
        let (p, x) = derived(Derived::Counter, Some(&c.name), &parts);
        let what = c
            .sum
            .as_ref()
            .map(|s| format!("sum of {}", **s))
            .unwrap_or_else(|| "count of records".into());
        let shards = c
            .shards
            .as_ref()
            .map(|n| {
                format!(
                    "; spread over {} shards: this key and the same key + `#1` … `#{}`, each write adds to one at random, a read sums them",
                    n.value,
                    n.value - 1
                )
            })
            .unwrap_or_default();
        let keep = c
            .keep
            .as_ref()
            .map(|k| match k.value {
                kvmodel_codegen::ir::CounterKeep::OnExpiry => {
                    "; keep: on_expiry: keeps its count when records expire (the expiry sweep takes nothing back; a delete does), never lowered by reconcile".to_owned()
                }
                kvmodel_codegen::ir::CounterKeep::Always => {
                    "; keep: always: keeps its count when records expire or are deleted (only a write that moves a record to another group, or changes its summed field, takes an amount back), never lowered by reconcile".to_owned()
                }
            })
            .unwrap_or_default();
        out.push(Row {
            kind: "counter",
            pattern: p,
            example: x,
            note: format!(
                "{what}, decimal integer{shards}{keep}; on Redis each key has a change stamp `~{{key}}` (`~key` when it has a hash tag) that every commit moving it raises, for maintenance beside live writers"
            ),
        });
    }
    let (p, x) = derived(Derived::Discovery, None, &[]);
    out.push(Row {
        kind: "discovery",
        pattern: p,
        example: x,
        note: "sorted collection of every record key (list_all; no SCAN), kept on Redis and Redis Cluster only: redb and memory range over the record keys instead and keep none".into(),
    });
    out.extend(links::rows(e, model, &ns, &space));
    // A key beside each record: the kind's prefix, then the record key
    // (the first row) without its namespace.
    let beside = |out: &[Row], d: Derived, kind: &'static str, note: &str| {
        let (p, x) = derived(d, None, &[]);
        let record = |full: &str| {
            full.strip_prefix(&format!("{ns}:"))
                .unwrap_or(full)
                .to_owned()
        };
        Row {
            kind,
            pattern: format!("{p}:{}", record(&out[0].pattern)),
            example: format!("{x}:{}", record(&out[0].example)),
            note: note.into(),
        }
    };
    if planned(e) {
        out.push(beside(
            &out,
            Derived::DeletePlan,
            "plan",
            "on a Redis server built with delete_plans(true) only: the batch that deletes the record and its entries (MessagePack, with a digest of the record it was written for), written with each write, so a delete is one script",
        ));
    }
    if e.expires() {
        let (p, x) = derived(Derived::Expiry, None, &[]);
        out.push(Row {
            kind: "ledger",
            pattern: p,
            example: x,
            note: "sorted collection of record keys by the time their last write expires (the expiry sweep reads it)".into(),
        });
        out.push(beside(
            &out,
            Derived::Receipt,
            "receipt",
            "JSON: what the record's last write contributed and when it expires; no TTL, removed by the sweep",
        ));
    }
    out
}

/// What a delete adds for the children's relations it enforces
/// (`on_delete`), as an access row of its own.
fn dependents(e: &Entity, model: &Model) -> Option<Access> {
    let mut restrict = Vec::new();
    let mut cascade = Vec::new();
    for d in &e.dependents {
        let action = model
            .entities
            .iter()
            .find(|c| *c.name == *d.entity)
            .and_then(|c| c.relations.iter().find(|r| *r.name == *d.relation))
            .map(|r| *r.on_delete)?;
        let what = format!("{}.{}", *d.entity, *d.relation);
        match action {
            OnDelete::Cascade => cascade.push(what),
            _ => restrict.push(what),
        }
    }
    if restrict.is_empty() && cascade.is_empty() {
        return None;
    }
    let all: Vec<String> = restrict.iter().chain(&cascade).cloned().collect();
    let mut ops = format!(
        "as delete, with one condition more per dependent ({}): its count of children is 0",
        all.join(", ")
    );
    if !restrict.is_empty() {
        ops.push_str(&format!(
            "; restrict ({}): a count above 0 fails the delete with Restricted, nothing written",
            restrict.join(", ")
        ));
    }
    let calls = if cascade.is_empty() {
        "2 (1 on memory, redb)".to_owned()
    } else {
        ops.push_str(&format!(
            "; cascade ({}): first get the record, then per page of up to {} children one range \
             with their records and a delete of each child (its own upkeep and dependents, one \
             commit each), until none is left; the record goes last, so a delete cut short is \
             finished by running it again",
            cascade.join(", "),
            kvmodel_runtime::__private::CASCADE_PAGE
        ));
        "3 + per page 1 + 2 per child (memory, redb: 2 + per page 1 + 1 per child)".to_owned()
    };
    Some(Access {
        method: "delete (on_delete)".into(),
        ops,
        calls,
    })
}

/// What a capped collection's row adds (`keep: N`).
fn capped(keep: Option<&kvmodel_codegen::origin::Sp<u32>>) -> String {
    keep.map(|k| {
        format!(
            "; capped: keeps its {} greatest, each write that adds trims the rest in the same commit (ZREMRANGEBYRANK on Redis)",
            k.value
        )
    })
    .unwrap_or_default()
}

/// Whether writes of `e` keep a delete plan on Redis (the runtime's
/// `planned`): its records do not expire, keep no change feed, its delete
/// enforces no `on_delete`, and it has no sharded counter.
fn planned(e: &Entity) -> bool {
    !e.expires()
        && e.feed.is_none()
        && e.dependents.is_empty()
        && e.counters
            .iter()
            .all(|c| c.shards.as_ref().is_none_or(|n| n.value <= 1))
}

struct Access {
    method: String,
    ops: String,
    /// Round trips on Redis, and the in-process calls of memory and redb
    /// where they make fewer: "2 (1 on memory, redb)".
    calls: String,
}

/// The access patterns of an entity, priced by the runtime's own table.
fn accesses(e: &Entity, model: &Model) -> Vec<Access> {
    let shape = Shape {
        claims: e.indexes.iter().filter(|i| i.unique).count(),
        members: e.indexes.iter().filter(|i| !i.unique).count() + e.relations.len() + 1,
        counters: e.counters.len()
            + e.relations
                .iter()
                .filter(|r| r.on_delete.enforced())
                .count(),
        expires: e.expires(),
        planned: planned(e),
    };
    let row = |method: String, access: Cost| Access {
        method,
        ops: access.operations(&shape),
        calls: match (access.round_trips(), access.calls()) {
            (trips, calls) if access == Cost::Delete && shape.planned => {
                format!("{trips} ({calls} on memory, redb, and Redis with delete plans)")
            }
            (trips, calls) if trips == calls => trips.to_string(),
            (trips, calls) => format!("{trips} ({calls} on memory, redb)"),
        },
    };
    let mut out = vec![
        row("create".into(), Cost::Create),
        row("get".into(), Cost::Get),
        row("get_many".into(), Cost::GetMany),
        row("update / modify".into(), Cost::Update),
        row("delete".into(), Cost::Delete),
    ];
    if let Some(a) = dependents(e, model) {
        out.push(a);
    }
    for ix in &e.indexes {
        out.push(if ix.unique {
            row(format!("find_{}", *ix.name), Cost::FindUnique)
        } else {
            row(format!("list_{}", *ix.name), Cost::ListCollection)
        });
    }
    for r in &e.relations {
        out.push(row(format!("list_by_{}", *r.name), Cost::ListCollection));
    }
    for c in &e.counters {
        let m = if c.sum.is_some() { "sum" } else { "count" };
        let read = if c.shards.is_some() {
            Cost::ReadShardedCounter
        } else {
            Cost::ReadCounter
        };
        out.push(row(format!("{m}_{}", *c.name), read));
    }
    out.extend(links::accesses(e, model, &row));
    out.push(row("list_all".into(), Cost::ListAll));
    if shape.expires {
        out.push(row("sweep_expired".into(), Cost::SweepExpired));
    }
    out
}

/// Where an entity's keys lie on a Redis Cluster, and how many sequential
/// round trips each of its commits takes there.
///
/// A key shares the record's slot when it carries the co-location tag; a
/// receipt is stored in its record's slot by the cluster store; the
/// discovery set is sharded over other slots. A commit whose only other
/// slots gain members takes 3 sequential steps (prepare the record's slot,
/// then the others, commit); any other commit across slots that adds
/// members takes 5 (the same, then apply, finish). Every write re-adds its
/// discovery member, so it always reaches one other slot; a
/// write of an entity with a change feed also appends to its stream, in a
/// slot of its own, after the commit point.
pub(crate) struct ClusterLayout {
    /// Keys in the record's slot (`record`, `unique by_email`, …).
    pub home: Vec<String>,
    /// Keys in other slots, the discovery set included.
    pub away: Vec<String>,
    /// Claims, index and relation entries and counters in other slots:
    /// those the co-location tag could bring home.
    pub away_derived: Vec<String>,
    /// Sequential round trips of a create.
    pub create: u8,
    /// Sequential round trips of an update, as a phrase.
    pub update: &'static str,
}

impl ClusterLayout {
    /// The layout of `e`.
    pub(crate) fn of(e: &Entity, model: &Model) -> Self {
        Self::from_rows(e, &rows(e, model))
    }

    fn from_rows(e: &Entity, rows: &[Row]) -> Self {
        let tag = e.colocate.as_ref().map(|c| format!("{{<{}>}}", c.as_str()));
        let name = |r: &Row| match r.pattern.rsplit_once('#') {
            Some((_, rest))
                if !matches!(r.kind, "discovery" | "ledger" | "receipt" | "registry") =>
            {
                let name = rest.split(':').nth(1).unwrap_or(rest);
                format!("{} {name}", r.kind)
            }
            _ => r.kind.to_owned(),
        };
        let (mut home, mut away, mut away_derived, mut kinds) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // A cluster keeps no delete plans.
        for r in rows.iter().filter(|r| r.kind != "plan") {
            let tagged = tag.as_ref().is_some_and(|t| r.pattern.contains(t.as_str()));
            if r.kind == "record" || r.kind == "receipt" || tagged {
                home.push(name(r));
            } else if r.kind == "discovery" {
                away.push("discovery (sharded)".to_owned());
            } else {
                kinds.push(r.kind);
                away.push(name(r));
                if r.kind != "ledger" {
                    away_derived.push(name(r));
                }
            }
        }
        // A create adds members elsewhere, and takes claims and moves
        // counters (a token each) only where those lie elsewhere. An update
        // that moves a claim, an entry or a counter lying elsewhere removes
        // or moves it after the commit point; one of an expiring entity
        // always moves its ledger entry and puts its claims again. A delete
        // always removes its discovery member.
        // A change feed is one stream in a slot of its own: every write
        // appends to it after the commit point (in step 3).
        let feed = e.feed.is_some();
        if feed {
            away.push("change feed (stream)".to_owned());
        }
        // A write that adds members in other slots (the discovery member,
        // re-added by every create and update) prepares its record's slot
        // first, then the others: one step more than a prepare of every
        // slot at once.
        let create = if feed || kinds.iter().any(|k| *k == "unique" || *k == "counter") {
            5
        } else {
            3
        };
        let update = match (kinds.is_empty() && !feed, e.expires()) {
            (true, _) => "3",
            (false, true) => "5",
            (false, false) if feed => "5",
            (false, false) => "5 (3 when it moves nothing kept in another slot)",
        };
        ClusterLayout {
            home,
            away,
            away_derived,
            create,
            update,
        }
    }

    /// The layout as one sentence.
    fn note(&self) -> String {
        let elsewhere = if self.away.is_empty() {
            "nothing".to_owned()
        } else {
            self.away.join(", ")
        };
        format!(
            "On a Redis Cluster: in the record's slot: {}; elsewhere: {elsewhere}. Sequential round \
             trips per commit, after the reads above: create {}, update {}, delete 4 \
             (each step sends one script to every slot it concerns at once, but a write that \
             adds members in other slots prepares its record's slot before the others).",
            self.home.join(", "),
            self.create,
            self.update,
        )
    }
}

/// `text` broken into lines of at most `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        if line > 0 && line + 1 + word.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out.push('\n');
    out
}

/// The width of an aligned column: its longest cell, but never more than a
/// screen (longer cells overflow; a width past `u16::MAX` would not format).
fn column_width(lengths: impl Iterator<Item = usize>) -> usize {
    lengths.max().unwrap_or(0).min(80)
}

/// The store whose layout and costs the report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Store {
    /// Redis and Redis Cluster keys and round trips, with the in-process
    /// calls of redb and memory.
    #[default]
    Redis,
    /// DynamoDB (`DynamoStore`): the items of each key, the requests,
    /// capacity units and transaction actions of each access pattern.
    Dynamodb,
}

/// The report for a whole model, for `store`. The Mermaid diagram is the
/// same for every store.
pub fn report_for(model: &Model, format: Format, store: Store) -> String {
    match (store, format) {
        (Store::Dynamodb, Format::Text | Format::Markdown) => dynamo::report(model, format),
        _ => report(model, format),
    }
}

/// The largest write of `e` on DynamoDB (`create`, `update` or `delete`)
/// and the actions of its one `TransactWriteItems`: an update counted as
/// moving every derived value it can, a delete without the link
/// collections its record may be in.
pub(crate) fn dynamo_largest_write(e: &Entity, model: &Model) -> (&'static str, u32) {
    dynamo::largest_write(&dynamo::shape(e, model))
}

/// The report for a whole model (Redis, redb and memory).
pub fn report(model: &Model, format: Format) -> String {
    if format == Format::Mermaid {
        return mermaid::diagram(model);
    }
    let mut out = String::new();
    for e in model.entities.iter().filter(|e| e.key.is_some()) {
        let rows = rows(e, model);
        let acc = accesses(e, model);
        match format {
            Format::Markdown => {
                out.push_str(&format!(
                    "## {}\n\n| kind | key | example | holds |\n|---|---|---|---|\n",
                    *e.name
                ));
                for r in &rows {
                    out.push_str(&format!(
                        "| {} | `{}` | `{}` | {} |\n",
                        r.kind, r.pattern, r.example, r.note
                    ));
                }
                out.push_str("\n| access | store operations | round trips (redis; memory and redb make as many calls unless noted) |\n|---|---|---|\n");
                for a in &acc {
                    out.push_str(&format!("| `{}` | {} | {} |\n", a.method, a.ops, a.calls));
                }
                out.push_str(&format!(
                    "\n{}\n",
                    ClusterLayout::from_rows(e, &rows).note()
                ));
                out.push('\n');
            }
            Format::Text => {
                out.push_str(&format!("{}\n", *e.name));
                let w = column_width(rows.iter().map(|r| r.pattern.len()));
                for r in &rows {
                    out.push_str(&format!(
                        "  {:<9}  {:<w$}  e.g. {}\n             {:<w$}  {}\n",
                        r.kind, r.pattern, r.example, "", r.note
                    ));
                }
                out.push_str("  access patterns (round trips on Redis; redb and memory make as many in-process calls unless noted):\n");
                let w = column_width(acc.iter().map(|a| a.method.len()));
                let c = column_width(acc.iter().map(|a| a.calls.len()));
                for a in &acc {
                    out.push_str(&format!(
                        "    {:<w$}  {:<c$}  {}\n",
                        a.method, a.calls, a.ops
                    ));
                }
                let text = ClusterLayout::from_rows(e, &rows).note();
                for line in wrap(&text, 96).lines() {
                    out.push_str(&format!("  {line}\n"));
                }
                out.push('\n');
            }
            Format::Mermaid => {}
        }
    }
    out.push_str(&tallies::report(model, format));
    let footnote = cost::footnote();
    out.push_str(&match format {
        Format::Markdown => format!("{footnote}\n"),
        Format::Text | Format::Mermaid => wrap(&footnote, 100),
    });
    out
}
