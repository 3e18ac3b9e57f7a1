//! Cursor pagination for generated list methods.

use std::fmt;
use std::ops::Bound;
use std::str::FromStr;

use crate::codec::key::SortPart;
use crate::error::{Error, Result};
use crate::store::{Direction, RangeRequest};

/// An opaque position in a listing, returned as [`Page::next`] and passed back
/// with [`PageRequest::after`]. It is plain text (safe in URLs and JSON):
/// `to_string()` and `parse()` carry it across requests.
///
/// Its `Debug` form is short: the hex of at most its first 8 bytes and, when
/// there are more, its length (`Cursor(0001ff61…, 40 bytes)`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Cursor(Vec<u8>);

impl Cursor {
    /// Wraps a store position.
    pub fn from_position(position: Vec<u8>) -> Self {
        Cursor(position)
    }

    /// The store position.
    pub fn position(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 8;
        f.write_str("Cursor(")?;
        for b in self.0.iter().take(SHOWN) {
            write!(f, "{b:02x}")?;
        }
        if self.0.len() > SHOWN {
            write!(f, "…, {} bytes", self.0.len())?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for Cursor {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = |reason: &str| Error::InvalidCursor {
            reason: reason.to_owned(),
        };
        if !s.len().is_multiple_of(2) {
            return Err(bad("it has an odd number of hex digits"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| {
                s.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| bad("it is not hex text"))
            })
            .collect::<Result<Vec<u8>>>()
            .map(Cursor)
    }
}

impl serde::Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Cursor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What page of a listing to read: a limit, an optional cursor, a direction
/// and optional bounds on the listing's `order_by` value.
///
/// ```
/// use kvmodel_runtime::PageRequest;
/// let first = PageRequest::new(20).descending().start_at(&100i64);
/// assert_eq!(first.limit(), 20);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    limit: usize,
    cursor: Option<Cursor>,
    direction: Direction,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
}

/// The largest page a single request may ask for.
pub const MAX_PAGE: usize = 10_000;

impl PageRequest {
    /// The first page of at most `limit` items (capped at [`MAX_PAGE`]), ascending.
    pub fn new(limit: usize) -> Self {
        PageRequest {
            limit: limit.min(MAX_PAGE),
            cursor: None,
            direction: Direction::Ascending,
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Continues after `cursor` (from [`Page::next`]).
    pub fn after(mut self, cursor: Cursor) -> Self {
        self.cursor = Some(cursor);
        self
    }

    /// Largest `order_by` value first.
    pub fn descending(mut self) -> Self {
        self.direction = Direction::Descending;
        self
    }

    /// Only items whose `order_by` value is `>= v`.
    pub fn start_at<V: SortPart + ?Sized>(mut self, v: &V) -> Self {
        self.lower = Bound::Included(crate::codec::key::sort_key(v));
        self
    }

    /// Only items whose `order_by` value is `> v`.
    pub fn start_after<V: SortPart + ?Sized>(mut self, v: &V) -> Self {
        self.lower = Bound::Excluded(crate::codec::key::sort_key(v));
        self
    }

    /// Only items whose `order_by` value is `<= v`.
    pub fn end_at<V: SortPart + ?Sized>(mut self, v: &V) -> Self {
        self.upper = Bound::Included(crate::codec::key::sort_key(v));
        self
    }

    /// Only items whose `order_by` value is `< v`.
    pub fn end_before<V: SortPart + ?Sized>(mut self, v: &V) -> Self {
        self.upper = Bound::Excluded(crate::codec::key::sort_key(v));
        self
    }

    /// The page size.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The scan direction.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The store request this page maps to.
    pub fn to_range(&self) -> RangeRequest {
        RangeRequest {
            lower: self.lower.clone(),
            upper: self.upper.clone(),
            limit: self.limit,
            direction: self.direction,
            after: self.cursor.as_ref().map(|c| c.0.clone()),
        }
    }
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items, in listing order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            items: Vec::new(),
            next: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_debug_is_short_hex() {
        assert_eq!(
            format!("{:?}", Cursor::from_position(vec![0, 1, 0xff, b'a'])),
            "Cursor(0001ff61)"
        );
        let long = Cursor::from_position((0..=255).cycle().take(4096).collect());
        assert_eq!(format!("{long:?}"), "Cursor(0001020304050607…, 4096 bytes)");
        let page = Page::<u8> {
            items: vec![],
            next: Some(long),
        };
        assert!(format!("{page:?}").len() < 80, "{page:?}");
    }

    #[test]
    fn cursor_text_round_trips_and_rejects_garbage() {
        let c = Cursor::from_position(vec![0, 1, 0xff, b'a']);
        assert_eq!(c.to_string().parse::<Cursor>().unwrap(), c);
        for bad in ["0", "zz", "0g", "é1"] {
            assert!(
                matches!(bad.parse::<Cursor>(), Err(Error::InvalidCursor { .. })),
                "{bad}"
            );
        }
    }
}
