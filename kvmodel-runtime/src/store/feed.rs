//! Change feeds at the store level: the entries a [`Batch`](super::Batch)
//! appends in its commit, their positions, and a page of them as a reader
//! gets it. The store keeps each feed's entries as opaque bytes, in commit
//! order, for as long as the feed's retention says; the engine
//! (`engine::feed`) gives them their meaning.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};

/// Where an entry sits in its feed: positions grow with every entry
/// appended, so a reader that saved one resumes right after it.
///
/// Written as `HIGH-LOW` (`17-0`, `1764190000000-3`): on Redis it is the
/// Stream entry id; on the embedded stores `HIGH` is the entry's sequence
/// number in the feed and `LOW` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FeedPosition {
    /// The major part.
    pub high: u64,
    /// The minor part.
    pub low: u64,
}

impl FeedPosition {
    /// The position before every entry (`0-0`).
    pub const ZERO: FeedPosition = FeedPosition { high: 0, low: 0 };

    /// A position from its two parts.
    pub const fn new(high: u64, low: u64) -> Self {
        FeedPosition { high, low }
    }
}

impl fmt::Display for FeedPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.high, self.low)
    }
}

impl FromStr for FeedPosition {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::InvalidKey {
            key: s.to_owned(),
            reason: "a feed position is two decimal numbers joined by `-` (`17-0`)".to_owned(),
        };
        let (high, low) = s.split_once('-').ok_or_else(bad)?;
        Ok(FeedPosition {
            high: high.parse().map_err(|_| bad())?,
            low: low.parse().map_err(|_| bad())?,
        })
    }
}

impl serde::Serialize for FeedPosition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for FeedPosition {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One entry a batch appends to a feed when it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedAppend {
    /// The feed's key.
    pub feed: String,
    /// The entry's bytes.
    pub entry: Vec<u8>,
    /// How long the feed keeps entries: older ones are removed as new ones
    /// are appended.
    pub retain: Duration,
}

/// One entry of a feed, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEntry {
    /// Its position.
    pub position: FeedPosition,
    /// When it was appended, in ms since the Unix epoch on the store's clock.
    pub at_ms: u64,
    /// Its bytes.
    pub entry: Vec<u8>,
}

/// A page of a feed ([`Store::feed_read`](super::Store::feed_read)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeedPage {
    /// The entries after the position asked for, oldest first.
    pub entries: Vec<FeedEntry>,
    /// The newest position retention has removed, if any: a reader whose
    /// position is older has missed entries.
    pub trimmed: Option<FeedPosition>,
}

/// Where a consumer group that does not exist yet starts
/// ([`Store::feed_group_read`](super::Store::feed_group_read)); a group
/// that exists goes on where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupStart {
    /// At the oldest entry the feed retains.
    Oldest,
    /// After the newest entry.
    Newest,
    /// Right after a position.
    After(FeedPosition),
}

/// What one read of a consumer of a group takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupRead {
    /// The entries given to this consumer before and not acknowledged,
    /// after a position ([`FeedPosition::ZERO`]: all of them): what it was
    /// handling when it stopped.
    Pending(FeedPosition),
    /// Entries no consumer of the group was given yet, each given to this
    /// one only; waits for one when there are none.
    New,
}

/// One consumer of a consumer group of a feed: the group shares the feed's
/// entries among its consumers, each entry to one of them, until it is
/// acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedConsumer<'a> {
    /// The group's name.
    pub group: &'a str,
    /// This consumer's name within the group: a consumer that restarts
    /// under the same name is given its unacknowledged entries again.
    pub consumer: &'a str,
    /// Where the group starts if it does not exist yet.
    pub start: GroupStart,
}

/// The error of a store that keeps no consumer groups.
pub(crate) fn no_groups(backend: &'static str) -> Error {
    Error::backend(
        backend,
        "read a change feed as a consumer group",
        "this store keeps no consumer groups (a Redis server does): read the feed with \
         `feed().from(…)` and keep the position yourself",
    )
}

/// The error of a store that keeps no change feed.
pub(crate) fn no_feed(backend: &'static str) -> Error {
    Error::backend(
        backend,
        "read or append to a change feed",
        "this store has no change feed: use the memory, redb, Redis or Redis Cluster store for an \
         entity with `feed`, or implement `Store::keeps_feeds` and `Store::feed_read`",
    )
}

/// The error of a write of the record at `key`, whose entity has a feed,
/// on a store that keeps none.
pub(crate) fn no_feed_for(key: &str) -> Error {
    Error::InvalidBatch {
        key: key.to_owned(),
        reason: "the entity has a change feed (`feed:`), but this store has no change feed, \
                 so the write would commit without its event; use the memory, redb, Redis or \
                 Redis Cluster store"
            .to_owned(),
    }
}

/// The wake-up of readers waiting for new entries on an embedded store: the
/// committer calls [`appended`](Self::appended) after every commit that
/// appended something, and a waiting reader wakes without polling.
#[derive(Debug, Default)]
pub(crate) struct FeedSignal {
    notify: tokio::sync::Notify,
}

impl FeedSignal {
    /// Wakes every waiting reader.
    pub(crate) fn appended(&self) {
        self.notify.notify_waiters();
    }

    /// Reads with `read`; when it finds no entry, waits for an append (at
    /// most `wait`) and reads again. Registers for the wake-up before the
    /// first read, so an append between the read and the wait is not missed.
    pub(crate) async fn read_or_wait(
        &self,
        wait: Duration,
        mut read: impl FnMut() -> Result<FeedPage>,
    ) -> Result<FeedPage> {
        let notified = self.notify.notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        let page = read()?;
        if !page.entries.is_empty() || wait.is_zero() {
            return Ok(page);
        }
        // A timeout is not an error: the reader gets an empty page.
        let _ = crate::exec::timeout(wait, notified).await;
        read()
    }
}
