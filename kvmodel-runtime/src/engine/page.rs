//! Cursor pagination for generated list methods.
//!
//! A [`PageRequest<T>`] asks for one page of a listing ordered by a value of
//! type `T` (the listing's `order_by` type; [`Unordered`] for a listing that
//! declares none). Its bounds take `T` values, so a bound of another type
//! does not compile. A [`Cursor`] remembers which listing returned it and in
//! which direction; passed to any other listing it is refused with
//! [`Error::InvalidCursor`].
//!
//! Layer: data (the lowest layer).

use std::fmt;
use std::ops::Bound;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::store::{Direction, RangeRequest};

/// The tag of a listing: FNV-1a (64 bits) of its collection key. Stable
/// across processes and releases, so cursors outlive the process that made
/// them.
fn listing_tag(listing: &str) -> u64 {
    crate::codec::fnv1a(listing.as_bytes())
}

/// An opaque position in one listing, returned as [`Page::next`] and passed
/// back with [`PageRequest::after`].
///
/// It carries a tag of the listing that returned it (the collection: the
/// same list method with the same arguments), the direction it was read in,
/// and the position. A listing refuses a cursor of another listing with
/// [`Error::InvalidCursor`]; a request without a direction of its own
/// continues in the cursor's direction. It is plain hex text (safe in URLs
/// and JSON): `to_string()` and `parse()` carry it across requests.
///
/// Its `Debug` form is short: the direction, the hex of at most the first 8
/// bytes of the position and, when there are more, its length
/// (`Cursor(asc, 0001ff61…, 40 bytes)`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    listing: u64,
    direction: Direction,
    position: Vec<u8>,
}

/// Bytes before the position in a cursor's text: tag and direction.
const CURSOR_HEADER: usize = 9;

impl Cursor {
    /// A cursor at store position `position` of the listing whose
    /// collection key is `listing`, read in `direction`.
    pub fn new(listing: &str, direction: Direction, position: Vec<u8>) -> Self {
        Cursor {
            listing: listing_tag(listing),
            direction,
            position,
        }
    }

    /// The store position.
    pub fn position(&self) -> &[u8] {
        &self.position
    }

    /// The direction of the listing that returned it.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// Whether it was returned by the listing whose collection key is
    /// `listing`.
    pub fn belongs_to(&self, listing: &str) -> bool {
        self.listing == listing_tag(listing)
    }
}

impl fmt::Debug for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 8;
        let dir = match self.direction {
            Direction::Ascending => "asc",
            Direction::Descending => "desc",
        };
        write!(f, "Cursor({dir}, ")?;
        for b in self.position.iter().take(SHOWN) {
            write!(f, "{b:02x}")?;
        }
        if self.position.len() > SHOWN {
            write!(f, "…, {} bytes", self.position.len())?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = match self.direction {
            Direction::Ascending => 0u8,
            Direction::Descending => 1u8,
        };
        write!(f, "{:016x}{dir:02x}", self.listing)?;
        for b in &self.position {
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
        let bytes = (0..s.len())
            .step_by(2)
            .map(|i| {
                s.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| bad("it is not hex text"))
            })
            .collect::<Result<Vec<u8>>>()?;
        let Some((head, position)) = bytes.split_first_chunk::<CURSOR_HEADER>() else {
            return Err(bad("it is too short to be a kvmodel cursor"));
        };
        let (tag, dir) = head.split_first_chunk::<8>().unwrap_or((&[0; 8], &[]));
        let direction = match dir {
            [0] => Direction::Ascending,
            [1] => Direction::Descending,
            _ => return Err(bad("its direction is neither ascending nor descending")),
        };
        Ok(Cursor {
            listing: u64::from_be_bytes(*tag),
            direction,
            position: position.to_vec(),
        })
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

/// The order of a listing without `order_by` (`list_all`, and indexes or
/// relations that declare none): it has no values, so such a listing takes
/// no bounds, only a limit, a cursor and a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unordered {}

/// A value that bounds a listing ordered by `T`: a `T`, a `&T`, and for
/// `String` orderings a `&str`.
#[diagnostic::on_unimplemented(
    message = "a listing ordered by `{T}` cannot be bounded by a value of type `{Self}`",
    label = "expected a value of type `{T}` here",
    note = "bounds take values of the listing's `order_by` type; `Unordered` means the listing declares no `order_by` and takes no bounds"
)]
pub trait OrderValue<T> {
    /// The `T` this value stands for.
    fn into_order_value(self) -> T;
}

impl<T> OrderValue<T> for T {
    fn into_order_value(self) -> T {
        self
    }
}

impl<T: Clone> OrderValue<T> for &T {
    fn into_order_value(self) -> T {
        self.clone()
    }
}

impl OrderValue<String> for &str {
    fn into_order_value(self) -> String {
        self.to_owned()
    }
}

/// What page of a listing to read: a limit, an optional cursor, a direction
/// and optional bounds on the listing's `order_by` value, of type `T`
/// ([`Unordered`] when the listing declares no `order_by`).
///
/// `T` is usually inferred from the list method the request is passed to.
///
/// ```
/// use kvmodel_runtime::{Direction, PageRequest};
/// let first = PageRequest::<i64>::new(20).descending().start_at(100);
/// assert_eq!(first.limit(), 20);
/// assert_eq!(first.direction(), Direction::Descending);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest<T = Unordered> {
    limit: usize,
    cursor: Option<Cursor>,
    direction: Option<Direction>,
    lower: Bound<T>,
    upper: Bound<T>,
}

/// The largest page a single request may ask for.
pub const MAX_PAGE: usize = 10_000;

impl<T> PageRequest<T> {
    /// The first page of at most `limit` items (capped at 10,000),
    /// ascending unless [`descending`](Self::descending) is called or a
    /// cursor says otherwise.
    pub fn new(limit: usize) -> Self {
        PageRequest {
            limit: limit.min(MAX_PAGE),
            cursor: None,
            direction: None,
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Continues after `cursor` (a [`Page::next`] of the same listing), in
    /// the cursor's direction. The listing refuses a cursor that another
    /// listing returned, or one read in the other direction than
    /// [`descending`](Self::descending) asks for, with
    /// [`Error::InvalidCursor`].
    pub fn after(mut self, cursor: Cursor) -> Self {
        self.cursor = Some(cursor);
        self
    }

    /// Largest `order_by` value first.
    pub fn descending(mut self) -> Self {
        self.direction = Some(Direction::Descending);
        self
    }

    /// Only items whose `order_by` value is `>= v`.
    pub fn start_at(mut self, v: impl OrderValue<T>) -> Self {
        self.lower = Bound::Included(v.into_order_value());
        self
    }

    /// Only items whose `order_by` value is `> v`.
    pub fn start_after(mut self, v: impl OrderValue<T>) -> Self {
        self.lower = Bound::Excluded(v.into_order_value());
        self
    }

    /// Only items whose `order_by` value is `<= v`.
    pub fn end_at(mut self, v: impl OrderValue<T>) -> Self {
        self.upper = Bound::Included(v.into_order_value());
        self
    }

    /// Only items whose `order_by` value is `< v`.
    pub fn end_before(mut self, v: impl OrderValue<T>) -> Self {
        self.upper = Bound::Excluded(v.into_order_value());
        self
    }

    /// The page size.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The scan direction: the one asked for, else the cursor's, else
    /// ascending.
    pub fn direction(&self) -> Direction {
        effective_direction(self.direction, self.cursor.as_ref())
    }

    /// The cursor this request continues after.
    pub fn cursor(&self) -> Option<&Cursor> {
        self.cursor.as_ref()
    }

    /// The request with its bounds turned into sort keys by `sort` (the
    /// listing's `order_by` encoding, bucket included).
    pub fn resolve(self, sort: impl Fn(&T) -> Vec<u8>) -> ListRequest {
        let map = |b: Bound<T>| match b {
            Bound::Included(v) => Bound::Included(sort(&v)),
            Bound::Excluded(v) => Bound::Excluded(sort(&v)),
            Bound::Unbounded => Bound::Unbounded,
        };
        ListRequest {
            limit: self.limit,
            cursor: self.cursor,
            direction: self.direction,
            lower: map(self.lower),
            upper: map(self.upper),
        }
    }
}

fn effective_direction(asked: Option<Direction>, cursor: Option<&Cursor>) -> Direction {
    asked
        .or(cursor.map(|c| c.direction))
        .unwrap_or(Direction::Ascending)
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Ascending => "ascending",
        Direction::Descending => "descending",
    }
}

/// A [`PageRequest`] whose bounds are sort keys: what the engine reads a
/// listing with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    limit: usize,
    cursor: Option<Cursor>,
    direction: Option<Direction>,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
}

impl From<PageRequest<Unordered>> for ListRequest {
    fn from(page: PageRequest<Unordered>) -> ListRequest {
        page.resolve(|v| match *v {})
    }
}

impl ListRequest {
    /// The scan direction: the one asked for, else the cursor's, else
    /// ascending.
    pub fn direction(&self) -> Direction {
        effective_direction(self.direction, self.cursor.as_ref())
    }

    /// The store request for the listing whose collection key is
    /// `listing`; [`Error::InvalidCursor`] when the cursor belongs to
    /// another listing or to the other direction.
    pub fn range(&self, listing: &str) -> Result<RangeRequest> {
        if let Some(c) = &self.cursor {
            if !c.belongs_to(listing) {
                return Err(Error::InvalidCursor {
                    reason: "it was returned by another listing, and a cursor continues only the \
                             listing (the same list method with the same arguments) that returned it"
                        .to_owned(),
                });
            }
            if let Some(asked) = self.direction.filter(|d| *d != c.direction) {
                return Err(Error::InvalidCursor {
                    reason: format!(
                        "it continues a listing in {} order, but the request asks for {} order; \
                         leave the direction out to continue in the cursor's",
                        direction_name(c.direction),
                        direction_name(asked)
                    ),
                });
            }
        }
        Ok(RangeRequest {
            lower: self.lower.clone(),
            upper: self.upper.clone(),
            limit: self.limit,
            direction: self.direction(),
            after: self.cursor.as_ref().map(|c| c.position.clone()),
        })
    }

    /// The cursor of the next page, at store position `position` of the
    /// listing whose collection key is `listing`.
    pub fn next_cursor(&self, listing: &str, position: Vec<u8>) -> Cursor {
        Cursor::new(listing, self.direction(), position)
    }
}

/// One page of a listing.
#[derive(Clone, PartialEq)]
pub struct Page<T> {
    /// The items, in listing order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
    /// Records of this page that could not be read (undecodable bytes, a
    /// newer version), with their keys and errors; the listing went on
    /// without them. Usually empty.
    pub skipped: Vec<crate::engine::skipped::Skipped>,
}

/// `skipped` is shown only when a record was skipped, which is rare.
impl<T: fmt::Debug> fmt::Debug for Page<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Page");
        d.field("items", &self.items).field("next", &self.next);
        if !self.skipped.is_empty() {
            d.field("skipped", &self.skipped);
        }
        d.finish()
    }
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            items: Vec::new(),
            next: None,
            skipped: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_debug_is_short_hex() {
        assert_eq!(
            format!(
                "{:?}",
                Cursor::new("l", Direction::Ascending, vec![0, 1, 0xff, b'a'])
            ),
            "Cursor(asc, 0001ff61)"
        );
        let long = Cursor::new(
            "l",
            Direction::Descending,
            (0..=255).cycle().take(4096).collect(),
        );
        assert_eq!(
            format!("{long:?}"),
            "Cursor(desc, 0001020304050607…, 4096 bytes)"
        );
        let page = Page::<u8> {
            items: vec![],
            next: Some(long),
            skipped: vec![],
        };
        assert!(format!("{page:?}").len() < 80, "{page:?}");
    }

    #[test]
    fn cursor_text_round_trips_and_rejects_garbage() {
        let c = Cursor::new("ns:x#all", Direction::Descending, vec![0, 1, 0xff, b'a']);
        assert_eq!(c.to_string().parse::<Cursor>().unwrap(), c);
        for bad in ["0", "zz", "0g", "é1", "00", "000000000000000002"] {
            assert!(
                matches!(bad.parse::<Cursor>(), Err(Error::InvalidCursor { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_cursor_serves_only_its_listing_and_direction() {
        let c = Cursor::new("a", Direction::Ascending, vec![1]);
        let other = PageRequest::<i64>::new(5)
            .after(c.clone())
            .resolve(|_| vec![]);
        let err = other.range("b").unwrap_err();
        assert!(err.to_string().contains("another listing"), "{err}");
        let flipped = PageRequest::<i64>::new(5).after(c.clone()).descending();
        let err = flipped.resolve(|_| vec![]).range("a").unwrap_err();
        assert!(
            err.to_string().contains("a listing in ascending order"),
            "{err}"
        );
        let d = Cursor::new("a", Direction::Descending, vec![1]);
        let adopted = ListRequest::from(PageRequest::new(5).after(d));
        assert_eq!(adopted.range("a").unwrap().direction, Direction::Descending);
    }

    #[test]
    fn bounds_take_the_order_type() {
        let upper = "t".to_owned();
        let p = PageRequest::<String>::new(3)
            .start_at("m")
            .end_before(&upper);
        assert_eq!(
            upper, "t",
            "a reference bound leaves the value to its owner"
        );
        let r = p.resolve(|s| s.as_bytes().to_vec()).range("x").unwrap();
        assert_eq!(r.lower, Bound::Included(b"m".to_vec()));
        assert_eq!(r.upper, Bound::Excluded(b"t".to_vec()));
    }
}
