//! Change feeds on a Redis server: one Stream per feed, its entries added
//! by the commit script (`lua/commit.lua`) with a field `e` holding the
//! entry. A page is one `XRANGE`; a reader that finds nothing waits with
//! `XREAD BLOCK` on a connection of its own; how far retention has trimmed
//! is the stream's `max-deleted-entry-id` (`XINFO STREAM`, Redis 7), which
//! the commit script sets when it trims.

use std::time::Duration;

use redis::Value;

use crate::error::{Error, Result};
use crate::store::redis::link::Failure;
use crate::store::{FeedEntry, FeedPage, FeedPosition, RedisStore};

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
    let Value::Array(items) = reply else {
        return Err(malformed(reply));
    };
    items
        .iter()
        .map(|item| {
            let Value::Array(parts) = item else {
                return Err(malformed(reply));
            };
            let position: FeedPosition = parts
                .first()
                .and_then(text)
                .ok_or_else(|| malformed(reply))?
                .parse()?;
            let Some(Value::Array(fields)) = parts.get(1) else {
                return Err(malformed(reply));
            };
            let entry = fields
                .chunks(2)
                .find(|f| f.first().and_then(text).as_deref() == Some("e"))
                .and_then(|f| match f.get(1) {
                    Some(Value::BulkString(b)) => Some(b.clone()),
                    _ => None,
                })
                .ok_or_else(|| malformed(reply))?;
            Ok(FeedEntry {
                position,
                at_ms: position.high,
                entry,
            })
        })
        .collect()
}

impl RedisStore {
    /// At most `limit` entries of the stream `feed` after `after`, waiting
    /// up to `wait` when there are none.
    pub(super) async fn feed_page(
        &self,
        feed: &str,
        after: Option<FeedPosition>,
        limit: usize,
        wait: Duration,
    ) -> Result<FeedPage> {
        let start = after.map_or_else(|| "-".to_owned(), |p| format!("({p}"));
        let mut range = redis::cmd("XRANGE");
        range.arg(feed).arg(start).arg("+").arg("COUNT").arg(limit);
        let reply: Value = self.query(&range, CONTEXT).await?;
        let mut found = entries(&reply)?;
        if found.is_empty() && !wait.is_zero() {
            let mut read = redis::cmd("XREAD");
            let from = after.unwrap_or(FeedPosition::ZERO).to_string();
            let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
            read.arg("COUNT").arg(limit).arg("BLOCK").arg(ms);
            read.arg("STREAMS").arg(feed).arg(from);
            let reply: Value = self
                .link
                .send_blocking(&read, wait)
                .await
                .map_err(|f| self.read_failure(f, CONTEXT))?;
            found = match &reply {
                Value::Nil => Vec::new(),
                Value::Array(streams) => match streams.first() {
                    Some(Value::Array(stream)) => {
                        entries(stream.get(1).ok_or_else(|| malformed(&reply))?)?
                    }
                    _ => return Err(malformed(&reply)),
                },
                _ => return Err(malformed(&reply)),
            };
        }
        // Read after the entries: retention that ran meanwhile is seen, so
        // a gap is never missed (a reader may be told it is behind a moment
        // early, never late).
        let trimmed = match after {
            Some(_) => self.feed_trimmed(feed).await?,
            None => None,
        };
        Ok(FeedPage {
            entries: found,
            trimmed,
        })
    }

    /// The newest id retention removed from the stream `feed`.
    async fn feed_trimmed(&self, feed: &str) -> Result<Option<FeedPosition>> {
        let mut info = redis::cmd("XINFO");
        info.arg("STREAM").arg(feed);
        let reply: Value = match self.link.send(&info).await {
            Ok(v) => v,
            // No stream yet: nothing was trimmed.
            Err(Failure::Sent(e)) if e.to_string().contains("no such key") => return Ok(None),
            Err(f) => return Err(self.read_failure(f, CONTEXT)),
        };
        let fields: Vec<(String, &Value)> = match &reply {
            Value::Array(items) => items
                .chunks(2)
                .filter_map(|f| Some((text(f.first()?)?, f.get(1)?)))
                .collect(),
            Value::Map(pairs) => pairs
                .iter()
                .filter_map(|(k, v)| Some((text(k)?, v)))
                .collect(),
            _ => return Err(malformed(&reply)),
        };
        let Some((_, id)) = fields.iter().find(|(k, _)| k == "max-deleted-entry-id") else {
            return Err(Error::backend(
                "redis",
                CONTEXT,
                "the server does not report how far a stream was trimmed \
                 (`max-deleted-entry-id`, Redis 7.0 and later): change feeds need Redis 7",
            ));
        };
        let id: FeedPosition = text(id).ok_or_else(|| malformed(&reply))?.parse()?;
        Ok((id != FeedPosition::ZERO).then_some(id))
    }

    /// The id of the newest entry of the stream `feed`.
    pub(super) async fn feed_newest(&self, feed: &str) -> Result<Option<FeedPosition>> {
        let mut cmd = redis::cmd("XREVRANGE");
        cmd.arg(feed).arg("+").arg("-").arg("COUNT").arg(1);
        let reply: Value = self.query(&cmd, CONTEXT).await?;
        Ok(entries(&reply)?.first().map(|e| e.position))
    }
}
