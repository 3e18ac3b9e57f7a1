//! The standalone counters' part of `kvmodel keys`: each counter's key,
//! its shards and TTL, and what `incr`, `get` and `reset` cost.

use kvmodel_codegen::ir::{Model, Segment, Tally};
use kvmodel_codegen::vocab::format_duration_ms;
use kvmodel_runtime::__private::TallyKey;

use super::{Format, column_width, sample_of};

/// The key pattern (`site:views#tally:{<page>:<day>}`) and an example key
/// of a standalone counter, both spelled by the runtime's key builder.
pub(super) fn key(t: &Tally, model: &Model) -> (String, String) {
    let ns = t
        .namespace
        .as_ref()
        .map(|n| n.value.clone())
        .unwrap_or_default();
    let space = t.key.as_ref().map(|k| k.key_space()).unwrap_or_default();
    let (mut pattern, mut example) = (TallyKey::new(&ns, &space), TallyKey::new(&ns, &space));
    for s in t.key.iter().flat_map(|k| &k.segments) {
        if let Segment::Field(f) = s {
            let ty = t.field(f).map(|f| f.ty.value.clone());
            let value = ty.map_or_else(|| "?".to_owned(), |ty| sample_of(&ty, f, model));
            pattern = pattern.part(&format!("<{f}>"));
            example = example.part(&value);
        }
    }
    (pattern.finish(), example.finish())
}

/// What the counter's keys hold.
fn note(t: &Tally) -> String {
    let shards = t.shards.as_ref().map_or(1, |s| s.value);
    let mut note = if shards > 1 {
        format!(
            "a 64-bit counter spread over {shards} keys (the key, then `#1`…`#{}`)",
            shards - 1
        )
    } else {
        "a 64-bit counter".to_owned()
    };
    if let Some(ms) = &t.ttl_ms {
        note.push_str(&format!(
            ", expiring {} after its last increment",
            format_duration_ms(ms.value)
        ));
    }
    note
}

/// The access patterns of a counter: (method, round trips, store operations).
fn accesses(t: &Tally) -> Vec<(String, &'static str, String)> {
    let shards = t.shards.as_ref().map_or(1, |s| s.value);
    let args: Vec<&str> = t.key.iter().flat_map(|k| k.placeholders()).collect();
    let call = |m: &str, more: &[&str]| {
        let all: Vec<&str> = args.iter().copied().chain(more.iter().copied()).collect();
        format!("{m}({})", all.join(", "))
    };
    let expire = match (&t.ttl_ms, shards) {
        (None, _) => String::new(),
        (Some(_), 1) => " + PEXPIRE".to_owned(),
        (Some(_), n) => format!(" + PEXPIRE of all {n} shards"),
    };
    let incr = if shards > 1 {
        format!("1 commit: INCRBY of one shard at random{expire}")
    } else {
        format!("1 commit: INCRBY{expire}")
    };
    let get = if shards > 1 {
        format!("MGET of {shards} shards, summed")
    } else {
        "GET".to_owned()
    };
    let reset = if shards > 1 {
        format!("1 commit: DEL of {shards} shards")
    } else {
        "1 commit: DEL".to_owned()
    };
    vec![
        (call("incr", &["by"]), "1", incr),
        (call("get", &[]), "1", get),
        (call("reset", &[]), "1", reset),
    ]
}

/// The section of the report for the model's standalone counters (empty
/// when it has none).
pub(super) fn report(model: &Model, format: Format) -> String {
    let mut out = String::new();
    for t in model.tallies.iter().filter(|t| t.key.is_some()) {
        let (pattern, example) = key(t, model);
        let acc = accesses(t);
        let cluster = if t.shards.is_some() {
            "Redis Cluster: every shard of the counter carries its hash tag, so each access is one slot."
        } else {
            "Redis Cluster: each access is one slot."
        };
        match format {
            Format::Markdown => {
                out.push_str(&format!(
                    "## {} (standalone counter)\n\n| kind | key | example | holds |\n|---|---|---|---|\n| counter | `{pattern}` | `{example}` | {} |\n",
                    *t.name,
                    note(t)
                ));
                out.push_str("\n| access | store operations | round trips |\n|---|---|---|\n");
                for (m, calls, ops) in &acc {
                    out.push_str(&format!("| `{m}` | {ops} | {calls} |\n"));
                }
                out.push_str(&format!("\n{cluster}\n\n"));
            }
            Format::Text => {
                out.push_str(&format!("{} (standalone counter)\n", *t.name));
                out.push_str(&format!(
                    "  {:<9}  {pattern}  e.g. {example}\n             {:<w$}  {}\n",
                    "counter",
                    "",
                    note(t),
                    w = pattern.len()
                ));
                out.push_str("  access patterns (round trips on Redis):\n");
                let w = column_width(acc.iter().map(|(m, ..)| m.len()));
                for (m, calls, ops) in &acc {
                    out.push_str(&format!("    {m:<w$}  {calls}  {ops}\n"));
                }
                out.push_str(&format!("  {cluster}\n\n"));
            }
            Format::Mermaid => {}
        }
    }
    out
}
