//! Rust syntax a model names — a field's type, the previous version's type,
//! the kvmodel crate's path, a visibility — kept as parsed syntax.
//!
//! Emitters interpolate it as it was parsed (with its spans), so nothing is
//! re-parsed later and nothing falls back to a stand-in. Equality and
//! display use a normalized text, so a type parsed from a schema file equals
//! the same type parsed from Rust source, and origins stay out of equality.

use std::fmt;
use std::ops::Deref;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

/// Parsed Rust syntax with its normalized text (`Vec<u8>`, `::kvmodel`,
/// `pub(crate)`). It dereferences to that text.
#[derive(Clone)]
pub struct Syntax<T> {
    syntax: Box<T>,
    text: String,
}

impl<T: ToTokens> Syntax<T> {
    /// Wraps syntax that is already parsed.
    pub fn new(syntax: T) -> Self {
        let text = normalize(syntax.to_token_stream());
        Syntax {
            syntax: Box::new(syntax),
            text,
        }
    }

    /// The parsed syntax.
    pub fn syntax(&self) -> &T {
        &self.syntax
    }

    /// The normalized text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl<T: syn::parse::Parse + ToTokens> Syntax<T> {
    /// Parses text, such as a name from a schema file.
    pub fn parse_str(text: &str) -> syn::Result<Self> {
        syn::parse_str(text).map(Self::new)
    }

    /// Parses the contents of a string literal; the tokens carry the
    /// literal's span, so errors in generated code point at it.
    pub fn parse_lit(lit: &syn::LitStr) -> syn::Result<Self> {
        lit.parse().map(Self::new)
    }
}

/// The normalized text of any syntax, as [`Syntax`] shows it.
pub fn text(syntax: &impl ToTokens) -> String {
    normalize(syntax.to_token_stream())
}

/// Token text without the spaces `to_string` puts between every token: a
/// space only separates two words (`dyn Trait`, `pub(in crate::a)`) and
/// follows a comma.
fn normalize(tokens: TokenStream) -> String {
    fn push(out: &mut String, tokens: TokenStream) {
        let mut word_before = false;
        for tt in tokens {
            let word = matches!(tt, TokenTree::Ident(_) | TokenTree::Literal(_));
            if word && word_before {
                out.push(' ');
            }
            word_before = word;
            match tt {
                TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::None => ("", ""),
                    };
                    out.push_str(open);
                    push(out, g.stream());
                    out.push_str(close);
                }
                TokenTree::Punct(p) => {
                    out.push(p.as_char());
                    if p.as_char() == ',' {
                        out.push(' ');
                    }
                }
                other => out.push_str(&other.to_string()),
            }
        }
    }
    let mut out = String::new();
    push(&mut out, tokens);
    out
}

impl<T> Deref for Syntax<T> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl<T> PartialEq for Syntax<T> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<T> Eq for Syntax<T> {}

impl<T> PartialEq<str> for Syntax<T> {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl<T> PartialEq<Syntax<T>> for String {
    fn eq(&self, other: &Syntax<T>) -> bool {
        *self == other.text
    }
}

impl<T> fmt::Debug for Syntax<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl<T> fmt::Display for Syntax<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<T: ToTokens> ToTokens for Syntax<T> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.syntax.to_tokens(tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalized_text_round_trips() {
        for text in [
            "Vec<u8>",
            "::kvmodel",
            "my_crate::kvmodel",
            "BTreeMap<String, Vec<(u8, i64)>>",
            "&'static str",
            "Box<dyn Fn(u8) -> u8 + Send>",
            "[u8; 4]",
            "<T as Trait>::Assoc",
        ] {
            let t = Syntax::<syn::Type>::parse_str(text).unwrap();
            let again = Syntax::<syn::Type>::parse_str(&t).unwrap();
            assert_eq!(t, again, "{text}");
        }
        let v = Syntax::<syn::Visibility>::parse_str("pub ( crate )").unwrap();
        assert_eq!(v.as_str(), "pub(crate)");
        assert_eq!(
            Syntax::<syn::Type>::parse_str("dyn  Any").unwrap().as_str(),
            "dyn Any"
        );
    }
}
