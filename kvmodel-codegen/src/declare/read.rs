//! The reader: a file of declarations (as `kvmodel generate` writes them)
//! back into a model, the way the derive sees it.

use crate::ir::{Field, Model, TypeDef, TypeKind};
use crate::origin::{Diagnostics, Origin, Sp};
use crate::vocab;

fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|paths| {
                paths
                    .iter()
                    .any(|p| p.segments.last().is_some_and(|s| s.ident == name))
            })
    })
}

/// `#[serde(default = "name")]` on a field.
fn serde_default(attrs: &[syn::Attribute]) -> Option<String> {
    let mut found = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            if m.path.is_ident("default") {
                let s: syn::LitStr = m.value()?.parse()?;
                found = Some(s.value());
            } else if m.input.peek(syn::Token![=]) {
                m.value()?.parse::<syn::Expr>()?;
            }
            Ok(())
        });
    }
    found
}

/// `#[serde(rename = "x")]` on a variant.
fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
    let mut found = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            if m.path.is_ident("rename") {
                let s: syn::LitStr = m.value()?.parse()?;
                found = Some(s.value());
            }
            Ok(())
        });
    }
    found
}

/// A default function's body as JSON.
fn expr_json(e: &syn::Expr) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Str(s) => Some(J::String(s.value())),
            syn::Lit::Bool(b) => Some(J::Bool(b.value)),
            syn::Lit::Int(i) => i.base10_parse::<i64>().ok().map(J::from),
            // `3f64` is a whole number written for a float field.
            syn::Lit::Float(f) if !f.base10_digits().contains(['.', 'e', 'E']) => {
                f.base10_digits().parse::<u64>().ok().map(J::from)
            }
            syn::Lit::Float(f) => f
                .base10_parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(J::Number),
            _ => None,
        },
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match expr_json(&u.expr)? {
            J::Number(n) => n.as_i64().map(|i| J::from(-i)).or_else(|| {
                n.as_f64()
                    .and_then(|f| serde_json::Number::from_f64(-f))
                    .map(J::Number)
            }),
            _ => None,
        },
        syn::Expr::Call(c) => {
            let f = crate::syntax::text(&c.func);
            match (f.as_str(), c.args.first()) {
                ("String::from" | "Some", Some(a)) => expr_json(a),
                ("Vec::new", None) => Some(J::Array(Vec::new())),
                _ => None,
            }
        }
        syn::Expr::Path(p) if p.path.is_ident("None") => Some(J::Null),
        syn::Expr::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| J::String(vocab::variant_text(&s.ident))),
        _ => None,
    }
}

fn default_of(file: &syn::File, fn_name: &str) -> Option<serde_json::Value> {
    file.items.iter().find_map(|i| match i {
        syn::Item::Fn(f) if f.sig.ident == fn_name => match f.block.stmts.last()? {
            syn::Stmt::Expr(e, None) => expr_json(e),
            _ => None,
        },
        _ => None,
    })
}

fn fields_of(file: &syn::File, s: &syn::ItemStruct) -> Vec<Field> {
    let syn::Fields::Named(named) = &s.fields else {
        return Vec::new();
    };
    named
        .named
        .iter()
        .filter_map(|f| {
            let name = f.ident.as_ref()?.to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
            let (ty, optional) = crate::ir::FieldType::from_rust(&f.ty);
            let default = serde_default(&f.attrs)
                .and_then(|fname| default_of(file, &fname))
                .map(|v| Sp::new(v, Origin::Unknown));
            Some(Field {
                name: Sp::new(name, Origin::Unknown),
                ty: Sp::new(ty, Origin::Unknown),
                optional,
                default,
                expiry: None,
                description: crate::attr::docs(&f.attrs),
                origin: Origin::Unknown,
            })
        })
        .collect()
}

/// Reads the model back from declarations. Errors in entity attributes go
/// to `diags`.
pub fn read(file: &syn::File, diags: &mut Diagnostics) -> Model {
    let mut model = Model::default();
    for item in &file.items {
        match item {
            syn::Item::Struct(s) if derives(&s.attrs, "KvEntity") => {
                let input: syn::DeriveInput = s.clone().into();
                if let Some(mut e) = crate::attr::parse_derive(&input, diags) {
                    let with_defaults = fields_of(file, s);
                    for (f, d) in e.fields.iter_mut().zip(with_defaults) {
                        f.default = d.default;
                    }
                    model.entities.push(e);
                }
            }
            syn::Item::Struct(s) if derives(&s.attrs, "KvCounter") => {
                let input: syn::DeriveInput = s.clone().into();
                if let Some(t) = crate::attr::parse_tally(&input, diags) {
                    model.tallies.push(t);
                }
            }
            syn::Item::Struct(s) => model.types.push(TypeDef {
                name: Sp::new(s.ident.to_string(), Origin::Unknown),
                kind: TypeKind::Struct(fields_of(file, s)),
                description: crate::attr::docs(&s.attrs),
                origin: Origin::Unknown,
            }),
            syn::Item::Enum(e) if derives(&e.attrs, "KvEnum") => model.types.push(TypeDef {
                name: Sp::new(e.ident.to_string(), Origin::Unknown),
                kind: TypeKind::Enum(
                    e.variants
                        .iter()
                        .map(|v| {
                            let text = serde_rename(&v.attrs)
                                .unwrap_or_else(|| vocab::variant_text(&v.ident));
                            Sp::new(text, Origin::Unknown)
                        })
                        .collect(),
                ),
                description: crate::attr::docs(&e.attrs),
                origin: Origin::Unknown,
            }),
            _ => {}
        }
    }
    model
}
