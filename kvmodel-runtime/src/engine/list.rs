//! Pages of a sorted collection whose members are record keys: the range
//! and its records read together, each record decoded where the store lends
//! it, and each member checked against the record it reaches.

use std::borrow::Cow;

use crate::engine::entity::{self, Entity};
use crate::engine::page::{ListRequest, Page};
use crate::engine::repo::Engine;
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::batch::Batch;
use crate::store::{Member, Store};

/// What one member of a page reaches.
enum Reached<E> {
    /// The record, which derives this member: listed.
    Listed(E),
    /// No record (or a member that is not a key): the member is stale.
    Gone,
    /// A record that no longer derives this member (its bytes, for the
    /// conditional sweep): the member is stale.
    Moved(Vec<u8>),
    /// A record that cannot be decoded: reported, not listed.
    Unreadable(Error),
}

/// Reads the record `bytes` that `member` of `collection` names: whether it
/// is listed, and if not, why.
fn reach<E: Entity>(
    collection: &str,
    discovery: bool,
    member: &Member,
    bytes: Option<&[u8]>,
) -> Reached<E> {
    let Some(bytes) = bytes else {
        return Reached::Gone;
    };
    // Members are record keys, UTF-8 but for damage.
    let key = match std::str::from_utf8(&member.member) {
        Ok(key) => Cow::Borrowed(key),
        Err(_) => String::from_utf8_lossy(&member.member),
    };
    match entity::decode_at::<E>(&key, bytes) {
        Ok((version, value)) => {
            // Every record of the entity derives its discovery member.
            let derived = if discovery {
                member.sort.is_empty()
            } else {
                value.derives_member(version, collection, &member.sort)
            };
            if derived && matches!(key, Cow::Borrowed(_)) {
                Reached::Listed(value)
            } else {
                Reached::Moved(bytes.to_vec())
            }
        }
        Err(e) => Reached::Unreadable(e),
    }
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// A page of the sorted collection at `collection`: members are record
    /// keys, read with the page ([`Store::range_values_with`]), each record
    /// decoded from the bytes the store lends. Each member is checked against the
    /// record it reaches: a record that is gone, or that (at its stored
    /// version) no longer derives this collection and sort key, is not
    /// listed, and its member is removed (conditionally: a record written
    /// again meanwhile keeps its entry). A record that cannot be decoded is
    /// reported in [`Page::skipped`] and the listing goes on. A cursor of
    /// another listing is refused.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "list", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn list(&self, collection: &str, page: ListRequest) -> Result<Page<E>> {
        let discovery = collection == E::all_key();
        let (range, reached) = self
            .store()
            .range_values_with(collection, page.range(collection)?, |member, bytes| {
                reach::<E>(collection, discovery, member, bytes)
            })
            .await?;
        let mut items = Vec::with_capacity(reached.len());
        let mut skipped = Vec::new();
        let mut sweep = Batch::new();
        for (member, reached) in range.members.iter().zip(reached) {
            let key = || String::from_utf8_lossy(&member.member).into_owned();
            match reached {
                Reached::Listed(value) => items.push(value),
                Reached::Gone => {
                    sweep.absent(key());
                    sweep.remove(collection, member.sort.clone(), member.member.clone());
                }
                Reached::Moved(bytes) => {
                    sweep.equals(key(), bytes);
                    sweep.remove(collection, member.sort.clone(), member.member.clone());
                }
                Reached::Unreadable(e) => skipped.push(Skipped::new(key(), e)),
            }
        }
        if !sweep.is_empty() {
            // Conditional: a record written again meanwhile keeps its entry.
            let _ = self.commit(sweep).await?;
        }
        Ok(Page {
            items,
            next: range.next.map(|p| page.next_cursor(collection, p)),
            skipped,
        })
    }
}
