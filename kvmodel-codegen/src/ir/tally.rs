//! Standalone counters: a schema's namespace-level `counters:`, and
//! `#[derive(KvCounter)]`.

use crate::ir::{Field, KeyTemplate, Syntax};
use crate::origin::{Origin, Sp};

/// A counter that belongs to no entity: one counter per key its template
/// builds, incremented, read and reset by a generated handle.
#[derive(Clone, Debug, PartialEq)]
pub struct Tally {
    /// Rust type name (the struct of its key fields).
    pub name: Sp<String>,
    /// Visibility of the generated items.
    pub vis: Syntax<syn::Visibility>,
    /// First key segment.
    pub namespace: Option<Sp<String>>,
    /// Key template: its placeholders are the key fields.
    pub key: Option<KeyTemplate>,
    /// The key fields, in order.
    pub fields: Vec<Field>,
    /// Time to live after the last increment, in milliseconds (`ttl: 2d`).
    pub ttl_ms: Option<Sp<u64>>,
    /// Keys each counter is spread over (`shards: N`, 2–1024).
    pub shards: Option<Sp<u32>>,
    /// Path of the kvmodel crate in generated code (default `::kvmodel`).
    pub crate_path: Option<Sp<Syntax<syn::Path>>>,
    /// What it is for, in the schema author's words.
    pub description: Option<String>,
    /// Where it was declared.
    pub origin: Origin,
    /// Fields whose declaration is in error (left out of `fields`).
    pub broken_fields: Vec<String>,
}

impl Tally {
    /// A standalone counter with nothing declared yet.
    pub fn new(name: Sp<String>, vis: syn::Visibility) -> Self {
        Tally {
            origin: name.origin.clone(),
            name,
            vis: Syntax::new(vis),
            namespace: None,
            key: None,
            fields: Vec::new(),
            ttl_ms: None,
            shards: None,
            crate_path: None,
            description: None,
            broken_fields: Vec::new(),
        }
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| *f.name == name)
    }
}
