//! What adding, removing or changing a standalone counter does to the
//! counts already stored.

use kvmodel_codegen::ir::{FieldType, Model, Tally};
use kvmodel_codegen::vocab::format_duration_ms;

use super::{Change, Impact, push};

/// What a counter's keys are made of: its namespace, its key space and the
/// types of its placeholders in template order. Two counters with the same
/// layout read and write the same keys.
fn layout(t: &Tally) -> (Option<&str>, String, Vec<Option<&FieldType>>) {
    let key = t.key.as_ref();
    (
        t.namespace.as_ref().map(|n| n.as_str()),
        key.map(|k| k.key_space()).unwrap_or_default(),
        key.iter()
            .flat_map(|k| k.placeholders())
            .map(|p| t.field(p).map(|f| &f.ty.value))
            .collect(),
    )
}

fn shards(t: &Tally) -> u32 {
    t.shards.as_ref().map_or(1, |s| s.value)
}

fn ttl(t: &Tally) -> Option<u64> {
    t.ttl_ms.as_ref().map(|t| t.value)
}

/// The changes of the standalone counters between `old` and `new`.
pub(super) fn tally_changes(old: &Model, new: &Model, out: &mut Vec<Change>) {
    for n in &new.tallies {
        let name = n.name.as_str();
        match old.tallies.iter().find(|o| *o.name == *n.name) {
            Some(o) => changes(name, o, n, out),
            None => {
                match old.tallies.iter().find(|o| {
                    layout(o) == layout(n) && !new.tallies.iter().any(|x| *x.name == *o.name)
                }) {
                    Some(o) => {
                        push(
                            out,
                            Impact::Safe,
                            format!(
                                "{name}: standalone counter renamed from `{}`; its keys are the same, so it keeps its counts",
                                *o.name
                            ),
                        );
                        changes(name, o, n, out);
                    }
                    None => push(
                        out,
                        Impact::Safe,
                        format!("{name}: new standalone counter; nothing of it is stored yet"),
                    ),
                }
            }
        }
    }
    for o in &old.tallies {
        let kept = new
            .tallies
            .iter()
            .any(|n| *n.name == *o.name || layout(n) == layout(o));
        if kept {
            continue;
        }
        let (impact, left) = match ttl(o) {
            Some(ms) => (
                Impact::Safe,
                format!(
                    "they expire within {} of their last increment",
                    format_duration_ms(ms)
                ),
            ),
            None => (Impact::Breaking, "nothing reads or removes them".to_owned()),
        };
        push(
            out,
            impact,
            format!(
                "{}: standalone counter removed; its stored counts are left behind, and {left}",
                *o.name
            ),
        );
    }
}

/// The changes of one counter both versions declare.
fn changes(name: &str, o: &Tally, n: &Tally, out: &mut Vec<Change>) {
    if layout(o) != layout(n) {
        push(
            out,
            Impact::Breaking,
            format!(
                "{name}: the standalone counter's keys changed (namespace, literal segments or key field types); stored counts are no longer read and every counter starts again from 0"
            ),
        );
    }
    let (was, now) = (shards(o), shards(n));
    if now > was {
        push(
            out,
            Impact::Safe,
            format!(
                "{name}: shards {was} → {now}; shard 0 is the counter key itself, so stored counts are kept and the new shards start empty"
            ),
        );
    } else if now < was {
        push(
            out,
            Impact::Breaking,
            format!(
                "{name}: shards {was} → {now}; what shards #{now}…#{} hold is no longer read: `reset` the counters before the change, or keep {was} shards",
                was - 1
            ),
        );
    }
    match (ttl(o), ttl(n)) {
        (None, Some(ms)) => push(
            out,
            Impact::Safe,
            format!(
                "{name}: ttl added ({}); a stored counter takes it at its next increment and never expires until then",
                format_duration_ms(ms)
            ),
        ),
        (Some(ms), None) => push(
            out,
            Impact::Breaking,
            format!(
                "{name}: ttl removed; stored counters keep the expiry their last increment set (up to {}), and their counts are lost then, since an increment no longer sets a TTL nor clears one",
                format_duration_ms(ms)
            ),
        ),
        (Some(a), Some(b)) if a != b => push(
            out,
            Impact::Safe,
            format!(
                "{name}: ttl {} → {}; each stored counter takes the new one at its next increment",
                format_duration_ms(a),
                format_duration_ms(b)
            ),
        ),
        _ => {}
    }
}
