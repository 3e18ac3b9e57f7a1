//! Reads: a record by key or many in one round trip, existence, a unique
//! lookup, counters, the number of records, and pages of a collection whose
//! members are record keys — the range and its records read together, each
//! record decoded where the store lends it, and each member checked against
//! the record it reaches.
//!
//! Layer: roles: `impl Engine` blocks above the core and the data layer.

use std::borrow::Cow;

use crate::engine::def::{EntityDef, Typed};
use crate::engine::entity::{self, Entity};
use crate::engine::page::{ListRequest, Page, PageRequest};
use crate::engine::records::Records;
use crate::engine::repo::Engine;
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::batch::Batch;
use crate::store::{Member, MemberRef, Store};

impl<E: Entity, S: Store> Engine<E, S> {
    /// Reads the record at `key`, migrating it if it is older.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "get", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| key.to_owned()))))]
    pub async fn get(&self, key: &str) -> Result<Option<E>> {
        self.store()
            .get_with(key, |bytes| {
                bytes
                    .map(|b| entity::decode_at(key, b).map(|(_, e)| e))
                    .transpose()
            })
            .await?
    }

    /// Reads many records in one round trip, in order.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "get_many", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn get_many(&self, keys: Vec<String>) -> Result<Vec<Option<E>>> {
        let values = self.store().get_many(&keys).await?;
        keys.iter()
            .zip(values)
            .map(|(k, v)| {
                v.map(|b| entity::decode_at(k, &b).map(|(_, e)| e))
                    .transpose()
            })
            .collect()
    }

    /// Whether a record is stored at `key` (one read; an expired record is
    /// absent).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "exists", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| key.to_owned()))))]
    pub async fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.store().get(key).await?.is_some())
    }

    /// Looks a record up through the unique claim `claim_key` of index
    /// `index`: the claim and the record it names, read together
    /// ([`Store::get_via`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "find_unique", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn find_unique(&self, index: &str, claim_key: &str) -> Result<Option<E>> {
        let Some((owner, record)) = self.store().get_via(claim_key).await? else {
            return Ok(None);
        };
        let Ok(key) = std::str::from_utf8(&owner) else {
            return Err(Error::decode(
                claim_key,
                "the unique claim does not hold a record key",
                None,
            ));
        };
        let Some(bytes) = record else {
            return Ok(None);
        };
        let value = entity::decode_at::<E>(key, &bytes)?.1;
        // A claim whose record no longer carries the value is stale: ignore it.
        Ok(value.claims(index, claim_key).then_some(value))
    }

    /// The counter at `key`.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "count", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn count(&self, key: &str) -> Result<i64> {
        self.store().counter(key).await
    }

    /// The number of records. On a store that keeps a discovery set (Redis,
    /// Redis Cluster) its size, one cheap read ([`Store::collection_len`]),
    /// which for an entity with a TTL also counts records that expired and
    /// that no sweep or listing has removed yet. On a store that ranges over
    /// its keys (redb, memory) a walk over the record keys, counting live
    /// records only.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "count_all", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn count_all(&self) -> Result<i64> {
        let records = Typed::<E>::new().records(self.store());
        let n = records.count(self.store()).await?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }

    /// A page of every record of the entity (the discovery set, never a scan).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "list_all", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn list_all(&self, page: PageRequest) -> Result<Page<E>> {
        self.list(&E::all_key(), page.into()).await
    }
}

/// What one member of a page reaches.
enum Reached<E> {
    /// The record, which derives this member: listed.
    Listed(E),
    /// No record (or a member that is not a key): the member is stale.
    Gone(Member),
    /// A record that no longer derives this member (its bytes, for the
    /// conditional sweep): the member is stale.
    Moved(Member, Vec<u8>),
    /// A record that cannot be decoded: reported, not listed.
    Unreadable(Member, Error),
}

/// Reads the record `bytes` that `member` of `collection` names: whether it
/// is listed, and if not, why. Only what is not listed is copied out of
/// the store's pages.
fn reach<E: Entity>(
    collection: &str,
    discovery: bool,
    member: MemberRef<'_>,
    bytes: Option<&[u8]>,
) -> Reached<E> {
    let Some(bytes) = bytes else {
        return Reached::Gone(member.to_member());
    };
    // Members are record keys, UTF-8 but for damage.
    let key = match std::str::from_utf8(member.member) {
        Ok(key) => Cow::Borrowed(key),
        Err(_) => String::from_utf8_lossy(member.member),
    };
    match entity::decode_at::<E>(&key, bytes) {
        Ok((version, value)) => {
            // Every record of the entity derives its discovery member.
            let derived = if discovery {
                member.sort.is_empty()
            } else {
                value.derives_member(version, collection, member.sort)
            };
            if derived && matches!(key, Cow::Borrowed(_)) {
                Reached::Listed(value)
            } else {
                Reached::Moved(member.to_member(), bytes.to_vec())
            }
        }
        Err(e) => Reached::Unreadable(member.to_member(), e),
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
        let source = if discovery {
            Typed::<E>::new().records(self.store())
        } else {
            Records::Set(collection.to_owned())
        };
        let (reached, next) = source
            .page_with(self.store(), page.range(collection)?, |member, bytes| {
                reach::<E>(collection, discovery, member, bytes)
            })
            .await?;
        let mut items = Vec::with_capacity(reached.len());
        let mut skipped = Vec::new();
        let mut sweep = Batch::new();
        let key = |m: &Member| String::from_utf8_lossy(&m.member).into_owned();
        for reached in reached {
            match reached {
                Reached::Listed(value) => items.push(value),
                // Gone from a range of record keys: expired, and the
                // expiry sweep removes it.
                Reached::Gone(_) if !source.is_set() => {}
                Reached::Gone(m) => {
                    sweep.absent(key(&m));
                    sweep.remove(collection, m.sort, m.member);
                }
                Reached::Moved(m, bytes) => {
                    sweep.equals(key(&m), bytes);
                    sweep.remove(collection, m.sort, m.member);
                }
                Reached::Unreadable(m, e) => skipped.push(Skipped::new(key(&m), e)),
            }
        }
        if !sweep.is_empty() {
            // Conditional: a record written again meanwhile keeps its entry.
            let _ = self.commit(sweep).await?;
        }
        Ok(Page {
            items,
            next: next.map(|p| page.next_cursor(collection, p)),
            skipped,
        })
    }
}
