//! What changing a counter's `keep` does to the counts already stored.

use kvmodel_codegen::ir::{Counter, CounterKeep, Entity};

use super::{Change, Impact, push};

/// The schema spelling of a counter's `keep`, `none` when it follows the
/// live records.
fn spelled(keep: Option<CounterKeep>) -> &'static str {
    keep.map_or("none", CounterKeep::as_str)
}

/// What a change of `keep` on a counter both versions declare does: the
/// stored count stays as it is; what changes is what the expiry sweep and
/// deletes take back, what expiry receipts list and how `verify` judges it.
pub(super) fn keep_changes(name: &str, old: &Entity, new: &Entity, out: &mut Vec<Change>) {
    for x in &new.counters {
        let Some(o) = old.counters.iter().find(|o| *o.name == *x.name) else {
            continue;
        };
        let (was, now) = (keep_of(o), keep_of(x));
        if was == now {
            continue;
        }
        let head = format!(
            "{name}: counter `{}` keep: {} → {}",
            *x.name,
            spelled(was),
            spelled(now)
        );
        let expiring = new.ttl.is_some();
        let (impact, what) = match (was, now) {
            (None, Some(_)) => {
                let stops = if now == Some(CounterKeep::Always) {
                    "neither the expiry sweep nor deletes take anything back from it"
                } else {
                    "the expiry sweep no longer takes anything back from it (deletes still do)"
                };
                let receipts = if expiring {
                    "; the expiry receipts of records already stored still list their amount, so each takes it back once when it expires: run `reconcile` to rewrite those receipts first"
                } else {
                    ""
                };
                (
                    if expiring { Impact::NeedsMigration } else { Impact::Safe },
                    format!(
                        "the stored count is kept as it is, and from now on {stops}{receipts}; `verify` then checks it only against the lower bound the live records give, and `reconcile` never lowers it"
                    ),
                )
            }
            (Some(_), None) => (
                Impact::NeedsMigration,
                format!(
                    "it follows the live records again, but still holds what records that are gone added, so counts and sums are too high until `reconcile` sets it to what the live records add up to{}",
                    if expiring {
                        " (which also rewrites the expiry receipts of records already stored: until then they list no amount for it, and their expiry takes nothing back)"
                    } else {
                        ""
                    }
                ),
            ),
            (_, Some(CounterKeep::Always)) => (
                Impact::Safe,
                "the stored count is kept as it is; from now on deletes take nothing back from it either".to_owned(),
            ),
            _ => (
                Impact::Safe,
                "the stored count is kept as it is, with what deleted records added; from now on deletes take their amount back (the expiry sweep still takes nothing)".to_owned(),
            ),
        };
        push(out, impact, format!("{head}: {what}"));
    }
}

fn keep_of(c: &Counter) -> Option<CounterKeep> {
    c.keep.as_ref().map(|k| k.value)
}
