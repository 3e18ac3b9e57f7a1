//! One schema file, read and checked ([`Schema`]), and the declarations
//! generated from schemas ([`generate`]).

use std::path::Path;

use kvmodel_codegen::ir::{Entity, Model};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Origin, Severity};

use crate::{declare, lint, lower, node, render};

/// One schema file, read and checked.
#[derive(Debug)]
pub struct Schema {
    /// The file name as given (used in diagnostics).
    pub file: String,
    /// Its text.
    pub source: String,
    /// The model (possibly partial when there are errors).
    pub model: Model,
    /// Errors and warnings, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Schema {
    /// True if any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// True if any diagnostic is a warning.
    pub fn has_warnings(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Warning)
    }

    /// Each warning on one line (`file:line:col: warning[W…]: …`), followed
    /// by its help on a line of its own (`  help: …`), as a build script
    /// passes them to `cargo:warning=`.
    pub fn warning_lines(&self) -> Vec<String> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .flat_map(|d| {
                let head = render(d, &self.source, false)
                    .lines()
                    .next()
                    .map(str::to_owned);
                // The help (with the `allow` that silences it) on a line
                // of its own: Cargo shows each `cargo:warning` as one line.
                let help = d.help.as_ref().map(|h| format!("  help: {h}"));
                head.into_iter().chain(help)
            })
            .collect()
    }

    /// Every diagnostic rendered with its source line and a caret.
    pub fn render_diagnostics(&self, color: bool) -> String {
        self.diagnostics
            .iter()
            .map(|d| render(d, &self.source, color))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The Rust module name of the generated file (the file stem).
    pub fn module_name(&self) -> String {
        let stem = Path::new(&self.file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("schema");
        heck::ToSnakeCase::to_snake_case(stem)
    }
}

pub(crate) fn line_col(o: &Origin) -> (u32, u32) {
    match o {
        Origin::Location { line, column, .. } => (*line, *column),
        _ => (0, 0),
    }
}

/// Reads, lowers, checks and lints one schema file. Never panics: every
/// problem becomes a located diagnostic, and all of them are reported.
pub fn load(file: &str, source: &str) -> Schema {
    load_among(file, source, &Others::default())
}

/// [`load`], with the entities and types of the other files of a project
/// beside the file's own (`others.entities` of the files before it first,
/// then those after it, marked by the entity at `others_before`): relations
/// and links may name them, and the rules between entities see them. Only
/// the diagnostics located in this file are kept: each file reports its own.
pub(crate) fn load_among(file: &str, source: &str, others: &Others) -> Schema {
    let loc = node::Locator::new(file);
    let mut diags = Diagnostics::new();
    let model = match node::parse(source, &loc, &mut diags) {
        Ok(doc) => {
            let mut lower = lower::Lower {
                loc: loc.clone(),
                diags: &mut diags,
            };
            let mut model = lower.model(&doc);
            for e in &mut model.entities {
                e.migrations.sort_by_key(|m| m.from.value);
            }
            if others.is_empty() {
                kvmodel_codegen::check::check_model(&model, &mut diags);
            } else {
                let mut found = Diagnostics::new();
                kvmodel_codegen::check::check_model(&others.around(&model), &mut found);
                for d in found.into_vec() {
                    if matches!(&d.origin, Origin::Location { file: f, .. } if **f == *file) {
                        diags.push(d);
                    }
                }
            }
            if !diags.has_errors() {
                lint::lint(&model, &mut diags);
            }
            model
        }
        Err(e) => {
            let origin = e.location().map_or_else(|| loc.start(), |l| loc.loc(&l));
            diags.error("E000", &origin, node::syntax_error(&e));
            Model::default()
        }
    };
    let mut diagnostics = diags.into_vec();
    diagnostics.sort_by_key(|d| line_col(&d.origin));
    Schema {
        file: file.to_owned(),
        source: source.to_owned(),
        model,
        diagnostics,
    }
}

/// Reads and loads a schema file from disk.
pub fn load_file(path: &Path) -> std::io::Result<Schema> {
    let source = std::fs::read_to_string(path)?;
    Ok(load(&path.display().to_string(), &source))
}

/// A generated file: a name relative to the output directory, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    /// File name, e.g. `shop.rs`.
    pub name: String,
    /// Formatted Rust source.
    pub contents: String,
}

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct GenerateError {
    /// The schemas' rendered diagnostics.
    pub message: String,
}

/// The declarations of each schema, one file per schema. Fails when any
/// schema has errors.
pub fn generate(schemas: &[Schema]) -> Result<Vec<OutputFile>, GenerateError> {
    let failing: Vec<String> = schemas
        .iter()
        .filter(|s| s.has_errors())
        .map(|s| s.render_diagnostics(false))
        .collect();
    if !failing.is_empty() {
        return Err(GenerateError {
            message: failing.join("\n\n"),
        });
    }
    schemas
        .iter()
        .map(|s| {
            declare::declare(&s.model)
                .map(|contents| OutputFile {
                    name: format!("{}.rs", s.module_name()),
                    contents,
                })
                .map_err(|e| GenerateError {
                    message: format!("{}: internal error while declaring: {e}", s.file),
                })
        })
        .collect()
}

/// The entities and types of a project's other files, beside which one
/// schema file is checked.
#[derive(Default)]
pub(crate) struct Others {
    /// The entities of the files before it, then those of the files after it.
    pub(crate) entities: Vec<Entity>,
    /// How many of `entities` come from the files before it.
    pub(crate) before: usize,
    /// The named types of the other files.
    pub(crate) types: Vec<kvmodel_codegen::ir::TypeDef>,
    /// The standalone counters of the files before it: a clash of two
    /// counters is reported in the file of the later one.
    pub(crate) tallies: Vec<kvmodel_codegen::ir::Tally>,
}

impl Others {
    /// Whether there are no other files.
    pub(crate) fn is_empty(&self) -> bool {
        self.entities.is_empty() && self.types.is_empty() && self.tallies.is_empty()
    }

    /// `own` with the other files' entities around it, in file order, their
    /// types after its own, and the counters of the files before it before
    /// its own: the rules between entities (and between counters) report a
    /// problem of two on the later one, so each is reported once, in the
    /// file of the later declaration.
    pub(crate) fn around(&self, own: &Model) -> Model {
        let (before, after) = self.entities.split_at(self.before);
        let mut types = own.types.clone();
        for t in &self.types {
            if !types.iter().any(|o| *o.name == *t.name) {
                types.push(t.clone());
            }
        }
        Model {
            entities: before
                .iter()
                .chain(&own.entities)
                .chain(after)
                .cloned()
                .collect(),
            types,
            tallies: self.tallies.iter().chain(&own.tallies).cloned().collect(),
        }
    }
}
