//! Parsing of key templates (`user:{id}`).

use crate::ir::{KeyTemplate, Segment};
use crate::origin::Sp;

/// Why a template did not parse.
pub type TemplateError = String;

/// Literal segments: lowercase ASCII letters, digits, `_` and `-`.
pub fn is_literal(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Splits a template into segments; every segment is either a literal or
/// exactly one `{field}` placeholder.
pub fn parse(text: &str) -> Result<Vec<Segment>, TemplateError> {
    if text.is_empty() {
        return Err("the key template is empty; expected e.g. \"user:{id}\"".into());
    }
    text.split(':')
        .map(|seg| {
            if let Some(inner) = seg.strip_prefix('{') {
                let name = inner.strip_suffix('}').ok_or_else(|| {
                    format!("the segment `{seg}` opens `{{` without closing it; expected `{{field}}`")
                })?;
                let ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    return Err(format!("`{{{name}}}` is not a field placeholder; expected `{{field_name}}`"));
                }
                Ok(Segment::Field(name.to_owned()))
            } else if seg.is_empty() {
                Err("the key template has an empty segment (`::` or a `:` at either end)".into())
            } else if seg.contains(['{', '}']) {
                Err(format!("the segment `{seg}` mixes text and a placeholder; put each placeholder in its own `:`-separated segment"))
            } else if is_literal(seg) {
                Ok(Segment::Literal(seg.to_owned()))
            } else {
                Err(format!("the literal segment `{seg}` may only contain lowercase letters, digits, `_` and `-`"))
            }
        })
        .collect()
}

impl KeyTemplate {
    /// Parses a template, once: one that does not parse keeps no segments
    /// and the reason, which `check` reports.
    pub fn new(text: Sp<String>) -> Self {
        let (segments, error) = match parse(&text) {
            Ok(segments) => (segments, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        KeyTemplate {
            segments,
            error,
            text: text.value,
            origin: text.origin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!(
            parse("user:{id}:orders").unwrap(),
            vec![
                Segment::Literal("user".into()),
                Segment::Field("id".into()),
                Segment::Literal("orders".into())
            ]
        );
        for bad in [
            "",
            "user::{id}",
            "user:{id",
            "user-{id}",
            "User:{id}",
            "user:{}",
            ":x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
