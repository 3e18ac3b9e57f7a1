//! The rows of `links:` in the key report: on each entity that takes part
//! in a link, its registry, and per link (its own, and those to it under
//! their inverse names) its collection, its count and, on the declaring
//! side, the edge of each pair; and the link methods with their cost.

use kvmodel_codegen::ir::{Entity, FieldExpr, Link, Model, Segment};
use kvmodel_runtime::__private::{Derived, KeyBuilder, cost::Access as Cost};

use super::{Access, Row, part};

/// The links of the model on `e`'s side: `(name, far entity, link, declared
/// here)`, its own first.
fn sides<'m>(e: &Entity, model: &'m Model) -> Vec<(String, String, &'m Link, bool)> {
    let mut out = Vec::new();
    for x in &model.entities {
        for l in &x.links {
            if *x.name == *e.name {
                out.push((l.name.value.clone(), l.to_name().to_owned(), l, true));
            }
        }
    }
    for x in &model.entities {
        for l in x.links.iter().filter(|l| l.to_name() == e.name.as_str()) {
            out.push((l.inverse.value.clone(), x.name.value.clone(), l, false));
        }
    }
    out
}

/// The record key of `e` as a pattern and an example, without the
/// namespace.
fn record(e: &Entity, model: &Model) -> (String, String) {
    let (mut p, mut x) = (Vec::new(), Vec::new());
    for s in e.key.iter().flat_map(|k| &k.segments) {
        let (a, b) = match s {
            Segment::Literal(l) => (l.clone(), l.clone()),
            Segment::Field(f) => part(e, &FieldExpr::Field(f.clone()), model),
        };
        p.push(a);
        x.push(b);
    }
    (p.join(":"), x.join(":"))
}

/// The link rows of `e`.
pub(super) fn rows(e: &Entity, model: &Model, ns: &str, space: &str) -> Vec<Row> {
    let sides = sides(e, model);
    if sides.is_empty() {
        return Vec::new();
    }
    let (rp, rx) = record(e, model);
    let key = |kind: Derived, name: &str| {
        let mut b = KeyBuilder::derived(ns, space, kind);
        if !name.is_empty() {
            b = b.lit(name);
        }
        let base = b.finish();
        (format!("{base}:{rp}"), format!("{base}:{rx}"))
    };
    let mut out = Vec::new();
    let (p, x) = key(Derived::Registry, "");
    let mut note = "JSON: the record's incarnation and the names of its link collections; written by its first link, read and removed by its delete with the collections and counts it names".to_owned();
    if expires(e) {
        note.push_str("; no TTL: when the record expires, its expiry sweep removes it with its collections, counts and edges and the far entries naming the record, which listings skip until then");
    }
    out.push(Row {
        kind: "registry",
        pattern: p,
        example: x,
        note,
    });
    for (name, far, l, own) in &sides {
        let far_entity = model.entities.iter().find(|f| *f.name == **far);
        let (fp, fx) = far_entity.map(|f| record(f, model)).unwrap_or_default();
        let far_ns = far_entity
            .and_then(|f| f.namespace.as_ref())
            .map(|n| n.value.clone())
            .unwrap_or_default();
        let (p, x) = key(Derived::Link, name);
        let mut note = format!(
            "sorted collection of the keys of the linked {far} records (link `{}`), each under its edge key, so sorted by {far} key; entries of {far} records deleted since are skipped and removed by listings and reconcile",
            l.name.as_str()
        );
        if far_entity.is_some_and(expires) {
            note.push_str(&format!(
                "; entries of {far} records that expired are skipped by listings and removed by the {far} expiry sweep"
            ));
        }
        out.push(Row {
            kind: "link",
            pattern: p,
            example: x,
            note,
        });
        let (p, x) = key(Derived::LinkCount, name);
        out.push(Row {
            kind: "linkcount",
            pattern: p,
            example: x,
            note: format!("entries in the `{name}` collection, decimal integer; moved in the commit that adds or removes one"),
        });
        if *own {
            let (p, x) = key(Derived::Edge, name);
            out.push(Row {
                kind: "edge",
                pattern: format!("{p}:{far_ns}:{fp}"),
                example: format!("{x}:{far_ns}:{fx}"),
                note: "JSON: the incarnations, keys and registries of the pair it links; link and unlink condition on it, so each entry is counted once".into(),
            });
        }
    }
    out
}

/// Whether the records of `e` expire (an entity `ttl` or an expiry field).
fn expires(e: &Entity) -> bool {
    e.ttl.is_some() || e.expiry_field().is_some()
}

/// The link methods of `e`, with the access pattern each is.
pub(super) fn methods(e: &Entity, model: &Model) -> Vec<(String, Cost)> {
    let mut out = Vec::new();
    for (name, _, _, own) in sides(e, model) {
        if own {
            out.push((format!("link_{name}"), Cost::Link));
            out.push((format!("unlink_{name}"), Cost::Unlink));
        }
        out.push((format!("list_{name}"), Cost::ListLinked));
        out.push((format!("count_{name}"), Cost::CountLinked));
    }
    out
}

/// The link methods of `e` and what they cost.
pub(super) fn accesses(
    e: &Entity,
    model: &Model,
    row: &dyn Fn(String, Cost) -> Access,
) -> Vec<Access> {
    methods(e, model)
        .into_iter()
        .map(|(m, c)| row(m, c))
        .collect()
}
