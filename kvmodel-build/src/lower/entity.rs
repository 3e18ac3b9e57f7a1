//! Lowering of one entity: key, version, encoding, TTL, fields, indexes,
//! counters, relations and migration steps.

use kvmodel_codegen::ir::{
    Compress, Counter, Entity, Feed, Field, Index, KeyTemplate, Link, Lint, Migration, Relation,
    Ttl, TypeDef, default_since,
};
use kvmodel_codegen::origin::{Diagnostic, Sp};
use kvmodel_codegen::vocab::{self, COUNTER_KEYS, INDEX_KEYS, MIGRATION_KEYS, RELATION_KEYS};

use super::{ENTITY_KEYS, FEED_KEYS, Lower, Node, TTL_KEYS, described};
use kvmodel_codegen::value::Value;

impl Lower<'_> {
    pub(super) fn entity(
        &mut self,
        name: &Sp<String>,
        body: &Node,
        namespace: Option<Sp<String>>,
        allow: &[Sp<Lint>],
        types: &[TypeDef],
    ) -> Option<Entity> {
        let origin = name.origin.clone();
        self.rule(vocab::upper_camel_case("entity", &name.value), &origin);
        let vis = syn::parse_quote!(pub);
        let mut e = Entity::new(Sp::new(name.value.clone(), origin.clone()), vis);
        e.namespace = namespace;
        let what = format!("entity `{}`", name.value);
        for (k, v) in self.entries(body, ENTITY_KEYS, &what) {
            match k.value.as_str() {
                "description" => e.description = self.read().description(v),
                "key" => {
                    e.key = self.read().string(v, "`key`").map(KeyTemplate::new);
                }
                "version" => {
                    if let Some(n) = self.read().version(v, "`version`") {
                        e.version = n;
                    }
                }
                "encoding" => {
                    if let Some(enc) = self.read().word(v, "`encoding`") {
                        e.encoding = enc;
                    }
                }
                "ttl" => e.ttl = self.ttl(v),
                "feed" => e.feed = self.feed(v),
                "colocate" => e.colocate = self.read().name(v, "`colocate`"),
                "max_size" => e.max_size = self.read().size(v, "`max_size`"),
                "compress" => e.compress = self.compress(v),
                "fields" => e.fields = self.fields(v, types, &mut e.broken_fields),
                "indexes" => e.indexes = self.named(v, "index", |l, n, b| l.index(n, b)),
                "counters" => e.counters = self.named(v, "counter", |l, n, b| l.counter(n, b)),
                "relations" => e.relations = self.named(v, "relation", |l, n, b| l.relation(n, b)),
                "links" => e.links = self.named(v, "link", |l, n, b| l.link(n, b)),
                "migrations" => e.migrations = self.migrations(v, &e.fields, types),
                "allow" => e.allow = self.read().words(v, "`allow`"),
                _ => {}
            }
        }
        // The file's `allow:` holds for each of its entities.
        for a in allow {
            if !e.allow.iter().any(|x| x.value == a.value) {
                e.allow.push(a.clone());
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
            .filter_map(|(name, body)| f(self, name.clone(), body))
            .collect()
    }

    fn since(&mut self, v: &Node) -> Sp<u32> {
        self.read()
            .version(v, "`since`")
            .unwrap_or_else(default_since)
    }

    fn index(&mut self, name: Sp<String>, body: &Node) -> Option<Index> {
        let mut ix = Index::new(name);
        let what = format!("index `{}`", *ix.name);
        let mut refused = false;
        for (k, v) in self.entries(body, &described(INDEX_KEYS), &what) {
            match k.value.as_str() {
                "description" => ix.description = self.read().description(v),
                "fields" => {
                    ix.fields = self.read().field_exprs(v, "`fields`");
                    refused |= lost_items(v, ix.fields.len());
                }
                "unique" => ix.unique = self.read().boolean(v, "`unique`").unwrap_or(false),
                "normalize" => ix.normalize = self.read().word(v, "`normalize`"),
                "order_by" => ix.order_by = self.read().field_expr(v, "`order_by`"),
                "keep" => ix.keep = self.read().bounded(v, "`keep`", 1, vocab::MAX_KEEP),
                "since" => ix.since = self.since(v),
                "allow" => ix.allow = self.read().words(v, "`allow`"),
                _ => {}
            }
        }
        // An index whose fields were refused (and reported) is left out, so
        // that no follow-on error says it has none.
        (!refused).then_some(ix)
    }

    fn counter(&mut self, name: Sp<String>, body: &Node) -> Option<Counter> {
        let mut c = Counter::new(name);
        let what = format!("counter `{}`", *c.name);
        let mut refused = false;
        for (k, v) in self.entries(body, &described(COUNTER_KEYS), &what) {
            match k.value.as_str() {
                "description" => c.description = self.read().description(v),
                "group_by" => {
                    c.group_by = self.read().field_exprs(v, "`group_by`");
                    refused |= lost_items(v, c.group_by.len());
                }
                "sum" => c.sum = self.read().name(v, "`sum`"),
                "shards" => c.shards = self.read().bounded(v, "`shards`", 2, vocab::MAX_SHARDS),
                "keep" => c.keep = self.read().word(v, "`keep`"),
                "since" => c.since = self.since(v),
                "allow" => c.allow = self.read().words(v, "`allow`"),
                _ => {}
            }
        }
        // Left out when a group was refused: it is no ungrouped counter.
        (!refused).then_some(c)
    }

    fn relation(&mut self, name: Sp<String>, body: &Node) -> Option<Relation> {
        let what = format!("relation `{}`", *name);
        let (mut belongs_to, mut by, mut order_by, mut since) = (None, None, None, default_since());
        let mut keep = None;
        let mut on_delete = None;
        let mut description = None;
        for (k, v) in self.entries(body, &described(RELATION_KEYS), &what) {
            match k.value.as_str() {
                "description" => description = self.read().description(v),
                "belongs_to" => belongs_to = self.read().name(v, "`belongs_to`"),
                "by" => by = self.read().name(v, "`by`"),
                "order_by" => order_by = self.read().field_expr(v, "`order_by`"),
                "keep" => keep = self.read().bounded(v, "`keep`", 1, vocab::MAX_KEEP),
                "on_delete" => on_delete = self.read().word(v, "`on_delete`"),
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
        r.keep = keep;
        if let Some(a) = on_delete {
            r.on_delete = a;
        }
        r.since = since;
        r.description = description;
        Some(r)
    }

    /// `compress: { codec: zstd, above: 1KiB }`.
    fn compress(&mut self, n: &Node) -> Option<Compress> {
        let (mut codec, mut above, mut given) = (None, None, (false, false));
        if !matches!(n.value.typed(), Value::Map(_) | Value::Null) {
            // Reported as a value of the wrong kind, and only that.
            self.entries(n, vocab::COMPRESS_KEYS, "`compress`");
            return None;
        }
        for (k, v) in self.entries(n, vocab::COMPRESS_KEYS, "`compress`") {
            match k.value.as_str() {
                "codec" => {
                    given.0 = true;
                    codec = self.read().word(v, "`codec`");
                }
                "above" => {
                    given.1 = true;
                    above = self.read().size(v, "`above`");
                }
                _ => {}
            }
        }
        vocab::compress(codec, above, n.origin.clone(), self.diags, given)
    }

    fn link(&mut self, name: Sp<String>, body: &Node) -> Option<Link> {
        let what = format!("link `{}`", *name);
        let (mut to, mut inverse, mut description) = (None, None, None);
        for (k, v) in self.entries(body, &described(vocab::LINK_KEYS), &what) {
            match k.value.as_str() {
                "description" => description = self.read().description(v),
                "to" => to = self.read().name(v, "`to`"),
                "inverse" => inverse = self.read().name(v, "`inverse`"),
                _ => {}
            }
        }
        let (Some(to), Some(inverse)) = (to, inverse) else {
            self.report(vocab::link_without_end(&name), &name.origin);
            return None;
        };
        let mut l = Link::new(name, to, inverse);
        l.description = description;
        Some(l)
    }

    fn ttl(&mut self, n: &Node) -> Option<Ttl> {
        let (after, jitter) = match &n.value {
            Value::Str(_) | Value::Plain { .. } => (self.read().string(n, "`ttl`"), None),
            _ => {
                let (mut after, mut jitter) = (None, None);
                for (k, v) in self.entries(n, TTL_KEYS, "`ttl`") {
                    match k.value.as_str() {
                        "after" => after = self.read().string(v, "`ttl.after`"),
                        "jitter" => jitter = self.read().string(v, "`ttl.jitter`"),
                        _ => {}
                    }
                }
                (after, jitter)
            }
        };
        let Some(after) = after else {
            let at = n.origin.clone();
            let m = vocab::missing(
                "`ttl`",
                "`after`, the duration, such as `ttl: { after: 30m, jitter: 10% }`",
            );
            self.report(m, &at);
            return None;
        };
        Ttl::parse(after, jitter, self.diags)
    }

    fn feed(&mut self, n: &Node) -> Option<Feed> {
        let mut retain = None;
        for (k, v) in self.entries(n, FEED_KEYS, "`feed`") {
            if k.value == "retain" {
                retain = self.read().string(v, "`feed.retain`");
            }
        }
        let Some(retain) = retain else {
            let at = n.origin.clone();
            let m = vocab::missing(
                "`feed`",
                "`retain`, how long events are kept, such as `feed: { retain: 7d }`",
            );
            self.report(m, &at);
            return None;
        };
        Feed::parse(retain, self.diags)
    }

    fn migrations(&mut self, n: &Node, fields: &[Field], types: &[TypeDef]) -> Vec<Migration> {
        let Value::List(items) = &n.value else {
            self.wrong(n, "a list of migration steps");
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            let origin = item.origin.clone();
            let mut m = Migration::new(default_since(), origin.clone());
            let (mut from, mut has_from) = (None, false);
            for (k, v) in self.entries(item, MIGRATION_KEYS, "a migration step") {
                match k.value.as_str() {
                    "from" => {
                        has_from = true;
                        from = self.read().version(v, "`from`");
                    }
                    "rename" => {
                        if let Value::Map(pairs) = &v.value {
                            for (old, new) in pairs {
                                if let Some(new) = self.read().name(new, "the new field name") {
                                    m.rename.push((old.clone(), new));
                                }
                            }
                        } else {
                            self.wrong(v, "a mapping `old_name: new_name`");
                        }
                    }
                    "add" => {
                        if let Value::Map(pairs) = &v.value {
                            for (f, val) in pairs {
                                let what = format!("the value added for `{}`", f.value);
                                let value = match fields.iter().find(|x| *x.name == f.value) {
                                    Some(field) => self.typed_value(
                                        val,
                                        &field.ty,
                                        field.optional,
                                        types,
                                        &what,
                                    ),
                                    None => kvmodel_codegen::value::to_json(val)
                                        .unwrap_or(serde_json::Value::Null),
                                };
                                m.add.push((f.clone(), Sp::new(value, val.origin.clone())));
                            }
                        } else {
                            self.wrong(v, "a mapping `field: value`");
                        }
                    }
                    "remove" => m.remove = self.read().names(v, "`remove`"),
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

/// Whether reading the list (or single item) `v` kept fewer than it holds:
/// an item was refused, with an error of its own.
fn lost_items(v: &Node, kept: usize) -> bool {
    let given = match &v.value {
        Value::List(items) => items.len(),
        _ => 1,
    };
    kept < given
}
