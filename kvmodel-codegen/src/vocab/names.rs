//! Names: the case rules of the names a model declares, and the Rust
//! identifiers they become.

use heck::{ToSnakeCase, ToUpperCamelCase};
use proc_macro2::Span;

use super::mistake::Mistake;

/// Names Rust reserves even as raw identifiers (`r#self` does not exist).
const NOT_EVEN_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// Words a newer edition reserves that the parser still takes for plain
/// identifiers: generated code, compiled as edition 2024, must write them
/// raw (`r#gen`), which every edition accepts.
const RAW_IN_2024: &[&str] = &["gen"];

fn reserved(code: &'static str, what: &str, name: &str) -> Option<Mistake> {
    NOT_EVEN_RAW.contains(&name).then(|| {
        Mistake::new(
            code,
            format!("the {what} name `{name}` is reserved by Rust, even as `r#{name}`; choose another name"),
        )
    })
}

fn is_snake_case(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_upper_camel_case(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars().all(|c| c.is_ascii_alphanumeric())
        && s.to_upper_camel_case() == s
}

/// The snake_case rule of field, index, counter and relation names, which
/// become members, methods and key names: lowercase ASCII letters, digits
/// and `_`, starting with a letter. `code` says which rule site reports it.
pub fn snake_case(code: &'static str, what: &str, name: &str) -> Result<(), Mistake> {
    if let Some(m) = reserved(code, what, name) {
        return Err(m);
    }
    if is_snake_case(name) {
        return Ok(());
    }
    let snake = name.to_snake_case();
    let like = if is_snake_case(&snake) {
        format!("like `{snake}`")
    } else {
        "lowercase letters, digits and `_`, starting with a letter".to_owned()
    };
    Err(Mistake::new(
        code,
        format!("the {what} name `{name}` must be snake_case, {like}"),
    ))
}

/// The rule of the field names a migration step reads in stored records
/// (`rename`, `add`, `remove`): the characters of a field name, so the
/// declarations can write them as attribute names. Words Rust reserves are
/// fine: generated code only ever spells these names as strings (E012).
pub fn stored_field(name: &str) -> Result<(), Mistake> {
    if is_snake_case(name) {
        return Ok(());
    }
    Err(Mistake::new(
        "E012",
        format!(
            "the field name `{name}` in a migration step must be snake_case, as every field name is: lowercase letters, digits and `_`, starting with a letter"
        ),
    ))
}

/// The UpperCamelCase rule of entity and type names, which become Rust type
/// names (E012).
pub fn upper_camel_case(what: &str, name: &str) -> Result<(), Mistake> {
    if let Some(m) = reserved("E012", what, name) {
        return Err(m);
    }
    if is_upper_camel_case(name) {
        return Ok(());
    }
    let camel = name.to_upper_camel_case();
    let like = if is_upper_camel_case(&camel) && reserved("E012", what, &camel).is_none() {
        format!("like `{camel}`")
    } else {
        "letters and digits, each word capitalized".to_owned()
    };
    Err(Mistake::new(
        "E012",
        format!("the {what} name `{name}` must be UpperCamelCase, {like}"),
    ))
}

/// The rule of enum variants, stored as written and declared as their
/// UpperCamelCase form: snake_case words that survive the round trip (E012).
pub fn variant(name: &str) -> Result<(), Mistake> {
    let camel = name.to_upper_camel_case();
    if !is_snake_case(name) || camel.to_snake_case() != name {
        return Err(Mistake::new(
            "E012",
            format!(
                "the enum variant `{name}` must be snake_case words (like `on_hold`), because it is stored as written"
            ),
        ));
    }
    if NOT_EVEN_RAW.contains(&camel.as_str()) {
        return Err(Mistake::new(
            "E012",
            format!(
                "the enum variant `{name}` would be declared as `{camel}`, which Rust reserves even as `r#{camel}`; choose another name"
            ),
        ));
    }
    Ok(())
}

/// The Rust variant of an enum value stored as `text` (`on_hold` is
/// `OnHold`); [`variant`] makes sure the two spellings map onto each other.
pub fn variant_ident(text: &str) -> syn::Ident {
    ident(&text.to_upper_camel_case())
}

/// The stored text of a Rust variant (`OnHold` is `on_hold`).
pub fn variant_text(id: &syn::Ident) -> String {
    unraw(id).to_snake_case()
}

/// An identifier for a model name: raw (`r#type`) if it is a keyword.
///
/// The name rules reject what cannot be an identifier before anything is
/// generated; should such a name get here anyway, the identifier is one the
/// compiler reports instead of the generator failing.
pub fn ident(name: &str) -> syn::Ident {
    try_ident(name).unwrap_or_else(|| {
        let stand_in = if NOT_EVEN_RAW.contains(&name) {
            name
        } else {
            "__kvmodel_not_an_identifier"
        };
        syn::Ident::new(stand_in, Span::call_site())
    })
}

/// The identifier [`ident`] spells a model name with, if one does: `None`
/// for a name that is no identifier even raw (`by-email`, `self`).
pub fn try_ident(name: &str) -> Option<syn::Ident> {
    if RAW_IN_2024.contains(&name) {
        return Some(syn::Ident::new_raw(name, Span::call_site()));
    }
    if let Ok(id) = syn::parse_str::<syn::Ident>(name) {
        return Some(id);
    }
    if NOT_EVEN_RAW.contains(&name) {
        return None;
    }
    syn::parse_str::<syn::Ident>(&format!("r#{name}")).ok()
}

/// The name an identifier stands for (`r#type` is `type`).
pub fn unraw(id: &syn::Ident) -> String {
    let s = id.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}
