//! A project: several files read as one model, schema files (YAML) and Rust
//! source files of derived entities in any mix. Each file is read by its
//! own front-end and keeps its diagnostics, located in it; the rules
//! between entities (a name declared twice, E125; key spaces that meet,
//! E126; relations and links to another file's entities) see every file.

use std::path::{Path, PathBuf};

use kvmodel_codegen::ir::{Dependent, Model};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Origin, Severity, Sp};

use crate::rust_source::load_rust;
use crate::schema::{Others, Schema, load_among, load_file};

/// Several files read as one model.
#[derive(Debug)]
pub struct Project {
    /// Each file, in the order given, with its own model and diagnostics.
    pub schemas: Vec<Schema>,
    /// The entities and types of every file, in file order.
    pub model: Model,
}

impl Project {
    /// True if any file has an error.
    pub fn has_errors(&self) -> bool {
        self.schemas.iter().any(Schema::has_errors)
    }

    /// The number of diagnostics of `severity` in every file.
    pub fn count(&self, severity: Severity) -> usize {
        self.schemas
            .iter()
            .flat_map(|s| &s.diagnostics)
            .filter(|d| d.severity == severity)
            .count()
    }

    /// Every file's diagnostics, each rendered against its own source.
    pub fn render_diagnostics(&self, color: bool) -> String {
        self.schemas
            .iter()
            .filter(|s| !s.diagnostics.is_empty())
            .map(|s| s.render_diagnostics(color))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The file names, joined with `, ` (for reports).
    pub fn files(&self) -> String {
        self.schemas
            .iter()
            .map(|s| s.file.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A file of a project that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read `{}`: {source}", path.display())]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// Reads the files at `paths` (a name ending in `.rs` is Rust source of
/// derived entities, any other a schema file) and loads them as one
/// project ([`load_project`]).
pub fn load_files(paths: &[PathBuf]) -> Result<Project, LoadError> {
    let mut inputs = Vec::new();
    for path in paths {
        let source = std::fs::read_to_string(path).map_err(|source| LoadError {
            path: path.clone(),
            source,
        })?;
        inputs.push((path.display().to_string(), source));
    }
    Ok(load_project(&inputs))
}

/// The last segment of a Rust path (`Author` of `crate::blog::Author`).
fn last(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path).trim()
}

/// Loads `(file name, source)` pairs as one project: each file by its
/// front-end, checked beside the entities of the others. Never panics.
pub fn load_project(inputs: &[(String, String)]) -> Project {
    let rust = |file: &str| is_rust_source(Path::new(file));
    let mut schemas: Vec<Schema> = inputs
        .iter()
        .map(|(file, source)| {
            if rust(file) {
                load_rust(file, source)
            } else {
                crate::schema::load(file, source)
            }
        })
        .collect();
    if schemas.len() > 1 {
        // Schema files again, now that the others' entities are known.
        let models: Vec<Model> = schemas.iter().map(|s| s.model.clone()).collect();
        for (i, (file, source)) in inputs.iter().enumerate() {
            let mut others = Others::default();
            for (j, m) in models.iter().enumerate().filter(|(j, _)| *j != i) {
                others.entities.extend(m.entities.iter().cloned());
                others.types.extend(m.types.iter().cloned());
                if j < i {
                    others.before = others.entities.len();
                    others.tallies.extend(m.tallies.iter().cloned());
                }
            }
            if rust(file) {
                across(&mut schemas[i], &models[..i]);
                tallies_across(&mut schemas[i], &others);
            } else {
                schemas[i] = load_among(file, source, &others);
            }
        }
        dependents(&mut schemas);
    }
    let mut model = Model::default();
    for s in &schemas {
        model.entities.extend(s.model.entities.iter().cloned());
        model.tallies.extend(s.model.tallies.iter().cloned());
        for t in &s.model.types {
            if !model.types.iter().any(|o| *o.name == *t.name) {
                model.types.push(t.clone());
            }
        }
    }
    Project { schemas, model }
}

/// The rules between entities for a Rust source file: what its entities
/// add to those of the files before it (an entity of a later file is
/// reported in that file).
fn across(schema: &mut Schema, before: &[Model]) {
    let earlier = Model {
        entities: before.iter().flat_map(|m| m.entities.clone()).collect(),
        ..Model::default()
    };
    let mut known = Diagnostics::new();
    kvmodel_codegen::check::check_across(&earlier, &mut known);
    let mut known = known.into_vec();
    let mut with = earlier.clone();
    with.entities.extend(schema.model.entities.iter().cloned());
    let mut found = Diagnostics::new();
    kvmodel_codegen::check::check_across(&with, &mut found);
    for d in found.into_vec() {
        if let Some(at) = known
            .iter()
            .position(|k| k.code == d.code && k.message == d.message)
        {
            known.remove(at);
        } else if matches!(d.origin, Origin::Span(_)) {
            let origin = crate::rust_source::located(&d.origin, &schema.file);
            schema.diagnostics.push(Diagnostic { origin, ..d });
        }
    }
    schema
        .diagnostics
        .sort_by_key(|d| crate::schema::line_col(&d.origin));
}

/// The rules of standalone counters for a Rust source file beside the
/// other files: its counters against every other file's entities and types
/// and the counters of the files before it (E153, E154), reported in this
/// file. What the file's own check found already is not repeated.
fn tallies_across(schema: &mut Schema, others: &Others) {
    if schema.model.tallies.is_empty() {
        return;
    }
    let model = others.around(&schema.model);
    let mut found = Diagnostics::new();
    kvmodel_codegen::check::tally::check_across_from(&model, others.tallies.len(), &mut found);
    for d in found.into_vec() {
        let origin = crate::rust_source::located(&d.origin, &schema.file);
        let known = schema.diagnostics.iter().any(|k| {
            k.code == d.code
                && k.message == d.message
                && crate::schema::line_col(&k.origin) == crate::schema::line_col(&origin)
        });
        if !known {
            schema.diagnostics.push(Diagnostic { origin, ..d });
        }
    }
    schema
        .diagnostics
        .sort_by_key(|d| crate::schema::line_col(&d.origin));
}

/// A relation of one file's entity to another file's that its parent's
/// delete enforces (`on_delete: restrict | cascade`): a schema file's
/// parent lists it among its dependents, as it lists its own file's; a
/// derived parent must name it in `dependent(…)`, as the derive requires.
fn dependents(schemas: &mut [Schema]) {
    let mut found = Vec::new();
    for (j, s) in schemas.iter().enumerate() {
        for child in &s.model.entities {
            for r in child.relations.iter().filter(|r| r.on_delete.enforced()) {
                let parent = last(r.belongs_to.as_str());
                let at = schemas.iter().enumerate().find_map(|(i, p)| {
                    let k = p
                        .model
                        .entities
                        .iter()
                        .position(|e| e.name.as_str() == parent)?;
                    Some((i, k))
                });
                if let Some((i, k)) = at.filter(|(i, _)| *i != j) {
                    found.push((i, k, j, child.name.value.clone(), r.clone()));
                }
            }
        }
    }
    for (i, k, j, child, r) in found {
        let child_file = schemas[j].file.clone();
        let rust = is_rust_source(Path::new(&schemas[i].file));
        let parent = &mut schemas[i].model.entities[k];
        let named = parent
            .dependents
            .iter()
            .any(|d| last(&d.entity) == last(&child) && *d.relation == *r.name);
        if named {
            continue;
        }
        if !rust {
            parent.dependents.push(Dependent {
                entity: Sp::new(child, r.on_delete.origin.clone()),
                relation: Sp::new(r.name.value.clone(), r.on_delete.origin.clone()),
                origin: r.on_delete.origin.clone(),
            });
            continue;
        }
        let child = last(&child);
        let action = if is_rust_source(Path::new(&child_file)) {
            format!("on_delete = \"{}\"", *r.on_delete)
        } else {
            format!("on_delete: {}", *r.on_delete)
        };
        let d = Diagnostic::error(
            "E148",
            &crate::rust_source::located(&parent.name.origin, &schemas[i].file),
            format!(
                "`{child}` (in `{child_file}`) has the relation `{}` to `{}` with `{action}`, so `{}` must name it among its dependents",
                *r.name, *parent.name, *parent.name
            ),
        )
        .help(format!(
            "add `#[kv(dependent(entity = {child}, relation = \"{}\"))]` to `{}`",
            *r.name, *parent.name
        ));
        schemas[i].diagnostics.push(d);
        schemas[i]
            .diagnostics
            .sort_by_key(|d| crate::schema::line_col(&d.origin));
    }
}

/// Whether `path` names a Rust source file (`.rs`) rather than a schema.
pub fn is_rust_source(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "rs")
}

/// Reads and loads a model from disk: a Rust source file of derived
/// entities ([`load_rust`]) when the name ends in `.rs`, a schema file
/// ([`load`](crate::load)) otherwise.
pub fn load_model_file(path: &Path) -> std::io::Result<Schema> {
    if !is_rust_source(path) {
        return load_file(path);
    }
    let source = std::fs::read_to_string(path)?;
    Ok(load_rust(&path.display().to_string(), &source))
}
