//! Reads: heads by `GetItem` and `BatchGetItem`, members by `Query`, keys
//! by `Scan`; every read strongly consistent.

use std::collections::HashMap;
use std::ops::Bound;
use std::time::Duration;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use super::{
    BACKEND, DynamoStore, HEAD, Head, Item, Kind, MEMBER, OnIo, PK, SK, build_error, head_key,
    member_sk, sdk_error, storable,
};
use crate::error::{Error, Result};
use crate::store::{
    Direction, RangeRequest, RangeResult, ScanPage, bounds_empty, entry_bounds, page_from_entries,
    scan_count,
};

/// `BatchGetItem` takes at most this many keys.
const BATCH_GET: usize = 100;

/// Attempts at keys DynamoDB left unprocessed before giving up.
const UNPROCESSED_ATTEMPTS: u32 = 20;

impl DynamoStore {
    /// The head item of `key`, as stored (expired or not).
    /// A key DynamoDB cannot store (empty, or beyond its partition key
    /// limit) holds nothing.
    pub(super) async fn head(&self, key: &str) -> Result<Option<Head>> {
        if !storable(key) {
            return Ok(None);
        }
        let out = self
            .client
            .get_item()
            .table_name(&*self.table)
            .set_key(Some(head_key(key)))
            .consistent_read(true)
            .send()
            .on_io()
            .await
            .map_err(|e| sdk_error(format!("read `{key}`"), e))?;
        out.item().map(|item| Head::parse(key, item)).transpose()
    }

    /// The head items of `keys`, in order, by `BatchGetItem` (duplicates
    /// asked once; unprocessed keys asked again; a key DynamoDB cannot
    /// store holds nothing).
    pub(super) async fn heads(&self, keys: &[String]) -> Result<Vec<Option<Head>>> {
        let mut unique: Vec<&str> = Vec::with_capacity(keys.len());
        let mut seen = std::collections::HashSet::new();
        for k in keys {
            if storable(k) && seen.insert(k.as_str()) {
                unique.push(k);
            }
        }
        let wanted: Vec<Item> = unique.iter().map(|k| head_key(k)).collect();
        let mut found: HashMap<String, Head> = HashMap::new();
        for item in self.batch_get(wanted, "read many keys").await? {
            let key = match item.get(PK) {
                Some(AttributeValue::S(k)) => k.clone(),
                _ => continue,
            };
            let head = Head::parse(&key, &item)?;
            found.insert(key, head);
        }
        Ok(keys
            .iter()
            .map(|k| found.get(k.as_str()).cloned())
            .collect())
    }

    /// The items at `wanted` that exist, by `BatchGetItem` (strongly
    /// consistent), at most [`BATCH_GET`] keys per request, keys DynamoDB
    /// leaves unprocessed asked again with a backoff; `what` names the read
    /// in errors.
    pub(super) async fn batch_get(
        &self,
        wanted: Vec<Item>,
        what: &'static str,
    ) -> Result<Vec<Item>> {
        let mut found = Vec::with_capacity(wanted.len());
        for chunk in wanted.chunks(BATCH_GET) {
            let mut pending = chunk.to_vec();
            let mut attempt = 0;
            while !pending.is_empty() {
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .consistent_read(true)
                    .build()
                    .map_err(build_error)?;
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&*self.table, request)
                    .send()
                    .on_io()
                    .await
                    .map_err(|e| sdk_error(what, e))?;
                found.extend(
                    out.responses()
                        .and_then(|r| r.get(&*self.table))
                        .into_iter()
                        .flatten()
                        .cloned(),
                );
                if let Some(left) = out.unprocessed_keys().and_then(|u| u.get(&*self.table)) {
                    pending = left.keys().to_vec();
                }
                if !pending.is_empty() {
                    attempt += 1;
                    if attempt > UNPROCESSED_ATTEMPTS {
                        return Err(Error::backend(
                            BACKEND,
                            what,
                            format!(
                                "DynamoDB left keys unprocessed {UNPROCESSED_ATTEMPTS} times \
                                 (the table's read capacity is exhausted); try again later"
                            ),
                        ));
                    }
                    backoff(attempt).await;
                }
            }
        }
        Ok(found)
    }

    /// A page of the collection at `key`.
    pub(super) async fn range_now(&self, key: &str, req: &RangeRequest) -> Result<RangeResult> {
        let now = self.clock.now_ms();
        let generation = match self.head(key).await? {
            Some(Head {
                kind: Kind::Collection { generation, .. },
                exp,
                ..
            }) if exp.is_none_or(|at| at > now) => generation,
            _ => return Ok(RangeResult::default()),
        };
        let (lower, upper) = entry_bounds(req);
        if bounds_empty(&lower, &upper) {
            return Ok(RangeResult::default());
        }
        let entries = self
            .entries(key, generation, &lower, &upper, req.direction, req.limit)
            .await?;
        page_from_entries(entries, req.limit)
    }

    /// Up to `limit + 1` entries of generation `generation` of the
    /// collection at `key` within the bounds, in `direction` order (or
    /// every one with `limit` `usize::MAX`).
    pub(super) async fn entries(
        &self,
        key: &str,
        generation: u64,
        lower: &Bound<Vec<u8>>,
        upper: &Bound<Vec<u8>>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let want = limit.saturating_add(1);
        let from = match lower {
            Bound::Unbounded => member_sk(generation, &[]),
            Bound::Included(b) | Bound::Excluded(b) => member_sk(generation, b),
        };
        // Every member sort key of this generation is below the next
        // generation's prefix (generations are below `u64::MAX`).
        let to = match upper {
            Bound::Unbounded => member_sk(generation.saturating_add(1), &[]),
            Bound::Included(b) | Bound::Excluded(b) => member_sk(generation, b),
        };
        let prefix = 1 + 8;
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = u32::try_from(want.saturating_sub(out.len()).clamp(1, 1000)).unwrap_or(1000);
            let resp = self
                .client
                .query()
                .table_name(&*self.table)
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :lo AND :hi")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":pk", AttributeValue::S(key.to_owned()))
                .expression_attribute_values(":lo", AttributeValue::B(Blob::new(from.clone())))
                .expression_attribute_values(":hi", AttributeValue::B(Blob::new(to.clone())))
                .scan_index_forward(direction == Direction::Ascending)
                .consistent_read(true)
                .limit(i32::try_from(page).unwrap_or(1000))
                .set_exclusive_start_key(start.take())
                .send()
                .on_io()
                .await
                .map_err(|e| sdk_error(format!("read the collection `{key}`"), e))?;
            for item in resp.items() {
                let Some(AttributeValue::B(sk)) = item.get(SK) else {
                    continue;
                };
                let sk = sk.as_ref();
                if sk.len() < prefix || sk[0] != MEMBER {
                    continue;
                }
                let entry = &sk[prefix..];
                let inside = match lower {
                    Bound::Excluded(b) => entry > b.as_slice(),
                    Bound::Included(b) => entry >= b.as_slice(),
                    Bound::Unbounded => true,
                } && match upper {
                    Bound::Excluded(b) => entry < b.as_slice(),
                    Bound::Included(b) => entry <= b.as_slice(),
                    Bound::Unbounded => sk[..prefix] == member_sk(generation, &[])[..],
                };
                if inside {
                    out.push(entry.to_vec());
                    if out.len() >= want {
                        return Ok(out);
                    }
                }
            }
            match resp.last_evaluated_key() {
                Some(last) => start = Some(last.clone()),
                None => return Ok(out),
            }
        }
    }

    /// A page of the keys under `prefix` (maintenance): a `Scan` of the
    /// head items.
    pub(super) async fn scan_now(
        &self,
        prefix: &str,
        cursor: Option<Vec<u8>>,
        count: usize,
    ) -> Result<ScanPage> {
        let start = cursor.map(|c| decode_cursor(&c)).transpose()?;
        let count = scan_count(count);
        let resp = self
            .client
            .scan()
            .table_name(&*self.table)
            .filter_expression("#sk = :head AND begins_with(#pk, :prefix)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":head", AttributeValue::B(Blob::new(vec![HEAD])))
            .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_owned()))
            .consistent_read(true)
            .limit(i32::try_from(count).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start)
            .send()
            .on_io()
            .await
            .map_err(|e| sdk_error(format!("list the keys under `{prefix}`"), e))?;
        let now = self.clock.now_ms();
        let mut keys = Vec::new();
        for item in resp.items() {
            let Some(AttributeValue::S(key)) = item.get(PK) else {
                continue;
            };
            if !key.starts_with(prefix) {
                continue;
            }
            let head = Head::parse(key, item)?;
            let holds = match head.kind {
                Kind::Value(_) | Kind::Counter(_) => true,
                Kind::Collection { count, .. } => count > 0,
            };
            // A shard of a discovery set is listed as the set.
            let logical = super::discovery::logical(key);
            if holds && head.live(now) && logical.starts_with(prefix) {
                keys.push(logical.to_owned());
            }
        }
        keys.sort();
        keys.dedup();
        Ok(ScanPage {
            keys,
            next: resp.last_evaluated_key().map(encode_cursor),
        })
    }
}

/// A scan position: the partition key's length (4 bytes), the partition
/// key, the sort key.
fn encode_cursor(last: &Item) -> Vec<u8> {
    let pk = match last.get(PK) {
        Some(AttributeValue::S(s)) => s.as_bytes(),
        _ => &[],
    };
    let sk = match last.get(SK) {
        Some(AttributeValue::B(b)) => b.as_ref(),
        _ => &[],
    };
    let len = u32::try_from(pk.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(4 + pk.len() + sk.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(pk);
    out.extend_from_slice(sk);
    out
}

fn decode_cursor(cursor: &[u8]) -> Result<Item> {
    let bad = || Error::InvalidCursor {
        reason: "it is not a position of a DynamoDB key scan".to_owned(),
    };
    let len = cursor
        .get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_be_bytes)
        .ok_or_else(bad)? as usize;
    let pk = cursor.get(4..4 + len).ok_or_else(bad)?;
    let sk = cursor
        .get(4 + len..)
        .filter(|s| !s.is_empty())
        .ok_or_else(bad)?;
    let pk = std::str::from_utf8(pk).map_err(|_| bad())?;
    Ok(HashMap::from([
        (PK.to_owned(), AttributeValue::S(pk.to_owned())),
        (SK.to_owned(), AttributeValue::B(Blob::new(sk.to_vec()))),
    ]))
}

/// Waits before attempt `attempt` (from 1) after writers raced: jittered,
/// growing to 100 ms.
pub(super) async fn backoff(attempt: u32) {
    let wait = crate::exec::jitter(
        attempt,
        Duration::from_millis(2),
        Duration::from_millis(100),
    );
    crate::exec::sleep(wait).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_bad_ones_are_refused() {
        let item = HashMap::from([
            (PK.to_owned(), AttributeValue::S("a:b".to_owned())),
            (SK.to_owned(), AttributeValue::B(Blob::new(vec![1, 2, 3]))),
        ]);
        assert_eq!(decode_cursor(&encode_cursor(&item)).unwrap(), item);
        assert!(decode_cursor(b"\0\0").is_err());
        assert!(decode_cursor(b"\0\0\0\x09ab").is_err());
    }
}
