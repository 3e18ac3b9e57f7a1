//! The derive front-end: `#[kv(…)]` attributes and field types to IR.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt as _;
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Token, meta::ParseNestedMeta};

use crate::ir::{
    Counter, Encoding, Entity, Field, FieldExpr, FieldType, Index, Migration, Normalize, Relation,
    Ttl,
};
use crate::origin::{Diagnostic, Diagnostics, Origin, Sp, suggestion};

const ENTITY_KEYS: &[&str] = &[
    "namespace",
    "key",
    "version",
    "encoding",
    "ttl",
    "ttl_jitter",
    "colocate",
    "crate",
    "migrate_from",
    "index",
    "counter",
    "relation",
    "migration",
];
const FIELD_KEYS: &[&str] = &["unique", "index", "normalize", "order_by", "name", "since"];
const INDEX_KEYS: &[&str] = &["name", "fields", "unique", "normalize", "order_by", "since"];
const COUNTER_KEYS: &[&str] = &["name", "group_by", "sum", "since"];
const RELATION_KEYS: &[&str] = &["name", "belongs_to", "by", "order_by", "since"];
const MIGRATION_KEYS: &[&str] = &["from", "rename", "add", "add_json", "remove"];

fn sp<T>(value: T, span: Span) -> Sp<T> {
    Sp::new(value, Origin::Span(span))
}

fn meta_name(meta: &ParseNestedMeta<'_>) -> String {
    meta.path
        .get_ident()
        .map(|i| i.to_string())
        .unwrap_or_else(|| meta.path.to_token_stream().to_string().replace(' ', ""))
}

/// Consumes whatever value follows an unknown key so parsing can go on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

fn unknown(
    diags: &mut Diagnostics,
    meta: &ParseNestedMeta<'_>,
    what: &str,
    known: &[&str],
) -> syn::Result<()> {
    let name = meta_name(meta);
    let hint = suggestion(&name, known.iter().copied());
    diags.push(
        Diagnostic::error(
            "E001",
            &Origin::Span(meta.path.span()),
            format!("unknown {what} key `{name}`{hint}"),
        )
        .help(format!("expected one of: {}", known.join(", "))),
    );
    skip_value(meta)
}

fn lit_str(meta: &ParseNestedMeta<'_>) -> syn::Result<Sp<String>> {
    let s: syn::LitStr = meta.value()?.parse()?;
    Ok(sp(s.value(), s.span()))
}

fn lit_u32(meta: &ParseNestedMeta<'_>) -> syn::Result<Sp<u32>> {
    let n: syn::LitInt = meta.value()?.parse()?;
    Ok(sp(n.base10_parse()?, n.span()))
}

fn ident_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Sp<String>> {
    let value = meta.value()?;
    if value.peek(syn::LitStr) {
        let s: syn::LitStr = value.parse()?;
        return Ok(sp(s.value(), s.span()));
    }
    let id: syn::Ident = value.parse()?;
    Ok(sp(id.to_string(), id.span()))
}

fn path_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Sp<String>> {
    let value = meta.value()?;
    if value.peek(syn::LitStr) {
        let s: syn::LitStr = value.parse()?;
        return Ok(sp(s.value(), s.span()));
    }
    let p: syn::Path = value.parse()?;
    Ok(sp(
        p.to_token_stream().to_string().replace(' ', ""),
        p.span(),
    ))
}

fn ident_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<Sp<String>>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let ids = content.parse_terminated(syn::Ident::parse_any, Token![,])?;
    Ok(ids
        .into_iter()
        .map(|i| sp(i.to_string(), i.span()))
        .collect())
}

/// `status`, `day(created_at)` or `"day(created_at)"`.
fn parse_field_expr(input: ParseStream<'_>) -> syn::Result<Sp<FieldExpr>> {
    if input.peek(syn::LitStr) {
        let s: syn::LitStr = input.parse()?;
        return FieldExpr::parse(&s.value())
            .map(|e| sp(e, s.span()))
            .ok_or_else(|| syn::Error::new(s.span(), format!("`{}` is not a field or a time bucket; expected `field`, `hour(field)`, `day(field)` or `month(field)`", s.value())));
    }
    let head: syn::Ident = input.parse()?;
    if input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in input);
        let arg: syn::Ident = content.parse()?;
        let text = format!("{head}({arg})");
        return FieldExpr::parse(&text)
            .map(|e| sp(e, head.span().join(arg.span()).unwrap_or(head.span())))
            .ok_or_else(|| {
                syn::Error::new(
                    head.span(),
                    format!("unknown time bucket `{head}`; expected `hour`, `day` or `month`"),
                )
            });
    }
    Ok(sp(FieldExpr::Field(head.to_string()), head.span()))
}

fn field_expr_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Sp<FieldExpr>> {
    parse_field_expr(meta.value()?)
}

fn field_expr_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<Sp<FieldExpr>>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let items = content.parse_terminated(parse_field_expr, Token![,])?;
    Ok(items.into_iter().collect())
}

fn normalize_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Sp<Normalize>> {
    let s = lit_str(meta)?;
    match s.as_str() {
        "lowercase" => Ok(Sp::new(Normalize::Lowercase, s.origin)),
        other => Err(syn::Error::new(
            s.origin.span(),
            format!("unknown normalization `{other}`; expected \"lowercase\""),
        )),
    }
}

fn json_of_lit(lit: &syn::Lit) -> syn::Result<serde_json::Value> {
    Ok(match lit {
        syn::Lit::Str(s) => serde_json::Value::String(s.value()),
        syn::Lit::Bool(b) => serde_json::Value::Bool(b.value),
        syn::Lit::Int(i) => serde_json::Value::Number(i.base10_parse::<i64>()?.into()),
        syn::Lit::Float(f) => serde_json::Number::from_f64(f.base10_parse()?)
            .map(serde_json::Value::Number)
            .ok_or_else(|| syn::Error::new(f.span(), "the number is not finite"))?,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "expected a string, number or bool; use `add_json(field = \"…\")` for lists and objects",
            ));
        }
    })
}

/// A `since = N` default of 1 at the call site.
fn since_default() -> Sp<u32> {
    Sp::new(1, Origin::Unknown)
}

/// Parses a derive input into an entity. Errors go to `diags`; the result is
/// `None` only when the input is not a struct with named fields.
pub fn parse_derive(input: &syn::DeriveInput, diags: &mut Diagnostics) -> Option<Entity> {
    let name = &input.ident;
    let named = match &input.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(n),
            ..
        }) => n,
        _ => {
            diags.error(
                "E002",
                &Origin::Span(name.span()),
                format!("`KvEntity` needs a struct with named fields, and `{name}` is not one"),
            );
            return None;
        }
    };
    if !input.generics.params.is_empty() {
        diags.error(
            "E003",
            &Origin::Span(input.generics.span()),
            "`KvEntity` does not support generic structs; declare a concrete struct",
        );
    }
    let mut e = Entity::new(
        sp(name.to_string(), name.span()),
        input.vis.to_token_stream().to_string(),
    );
    let mut ttl: Option<Sp<String>> = None;
    let mut jitter: Option<Sp<String>> = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("kv")) {
        let r =
            attr.parse_nested_meta(|meta| entity_key(&meta, &mut e, &mut ttl, &mut jitter, diags));
        if let Err(err) = r {
            diags.push(Diagnostic::error(
                "E001",
                &Origin::Span(err.span()),
                err.to_string(),
            ));
        }
    }
    match (ttl, jitter) {
        (Some(t), j) => e.ttl = Ttl::parse(t, j, diags),
        (None, Some(j)) => diags.error(
            "E116",
            &j.origin,
            "`ttl_jitter` needs a `ttl`; add `ttl = \"…\"` or remove the jitter",
        ),
        (None, None) => {}
    }
    for f in &named.named {
        parse_field(f, &mut e, diags);
    }
    Some(e)
}

fn entity_key(
    meta: &ParseNestedMeta<'_>,
    e: &mut Entity,
    ttl: &mut Option<Sp<String>>,
    jitter: &mut Option<Sp<String>>,
    diags: &mut Diagnostics,
) -> syn::Result<()> {
    match meta_name(meta).as_str() {
        "namespace" => e.namespace = Some(lit_str(meta)?),
        "key" => {
            e.key = Some(crate::ir::KeyTemplate::new(lit_str(meta)?));
        }
        "version" => e.version = lit_u32(meta)?,
        "encoding" => {
            let s = lit_str(meta)?;
            let enc = match s.as_str() {
                "json" => Encoding::Json,
                "msgpack" => Encoding::MsgPack,
                other => {
                    let hint = suggestion(other, ["json", "msgpack"]);
                    return Err(syn::Error::new(
                        s.origin.span(),
                        format!(
                            "unknown encoding `{other}`{hint}; expected \"json\" or \"msgpack\""
                        ),
                    ));
                }
            };
            e.encoding = Sp::new(enc, s.origin);
        }
        "ttl" => *ttl = Some(lit_str(meta)?),
        "ttl_jitter" => *jitter = Some(lit_str(meta)?),
        "colocate" => e.colocate = Some(ident_value(meta)?),
        "crate" => e.crate_path = Some(lit_str(meta)?),
        "migrate_from" => e.migrate_from = Some(path_value(meta)?),
        "index" => e.indexes.push(parse_index(meta, diags)?),
        "counter" => e.counters.push(parse_counter(meta, diags)?),
        "relation" => e.relations.push(parse_relation(meta, diags)?),
        "migration" => e.migrations.push(parse_migration(meta, diags)?),
        _ => unknown(diags, meta, "entity attribute", ENTITY_KEYS)?,
    }
    Ok(())
}

fn missing_name(span: Span, what: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!("this {what} needs a name; add `name = \"…\"`"),
    )
}

fn parse_index(meta: &ParseNestedMeta<'_>, diags: &mut Diagnostics) -> syn::Result<Index> {
    let span = meta.path.span();
    let mut ix = Index {
        name: Sp::new(String::new(), Origin::Span(span)),
        fields: Vec::new(),
        unique: false,
        normalize: None,
        order_by: None,
        since: since_default(),
        origin: Origin::Span(span),
    };
    let mut name = None;
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "name" => name = Some(lit_str(&m)?),
            "fields" => ix.fields = ident_list(&m)?,
            "unique" => ix.unique = true,
            "normalize" => ix.normalize = Some(normalize_value(&m)?),
            "order_by" => ix.order_by = Some(field_expr_value(&m)?),
            "since" => ix.since = lit_u32(&m)?,
            _ => unknown(diags, &m, "index", INDEX_KEYS)?,
        }
        Ok(())
    })?;
    ix.name = name.ok_or_else(|| missing_name(span, "index"))?;
    Ok(ix)
}

fn parse_counter(meta: &ParseNestedMeta<'_>, diags: &mut Diagnostics) -> syn::Result<Counter> {
    let span = meta.path.span();
    let mut c = Counter {
        name: Sp::new(String::new(), Origin::Span(span)),
        group_by: Vec::new(),
        sum: None,
        since: since_default(),
        origin: Origin::Span(span),
    };
    let mut name = None;
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "name" => name = Some(lit_str(&m)?),
            "group_by" => c.group_by = field_expr_list(&m)?,
            "sum" => c.sum = Some(ident_value(&m)?),
            "since" => c.since = lit_u32(&m)?,
            _ => unknown(diags, &m, "counter", COUNTER_KEYS)?,
        }
        Ok(())
    })?;
    c.name = name.ok_or_else(|| missing_name(span, "counter"))?;
    Ok(c)
}

fn parse_relation(meta: &ParseNestedMeta<'_>, diags: &mut Diagnostics) -> syn::Result<Relation> {
    let span = meta.path.span();
    let mut name = None;
    let mut belongs_to = None;
    let mut by = None;
    let mut order_by = None;
    let mut since = since_default();
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "name" => name = Some(lit_str(&m)?),
            "belongs_to" => belongs_to = Some(path_value(&m)?),
            "by" => by = Some(ident_value(&m)?),
            "order_by" => order_by = Some(field_expr_value(&m)?),
            "since" => since = lit_u32(&m)?,
            _ => unknown(diags, &m, "relation", RELATION_KEYS)?,
        }
        Ok(())
    })?;
    let need = |what: &str| syn::Error::new(span, format!("this relation needs `{what} = …`"));
    Ok(Relation {
        name: name.ok_or_else(|| missing_name(span, "relation"))?,
        belongs_to: belongs_to.ok_or_else(|| need("belongs_to"))?,
        by: by.ok_or_else(|| need("by"))?,
        order_by,
        since,
        origin: Origin::Span(span),
    })
}

fn parse_migration(meta: &ParseNestedMeta<'_>, diags: &mut Diagnostics) -> syn::Result<Migration> {
    let span = meta.path.span();
    let mut from = None;
    let mut mig = Migration {
        from: since_default(),
        rename: Vec::new(),
        add: Vec::new(),
        remove: Vec::new(),
        origin: Origin::Span(span),
    };
    meta.parse_nested_meta(|m| {
        match meta_name(&m).as_str() {
            "from" => from = Some(lit_u32(&m)?),
            "rename" => m.parse_nested_meta(|r| {
                let old = sp(meta_name(&r), r.path.span());
                mig.rename.push((old, ident_value(&r)?));
                Ok(())
            })?,
            "add" => m.parse_nested_meta(|a| {
                let field = sp(meta_name(&a), a.path.span());
                let lit: syn::Lit = a.value()?.parse()?;
                let value = sp(json_of_lit(&lit)?, lit.span());
                mig.add.push((field, value));
                Ok(())
            })?,
            "add_json" => m.parse_nested_meta(|a| {
                let field = sp(meta_name(&a), a.path.span());
                let s = lit_str(&a)?;
                let value = serde_json::from_str(&s).map_err(|e| {
                    syn::Error::new(s.origin.span(), format!("`{}` is not valid JSON: {e}", *s))
                })?;
                mig.add.push((field, Sp::new(value, s.origin)));
                Ok(())
            })?,
            "remove" => mig.remove.extend(ident_list(&m)?),
            _ => unknown(diags, &m, "migration", MIGRATION_KEYS)?,
        }
        Ok(())
    })?;
    mig.from = from.ok_or_else(|| {
        syn::Error::new(
            span,
            "this migration needs `from = N`, the version it upgrades",
        )
    })?;
    Ok(mig)
}

fn parse_field(f: &syn::Field, e: &mut Entity, diags: &mut Diagnostics) {
    let Some(ident) = &f.ident else { return };
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
    let (ty, optional) = classify(&f.ty);
    let origin = Origin::Span(ident.span());
    e.fields.push(Field {
        name: Sp::new(name.clone(), origin.clone()),
        ty: Sp::new(ty, Origin::Span(f.ty.span())),
        optional,
        default: None,
        origin: origin.clone(),
    });
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("kv")) {
        let mut kind: Option<(bool, Span)> = None;
        let mut ix_name = None;
        let mut normalize = None;
        let mut order_by = None;
        let mut since = since_default();
        let r = attr.parse_nested_meta(|m| {
            match meta_name(&m).as_str() {
                "unique" => kind = Some((true, m.path.span())),
                "index" => kind = Some((false, m.path.span())),
                "normalize" => normalize = Some(normalize_value(&m)?),
                "order_by" => order_by = Some(field_expr_value(&m)?),
                "name" => ix_name = Some(lit_str(&m)?),
                "since" => since = lit_u32(&m)?,
                _ => unknown(diags, &m, "field attribute", FIELD_KEYS)?,
            }
            Ok(())
        });
        if let Err(err) = r {
            diags.push(Diagnostic::error(
                "E001",
                &Origin::Span(err.span()),
                err.to_string(),
            ));
            continue;
        }
        let Some((unique, span)) = kind else {
            diags.error("E004", &Origin::Span(attr.span()), format!("this attribute on field `{name}` needs `unique` or `index` to say which index it declares"));
            continue;
        };
        e.indexes.push(Index {
            name: ix_name.unwrap_or_else(|| Sp::new(format!("by_{name}"), Origin::Span(span))),
            fields: vec![Sp::new(name.clone(), origin.clone())],
            unique,
            normalize,
            order_by,
            since,
            origin: Origin::Span(span),
        });
    }
}

fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn generic_args(seg: &syn::PathSegment) -> Vec<&syn::Type> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Maps a Rust field type to the IR type and whether it is `Option<…>`.
pub fn classify(ty: &syn::Type) -> (FieldType, bool) {
    if let Some(seg) = last_segment(ty) {
        let args = generic_args(seg);
        if seg.ident == "Option" && args.len() == 1 {
            return (classify_inner(args[0]), true);
        }
    }
    (classify_inner(ty), false)
}

fn classify_inner(ty: &syn::Type) -> FieldType {
    let Some(seg) = last_segment(ty) else {
        return FieldType::Named(ty.to_token_stream().to_string().replace(' ', ""));
    };
    let args = generic_args(seg);
    match (seg.ident.to_string().as_str(), args.as_slice()) {
        ("String", []) => FieldType::String,
        ("bool", []) => FieldType::Bool,
        ("i32", []) => FieldType::I32,
        ("i64", []) => FieldType::I64,
        ("u32", []) => FieldType::U32,
        ("u64", []) => FieldType::U64,
        ("f64", []) => FieldType::F64,
        ("Timestamp", []) => FieldType::Timestamp,
        ("Date", []) => FieldType::Date,
        ("Uuid", []) => FieldType::Uuid,
        ("Vec", [inner]) if last_segment(inner).is_some_and(|s| s.ident == "u8") => {
            FieldType::Bytes
        }
        ("Vec", [inner]) => FieldType::List(Box::new(classify_inner(inner))),
        ("BTreeMap", [_, v]) => FieldType::Map(Box::new(classify_inner(v))),
        _ => FieldType::Named(ty.to_token_stream().to_string().replace(' ', "")),
    }
}
