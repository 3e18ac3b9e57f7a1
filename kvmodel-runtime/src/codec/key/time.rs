//! Key and sort-key encodings of [`Timestamp`] and [`Date`]: a timestamp
//! is its milliseconds since the epoch, a date its first instant in sort
//! keys and its text in keys. The time types themselves live below the
//! codec, so that errors can name them.

use super::{KeyPart, SortPart};
use crate::time::{Date, Timestamp};

impl KeyPart for Timestamp {
    fn write_key(&self, out: &mut String) {
        self.as_unix_millis().write_key(out);
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        self.as_unix_millis().match_key(key)
    }
}

impl SortPart for Timestamp {
    fn write_sort(&self, out: &mut Vec<u8>) {
        self.as_unix_millis().write_sort(out);
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        self.as_unix_millis().match_sort(sort)
    }
}

impl KeyPart for Date {
    fn write_key(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = write!(out, "{self}");
    }
}

impl SortPart for Date {
    fn write_sort(&self, out: &mut Vec<u8>) {
        self.start().write_sort(out);
    }
    fn match_sort(&self, sort: &[u8]) -> Option<usize> {
        self.start().match_sort(sort)
    }
}
