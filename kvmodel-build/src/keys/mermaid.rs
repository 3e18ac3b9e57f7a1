//! `kvmodel keys --format mermaid`: the model as a Mermaid entity-relationship
//! diagram (`erDiagram`), which GitHub renders in a ```` ```mermaid ```` block
//! (and rustdoc with a Mermaid script in its header, or `aquamarine`).
//!
//! Each entity with a key is a box with its fields (`PK` for the fields of
//! its key, `UK` for a field with a unique index of its own, `FK` for the
//! field a relation goes by) and its counters; each relation is a line from
//! the parent to its children labelled with its name and `on_delete`; each
//! link is a many-to-many line labelled with its two names.

use kvmodel_codegen::ir::{Entity, FieldType, Model};

/// A type as Mermaid accepts it in an attribute: letters, digits, `_`, `-`,
/// `[]` and `()` (`string[]` for a list, `map(i64)` for a map).
fn ty(t: &FieldType) -> String {
    match t {
        FieldType::String => "string".into(),
        FieldType::Bool => "bool".into(),
        FieldType::I32 => "i32".into(),
        FieldType::I64 => "i64".into(),
        FieldType::U32 => "u32".into(),
        FieldType::U64 => "u64".into(),
        FieldType::F64 => "f64".into(),
        FieldType::Bytes => "bytes".into(),
        FieldType::Timestamp => "timestamp".into(),
        FieldType::Date => "date".into(),
        FieldType::Uuid => "uuid".into(),
        FieldType::List(t) => format!("{}[]", ty(t)),
        FieldType::Map(t) => format!("map({})", ty(t)),
        FieldType::Named(n) => {
            let text = n.to_string();
            let name = text.rsplit("::").next().unwrap_or(&text).trim();
            name.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect()
        }
    }
}

/// A comment as Mermaid accepts it: no double quotes.
fn comment(text: &str) -> String {
    text.replace('"', "'")
}

fn entity(e: &Entity, out: &mut String) {
    out.push_str(&format!("    {} {{\n", *e.name));
    let key_fields: Vec<&str> = e
        .key
        .iter()
        .flat_map(|k| &k.segments)
        .filter_map(|s| match s {
            kvmodel_codegen::ir::Segment::Field(f) => Some(f.as_str()),
            kvmodel_codegen::ir::Segment::Literal(_) => None,
        })
        .collect();
    for f in &e.fields {
        let name = f.name.as_str();
        let mut keys = Vec::new();
        if key_fields.contains(&name) {
            keys.push("PK");
        }
        if e.indexes
            .iter()
            .any(|i| i.unique && i.fields.len() == 1 && i.fields[0].field() == name)
        {
            keys.push("UK");
        }
        if e.relations.iter().any(|r| r.by.as_str() == name) {
            keys.push("FK");
        }
        let mut line = format!("        {} {name}", ty(&f.ty));
        if !keys.is_empty() {
            line.push(' ');
            line.push_str(&keys.join(", "));
        }
        if f.optional {
            line.push_str(" \"optional\"");
        }
        out.push_str(&line);
        out.push('\n');
    }
    for c in &e.counters {
        let what = c
            .sum
            .as_ref()
            .map(|s| format!("sum of {}", **s))
            .unwrap_or_else(|| "count".into());
        let by: Vec<String> = c.group_by.iter().map(|g| expr(g)).collect();
        let by = if by.is_empty() {
            String::new()
        } else {
            format!(" by {}", by.join(", "))
        };
        out.push_str(&format!(
            "        counter {} \"{}\"\n",
            *c.name,
            comment(&format!("{what}{by}"))
        ));
    }
    out.push_str("    }\n");
}

/// `day(created_at)`, as the schema spells it.
fn expr(x: &kvmodel_codegen::ir::FieldExpr) -> String {
    use kvmodel_codegen::ir::FieldExpr;
    match x {
        FieldExpr::Field(f) => f.clone(),
        FieldExpr::Hour(f) => format!("hour({f})"),
        FieldExpr::Day(f) => format!("day({f})"),
        FieldExpr::Month(f) => format!("month({f})"),
    }
}

/// The diagram of a whole model.
pub(super) fn diagram(model: &Model) -> String {
    let keyed = |name: &str| {
        model
            .entities
            .iter()
            .any(|e| e.key.is_some() && *e.name == *name)
    };
    let mut out = String::from("erDiagram\n");
    for e in model.entities.iter().filter(|e| e.key.is_some()) {
        entity(e, &mut out);
    }
    for e in model.entities.iter().filter(|e| e.key.is_some()) {
        for r in e.relations.iter().filter(|r| keyed(&r.belongs_to)) {
            let optional = e.field(&r.by).is_some_and(|f| f.optional);
            // A child of an enforced relation names a parent that exists;
            // one of `keep` may name one deleted since.
            let parent = if r.on_delete.enforced() && !optional {
                "||"
            } else {
                "|o"
            };
            out.push_str(&format!(
                "    {} {parent}--o{{ {} : \"{} (on_delete: {})\"\n",
                *r.belongs_to, *e.name, *r.name, *r.on_delete
            ));
        }
    }
    for e in model.entities.iter().filter(|e| e.key.is_some()) {
        for l in e.links.iter().filter(|l| keyed(l.to_name())) {
            out.push_str(&format!(
                "    {} }}o--o{{ {} : \"link {} / {}\"\n",
                *e.name,
                l.to_name(),
                *l.name,
                *l.inverse
            ));
        }
    }
    out
}
