//! `Builder`: generate declarations from schema files in `build.rs`.

use std::path::{Path, PathBuf};

/// Generates Rust declarations from schema files, for `build.rs`.
///
/// Each schema `x.yaml` becomes `OUT_DIR/x.rs`, written only when its
/// contents change (so cargo does not rebuild needlessly). Rust source
/// files (`.rs`) of `#[derive(KvEntity)]` structs may be added too, when a
/// schema's relations reach their entities: they are read with the schemas
/// as one model, and nothing is written for them.
///
/// ```no_run
/// // build.rs, in `fn main`:
/// kvmodel_build::Builder::new()
///     .schema("schemas/shop.yaml")
///     .compile()
///     .unwrap_or_else(|e| panic!("{e}"));
/// // src/lib.rs
/// // mod shop { include!(concat!(env!("OUT_DIR"), "/shop.rs")); }
/// ```
#[derive(Debug, Default, Clone)]
pub struct Builder {
    schemas: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    deny_warnings: bool,
}

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A schema could not be read or an output could not be written.
    #[error("kvmodel could not access `{}`: {source}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A schema has errors (or warnings, with `deny_warnings`); rendered.
    #[error("kvmodel schema problems:\n{0}")]
    Schema(String),
    /// No output directory: neither `out_dir` nor `OUT_DIR` is set.
    #[error(
        "kvmodel needs an output directory: call `out_dir(..)` or run from build.rs, where OUT_DIR is set"
    )]
    NoOutDir,
}

impl Builder {
    /// A builder with no schemas.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Adds a schema file, or a Rust source file (`.rs`) of derived
    /// entities the schemas relate to.
    pub fn schema(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.schemas.push(path.as_ref().to_owned());
        self
    }

    /// Where to write the generated files (default: `OUT_DIR`).
    pub fn out_dir(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.out_dir = Some(path.as_ref().to_owned());
        self
    }

    /// Fails on lint warnings too.
    pub fn deny_warnings(&mut self, yes: bool) -> &mut Self {
        self.deny_warnings = yes;
        self
    }

    /// Reads, checks and generates; writes each output only if it changed.
    /// Returns the paths written or kept.
    pub fn compile(&self) -> Result<Vec<PathBuf>, BuildError> {
        let out_dir = self
            .out_dir
            .clone()
            .or_else(|| std::env::var_os("OUT_DIR").map(PathBuf::from))
            .ok_or(BuildError::NoOutDir)?;
        if std::env::var_os("CARGO").is_some() {
            for path in &self.schemas {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        // Every file is read as one project, so that a schema's relations
        // reach the entities a Rust source file derives; only the schema
        // files are written (Rust source declares its own structs).
        let project = crate::project::load_files(&self.schemas).map_err(|e| BuildError::Io {
            path: e.path,
            source: e.source,
        })?;
        let mut schemas = Vec::new();
        for schema in project.schemas {
            if self.deny_warnings && schema.has_warnings() {
                return Err(BuildError::Schema(schema.render_diagnostics(false)));
            }
            // Lints are not lost in a build script: Cargo shows these.
            if std::env::var_os("CARGO").is_some() {
                for line in schema.warning_lines() {
                    println!("cargo:warning={line}");
                }
            }
            if crate::project::is_rust_source(Path::new(&schema.file)) {
                if schema.has_errors() {
                    return Err(BuildError::Schema(schema.render_diagnostics(false)));
                }
            } else {
                schemas.push(schema);
            }
        }
        let files = crate::schema::generate(&schemas).map_err(|e| BuildError::Schema(e.message))?;
        let mut written = Vec::new();
        for f in files {
            let path = out_dir.join(&f.name);
            write_if_changed(&path, &f.contents).map_err(|source| BuildError::Io {
                path: path.clone(),
                source,
            })?;
            written.push(path);
        }
        Ok(written)
    }
}

/// Writes `contents` (creating parent directories) unless the file already
/// holds exactly that; `true` when it wrote.
pub fn write_if_changed(path: &Path, contents: &str) -> std::io::Result<bool> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, contents)?;
    Ok(true)
}
