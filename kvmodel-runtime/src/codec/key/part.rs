//! Key components: how a value is written into a key, and how a key is
//! checked against a value without writing it.

use std::cell::RefCell;

use super::{escape_bytes_into, escape_into, escaped, escapes_in_bytes, needs_escape};

/// A value that can be written as one key component.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be part of a key",
    label = "used as a key, index or group component here",
    note = "derive `kvmodel::KvEnum` for a fieldless enum, or implement `kvmodel::key::KeyPart`"
)]
pub trait KeyPart {
    /// Appends the escaped component to `out`.
    fn write_key(&self, out: &mut String);

    /// When `key` starts with this component as [`write_key`](Self::write_key)
    /// writes it, the length of that component; `None` otherwise.
    ///
    /// Reads check keys with this (a listed record against its entry, a
    /// record against its key) on every record they return. The default
    /// writes the component to a reused buffer and compares; implement it
    /// when the component can be compared where it lies.
    fn match_key(&self, key: &str) -> Option<usize> {
        with_scratch(|buf| {
            self.write_key(buf);
            key.starts_with(buf.as_str()).then_some(buf.len())
        })
    }
}

thread_local! {
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs `f` on an empty reused buffer (a fresh one when the reused one is
/// taken, as by a component whose `write_key` matches another key).
fn with_scratch<T>(f: impl FnOnce(&mut String) -> T) -> T {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            f(&mut buf)
        }
        Err(_) => f(&mut String::new()),
    })
}

/// `Some(plain.len())` when `key` starts with `plain`, which needs no escape.
fn match_plain(key: &str, plain: &str) -> Option<usize> {
    key.starts_with(plain).then_some(plain.len())
}

/// The length of `bytes`' escaped form at the start of `key`, each byte
/// escaped where `escape` says so.
fn match_escaped(key: &str, bytes: &[u8], escape: impl Fn(u8) -> bool) -> Option<usize> {
    let key = key.as_bytes();
    let mut at = 0;
    for &b in bytes {
        if escape(b) {
            let end = at + 3;
            if key.get(at..end)? != escaped(b) {
                return None;
            }
            at = end;
        } else {
            if *key.get(at)? != b {
                return None;
            }
            at += 1;
        }
    }
    Some(at)
}

impl<T: KeyPart + ?Sized> KeyPart for &T {
    fn write_key(&self, out: &mut String) {
        (**self).write_key(out);
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        (**self).match_key(key)
    }
}

impl KeyPart for str {
    fn write_key(&self, out: &mut String) {
        escape_into(out, self);
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        match_escaped(key, self.as_bytes(), needs_escape)
    }
}

impl KeyPart for String {
    fn write_key(&self, out: &mut String) {
        self.as_str().write_key(out);
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        self.as_str().match_key(key)
    }
}

impl KeyPart for [u8] {
    fn write_key(&self, out: &mut String) {
        escape_bytes_into(out, self);
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        match_escaped(key, self, escapes_in_bytes)
    }
}

impl KeyPart for Vec<u8> {
    fn write_key(&self, out: &mut String) {
        self.as_slice().write_key(out);
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        self.as_slice().match_key(key)
    }
}

impl KeyPart for bool {
    fn write_key(&self, out: &mut String) {
        out.push_str(bool_text(*self));
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        match_plain(key, bool_text(*self))
    }
}

fn bool_text(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// The decimal digits of an integer, `-` first when `negative`: what `{}`
/// formats, without the formatting machinery (record keys and the key
/// checks of every read write one). The text is `buf[start..]`.
struct Decimal {
    buf: [u8; 21],
    start: usize,
}

impl Decimal {
    fn new(negative: bool, mut n: u64) -> Decimal {
        let mut buf = [0u8; 21];
        let mut at = buf.len();
        loop {
            at -= 1;
            // `n % 10` is a single digit.
            buf[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        if negative {
            at -= 1;
            buf[at] = b'-';
        }
        Decimal { buf, start: at }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    fn push_to(&self, out: &mut String) {
        out.extend(self.bytes().iter().map(|&d| char::from(d)));
    }

    fn match_key(&self, key: &str) -> Option<usize> {
        let digits = self.bytes();
        key.as_bytes().starts_with(digits).then_some(digits.len())
    }
}

macro_rules! uint_key_part {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn write_key(&self, out: &mut String) {
                Decimal::new(false, u64::from(*self)).push_to(out);
            }
            fn match_key(&self, key: &str) -> Option<usize> {
                Decimal::new(false, u64::from(*self)).match_key(key)
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
                Decimal::new(n < 0, n.unsigned_abs()).push_to(out);
            }
            fn match_key(&self, key: &str) -> Option<usize> {
                let n = i64::from(*self);
                Decimal::new(n < 0, n.unsigned_abs()).match_key(key)
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
    fn match_key(&self, key: &str) -> Option<usize> {
        let mut buf = uuid::Uuid::encode_buffer();
        match_plain(key, self.hyphenated().encode_lower(&mut buf))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::KeyPart;

    fn written<P: KeyPart + ?Sized>(p: &P) -> String {
        let mut s = String::new();
        p.write_key(&mut s);
        s
    }

    /// `match_key` says what writing and comparing says, on the written
    /// form followed by anything, and on any other text.
    fn agrees<P: KeyPart + ?Sized>(p: &P, other: &str) {
        let w = written(p);
        let then = format!("{w}{other}");
        assert_eq!(p.match_key(&then), Some(w.len()), "{w:?} in {then:?}");
        let expected = other.starts_with(w.as_str()).then_some(w.len());
        assert_eq!(p.match_key(other), expected, "{w:?} in {other:?}");
    }

    proptest! {
        #[test]
        fn strings_match_as_written(s in "\\PC*|[%:{}#\\x00-\\x1f\\x7f a-c]*", other in "\\PC*|[%:{}#0-9A-F a-c]*") {
            agrees(s.as_str(), &other);
            agrees(&s, &other);
            agrees(s.as_bytes(), &other);
            // A prefix of the written form is not a match.
            let w = written(s.as_str());
            if let Some((cut, _)) = w.char_indices().last() {
                prop_assert_eq!(s.as_str().match_key(&w[..cut]), None);
            }
        }

        #[test]
        fn bytes_match_as_written(b in proptest::collection::vec(any::<u8>(), 0..12), other in "[%0-9A-Fa-f]*") {
            agrees(b.as_slice(), &other);
            agrees(&b, &other);
        }

        #[test]
        fn integers_match_as_written(n in any::<i64>(), u in any::<u64>(), other in "-?[0-9]{0,21}x?") {
            agrees(&n, &other);
            agrees(&u, &other);
            agrees(&(n as i8), &other);
            agrees(&(u as u16), &other);
        }
    }

    #[test]
    fn extremes_and_other_kinds_match_as_written() {
        for other in ["", "0", "-", "true", "false:x", "18446744073709551615"] {
            agrees(&i64::MIN, other);
            agrees(&i64::MAX, other);
            agrees(&u64::MAX, other);
            agrees(&0u8, other);
            agrees(&-1i32, other);
            agrees(&true, other);
            agrees(&false, other);
            agrees(&uuid::Uuid::from_u128(0xfeed), other);
        }
        assert_eq!(i64::MIN.match_key("-9223372036854775808:x"), Some(20));
        assert_eq!(12u64.match_key("123"), Some(2));
        assert_eq!(12u64.match_key("1"), None);
        assert_eq!(":".match_key("%3A"), Some(3));
        assert_eq!(":".match_key("%3a"), None);
        assert_eq!(":".match_key(":"), None);
    }

    /// A component that only writes: the default compares what it writes,
    /// also when called while another match holds the reused buffer.
    struct Only(&'static str);

    impl KeyPart for Only {
        fn write_key(&self, out: &mut String) {
            out.push_str(self.0);
            // Matching inside a write takes a fresh buffer, not a panic.
            assert_eq!(Inner.match_key("in"), Some(2));
        }
    }

    struct Inner;

    impl KeyPart for Inner {
        fn write_key(&self, out: &mut String) {
            out.push_str("in");
        }
    }

    #[test]
    fn the_default_compares_what_is_written() {
        assert_eq!(Only("ab").match_key("abc"), Some(2));
        assert_eq!(Only("ab").match_key("a"), None);
        assert_eq!(Only("").match_key(""), Some(0));
    }
}
