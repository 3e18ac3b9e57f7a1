//! The key layout: record keys `{namespace}:{template}` and derived keys
//! `{namespace}:{key space}#{kind}:{name}:{component…}`.
//!
//! The key space is the key template's literal segments (`user` for
//! `user:{id}`), never a Rust type name, so renaming a struct changes no key.
//! The `#` is escaped in every user component and never appears in a
//! literal, so no record key can reach a derived key and no component can
//! end one early.

use super::{KeyPart, unescape};

/// The kinds of derived key, each with its spelling after the `#`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Derived {
    /// A unique claim: holds the key of the record that owns a value.
    Claim,
    /// A sorted collection of an ordered index.
    Index,
    /// A sorted collection of a relation (the children of one parent).
    Relation,
    /// A counter.
    Counter,
    /// The discovery set of every record of an entity.
    Discovery,
    /// The expiry ledger of an expiring entity: a sorted collection of
    /// record keys under the time their write is due to expire.
    Expiry,
    /// A receipt: what the last write of one expiring record contributed
    /// (claims, collection members, counter amounts) and when it is due,
    /// so that its expiry can undo exactly that.
    Receipt,
    /// The state of the entity's indexes, relations and counters: which
    /// are readable and which are still being backfilled.
    State,
    /// The link collection of one record (`links:`): a sorted collection
    /// of the records linked to it, each under its edge key.
    Link,
    /// The number of entries in one record's link collection.
    LinkCount,
    /// The link registry of one record: the names of its link collections
    /// and the incarnation they belong to.
    Registry,
    /// The edge of one linked pair: the incarnations of the two records it
    /// was written for.
    Edge,
    /// A standalone counter (a schema's namespace-level `counters:`):
    /// `{ns}:{key space}#tally:{{component:…}}`, its components in one
    /// hash tag so that its shards share a Redis Cluster slot.
    Tally,
    /// The delete plan of one record, on a store that keeps them
    /// ([`Store::delete_plans`](crate::Store::delete_plans)): the batch
    /// that deletes the record and its entries, written with each write of
    /// it, so that a delete commits in one round trip without reading the
    /// record first.
    DeletePlan,
}

impl Derived {
    /// The spelling in keys. It never changes between releases: stored data
    /// depends on it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Derived::Claim => "uniq",
            Derived::Index => "idx",
            Derived::Relation => "rel",
            Derived::Counter => "count",
            Derived::Discovery => "all",
            Derived::Expiry => "exp",
            Derived::Receipt => "rcpt",
            Derived::State => "state",
            Derived::Link => "link",
            Derived::LinkCount => "nlink",
            Derived::Registry => "links",
            Derived::Edge => "edge",
            Derived::Tally => "tally",
            Derived::DeletePlan => "drop",
        }
    }
}

/// Builds a key segment by segment.
///
/// Literal segments come from the schema (validated there); parts come from
/// user data and are escaped.
#[derive(Debug, Clone)]
pub struct KeyBuilder {
    buf: String,
}

impl KeyBuilder {
    /// Starts a key in `namespace`.
    pub fn new(namespace: &str) -> Self {
        let mut buf = String::with_capacity(48);
        buf.push_str(namespace);
        KeyBuilder { buf }
    }

    /// Starts a derived key (`{ns}:{key space}#{kind}`).
    pub fn derived(namespace: &str, key_space: &str, kind: Derived) -> Self {
        let mut b = KeyBuilder::new(namespace);
        b.buf.push(':');
        b.buf.push_str(key_space);
        b.buf.push('#');
        b.buf.push_str(kind.as_str());
        b
    }

    /// Appends a literal segment from the schema.
    pub fn lit(mut self, segment: &str) -> Self {
        self.buf.push(':');
        self.buf.push_str(segment);
        self
    }

    /// Appends an escaped component.
    pub fn part<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        self.buf.push(':');
        part.write_key(&mut self.buf);
        self
    }

    /// Appends a Redis Cluster hash tag segment `{…}` holding the escaped part.
    pub fn tag<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        self.buf.push_str(":{");
        part.write_key(&mut self.buf);
        self.buf.push('}');
        self
    }

    /// The finished key.
    pub fn finish(self) -> String {
        self.buf
    }
}

impl Derived {
    /// Every kind, for reading keys back.
    pub const ALL: [Derived; 14] = [
        Derived::Claim,
        Derived::Index,
        Derived::Relation,
        Derived::Counter,
        Derived::Discovery,
        Derived::Expiry,
        Derived::Receipt,
        Derived::State,
        Derived::Link,
        Derived::LinkCount,
        Derived::Registry,
        Derived::Edge,
        Derived::Tally,
        Derived::DeletePlan,
    ];
}

/// The keys an entity has besides its records and declared entries: its
/// discovery set, expiry ledger, receipts and index state, all under
/// `{namespace}:{key space}#`. Generated entities and the run-time model
/// spell them here, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space<'a> {
    /// The namespace.
    pub namespace: &'a str,
    /// The entity's key space (the literal segments of its key template).
    pub key_space: &'a str,
}

impl<'a> Space<'a> {
    /// The space of an entity.
    pub const fn new(namespace: &'a str, key_space: &'a str) -> Self {
        Space {
            namespace,
            key_space,
        }
    }

    /// A derived key of this space without a name.
    fn key(&self, kind: Derived) -> String {
        KeyBuilder::derived(self.namespace, self.key_space, kind).finish()
    }

    /// The discovery set listing every record.
    pub fn all_key(&self) -> String {
        self.key(Derived::Discovery)
    }

    /// The entity's change feed (`feed:`): its events, in commit order.
    pub fn feed_key(&self) -> String {
        format!("{}:{}#feed", self.namespace, self.key_space)
    }

    /// The expiry ledger: record keys under the time their last write is
    /// due to expire.
    pub fn ledger_key(&self) -> String {
        self.key(Derived::Expiry)
    }

    /// The state of the entity's indexes, relations and counters.
    pub fn state_key(&self) -> String {
        self.key(Derived::State)
    }

    /// The receipt of the record at `record_key`.
    pub fn receipt_key(&self, record_key: &str) -> String {
        let prefix = self.key(Derived::Receipt);
        let rest = record_key
            .strip_prefix(self.namespace)
            .and_then(|r| r.strip_prefix(':'))
            .unwrap_or(record_key);
        format!("{prefix}:{rest}")
    }

    /// The delete plan of the record at `record_key`
    /// ([`Derived::DeletePlan`]).
    pub fn plan_key(&self, record_key: &str) -> String {
        self.of_record(Derived::DeletePlan, "", record_key)
    }

    /// The key of a per-record derived key of kind `kind`: after
    /// `{ns}:{key space}#{kind}`, the name (when not empty), then the
    /// record key without its namespace, so a record's hash tag stays in it.
    pub fn of_record(&self, kind: Derived, name: &str, record_key: &str) -> String {
        let mut b = KeyBuilder::derived(self.namespace, self.key_space, kind);
        if !name.is_empty() {
            b = b.lit(name);
        }
        let rest = record_key
            .strip_prefix(self.namespace)
            .and_then(|r| r.strip_prefix(':'))
            .unwrap_or(record_key);
        format!("{}:{rest}", b.finish())
    }

    /// The record key a per-record derived key of kind `kind` and name
    /// `name` belongs to (the inverse of [`of_record`](Self::of_record)).
    pub fn record_of(&self, kind: Derived, name: &str, key: &str) -> Option<String> {
        let mut b = KeyBuilder::derived(self.namespace, self.key_space, kind);
        if !name.is_empty() {
            b = b.lit(name);
        }
        let rest = key.strip_prefix(&b.lit("").finish())?;
        Some(format!("{}:{rest}", self.namespace))
    }

    /// The record key a receipt key belongs to (the inverse of
    /// [`receipt_key`](Self::receipt_key)).
    pub fn record_of_receipt(&self, receipt_key: &str) -> Option<String> {
        let prefix = KeyBuilder::derived(self.namespace, self.key_space, Derived::Receipt)
            .lit("")
            .finish();
        let rest = receipt_key.strip_prefix(&prefix)?;
        Some(format!("{}:{rest}", self.namespace))
    }

    /// The prefix of every derived key of the entity.
    pub fn derived_prefix(&self) -> String {
        format!("{}:{}#", self.namespace, self.key_space)
    }

    /// The kind and name of a derived key of this space (`(Claim,
    /// "by_email")` for a claim of `by_email`); `None` for another key.
    /// Keys without a name (the discovery set, the ledger, the state) have
    /// an empty name.
    /// A shard of a sharded counter ([`shard_key`]) classifies as its
    /// counter.
    pub fn classify<'k>(&self, key: &'k str) -> Option<(Derived, &'k str)> {
        let key = shard_of(key).0;
        let rest = key.strip_prefix(self.namespace)?.strip_prefix(':')?;
        let rest = rest.strip_prefix(self.key_space)?.strip_prefix('#')?;
        let (kind, tail) = rest.split_once(':').unwrap_or((rest, ""));
        let kind = Derived::ALL.into_iter().find(|k| k.as_str() == kind)?;
        let name = tail.split(':').next().unwrap_or(tail);
        Some((kind, name))
    }
}

/// The key of the namespace's maintenance item `what` (the migration
/// lease, the runs' ledger): `{ns}:#kvmodel:{what}`. No entity's key space
/// is empty, so it meets no record or derived key.
pub fn maintenance_key(namespace: &str, what: &str) -> String {
    format!("{namespace}:#kvmodel:{what}")
}

/// The key of shard `shard` of the counter at `counter_key` (`shards: N`):
/// shard 0 is the counter key itself, so a counter that becomes sharded
/// keeps its count; shard `i > 0` appends `#i`. A `#` never appears in a
/// component or a literal, and once in every derived key, so a second one
/// marks a shard (`shard_of` reads it back).
pub fn shard_key(counter_key: &str, shard: u32) -> String {
    if shard == 0 {
        counter_key.to_owned()
    } else {
        format!("{counter_key}#{shard}")
    }
}

/// The counter key and shard number of a derived counter key: the inverse
/// of [`shard_key`] (`(key, 0)` for a key that is no shard).
pub fn shard_of(key: &str) -> (&str, u32) {
    match key.rsplit_once('#') {
        Some((base, n))
            if base.contains('#')
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && !n.starts_with('0') =>
        {
            match n.parse() {
                Ok(i) => (base, i),
                Err(_) => (key, 0),
            }
        }
        _ => (key, 0),
    }
}

/// The unescaped components after `…#{kind}:{name}:` of a derived key built
/// with [`KeyBuilder::derived`]`(…, kind).lit(name)`: the inverse of that
/// layout, for messages.
pub fn derived_parts(key: &str, kind: Derived, name: &str) -> Option<Vec<String>> {
    let marker = format!("#{}:{name}:", kind.as_str());
    let rest = &key[key.find(&marker)? + marker.len()..];
    Some(
        rest.split(':')
            .map(|p| unescape(p).unwrap_or_else(|_| p.to_owned()))
            .collect(),
    )
}

/// A derived key read back: `{namespace}:{key space}#{kind}[:{rest}]`
/// (by the stores that place a key by its kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DerivedKey<'k> {
    /// The namespace.
    pub namespace: &'k str,
    /// The entity's key space.
    pub key_space: &'k str,
    /// Its kind.
    pub kind: Derived,
    /// What follows the kind and its `:` (empty for a key without one, such
    /// as the discovery set).
    pub rest: &'k str,
}

impl<'k> DerivedKey<'k> {
    /// Reads a derived key of any entity: `None` for a record key or any
    /// other key. A derived key holds exactly one `#` (user components
    /// escape it), right after the key space.
    pub fn parse(key: &'k str) -> Option<Self> {
        let (head, tail) = key.split_once('#')?;
        if tail.contains('#') {
            return None;
        }
        let (namespace, key_space) = head.split_once(':')?;
        let (kind, rest) = match tail.split_once(':') {
            Some((kind, rest)) => (kind, rest),
            None => (tail, ""),
        };
        let kind = Derived::ALL.into_iter().find(|k| k.as_str() == kind)?;
        Some(DerivedKey {
            namespace,
            key_space,
            kind,
            rest,
        })
    }

    /// The derived key of kind `kind` beside this one: the same namespace,
    /// key space and rest, with `name` (when not empty) before the rest. A
    /// record's link registry `…#links:{record}` has its link collection
    /// `…#link:{name}:{record}` and its receipt `…#rcpt:{record}` beside it.
    pub fn beside(&self, kind: Derived, name: &str) -> String {
        let mut b = KeyBuilder::derived(self.namespace, self.key_space, kind);
        if !name.is_empty() {
            b = b.lit(name);
        }
        if !self.rest.is_empty() {
            b = b.lit(self.rest);
        }
        b.finish()
    }

    /// Where [`rest`](DerivedKey::rest) starts in the key.
    #[cfg_attr(not(feature = "redis-cluster"), allow(dead_code))]
    pub fn rest_at(&self, key: &str) -> usize {
        key.len() - self.rest.len()
    }
}

/// Checks whether a key equals `target` while it is built, segment by
/// segment, without allocating: the same calls as [`KeyBuilder`], ending in
/// a `bool`.
#[derive(Debug, Clone, Copy)]
pub struct KeyMatch<'a> {
    target: &'a str,
    pos: usize,
    ok: bool,
}

impl<'a> KeyMatch<'a> {
    /// Starts matching a key in `namespace`.
    pub fn new(target: &'a str, namespace: &str) -> Self {
        KeyMatch {
            target,
            pos: 0,
            ok: true,
        }
        .eat(namespace)
    }

    /// Starts matching a derived key (see [`KeyBuilder::derived`]).
    pub fn derived(target: &'a str, namespace: &str, key_space: &str, kind: Derived) -> Self {
        KeyMatch::new(target, namespace)
            .eat_byte(b':')
            .eat(key_space)
            .eat_byte(b'#')
            .eat(kind.as_str())
    }

    fn eat(mut self, s: &str) -> Self {
        if self.ok {
            match self.target.as_bytes().get(self.pos..) {
                Some(rest) if rest.starts_with(s.as_bytes()) => self.pos += s.len(),
                _ => self.ok = false,
            }
        }
        self
    }

    /// A separator: one ASCII byte, so `pos` stays on a character boundary.
    fn eat_byte(mut self, b: u8) -> Self {
        if self.ok {
            if self.target.as_bytes().get(self.pos) == Some(&b) {
                self.pos += 1;
            } else {
                self.ok = false;
            }
        }
        self
    }

    fn eat_part<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        if self.ok {
            match self
                .target
                .get(self.pos..)
                .and_then(|rest| part.match_key(rest))
            {
                Some(n) => self.pos += n,
                None => self.ok = false,
            }
        }
        self
    }

    /// A literal segment.
    pub fn lit(self, segment: &str) -> Self {
        self.eat_byte(b':').eat(segment)
    }

    /// An escaped component.
    pub fn part<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        self.eat_byte(b':').eat_part(part)
    }

    /// A hash-tag segment.
    pub fn tag<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        self.eat_byte(b':')
            .eat_byte(b'{')
            .eat_part(part)
            .eat_byte(b'}')
    }

    /// True when the whole target matched.
    pub fn finish(self) -> bool {
        self.ok && self.pos == self.target.len()
    }
}

/// The segment calls [`KeyBuilder`] and [`KeyMatch`] share, so generated
/// code spells each key's segments once, in a function generic over both:
/// the key builder builds with it, a matcher checks a key with it.
pub trait Segments: Sized {
    /// A literal segment.
    fn lit(self, segment: &str) -> Self;
    /// An escaped component.
    fn part<P: KeyPart + ?Sized>(self, part: &P) -> Self;
    /// A hash-tag segment.
    fn tag<P: KeyPart + ?Sized>(self, part: &P) -> Self;
}

impl Segments for KeyBuilder {
    fn lit(self, segment: &str) -> Self {
        KeyBuilder::lit(self, segment)
    }
    fn part<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        KeyBuilder::part(self, part)
    }
    fn tag<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        KeyBuilder::tag(self, part)
    }
}

impl Segments for KeyMatch<'_> {
    fn lit(self, segment: &str) -> Self {
        KeyMatch::lit(self, segment)
    }
    fn part<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        KeyMatch::part(self, part)
    }
    fn tag<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        KeyMatch::tag(self, part)
    }
}

/// The record keys of one entity, `{namespace}:{template}`, as a range of
/// keys: on a store that ranges over its keys in order, this is how an
/// entity's records are found (no discovery set).
///
/// Every record key starts with [`prefix`](RecordKeys::prefix); other keys
/// may too (an entity `user:admin:{id}` beside `user:{id}`), and
/// [`matches`](RecordKeys::matches) tells them apart: a user component is
/// escaped, so it never holds a `:`, and a record key has exactly its
/// template's segments. Derived keys never start with the prefix (their
/// key space ends at a `#`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordKeys {
    prefix: String,
    /// The segments after the namespace: `Some(literal)`, `None` for a
    /// placeholder.
    segments: Vec<Option<String>>,
}

impl RecordKeys {
    /// The record keys of the template `template` (`:`-separated, each
    /// placeholder as `{field}`) in `namespace`.
    pub fn new(namespace: &str, template: &str) -> Self {
        let segments: Vec<Option<String>> = template
            .split(':')
            .map(|s| (!(s.starts_with('{') && s.ends_with('}'))).then(|| s.to_owned()))
            .collect();
        let mut prefix = namespace.to_owned();
        let fixed = segments.iter().take_while(|s| s.is_some()).count();
        for literal in segments[..fixed].iter().flatten() {
            prefix.push(':');
            prefix.push_str(literal);
        }
        if fixed < segments.len() {
            prefix.push(':');
        }
        RecordKeys { prefix, segments }
    }

    /// What every record key starts with: the namespace and the template's
    /// literal segments before its first placeholder, each with its `:`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether `key` has this template's shape: its segments, with the
    /// literal ones as written.
    pub fn matches(&self, key: &str) -> bool {
        let Some(rest) = key.strip_prefix(self.prefix.as_str()) else {
            return false;
        };
        let fixed = self.segments.iter().take_while(|s| s.is_some()).count();
        if fixed == self.segments.len() {
            return rest.is_empty();
        }
        let mut parts = rest.split(':');
        for want in &self.segments[fixed..] {
            match (parts.next(), want) {
                (Some(got), Some(literal)) if got == literal => {}
                (Some(_), None) => {}
                _ => return false,
            }
        }
        parts.next().is_none()
    }
}

#[cfg(test)]
mod record_keys {
    use super::RecordKeys;

    #[test]
    fn a_record_key_has_its_templates_segments() {
        let members = RecordKeys::new("app", "org:{org}:member:{id}");
        assert_eq!(members.prefix(), "app:org:");
        assert!(members.matches("app:org:acme:member:7"));
        assert!(
            members.matches("app:org:{acme}:member:7"),
            "a hash tag is one segment"
        );
        assert!(
            !members.matches("app:org:acme:admin:7"),
            "a literal differs"
        );
        assert!(
            !members.matches("app:org:acme:member:7:x"),
            "one segment too many"
        );
        assert!(!members.matches("app:org:acme:member"), "one segment short");
        assert!(!members.matches("app:org#all"), "a derived key");
        assert!(
            !members.matches("apps:org:acme:member:7"),
            "another namespace"
        );
    }

    #[test]
    fn a_record_key_starts_with_the_prefix() {
        let users = RecordKeys::new("shop", "user:{id}");
        assert_eq!(users.prefix(), "shop:user:");
        assert!(users.matches("shop:user:42"));
        assert!(!users.matches("shop:user:admin:7"));
    }

    #[test]
    fn a_template_without_placeholders_is_one_key() {
        let config = RecordKeys::new("app", "settings:global");
        assert_eq!(config.prefix(), "app:settings:global");
        assert!(config.matches("app:settings:global"));
        assert!(!config.matches("app:settings:global:x"));
        assert!(!config.matches("app:settings:globals"));
    }

    #[test]
    fn escaped_components_stay_one_segment() {
        let users = RecordKeys::new("shop", "user:{id}");
        let key = super::KeyBuilder::new("shop")
            .lit("user")
            .part("1:orders")
            .finish();
        assert!(users.matches(&key), "{key}");
        assert!(!users.matches("shop:user:1:orders"));
    }
}

#[cfg(test)]
mod built_keys {
    use super::{KeyBuilder, KeyMatch, shard_key, shard_of};

    #[test]
    fn a_component_is_escaped_and_a_key_matches_as_it_is_built() {
        let key = KeyBuilder::new("shop")
            .lit("user")
            .part("1:orders")
            .finish();
        assert_eq!(key, "shop:user:1%3Aorders");
        assert!(
            KeyMatch::new(&key, "shop")
                .lit("user")
                .part("1:orders")
                .finish()
        );
        assert!(!KeyMatch::new(&key, "shop").lit("user").part("1").finish());
    }

    #[test]
    fn a_shard_key_reads_back() {
        let counter = "shop:like#count:per_post:7";
        assert_eq!(shard_key(counter, 0), counter);
        assert_eq!(shard_key(counter, 3), "shop:like#count:per_post:7#3");
        assert_eq!(shard_of("shop:like#count:per_post:7#3"), (counter, 3));
        assert_eq!(shard_of(counter), (counter, 0));
    }
}

#[cfg(test)]
mod derived_keys {
    use super::{Derived, DerivedKey, Space};

    #[test]
    fn a_space_spells_its_derived_keys() {
        let users = Space::new("shop", "user");
        assert_eq!(users.all_key(), "shop:user#all");
        assert_eq!(users.receipt_key("shop:user:1"), "shop:user#rcpt:user:1");
        assert_eq!(users.plan_key("shop:user:1"), "shop:user#drop:user:1");
        assert_eq!(
            users.record_of(Derived::DeletePlan, "", "shop:user#drop:user:1"),
            Some("shop:user:1".to_owned())
        );
        assert_eq!(
            users.record_of_receipt("shop:user#rcpt:user:1").unwrap(),
            "shop:user:1"
        );
    }

    #[test]
    fn every_derived_key_reads_back() {
        let users = Space::new("shop", "user");
        let all = users.all_key();
        let d = DerivedKey::parse(&all).unwrap();
        assert_eq!(
            (d.namespace, d.key_space, d.kind, d.rest),
            ("shop", "user", Derived::Discovery, "")
        );
        let receipt = users.receipt_key("shop:user:1");
        let d = DerivedKey::parse(&receipt).unwrap();
        assert_eq!((d.kind, d.rest), (Derived::Receipt, "user:1"));
        assert_eq!(&receipt[d.rest_at(&receipt)..], "user:1");
        assert_eq!(DerivedKey::parse("shop:user:1"), None, "a record key");
        assert_eq!(DerivedKey::parse("shop:user#nope"), None, "no such kind");
        assert_eq!(DerivedKey::parse("shop:user#all#all"), None, "two markers");
    }

    #[test]
    fn a_derived_key_spells_the_keys_beside_it() {
        let users = Space::new("shop", "user");
        let registry = users.of_record(Derived::Registry, "", "shop:{t1}:user:1");
        let d = DerivedKey::parse(&registry).unwrap();
        let link = d.beside(Derived::Link, "follows");
        assert_eq!(
            link,
            users.of_record(Derived::Link, "follows", "shop:{t1}:user:1")
        );
        assert_eq!(
            d.beside(Derived::Receipt, ""),
            users.receipt_key("shop:{t1}:user:1")
        );
        // A count's collection: the name is already in the rest.
        let count = d.beside(Derived::LinkCount, "follows");
        let c = DerivedKey::parse(&count).unwrap();
        assert_eq!(c.beside(Derived::Link, ""), link);
        assert_eq!(
            super::maintenance_key("shop", "lease"),
            "shop:#kvmodel:lease"
        );
    }
}
