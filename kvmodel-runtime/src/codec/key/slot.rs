//! Redis Cluster hash slots of keys: which of the 16384 slots a key lives
//! in, as `CLUSTER KEYSLOT` computes it. Keys that share a slot can be
//! written by one atomic script on a cluster; `colocate` puts the keys of
//! one instance there by giving them one hash tag.

/// The number of hash slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
pub(crate) fn crc16(bytes: &[u8]) -> u16 {
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

/// The hash slot of `key` on a Redis Cluster.
///
/// ```
/// # use kvmodel_runtime::__private::hash_slot;
/// assert_eq!(hash_slot("foo"), 12182);
/// assert_eq!(hash_slot("docs:tenant:{t1}:doc:1"), hash_slot("docs:tenant#count:per_tenant:{t1}"));
/// ```
pub fn hash_slot(key: &str) -> u16 {
    crc16(hashed(key.as_bytes())) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_hash_tag_rules() {
        // Values `CLUSTER KEYSLOT` gives on Redis 7.
        assert_eq!(hash_slot("foo"), 12182);
        assert_eq!(hash_slot("a{}b"), 13694);
        assert_eq!(hash_slot("{user1000}.following"), hash_slot("user1000"));
        assert_eq!(hash_slot("foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(hash_slot("foo{{bar}}zap"), hash_slot("{bar"));
        assert_eq!(hash_slot("foo{bar}{zap}"), hash_slot("bar"));
    }
}
