//! Rules on how an entity's records are stored: `max_size`, `compress`,
//! and `keep` only where there is a collection to cap.

use crate::ir::Entity;
use crate::origin::{Diagnostic, Diagnostics};
use crate::vocab;

/// Checks the storage settings of one entity.
pub(super) fn check(e: &Entity, diags: &mut Diagnostics) {
    for ix in e.indexes.iter().filter(|i| i.unique) {
        if let Some(k) = &ix.keep {
            diags.push(
                Diagnostic::error(
                    "E132",
                    &k.origin,
                    format!(
                        "index `{}` is unique, so it has no collection for `keep` to cap",
                        *ix.name
                    ),
                )
                .help("remove `keep`, or drop `unique` to make it an ordered index"),
            );
        }
    }
    compress(e, diags);
    let Some(max) = &e.max_size else { return };
    if e.key.is_none() {
        // A record-only type is never written, so a limit would never apply.
        diags.error("E123", &max.origin, "`max_size` needs a `key`");
        return;
    }
    // Zero refuses every record; beyond the store-wide limit the entity's
    // own limit could never be the one that refuses.
    if max.value == 0 || max.value > vocab::MAX_RECORD_SIZE {
        diags.push(
            Diagnostic::error(
                "E130",
                &max.origin,
                format!(
                    "`max_size` is {}, which {}; it must be between 1B and {}",
                    vocab::format_size(max.value),
                    if max.value == 0 {
                        "refuses every record"
                    } else {
                        "is more than any record may have"
                    },
                    vocab::format_size(vocab::MAX_RECORD_SIZE)
                ),
            )
            .help("a limit such as `256KiB` keeps one record from growing into a big key"),
        );
    }
}

/// `compress`: only on an entity with a key, with a threshold a record can
/// reach (E134).
fn compress(e: &Entity, diags: &mut Diagnostics) {
    let Some(c) = &e.compress else { return };
    if e.key.is_none() {
        // A record-only type is never written, so nothing would compress.
        diags.error("E123", &c.origin, "`compress` needs a `key`");
        return;
    }
    let (limit, by) = match &e.max_size {
        Some(m) if m.value <= vocab::MAX_RECORD_SIZE => (m.value, "the entity's `max_size`"),
        _ => (vocab::MAX_RECORD_SIZE, "the most any record may have"),
    };
    if c.above.value > limit {
        diags.push(
            Diagnostic::error(
                "E134",
                &c.above.origin,
                format!(
                    "`compress` has `above` {}, more than {by} ({}), so no record would ever \
                     be compressed",
                    vocab::format_size(c.above.value),
                    vocab::format_size(limit)
                ),
            )
            .help("a threshold such as `1KiB` compresses the records large enough to gain from it"),
        );
    }
}
