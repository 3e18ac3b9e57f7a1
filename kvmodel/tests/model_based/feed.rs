//! The entity with a change feed in the model: its steps, and the checks
//! of its records and of its feed against the model (every applied write's
//! event, in commit order, sharing their commit as the writes did; nothing
//! of a refused write; on a store that keeps no feed, every write refused).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kvmodel::Store;
use kvmodel::feed::{Event, FeedPosition, Position};
use kvmodel_runtime::__private::Entity;
use proptest::prelude::*;
use proptest::sample::select;

use super::entities::*;
use super::steps::{Outcome, Repos, Step, done, outcome};

/// A change `modify` makes to an entry.
#[derive(Debug, Clone)]
pub enum EntryChange {
    Tag(&'static str),
    Add(i64),
}

impl EntryChange {
    pub fn apply(&self, entry: &mut Entry) {
        match self {
            EntryChange::Tag(t) => entry.tag = (*t).to_owned(),
            EntryChange::Add(d) => entry.n += d,
        }
    }
}

pub fn entry() -> impl Strategy<Value = Entry> {
    (select(IDS), select(TAGS), -9i64..10).prop_map(|(id, tag, n)| Entry {
        id: id.into(),
        tag: tag.into(),
        n,
    })
}

pub fn entry_change() -> impl Strategy<Value = EntryChange> {
    prop_oneof![
        select(TAGS).prop_map(EntryChange::Tag),
        (-9i64..10).prop_map(EntryChange::Add),
    ]
}

/// Two entries with distinct ids and distinct tags.
pub fn entry_pair() -> impl Strategy<Value = (Entry, Entry)> {
    (
        proptest::sample::subsequence(IDS, 2),
        proptest::sample::subsequence(TAGS, 2),
        entry(),
        entry(),
    )
        .prop_map(|(ids, tags, mut a, mut b)| {
            (a.id, a.tag) = (ids[0].to_owned(), tags[0].to_owned());
            (b.id, b.tag) = (ids[1].to_owned(), tags[1].to_owned());
            (a, b)
        })
}

/// Runs a step on entries: what it returned, and what the model expects.
/// A write the model applies logs its event; where the store keeps no
/// feed, a write that would commit is refused instead.
pub async fn run<S: Store>(r: &Repos<S>, m: &mut Model, step: &Step) -> (Outcome, Outcome) {
    let feeds = m.feeds;
    m.commit();
    let repo = &r.entries;
    match step {
        Step::CreateEntry(v) => {
            let want = if m.entries.contains_key(&v.id) {
                Outcome::AlreadyExists
            } else if m.tag_holder(&v.tag, &v.id).is_some() {
                Outcome::Unique
            } else if !feeds {
                Outcome::NoFeed
            } else {
                m.write_entry(&v.id, Some(v.clone()));
                Outcome::Done
            };
            (outcome(repo.create(v).await, done), want)
        }
        Step::UpsertEntry(v) => {
            let want = if m.tag_holder(&v.tag, &v.id).is_some() {
                Outcome::Unique
            } else if !feeds {
                Outcome::NoFeed
            } else {
                let created = !m.entries.contains_key(&v.id);
                m.write_entry(&v.id, Some(v.clone()));
                Outcome::Flag(created)
            };
            (outcome(repo.upsert(v).await, Some), want)
        }
        Step::ModifyEntry(id, c) => {
            let want = match m.entries.get(*id).cloned() {
                None => Outcome::NotFound,
                Some(mut v) => {
                    c.apply(&mut v);
                    if m.tag_holder(&v.tag, id).is_some() {
                        Outcome::Unique
                    } else {
                        m.write_entry(id, Some(v));
                        Outcome::Done
                    }
                }
            };
            (outcome(repo.modify(id, |v| c.apply(v)).await, done), want)
        }
        Step::DeleteEntry(id) => {
            let want = Outcome::Flag(m.entries.contains_key(*id));
            m.write_entry(id, None);
            (outcome(repo.delete(id).await, Some), want)
        }
        Step::TxCreateEntries(a, b) => {
            let refused = [a, b].into_iter().find_map(|v| {
                if m.entries.contains_key(&v.id) {
                    Some(Outcome::AlreadyExists)
                } else if m.tag_holder(&v.tag, &v.id).is_some() {
                    Some(Outcome::Unique)
                } else {
                    None
                }
            });
            let want = match refused {
                Some(o) => o,
                None if !feeds => Outcome::NoFeed,
                None => {
                    m.write_entry(&a.id, Some(a.clone()));
                    m.write_entry(&b.id, Some(b.clone()));
                    Outcome::Done
                }
            };
            let got = kvmodel::transaction(repo.store(), |tx| async move {
                repo.in_tx(&tx).create(a).await?;
                repo.in_tx(&tx).create(b).await?;
                Ok(())
            })
            .await;
            (outcome(got, done), want)
        }
        other => unreachable!("not a step on entries: {other:?}"),
    }
}

/// Each entry and each tag lookup, as the model has them.
pub async fn check_entries<S: Store>(r: &Repos<S>, m: &Model) {
    for id in IDS {
        assert_eq!(
            r.entries.get(id).await.unwrap().as_ref(),
            m.entries.get(*id),
            "entry {id}"
        );
    }
    for tag in TAGS {
        assert_eq!(
            r.entries.find_by_tag(tag).await.unwrap().as_ref(),
            m.tag_holder(tag, ""),
            "tag {tag}"
        );
    }
}

/// Where the feed stands as a sequence starts (the events of earlier
/// sequences lie before it); `None` for an empty feed or a store without.
pub async fn start<S: Store>(store: &S) -> Option<FeedPosition> {
    if !store.keeps_feeds() {
        return None;
    }
    store.feed_last(&Entry::space().feed_key()).await.unwrap()
}

/// The feed after a sequence holds exactly the model's events from `from`
/// on: each the image before and after of an applied write, in the order
/// the model applied them, the events of one commit sharing a commit id
/// and those of different commits not; nothing else. A store that keeps no
/// feed says so to the reader.
pub async fn check_feed<S: Store>(r: &Repos<S>, m: &Model, from: Option<FeedPosition>) {
    let mut stream = r
        .entries
        .feed()
        .buffer(3)
        .from(from.map_or(Position::Start, Position::After));
    if !m.feeds {
        assert!(m.events.is_empty());
        let err = stream.next().await.expect("an error").unwrap_err();
        assert!(err.to_string().contains("no change feed"), "{err}");
        return;
    }
    let mut commits: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, want) in m.events.iter().enumerate() {
        let change = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap_or_else(|_| panic!("event {i} of {:?} is missing", m.events))
            .expect("the stream goes on")
            .unwrap();
        assert_eq!(change.key, EntryKeys::record(&want.id), "event {i}");
        let got = match change.event {
            Event::Created(e) => (None, Some(e)),
            Event::Updated { before, after } => (Some(before), Some(after)),
            Event::Deleted(e) => (Some(e), None),
            Event::Expired(e) => panic!("event {i}: no entry expires, yet {e:?} did"),
            other => panic!("event {i}: an unknown kind of change: {other:?}"),
        };
        assert_eq!(got, (want.before.clone(), want.after.clone()), "event {i}");
        let model = *commits.entry(change.commit).or_insert(want.commit);
        assert_eq!(model, want.commit, "event {i}: the commit it shares");
    }
    let distinct: BTreeSet<usize> = commits.values().copied().collect();
    assert_eq!(distinct.len(), commits.len(), "one commit id per commit");
    assert!(
        tokio::time::timeout(Duration::from_millis(20), stream.next())
            .await
            .is_err(),
        "an event of no applied write"
    );
}
