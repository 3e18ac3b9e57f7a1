//! Order-preserving sort keys: byte order equals value order.

use std::cell::RefCell;

/// A value with an order-preserving byte encoding.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no order-preserving encoding",
    label = "used as an `order_by` value here",
    note = "derive `kvmodel::KvEnum` for a fieldless enum, or implement `kvmodel::key::SortPart`"
)]
pub trait SortPart {
    /// Appends the encoding to `out`; byte order of outputs equals value order,
    /// and no encoding is a proper prefix of another of the same type.
    fn write_sort(&self, out: &mut Vec<u8>);

    /// When `sort` starts with this value's encoding, the length of that
    /// encoding; `None` otherwise.
    ///
    /// Listings check each entry's sort key against the record it reaches
    /// with this. The default encodes into a reused buffer and compares;
    /// implement it when the encoding can be compared where it lies.
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        thread_local! {
            static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        let check = |buf: &mut Vec<u8>| {
            self.write_sort(buf);
            sort.starts_with(buf).then_some(buf.len())
        };
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => {
                buf.clear();
                check(&mut buf)
            }
            // Taken by a `write_sort` that matches another value.
            Err(_) => check(&mut Vec::new()),
        })
    }
}

/// Whether `sort` is exactly the encoding of `part`.
pub fn sort_is<P: SortPart + ?Sized>(part: &P, sort: &[u8]) -> bool {
    part.match_sort(sort) == Some(sort.len())
}

/// `Some(N)` when `sort` starts with the fixed-width encoding `bytes`.
fn match_fixed<const N: usize>(sort: &[u8], bytes: [u8; N]) -> Option<usize> {
    sort.starts_with(&bytes).then_some(N)
}

impl<T: SortPart + ?Sized> SortPart for &T {
    fn write_sort(&self, out: &mut Vec<u8>) {
        (**self).write_sort(out);
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        (**self).match_sort(sort)
    }
}

/// Writes `bytes` with `0x00` escaped as `00 FF` and a `00 01` terminator.
///
/// Order-preserving and prefix-free: the terminator sorts below every byte a
/// longer string could continue with.
pub fn write_terminated(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 1]);
}

/// When `sort` starts with what [`write_terminated`] writes of `bytes`, its length.
pub fn match_terminated(sort: &[u8], bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    for &b in bytes {
        if *sort.get(at)? != b {
            return None;
        }
        at += 1;
        if b == 0 {
            if *sort.get(at)? != 0xff {
                return None;
            }
            at += 1;
        }
    }
    match sort.get(at..at + 2)? {
        [0, 1] => Some(at + 2),
        _ => None,
    }
}

/// Reads what [`write_terminated`] wrote; returns the bytes and the rest.
pub fn read_terminated(input: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let rest = read_terminated_into(input, &mut out)?;
    Some((out, rest))
}

/// Reads what [`write_terminated`] wrote, appending the bytes to `out`;
/// returns the rest.
pub fn read_terminated_into<'a>(input: &'a [u8], out: &mut Vec<u8>) -> Option<&'a [u8]> {
    let mut rest = input;
    loop {
        // Copy up to the next zero byte at once: it escapes a zero or ends.
        let zero = rest.iter().position(|&b| b == 0)?;
        out.extend_from_slice(&rest[..zero]);
        match rest.get(zero + 1)? {
            0xff => out.push(0),
            1 => return Some(&rest[zero + 2..]),
            _ => return None,
        }
        rest = &rest[zero + 2..];
    }
}

impl SortPart for str {
    fn write_sort(&self, out: &mut Vec<u8>) {
        write_terminated(out, self.as_bytes());
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        match_terminated(sort, self.as_bytes())
    }
}

impl SortPart for String {
    fn write_sort(&self, out: &mut Vec<u8>) {
        self.as_str().write_sort(out);
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        self.as_str().match_sort(sort)
    }
}

impl SortPart for bool {
    fn write_sort(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        match_fixed(sort, [u8::from(*self)])
    }
}

macro_rules! uint_sort_part {
    ($($t:ty),*) => {$(
        impl SortPart for $t {
            fn write_sort(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
            fn match_sort(&self, sort: &[u8]) -> Option<usize> {
                match_fixed(sort, self.to_be_bytes())
            }
        }
    )*};
}
uint_sort_part!(u8, u16, u32, u64);

macro_rules! int_sort_part {
    ($($t:ty => $u:ty),*) => {$(
        impl SortPart for $t {
            // Flipping the sign bit maps MIN..=MAX onto 0..=MAX unsigned.
            fn write_sort(&self, out: &mut Vec<u8>) {
                ((*self as $u) ^ (1 << (<$u>::BITS - 1))).write_sort(out);
            }
            fn match_sort(&self, sort: &[u8]) -> Option<usize> {
                ((*self as $u) ^ (1 << (<$u>::BITS - 1))).match_sort(sort)
            }
        }
    )*};
}
int_sort_part!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

/// IEEE 754 total order as an unsigned integer: negative numbers have every
/// bit flipped, positive numbers only the sign bit.
fn f64_order(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

impl SortPart for f64 {
    fn write_sort(&self, out: &mut Vec<u8>) {
        f64_order(*self).write_sort(out);
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        f64_order(*self).match_sort(sort)
    }
}

/// Reads order-preserving encodings back (the inverse of [`SortPart`]).
#[derive(Debug)]
pub struct SortReader<'a> {
    input: &'a [u8],
}

impl<'a> SortReader<'a> {
    /// Reads from `input`.
    pub fn new(input: &'a [u8]) -> Self {
        SortReader { input }
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.input.split_first_chunk::<N>()?;
        self.input = rest;
        Some(*head)
    }

    /// Reads an unsigned integer.
    pub fn u64(&mut self) -> Option<u64> {
        self.take::<8>().map(u64::from_be_bytes)
    }

    /// Reads a signed integer.
    pub fn i64(&mut self) -> Option<i64> {
        self.u64().map(|u| (u ^ (1 << 63)) as i64)
    }

    /// Reads a 32-bit unsigned integer.
    pub fn u32(&mut self) -> Option<u32> {
        self.take::<4>().map(u32::from_be_bytes)
    }

    /// Reads a 32-bit signed integer.
    pub fn i32(&mut self) -> Option<i32> {
        self.u32().map(|u| (u ^ (1 << 31)) as i32)
    }

    /// Reads a bool.
    pub fn bool(&mut self) -> Option<bool> {
        match self.take::<1>()? {
            [0] => Some(false),
            [1] => Some(true),
            _ => None,
        }
    }

    /// Reads a float.
    pub fn f64(&mut self) -> Option<f64> {
        let key = self.u64()?;
        let bits = if key >> 63 == 1 {
            key ^ (1 << 63)
        } else {
            !key
        };
        Some(f64::from_bits(bits))
    }

    /// Reads a string.
    pub fn string(&mut self) -> Option<String> {
        let (bytes, rest) = read_terminated(self.input)?;
        self.input = rest;
        String::from_utf8(bytes).ok()
    }

    /// True when everything was read.
    pub fn is_empty(&self) -> bool {
        self.input.is_empty()
    }
}

/// Encodes one sort part on its own.
pub fn sort_key<P: SortPart + ?Sized>(part: &P) -> Vec<u8> {
    let mut out = Vec::new();
    part.write_sort(&mut out);
    out
}

impl SortPart for uuid::Uuid {
    fn write_sort(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        match_fixed(sort, *self.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{SortPart, sort_is, sort_key};
    use crate::time::Timestamp;

    /// `match_sort` says what encoding and comparing says, on the encoding
    /// followed by anything, on a cut encoding and on any other bytes.
    fn agrees<P: SortPart + ?Sized>(p: &P, other: &[u8]) {
        let w = sort_key(p);
        let then = [w.as_slice(), other].concat();
        assert_eq!(p.match_sort(&then), Some(w.len()), "{w:?} in {then:?}");
        assert!(sort_is(p, &w));
        assert_eq!(sort_is(p, &then), other.is_empty());
        let expected = other.starts_with(&w).then_some(w.len());
        assert_eq!(p.match_sort(other), expected, "{w:?} in {other:?}");
        if let Some((_, cut)) = w.split_last() {
            assert_eq!(p.match_sort(cut), None);
        }
    }

    proptest! {
        #[test]
        fn every_kind_matches_as_encoded(
            s in "\\PC*|[\\x00\\x01\\xff a]*",
            n in any::<i64>(),
            f in any::<f64>(),
            other in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff), any::<u8>()], 0..12),
        ) {
            agrees(s.as_str(), &other);
            agrees(&s, &other);
            agrees(&n, &other);
            agrees(&(n as u64), &other);
            agrees(&(n as i32), &other);
            agrees(&(n as u16), &other);
            agrees(&(n as i8), &other);
            agrees(&(n % 2 == 0), &other);
            agrees(&f, &other);
            agrees(&uuid::Uuid::from_u64_pair(n as u64, 7), &other);
            if let Ok(t) = Timestamp::from_unix_millis(n % 253_402_300_799_999) {
                agrees(&t, &other);
                agrees(&t.date(), &other);
            }
        }
    }

    #[test]
    fn strings_with_zero_bytes_match_their_escapes() {
        for s in ["", "\0", "a\0", "\0\0b"] {
            for other in [&b""[..], b"\0", b"\0\x01", b"\0\xff\0\x01", b"x"] {
                agrees(s, other);
            }
        }
        assert_eq!("a".match_sort(b"a\0\x02"), None);
        assert_eq!("\0".match_sort(b"\0\x01"), None);
    }
}
