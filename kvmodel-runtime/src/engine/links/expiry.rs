//! Links of records that expire.
//!
//! A record's edges, collections, counts and registry carry no TTL: a
//! store cannot expire a pair's edge at the earlier of two times, nor a far
//! record's entry with the record it names. Instead, while an expired
//! record awaits the sweep (its record gone, its receipt still there):
//!
//! - a listing skips every entry naming it (its record is read with the
//!   listing's page and is absent), and a listing of its own links is
//!   empty (its own record is read with the listing);
//! - `verify` counts its entries, on both sides, as those of an expired
//!   write awaiting the sweep, never as drift.
//!
//! The sweep of the record (the same receipt mechanism that takes back its
//! members and counter amounts) removes, in the one conditional commit that
//! undoes its receipt, the entry of every far record that still stands
//! for it (one from that record's link count), every edge of it, and its
//! own registry, collections and counts: what a delete removes, plus the
//! far entries a delete leaves to listings and `reconcile`. So an edge
//! never outlives either end for any reader, and both ends' counts are
//! exact after the sweep of every expired end.

use std::collections::BTreeSet;

use super::{EdgeValue, End, keep_as_read, read_edge, read_registry, registry_key};
use crate::codec::key::{Derived, DerivedKey, Space};
use crate::error::Result;
use crate::store::batch::Batch;
use crate::store::{RangeRequest, Store};

/// Collection entries read per page.
const PAGE: usize = 256;

/// The receipt key of the record whose link registry is `registry`: the
/// receipt an expired write of it leaves until the sweep. `None` for a key
/// that is not a registry.
pub fn receipt_of_registry(registry: &str) -> Option<String> {
    let registry = DerivedKey::parse(registry).filter(|k| k.kind == Derived::Registry)?;
    Some(registry.beside(Derived::Receipt, ""))
}

/// Adds to `b` what the expiry of the record at `key` (of the entity whose
/// derived keys live in `space`) removes of its links, read now: for every
/// edge in its collections, the far record's entry for it (when that entry
/// stands) with one from the far count, and the edge; then its registry,
/// collections and counts. Conditional on its registry, every edge and
/// every far registry being as read, so a concurrent unlink, listing
/// clean-up or far delete makes the commit fail rather than count twice.
/// A record without a registry adds the condition that it still has none.
pub(crate) async fn expire_links<S: Store>(
    store: &S,
    space: Space<'_>,
    key: &str,
    b: &mut Batch,
) -> Result<()> {
    let own_reg = registry_key(space, key);
    let read = store.get(&own_reg).await?;
    let Some((bytes, reg)) = read_registry(&own_reg, read)? else {
        b.absent(own_reg.as_str());
        return Ok(());
    };
    let mut edges = BTreeSet::new();
    for name in &reg.links {
        let collection = space.of_record(Derived::Link, name, key);
        let mut after = None;
        loop {
            let mut req = RangeRequest::all(PAGE);
            req.after = after.take();
            let range = store.range(&collection, req).await?;
            edges.extend(
                range
                    .members
                    .iter()
                    .map(|m| String::from_utf8_lossy(&m.sort).into_owned()),
            );
            match range.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
    }
    let edges: Vec<String> = edges.into_iter().collect();
    let values = store.get_many(&edges).await?;
    let mut pairs: Vec<(String, Vec<u8>, EdgeValue)> = Vec::new();
    for (edge, value) in edges.into_iter().zip(values) {
        // An entry without a readable edge is its own collection's alone,
        // deleted below; `reconcile` reports an edge that does not decode.
        if let Ok(Some((bytes, v))) = read_edge(&edge, value) {
            pairs.push((edge, bytes, v));
        }
    }
    // The far ends of every edge (not this record's own registry).
    let far: Vec<(usize, End)> = pairs
        .iter()
        .enumerate()
        .flat_map(|(i, (_, _, v))| {
            [End::From, End::To]
                .into_iter()
                .filter(|end| v.keys(*end).1 != own_reg)
                .map(move |end| (i, end))
        })
        .collect();
    let far_keys: Vec<String> = far
        .iter()
        .map(|(i, end)| pairs[*i].2.keys(*end).1.to_owned())
        .collect();
    let far_regs = store.get_many(&far_keys).await?;
    for ((i, end), (far_key, far_bytes)) in far.iter().zip(far_keys.iter().zip(far_regs)) {
        let (edge, _, v) = &pairs[*i];
        keep_as_read(b, far_key, far_bytes.as_ref());
        let far_reg = read_registry(far_key, far_bytes)?;
        if !super::stands(Some(v), far_reg.as_ref().map(|r| &r.1), *end) {
            continue;
        }
        if let Some((collection, count)) = v.entry_keys(*end) {
            super::remove_entry_at(b, &collection, &count, v.keys(end.other()).0, edge);
        }
    }
    for (edge, bytes, _) in &pairs {
        b.equals(edge.as_str(), bytes.clone());
        b.delete(edge.as_str());
    }
    super::delete_links(b, space, key, Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_names_its_records_receipt() {
        let space = Space {
            namespace: "short",
            key_space: "link",
        };
        let record = "short:link:{l1}";
        assert_eq!(
            receipt_of_registry(&registry_key(space, record)).as_deref(),
            Some(space.receipt_key(record).as_str())
        );
        assert_eq!(receipt_of_registry("short:link#rcpt:l1"), None);
    }
}
