//! Key construction: namespaced, `:`-separated keys whose user-supplied
//! components are escaped so that no input can collide with another key.
//!
//! Two encodings live here:
//!
//! * **Key components** ([`KeyPart`]) are written as text. Every byte that has
//!   a meaning in the key layout (`%`, `:`, `{`, `}`, `#`) and every control
//!   byte is percent-escaped, so a component can never contain a separator, a
//!   Redis Cluster hash tag or a derived-key marker. Integers are canonical
//!   decimal, so the encoding is injective for each type.
//! * **Sort keys** ([`SortPart`]) are bytes whose lexicographic order equals the
//!   order of the values: integers are fixed-width big-endian with the sign bit
//!   flipped, strings are `0x00`-escaped and terminated, so a tuple of parts
//!   sorts as the tuple does.
//!
//! The layout of derived keys (claims, collections, counters, the discovery
//! set) lives in `layout`: one enum of their kinds, the builder generated
//! code calls, and the matcher that checks a key without allocating.

mod layout;
mod part;
mod slot;
mod sort;
mod time;

pub(crate) use layout::DerivedKey;
pub use layout::{
    Derived, KeyBuilder, KeyMatch, RecordKeys, Segments, Space, derived_parts, maintenance_key,
    shard_key, shard_of,
};
pub use part::KeyPart;
#[cfg(feature = "redis-cluster")]
pub use slot::SLOTS;
#[cfg(feature = "redis-cluster")]
pub(crate) use slot::crc16;
pub use slot::hash_slot;
pub use sort::{
    SortPart, SortReader, read_terminated, read_terminated_into, sort_is, sort_key,
    write_terminated,
};

use crate::error::{Error, Result};

/// Bytes that are always percent-escaped inside key components.
const RESERVED: &[u8] = b"%:{}#";

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == 0x7f || RESERVED.contains(&b)
}

/// The three bytes `%XY` that stand for `b` in a component.
fn escaped(b: u8) -> [u8; 3] {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    [b'%', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]
}

fn push_escaped_byte(out: &mut String, b: u8) {
    for c in escaped(b) {
        out.push(char::from(c));
    }
}

/// Appends `s` to `out`, percent-escaping reserved and control bytes.
pub fn escape_into(out: &mut String, s: &str) {
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        if needs_escape(b) {
            out.push_str(&s[start..i]);
            push_escaped_byte(out, b);
            start = i + 1;
        }
    }
    out.push_str(&s[start..]);
}

/// Appends arbitrary bytes: printable ASCII stays, everything else is escaped.
pub fn escape_bytes_into(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        if escapes_in_bytes(b) {
            push_escaped_byte(out, b);
        } else {
            out.push(char::from(b));
        }
    }
}

/// Whether a byte of a bytes component is escaped: all but printable ASCII.
fn escapes_in_bytes(b: u8) -> bool {
    !b.is_ascii() || needs_escape(b)
}

/// Escapes one key component.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

/// Reverses [`escape_bytes_into`] (and [`escape`]): the raw bytes of a component.
pub fn unescape_bytes(s: &str) -> Result<Vec<u8>> {
    let bad = |reason: &str| Error::InvalidKey {
        key: s.to_owned(),
        reason: reason.to_owned(),
    };
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .ok_or_else(|| bad("a `%` escape is cut short"))?;
            let hex = std::str::from_utf8(hex).map_err(|_| bad("a `%` escape is not hex"))?;
            let v = u8::from_str_radix(hex, 16).map_err(|_| bad("a `%` escape is not hex"))?;
            out.push(v);
            i += 3;
        } else if needs_escape(b) {
            return Err(bad("it contains an unescaped reserved byte"));
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(out)
}

/// Reverses [`escape`].
pub fn unescape(s: &str) -> Result<String> {
    String::from_utf8(unescape_bytes(s)?).map_err(|_| Error::InvalidKey {
        key: s.to_owned(),
        reason: "it does not decode to UTF-8".to_owned(),
    })
}
