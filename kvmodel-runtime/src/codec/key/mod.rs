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
//!
//! ```
//! use kvmodel_runtime::codec::key::KeyBuilder;
//! let key = KeyBuilder::new("shop").lit("user").part("1:orders").finish();
//! assert_eq!(key, "shop:user:1%3Aorders");
//! ```

mod layout;
mod slot;
mod sort;

pub use layout::{
    Derived, KeyBuilder, KeyMatch, Segments, Space, derived_parts, shard_key, shard_of,
};
#[cfg(feature = "redis-cluster")]
pub(crate) use slot::crc16;
pub use slot::{SLOTS, hash_slot};
pub use sort::{SortPart, SortReader, read_terminated, sort_key, write_terminated};

use crate::error::{Error, Result};

/// Bytes that are always percent-escaped inside key components.
const RESERVED: &[u8] = b"%:{}#";

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == 0x7f || RESERVED.contains(&b)
}

fn push_escaped_byte(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 0xf) as usize] as char);
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
        if b.is_ascii() && !needs_escape(b) {
            out.push(b as char);
        } else {
            push_escaped_byte(out, b);
        }
    }
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

/// A value that can be written as one key component.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be part of a key",
    label = "used as a key, index or group component here",
    note = "derive `kvmodel::KvEnum` for a fieldless enum, or implement `kvmodel::key::KeyPart`"
)]
pub trait KeyPart {
    /// Appends the escaped component to `out`.
    fn write_key(&self, out: &mut String);
}

impl<T: KeyPart + ?Sized> KeyPart for &T {
    fn write_key(&self, out: &mut String) {
        (**self).write_key(out);
    }
}

impl KeyPart for str {
    fn write_key(&self, out: &mut String) {
        escape_into(out, self);
    }
}

impl KeyPart for String {
    fn write_key(&self, out: &mut String) {
        escape_into(out, self);
    }
}

impl KeyPart for [u8] {
    fn write_key(&self, out: &mut String) {
        escape_bytes_into(out, self);
    }
}

impl KeyPart for Vec<u8> {
    fn write_key(&self, out: &mut String) {
        escape_bytes_into(out, self);
    }
}

impl KeyPart for bool {
    fn write_key(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

/// Appends the decimal digits of an integer, `-` first when `negative`:
/// what `{}` formats, without the formatting machinery (record keys and
/// the key checks of every read write one).
fn push_decimal(out: &mut String, negative: bool, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // `n % 10` is a single digit.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        out.push('-');
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

macro_rules! uint_key_part {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn write_key(&self, out: &mut String) {
                push_decimal(out, false, u64::from(*self));
            }
        }
    )*};
}
uint_key_part!(u8, u16, u32, u64);

macro_rules! int_key_part {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn write_key(&self, out: &mut String) {
                let n = i64::from(*self);
                push_decimal(out, n < 0, n.unsigned_abs());
            }
        }
    )*};
}
int_key_part!(i8, i16, i32, i64);

impl KeyPart for uuid::Uuid {
    fn write_key(&self, out: &mut String) {
        let mut buf = uuid::Uuid::encode_buffer();
        out.push_str(self.hyphenated().encode_lower(&mut buf));
    }
}
