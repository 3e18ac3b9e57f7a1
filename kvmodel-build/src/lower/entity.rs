//! Lowering of one entity: key, version, encoding, TTL, fields, indexes,
//! counters, relations and migration steps.

use serde_saphyr::Spanned;

use kvmodel_codegen::ir::{
    Counter, Entity, Field, Index, KeyTemplate, Migration, Relation, Ttl, TypeDef, default_since,
};
use kvmodel_codegen::origin::{Diagnostic, Sp};
use kvmodel_codegen::vocab::{self, COUNTER_KEYS, INDEX_KEYS, MIGRATION_KEYS, RELATION_KEYS};

use super::{ENTITY_KEYS, Lower, Node, TTL_KEYS, described};
use crate::node::Value;

impl Lower<'_> {
    pub(super) fn entity(
        &mut self,
        name: &Spanned<String>,
        body: &Node,
        namespace: Option<Sp<String>>,
        types: &[TypeDef],
    ) -> Option<Entity> {
        let origin = self.loc.at(name);
        self.rule(vocab::upper_camel_case("entity", &name.value), &origin);
        let vis = syn::parse_quote!(pub);
        let mut e = Entity::new(Sp::new(name.value.clone(), origin.clone()), vis);
        e.namespace = namespace;
        let what = format!("entity `{}`", name.value);
        for (k, v) in self.entries(body, ENTITY_KEYS, &what) {
            match k.value.as_str() {
                "description" => e.description = self.description(v),
                "key" => {
                    e.key = self.string(v, "`key`").map(KeyTemplate::new);
                }
                "version" => {
                    if let Some(n) = self.version(v, "`version`") {
                        e.version = n;
                    }
                }
                "encoding" => {
                    if let Some(enc) = self.word(v, "`encoding`") {
                        e.encoding = enc;
                    }
                }
                "ttl" => e.ttl = self.ttl(v),
                "colocate" => e.colocate = self.name(v, "`colocate`"),
                "fields" => e.fields = self.fields(v, types),
                "indexes" => e.indexes = self.named(v, "index", |l, n, b| l.index(n, b)),
                "counters" => e.counters = self.named(v, "counter", |l, n, b| l.counter(n, b)),
                "relations" => e.relations = self.named(v, "relation", |l, n, b| l.relation(n, b)),
                "migrations" => e.migrations = self.migrations(v, &e.fields, types),
                _ => {}
            }
        }
        if e.key.is_none() {
            self.diags.push(
                Diagnostic::error(
                    "E011",
                    &origin,
                    format!("entity `{}` needs a `key` template", name.value),
                )
                .help("add e.g. `key: \"user:{id}\"`"),
            );
        }
        Some(e)
    }

    fn named<T>(
        &mut self,
        n: &Node,
        what: &str,
        mut f: impl FnMut(&mut Self, Sp<String>, &Node) -> Option<T>,
    ) -> Vec<T> {
        let Value::Map(list) = &n.value else {
            self.wrong(
                n,
                &format!("a mapping of {what} names to {what} declarations"),
            );
            return Vec::new();
        };
        list.iter()
            .filter_map(|(name, body)| {
                let name = Sp::new(name.value.clone(), self.loc.at(name));
                f(self, name, body)
            })
            .collect()
    }

    fn since(&mut self, v: &Node) -> Sp<u32> {
        self.version(v, "`since`").unwrap_or_else(default_since)
    }

    fn index(&mut self, name: Sp<String>, body: &Node) -> Option<Index> {
        let mut ix = Index::new(name);
        let what = format!("index `{}`", *ix.name);
        for (k, v) in self.entries(body, &described(INDEX_KEYS), &what) {
            match k.value.as_str() {
                "description" => ix.description = self.description(v),
                "fields" => {
                    ix.fields = self.string_list(v, "`fields`");
                }
                "unique" => ix.unique = self.boolean(v, "`unique`").unwrap_or(false),
                "normalize" => ix.normalize = self.word(v, "`normalize`"),
                "order_by" => ix.order_by = self.field_expr(v, "`order_by`"),
                "since" => ix.since = self.since(v),
                _ => {}
            }
        }
        Some(ix)
    }

    fn counter(&mut self, name: Sp<String>, body: &Node) -> Option<Counter> {
        let mut c = Counter::new(name);
        let what = format!("counter `{}`", *c.name);
        for (k, v) in self.entries(body, &described(COUNTER_KEYS), &what) {
            match k.value.as_str() {
                "description" => c.description = self.description(v),
                "group_by" => {
                    let items: Vec<&Node> = match &v.value {
                        Value::Seq(items) => items.iter().collect(),
                        _ => vec![v],
                    };
                    c.group_by = items
                        .into_iter()
                        .filter_map(|i| self.field_expr(i, "`group_by`"))
                        .collect();
                }
                "sum" => c.sum = self.name(v, "`sum`"),
                "since" => c.since = self.since(v),
                _ => {}
            }
        }
        Some(c)
    }

    fn relation(&mut self, name: Sp<String>, body: &Node) -> Option<Relation> {
        let what = format!("relation `{}`", *name);
        let (mut belongs_to, mut by, mut order_by, mut since) = (None, None, None, default_since());
        let mut description = None;
        for (k, v) in self.entries(body, &described(RELATION_KEYS), &what) {
            match k.value.as_str() {
                "description" => description = self.description(v),
                "belongs_to" => belongs_to = self.name(v, "`belongs_to`"),
                "by" => by = self.name(v, "`by`"),
                "order_by" => order_by = self.field_expr(v, "`order_by`"),
                "since" => since = self.since(v),
                _ => {}
            }
        }
        let (Some(belongs_to), Some(by)) = (belongs_to, by) else {
            self.report(vocab::relation_without_parent(&name), &name.origin);
            return None;
        };
        let mut r = Relation::new(name, belongs_to, by);
        r.order_by = order_by;
        r.since = since;
        r.description = description;
        Some(r)
    }

    fn ttl(&mut self, n: &Node) -> Option<Ttl> {
        let (after, jitter) = match &n.value {
            Value::Str(_) => (self.string(n, "`ttl`"), None),
            _ => {
                let (mut after, mut jitter) = (None, None);
                for (k, v) in self.entries(n, TTL_KEYS, "`ttl`") {
                    match k.value.as_str() {
                        "after" => after = self.string(v, "`ttl.after`"),
                        "jitter" => jitter = self.string(v, "`ttl.jitter`"),
                        _ => {}
                    }
                }
                (after, jitter)
            }
        };
        let Some(after) = after else {
            let at = self.loc.at(n);
            let m = vocab::missing(
                "`ttl`",
                "`after`, the duration, such as `ttl: { after: 30m, jitter: 10% }`",
            );
            self.report(m, &at);
            return None;
        };
        Ttl::parse(after, jitter, self.diags)
    }

    fn migrations(&mut self, n: &Node, fields: &[Field], types: &[TypeDef]) -> Vec<Migration> {
        let Value::Seq(items) = &n.value else {
            self.wrong(n, "a list of migration steps");
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            let origin = self.loc.at(item);
            let mut m = Migration::new(default_since(), origin.clone());
            let (mut from, mut has_from) = (None, false);
            for (k, v) in self.entries(item, MIGRATION_KEYS, "a migration step") {
                match k.value.as_str() {
                    "from" => {
                        has_from = true;
                        from = self.version(v, "`from`");
                    }
                    "rename" => {
                        if let Value::Map(pairs) = &v.value {
                            for (old, new) in pairs {
                                if let Some(new) = self.name(new, "the new field name") {
                                    m.rename
                                        .push((Sp::new(old.value.clone(), self.loc.at(old)), new));
                                }
                            }
                        } else {
                            self.wrong(v, "a mapping `old_name: new_name`");
                        }
                    }
                    "add" => {
                        if let Value::Map(pairs) = &v.value {
                            for (f, val) in pairs {
                                let at = self.loc.at(val);
                                if let Some(field) = fields.iter().find(|x| *x.name == f.value) {
                                    self.check_value(
                                        &val.value,
                                        &field.ty,
                                        field.optional,
                                        types,
                                        &at,
                                        &format!("the value added for `{}`", f.value),
                                    );
                                }
                                m.add.push((
                                    Sp::new(f.value.clone(), self.loc.at(f)),
                                    Sp::new(val.value.to_json(), at),
                                ));
                            }
                        } else {
                            self.wrong(v, "a mapping `field: value`");
                        }
                    }
                    "remove" => m.remove = self.string_list(v, "`remove`"),
                    _ => {}
                }
            }
            let Some(from) = from else {
                if !has_from {
                    self.report(vocab::migration_without_from(), &origin);
                }
                continue;
            };
            m.from = from;
            out.push(m);
        }
        out
    }
}
