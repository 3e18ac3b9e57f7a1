//! Collection entries as backends store them: the sort key, terminated,
//! then the member, so that entry byte order equals `(sort, member)` order;
//! range bounds and pages over them.

use std::ops::Bound;

use super::{Direction, Member, RangeRequest, RangeResult, ScanPage};
use crate::codec::key::{read_terminated, read_terminated_into, write_terminated};
use crate::error::{Error, Result};

/// Encodes a collection entry: the sort key, terminated, then the member. Entry
/// byte order equals `(sort, member)` order.
pub fn encode_entry(sort: &[u8], member: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sort.len() + member.len() + 2);
    write_terminated(&mut out, sort);
    out.extend_from_slice(member);
    out
}

/// Splits an entry into its sort key, unescaped into `sort` (cleared
/// first), and its member, borrowed: no allocation once `sort` has grown
/// to the longest sort key. `None` for bytes that are not an entry.
pub fn split_entry<'a>(entry: &'a [u8], sort: &mut Vec<u8>) -> Option<&'a [u8]> {
    sort.clear();
    read_terminated_into(entry, sort)
}

/// Splits an entry into its sort key and member.
pub fn decode_entry(entry: &[u8]) -> Result<Member> {
    let (sort, member) = read_terminated(entry).ok_or_else(|| Error::InvalidCursor {
        reason: "it does not encode a collection position".to_owned(),
    })?;
    Ok(Member {
        sort,
        member: member.to_vec(),
    })
}

fn with_last(sort: &[u8], last: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(sort.len() + 2);
    write_terminated(&mut out, sort);
    *out.last_mut().expect("terminator written") = last;
    out
}

/// The entry-space bounds `[lower, upper]` of a request: sort bounds mapped to
/// entry bytes, narrowed by the cursor in the scan direction.
pub fn entry_bounds(req: &RangeRequest) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    // Entries with sort key s lie in [T(s) 00 01, T(s) 00 02).
    let lower = match &req.lower {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(s) => Bound::Included(with_last(s, 1)),
        Bound::Excluded(s) => Bound::Included(with_last(s, 2)),
    };
    let upper = match &req.upper {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(s) => Bound::Excluded(with_last(s, 2)),
        Bound::Excluded(s) => Bound::Excluded(with_last(s, 1)),
    };
    match (&req.after, req.direction) {
        (None, _) => (lower, upper),
        (Some(after), Direction::Ascending) => (tighter(lower, after, true), upper),
        (Some(after), Direction::Descending) => (lower, tighter(upper, after, false)),
    }
}

/// The tighter of a bound and "strictly past `after`".
fn tighter(bound: Bound<Vec<u8>>, after: &[u8], is_lower: bool) -> Bound<Vec<u8>> {
    let keep = match &bound {
        Bound::Unbounded => false,
        Bound::Included(b) => {
            if is_lower {
                b.as_slice() > after
            } else {
                b.as_slice() < after
            }
        }
        Bound::Excluded(b) => {
            if is_lower {
                b.as_slice() >= after
            } else {
                b.as_slice() <= after
            }
        }
    };
    if keep {
        bound
    } else {
        Bound::Excluded(after.to_vec())
    }
}

/// True when no value can lie between `lo` and `hi` (inverted or empty
/// bounds): ordered maps panic on such ranges, an empty page is the answer.
pub fn bounds_empty<T: PartialOrd>(lo: &Bound<T>, hi: &Bound<T>) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(u)) => l > u,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => l >= u,
        _ => false,
    }
}

/// Builds a [`RangeResult`] from up to `limit + 1` entries in scan order.
///
/// An entry that does not decode (no sort-key terminator: bytes written into
/// the collection by something other than a store) is left out of
/// `members`, so that a listing never fails or shows a made-up member
/// because of it; `next` still resumes past it.
pub fn page_from_entries(entries: Vec<Vec<u8>>, limit: usize) -> Result<RangeResult> {
    Ok(page_from_entries_with(entries, Vec::<()>::new(), limit).0)
}

/// [`page_from_entries`], keeping `extra` (one item per entry, such as the
/// value each entry's member names; shorter when absent) in step with the
/// members that are kept.
pub(crate) fn page_from_entries_with<T>(
    mut entries: Vec<Vec<u8>>,
    extra: Vec<T>,
    limit: usize,
) -> (RangeResult, Vec<T>) {
    let more = entries.len() > limit;
    entries.truncate(limit);
    let next = if more { entries.last().cloned() } else { None };
    let mut members = Vec::with_capacity(entries.len());
    let mut kept = Vec::with_capacity(extra.len().min(entries.len()));
    let mut extra = extra.into_iter();
    for e in &entries {
        let item = extra.next();
        if let Ok(m) = decode_entry(e) {
            members.push(m);
            kept.extend(item);
        }
    }
    (RangeResult { members, next }, kept)
}

/// A [`ScanPage`] from up to `count + 1` keys in byte order, all past the
/// cursor: at most `count` keys, and the last of them as the next cursor
/// when there were more.
pub(crate) fn scan_page(mut keys: Vec<String>, count: usize) -> ScanPage {
    let more = keys.len() > count;
    keys.truncate(count);
    let next = if more {
        keys.last().map(|k| k.as_bytes().to_vec())
    } else {
        None
    };
    ScanPage { keys, next }
}

/// The page size of a scan asked for `count` keys: at least one.
pub(crate) fn scan_count(count: usize) -> usize {
    count.clamp(1, 10_000)
}

/// The bounds of the keys a [`Store::range_keys_with`](super::Store::range_keys_with)
/// page walks: those that start with `prefix`, past `req.after` in
/// `req.direction`. `None` when no key is left (past the end, or a cursor
/// beyond the prefix).
pub(crate) fn key_bounds(
    prefix: &str,
    req: &RangeRequest,
) -> Result<Option<(Bound<String>, Bound<String>)>> {
    let after = match &req.after {
        Some(a) => Some(
            String::from_utf8(a.clone()).map_err(|_| Error::InvalidCursor {
                reason: "it is not a key of this store".to_owned(),
            })?,
        ),
        None => None,
    };
    let mut lower = Bound::Included(prefix.to_owned());
    let mut upper = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
    match (after, req.direction) {
        (Some(a), Direction::Ascending) if a.as_str() >= prefix => lower = Bound::Excluded(a),
        (Some(a), Direction::Descending) => match &upper {
            Bound::Excluded(end) if a >= *end => {}
            _ => upper = Bound::Excluded(a),
        },
        _ => {}
    }
    let empty = match (&lower, &upper) {
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u)) => l >= u,
        _ => false,
    };
    Ok((!empty).then_some((lower, upper)))
}

/// The least string above every string that starts with `prefix`: the
/// prefix with its last character raised by one (characters that cannot be
/// raised are dropped first); `None` when there is none. UTF-8 byte order
/// is character order, so this bounds the prefix's keys in byte order too.
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let raised = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(c) = raised {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Collects a [`Store::range_keys_with`](super::Store::range_keys_with)
/// page: at most `limit` keys, and the last of them as the position to
/// resume from when another key followed.
pub(crate) struct KeyPage<T> {
    out: Vec<T>,
    limit: usize,
    last: Vec<u8>,
    more: bool,
}

impl<T> KeyPage<T> {
    /// An empty page of at most `limit` keys (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        KeyPage {
            out: Vec::with_capacity(limit.min(1024)),
            limit,
            last: Vec::new(),
            more: false,
        }
    }

    /// Offers the page the next key of the walk that the caller keeps:
    /// `false` when the page was full already (the key starts the next
    /// page), and the walk stops.
    pub(crate) fn offer(&mut self, key: &str, read: impl FnOnce() -> T) -> bool {
        if self.out.len() >= self.limit {
            self.more = true;
            return false;
        }
        self.out.push(read());
        self.last.clear();
        self.last.extend_from_slice(key.as_bytes());
        true
    }

    /// What was read for each key, and where the next page starts.
    pub(crate) fn finish(self) -> (Vec<T>, Option<Vec<u8>>) {
        let next = self.more.then_some(self.last);
        (self.out, next)
    }
}
