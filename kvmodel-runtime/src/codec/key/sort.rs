//! Order-preserving sort keys: byte order equals value order.

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

impl SortPart for uuid::Uuid {
    fn write_sort(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}
