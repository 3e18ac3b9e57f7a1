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
//! ```
//! use kvmodel_runtime::key::KeyBuilder;
//! let key = KeyBuilder::new("shop").lit("user").part("1:orders").finish();
//! assert_eq!(key, "shop:user:1%3Aorders");
//! ```

use std::fmt::Write as _;

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

macro_rules! int_key_part {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn write_key(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
int_key_part!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Builds a key segment by segment.
///
/// Literal segments come from the schema (validated there); parts come from
/// user data and are escaped.
#[derive(Debug, Clone)]
pub struct KeyBuilder {
    buf: String,
}

impl KeyBuilder {
    /// Starts a key in `namespace`.
    pub fn new(namespace: &str) -> Self {
        let mut buf = String::with_capacity(48);
        buf.push_str(namespace);
        KeyBuilder { buf }
    }

    /// Starts a derived key (`{ns}:{entity}#{kind}`): the `#` marks it, and `#`
    /// is escaped in every user component, so no record key can reach it.
    pub fn derived(namespace: &str, entity: &str, kind: &str) -> Self {
        let mut b = KeyBuilder::new(namespace);
        b.buf.push(':');
        b.buf.push_str(entity);
        b.buf.push('#');
        b.buf.push_str(kind);
        b
    }

    /// Appends a literal segment from the schema.
    pub fn lit(mut self, segment: &str) -> Self {
        self.buf.push(':');
        self.buf.push_str(segment);
        self
    }

    /// Appends an escaped component.
    pub fn part<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        self.buf.push(':');
        part.write_key(&mut self.buf);
        self
    }

    /// Appends a Redis Cluster hash tag segment `{…}` holding the escaped part.
    pub fn tag<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        self.buf.push_str(":{");
        part.write_key(&mut self.buf);
        self.buf.push('}');
        self
    }

    /// The finished key.
    pub fn finish(self) -> String {
        self.buf
    }
}

/// The unescaped components after `…#{kind}:{name}:` of a derived key built
/// with [`KeyBuilder::derived`]`(…, kind).lit(name)`: the inverse of that
/// layout, for messages.
pub fn derived_parts(key: &str, kind: &str, name: &str) -> Option<Vec<String>> {
    let marker = format!("#{kind}:{name}:");
    let rest = &key[key.find(&marker)? + marker.len()..];
    Some(
        rest.split(':')
            .map(|p| unescape(p).unwrap_or_else(|_| p.to_owned()))
            .collect(),
    )
}

thread_local! {
    static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Checks whether a key equals `target` while it is built, segment by
/// segment, without allocating: the same calls as [`KeyBuilder`], ending in
/// a `bool`.
///
/// ```
/// use kvmodel_runtime::key::{KeyBuilder, KeyMatch};
/// let key = KeyBuilder::new("shop").lit("user").part("1:orders").finish();
/// assert!(KeyMatch::new(&key, "shop").lit("user").part("1:orders").finish());
/// assert!(!KeyMatch::new(&key, "shop").lit("user").part("1").finish());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct KeyMatch<'a> {
    target: &'a str,
    pos: usize,
    ok: bool,
}

impl<'a> KeyMatch<'a> {
    /// Starts matching a key in `namespace`.
    pub fn new(target: &'a str, namespace: &str) -> Self {
        KeyMatch {
            target,
            pos: 0,
            ok: true,
        }
        .eat(namespace)
    }

    /// Starts matching a derived key (see [`KeyBuilder::derived`]).
    pub fn derived(target: &'a str, namespace: &str, entity: &str, kind: &str) -> Self {
        KeyMatch::new(target, namespace)
            .eat(":")
            .eat(entity)
            .eat("#")
            .eat(kind)
    }

    fn eat(mut self, s: &str) -> Self {
        if self.ok {
            match self.target.get(self.pos..) {
                Some(rest) if rest.starts_with(s) => self.pos += s.len(),
                _ => self.ok = false,
            }
        }
        self
    }

    fn eat_part<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        if !self.ok {
            return self;
        }
        SCRATCH.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.clear();
            part.write_key(&mut buf);
            self.eat(&buf)
        })
    }

    /// A literal segment.
    pub fn lit(self, segment: &str) -> Self {
        self.eat(":").eat(segment)
    }

    /// An escaped component.
    pub fn part<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        self.eat(":").eat_part(part)
    }

    /// A hash-tag segment.
    pub fn tag<P: KeyPart + ?Sized>(self, part: &P) -> Self {
        self.eat(":{").eat_part(part).eat("}")
    }

    /// True when the whole target matched.
    pub fn finish(self) -> bool {
        self.ok && self.pos == self.target.len()
    }
}

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
}

impl<T: SortPart + ?Sized> SortPart for &T {
    fn write_sort(&self, out: &mut Vec<u8>) {
        (**self).write_sort(out);
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

/// Reads what [`write_terminated`] wrote; returns the bytes and the rest.
pub fn read_terminated(input: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if b == 0 {
            match input.get(i + 1)? {
                0xff => out.push(0),
                1 => return Some((out, &input[i + 2..])),
                _ => return None,
            }
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    None
}

impl SortPart for str {
    fn write_sort(&self, out: &mut Vec<u8>) {
        write_terminated(out, self.as_bytes());
    }
}

impl SortPart for String {
    fn write_sort(&self, out: &mut Vec<u8>) {
        write_terminated(out, self.as_bytes());
    }
}

impl SortPart for bool {
    fn write_sort(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

macro_rules! uint_sort_part {
    ($($t:ty),*) => {$(
        impl SortPart for $t {
            fn write_sort(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
        }
    )*};
}
uint_sort_part!(u8, u16, u32, u64);

macro_rules! int_sort_part {
    ($($t:ty => $u:ty),*) => {$(
        impl SortPart for $t {
            fn write_sort(&self, out: &mut Vec<u8>) {
                // Flipping the sign bit maps MIN..=MAX onto 0..=MAX unsigned.
                let flipped = (*self as $u) ^ (1 << (<$u>::BITS - 1));
                out.extend_from_slice(&flipped.to_be_bytes());
            }
        }
    )*};
}
int_sort_part!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

impl SortPart for f64 {
    fn write_sort(&self, out: &mut Vec<u8>) {
        // IEEE 754 total order: negative numbers have every bit flipped,
        // positive numbers only the sign bit.
        let bits = self.to_bits();
        let key = if bits >> 63 == 1 {
            !bits
        } else {
            bits ^ (1 << 63)
        };
        out.extend_from_slice(&key.to_be_bytes());
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

impl KeyPart for uuid::Uuid {
    fn write_key(&self, out: &mut String) {
        let mut buf = uuid::Uuid::encode_buffer();
        out.push_str(self.hyphenated().encode_lower(&mut buf));
    }
}

impl SortPart for uuid::Uuid {
    fn write_sort(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}
