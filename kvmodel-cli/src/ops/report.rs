//! What `verify` and `reconcile` found, per entity, as lines or JSON.

use serde::{Deserialize, Serialize};

use kvmodel_runtime::__private::{Drift, EntityModel, KeptCounter, Unsettled, state::IndexState};

/// One thing out of step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Problem {
    /// `missing_claim`, `conflicting_claim`, `missing_member`, `counter`,
    /// `kept_counter` (a counter that keeps what records that are gone
    /// added, below what the live records add up to), `undecodable`,
    /// `orphan_claim`, `orphan_member`, `receipt` or `behind` (a record
    /// older than something readable, which its reads miss until
    /// `kvmodel migrate` rewrites it).
    pub kind: String,
    /// The key concerned (claim, collection, counter or record).
    pub key: String,
    /// The record it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// What the store holds (a claim's holder, a counter's value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    /// What the records imply (a counter's total).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// Why a record cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether `reconcile` repairs it (it never takes a claim another
    /// record holds, decodes the undecodable, or writes a counter beyond 64
    /// bits).
    pub repairable: bool,
}

/// What a walk of one entity found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EntityReport {
    /// The entity.
    pub entity: String,
    /// Records examined.
    pub records: u64,
    /// Records that expired and await the sweep (not drift).
    pub expired: u64,
    /// What is out of step.
    pub problems: Vec<Problem>,
    /// Indexes, relations and counters that are write-only (not yet
    /// backfilled by a migration).
    pub write_only: Vec<String>,
    /// Counters the walk could not judge (not drift: unknown), left as
    /// they are.
    #[serde(default)]
    pub unsettled: Vec<Unsettled>,
    /// Counters that keep what records that are gone added (`keep:`), at
    /// or above what the live records add up to: checked against that
    /// lower bound only, not drift.
    #[serde(default)]
    pub kept: Vec<KeptCounter>,
    /// Records older than something the index state makes readable (all
    /// of them; the first hundred are listed as `behind` problems).
    /// Left out of the JSON when there are none.
    #[serde(default, skip_serializing_if = "none")]
    pub behind: u64,
}

fn none(n: &u64) -> bool {
    *n == 0
}

fn problem(kind: &str, key: &str) -> Problem {
    Problem {
        kind: kind.to_owned(),
        key: key.to_owned(),
        record: None,
        found: None,
        expected: None,
        error: None,
        repairable: true,
    }
}

impl EntityReport {
    /// The report of `drift`, with what the index `state` leaves write-only.
    pub fn new(model: &EntityModel, drift: &Drift, state: Option<&IndexState>) -> EntityReport {
        let mut problems = Vec::new();
        // A repair that did not land (the record changed meanwhile) is
        // not reported as made.
        let landed = |record: &String| !drift.unrepaired.contains(record);
        for (claim, record) in &drift.missing_claims {
            problems.push(Problem {
                record: Some(record.clone()),
                repairable: landed(record),
                ..problem("missing_claim", claim)
            });
        }
        for (claim, record, holder) in &drift.conflicting_claims {
            problems.push(Problem {
                record: Some(record.clone()),
                found: Some(holder.clone()),
                repairable: false,
                ..problem("conflicting_claim", claim)
            });
        }
        for (collection, record) in &drift.missing_members {
            problems.push(Problem {
                record: Some(record.clone()),
                repairable: landed(record),
                ..problem("missing_member", collection)
            });
        }
        for c in &drift.counters {
            problems.push(Problem {
                found: Some(c.actual.to_string()),
                expected: Some(c.expected.to_string()),
                repairable: i64::try_from(c.expected).is_ok(),
                ..problem(
                    if c.at_least {
                        "kept_counter"
                    } else {
                        "counter"
                    },
                    &c.key,
                )
            });
        }
        for s in &drift.undecodable {
            problems.push(Problem {
                error: Some(s.error.to_string()),
                repairable: false,
                ..problem("undecodable", &s.key)
            });
        }
        for (claim, owner) in &drift.orphan_claims {
            problems.push(Problem {
                record: Some(owner.clone()),
                ..problem("orphan_claim", claim)
            });
        }
        for (collection, member) in &drift.orphan_members {
            problems.push(Problem {
                record: Some(member.clone()),
                ..problem("orphan_member", collection)
            });
        }
        for record in &drift.receipts {
            problems.push(problem("receipt", record));
        }
        // Left to `migrate`: a repair of its older entries alone would
        // leave the reads missing it.
        for record in &drift.behind {
            problems.push(Problem {
                repairable: false,
                ..problem("behind", record)
            });
        }
        let write_only = model
            .declared()
            .iter()
            // With no state recorded, the first read establishes one, and
            // an empty entity is readable at once.
            .filter(|d| match state {
                Some(s) => d.since > 1 && !s.readable(d.since),
                None => d.since > 1 && drift.records > 0,
            })
            .map(|d| format!("{} (since version {})", d.name, d.since))
            .collect();
        EntityReport {
            entity: model.name.clone(),
            records: drift.records,
            expired: drift.expired,
            problems,
            write_only,
            unsettled: drift.unsettled.clone(),
            kept: drift.kept.clone(),
            behind: drift.behind_count,
        }
    }
}

/// One problem as a line.
fn line(p: &Problem, verb: &str) -> String {
    let of = |r: &Option<String>| r.as_deref().map(|r| format!(" of {r}")).unwrap_or_default();
    let what = match p.kind.as_str() {
        "missing_claim" => format!("missing claim {}{}", p.key, of(&p.record)),
        "conflicting_claim" => format!(
            "claim {} of {} is held by {} (two records have this unique value; change one)",
            p.key,
            p.record.as_deref().unwrap_or("?"),
            p.found.as_deref().unwrap_or("?")
        ),
        "missing_member" => format!("missing member{} in {}", of(&p.record), p.key),
        "counter" => format!(
            "counter {} holds {}, the records add up to {}",
            p.key,
            p.found.as_deref().unwrap_or("?"),
            p.expected.as_deref().unwrap_or("?")
        ),
        "kept_counter" => format!(
            "counter {} holds {}, less than the {} its live records add up to (it keeps what records that are gone added, so it is never lowered; a repair raises it to that)",
            p.key,
            p.found.as_deref().unwrap_or("?"),
            p.expected.as_deref().unwrap_or("?")
        ),
        "undecodable" => format!(
            "record {} cannot be read: {} (purge it, or fix it by hand)",
            p.key,
            p.error.as_deref().unwrap_or("?")
        ),
        "orphan_claim" => format!(
            "orphaned claim {} names {}, which does not have that value",
            p.key,
            p.record.as_deref().unwrap_or("?")
        ),
        "orphan_member" => format!(
            "orphaned member {} in {} (its record is gone or does not derive it)",
            p.record.as_deref().unwrap_or("?"),
            p.key
        ),
        "receipt" => format!("expiry receipt of {} is missing or out of step", p.key),
        "behind" => format!(
            "record {} is older than an index, relation or counter already readable, so reads of it miss the record (an older writer wrote it; run `kvmodel migrate`)",
            p.key
        ),
        other => format!("{other} {}", p.key),
    };
    if verb.is_empty() || !p.repairable {
        format!("  {what}")
    } else {
        format!("  {verb} {what}")
    }
}

/// The text report: one block per entity, then a summary. `verb` prefixes
/// repairable problems (`repaired`, `would repair`, or nothing for verify).
pub fn text(command: &str, reports: &[EntityReport], verb: &str) -> String {
    let mut out = String::new();
    let mut total = 0;
    for r in reports {
        total += r.problems.len();
        let state = if r.problems.is_empty() {
            "clean".to_owned()
        } else {
            format!("{} problem(s)", r.problems.len())
        };
        out.push_str(&format!("{} ({} records): {state}\n", r.entity, r.records));
        for p in &r.problems {
            out.push_str(&line(p, verb));
            out.push('\n');
        }
        if r.expired > 0 {
            out.push_str(&format!(
                "  {} expired record(s) await the expiry sweep (not drift)\n",
                r.expired
            ));
        }
        if r.behind > 0 {
            out.push_str(&format!(
                "  behind: {} record(s) written by an older version after what it lacks became readable ({} listed); `kvmodel migrate` rewrites them at the current version and backfills them (stop older writers first)\n",
                r.behind,
                r.problems.iter().filter(|p| p.kind == "behind").count()
            ));
        }
        for w in &r.write_only {
            out.push_str(&format!(
                "  write-only: {w} is not backfilled yet; run `kvmodel migrate`\n"
            ));
        }
        if !r.kept.is_empty() {
            out.push_str(&format!(
                "  kept: {} counter key(s) keep what records that are gone added (`keep:`), so the records cannot recount them: each was checked to be at least what its live records add up to, and is never lowered\n",
                r.kept.len()
            ));
        }
        for u in &r.unsettled {
            out.push_str(&format!(
                "  unsettled: counter {} was not judged: {}\n",
                u.key,
                u.why.describe()
            ));
        }
    }
    out.push_str(&format!(
        "{command}: {total} problem(s) in {} entit{}",
        reports.len(),
        if reports.len() == 1 { "y" } else { "ies" }
    ));
    if !verb.is_empty() {
        let repairable = reports
            .iter()
            .flat_map(|r| &r.problems)
            .filter(|p| p.repairable)
            .count();
        out.push_str(&format!(", {repairable} {verb}"));
    }
    out.push('\n');
    out
}

/// The JSON report.
pub fn json(command: &str, store: &str, schema: &str, reports: &[EntityReport]) -> String {
    let problems: usize = reports.iter().map(|r| r.problems.len()).sum();
    let doc = serde_json::json!({
        "command": command,
        "schema": schema,
        "store": store,
        "problems": problems,
        "entities": reports,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}
