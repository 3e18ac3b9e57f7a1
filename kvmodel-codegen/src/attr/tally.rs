//! `#[derive(KvCounter)]`: a standalone counter's `#[kv(…)]` attributes
//! and key fields to IR.

use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;

use super::keys::{Keys, meta_name};
use super::value::{self, Reader};
use super::{docs, named_fields, no_generics, plain_field, syntax};
use crate::ir::{KeyTemplate, Tally};
use crate::origin::{Diagnostics, Origin, Sp};
use crate::vocab;

/// The keys of `#[kv(…)]` on a `KvCounter` struct.
const KEYS: &[&str] = &["namespace", "crate"];

/// Parses a `#[derive(KvCounter)]` input into a standalone counter. Errors
/// go to `diags`; `None` only when the input is not a struct with named
/// fields.
pub fn parse_tally(input: &syn::DeriveInput, diags: &mut Diagnostics) -> Option<Tally> {
    let named = named_fields(input, "KvCounter", diags)?;
    no_generics(input, "KvCounter", diags);
    let name = &input.ident;
    let mut t = Tally::new(
        Sp::new(name.to_string(), Origin::Span(name.span())),
        input.vis.clone(),
    );
    t.description = docs(&input.attrs);
    let what = format!("counter `{name}`");
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("kv")) {
        let mut keys = Keys::new(KEYS, vocab::TALLY_KEYS);
        let mut r = Reader { diags };
        let parsed = attr.parse_nested_meta(|meta| tally_key(&meta, &mut t, &mut keys, &mut r));
        keys.report(&what, &mut r);
        if let Err(err) = parsed {
            syntax(diags, err);
        }
    }
    for f in &named.named {
        let Some(field) = plain_field(f) else {
            continue;
        };
        // A key field is only a key field: it takes no attribute.
        for attr in f.attrs.iter().filter(|a| a.path().is_ident("kv")) {
            diags.error(
                "E001",
                &Origin::Span(attr.meta.span()),
                format!(
                    "the key field `{}` of counter `{name}` takes no `#[kv(…)]` attribute: a counter's fields are its key and nothing more",
                    *field.name
                ),
            );
        }
        t.fields.push(field);
    }
    Some(t)
}

fn tally_key(
    meta: &ParseNestedMeta<'_>,
    t: &mut Tally,
    keys: &mut Keys,
    r: &mut Reader<'_>,
) -> syn::Result<()> {
    let key = meta_name(meta);
    let what = format!("`{key}`");
    match key.as_str() {
        "namespace" => t.namespace = r.string(&value::parse(meta.value()?)?, &what),
        "key" => {
            t.key = r
                .string(&value::parse(meta.value()?)?, &what)
                .map(KeyTemplate::new)
        }
        "ttl" => t.ttl_ms = r.duration(&value::parse(meta.value()?)?, &what),
        "shards" => {
            t.shards = r.bounded(&value::parse(meta.value()?)?, &what, 2, vocab::MAX_SHARDS)
        }
        "crate" => t.crate_path = value::rust(r, meta.value()?, super::CRATE_PATH, &what)?,
        _ => keys.unknown(meta)?,
    }
    Ok(())
}
