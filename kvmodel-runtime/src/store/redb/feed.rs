//! Change feeds in [`RedbStore`]: table `feed` maps `(feed, sequence)` to
//! the 8-byte big-endian append time followed by the entry; table
//! `feed_meta` maps a feed to the sequence of its newest entry and the
//! newest one retention removed. Both are written in the write transaction
//! of the batch that appends, and created by the first append.

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError, WriteTransaction};

use super::{RedbStore, e};
use crate::error::{Error, Result};
use crate::store::{FeedAppend, FeedEntry, FeedPage, FeedPosition};

const FEED: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("feed");
const FEED_META: TableDefinition<'_, &str, (u64, u64)> = TableDefinition::new("feed_meta");

/// Appends `appends` in `txn` at `now`, each feed dropping what is older
/// than its retention.
pub(super) fn append_all(txn: &WriteTransaction, appends: &[FeedAppend], now: u64) -> Result<()> {
    let mut feed = txn.open_table(FEED).map_err(e("open table feed"))?;
    let mut meta = txn
        .open_table(FEED_META)
        .map_err(e("open table feed_meta"))?;
    for a in appends {
        let name = a.feed.as_str();
        let (mut last, mut trimmed) = meta
            .get(name)
            .map_err(e("read table feed_meta"))?
            .map_or((0, 0), |g| g.value());
        let retain = u64::try_from(a.retain.as_millis()).unwrap_or(u64::MAX);
        let cutoff = now.saturating_sub(retain);
        // Entries are in append order, so the old ones are a prefix.
        let mut old = Vec::new();
        for row in feed
            .range((name, 0)..=(name, u64::MAX))
            .map_err(e("read table feed"))?
        {
            let (k, v) = row.map_err(e("read table feed"))?;
            if at_of(v.value()) >= cutoff {
                break;
            }
            old.push(k.value().1);
        }
        for seq in old {
            feed.remove((name, seq)).map_err(e("write table feed"))?;
            trimmed = seq;
        }
        last += 1;
        let mut cell = Vec::with_capacity(8 + a.entry.len());
        cell.extend_from_slice(&now.to_be_bytes());
        cell.extend_from_slice(&a.entry);
        feed.insert((name, last), cell.as_slice())
            .map_err(e("write table feed"))?;
        meta.insert(name, (last, trimmed))
            .map_err(e("write table feed_meta"))?;
    }
    Ok(())
}

fn at_of(cell: &[u8]) -> u64 {
    cell.split_first_chunk::<8>()
        .map_or(0, |(h, _)| u64::from_be_bytes(*h))
}

impl RedbStore {
    /// At most `limit` entries of `feed` after `after`, in one read
    /// transaction.
    pub(super) fn feed_page(
        &self,
        feed: &str,
        after: Option<FeedPosition>,
        limit: usize,
    ) -> Result<FeedPage> {
        let txn = self
            .db
            .begin_read()
            .map_err(e("begin a read transaction"))?;
        let meta = match txn.open_table(FEED_META) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(FeedPage::default()),
            Err(x) => return Err(e("open table feed_meta")(x)),
        };
        let trimmed = meta
            .get(feed)
            .map_err(e("read table feed_meta"))?
            .map_or(0, |g| g.value().1);
        let table = txn.open_table(FEED).map_err(e("open table feed"))?;
        let from = after.map_or(0, |p| p.high).saturating_add(1);
        let mut entries = Vec::new();
        for row in table
            .range((feed, from)..=(feed, u64::MAX))
            .map_err(e("read table feed"))?
            .take(limit)
        {
            let (k, v) = row.map_err(e("read table feed"))?;
            let cell = v.value();
            let (at, entry) = cell.split_first_chunk::<8>().ok_or_else(|| {
                Error::decode(feed, "the redb feed cell is shorter than its header", None)
            })?;
            entries.push(FeedEntry {
                position: FeedPosition::new(k.value().1, 0),
                at_ms: u64::from_be_bytes(*at),
                entry: entry.to_vec(),
            });
        }
        Ok(FeedPage {
            entries,
            trimmed: (trimmed > 0).then(|| FeedPosition::new(trimmed, 0)),
        })
    }

    /// The position of the newest entry of `feed`.
    pub(super) fn feed_newest(&self, feed: &str) -> Result<Option<FeedPosition>> {
        let txn = self
            .db
            .begin_read()
            .map_err(e("begin a read transaction"))?;
        let meta = match txn.open_table(FEED_META) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(x) => return Err(e("open table feed_meta")(x)),
        };
        Ok(meta
            .get(feed)
            .map_err(e("read table feed_meta"))?
            .map(|g| g.value().0)
            .filter(|last| *last > 0)
            .map(|last| FeedPosition::new(last, 0)))
    }
}
