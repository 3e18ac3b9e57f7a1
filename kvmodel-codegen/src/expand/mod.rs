//! Emits the impls, key builders and repository of an entity.
//!
//! Output is hygienic: trait impls live in `const _: () = { … };`, every
//! path is absolute (`::core::…`, `::kvmodel::…` or the `crate = "…"`
//! override), locals start with `__`.

mod facts;
mod keys;
mod links;
mod on_delete;
mod proto;
mod repo;
mod stub;
mod versioned;

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};

use crate::ir::{Entity, FieldExpr, FieldType};

/// The kinds of derived key an entity's builders write; their spelling lives
/// in the runtime (`kvmodel_runtime::codec::key::Derived`), never here.
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
    fn new(e: &'a Entity) -> Self {
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
        rust_type(ty, &self.krate, false)
    }

    /// The argument type for a key component of this type.
    pub fn arg_type(&self, ty: &FieldType) -> TokenStream {
        match ty {
            FieldType::String => quote!(&str),
            FieldType::Bytes => quote!(&[u8]),
            other => self.rust_type(other),
        }
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

/// The Rust type of a field type: see [`FieldType::to_rust`].
pub fn rust_type(ty: &FieldType, krate: &TokenStream, short: bool) -> TokenStream {
    ty.to_rust(krate, short)
}

/// An identifier, raw if it is a keyword: see [`vocab::ident`](crate::vocab::ident).
pub(crate) fn ident(name: &str) -> syn::Ident {
    crate::vocab::ident(name)
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
    if args.iter().any(|a| crate::vocab::unraw(a) == name) {
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

/// Expands `#[derive(KvEntity)]` for a checked entity.
pub fn expand_entity(e: &Entity) -> TokenStream {
    let cx = Ctx::new(e);
    let versioned = versioned::expand(&cx);
    let enums = proto::enum_checks(&cx);
    let Some(template) = &e.key else {
        return quote!(const _: () = { #versioned #enums };);
    };
    let entity_impl = facts::expand(&cx, template);
    let keys = keys::expand(&cx, template);
    let repo = repo::expand(&cx, template);
    let parents = parents(&cx);
    let key_args = links::key_args(&cx, template);
    let links = links::expand(&cx, template);
    let checks = on_delete::checks(&cx);
    let children_keys = on_delete::key_fns(&cx);
    quote! {
        const _: () = {
            #versioned
            #enums
            #entity_impl
            #key_args
            #parents
            #checks
        };
        #keys
        #children_keys
        #repo
        #links
    }
}

/// Names each relation's parent as an entity, so a parent that does not
/// exist (or is no entity) is a compile error on the `belongs_to` the user
/// wrote: the path carries that span.
fn parents(cx: &Ctx<'_>) -> TokenStream {
    let p = cx.p();
    let checks = cx.e.relations.iter().filter_map(|r| {
        let path: syn::Path = syn::parse_str(&r.belongs_to).ok()?;
        let path = respan(path.to_token_stream(), r.belongs_to.origin.span());
        Some(quote!(let _ = __parent::<#path>;))
    });
    let checks: Vec<TokenStream> = checks.collect();
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote! {
        fn __parent<__E: #p::Entity>() {}
        #(#checks)*
    }
}

/// `tokens`, every one spanned at `span`.
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

fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
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

/// The errors of an entity that did not check, with a stand-in for its
/// repository and key builders so that code using them adds no cascade of
/// unrelated errors.
pub fn expand_stub(e: &Entity, errors: TokenStream) -> TokenStream {
    stub::expand(e, errors)
}

/// Expands `#[derive(KvEnum)]`: key and sort encodings of a fieldless enum.
pub fn expand_enum(input: &syn::DeriveInput) -> Result<TokenStream, syn::Error> {
    let syn::Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "`KvEnum` needs a fieldless enum",
        ));
    };
    let mut krate = quote!(::kvmodel);
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("kv")) {
        attr.parse_nested_meta(|m| {
            if m.path.is_ident("crate") {
                let s: syn::LitStr = m.value()?.parse()?;
                let p: syn::Path = s.parse()?;
                krate = quote!(#p);
                Ok(())
            } else {
                Err(m.error("unknown kv attribute on an enum; expected `crate = \"…\"`"))
            }
        })?;
    }
    let name = &input.ident;
    let mut texts = Vec::new();
    let mut arms_key = Vec::new();
    let mut arms_sort = Vec::new();
    for (i, v) in data.variants.iter().enumerate() {
        if !matches!(v.fields, syn::Fields::Unit) {
            return Err(syn::Error::new_spanned(
                &v.fields,
                "`KvEnum` variants cannot have fields: a key component must be a plain name",
            ));
        }
        let vi = &v.ident;
        let text = vi.to_string().to_snake_case();
        let idx = i as u32;
        arms_key.push(quote!(Self::#vi => #text));
        arms_sort.push(quote!(Self::#vi => #idx));
        texts.push(text);
    }
    let p = quote!(#krate::__private);
    Ok(quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::KeyPart for #name {
                fn write_key(&self, __out: &mut ::std::string::String) {
                    __out.push_str(match self { #(#arms_key,)* });
                }
                fn match_key(&self, __key: &str) -> ::core::option::Option<::core::primitive::usize> {
                    let __text: &str = match self { #(#arms_key,)* };
                    __key.starts_with(__text).then_some(__text.len())
                }
            }
            #[automatically_derived]
            impl #p::ProtoEnum for #name {}
            #[automatically_derived]
            impl #p::SortPart for #name {
                fn write_sort(&self, __out: &mut ::std::vec::Vec<u8>) {
                    let __index: u32 = match self { #(#arms_sort,)* };
                    #p::SortPart::write_sort(&__index, __out);
                }
                fn match_sort(&self, __sort: &[u8]) -> ::core::option::Option<::core::primitive::usize> {
                    let __index: u32 = match self { #(#arms_sort,)* };
                    #p::SortPart::match_sort(&__index, __sort)
                }
            }
        };
    })
}
