//! The cascade's worklist (the rule is in the [parent module](super)): the
//! steps it takes on the records of one entity, erased to a [`Kind`], and
//! the one loop that deletes a record's tree depth first.

use super::{CASCADE_PAGE, OnDelete, purge_hint};
use crate::engine::entity::{self, Entity};
use crate::engine::page::{Cursor, PageRequest};
use crate::engine::relation::{
    Cascade, Child, Children, DependentFact, Kind, OnPath, Own, Step, Under, UnderRef,
};
use crate::engine::repo::{Engine, MAX_ATTEMPTS, backoff};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::Batch;
use std::collections::HashMap;

impl<S: Store> Kind<S> {
    /// The kind of `E`'s records on a store of type `S`.
    pub fn of<E: Entity>() -> Self {
        Kind {
            name: E::META.name,
            cascades: E::CASCADES,
            dependents: dependents_of::<E, S>,
            dependent: E::dependent_kind::<S>,
            children: children_of::<E, S>,
            sweep: sweep_of::<E, S>,
            names: names_of::<E, S>,
            delete: delete_of::<E, S>,
        }
    }
}

fn dependents_of<'a, E: Entity, S: Store>(
    store: &'a S,
    key: &'a str,
) -> Step<'a, Option<Vec<DependentFact>>> {
    Box::pin(async move {
        let Some(bytes) = store.get(key).await? else {
            return Ok(None);
        };
        let (_, value) = entity::decode_at::<E>(key, &bytes).map_err(|e| purge_hint(key, e))?;
        Ok(Some(value.dependents()))
    })
}

fn names_of<'a, E: Entity, S: Store>(
    store: &'a S,
    key: &'a str,
    (parent, relation): (&'a str, &'static str),
) -> Step<'a, bool> {
    Box::pin(async move {
        let Some(bytes) = store.get(key).await? else {
            return Ok(false);
        };
        let (_, value) = entity::decode_at::<E>(key, &bytes).map_err(|e| purge_hint(key, e))?;
        Ok(value
            .parents()
            .iter()
            .any(|p| p.key == parent && p.relation == relation))
    })
}

fn children_of<'a, E: Entity, S: Store>(
    store: &'a S,
    collection: &'a str,
    after: Option<Cursor>,
) -> Step<'a, Children> {
    Box::pin(async move {
        let engine = Engine::<E, S>::new(store.clone());
        let mut swept = false;
        if Engine::<E, S>::expiring() {
            let s = engine.sweep_expired(CASCADE_PAGE).await?;
            swept = s.more || s.expired > 0;
        }
        let mut request = PageRequest::new(CASCADE_PAGE);
        if let Some(cursor) = after {
            request = request.after(cursor);
        }
        let page = engine.list(collection, request.into()).await?;
        if let Some(s) = page.skipped.first() {
            return Err(Error::decode(
                s.key.clone(),
                format!(
                    "a cascade cannot delete this {} (it does not decode, so its entries are \
                     unknown); `purge` it, then delete the parent again",
                    E::META.name
                ),
                None,
            ));
        }
        let child = |c: &E| Child {
            key: c.record_key(),
            cascades: match E::CASCADES {
                true => cascades(c.dependents()),
                false => Vec::new(),
            },
        };
        Ok(Children {
            children: page.items.iter().map(child).collect(),
            next: page.next,
            swept,
        })
    })
}

fn sweep_of<'a, E: Entity, S: Store>(store: &'a S) -> Step<'a, ()> {
    Box::pin(async move {
        if Engine::<E, S>::expiring() {
            Engine::<E, S>::new(store.clone())
                .sweep_expired(CASCADE_PAGE)
                .await?;
        }
        Ok(())
    })
}

fn delete_of<'a, E: Entity, S: Store>(
    store: &'a S,
    key: &'a str,
    under: UnderRef<'a>,
    on_path: &'a [OnPath],
) -> Step<'a, Own> {
    Box::pin(async move {
        Engine::<E, S>::new(store.clone())
            .delete_once(key, under, on_path)
            .await
    })
}

/// One record on the path of [`delete_tree`].
struct Frame<S> {
    key: String,
    kind: Kind<S>,
    /// The parent it was listed under, which it must still name (none for
    /// the record the delete started from).
    under: Option<Under>,
    /// Its cascade dependents.
    cascades: Vec<Cascade>,
    /// The one of `cascades` being listed.
    at: usize,
    /// Whether that one was listed to its end: once `pending` is done, the
    /// next one is.
    listed: bool,
    /// Children listed and not yet deleted, last first, with the number of
    /// their dependent.
    pending: Vec<(Child, usize)>,
    /// Its children found on the path below it, and for each dependent the
    /// lowest frame among them (the last of them to be deleted).
    on_path: Vec<(OnPath, usize)>,
    /// Counts of children left by records deleted further up the path,
    /// to remove once this record is gone (they are then 0).
    after: Vec<String>,
    attempts: u32,
    /// Whether the expired children of a `restrict` dependent were swept
    /// since its count last failed the delete.
    swept: bool,
}

impl<S> Frame<S> {
    fn new(key: String, kind: Kind<S>, under: Option<Under>, cascades: Vec<Cascade>) -> Self {
        Frame {
            key,
            kind,
            under,
            cascades,
            at: 0,
            listed: false,
            pending: Vec::new(),
            on_path: Vec::new(),
            after: Vec::new(),
            attempts: 0,
            swept: false,
        }
    }
}

/// The cascade dependents among `dependents`.
fn cascades(dependents: Vec<DependentFact>) -> Vec<Cascade> {
    let cascade = |(i, d): (usize, DependentFact)| {
        (d.on_delete == OnDelete::Cascade).then_some((i, d.collection, d.relation))
    };
    dependents
        .into_iter()
        .enumerate()
        .filter_map(cascade)
        .collect()
}

/// Deletes the record at `key` of `kind` and, depth first, the children of
/// its `cascade` dependents, each in a commit of its own (the module's
/// rule); `false` when there was no record. A loop and no recursion: the
/// stack of records it keeps grows with the depth of the tree, the futures
/// it awaits do not.
pub(crate) async fn delete_tree<S: Store>(store: &S, kind: Kind<S>, key: &str) -> Result<bool> {
    let root = match kind.cascades {
        true => (kind.dependents)(store, key).await?.map(cascades),
        false => None,
    };
    let mut stack = vec![Frame::new(
        key.to_owned(),
        kind,
        None,
        root.unwrap_or_default(),
    )];
    // Key → stack index of every record on the path that has cascade
    // dependents (only those list children).
    let mut path: HashMap<String, usize> = HashMap::new();
    if !stack[0].cascades.is_empty() {
        path.insert(key.to_owned(), 0);
    }
    let mut deleted = false;
    while let Some(t) = stack.len().checked_sub(1) {
        let top = &mut stack[t];
        // The next child listed: its children go first.
        if let Some((child, i)) = top.pending.pop() {
            if top.pending.is_empty() {
                top.pending = Vec::new();
            }
            if let Some(kind) = (top.kind.dependent)(i) {
                let relation = top.cascades.iter().find(|c| c.0 == i).map(|c| c.2);
                let under = relation.map(|r| (top.key.clone(), r));
                if !child.cascades.is_empty() {
                    path.insert(child.key.clone(), t + 1);
                }
                stack.push(Frame::new(child.key, kind, under, child.cascades));
            }
            continue;
        }
        if top.listed {
            top.listed = false;
            top.at += 1;
            continue;
        }
        // A record moved to another parent since it was listed is out of
        // the tree: it stays, with its children (looked at before each
        // listing of them; its own delete looks again, in its commit).
        let moved = match &top.under {
            Some((parent, relation)) if top.at < top.cascades.len() => {
                !(top.kind.names)(store, &top.key, (parent.as_str(), *relation)).await?
            }
            _ => false,
        };
        // The next page of children, skipping those on the path.
        if let Some((i, collection, _)) = top.cascades.get(top.at).filter(|_| !moved) {
            let i = *i;
            let Some(child) = (top.kind.dependent)(i) else {
                top.at += 1;
                continue;
            };
            let (mut on_path, mut lowest, mut cursor) = (0, usize::MAX, None);
            let mut pending = Vec::new();
            let complete = loop {
                let page = (child.children)(store, collection, cursor).await?;
                for c in page.children {
                    if c.key == top.key {
                        // Its own child: its delete counts itself.
                        continue;
                    }
                    match path.get(&c.key) {
                        Some(&j) => {
                            on_path += 1;
                            lowest = lowest.min(j);
                        }
                        None => pending.push((c, i)),
                    }
                }
                if !pending.is_empty() || page.next.is_none() {
                    break page.next.is_none() && !page.swept;
                }
                cursor = page.next;
            };
            if complete && on_path > 0 {
                let found = OnPath {
                    dependent: i,
                    count: on_path,
                };
                top.on_path.push((found, lowest));
            }
            if !pending.is_empty() {
                pending.reverse();
                top.pending = pending;
                top.listed = complete;
            } else if complete {
                top.at += 1;
            }
            continue;
        }
        // No child left to list: the record itself (unless it moved out).
        let on_path: Vec<OnPath> = top.on_path.iter().map(|(a, _)| *a).collect();
        let under = top.under.as_ref().map(|(p, r)| (p.as_str(), *r));
        let own = match moved {
            true => Own::Gone,
            false => (top.kind.delete)(store, &top.key, under, &on_path).await?,
        };
        match own {
            Own::Deleted(left) => {
                let notes: Vec<(usize, String)> = left
                    .into_iter()
                    .filter_map(|(i, counter)| {
                        let (_, lowest) = top.on_path.iter().find(|(a, _)| a.dependent == i)?;
                        Some((*lowest, counter))
                    })
                    .collect();
                for (lowest, counter) in notes {
                    stack[lowest].after.push(counter);
                }
                deleted = t == 0;
                finish(store, &mut stack, &mut path).await?;
            }
            Own::Gone => finish(store, &mut stack, &mut path).await?,
            Own::Blocked(i, d) if d.on_delete == OnDelete::Restrict => {
                if top.swept {
                    return Err(Error::Restricted {
                        entity: top.kind.name,
                        key: top.key.clone(),
                        child: d.entity,
                        relation: d.relation,
                    });
                }
                // Children it counts may have expired: sweep them, then
                // look again once.
                top.swept = true;
                if let Some(child) = (top.kind.dependent)(i) {
                    (child.sweep)(store).await?;
                }
            }
            blocked => {
                if top.attempts + 1 >= MAX_ATTEMPTS {
                    return Err(Error::Conflict {
                        entity: top.kind.name,
                        key: top.key.clone(),
                        attempts: MAX_ATTEMPTS,
                    });
                }
                backoff(top.attempts).await;
                top.attempts += 1;
                if matches!(blocked, Own::Blocked(..)) {
                    // A child came meanwhile: list the children again.
                    top.at = 0;
                    top.listed = false;
                    top.on_path.clear();
                }
            }
        }
    }
    Ok(deleted)
}

/// Pops the top record of the path, deleted or gone, and removes the counts
/// of children it was the last to be counted in (when they are 0).
async fn finish<S: Store>(
    store: &S,
    stack: &mut Vec<Frame<S>>,
    path: &mut HashMap<String, usize>,
) -> Result<()> {
    let Some(done) = stack.pop() else {
        return Ok(());
    };
    if !done.cascades.is_empty() {
        path.remove(&done.key);
    }
    for counter in done.after {
        let mut b = Batch::new();
        b.absent_or_equals(counter.as_str(), b"0".to_vec())
            .delete(counter.as_str());
        // A count that is not 0 is someone's: `verify` judges it.
        let _ = store.commit(b).await?;
    }
    Ok(())
}
