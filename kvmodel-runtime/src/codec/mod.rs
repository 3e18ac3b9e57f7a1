//! Encodings: keys and sort keys ([`key`]), record envelopes ([`record`]),
//! what an entity does to its records before they are stored ([`storage`],
//! [`compress`]),
//! protobuf records ([`proto`]),
//! declarative migration steps ([`migrate`]), generic values ([`value`])
//! and byte positions as text ([`hex`]). Timestamps and dates live below
//! the codec, in the crate's `time` module, so that [`Error`](crate::Error)
//! can name them without importing any encoding.

pub mod compress;
mod finite;
pub mod hex;
pub mod key;
pub mod migrate;
pub mod proto;
pub mod record;
pub mod scalar;
pub mod storage;
pub mod value;

/// FNV-1a (64 bits) of `bytes`: stable across builds, platforms and
/// releases, for tags stored or handed out (cursors, shards, checkpoints).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
#[test]
fn fnv1a_is_the_published_function() {
    assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
}
