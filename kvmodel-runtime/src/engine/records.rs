//! Every record of an entity, as one listing: the discovery set on a store
//! that cannot range over its keys in order (Redis, Redis Cluster), the
//! range of the record keys on one that can (redb, memory:
//! [`Store::orders_keys`]), where writes keep no discovery set.
//!
//! `list_all`, `count_all`, `verify`, `reconcile`, `migrate` and the
//! operations CLI walk an entity's records through this one type.
//!
//! Layer: data (the lowest layer).

use crate::codec::key::{RecordKeys, Space};
use crate::error::Result;
use crate::store::{MemberRef, RangeRequest, Store};

/// Where the records of one entity are listed on one store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Records {
    /// The discovery set at this key: members are record keys.
    Set(String),
    /// The range of the record keys.
    Keys(RecordKeys),
}

impl Records {
    /// The records of the entity with derived keys in `space` and record
    /// keys `keys` on `store`.
    pub fn on<S: Store>(store: &S, space: Space<'_>, keys: impl FnOnce() -> RecordKeys) -> Self {
        if store.orders_keys() {
            Records::Keys(keys())
        } else {
            Records::Set(space.all_key())
        }
    }

    /// The name cursors of this listing are bound to: the discovery set's
    /// key on every store, so that a cursor of another listing is refused.
    pub fn cursor_name(&self, space: Space<'_>) -> String {
        match self {
            Records::Set(key) => key.clone(),
            Records::Keys(_) => space.all_key(),
        }
    }

    /// Whether this is the discovery set, which a listing repairs by
    /// removing members whose record is gone.
    pub fn is_set(&self) -> bool {
        matches!(self, Records::Set(_))
    }

    /// A page of the records, each record key handed to `read` as a member
    /// (sort key empty) with the record's value (`None`: gone or expired).
    /// Returns what `read` returned, in order, and where the next page
    /// starts.
    pub async fn page_with<S, T, F>(
        &self,
        store: &S,
        req: RangeRequest,
        mut read: F,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)>
    where
        S: Store,
        T: Send,
        F: FnMut(MemberRef<'_>, Option<&[u8]>) -> T + Send,
    {
        match self {
            Records::Set(key) => store.range_values_with(key, req, read).await,
            Records::Keys(keys) => {
                let keep = |k: &str| keys.matches(k);
                store
                    .range_keys_with(keys.prefix(), keep, req, |k, value| {
                        let member = MemberRef {
                            sort: &[],
                            member: k.as_bytes(),
                        };
                        read(member, value)
                    })
                    .await
            }
        }
    }

    /// The record keys of one page of at most `limit` after `after`, and
    /// where the next page starts (`None` after the last).
    pub async fn keys<S: Store>(
        &self,
        store: &S,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<Vec<u8>>)> {
        let mut req = RangeRequest::all(limit.max(1));
        req.after = after;
        match self {
            Records::Set(key) => {
                let range = store.range(key, req).await?;
                let keys = range
                    .members
                    .iter()
                    .map(|m| String::from_utf8_lossy(&m.member).into_owned())
                    .collect();
                Ok((keys, range.next))
            }
            Records::Keys(_) => {
                self.page_with(store, req, |m, _| {
                    String::from_utf8_lossy(m.member).into_owned()
                })
                .await
            }
        }
    }

    /// How many records there are: the size of the discovery set (one
    /// read), or a walk over the record keys. A record that expired and
    /// that no sweep has removed yet counts on a discovery set.
    pub async fn count<S: Store>(&self, store: &S) -> Result<u64> {
        match self {
            Records::Set(key) => store.collection_len(key).await,
            Records::Keys(_) => {
                let (mut n, mut after) = (0u64, None);
                loop {
                    let mut req = RangeRequest::all(4096);
                    req.after = after;
                    let (seen, next) = self.page_with(store, req, |_, v| v.is_some()).await?;
                    n += seen.iter().filter(|live| **live).count() as u64;
                    match next {
                        Some(next) => after = Some(next),
                        None => return Ok(n),
                    }
                }
            }
        }
    }

    /// Whether the entity has no record (on a discovery set: no member).
    pub async fn is_empty<S: Store>(&self, store: &S) -> Result<bool> {
        let (keys, _) = self.keys(store, None, 1).await?;
        Ok(keys.is_empty())
    }
}
