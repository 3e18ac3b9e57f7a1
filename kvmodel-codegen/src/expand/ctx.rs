//! What every emitter needs: the entity's names and paths ([`Ctx`]), and
//! the spelling of identifiers, parameters and docs in generated code.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};

use crate::ir::{Entity, FieldExpr, FieldType};
use crate::vocab;

/// The kinds of derived key an entity's builders write; their spelling lives
/// in the runtime (`kvmodel_runtime::__private::Derived`), never here.
#[derive(Clone, Copy)]
pub(crate) enum Derived {
    Claim,
    Index,
    Relation,
    Counter,
}

/// What every emitter needs about one entity.
pub(crate) struct Ctx<'a> {
    pub e: &'a Entity,
    pub krate: TokenStream,
    pub name: syn::Ident,
    pub keys: syn::Ident,
    pub repo: syn::Ident,
    pub vis: TokenStream,
}

impl<'a> Ctx<'a> {
    pub fn new(e: &'a Entity) -> Self {
        let krate = match &e.crate_path {
            Some(p) => p.value.to_token_stream(),
            None => quote!(::kvmodel),
        };
        let name = ident(&e.name);
        Ctx {
            e,
            krate,
            keys: format_ident!("{}Keys", name),
            repo: format_ident!("{}Repo", name),
            vis: e.vis.to_token_stream(),
            name,
        }
    }

    /// The `__private` facade path.
    pub fn p(&self) -> TokenStream {
        let k = &self.krate;
        quote!(#k::__private)
    }

    /// The namespace (checked present on entities with a key).
    pub fn namespace(&self) -> String {
        self.e
            .namespace
            .as_ref()
            .map(|n| n.value.clone())
            .unwrap_or_default()
    }

    /// The key space of the entity's derived keys (from its key template).
    pub fn key_space(&self) -> String {
        self.e
            .key
            .as_ref()
            .map(|k| k.key_space())
            .unwrap_or_default()
    }

    /// A derived-key kind, as a path in generated code.
    pub fn derived(&self, kind: Derived) -> TokenStream {
        let p = self.p();
        let variant = match kind {
            Derived::Claim => quote!(Claim),
            Derived::Index => quote!(Index),
            Derived::Relation => quote!(Relation),
            Derived::Counter => quote!(Counter),
        };
        quote!(#p::Derived::#variant)
    }

    pub fn field_type(&self, name: &str) -> FieldType {
        self.e
            .field(name)
            .map(|f| f.ty.value.clone())
            .unwrap_or(FieldType::String)
    }

    pub fn is_optional(&self, name: &str) -> bool {
        self.e.field(name).is_some_and(|f| f.optional)
    }

    /// The owned Rust type of a field type.
    pub fn rust_type(&self, ty: &FieldType) -> TokenStream {
        ty.to_rust(&self.krate, false)
    }

    /// The argument type for a key component of this type.
    pub fn arg_type(&self, ty: &FieldType) -> TokenStream {
        arg_type(ty, &self.krate)
    }

    /// The argument type for a `group_by` item.
    pub fn group_arg_type(&self, x: &FieldExpr) -> TokenStream {
        let k = &self.krate;
        match x {
            FieldExpr::Field(f) => self.arg_type(&self.field_type(f)),
            FieldExpr::Hour(_) => quote!(#k::Timestamp),
            FieldExpr::Day(_) | FieldExpr::Month(_) => quote!(#k::Date),
        }
    }
}

/// The argument type for a key component of type `ty`: `&str` and `&[u8]`
/// for strings and bytes, the value itself otherwise.
pub(crate) fn arg_type(ty: &FieldType, krate: &TokenStream) -> TokenStream {
    match ty {
        FieldType::String => quote!(&str),
        FieldType::Bytes => quote!(&[u8]),
        other => other.to_rust(krate, false),
    }
}

/// An identifier, raw if it is a keyword: see [`vocab::ident`](crate::vocab::ident).
pub(crate) fn ident(name: &str) -> syn::Ident {
    vocab::ident(name)
}

/// Converts a reference to a key component (`&T`) into the argument form
/// (`&str`, a copy, or a clone).
pub(crate) fn arg_from_ref(ty: &FieldType, r: TokenStream) -> TokenStream {
    match ty {
        FieldType::String | FieldType::Bytes => quote!(#r),
        FieldType::Named(_) => quote!(::core::clone::Clone::clone(#r)),
        _ => quote!(*#r),
    }
}

/// A parameter of generated code beside arguments named after fields:
/// `name`, or `__name` when an argument already has that name.
pub(crate) fn param(name: &str, args: &[syn::Ident]) -> syn::Ident {
    if args.iter().any(|a| vocab::unraw(a) == name) {
        format_ident!("__{}", name)
    } else {
        format_ident!("{}", name)
    }
}

/// Names the arguments of a `group_by` list: the field's name, or the
/// bucket's (`day`, or `day_at` when two items bucket by day). A name an
/// earlier argument took gets the first free suffix (`day_2`), so every
/// argument has its own.
pub(crate) fn group_arg_names(items: &[&FieldExpr]) -> Vec<syn::Ident> {
    let bucket = |x: &FieldExpr| match x {
        FieldExpr::Field(_) => None,
        FieldExpr::Hour(_) => Some("hour"),
        FieldExpr::Day(_) => Some("day"),
        FieldExpr::Month(_) => Some("month"),
    };
    let mut taken = std::collections::BTreeSet::new();
    items
        .iter()
        .map(|x| {
            let base = match bucket(x) {
                None => x.field().to_owned(),
                Some(b) if items.iter().filter(|y| bucket(y) == Some(b)).count() == 1 => {
                    b.to_owned()
                }
                Some(b) => format!("{}_{}", b, x.field()),
            };
            let mut name = base.clone();
            let mut n = 2;
            while taken.contains(&name) {
                name = format!("{base}_{n}");
                n += 1;
            }
            taken.insert(name.clone());
            ident(&name)
        })
        .collect()
}

/// A generated method's doc attributes: `doc`, then what the schema author
/// wrote about the construct it reads (its `description`, or the doc
/// comments above its attribute), one `#[doc]` per line so that they print
/// as `///` lines.
pub(crate) fn with_description(doc: String, description: Option<&String>) -> TokenStream {
    let mut lines = vec![doc];
    if let Some(d) = description {
        lines.push(String::new());
        lines.extend(d.lines().map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!(" {l}")
            }
        }));
    }
    quote!(#(#[doc = #lines])*)
}

/// `tokens`, every one spanned at `span`.
pub(crate) fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut inner = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                inner.set_span(span);
                t = proc_macro2::TokenTree::Group(inner);
            } else {
                t.set_span(span);
            }
            t
        })
        .collect()
}
