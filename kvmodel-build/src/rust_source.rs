//! Rust source files as schemas: the `#[derive(KvEntity)]` structs and
//! `#[derive(KvEnum)]` enums of a file, read as the derive reads them, so
//! `kvmodel check`, `keys` and `diff` serve derive users too.

use std::collections::BTreeSet;

use kvmodel_codegen::ir::{FieldType, Model, TypeKind};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Origin};

use crate::schema::Schema;

/// The items of a file with the items of its inline modules (`mod m { … }`)
/// beside them.
fn flatten(items: Vec<syn::Item>, out: &mut Vec<syn::Item>) {
    for item in items {
        match item {
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = m.content {
                    flatten(inner, out);
                }
            }
            other => out.push(other),
        }
    }
}

/// The names a field type refers to.
fn named(ty: &FieldType, out: &mut Vec<String>) {
    match ty {
        FieldType::List(inner) | FieldType::Map(inner) => named(inner, out),
        FieldType::Named(n) => out.push(n.to_string()),
        _ => {}
    }
}

/// Keeps the types the entities hold (directly or through struct types):
/// the other structs and enums of a source file are not the model's.
fn keep_held_types(model: &mut Model) {
    let mut todo: Vec<String> = Vec::new();
    for e in &model.entities {
        for f in &e.fields {
            named(&f.ty, &mut todo);
        }
    }
    let mut held = BTreeSet::new();
    while let Some(n) = todo.pop() {
        if !held.insert(n.clone()) {
            continue;
        }
        if let Some(TypeKind::Struct(fields)) =
            model.types.iter().find(|t| *t.name == n).map(|t| &t.kind)
        {
            for f in fields {
                named(&f.ty, &mut todo);
            }
        }
    }
    model.types.retain(|t| held.contains(t.name.as_str()));
}

/// `file:line:col` of a span of `file`'s source.
pub(crate) fn located(origin: &Origin, file: &str) -> Origin {
    match origin {
        Origin::Span(s) => {
            let at = s.start();
            Origin::Location {
                file: file.into(),
                line: u32::try_from(at.line).unwrap_or(u32::MAX).max(1),
                column: u32::try_from(at.column)
                    .unwrap_or(u32::MAX)
                    .saturating_add(1),
            }
        }
        other => other.clone(),
    }
}

/// Reads, checks and lints a Rust source file: its `#[derive(KvEntity)]`
/// structs (in the file or in its inline modules) with the `KvEnum` enums
/// and structs their fields hold. Each entity is checked as the derive
/// checks it, so what this reports is what compiling would. Never panics.
pub fn load_rust(file: &str, source: &str) -> Schema {
    let mut diags = Diagnostics::new();
    let model = match syn::parse_file(source) {
        Ok(parsed) => {
            let mut items = Vec::new();
            flatten(parsed.items, &mut items);
            let parsed = syn::File { items, ..parsed };
            let mut model = kvmodel_codegen::declare::read(&parsed, &mut diags);
            keep_held_types(&mut model);
            for e in &model.entities {
                kvmodel_codegen::check::check_entity(e, None, &mut diags);
            }
            // Each counter as its derive checks it, then the counters of
            // the file against each other and its entities and types.
            for t in &model.tallies {
                kvmodel_codegen::check::tally::check(t, None, &mut diags);
            }
            kvmodel_codegen::check::tally::check_across(&model, &mut diags);
            if !diags.has_errors() {
                crate::lint::lint(&model, &mut diags);
            }
            model
        }
        Err(e) => {
            diags.push(Diagnostic::error(
                "E000",
                &Origin::Span(e.span()),
                format!("the file is not valid Rust: {e}"),
            ));
            Model::default()
        }
    };
    let mut diagnostics: Vec<Diagnostic> = diags
        .into_vec()
        .into_iter()
        .map(|d| Diagnostic {
            origin: located(&d.origin, file),
            ..d
        })
        .collect();
    diagnostics.sort_by_key(|d| crate::schema::line_col(&d.origin));
    Schema {
        file: file.to_owned(),
        source: source.to_owned(),
        model,
        diagnostics,
    }
}
