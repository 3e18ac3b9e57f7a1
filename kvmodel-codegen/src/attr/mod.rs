//! The derive front-end: `#[kv(…)]` attributes and field types to IR.
//!
//! Values are read in `value` with the words YAML uses, and every word of
//! the model (encodings, time buckets, durations, names) is parsed by
//! [`vocab`], so a mistake reads the same from either
//! front-end. Broken syntax stops one attribute; every other mistake is
//! reported and parsing goes on.

mod construct;
mod keys;
mod tally;
mod value;

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;

use crate::ir::{Entity, Field, FieldType, Index, KeyTemplate, Ttl};
use crate::origin::{Diagnostic, Diagnostics, Origin, Sp};
use crate::vocab::{self, Mistake};
use keys::{Keys, meta_name};
use value::Reader;

pub use tally::parse_tally;

const ENTITY_KEYS: &[&str] = &[
    "namespace",
    "key",
    "version",
    "encoding",
    "ttl",
    "ttl_jitter",
    "feed",
    "colocate",
    "max_size",
    "compress",
    "crate",
    "migrate_from",
    "index",
    "counter",
    "relation",
    "link",
    "dependent",
    "migration",
    "allow",
];
/// What `crate = …` must be.
pub(super) const CRATE_PATH: (&str, &str) = (
    "a path",
    "the path of the kvmodel crate, such as `::kvmodel` or `my_crate::kvmodel`",
);
/// What `migrate_from = …` must be.
const PREVIOUS_TYPE: (&str, &str) = (
    "a type",
    "the type of the previous version, such as `UserV1`",
);
const FIELD_KEYS: &[&str] = &[
    "unique",
    "index",
    "normalize",
    "order_by",
    "name",
    "since",
    "allow",
    "expiry",
];

/// The text of a doc comment (`/// text` is `#[doc = " text"]`).
fn doc_text(attr: &syn::Attribute) -> Option<String> {
    match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

/// The description doc comments give: one leading space of each line is
/// the comment's own, the rest is the author's.
fn description(docs: &[String]) -> Option<String> {
    let text = docs.join("\n");
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    vocab::description(&lines.join("\n"))
}

/// The description of an item or a field: its doc comments.
pub(crate) fn docs(attrs: &[syn::Attribute]) -> Option<String> {
    let docs: Vec<String> = attrs.iter().filter_map(doc_text).collect();
    description(&docs)
}

/// Reports broken attribute syntax.
fn syntax(diags: &mut Diagnostics, err: syn::Error) {
    diags.push(Diagnostic::error(
        "E001",
        &Origin::Span(err.span()),
        err.to_string(),
    ));
}

/// Parses a derive input into an entity. Errors go to `diags`; the result is
/// `None` only when the input is not a struct with named fields.
pub fn parse_derive(input: &syn::DeriveInput, diags: &mut Diagnostics) -> Option<Entity> {
    let name = &input.ident;
    let named = named_fields(input, "KvEntity", diags)?;
    no_generics(input, "KvEntity", diags);
    let mut e = Entity::new(
        Sp::new(name.to_string(), Origin::Span(name.span())),
        input.vis.clone(),
    );
    let mut head = Head::default();
    let what = format!("entity `{name}`");
    // Doc comments right before a `#[kv(…)]` attribute that declares an
    // index, a counter or a relation describe what it declares; all others
    // describe the entity.
    let (mut pending, mut own) = (Vec::new(), Vec::new());
    for attr in &input.attrs {
        if let Some(doc) = doc_text(attr) {
            pending.push(doc);
            continue;
        }
        if !attr.path().is_ident("kv") {
            own.append(&mut pending);
            continue;
        }
        let before = (
            e.indexes.len(),
            e.counters.len(),
            e.relations.len(),
            e.links.len(),
        );
        let mut keys = Keys::new(&[], ENTITY_KEYS);
        let mut r = Reader { diags };
        let parsed =
            attr.parse_nested_meta(|meta| entity_key(&meta, &mut e, &mut head, &mut keys, &mut r));
        keys.report(&what, &mut r);
        if let Err(err) = parsed {
            syntax(diags, err);
        }
        let described = describe(&mut e, before, description(&pending));
        if described {
            pending.clear();
        } else {
            own.append(&mut pending);
        }
    }
    own.append(&mut pending);
    e.description = description(&own);
    match (head.ttl, head.jitter) {
        (Some(t), j) => e.ttl = Ttl::parse(t, j, diags),
        (None, Some(j)) => diags.push(
            vocab::missing("`ttl_jitter`", "a `ttl` to spread, such as `ttl = \"30m\"`")
                .at(&j.origin),
        ),
        (None, None) => {}
    }
    for f in &named.named {
        parse_field(f, &mut e, diags);
    }
    Some(e)
}

/// Gives `text` to the indexes, counters, relations and links declared
/// since `before` (their counts then); false if there are none.
fn describe(e: &mut Entity, before: (usize, usize, usize, usize), text: Option<String>) -> bool {
    let indexes = e.indexes[before.0..].iter_mut().map(|x| &mut x.description);
    let counters = e.counters[before.1..]
        .iter_mut()
        .map(|x| &mut x.description);
    let relations = e.relations[before.2..]
        .iter_mut()
        .map(|x| &mut x.description);
    let links = e.links[before.3..].iter_mut().map(|x| &mut x.description);
    let mut any = false;
    for d in indexes.chain(counters).chain(relations).chain(links) {
        // `description = "…"` inside the attribute wins over doc comments.
        if d.is_none() {
            *d = text.clone();
        }
        any = true;
    }
    any
}

/// Entity keys read before they can be put together.
#[derive(Default)]
struct Head {
    ttl: Option<Sp<String>>,
    jitter: Option<Sp<String>>,
}

fn entity_key(
    meta: &ParseNestedMeta<'_>,
    e: &mut Entity,
    head: &mut Head,
    keys: &mut Keys,
    r: &mut Reader<'_>,
) -> syn::Result<()> {
    let key = meta_name(meta);
    let what = format!("`{key}`");
    match key.as_str() {
        "namespace" => e.namespace = r.string(&value::parse(meta.value()?)?, &what),
        "key" => {
            e.key = r
                .string(&value::parse(meta.value()?)?, &what)
                .map(KeyTemplate::new)
        }
        "version" => {
            if let Some(v) = r.version(&value::parse(meta.value()?)?, &what) {
                e.version = v;
            }
        }
        "encoding" => {
            if let Some(enc) = r.word(&value::parse(meta.value()?)?, &what) {
                e.encoding = enc;
            }
        }
        "ttl" => head.ttl = r.string(&value::parse(meta.value()?)?, &what),
        "ttl_jitter" => head.jitter = r.string(&value::parse(meta.value()?)?, &what),
        "feed" => e.feed = construct::feed(meta, r)?,
        "colocate" => e.colocate = r.name(&value::parse(meta.value()?)?, &what),
        "max_size" => e.max_size = r.size(&value::parse(meta.value()?)?, &what),
        "compress" => e.compress = construct::compress(meta, r)?,
        "crate" => e.crate_path = value::rust(r, meta.value()?, CRATE_PATH, &what)?,
        "migrate_from" => e.migrate_from = value::rust(r, meta.value()?, PREVIOUS_TYPE, &what)?,
        "index" => e.indexes.extend(construct::index(meta, r)?),
        "counter" => e.counters.extend(construct::counter(meta, r)?),
        "relation" => e.relations.extend(construct::relation(meta, r)?),
        "link" => e.links.extend(construct::link(meta, r)?),
        "dependent" => e.dependents.extend(construct::dependent(meta, r)?),
        "migration" => e.migrations.extend(construct::migration(meta, r)?),
        "allow" => e.allow.extend(construct::allow(meta, r)?),
        _ => keys.unknown(meta)?,
    }
    Ok(())
}

/// A struct field as the model sees it, before its `#[kv(…)]` attributes.
fn plain_field(f: &syn::Field) -> Option<Field> {
    let ident = f.ident.as_ref()?;
    let (ty, optional) = FieldType::from_rust(&f.ty);
    let origin = Origin::Span(ident.span());
    Some(Field {
        name: Sp::new(vocab::unraw(ident), origin.clone()),
        ty: Sp::new(ty, Origin::Span(f.ty.span())),
        optional,
        default: None,
        expiry: None,
        description: docs(&f.attrs),
        origin,
    })
}

/// The fields of a struct, or E002 (naming `derive`) when it is not a
/// struct with named fields.
fn named_fields<'a>(
    input: &'a syn::DeriveInput,
    derive: &str,
    diags: &mut Diagnostics,
) -> Option<&'a syn::FieldsNamed> {
    let name = &input.ident;
    match &input.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(n),
            ..
        }) => Some(n),
        _ => {
            diags.error(
                "E002",
                &Origin::Span(name.span()),
                format!("`{derive}` needs a struct with named fields, and `{name}` is not one"),
            );
            None
        }
    }
}

/// E003 for a generic struct: generated code names the type as it is.
fn no_generics(input: &syn::DeriveInput, derive: &str, diags: &mut Diagnostics) {
    if !input.generics.params.is_empty() {
        diags.error(
            "E003",
            &Origin::Span(input.generics.span()),
            format!("`{derive}` does not support generic structs; declare a concrete struct"),
        );
    }
}

/// A field and the indexes its `#[kv(…)]` attributes declare.
fn parse_field(f: &syn::Field, e: &mut Entity, diags: &mut Diagnostics) {
    let Some(field) = plain_field(f) else { return };
    let name = field.name.value.clone();
    let origin = field.origin.clone();
    e.fields.push(field);
    let what = format!("field `{name}`");
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("kv")) {
        let mut kind: Option<(bool, Span)> = None;
        let mut expiry: Option<Span> = None;
        let mut index_keys = false;
        let mut ix = Index::new(Sp::new(String::new(), origin.clone()));
        let mut ix_name = None;
        let mut keys = Keys::new(&[], FIELD_KEYS);
        let mut r = Reader { diags };
        let parsed = attr.parse_nested_meta(|m| {
            let key = meta_name(&m);
            index_keys |= key != "expiry";
            match key.as_str() {
                "expiry" => expiry = Some(m.path.span()),
                "unique" => kind = Some((true, m.path.span())),
                "index" => kind = Some((false, m.path.span())),
                "normalize" => ix.normalize = r.word(&value::parse(m.value()?)?, "`normalize`"),
                "order_by" => ix.order_by = r.field_expr(&value::parse(m.value()?)?, "`order_by`"),
                "name" => ix_name = r.name(&value::parse(m.value()?)?, "`name`"),
                "since" => {
                    if let Some(s) = r.version(&value::parse(m.value()?)?, "`since`") {
                        ix.since = s;
                    }
                }
                "allow" => ix.allow = construct::allow(&m, &mut r)?,
                _ => keys.unknown(&m)?,
            }
            Ok(())
        });
        keys.report(&what, &mut r);
        if let Err(err) = parsed {
            syntax(diags, err);
            continue;
        }
        if let Some(span) = expiry {
            if let Some(f) = e.fields.last_mut() {
                f.expiry = Some(Origin::Span(span));
            }
            if !index_keys {
                continue;
            }
        }
        let Some((unique, span)) = kind else {
            diags.push(
                Mistake::new(
                    "E004",
                    format!("this attribute on field `{name}` needs `unique` or `index` to say which index it declares"),
                )
                .at(&Origin::Span(attr.span())),
            );
            continue;
        };
        let default_name = || Sp::new(format!("by_{name}"), Origin::Span(span));
        ix.name = ix_name.unwrap_or_else(default_name);
        ix.fields = vec![Sp::new(
            crate::ir::FieldExpr::Field(name.clone()),
            origin.clone(),
        )];
        ix.unique = unique;
        ix.origin = Origin::Span(span);
        e.indexes.push(ix);
    }
}
