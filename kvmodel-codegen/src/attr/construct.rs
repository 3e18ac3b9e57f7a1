//! `index(…)`, `counter(…)`, `relation(…)`, `migration(…)` and
//! `compress(…)` inside `#[kv(…)]`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;

use super::keys::{Keys, meta_name};
use super::value::{self, Reader};
use crate::ir::{Compress, Counter, Dependent, Feed, Index, Link, Lint, Migration, Relation};
use crate::origin::{Origin, Sp};
use crate::vocab;

/// A construct's name, where it is known (`index `by_email``), or its kind.
fn what(kind: &str, name: Option<&Sp<String>>) -> String {
    match name {
        Some(n) => format!("{kind} `{}`", **n),
        None => format!("this {kind}"),
    }
}

/// Reports a construct without `name`; `None` when it has one.
fn named(
    r: &mut Reader<'_>,
    name: Option<Sp<String>>,
    kind: &str,
    span: Span,
) -> Option<Sp<String>> {
    if name.is_none() {
        r.report(
            vocab::missing(&format!("this {kind}"), "a `name`"),
            &Origin::Span(span),
        );
    }
    name
}

/// `allow(W001, W002)`: lints allowed where it is written.
pub(super) fn allow(meta: &ParseNestedMeta<'_>, r: &mut Reader<'_>) -> syn::Result<Vec<Sp<Lint>>> {
    let items = value::list(meta)?;
    let list = Sp::new(
        crate::value::Value::List(items),
        Origin::Span(meta.path.span()),
    );
    Ok(r.words(&list, "`allow`"))
}

pub(super) fn index(meta: &ParseNestedMeta<'_>, r: &mut Reader<'_>) -> syn::Result<Option<Index>> {
    let span = meta.path.span();
    let mut ix = Index::new(Sp::new(String::new(), Origin::Span(span)));
    let mut name = None;
    let mut keys = Keys::new(&["name", "description"], vocab::INDEX_KEYS);
    // A refused field was reported: no follow-on error about the rest.
    let mut refused = false;
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "name" => name = r.name(&value::parse(m.value()?)?, "`name`"),
            "description" => ix.description = r.description(&value::parse(m.value()?)?),
            "fields" => {
                let items = value::list(&m)?;
                let given = items.len();
                ix.fields = items
                    .into_iter()
                    .filter_map(|v| r.field_expr(&v, "`fields`"))
                    .collect();
                refused |= ix.fields.len() < given;
            }
            "unique" => ix.unique = true,
            "allow" => ix.allow = allow(&m, r)?,
            "normalize" => ix.normalize = r.word(&value::parse(m.value()?)?, "`normalize`"),
            "order_by" => ix.order_by = r.field_expr(&value::parse(m.value()?)?, "`order_by`"),
            "keep" => ix.keep = r.bounded(&value::parse(m.value()?)?, "`keep`", 1, vocab::MAX_KEEP),
            "since" => {
                ix.since = r
                    .version(&value::parse(m.value()?)?, "`since`")
                    .unwrap_or(ix.since.clone())
            }
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report(&what("index", name.as_ref()), r);
    let Some(name) = named(r, name, "index", span) else {
        return Ok(None);
    };
    ix.name = name;
    Ok((!refused).then_some(ix))
}

pub(super) fn counter(
    meta: &ParseNestedMeta<'_>,
    r: &mut Reader<'_>,
) -> syn::Result<Option<Counter>> {
    let span = meta.path.span();
    let mut c = Counter::new(Sp::new(String::new(), Origin::Span(span)));
    let mut name = None;
    let mut keys = Keys::new(&["name", "description"], vocab::COUNTER_KEYS);
    // A refused group was reported: it is no ungrouped counter.
    let mut refused = false;
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "name" => name = r.name(&value::parse(m.value()?)?, "`name`"),
            "description" => c.description = r.description(&value::parse(m.value()?)?),
            "group_by" => {
                let items = value::list(&m)?;
                let given = items.len();
                c.group_by = items
                    .into_iter()
                    .filter_map(|v| r.field_expr(&v, "`group_by`"))
                    .collect();
                refused |= c.group_by.len() < given;
            }
            "sum" => c.sum = r.name(&value::parse(m.value()?)?, "`sum`"),
            "allow" => c.allow = allow(&m, r)?,
            "shards" => {
                c.shards = r.bounded(&value::parse(m.value()?)?, "`shards`", 2, vocab::MAX_SHARDS)
            }
            "keep" => c.keep = r.word(&value::parse(m.value()?)?, "`keep`"),
            "since" => {
                c.since = r
                    .version(&value::parse(m.value()?)?, "`since`")
                    .unwrap_or(c.since.clone())
            }
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report(&what("counter", name.as_ref()), r);
    let Some(name) = named(r, name, "counter", span) else {
        return Ok(None);
    };
    c.name = name;
    Ok((!refused).then_some(c))
}

pub(super) fn relation(
    meta: &ParseNestedMeta<'_>,
    r: &mut Reader<'_>,
) -> syn::Result<Option<Relation>> {
    let span = meta.path.span();
    let (mut name, mut belongs_to, mut by, mut order_by) = (None, None, None, None);
    let mut keep = None;
    let mut on_delete = None;
    let mut since = crate::ir::default_since();
    let mut description = None;
    let mut keys = Keys::new(&["name", "description"], vocab::RELATION_KEYS);
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "name" => name = r.name(&value::parse(m.value()?)?, "`name`"),
            "description" => description = r.description(&value::parse(m.value()?)?),
            "belongs_to" => belongs_to = r.path(&value::parse(m.value()?)?, "`belongs_to`"),
            "by" => by = r.name(&value::parse(m.value()?)?, "`by`"),
            "order_by" => order_by = r.field_expr(&value::parse(m.value()?)?, "`order_by`"),
            "keep" => keep = r.bounded(&value::parse(m.value()?)?, "`keep`", 1, vocab::MAX_KEEP),
            "on_delete" => on_delete = r.word(&value::parse(m.value()?)?, "`on_delete`"),
            "since" => {
                since = r
                    .version(&value::parse(m.value()?)?, "`since`")
                    .unwrap_or(since.clone())
            }
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report(&what("relation", name.as_ref()), r);
    let Some(name) = named(r, name, "relation", span) else {
        return Ok(None);
    };
    let (Some(belongs_to), Some(by)) = (belongs_to, by) else {
        r.report(vocab::relation_without_parent(&name), &name.origin);
        return Ok(None);
    };
    let mut rel = Relation::new(name, belongs_to, by);
    rel.origin = Origin::Span(span);
    rel.order_by = order_by;
    rel.keep = keep;
    if let Some(a) = on_delete {
        rel.on_delete = a;
    }
    rel.since = since;
    rel.description = description;
    Ok(Some(rel))
}

pub(super) fn link(meta: &ParseNestedMeta<'_>, r: &mut Reader<'_>) -> syn::Result<Option<Link>> {
    let span = meta.path.span();
    let (mut name, mut to, mut inverse) = (None, None, None);
    let mut description = None;
    let mut keys = Keys::new(&["name", "description"], vocab::LINK_KEYS);
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "name" => name = r.name(&value::parse(m.value()?)?, "`name`"),
            "description" => description = r.description(&value::parse(m.value()?)?),
            "to" => to = r.path(&value::parse(m.value()?)?, "`to`"),
            "inverse" => inverse = r.name(&value::parse(m.value()?)?, "`inverse`"),
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report(&what("link", name.as_ref()), r);
    let Some(name) = named(r, name, "link", span) else {
        return Ok(None);
    };
    let (Some(to), Some(inverse)) = (to, inverse) else {
        r.report(vocab::link_without_end(&name), &name.origin);
        return Ok(None);
    };
    let mut link = Link::new(name, to, inverse);
    link.description = description;
    link.origin = Origin::Span(span);
    Ok(Some(link))
}

/// `dependent(entity = Post, relation = "author")`: a child's relation to
/// this entity that its delete enforces.
pub(super) fn dependent(
    meta: &ParseNestedMeta<'_>,
    r: &mut Reader<'_>,
) -> syn::Result<Option<Dependent>> {
    let span = meta.path.span();
    let (mut entity, mut relation) = (None, None);
    let mut keys = Keys::new(&[], vocab::DEPENDENT_KEYS);
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "entity" => entity = r.path(&value::parse(m.value()?)?, "`entity`"),
            "relation" => relation = r.name(&value::parse(m.value()?)?, "`relation`"),
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report("this dependent", r);
    let (Some(entity), Some(relation)) = (entity, relation) else {
        r.report(
            vocab::missing("this dependent", "an `entity` and a `relation`"),
            &Origin::Span(span),
        );
        return Ok(None);
    };
    Ok(Some(Dependent {
        entity,
        relation,
        origin: Origin::Span(span),
    }))
}

pub(super) fn migration(
    meta: &ParseNestedMeta<'_>,
    r: &mut Reader<'_>,
) -> syn::Result<Option<Migration>> {
    let span = meta.path.span();
    let (mut from, mut from_given) = (None, false);
    let mut mig = Migration::new(crate::ir::default_since(), Origin::Span(span));
    let mut keys = Keys::new(&[], vocab::MIGRATION_KEYS);
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "from" => {
                from_given = true;
                from = r.version(&value::parse(m.value()?)?, "`from`");
            }
            "rename" => m.parse_nested_meta(|pair| {
                let old = Sp::new(meta_name(&pair), Origin::Span(pair.path.span()));
                if let Some(new) = r.name(&value::parse(pair.value()?)?, "the new field name") {
                    mig.rename.push((old, new));
                }
                Ok(())
            })?,
            "add" => m.parse_nested_meta(|pair| {
                let field = Sp::new(meta_name(&pair), Origin::Span(pair.path.span()));
                let what = format!("the value added for `{}`", *field);
                if let Some(v) = r.json(&value::parse(pair.value()?)?, &what) {
                    mig.add.push((field, v));
                }
                Ok(())
            })?,
            "remove" => {
                let items = value::list(&m)?;
                mig.remove = items
                    .into_iter()
                    .filter_map(|v| r.name(&v, "`remove`"))
                    .collect();
            }
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report("a migration step", r);
    let Some(from) = from else {
        if !from_given {
            r.report(vocab::migration_without_from(), &Origin::Span(span));
        }
        return Ok(None);
    };
    mig.from = from;
    Ok(Some(mig))
}

/// `compress(codec = "zstd", above = "1KiB")`.
pub(super) fn compress(
    meta: &ParseNestedMeta<'_>,
    r: &mut Reader<'_>,
) -> syn::Result<Option<Compress>> {
    let span = meta.path.span();
    let (mut codec, mut above, mut given) = (None, None, (false, false));
    let mut keys = Keys::new(&[], vocab::COMPRESS_KEYS);
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "codec" => {
                given.0 = true;
                codec = r.word(&value::parse(m.value()?)?, "`codec`");
            }
            "above" => {
                given.1 = true;
                above = r.size(&value::parse(m.value()?)?, "`above`");
            }
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report("`compress`", r);
    Ok(vocab::compress(
        codec,
        above,
        Origin::Span(span),
        r.diags,
        given,
    ))
}

/// `feed(retain = "7d")`: the entity's change feed.
pub(super) fn feed(meta: &ParseNestedMeta<'_>, r: &mut Reader<'_>) -> syn::Result<Option<Feed>> {
    let span = meta.path.span();
    let mut retain = None;
    let mut keys = Keys::new(&[], FEED_KEYS);
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "retain" => retain = r.string(&value::parse(m.value()?)?, "`feed.retain`"),
            _ => keys.unknown(&m)?,
        }
        Ok(())
    })?;
    keys.report("`feed`", r);
    let Some(retain) = retain else {
        r.diags.push(
            vocab::missing(
                "`feed`",
                "`retain`, how long events are kept, such as `feed(retain = \"7d\")`",
            )
            .at(&Origin::Span(span)),
        );
        return Ok(None);
    };
    Ok(Feed::parse(retain, r.diags))
}

/// The keys of `feed`.
const FEED_KEYS: &[&str] = &["retain"];
