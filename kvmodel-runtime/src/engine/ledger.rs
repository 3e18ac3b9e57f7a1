//! The migration lease and the ledger of migration runs, kept in the store
//! under the namespace (`{ns}:#kvmodel:…`, a key space no entity has).
//!
//! - The **lease** (`{ns}:#kvmodel:lease`) names the one runner allowed to
//!   migrate the namespace and when its claim lapses, by the store's clock.
//!   A second runner is refused while it is live; a lease that lapsed (its
//!   runner stopped renewing it: killed, crashed, cut off) is taken over.
//!   Every change is a conditional commit, so two runners never both hold
//!   it.
//! - The **ledger** lists every run: a sorted collection of run numbers
//!   (`{ns}:#kvmodel:runs`) and one JSON record per run
//!   (`{ns}:#kvmodel:run:{n}`) with the schema versions, what each entity's
//!   migration did so far, where it stopped, and how it ended. Only the
//!   lease holder writes it.
//!
//! Layer: maintenance (the top layer): above the core; it reports in the data
//! of [`report`](crate::engine::report).

use serde::{Deserialize, Serialize};

use crate::engine::report::Duplicate;
use crate::error::{Error, Result};
use crate::store::batch::Batch;
use crate::store::{Direction, RangeRequest, Store};

/// The key of the namespace's maintenance item `what`.
pub fn key(namespace: &str, what: &str) -> String {
    crate::codec::key::maintenance_key(namespace, what)
}

/// Who holds the migration lease, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseInfo {
    /// The runner (`host:pid` unless named otherwise).
    pub owner: String,
    /// The ledger run it is doing.
    pub run: u64,
    /// When it took the lease, in milliseconds since the Unix epoch.
    pub since_ms: u64,
    /// When the lease lapses unless renewed.
    pub expires_ms: u64,
}

/// A held lease.
#[derive(Debug, Clone)]
pub struct Lease {
    key: String,
    info: LeaseInfo,
    bytes: Vec<u8>,
    ttl_ms: u64,
}

/// What [`Lease::acquire`] found.
#[derive(Debug)]
pub enum Acquired {
    /// The lease is ours; `took_over` is the lapsed lease it replaced.
    Held {
        /// The lease.
        lease: Lease,
        /// The lapsed lease of another runner, if there was one.
        took_over: Option<LeaseInfo>,
    },
    /// Another runner holds a live lease.
    Refused(LeaseInfo),
}

fn encode(key: &str, info: &LeaseInfo) -> Result<Vec<u8>> {
    serde_json::to_vec(info).map_err(|e| Error::Encode {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

fn decode<T: serde::de::DeserializeOwned>(key: &str, bytes: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| {
        Error::decode(
            key,
            format!("it is not a kvmodel {what}; delete it if no migration is running"),
            Some(Box::new(e)),
        )
    })
}

/// The lease of `namespace` as stored, if any.
pub async fn current<S: Store>(store: &S, namespace: &str) -> Result<Option<LeaseInfo>> {
    let key = key(namespace, "lease");
    match store.get(&key).await? {
        Some(bytes) => decode(&key, &bytes, "migration lease").map(Some),
        None => Ok(None),
    }
}

impl Lease {
    /// Takes the migration lease of `namespace` for `owner` doing `run`,
    /// for `ttl_ms` from now (renew it before then), unless another runner
    /// holds a live one.
    pub async fn acquire<S: Store>(
        store: &S,
        namespace: &str,
        owner: &str,
        run: u64,
        ttl_ms: u64,
    ) -> Result<Acquired> {
        let key = key(namespace, "lease");
        for _ in 0..crate::engine::MAX_ATTEMPTS {
            let now = store.now_ms().await?;
            let stored = store.get(&key).await?;
            let held = match &stored {
                Some(bytes) => Some(decode::<LeaseInfo>(&key, bytes, "migration lease")?),
                None => None,
            };
            if let Some(h) = &held {
                if h.expires_ms > now {
                    return Ok(Acquired::Refused(h.clone()));
                }
            }
            let info = LeaseInfo {
                owner: owner.to_owned(),
                run,
                since_ms: now,
                expires_ms: now.saturating_add(ttl_ms),
            };
            let bytes = encode(&key, &info)?;
            let mut b = Batch::new();
            match stored {
                Some(old) => b.equals(&key, old),
                None => b.absent(&key),
            };
            b.put(&key, bytes.clone(), None);
            if crate::engine::repo::commit(store, b).await?.is_applied() {
                let lease = Lease {
                    key,
                    info,
                    bytes,
                    ttl_ms,
                };
                return Ok(Acquired::Held {
                    lease,
                    took_over: held,
                });
            }
        }
        Err(Error::Conflict {
            entity: "migration lease",
            key,
            attempts: crate::engine::MAX_ATTEMPTS,
        })
    }

    /// Who holds it.
    pub fn info(&self) -> &LeaseInfo {
        &self.info
    }

    /// Extends it by its time to live from now, naming `run`; `false` when
    /// it was lost (taken over after it lapsed): stop migrating then.
    pub async fn renew<S: Store>(&mut self, store: &S, run: u64) -> Result<bool> {
        let now = store.now_ms().await?;
        let info = LeaseInfo {
            run,
            expires_ms: now.saturating_add(self.ttl_ms),
            ..self.info.clone()
        };
        let bytes = encode(&self.key, &info)?;
        let mut b = Batch::new();
        b.equals(&self.key, self.bytes.clone())
            .put(&self.key, bytes.clone(), None);
        if crate::engine::repo::commit(store, b).await?.is_applied() {
            self.info = info;
            self.bytes = bytes;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Gives it up (if it is still ours).
    pub async fn release<S: Store>(self, store: &S) -> Result<()> {
        let mut b = Batch::new();
        b.equals(&self.key, self.bytes).delete(&self.key);
        let _ = crate::engine::repo::commit(store, b).await?;
        Ok(())
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Still going (or its runner died: see the lease).
    Running,
    /// Every record of every entity is at its current version.
    Completed,
    /// Done, but some records were left older: duplicates, conflicts.
    CompletedWithProblems,
    /// Stopped before the end; the next run resumes it.
    Interrupted,
    /// Stopped by an error.
    Failed,
}

/// What one run did to one entity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityRun {
    /// The entity.
    pub entity: String,
    /// The version its records are rewritten at.
    pub version: u32,
    /// The migration steps the schema declares (`1 → 2`, …).
    pub steps: Vec<String>,
    /// Records visited.
    pub visited: u64,
    /// Records rewritten.
    pub rewritten: u64,
    /// Records that could not be read.
    pub skipped: u64,
    /// Duplicates of unique indexes met (the records left unmigrated).
    pub duplicates: Vec<Duplicate>,
    /// Records left unmigrated because writers kept changing them.
    pub conflicts: u64,
    /// The lowest version of a record left older than `version`.
    pub oldest_left: Option<u32>,
    /// Where the entity's walk resumes (hex), while it is not done.
    pub cursor: Option<String>,
    /// Whether the entity's walk is finished.
    pub done: bool,
}

/// One migration run in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// Its number, from 1.
    pub number: u64,
    /// Who ran it.
    pub owner: String,
    /// The schema it migrated to (the file as given).
    pub schema: String,
    /// Each entity's migration.
    pub entities: Vec<EntityRun>,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// When it ended.
    pub ended_ms: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// What stopped it, or what it resumed.
    pub note: Option<String>,
}

impl Run {
    /// Whether a later run continues this one: it stopped before the end.
    pub fn unfinished(&self) -> bool {
        matches!(self.outcome, Outcome::Running | Outcome::Interrupted)
    }
}

/// Appends `run` to the ledger of `namespace` with the next number (hold
/// the lease); returns the number.
pub async fn append<S: Store>(store: &S, namespace: &str, run: &mut Run) -> Result<u64> {
    let runs = key(namespace, "runs");
    let number = store.collection_len(&runs).await? + 1;
    run.number = number;
    let mut b = Batch::new();
    b.add(
        &runs,
        number.to_be_bytes().to_vec(),
        number.to_string().into_bytes(),
    );
    let record = key(namespace, &format!("run:{number}"));
    b.absent(&record)
        .put(&record, encode_run(&record, run)?, None);
    if !crate::engine::repo::commit(store, b).await?.is_applied() {
        return Err(Error::Conflict {
            entity: "migration ledger",
            key: record,
            attempts: 1,
        });
    }
    Ok(number)
}

fn encode_run(key: &str, run: &Run) -> Result<Vec<u8>> {
    serde_json::to_vec(run).map_err(|e| Error::Encode {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

/// Writes the ledger record of `run` (hold the lease).
pub async fn save<S: Store>(store: &S, namespace: &str, run: &Run) -> Result<()> {
    let record = key(namespace, &format!("run:{}", run.number));
    let mut b = Batch::new();
    b.put(&record, encode_run(&record, run)?, None);
    let _ = crate::engine::repo::commit(store, b).await?;
    Ok(())
}

/// The last `limit` runs of `namespace`, newest first.
pub async fn runs<S: Store>(store: &S, namespace: &str, limit: usize) -> Result<Vec<Run>> {
    let req = RangeRequest {
        direction: Direction::Descending,
        ..RangeRequest::all(limit.max(1))
    };
    let page = store.range(&key(namespace, "runs"), req).await?;
    let keys: Vec<String> = page
        .members
        .iter()
        .map(|m| {
            key(
                namespace,
                &format!("run:{}", String::from_utf8_lossy(&m.member)),
            )
        })
        .collect();
    let mut out = Vec::new();
    for (k, bytes) in keys.iter().zip(store.get_many(&keys).await?) {
        if let Some(bytes) = bytes {
            out.push(decode(k, &bytes, "migration run")?);
        }
    }
    Ok(out)
}
