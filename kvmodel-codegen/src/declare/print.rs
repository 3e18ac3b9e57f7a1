//! The printer: a model as Rust declarations annotated with
//! `#[derive(KvEntity)]` and `#[kv(…)]`; the derive owns every impl.

use std::collections::{BTreeMap, BTreeSet};

use heck::ToSnakeCase;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::clippy;
use crate::ir::{Entity, Field, FieldType, Model, Tally, TypeDef, TypeKind};
use crate::vocab::{self, ident};

/// Whether a type allows `Eq` and `Hash`: no float anywhere inside it,
/// through lists, maps and named structs (each visited once, so recursive
/// types end).
fn hashable(ty: &FieldType, model: &Model) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo = vec![ty];
    while let Some(t) = todo.pop() {
        match t {
            FieldType::F64 => return false,
            FieldType::List(t) | FieldType::Map(t) => todo.push(t),
            FieldType::Named(n) if seen.insert(n.as_str()) => {
                let fields = model.struct_fields(n).unwrap_or_default();
                todo.extend(fields.iter().map(|f| &f.ty.value));
            }
            _ => {}
        }
    }
    true
}

/// `, description = "…"` inside an index, counter, relation or link
/// attribute: the text goes on the repository methods that read it, not on
/// the struct (doc comments above the attribute would document the struct).
fn description_tokens(description: Option<&String>) -> Option<TokenStream> {
    description.map(|d| {
        let d = d.as_str();
        quote!(, description = #d)
    })
}

/// `/// …` lines of a description; blank lines stay blank.
fn docs(description: Option<&String>) -> TokenStream {
    let lines = description.into_iter().flat_map(|d| d.lines()).map(|l| {
        if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        }
    });
    quote!(#(#[doc = #lines])*)
}

/// The derives of every declaration, two lists that each fit on a line:
/// the standard traits (and kvmodel's), then serde's with its crate path.
fn derives(std: TokenStream) -> TokenStream {
    quote! {
        #[derive(#std)]
        #[derive(::kvmodel::serde::Serialize, ::kvmodel::serde::Deserialize)]
        #[serde(crate = "::kvmodel::serde")]
    }
}

/// The Rust type of a field type, as users read it.
fn rust_type(ty: &FieldType) -> TokenStream {
    ty.to_rust(&quote!(::kvmodel), true)
}

/// The name of the function serde calls for a field's default, before
/// `default_fn_names` tells apart the few pairs that share it
/// (`Thing.a_b` and `ThingA.b`).
pub fn default_fn_name(owner: &str, field: &str) -> String {
    format!("__kvmodel_default_{}_{}", owner.to_snake_case(), field)
}

/// The name of every default function, by owner and field: the name of
/// [`default_fn_name`] when no other field shares it, otherwise that name
/// with the first number suffix (`_1`, `_2`, …) that no function takes.
/// The reader follows `#[serde(default = "…")]`, so any unique name reads
/// back.
fn default_fn_names(model: &Model) -> BTreeMap<(String, String), String> {
    let owners = model
        .types
        .iter()
        .filter_map(|t| match &t.kind {
            TypeKind::Struct(fields) => Some((t.name.as_str(), fields.as_slice())),
            TypeKind::Enum(_) => None,
        })
        .chain(
            model
                .entities
                .iter()
                .map(|e| (e.name.as_str(), e.fields.as_slice())),
        );
    let pairs: Vec<(String, String)> = owners
        .flat_map(|(owner, fields)| {
            fields
                .iter()
                .filter(|f| f.default.is_some())
                .map(move |f| (owner.to_owned(), f.name.value.clone()))
        })
        .collect();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (o, f) in &pairs {
        *counts.entry(default_fn_name(o, f)).or_default() += 1;
    }
    let mut taken: BTreeSet<String> = counts.keys().cloned().collect();
    let mut names = BTreeMap::new();
    for (o, f) in pairs {
        let base = default_fn_name(&o, &f);
        let name = if counts[&base] == 1 {
            base
        } else {
            let mut n = 1;
            while taken.contains(&format!("{base}_{n}")) {
                n += 1;
            }
            format!("{base}_{n}")
        };
        taken.insert(name.clone());
        names.insert((o, f), name);
    }
    names
}

/// A Rust expression for a default value, for the types defaults support
/// (checked when the schema is read).
fn default_expr(ty: &FieldType, v: &serde_json::Value) -> TokenStream {
    match (ty, v) {
        (FieldType::String, serde_json::Value::String(s)) => quote!(String::from(#s)),
        (FieldType::Bool, serde_json::Value::Bool(b)) => quote!(#b),
        (
            FieldType::I32 | FieldType::I64 | FieldType::U32 | FieldType::U64,
            serde_json::Value::Number(n),
        ) => {
            let lit = Literal::i64_unsuffixed(n.as_i64().unwrap_or_default());
            quote!(#lit)
        }
        // A whole number stays whole (`3f64`, not `3.0`), so the default
        // reads back as it was written.
        (FieldType::F64, serde_json::Value::Number(n)) if !n.is_f64() => {
            let digits = n.to_string();
            let (minus, digits) = match digits.strip_prefix('-') {
                Some(d) => (quote!(-), d.to_owned()),
                None => (quote!(), digits),
            };
            let lit = syn::LitFloat::new(&format!("{digits}f64"), proc_macro2::Span::call_site());
            quote!(#minus #lit)
        }
        (FieldType::F64, serde_json::Value::Number(n)) => {
            let lit = Literal::f64_unsuffixed(n.as_f64().unwrap_or_default());
            quote!(#lit)
        }
        (FieldType::Named(t), serde_json::Value::String(v)) => {
            let v = vocab::variant_ident(v);
            quote!(#t::#v)
        }
        (_, serde_json::Value::Null) => quote!(None),
        _ => quote!(Vec::new()),
    }
}

struct Out {
    items: Vec<TokenStream>,
    defaults: Vec<TokenStream>,
    /// See [`default_fn_names`].
    default_names: BTreeMap<(String, String), String>,
}

fn field_tokens(owner: &str, f: &Field, model: &Model, out: &mut Out) -> TokenStream {
    let name = ident(&f.name);
    let ty = rust_type(&f.ty);
    // A type that holds itself in place has no size: the field that closes
    // the cycle holds it in a box (serde reads and writes it unchanged).
    let ty = if model.needs_box(owner, f) {
        quote!(Box<#ty>)
    } else {
        ty
    };
    let ty = if f.optional { quote!(Option<#ty>) } else { ty };
    let mut attrs = Vec::new();
    if let Some(d) = &f.default {
        let fname = out
            .default_names
            .get(&(owner.to_owned(), f.name.value.clone()))
            .cloned()
            .unwrap_or_else(|| default_fn_name(owner, &f.name));
        let fid = format_ident!("{}", fname);
        let expr = if f.optional && !d.value.is_null() {
            let inner = default_expr(&f.ty, &d.value);
            quote!(Some(#inner))
        } else {
            default_expr(&f.ty, &d.value)
        };
        let doc = format!(" The schema's default for `{owner}.{}`.", *f.name);
        out.defaults.push(quote! {
            #[doc = #doc]
            fn #fid() -> #ty { #expr }
        });
        attrs.push(quote!(#[serde(default = #fname)]));
    }
    if f.expiry.is_some() {
        attrs.push(quote!(#[kv(expiry)]));
    }
    let docs = docs(f.description.as_ref());
    quote! {
        #docs
        #(#attrs)*
        pub #name: #ty
    }
}

fn type_tokens(def: &TypeDef, model: &Model, out: &mut Out) -> TokenStream {
    let name = ident(&def.name);
    let docs = docs(def.description.as_ref());
    match &def.kind {
        TypeKind::Enum(variants) => {
            let vs = variants.iter().map(|v| {
                let id = vocab::variant_ident(v);
                let text = v.as_str();
                quote!(#[serde(rename = #text)] #id)
            });
            let derives = derives(quote!(
                Debug,
                Clone,
                Copy,
                PartialEq,
                Eq,
                Hash,
                PartialOrd,
                Ord,
                ::kvmodel::KvEnum
            ));
            quote! {
                #docs
                #derives
                pub enum #name { #(#vs,)* }
            }
        }
        TypeKind::Struct(fields) => {
            let eq = fields.iter().all(|f| hashable(&f.ty, model));
            let extra = if eq { quote!(, Eq, Hash) } else { quote!() };
            let fs: Vec<TokenStream> = fields
                .iter()
                .map(|f| field_tokens(&def.name, f, model, out))
                .collect();
            let derives = derives(quote!(Debug, Clone, PartialEq #extra));
            quote! {
                #docs
                #derives
                pub struct #name { #(#fs,)* }
            }
        }
    }
}

fn list<'a>(items: impl IntoIterator<Item = &'a str>) -> TokenStream {
    let ids = items.into_iter().map(ident);
    quote!(#(#ids),*)
}

fn field_expr_tokens(x: &crate::ir::FieldExpr) -> TokenStream {
    let f = ident(x.field());
    match x.bucket() {
        None => quote!(#f),
        Some(b) => {
            let b = ident(b);
            quote!(#b(#f))
        }
    }
}

/// `allow(W001, W002)`, or nothing.
fn allow_tokens(allow: &[crate::Sp<crate::ir::Lint>]) -> Option<TokenStream> {
    if allow.is_empty() {
        return None;
    }
    let codes = allow.iter().map(|l| format_ident!("{}", l.code()));
    Some(quote!(allow(#(#codes),*)))
}

/// `, keep = N` of a capped collection.
fn keep_tokens(keep: Option<u32>) -> TokenStream {
    match keep {
        Some(k) => {
            let k = Literal::u32_unsuffixed(k);
            quote!(, keep = #k)
        }
        None => quote!(),
    }
}

fn since_tokens(since: u32) -> TokenStream {
    if since == crate::ir::DEFAULT_SINCE {
        quote!()
    } else {
        let s = Literal::u32_unsuffixed(since);
        quote!(, since = #s)
    }
}

/// A value in attribute syntax: literals, `None`, `[…]` and `{ key = … }`
/// (keys that are no identifier are quoted).
fn value_tokens(v: &serde_json::Value) -> TokenStream {
    use serde_json::Value as J;
    match v {
        J::Null => quote!(None),
        J::Bool(b) => quote!(#b),
        J::String(s) => quote!(#s),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => {
                let lit = Literal::u64_unsuffixed(i.unsigned_abs());
                if i < 0 { quote!(-#lit) } else { quote!(#lit) }
            }
            (None, Some(f)) => {
                let lit = Literal::f64_unsuffixed(f.abs());
                if f < 0.0 { quote!(-#lit) } else { quote!(#lit) }
            }
            (None, None) => {
                let lit = Literal::u64_unsuffixed(n.as_u64().unwrap_or_default());
                quote!(#lit)
            }
        },
        J::Array(items) => {
            let items = items.iter().map(value_tokens);
            quote!([#(#items),*])
        }
        J::Object(entries) => {
            let entries = entries.iter().map(|(k, v)| {
                let v = value_tokens(v);
                match syn::parse_str::<syn::Ident>(k) {
                    Ok(k) => quote!(#k = #v),
                    Err(_) => quote!(#k = #v),
                }
            });
            quote!({ #(#entries),* })
        }
    }
}

fn entity_tokens(e: &Entity, model: &Model, out: &mut Out) -> TokenStream {
    let name = ident(&e.name);
    let mut head = Vec::new();
    if let Some(ns) = &e.namespace {
        let ns = ns.as_str();
        head.push(quote!(namespace = #ns));
    }
    if let Some(k) = &e.key {
        let k = k.text.as_str();
        head.push(quote!(key = #k));
    }
    if e.version.value != crate::ir::DEFAULT_VERSION {
        let v = Literal::u32_unsuffixed(e.version.value);
        head.push(quote!(version = #v));
    }
    if e.encoding.value != crate::ir::Encoding::default() {
        let enc = e.encoding.as_str();
        head.push(quote!(encoding = #enc));
    }
    if let Some(t) = &e.ttl {
        let after = vocab::format_duration_ms(t.after_ms.value);
        head.push(quote!(ttl = #after));
        if let Some(j) = &t.jitter_permille {
            let j = vocab::format_jitter(j.value);
            head.push(quote!(ttl_jitter = #j));
        }
    }
    if let Some(f) = &e.feed {
        let retain = vocab::format_duration_ms(f.retain_ms.value);
        head.push(quote!(feed(retain = #retain)));
    }
    if let Some(c) = &e.colocate {
        let c = ident(c);
        head.push(quote!(colocate = #c));
    }
    if let Some(m) = &e.max_size {
        let m = vocab::format_size(m.value);
        head.push(quote!(max_size = #m));
    }
    if let Some(c) = &e.compress {
        let codec = c.codec.as_str();
        let above = vocab::format_size(c.above.value);
        head.push(quote!(compress(codec = #codec, above = #above)));
    }
    head.extend(allow_tokens(&e.allow));
    // What each `#[kv(…)]` holds. The names a construct declares or refers
    // to are quoted (`name = "by_email"`, `inverse = "posts"`,
    // `relation = "author"`), fields and types bare (`by = user_id`,
    // `belongs_to = User`), as the documentation writes them.
    let mut attrs = vec![quote!(kv(#(#head),*))];
    for ix in &e.indexes {
        let n = ix.name.as_str();
        let fields = ix.fields.iter().map(|x| field_expr_tokens(x));
        let fields = quote!(#(#fields),*);
        let unique = if ix.unique {
            quote!(, unique)
        } else {
            quote!()
        };
        let norm = ix.normalize.as_ref().map(|n| {
            let n = n.as_str();
            quote!(, normalize = #n)
        });
        let order = ix.order_by.as_ref().map(|o| {
            let o = field_expr_tokens(o);
            quote!(, order_by = #o)
        });
        let keep = keep_tokens(ix.keep.as_ref().map(|k| k.value));
        let since = since_tokens(ix.since.value);
        let allow = allow_tokens(&ix.allow).map(|a| quote!(, #a));
        let desc = description_tokens(ix.description.as_ref());
        attrs.push(quote!(
            kv(index(name = #n, fields(#fields) #unique #norm #order #keep #since #allow #desc))
        ));
    }
    for c in &e.counters {
        let n = c.name.as_str();
        let group = if c.group_by.is_empty() {
            quote!()
        } else {
            let g = c.group_by.iter().map(|g| field_expr_tokens(g));
            quote!(, group_by(#(#g),*))
        };
        let sum = c.sum.as_ref().map(|s| {
            let s = ident(s);
            quote!(, sum = #s)
        });
        let shards = c.shards.as_ref().map(|s| {
            let s = proc_macro2::Literal::u32_unsuffixed(s.value);
            quote!(, shards = #s)
        });
        let keep = c.keep.as_ref().map(|k| {
            let k = k.value.as_str();
            quote!(, keep = #k)
        });
        let since = since_tokens(c.since.value);
        let allow = allow_tokens(&c.allow).map(|a| quote!(, #a));
        let desc = description_tokens(c.description.as_ref());
        attrs.push(quote!(kv(counter(name = #n #sum #group #shards #keep #since #allow #desc))));
    }
    for r in &e.relations {
        let n = r.name.as_str();
        // `None` as a value means no value: an entity of that name is quoted.
        let to = if r.belongs_to.as_str() == "None" {
            quote!("None")
        } else {
            let to = ident(&r.belongs_to);
            quote!(#to)
        };
        let by = ident(&r.by);
        let order = r.order_by.as_ref().map(|o| {
            let o = field_expr_tokens(o);
            quote!(, order_by = #o)
        });
        let keep = keep_tokens(r.keep.as_ref().map(|k| k.value));
        let on_delete = r.on_delete.enforced().then(|| {
            let a = r.on_delete.as_str();
            quote!(, on_delete = #a)
        });
        let since = since_tokens(r.since.value);
        let desc = description_tokens(r.description.as_ref());
        attrs.push(
            quote!(kv(relation(name = #n, belongs_to = #to, by = #by #order #keep #on_delete #since #desc))),
        );
    }
    for l in &e.links {
        let (n, inverse) = (l.name.as_str(), l.inverse.as_str());
        // As for relations: `None` as a value means no value.
        let to = if l.to.as_str() == "None" {
            quote!("None")
        } else {
            let to = ident(&l.to);
            quote!(#to)
        };
        let desc = description_tokens(l.description.as_ref());
        attrs.push(quote!(kv(link(name = #n, to = #to, inverse = #inverse #desc))));
    }
    for d in &e.dependents {
        let to = ident(&d.entity);
        let rel = d.relation.as_str();
        attrs.push(quote!(kv(dependent(entity = #to, relation = #rel))));
    }
    let mut steps: Vec<_> = e.migrations.iter().collect();
    steps.sort_by_key(|m| m.from.value);
    for m in steps {
        let from = Literal::u32_unsuffixed(m.from.value);
        let mut parts = vec![quote!(from = #from)];
        if !m.rename.is_empty() {
            let r = m.rename.iter().map(|(a, b)| {
                let (a, b) = (ident(a), ident(b));
                quote!(#a = #b)
            });
            parts.push(quote!(rename(#(#r),*)));
        }
        // One `add(…)` per field: each is a box of its own, so a long list
        // or mapping breaks inside its own parentheses.
        for (f, v) in &m.add {
            let (f, v) = (ident(f), value_tokens(v));
            parts.push(quote!(add(#f = #v)));
        }
        if !m.remove.is_empty() {
            let r = list(m.remove.iter().map(|f| f.as_str()));
            parts.push(quote!(remove(#r)));
        }
        attrs.push(quote!(kv(migration(#(#parts),*))));
    }
    // Attributes whose values are all literals are meta items, whose parts
    // clippy compares across attributes: allowed where two share one.
    let allow = clippy::repeated(&attrs).then(|| quote!(#[allow(clippy::duplicated_attributes)]));
    let eq = e.fields.iter().all(|f| hashable(&f.ty, model));
    let extra = if eq { quote!(Eq, Hash,) } else { quote!() };
    let fields: Vec<TokenStream> = e
        .fields
        .iter()
        .map(|f| field_tokens(&e.name, f, model, out))
        .collect();
    let docs = docs(e.description.as_ref());
    let derives = derives(quote!(Debug, Clone, PartialEq, #extra ::kvmodel::KvEntity));
    quote! {
        #docs
        #derives
        #allow
        #(#[#attrs])*
        pub struct #name { #(#fields,)* }
    }
}

/// A standalone counter: its key fields as a struct deriving `KvCounter`.
fn tally_tokens(t: &Tally, model: &Model, out: &mut Out) -> TokenStream {
    let name = ident(&t.name);
    let mut head = Vec::new();
    if let Some(ns) = &t.namespace {
        let ns = ns.as_str();
        head.push(quote!(namespace = #ns));
    }
    if let Some(k) = &t.key {
        let k = k.text.as_str();
        head.push(quote!(key = #k));
    }
    if let Some(ms) = &t.ttl_ms {
        let ttl = vocab::format_duration_ms(ms.value);
        head.push(quote!(ttl = #ttl));
    }
    if let Some(n) = &t.shards {
        let n = Literal::u32_unsuffixed(n.value);
        head.push(quote!(shards = #n));
    }
    let eq = t.fields.iter().all(|f| hashable(&f.ty, model));
    let extra = if eq { quote!(Eq, Hash,) } else { quote!() };
    let fields: Vec<TokenStream> = t
        .fields
        .iter()
        .map(|f| field_tokens(&t.name, f, model, out))
        .collect();
    let docs = docs(t.description.as_ref());
    let derives = derives(quote!(Debug, Clone, PartialEq, #extra ::kvmodel::KvCounter));
    quote! {
        #docs
        #derives
        #[kv(#(#head),*)]
        pub struct #name { #(#fields,)* }
    }
}

/// The declarations of a model: its types, its entities, its standalone
/// counters, then the functions that give fields their defaults.
pub fn print(model: &Model) -> Result<Vec<syn::Item>, syn::Error> {
    let mut out = Out {
        items: Vec::new(),
        defaults: Vec::new(),
        default_names: default_fn_names(model),
    };
    for def in &model.types {
        let t = type_tokens(def, model, &mut out);
        out.items.push(t);
    }
    for e in &model.entities {
        let t = entity_tokens(e, model, &mut out);
        out.items.push(t);
    }
    for t in &model.tallies {
        let t = tally_tokens(t, model, &mut out);
        out.items.push(t);
    }
    out.items
        .iter()
        .chain(&out.defaults)
        .map(|t| syn::parse2(t.clone()))
        .collect()
}
