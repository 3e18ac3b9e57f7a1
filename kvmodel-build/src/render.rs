//! Renders diagnostics as `file:line:col: error[CODE]: message` with the
//! source line and a caret.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use kvmodel_codegen::origin::{Diagnostic, Origin, Severity};

/// The byte range of the token at 1-based `line`/`column` (in characters).
fn token_range(source: &str, line: u32, column: u32) -> Option<std::ops::Range<usize>> {
    let start_of_line = source
        .split_inclusive('\n')
        .take(line.saturating_sub(1) as usize)
        .map(str::len)
        .sum::<usize>();
    let text = source.get(start_of_line..)?;
    let text = text.split('\n').next().unwrap_or_default();
    let offset = text
        .char_indices()
        .nth(column.saturating_sub(1) as usize)
        .map_or(text.len(), |(i, _)| i);
    let rest = &text[offset..];
    let len = if rest.starts_with(['"', '\'']) {
        let q = rest.as_bytes()[0] as char;
        rest[1..].find(q).map_or(rest.len(), |i| i + 2)
    } else {
        let stop = rest.find([',', '}', ']', '#', '\r']).unwrap_or(rest.len());
        let key_end = rest
            .find(": ")
            .or_else(|| rest.strip_suffix(':').map(str::len));
        key_end.map_or(stop, |k| k.min(stop))
    };
    // At least the first character, whole: a token of whitespace only
    // (say U+0085) trims to nothing, and a byte of it is no `str`.
    let first = rest.chars().next().map_or(0, char::len_utf8);
    let len = rest[..len].trim_end().len().max(first);
    let start = start_of_line + offset;
    Some(start..start + len)
}

/// One diagnostic, rendered against the source of its file.
pub fn render(d: &Diagnostic, source: &str, color: bool) -> String {
    let severity = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    };
    let (head, range) = match &d.origin {
        Origin::Location { file, line, column } => (
            format!(
                "{file}:{line}:{column}: {severity}[{}]: {}",
                d.code, d.message
            ),
            token_range(source, *line, *column),
        ),
        _ => (format!("{severity}[{}]: {}", d.code, d.message), None),
    };
    let mut out = head;
    if let Some(range) = range {
        let kind = AnnotationKind::Primary.span(range);
        let kind = match &d.help {
            Some(h) => kind.label(h.as_str()),
            None => kind,
        };
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Info => Level::INFO,
        };
        let group = Group::with_level(level).element(
            Snippet::source(source)
                .line_start(1)
                .fold(true)
                .annotation(kind),
        );
        let renderer = if color {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        out.push('\n');
        out.push_str(&renderer.render(&[group]));
    } else if let Some(h) = &d.help {
        out.push_str(&format!("\n  = help: {h}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token that is whitespace only, of a character wider than a byte,
    /// is underlined whole (it once split U+0085 and panicked in the
    /// renderer).
    #[test]
    fn ranges_end_on_character_boundaries() {
        for source in [
            "a: \u{85}\n",
            "a: \u{85}b\n",
            "\u{85}",
            "a: \u{2003}x, y\n",
            "a: é\n",
        ] {
            for column in 1..6 {
                if let Some(r) = token_range(source, 1, column) {
                    assert!(
                        source.get(r.clone()).is_some(),
                        "{source:?} column {column}: {r:?}"
                    );
                }
                let d = Diagnostic::error(
                    "E000",
                    &Origin::Location {
                        file: "x.yaml".into(),
                        line: 1,
                        column,
                    },
                    "message",
                );
                let _ = render(&d, source, false);
            }
        }
    }
}
