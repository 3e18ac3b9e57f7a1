//! Values of `#[kv(…)]` keys, parsed into the value tree both front-ends
//! share ([`crate::value`]), so a value of the wrong kind gets the same
//! diagnostic from either.

use proc_macro2::Span;
use syn::ext::IdentExt as _;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Token, token};

use crate::ir::Syntax;
use crate::origin::{Origin, Sp};
pub(crate) use crate::value::Reader;
use crate::value::Value;
use crate::vocab::{self, Mistake};

fn sp<T>(value: T, span: Span) -> Sp<T> {
    Sp::new(value, Origin::Span(span))
}

/// A path of identifiers (keywords allowed, as in `r#type` or `crate::x`).
fn path(input: ParseStream<'_>) -> syn::Result<syn::Path> {
    let leading_colon: Option<Token![::]> = input.parse()?;
    let mut segments = syn::punctuated::Punctuated::new();
    loop {
        segments.push_value(syn::PathSegment::from(input.call(syn::Ident::parse_any)?));
        if !input.peek(Token![::]) {
            break;
        }
        segments.push_punct(input.parse()?);
    }
    Ok(syn::Path {
        leading_colon,
        segments,
    })
}

fn number(input: ParseStream<'_>, negative: bool) -> syn::Result<Value> {
    if input.peek(syn::LitFloat) {
        let f: syn::LitFloat = input.parse()?;
        let v: f64 = f.base10_parse()?;
        if !v.is_finite() {
            return Err(syn::Error::new(f.span(), "the number is not finite"));
        }
        return Ok(Value::Float(if negative { -v } else { v }));
    }
    let i: syn::LitInt = input.parse()?;
    let v: i128 = i.base10_parse()?;
    i64::try_from(if negative { -v } else { v })
        .map(Value::Int)
        .map_err(|_| syn::Error::new(i.span(), "the integer does not fit in 64 bits"))
}

/// Parses one value: a literal, a list, a mapping, a name or a call.
pub(crate) fn parse(input: ParseStream<'_>) -> syn::Result<Sp<Value>> {
    let span = input.span();
    let value = if input.peek(syn::LitStr) {
        Value::Str(input.parse::<syn::LitStr>()?.value())
    } else if input.peek(syn::LitBool) {
        Value::Bool(input.parse::<syn::LitBool>()?.value)
    } else if input.peek(Token![-]) {
        input.parse::<Token![-]>()?;
        number(input, true)?
    } else if input.peek(syn::LitInt) || input.peek(syn::LitFloat) {
        number(input, false)?
    } else if input.peek(token::Bracket) {
        let content;
        syn::bracketed!(content in input);
        Value::List(
            content
                .parse_terminated(parse, Token![,])?
                .into_iter()
                .collect(),
        )
    } else if input.peek(token::Brace) {
        let content;
        syn::braced!(content in input);
        let entries = content.parse_terminated(
            |e| {
                let key = if e.peek(syn::LitStr) {
                    let s: syn::LitStr = e.parse()?;
                    sp(s.value(), s.span())
                } else {
                    let id = e.call(syn::Ident::parse_any)?;
                    sp(vocab::unraw(&id), id.span())
                };
                if e.peek(Token![=]) {
                    e.parse::<Token![=]>()?;
                } else {
                    e.parse::<Token![:]>()?;
                }
                Ok((key, parse(e)?))
            },
            Token![,],
        )?;
        Value::Map(entries.into_iter().collect())
    } else if input.peek(syn::Ident::peek_any) || input.peek(Token![::]) {
        let p = path(input)?;
        if input.peek(token::Paren) {
            let content;
            syn::parenthesized!(content in input);
            let args = content.parse_terminated(parse, Token![,])?;
            Value::Call(p, args.into_iter().collect())
        } else if p.is_ident("None") {
            Value::Null
        } else {
            Value::Path(p)
        }
    } else {
        return Err(
            input.error("expected a value: a string, number, boolean, list, mapping or name")
        );
    };
    Ok(sp(value, span))
}

/// Skips whatever follows a key (`= value` or `(…)`), so parsing goes on
/// after a key that is reported.
pub(crate) fn skip(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        parse(meta.value()?)?;
    } else if meta.input.peek(token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

/// The values of a parenthesized list (`fields(a, b)`).
pub(crate) fn list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<Sp<Value>>> {
    let content;
    syn::parenthesized!(content in meta.input);
    Ok(content
        .parse_terminated(parse, Token![,])?
        .into_iter()
        .collect())
}

/// Rust syntax, bare or quoted (`migrate_from = UserV1`,
/// `crate = "::kvmodel"`), parsed here once. `expected` names what it must
/// be (`a type`), `example` what that means for this key.
pub(crate) fn rust<T: syn::parse::Parse + quote::ToTokens>(
    r: &mut Reader<'_>,
    input: ParseStream<'_>,
    (expected, example): (&str, &str),
    what: &str,
) -> syn::Result<Option<Sp<Syntax<T>>>> {
    use syn::parse::discouraged::Speculative as _;
    if input.peek(syn::LitStr) {
        let lit: syn::LitStr = input.parse()?;
        let origin = Origin::Span(lit.span());
        return Ok(match Syntax::parse_lit(&lit) {
            Ok(s) => Some(Sp::new(s, origin)),
            Err(_) => {
                let m = Mistake::new(
                    "E010",
                    format!("`{}` is not {expected}; expected {example}", lit.value()),
                );
                r.report(m, &origin);
                None
            }
        });
    }
    let fork = input.fork();
    if let Ok(t) = fork.parse::<T>() {
        if fork.is_empty() || fork.peek(Token![,]) {
            input.advance_to(&fork);
            let origin = Origin::Span(t.span());
            return Ok(Some(Sp::new(Syntax::new(t), origin)));
        }
    }
    let v = parse(input)?;
    Ok(r.wrong(&v, expected, what))
}
