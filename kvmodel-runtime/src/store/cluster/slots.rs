//! Hash slots: which of the 16384 slots of a Redis Cluster a key lives in,
//! and the store's own keys placed in the slot of a given key.
//!
//! Routing is the redis crate's; this module only *groups* a batch by slot
//! and names the bookkeeping keys (locks, intents, tokens) that must share a
//! slot with the keys they guard, so that one script can touch both.

use std::sync::OnceLock;

/// The number of hash slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The part of `key` Redis hashes: the text between the first `{` and the
/// first `}` after it when that is not empty, otherwise the whole key.
fn hashed(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key`, as `CLUSTER KEYSLOT` computes it.
pub fn slot_of(key: &str) -> u16 {
    crc16(hashed(key.as_bytes())) % SLOTS
}

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
    fn slots_follow_the_hash_tag_rules() {
        // Values `CLUSTER KEYSLOT` gives on Redis 7.
        assert_eq!(slot_of("foo"), 12182);
        assert_eq!(slot_of("{user1000}.following"), slot_of("user1000"));
        assert_eq!(slot_of("foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(slot_of("foo{{bar}}zap"), slot_of("{bar"));
        assert_eq!(slot_of("foo{bar}{zap}"), slot_of("bar"));
        assert_eq!(slot_of("a{}b"), 13694);
    }

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
        }
        assert_eq!(slot_of(&intent_key("", 77, "w")), 77);
        assert_eq!(slot_of(&token_key("p/", 16383, "w")), 16383);
    }
}
