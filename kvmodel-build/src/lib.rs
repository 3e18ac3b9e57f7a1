//! The YAML front-end of kvmodel: schema files to located diagnostics, lints,
//! Rust declarations, expanded code and key-layout reports, plus a
//! [`Builder`] for `build.rs`.
//!
//! The core is pure: [`load`] turns a file's text into a [`Schema`]
//! (model + diagnostics); [`generate`] turns models into [`OutputFile`]s.
//! Reading and writing files happens at the edge ([`Builder`], the CLI).
//!
//! ```
//! let schema = kvmodel_build::load("shop.yaml", "kvmodel: 1\nnamespace: shop\nentities:\n  User:\n    key: \"user:{id}\"\n    fields: { id: string }\n");
//! assert!(!schema.has_errors());
//! let files = kvmodel_build::generate(&[schema]).unwrap();
//! assert!(files[0].contents.contains("pub struct User"));
//! ```

#![warn(missing_docs)]

mod builder;
pub mod declare;
pub mod diff;
mod expand;
pub mod keys;
mod lint;
mod lower;
mod node;
mod project;
pub mod proto;
mod render;
pub mod runtime_model;
mod rust_source;
mod schema;

pub use builder::{BuildError, Builder, write_if_changed};
pub use expand::expand;
pub use kvmodel_codegen::ir::Model;
pub use kvmodel_codegen::origin::{Diagnostic, Severity};
pub use project::{LoadError, Project, is_rust_source, load_files, load_model_file, load_project};
pub use render::render;
pub use rust_source::load_rust;
pub use schema::{GenerateError, OutputFile, Schema, generate, load, load_file};
