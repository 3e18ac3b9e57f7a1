//! Hash slots: which of the 16384 slots of a Redis Cluster a key lives in,
//! and the store's own keys placed in the slot of a given key.
//!
//! Routing is the redis crate's; this module only *groups* a batch by slot
//! and names the bookkeeping keys (locks, shared holds, intents, tokens) that must share a
//! slot with the keys they guard, so that one script can touch both.

use std::sync::OnceLock;

use crate::codec::key::crc16;
pub use crate::codec::key::{SLOTS, hash_slot as slot_of};

/// A short hash tag for every slot: `tag(s)` is a string whose slot is `s`,
/// so `{tag(s)}` in a key puts that key in slot `s`. Found once, by trying
/// decimal numbers in order (deterministic: the same tag on every machine).
fn tags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        let mut tags = vec![String::new(); usize::from(SLOTS)];
        let mut missing = usize::from(SLOTS);
        let mut n: u64 = 0;
        while missing > 0 {
            let text = n.to_string();
            let slot = usize::from(crc16(text.as_bytes()) % SLOTS);
            if tags[slot].is_empty() {
                tags[slot] = text;
                missing -= 1;
            }
            n += 1;
        }
        tags
    })
}

/// The hash tag text of slot `slot` (see [`tags`]).
pub fn tag(slot: u16) -> &'static str {
    &tags()[usize::from(slot % SLOTS)]
}

/// The prefix of every key the store keeps for itself; no kvmodel key
/// starts with it (namespaces are `[a-z][a-z0-9_-]*`).
pub const OWN: &str = "kvmodel~";

/// The lock the cross-slot protocol holds on `key` (in `key`'s slot), for
/// a store whose keys all start with `prefix`.
pub fn lock_key(prefix: &str, key: &str) -> String {
    format!("{prefix}{OWN}lock:{{{}}}:{key}", tag(slot_of(key)))
}

/// The shared holds of the cross-slot protocol on `key` (in `key`'s slot):
/// a hash of the writes that only read it in a condition, or only add to it.
pub fn share_key(prefix: &str, key: &str) -> String {
    format!("{prefix}{OWN}share:{{{}}}:{key}", tag(slot_of(key)))
}

/// Whether `key` (a store key, with `prefix`) is a [`share_key`].
pub fn is_share_key(prefix: &str, key: &str) -> bool {
    key.strip_prefix(prefix)
        .is_some_and(|k| k.starts_with(&format!("{OWN}share:")))
}

/// The intent of write `write` whose record lives in `slot`.
pub fn intent_key(prefix: &str, slot: u16, write: &str) -> String {
    format!("{prefix}{OWN}intent:{{{}}}:{write}", tag(slot))
}

/// The token of write `write` for its effects in `slot`.
pub fn token_key(prefix: &str, slot: u16, write: &str) -> String {
    format!("{prefix}{OWN}token:{{{}}}:{write}", tag(slot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_has_a_tag() {
        for s in 0..SLOTS {
            assert_eq!(slot_of(&format!("x{{{}}}y", tag(s))), s);
        }
    }

    #[test]
    fn own_keys_share_the_slot_they_guard() {
        for key in ["shop:user:1", "a{}b", "a}b{c", "docs:tenant:{t}:doc:1", ""] {
            assert_eq!(slot_of(&lock_key("p/", key)), slot_of(key), "{key}");
            assert_eq!(slot_of(&share_key("p/", key)), slot_of(key), "{key}");
            assert!(is_share_key("p/", &share_key("p/", key)));
            assert!(!is_share_key("p/", &lock_key("p/", key)));
        }
        assert_eq!(slot_of(&intent_key("", 77, "w")), 77);
        assert_eq!(slot_of(&token_key("p/", 16383, "w")), 16383);
    }
}
