//! Lowering of one entity: key, version, encoding, TTL, fields, indexes,
//! counters, relations and migration steps.

use serde_saphyr::Spanned;

use kvmodel_codegen::ir::{
    Counter, Encoding, Entity, Field, Index, KeyTemplate, Migration, Normalize, Relation, Ttl,
    TypeDef,
};
use kvmodel_codegen::origin::{Diagnostic, Origin, Sp, suggestion};

use super::{
    COUNTER_KEYS, ENTITY_KEYS, INDEX_KEYS, Lower, MIGRATION_KEYS, Node, RELATION_KEYS, TTL_KEYS,
};
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
        self.require_camel("entity", &name.value, &origin);
        let mut e = Entity::new(Sp::new(name.value.clone(), origin.clone()), "pub");
        e.namespace = namespace;
        let what = format!("entity `{}`", name.value);
        for (k, v) in self.entries(body, ENTITY_KEYS, &what) {
            match k.value.as_str() {
                "key" => {
                    e.key = self.string(v, "`key`").map(KeyTemplate::new);
                }
                "version" => {
                    if let Some(n) = self.uint(v, "`version`") {
                        e.version = n;
                    }
                }
                "encoding" => {
                    if let Some(s) = self.string(v, "`encoding`") {
                        match s.as_str() {
                            "json" => e.encoding = Sp::new(Encoding::Json, s.origin),
                            "msgpack" => e.encoding = Sp::new(Encoding::MsgPack, s.origin),
                            other => {
                                let hint = suggestion(other, ["json", "msgpack"]);
                                self.err("E010", &s.origin, format!("unknown encoding `{other}`{hint}; expected `json` or `msgpack`"));
                            }
                        }
                    }
                }
                "ttl" => e.ttl = self.ttl(v),
                "colocate" => e.colocate = self.string(v, "`colocate`"),
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
        self.uint(v, "`since`")
            .unwrap_or_else(|| Sp::new(1, Origin::Unknown))
    }

    fn index(&mut self, name: Sp<String>, body: &Node) -> Option<Index> {
        let mut ix = Index {
            origin: name.origin.clone(),
            name,
            fields: Vec::new(),
            unique: false,
            normalize: None,
            order_by: None,
            since: Sp::new(1, Origin::Unknown),
        };
        let what = format!("index `{}`", *ix.name);
        for (k, v) in self.entries(body, INDEX_KEYS, &what) {
            match k.value.as_str() {
                "fields" => {
                    ix.fields = self.string_list(v, "`fields`");
                }
                "unique" => ix.unique = self.boolean(v, "`unique`").unwrap_or(false),
                "normalize" => {
                    if let Some(s) = self.string(v, "`normalize`") {
                        if s.as_str() == "lowercase" {
                            ix.normalize = Some(Sp::new(Normalize::Lowercase, s.origin));
                        } else {
                            self.err(
                                "E010",
                                &s.origin,
                                format!("unknown normalization `{}`; expected `lowercase`", *s),
                            );
                        }
                    }
                }
                "order_by" => ix.order_by = self.field_expr(v, "`order_by`"),
                "since" => ix.since = self.since(v),
                _ => {}
            }
        }
        Some(ix)
    }

    fn counter(&mut self, name: Sp<String>, body: &Node) -> Option<Counter> {
        let mut c = Counter {
            origin: name.origin.clone(),
            name,
            group_by: Vec::new(),
            sum: None,
            since: Sp::new(1, Origin::Unknown),
        };
        let what = format!("counter `{}`", *c.name);
        for (k, v) in self.entries(body, COUNTER_KEYS, &what) {
            match k.value.as_str() {
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
                "sum" => c.sum = self.string(v, "`sum`"),
                "since" => c.since = self.since(v),
                _ => {}
            }
        }
        Some(c)
    }

    fn relation(&mut self, name: Sp<String>, body: &Node) -> Option<Relation> {
        let what = format!("relation `{}`", *name);
        let (mut belongs_to, mut by, mut order_by, mut since) =
            (None, None, None, Sp::new(1, Origin::Unknown));
        for (k, v) in self.entries(body, RELATION_KEYS, &what) {
            match k.value.as_str() {
                "belongs_to" => belongs_to = self.string(v, "`belongs_to`"),
                "by" => by = self.string(v, "`by`"),
                "order_by" => order_by = self.field_expr(v, "`order_by`"),
                "since" => since = self.since(v),
                _ => {}
            }
        }
        let (Some(belongs_to), Some(by)) = (belongs_to, by) else {
            self.err(
                "E011",
                &name.origin,
                format!("{what} needs `belongs_to: Entity` and `by: field`"),
            );
            return None;
        };
        Some(Relation {
            origin: name.origin.clone(),
            name,
            belongs_to,
            by,
            order_by,
            since,
        })
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
            self.err(
                "E011",
                &at,
                "`ttl` needs `after`, e.g. `ttl: { after: 30m, jitter: 10% }`",
            );
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
            let mut m = Migration {
                from: Sp::new(0, origin.clone()),
                rename: Vec::new(),
                add: Vec::new(),
                remove: Vec::new(),
                origin: origin.clone(),
            };
            let mut has_from = false;
            for (k, v) in self.entries(item, MIGRATION_KEYS, "a migration step") {
                match k.value.as_str() {
                    "from" => {
                        if let Some(f) = self.uint(v, "`from`") {
                            m.from = f;
                            has_from = true;
                        }
                    }
                    "rename" => {
                        if let Value::Map(pairs) = &v.value {
                            for (old, new) in pairs {
                                if let Some(new) = self.string(new, "the new field name") {
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
            if !has_from {
                self.err(
                    "E011",
                    &origin,
                    "a migration step needs `from: N`, the version it upgrades",
                );
                continue;
            }
            out.push(m);
        }
        out
    }
}
