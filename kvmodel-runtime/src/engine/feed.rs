//! Typed change feeds: the event every write of a record of an entity with
//! `feed:` appends in its own commit (`append_event`, called by the one
//! `transition`), and the reader that replays and follows them
//! ([`Feed`], [`FeedStream`]).
//!
//! An event holds the record's key and its stored images before and after
//! the write, as the commit's condition and write carry them: a commit that
//! is refused appends nothing, an applied one always has its event.
//!
//! Layer: write parts: above the core, below
//! `transition` and the sweep, which append events
//! through it.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::codec::key::Space;
use crate::engine::entity::{self, Entity, FeedMeta};
use crate::engine::repo::Engine;
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Condition, Op};
use crate::store::{FeedConsumer, FeedPage, FeedPosition, GroupRead, GroupStart, Store};

/// The format byte every event starts with.
const FORMAT: u8 = 1;

/// What a commit did to one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Created = 1,
    Updated = 2,
    Deleted = 3,
    Expired = 4,
}

/// The image of the record at `owner` that `b` writes: `Some(None)` when it
/// deletes it, `None` when it does not write it.
pub(crate) fn written<'b>(b: &'b Batch, owner: &str) -> Option<Option<&'b [u8]>> {
    b.ops().iter().rev().find_map(|op| match op {
        Op::Put { key, value, .. } if key == owner => Some(Some(value.as_slice())),
        Op::Delete { key } if key == owner => Some(None),
        _ => None,
    })
}

/// Appends to `b` the event of the write of the record at `owner` whose
/// condition and write `b` already holds: the image the condition requires
/// (`Equals`) is the one before, the value put the one after. A store that
/// keeps no feed refuses the write instead of committing it without its
/// event.
pub(crate) fn append_event(
    space: Space<'_>,
    feed: FeedMeta,
    feeds: bool,
    b: &mut Batch,
    owner: &str,
) -> Result<()> {
    if !feeds {
        return Err(crate::store::feed::no_feed_for(owner));
    }
    let before = b.conditions().iter().find_map(|c| match c {
        Condition::Equals(k, v) if k == owner => Some(v.as_slice()),
        _ => None,
    });
    let after = written(b, owner).flatten();
    let kind = match (before, after) {
        (None, Some(_)) => Kind::Created,
        (Some(_), Some(_)) => Kind::Updated,
        (Some(_), None) => Kind::Deleted,
        (None, None) => return Ok(()),
    };
    let entry = event_entry(kind, owner, before, after);
    push(space, feed, b, entry);
    Ok(())
}

/// Appends to `b` (the expiry sweep's commit of the record at `owner`) its
/// `Expired` event, carrying `image`, the record as its last write stored
/// it (kept in its expiry receipt). A store that keeps no feed refuses it.
pub(crate) fn append_expired(
    space: Space<'_>,
    feed: FeedMeta,
    feeds: bool,
    b: &mut Batch,
    owner: &str,
    image: &[u8],
) -> Result<()> {
    if !feeds {
        return Err(crate::store::feed::no_feed_for(owner));
    }
    let entry = event_entry(Kind::Expired, owner, Some(image), None);
    push(space, feed, b, entry);
    Ok(())
}

/// The bytes of an event, its commit id left zero ([`push`] stamps it).
fn event_entry(kind: Kind, owner: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Vec<u8> {
    let mut entry = vec![FORMAT, kind as u8, 0, 0, 0, 0, 0, 0, 0, 0];
    put_bytes(&mut entry, Some(owner.as_bytes()));
    put_bytes(&mut entry, before);
    put_bytes(&mut entry, after);
    entry
}

/// Stamps `entry` with `b`'s commit id and appends it to the feed.
fn push(space: Space<'_>, feed: FeedMeta, b: &mut Batch, mut entry: Vec<u8>) {
    let commit = b.commit_id();
    entry[2..10].copy_from_slice(&commit.to_be_bytes());
    b.append(space.feed_key(), entry, feed.retain);
}

/// Moves the feed entries of `from` (one write staged in a transaction)
/// into `into` (the transaction's one commit), stamped with `into`'s commit
/// id: the changes of one transaction share their commit, as those of one
/// write do.
pub(crate) fn carry(from: &mut Batch, into: &mut Batch) {
    let appends = from.take_appends();
    if appends.is_empty() {
        return;
    }
    let commit = into.commit_id().to_be_bytes();
    for mut a in appends {
        if let Some(id) = a.entry.get_mut(2..10) {
            id.copy_from_slice(&commit);
        }
        into.append(a.feed, a.entry, a.retain);
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            // An image is never near 4 GiB: records have a size limit.
            out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_be_bytes());
            out.extend_from_slice(b);
        }
    }
}

/// Reads the parts of an event back, in order.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(head)
    }

    fn bytes(&mut self) -> Option<Option<&'a [u8]>> {
        match self.take(1)?[0] {
            0 => Some(None),
            1 => {
                let len = u32::from_be_bytes(self.take(4)?.try_into().ok()?);
                Some(Some(self.take(usize::try_from(len).ok()?)?))
            }
            _ => None,
        }
    }
}

/// What one commit did to one record of `E`.
///
/// Later versions may add kinds of change, so a `match` on it needs a
/// wildcard arm; [`record`](Event::record) reads the record of any kind.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event<E> {
    /// The record was created.
    Created(E),
    /// The record was replaced.
    Updated {
        /// The record before the write.
        before: E,
        /// The record after it.
        after: E,
    },
    /// The record was deleted.
    Deleted(E),
    /// The record expired (its expiry field's time or its entity's `ttl`
    /// passed), as its last write stored it. The event comes from the
    /// expiry sweep's commit that takes back its derived entries, so it
    /// is appended when the sweep runs, not at the instant of expiry.
    Expired(E),
}

impl<E> Event<E> {
    /// The record as the change left it, or as it was before a delete or
    /// an expiry.
    pub fn record(&self) -> &E {
        match self {
            Event::Created(r) | Event::Deleted(r) | Event::Expired(r) => r,
            Event::Updated { after, .. } => after,
        }
    }
}

/// One change of a record of `E`, read from its entity's feed.
#[derive(Debug, Clone, PartialEq)]
pub struct Change<E> {
    /// Where the change sits in the feed: a consumer saves it and resumes
    /// with [`Position::After`].
    pub position: FeedPosition,
    /// The commit it belongs to: the changes of one commit share it.
    pub commit: u64,
    /// When it was committed, in ms since the Unix epoch (the store's clock).
    pub at_ms: u64,
    /// The record's key.
    pub key: String,
    /// What happened.
    pub event: Event<E>,
}

/// One feed entry as stored, before its images are decoded: what a reader
/// without the entity's type (the CLI's `kvmodel tail`) reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    /// `created`, `updated`, `deleted` or `expired`.
    pub kind: &'static str,
    /// The commit it belongs to.
    pub commit: u64,
    /// The record's key.
    pub key: String,
    /// The stored image before the write (none for `created`; for
    /// `expired`, the record as its last write stored it).
    pub before: Option<Vec<u8>>,
    /// The stored image after it (none for `deleted`).
    pub after: Option<Vec<u8>>,
}

impl RawEvent {
    /// Reads the entry at `position` of `feed`.
    pub fn decode(feed: &str, position: FeedPosition, bytes: &[u8]) -> Result<RawEvent> {
        let bad = |what: &str| {
            Error::decode(
                feed,
                format!("the feed entry at `{position}` is not a kvmodel event: {what}"),
                None,
            )
        };
        let mut r = Reader { rest: bytes };
        if r.take(1) != Some(&[FORMAT][..]) {
            return Err(bad("unknown format"));
        }
        let kind = r.take(1).ok_or_else(|| bad("truncated"))?[0];
        let commit = r
            .take(8)
            .and_then(|c| c.try_into().ok())
            .map(u64::from_be_bytes)
            .ok_or_else(|| bad("truncated"))?;
        let key = r
            .bytes()
            .flatten()
            .and_then(|k| std::str::from_utf8(k).ok())
            .ok_or_else(|| bad("no key"))?
            .to_owned();
        let before = r.bytes().ok_or_else(|| bad("truncated"))?;
        let after = r.bytes().ok_or_else(|| bad("truncated"))?;
        let kind = match (kind, before.is_some(), after.is_some()) {
            (k, false, true) if k == Kind::Created as u8 => "created",
            (k, true, true) if k == Kind::Updated as u8 => "updated",
            (k, true, false) if k == Kind::Deleted as u8 => "deleted",
            (k, true, false) if k == Kind::Expired as u8 => "expired",
            _ => return Err(bad("unknown kind")),
        };
        Ok(RawEvent {
            kind,
            commit,
            key,
            before: before.map(<[u8]>::to_vec),
            after: after.map(<[u8]>::to_vec),
        })
    }
}

impl<E: Entity> Change<E> {
    /// Decodes one feed entry of `feed`.
    fn decode(feed: &str, position: FeedPosition, at_ms: u64, bytes: &[u8]) -> Result<Self> {
        let raw = RawEvent::decode(feed, position, bytes)?;
        let key = raw.key;
        let read = |image: Option<Vec<u8>>| match image {
            Some(bytes) => entity::decode_at::<E>(&key, &bytes).map(|(_, e)| e),
            None => Err(Error::decode(feed, "a feed entry lacks an image", None)),
        };
        let event = match raw.kind {
            "created" => Event::Created(read(raw.after)?),
            "updated" => Event::Updated {
                before: read(raw.before)?,
                after: read(raw.after)?,
            },
            "expired" => Event::Expired(read(raw.before)?),
            _ => Event::Deleted(read(raw.before)?),
        };
        Ok(Change {
            position,
            commit: raw.commit,
            at_ms,
            key,
            event,
        })
    }
}

/// Where a feed reader starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// At the oldest event the feed retains.
    Start,
    /// After the newest event: only changes committed from now on.
    Now,
    /// Right after a position a consumer saved ([`Change::position`]).
    After(FeedPosition),
}

/// How many events one read of the feed fetches, and the most a reader
/// holds before its consumer takes them.
pub const DEFAULT_BUFFER: usize = 256;

/// How long one read waits for new events before it reads again.
const WAIT: Duration = Duration::from_secs(5);

/// A filter of [`Feed::matching`].
type Predicate<E> = Arc<dyn Fn(&E) -> bool + Send + Sync>;

/// What a reader hands out: the changes of some records, and those whose
/// record matches every predicate before or after the change.
struct Filter<E> {
    keys: Vec<String>,
    predicates: Vec<Predicate<E>>,
}

impl<E> Clone for Filter<E> {
    fn clone(&self) -> Self {
        Filter {
            keys: self.keys.clone(),
            predicates: self.predicates.clone(),
        }
    }
}

impl<E> Filter<E> {
    fn passes(&self, change: &Change<E>) -> bool {
        if !self.keys.is_empty() && !self.keys.contains(&change.key) {
            return false;
        }
        let matches = |image: &E| self.predicates.iter().all(|p| p(image));
        match &change.event {
            Event::Created(r) | Event::Deleted(r) | Event::Expired(r) => matches(r),
            Event::Updated { before, after } => matches(before) || matches(after),
        }
    }
}

/// The change feed of `E` on a store: [`from`](Feed::from) starts a reader.
#[derive(Clone)]
pub struct Feed<E, S> {
    store: S,
    buffer: usize,
    filter: Filter<E>,
    /// A consumer group's name and this consumer's.
    group: Option<(String, String)>,
}

impl<E, S: std::fmt::Debug> std::fmt::Debug for Feed<E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("store", &self.store)
            .field("buffer", &self.buffer)
            .field("only", &self.filter.keys)
            .field("matching", &self.filter.predicates.len())
            .field("group", &self.group)
            .finish()
    }
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// The change feed of `E` (declared with `feed: { retain: … }`).
    pub fn feed(&self) -> Feed<E, S> {
        Feed {
            store: self.store().clone(),
            buffer: DEFAULT_BUFFER,
            filter: Filter {
                keys: Vec::new(),
                predicates: Vec::new(),
            },
            group: None,
        }
    }
}

impl<E: Entity, S: Store> Feed<E, S> {
    /// Fetches at most `n` events per read (at least 1), and holds no more.
    pub fn buffer(mut self, n: usize) -> Self {
        self.buffer = n.max(1);
        self
    }

    /// Only the changes of the record at `key` (a record key, as
    /// `XKeys::record` builds it); call again for more records. The
    /// reader still reads the whole feed: the filter saves the consumer's
    /// work, not the store's.
    pub fn only(mut self, key: impl Into<String>) -> Self {
        self.filter.keys.push(key.into());
        self
    }

    /// Only the changes whose record matches `predicate` before or after
    /// the change, so a record that enters the set (an update to a
    /// matching value) and one that leaves it are both seen; call again to
    /// narrow further (a record must match every predicate). Filters by an
    /// index value read naturally:
    ///
    /// ```ignore
    /// let red = members.feed().matching(|m: &Member| m.team == "red");
    /// ```
    ///
    /// Like [`only`](Self::only), it saves the consumer's work, not the
    /// store's: the reader still reads and decodes the whole feed.
    pub fn matching(mut self, predicate: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        self.filter.predicates.push(Arc::new(predicate));
        self
    }

    /// Reads as `consumer` of the consumer group `group` (on a Redis
    /// server): the group shares the feed among its consumers, each change
    /// given to one of them, and keeps where it stands, so
    /// [`from`](Self::from)'s position only says where a group that does
    /// not exist yet starts. A change stays pending for its consumer until
    /// [`FeedStream::ack`]: a consumer that restarts under the same name is
    /// given its unacknowledged changes first (at least once). Changes a
    /// filter skips are acknowledged by the reader. A reader dropped while
    /// the server holds its blocking read may still be given the next
    /// change: it stays pending for that consumer, like any change a
    /// consumer did not acknowledge. A store without consumer groups fails
    /// the first read.
    pub fn group(mut self, group: impl Into<String>, consumer: impl Into<String>) -> Self {
        self.group = Some((group.into(), consumer.into()));
        self
    }

    /// A stream of the changes from `position`: first those the feed
    /// retains, then each new one as it is committed, for as long as the
    /// stream is polled. Each record's changes come in its commit order.
    /// Delivery is at least once: a consumer that saves the position of
    /// what it handled and resumes after it sees nothing twice, but one
    /// that crashes before saving sees it again. A reader whose position
    /// retention has removed gets [`Error::FeedBehind`] and the stream
    /// ends; an entity without a feed fails at once.
    pub fn from(self, position: Position) -> FeedStream<E, S> {
        let (after, resolved) = match position {
            Position::Start => (None, true),
            Position::Now => (None, false),
            Position::After(p) => (Some(p), true),
        };
        let group = self.group.map(|(name, consumer)| GroupReader {
            name,
            consumer,
            start: match position {
                Position::Start => GroupStart::Oldest,
                Position::Now => GroupStart::Newest,
                Position::After(p) => GroupStart::After(p),
            },
            pending: Some(FeedPosition::ZERO),
            skipped: Vec::new(),
        });
        FeedStream {
            store: self.store,
            key: E::space().feed_key(),
            limit: self.buffer,
            filter: self.filter,
            resolved: resolved || group.is_some(),
            group,
            after,
            ready: VecDeque::new(),
            pending: None,
            done: E::FEED.is_none(),
            declared: E::FEED.is_some(),
        }
    }
}

/// A reader's place in a consumer group.
struct GroupReader {
    name: String,
    consumer: String,
    start: GroupStart,
    /// While replaying its own unacknowledged entries: after which one
    /// (`None`: they are done, new entries now).
    pending: Option<FeedPosition>,
    /// Entries a filter skipped, acknowledged before the next read.
    skipped: Vec<FeedPosition>,
}

impl GroupReader {
    /// The next read: its unacknowledged entries, then new ones (after
    /// acknowledging what the filter skipped).
    fn read<S: Store>(&mut self, store: S, key: String, limit: usize) -> ReadFuture {
        let (name, consumer, start) = (self.name.clone(), self.consumer.clone(), self.start);
        let read = self.pending.map_or(GroupRead::New, GroupRead::Pending);
        let skipped = std::mem::take(&mut self.skipped);
        Box::pin(async move {
            store.feed_ack(&key, &name, &skipped).await?;
            let consumer = FeedConsumer {
                group: &name,
                consumer: &consumer,
                start,
            };
            let entries = store
                .feed_group_read(&key, consumer, read, limit, WAIT)
                .await?;
            Ok((
                None,
                FeedPage {
                    entries,
                    trimmed: None,
                },
            ))
        })
    }
}

type ReadFuture = Pin<Box<dyn Future<Output = Read> + Send>>;

/// What one read of the feed found: where the reader stands, and a page.
type Read = Result<(Option<FeedPosition>, FeedPage)>;

/// The changes of a feed, as a [`Stream`](futures_core::Stream)
/// ([`Feed::from`]).
pub struct FeedStream<E, S> {
    store: S,
    key: String,
    limit: usize,
    filter: Filter<E>,
    /// Set when reading as a consumer of a group.
    group: Option<GroupReader>,
    /// The position of the last change handed out (`None`: before all).
    after: Option<FeedPosition>,
    /// Whether `after` is known (`Position::Now` reads it first).
    resolved: bool,
    ready: VecDeque<Change<E>>,
    pending: Option<ReadFuture>,
    done: bool,
    declared: bool,
}

impl<E, S> std::fmt::Debug for FeedStream<E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedStream")
            .field("feed", &self.key)
            .field("after", &self.after)
            .finish_non_exhaustive()
    }
}

impl<E, S> Unpin for FeedStream<E, S> {}

impl<E: Entity, S: Store> FeedStream<E, S> {
    /// The position of the last change handed out, where a consumer that
    /// stops now resumes ([`Position::After`]); `None` before the first.
    pub fn position(&self) -> Option<FeedPosition> {
        self.after
    }

    /// Acknowledges `change` for the consumer group this stream reads as
    /// ([`Feed::group`]): it is not given again, to this consumer or any
    /// other. Fails for a reader that is not in a group.
    pub async fn ack(&self, change: &Change<E>) -> Result<()> {
        let Some(group) = &self.group else {
            return Err(Error::InvalidBatch {
                key: self.key.clone(),
                reason: "only a reader of a consumer group acknowledges changes \
                         (`feed().group(name, consumer)`)"
                    .to_owned(),
            });
        };
        self.store
            .feed_ack(&self.key, &group.name, &[change.position])
            .await?;
        Ok(())
    }

    /// The next change: what [`Stream::poll_next`](futures_core::Stream)
    /// gives, for a caller without a stream library. Waits while there is
    /// none; `None` once the stream has ended (after an error).
    pub async fn next(&mut self) -> Option<Result<Change<E>>> {
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut *self), cx)).await
    }

    /// Takes a page in: the error when retention passed the reader,
    /// otherwise its changes, decoded.
    fn take(&mut self, after: Option<FeedPosition>, page: FeedPage) -> Result<()> {
        if let Some(group) = &mut self.group {
            // A consumer's own entries are read after the last one, until
            // there are none; a group reader's position is its last change.
            if group.pending.is_some() {
                group.pending = page.entries.last().map(|e| e.position);
            }
            for e in page.entries {
                let change = Change::decode(&self.key, e.position, e.at_ms, &e.entry)?;
                if self.filter.passes(&change) {
                    self.ready.push_back(change);
                } else {
                    group.skipped.push(e.position);
                }
            }
            return Ok(());
        }
        self.resolved = true;
        self.after = after;
        if let (Some(trimmed), Some(at)) = (page.trimmed, after)
            && at < trimmed
        {
            return Err(Error::FeedBehind {
                feed: self.key.clone(),
                position: at.to_string(),
                trimmed: trimmed.to_string(),
            });
        }
        for e in page.entries {
            let change = Change::decode(&self.key, e.position, e.at_ms, &e.entry)?;
            if self.filter.passes(&change) {
                self.ready.push_back(change);
            } else {
                // Skipped, but read: a resumed reader starts after it.
                self.after = Some(e.position);
            }
        }
        Ok(())
    }
}

impl<E: Entity, S: Store> futures_core::Stream for FeedStream<E, S> {
    type Item = Result<Change<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(change) = this.ready.pop_front() {
                this.after = Some(change.position);
                return Poll::Ready(Some(Ok(change)));
            }
            if this.done {
                if !this.declared {
                    this.declared = true;
                    return Poll::Ready(Some(Err(Error::InvalidBatch {
                        key: this.key.clone(),
                        reason: format!(
                            "{} keeps no change feed; declare one with `feed: {{ retain: 7d }}` \
                             (`#[kv(feed(retain = \"7d\"))]`)",
                            E::META.name
                        ),
                    })));
                }
                return Poll::Ready(None);
            }
            let pending = this.pending.get_or_insert_with(|| {
                if let Some(group) = &mut this.group {
                    return group.read(this.store.clone(), this.key.clone(), this.limit);
                }
                let store = this.store.clone();
                let key = this.key.clone();
                let (mut after, resolved, limit) = (this.after, this.resolved, this.limit);
                Box::pin(async move {
                    if !resolved {
                        after = store.feed_last(&key).await?;
                    }
                    let page = store.feed_read(&key, after, limit, WAIT).await?;
                    Ok((after, page))
                })
            });
            let read = match pending.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(read) => read,
            };
            this.pending = None;
            if let Err(e) = read.and_then(|(after, page)| this.take(after, page)) {
                this.done = true;
                this.ready.clear();
                return Poll::Ready(Some(Err(e)));
            }
        }
    }
}
