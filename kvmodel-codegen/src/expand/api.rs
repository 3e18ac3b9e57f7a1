//! The methods of the generated API — the key builders of `XKeys`, the
//! methods of `XRepo` and those a link adds to its far repository — as one
//! table of [`Method`]s.
//!
//! The expansion writes each method with its body ([`Method::real`]); the
//! stand-in beside the errors of an entity that did not check writes the
//! same table with bodies that never run ([`Method::stub`]), so the two
//! cannot drift apart.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};

use crate::vocab;

/// One method of the generated API.
pub(crate) struct Method {
    /// Its doc attributes (and `#[doc(hidden)]` for a method only generated
    /// code calls).
    pub docs: TokenStream,
    /// Its name: fixed, or a prefix and a name from the model.
    pub name: String,
    /// `async fn`.
    pub asyncness: bool,
    /// What it takes `self` as.
    pub receiver: Receiver,
    /// Its generic parameters, in order.
    pub generics: Vec<Generic>,
    /// Its parameters after the receiver.
    pub params: Vec<Param>,
    /// The return type.
    pub ret: TokenStream,
    /// The predicates of its `where` clause.
    pub bounds: Vec<TokenStream>,
    /// The body.
    pub body: TokenStream,
}

/// How a method takes `self`.
#[derive(Clone, Copy)]
pub(crate) enum Receiver {
    /// It does not (a key builder, a constructor).
    None,
    /// `self`.
    Value,
    /// `&self`.
    Ref,
}

/// A parameter of a [`Method`].
#[derive(Clone)]
pub(crate) struct Param {
    pub name: syn::Ident,
    pub ty: TokenStream,
    /// Typed after the model (a key field, an index's fields, the far end
    /// of a link): the stand-in takes any type there, since the model that
    /// says which may be what is in error.
    pub modeled: bool,
}

impl Param {
    /// A parameter of a type the API fixes.
    pub fn fixed(name: syn::Ident, ty: TokenStream) -> Self {
        Param {
            name,
            ty,
            modeled: false,
        }
    }

    /// A parameter typed after the model.
    pub fn modeled(name: syn::Ident, ty: TokenStream) -> Self {
        Param {
            name,
            ty,
            modeled: true,
        }
    }
}

/// `name: ty`.
impl ToTokens for Param {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let (name, ty) = (&self.name, &self.ty);
        tokens.extend(quote!(#name: #ty));
    }
}

/// A generic parameter of a [`Method`] (with its bounds).
#[derive(Clone)]
pub(crate) struct Generic {
    pub tokens: TokenStream,
    /// Only the types of parameters typed after the model use it: the
    /// stand-in, which takes any type there, has no use for it.
    pub modeled: bool,
}

impl Generic {
    /// A generic parameter the API fixes (`__F: FnMut(…)`).
    pub fn fixed(tokens: TokenStream) -> Self {
        Generic {
            tokens,
            modeled: false,
        }
    }

    /// A generic parameter only modeled parameters use.
    pub fn modeled(tokens: TokenStream) -> Self {
        Generic {
            tokens,
            modeled: true,
        }
    }
}

impl Method {
    /// A repository method with nothing filled in yet: `async`, on `&self`,
    /// without generics, parameters or bounds.
    pub fn repo(name: String, docs: TokenStream) -> Self {
        Method {
            docs,
            name,
            asyncness: true,
            receiver: Receiver::Ref,
            generics: Vec::new(),
            params: Vec::new(),
            ret: TokenStream::new(),
            bounds: Vec::new(),
            body: TokenStream::new(),
        }
    }

    /// A key builder with nothing filled in yet: not `async`, without
    /// `self`, returning a `String`.
    pub fn builder(name: String, docs: TokenStream) -> Self {
        Method {
            asyncness: false,
            receiver: Receiver::None,
            ret: quote!(::std::string::String),
            ..Method::repo(name, docs)
        }
    }

    /// The method, as the expansion writes it.
    pub fn real(&self, vis: &TokenStream) -> TokenStream {
        let params = self.params.iter().map(ToTokens::to_token_stream);
        let generics = self.generics.iter().map(|g| g.tokens.clone());
        let body = &self.body;
        let (docs, head) = (&self.docs, self.head(vis, generics.collect(), params));
        quote! {
            #docs
            #head {
                #body
            }
        }
    }

    /// The method's stand-in: each parameter typed after the model takes
    /// any type (`__A0`, …), and the body never runs (the crate does not
    /// compile while the errors stand).
    pub fn stub(&self, vis: &TokenStream) -> TokenStream {
        let mut anys = Vec::new();
        let params: Vec<TokenStream> = self
            .params
            .iter()
            .map(|p| {
                if p.modeled {
                    let any = format_ident!("__A{}", anys.len());
                    anys.push(quote!(#any));
                    quote!(_: #any)
                } else {
                    let ty = &p.ty;
                    quote!(_: #ty)
                }
            })
            .collect();
        let fixed = self.generics.iter().filter(|g| !g.modeled);
        let generics = anys.into_iter().chain(fixed.map(|g| g.tokens.clone()));
        let head = self.head(vis, generics.collect(), params.into_iter());
        quote!(#head { ::core::unreachable!() })
    }

    /// `vis async fn name<generics>(receiver, params) -> ret where bounds`.
    fn head(
        &self,
        vis: &TokenStream,
        generics: Vec<TokenStream>,
        params: impl Iterator<Item = TokenStream>,
    ) -> TokenStream {
        let name = vocab::ident(&self.name);
        let asyncness = self.asyncness.then(|| quote!(async));
        let generics = (!generics.is_empty()).then(|| quote!(<#(#generics),*>));
        let receiver = match self.receiver {
            Receiver::None => None,
            Receiver::Value => Some(quote!(self)),
            Receiver::Ref => Some(quote!(&self)),
        };
        let inputs = receiver.into_iter().chain(params);
        let ret = &self.ret;
        let bounds = &self.bounds;
        let clause = (!bounds.is_empty()).then(|| quote!(where #(#bounds,)*));
        quote!(#vis #asyncness fn #name #generics(#(#inputs),*) -> #ret #clause)
    }
}

/// The stand-ins of `methods`, each name once (`seen` holds the names
/// already written on the same type) and only names that are identifiers:
/// the model being in error, it may declare a name twice or one no
/// identifier spells.
pub(crate) fn stubs<'a>(
    vis: &TokenStream,
    methods: impl IntoIterator<Item = &'a Method>,
    seen: &mut std::collections::BTreeSet<String>,
) -> Vec<TokenStream> {
    methods
        .into_iter()
        .filter(|m| vocab::try_ident(&m.name).is_some() && seen.insert(m.name.clone()))
        .map(|m| m.stub(vis))
        .collect()
}
