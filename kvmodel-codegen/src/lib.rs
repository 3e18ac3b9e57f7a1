//! The model IR, checks and code generation of kvmodel.
//!
//! Two front-ends build one [`ir::Model`]: the derive ([`attr`]) and the YAML
//! schema reader (in `kvmodel-build`). Both build one located [`value`] tree
//! and read the words of a model
//! (encodings, field types, time buckets, durations, names) through
//! [`vocab`]; [`check`] holds every cross-field rule; [`expand`] emits the
//! impls, repositories and key builders.
//!
//! Modules import only from the floors below them, never back: [`origin`]
//! and [`syntax`] at the bottom; [`ir`] (plain data); the words of a model
//! ([`vocab`], [`template`]) and the protobuf mapping ([`proto`]); the value
//! tree both front-ends read ([`value`]); the derive's front-end ([`attr`]),
//! [`check`] and [`expand`]; [`declare`] on top.

#![warn(missing_docs)]

pub mod attr;
pub mod check;
pub mod declare;
pub mod expand;
pub mod ir;
pub mod origin;
pub mod proto;
pub mod syntax;
pub mod template;
pub mod value;
pub mod vocab;

pub use origin::{Diagnostic, Diagnostics, Origin, Severity, Sp};

use proc_macro2::TokenStream;

/// The whole derive: parse attributes, check, expand (or errors plus a stub).
pub fn derive_entity(input: TokenStream) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut diags = Diagnostics::new();
    let Some(entity) = attr::parse_derive(&input, &mut diags) else {
        return diags
            .to_syn_error()
            .map(|e| e.to_compile_error())
            .unwrap_or_default();
    };
    check::check_entity(&entity, None, &mut diags);
    match diags.to_syn_error() {
        Some(err) => expand::expand_stub(&entity, err.to_compile_error()),
        None => expand::expand_entity(&entity),
    }
}

/// `#[derive(KvCounter)]`: parse, check, expand (beside the errors, if
/// any).
pub fn derive_counter(input: TokenStream) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut diags = Diagnostics::new();
    let Some(tally) = attr::parse_tally(&input, &mut diags) else {
        return diags
            .to_syn_error()
            .map(|e| e.to_compile_error())
            .unwrap_or_default();
    };
    check::tally::check(&tally, None, &mut diags);
    let errors = diags.to_syn_error().map(|e| e.to_compile_error());
    expand::expand_tally(&tally, errors)
}

/// `#[derive(KvEnum)]`.
pub fn derive_enum(input: TokenStream) -> TokenStream {
    syn::parse2::<syn::DeriveInput>(input)
        .and_then(|i| expand::expand_enum(&i))
        .unwrap_or_else(|e| e.to_compile_error())
}
