//! Change feeds on Redis, a server or a cluster alike: one Stream per
//! feed, its entries added by the commit (feed.lua's `feed_append`, run
//! by `lua/commit.lua` and by the cluster's protocol steps) with a field
//! `e` holding the entry. A page is one `XRANGE`; a reader that finds
//! nothing waits with `XREAD BLOCK` on a connection of its own; how far
//! retention has trimmed is the stream's `max-deleted-entry-id` (`XINFO
//! STREAM`, Redis 7), which the append sets when it trims.
//!
//! The reader is written once, over [`StreamLink`]: how a store sends a
//! command to the node of the stream's key ([`RedisStore`]: its server; a
//! cluster: the node that serves the key's slot).

use std::future::Future;
use std::time::Duration;

use redis::Value;

use crate::error::{Error, Result};
use crate::store::redis::link::Failure;
use crate::store::{
    FeedConsumer, FeedEntry, FeedPage, FeedPosition, GroupRead, GroupStart, RedisStore,
};

/// How the feed reader reaches the node that holds a stream.
pub(crate) trait StreamLink: Sync {
    /// The store's backend name, for errors.
    const BACKEND: &'static str;

    /// Sends `cmd` (its key a stream) and reads its reply.
    fn send_cmd(&self, cmd: &redis::Cmd) -> impl Future<Output = Result<Value, Failure>> + Send;

    /// Sends `cmd`, which blocks on the server up to `wait`, on a
    /// connection of its own, and reads its reply.
    fn send_blocking_cmd(
        &self,
        cmd: &redis::Cmd,
        wait: Duration,
    ) -> impl Future<Output = Result<Value, Failure>> + Send;

    /// The error of a read that failed with `failure`.
    fn failure(&self, failure: Failure, context: &'static str) -> Error;
}

impl StreamLink for RedisStore {
    const BACKEND: &'static str = "redis";

    async fn send_cmd(&self, cmd: &redis::Cmd) -> Result<Value, Failure> {
        self.count_round_trip();
        self.link.send(cmd).await
    }

    async fn send_blocking_cmd(&self, cmd: &redis::Cmd, wait: Duration) -> Result<Value, Failure> {
        self.link.send_blocking(cmd, wait).await
    }

    fn failure(&self, failure: Failure, context: &'static str) -> Error {
        self.read_failure(failure, context)
    }
}

/// Sends `cmd` and reads its reply, a failure as an error.
async fn query<L: StreamLink, T: redis::FromRedisValue>(
    l: &L,
    cmd: &redis::Cmd,
    context: &'static str,
) -> Result<T> {
    let value = l.send_cmd(cmd).await.map_err(|f| l.failure(f, context))?;
    redis::from_redis_value(value).map_err(|e| Error::backend(L::BACKEND, context, e))
}

const CONTEXT: &str = "read a change feed";

/// The text of a bulk or simple string reply.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn malformed(reply: &Value) -> Error {
    Error::backend(
        "redis",
        CONTEXT,
        format!("the server answered with something that is not a stream page: {reply:?}"),
    )
}

/// The entries of an `XRANGE` reply (or of one stream of an `XREAD`).
fn entries(reply: &Value) -> Result<Vec<FeedEntry>> {
    let (found, deleted) = entries_and_deleted(reply)?;
    if !deleted.is_empty() {
        return Err(malformed(reply));
    }
    Ok(found)
}

/// The entries of a stream reply, and the positions of those it lists
/// without fields: the entries given to a consumer that retention removed
/// since (`XREADGROUP` of pending entries).
fn entries_and_deleted(reply: &Value) -> Result<(Vec<FeedEntry>, Vec<FeedPosition>)> {
    let Value::Array(items) = reply else {
        return Err(malformed(reply));
    };
    let mut found = Vec::with_capacity(items.len());
    let mut deleted = Vec::new();
    for item in items {
        let Value::Array(parts) = item else {
            return Err(malformed(reply));
        };
        let position: FeedPosition = parts
            .first()
            .and_then(text)
            .ok_or_else(|| malformed(reply))?
            .parse()?;
        let fields = match parts.get(1) {
            Some(Value::Array(fields)) => fields,
            Some(Value::Nil) => {
                deleted.push(position);
                continue;
            }
            _ => return Err(malformed(reply)),
        };
        let entry = fields
            .chunks(2)
            .find(|f| f.first().and_then(text).as_deref() == Some("e"))
            .and_then(|f| match f.get(1) {
                Some(Value::BulkString(b)) => Some(b.clone()),
                _ => None,
            })
            .ok_or_else(|| malformed(reply))?;
        found.push(FeedEntry {
            position,
            at_ms: position.high,
            entry,
        });
    }
    Ok((found, deleted))
}

/// The entries of the one stream of an `XREAD` or `XREADGROUP` reply (`Nil`:
/// none).
fn stream_entries(reply: &Value) -> Result<(Vec<FeedEntry>, Vec<FeedPosition>)> {
    match reply {
        Value::Nil => Ok((Vec::new(), Vec::new())),
        Value::Array(streams) => match streams.first() {
            Some(Value::Array(stream)) => {
                entries_and_deleted(stream.get(1).ok_or_else(|| malformed(reply))?)
            }
            _ => Err(malformed(reply)),
        },
        _ => Err(malformed(reply)),
    }
}

/// The field-value pairs of a reply that is a flat array or a map.
fn fields(reply: &Value) -> Result<Vec<(String, &Value)>> {
    match reply {
        Value::Array(items) => Ok(items
            .chunks(2)
            .filter_map(|f| Some((text(f.first()?)?, f.get(1)?)))
            .collect()),
        Value::Map(pairs) => Ok(pairs
            .iter()
            .filter_map(|(k, v)| Some((text(k)?, v)))
            .collect()),
        _ => Err(malformed(reply)),
    }
}

fn behind(feed: &str, position: FeedPosition, trimmed: FeedPosition) -> Error {
    Error::FeedBehind {
        feed: feed.to_owned(),
        position: position.to_string(),
        trimmed: trimmed.to_string(),
    }
}

/// At most `limit` entries of the stream `feed` after `after`, waiting
/// up to `wait` when there are none.
pub(crate) async fn feed_page<L: StreamLink>(
    l: &L,
    feed: &str,
    after: Option<FeedPosition>,
    limit: usize,
    wait: Duration,
) -> Result<FeedPage> {
    let start = after.map_or_else(|| "-".to_owned(), |p| format!("({p}"));
    let mut range = redis::cmd("XRANGE");
    range.arg(feed).arg(start).arg("+").arg("COUNT").arg(limit);
    let reply: Value = query(l, &range, CONTEXT).await?;
    let mut found = entries(&reply)?;
    if found.is_empty() && !wait.is_zero() {
        let mut read = redis::cmd("XREAD");
        let from = after.unwrap_or(FeedPosition::ZERO).to_string();
        let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
        read.arg("COUNT").arg(limit).arg("BLOCK").arg(ms);
        read.arg("STREAMS").arg(feed).arg(from);
        let reply: Value = l
            .send_blocking_cmd(&read, wait)
            .await
            .map_err(|f| l.failure(f, CONTEXT))?;
        let (read, deleted) = stream_entries(&reply)?;
        if !deleted.is_empty() {
            return Err(malformed(&reply));
        }
        found = read;
    }
    // Read after the entries: retention that ran meanwhile is seen, so
    // a gap is never missed (a reader may be told it is behind a moment
    // early, never late).
    let trimmed = match after {
        Some(_) => feed_trimmed(l, feed).await?,
        None => None,
    };
    Ok(FeedPage {
        entries: found,
        trimmed,
    })
}

/// The newest id retention removed from the stream `feed`.
async fn feed_trimmed<L: StreamLink>(l: &L, feed: &str) -> Result<Option<FeedPosition>> {
    let mut info = redis::cmd("XINFO");
    info.arg("STREAM").arg(feed);
    let reply: Value = match l.send_cmd(&info).await {
        Ok(v) => v,
        // No stream yet: nothing was trimmed.
        Err(Failure::Sent(e)) if e.to_string().contains("no such key") => return Ok(None),
        Err(f) => return Err(l.failure(f, CONTEXT)),
    };
    let fields = fields(&reply)?;
    let Some((_, id)) = fields.iter().find(|(k, _)| k == "max-deleted-entry-id") else {
        return Err(Error::backend(
            L::BACKEND,
            CONTEXT,
            "the server does not report how far a stream was trimmed \
             (`max-deleted-entry-id`, Redis 7.0 and later): change feeds need Redis 7",
        ));
    };
    let id: FeedPosition = text(id).ok_or_else(|| malformed(&reply))?.parse()?;
    Ok((id != FeedPosition::ZERO).then_some(id))
}

/// The id of the newest entry of the stream `feed`.
pub(crate) async fn feed_newest<L: StreamLink>(l: &L, feed: &str) -> Result<Option<FeedPosition>> {
    let mut cmd = redis::cmd("XREVRANGE");
    cmd.arg(feed).arg("+").arg("-").arg("COUNT").arg(1);
    let reply: Value = query(l, &cmd, CONTEXT).await?;
    Ok(entries(&reply)?.first().map(|e| e.position))
}

/// [`Store::feed_group_read`](crate::Store::feed_group_read) on a
/// Stream: `XREADGROUP`, the group made with `XGROUP CREATE … MKSTREAM`
/// on the first read of pending entries.
pub(crate) async fn feed_group_page<L: StreamLink>(
    l: &L,
    feed: &str,
    c: FeedConsumer<'_>,
    read: GroupRead,
    limit: usize,
    wait: Duration,
) -> Result<Vec<FeedEntry>> {
    let mut cmd = redis::cmd("XREADGROUP");
    cmd.arg("GROUP").arg(c.group).arg(c.consumer);
    cmd.arg("COUNT").arg(limit);
    match read {
        GroupRead::Pending(after) => {
            if after == FeedPosition::ZERO {
                feed_group_create(l, feed, &c).await?;
            }
            cmd.arg("STREAMS").arg(feed).arg(after.to_string());
            let reply: Value = query(l, &cmd, CONTEXT).await?;
            let (found, deleted) = stream_entries(&reply)?;
            if let Some(gone) = deleted.first() {
                // Given to this consumer, never acknowledged, and removed
                // by retention since: the consumer missed it.
                return Err(behind(feed, after, *gone));
            }
            Ok(found)
        }
        GroupRead::New => {
            let delivered = feed_group_delivered(l, feed, c.group).await?;
            let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
            cmd.arg("BLOCK").arg(ms).arg("STREAMS").arg(feed).arg(">");
            let reply: Value = l
                .send_blocking_cmd(&cmd, wait)
                .await
                .map_err(|f| l.failure(f, CONTEXT))?;
            let (found, _) = stream_entries(&reply)?;
            // Read after the entries, as for a plain reader: entries
            // retention removed before the group was given them are a
            // gap, reported (a moment early, never late).
            if let Some(trimmed) = feed_trimmed(l, feed).await?
                && trimmed > delivered
            {
                return Err(behind(feed, delivered, trimmed));
            }
            Ok(found)
        }
    }
}

/// Creates the group `c.group` of the stream `feed` at `c.start` unless
/// it exists (a group that exists goes on where it stands).
async fn feed_group_create<L: StreamLink>(l: &L, feed: &str, c: &FeedConsumer<'_>) -> Result<()> {
    let start = match c.start {
        // The oldest retained: after what retention removed.
        GroupStart::Oldest => feed_trimmed(l, feed)
            .await?
            .unwrap_or(FeedPosition::ZERO)
            .to_string(),
        GroupStart::Newest => "$".to_owned(),
        GroupStart::After(p) => p.to_string(),
    };
    let mut cmd = redis::cmd("XGROUP");
    cmd.arg("CREATE")
        .arg(feed)
        .arg(c.group)
        .arg(start)
        .arg("MKSTREAM");
    match l.send_cmd(&cmd).await {
        Ok(_) => Ok(()),
        Err(Failure::Sent(e)) if e.to_string().contains("BUSYGROUP") => Ok(()),
        Err(f) => Err(l.failure(f, CONTEXT)),
    }
}

/// The last position the group `group` of the stream `feed` was given.
async fn feed_group_delivered<L: StreamLink>(
    l: &L,
    feed: &str,
    group: &str,
) -> Result<FeedPosition> {
    let mut cmd = redis::cmd("XINFO");
    cmd.arg("GROUPS").arg(feed);
    let reply: Value = query(l, &cmd, CONTEXT).await?;
    let Value::Array(groups) = &reply else {
        return Err(malformed(&reply));
    };
    for g in groups {
        let fields = fields(g)?;
        let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        if field("name").and_then(text).as_deref() == Some(group) {
            return field("last-delivered-id")
                .and_then(text)
                .ok_or_else(|| malformed(&reply))?
                .parse();
        }
    }
    Err(Error::backend(
        L::BACKEND,
        CONTEXT,
        format!(
            "the consumer group `{group}` of `{feed}` is gone (destroyed while a consumer \
             read it): start the consumer again to create it"
        ),
    ))
}

/// `XACK`: the group's entries at `positions` are handled.
pub(crate) async fn feed_acknowledge<L: StreamLink>(
    l: &L,
    feed: &str,
    group: &str,
    positions: &[FeedPosition],
) -> Result<u64> {
    if positions.is_empty() {
        return Ok(0);
    }
    let mut cmd = redis::cmd("XACK");
    cmd.arg(feed).arg(group);
    for p in positions {
        cmd.arg(p.to_string());
    }
    query(l, &cmd, "acknowledge change-feed entries").await
}
