//! `kvmodel migrate`: rewrites old records and backfills what later
//! versions added, under the namespace's lease, recording the run in the
//! ledger; `--status` shows the lease, the runs and the index states.

use clap::Args;

use kvmodel_runtime::__private::{
    EntityDef, EntityModel, MigrateState, ModelDef, Walker, hex,
    ledger::{self, Acquired, EntityRun, Lease, Outcome, Run},
    state,
};
use kvmodel_runtime::Store;

use super::progress::Progress;
use super::{Code, Context, Fail, Format, Target, fail, parse_duration, print, store_error};

mod status;

/// `kvmodel migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub target: Target,
    /// Show the lease, the last runs and the index states, and change
    /// nothing.
    #[arg(long)]
    pub status: bool,
    /// Report what would be rewritten and the duplicates, and change
    /// nothing (takes no lease, records no run).
    #[arg(long)]
    pub dry_run: bool,
    /// Records per page; the lease is renewed and the run recorded after
    /// each.
    #[arg(long, default_value_t = 500, value_name = "N")]
    pub page_size: usize,
    /// Wait this long after each page, to spare a live store (`100ms`, `2s`).
    #[arg(long, value_name = "DURATION")]
    pub pause: Option<String>,
    /// How long the lease holds without renewal: another runner may take it
    /// over once it lapses.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub lease: String,
    /// This runner's name in the lease and the ledger (default `HOST:PID`).
    #[arg(long)]
    pub owner: Option<String>,
    /// Start a new run instead of resuming an unfinished one.
    #[arg(long)]
    pub restart: bool,
    /// The report's format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Show no progress.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The runner's default name: `HOST:PID`.
fn default_owner() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", std::process::id())
}

/// The ledger entry of a fresh run of `entities`.
fn entity_run(m: &EntityModel) -> EntityRun {
    let mut steps: Vec<u32> = m.migrations.iter().map(|s| s.from).collect();
    steps.sort_unstable();
    EntityRun {
        entity: m.name.clone(),
        version: m.version,
        steps: steps.iter().map(|f| format!("{f} → {}", f + 1)).collect(),
        ..EntityRun::default()
    }
}

/// Whether an unfinished `run` migrates the same entities to the same
/// versions as this schema would.
fn same_plan(run: &Run, entities: &[EntityModel]) -> bool {
    run.entities.len() == entities.len()
        && run
            .entities
            .iter()
            .zip(entities)
            .all(|(r, e)| r.entity == e.name && r.version == e.version)
}

/// Why a runner stopped when another took its lease over.
const LOST: &str = "another runner took the lease over while this one stalled";

/// Migrates; exit 0 when every record is current, 1 when some were left
/// (duplicates, conflicts, unreadable), 3 when refused, 130 interrupted.
pub async fn migrate(args: MigrateArgs) -> Result<Code, Fail> {
    let cx = Context::open(&args.target.schema, &args.target.store).await?;
    if args.status {
        return status::show(&cx, args.format).await;
    }
    let entities = cx.entities(&args.target.entities)?;
    let pause = match &args.pause {
        Some(p) => parse_duration(p).map_err(fail)?,
        None => 0,
    };
    let lease_ms = parse_duration(&args.lease).map_err(fail)?.max(1000);
    let owner = args.owner.clone().unwrap_or_else(default_owner);
    let ns = cx.model.namespace.clone();
    let mut progress = Progress::new(args.quiet);

    let mut leases: Vec<Lease> = Vec::new();
    let mut run = Run {
        number: 0,
        owner: owner.clone(),
        schema: cx.schema.clone(),
        entities: entities.iter().map(entity_run).collect(),
        started_ms: cx.store.now_ms().await.map_err(store_error)?,
        ended_ms: None,
        outcome: Outcome::Running,
        note: None,
    };
    if !args.dry_run {
        // The lease of every namespace migrated, in order: a run over
        // several schema files excludes a run over any one of them.
        let spaces: std::collections::BTreeSet<&str> =
            entities.iter().map(|e| e.namespace.as_str()).collect();
        for space in spaces {
            match Lease::acquire(&cx.store, space, &owner, 0, lease_ms)
                .await
                .map_err(store_error)?
            {
                Acquired::Refused(held) => {
                    eprintln!(
                        "refused: `{}` holds the migration lease of `{space}` (run {}) for {} \
                         more; wait for it to finish, or for the lease to lapse if that runner \
                         died",
                        held.owner,
                        held.run,
                        left(held.expires_ms, &cx).await
                    );
                    for l in leases {
                        l.release(&cx.store).await.map_err(store_error)?;
                    }
                    return Ok(Code::Refused);
                }
                Acquired::Held {
                    lease: l,
                    took_over,
                } => {
                    if let Some(old) = took_over {
                        eprintln!(
                            "took over the lapsed migration lease of `{space}` from `{}` (run {})",
                            old.owner, old.run
                        );
                    }
                    leases.push(l);
                }
            }
        }
        let last = ledger::runs(&cx.store, &ns, 1)
            .await
            .map_err(store_error)?
            .pop();
        match last {
            Some(prev) if !args.restart && prev.unfinished() && same_plan(&prev, &entities) => {
                eprintln!(
                    "resuming run {} of `{}` (it stopped {})",
                    prev.number,
                    prev.owner,
                    if prev.outcome == Outcome::Interrupted {
                        "when interrupted"
                    } else {
                        "when its runner died"
                    }
                );
                run = Run {
                    owner: owner.clone(),
                    outcome: Outcome::Running,
                    note: Some(format!("resumed by {owner}")),
                    ..prev
                };
                ledger::save(&cx.store, &ns, &run)
                    .await
                    .map_err(store_error)?;
            }
            _ => {
                ledger::append(&cx.store, &ns, &mut run)
                    .await
                    .map_err(store_error)?;
            }
        }
        for l in &mut leases {
            l.renew(&cx.store, run.number).await.map_err(store_error)?;
        }
    }

    let result = migrate_entities(
        &cx,
        &args,
        &entities,
        &mut run,
        &mut leases,
        pause,
        &mut progress,
    )
    .await;
    let code = match result {
        Ok(Some(code)) => code,
        Ok(None) => {
            let left = run
                .entities
                .iter()
                .any(|e| !e.duplicates.is_empty() || e.conflicts > 0 || e.skipped > 0);
            run.outcome = if left {
                Outcome::CompletedWithProblems
            } else {
                Outcome::Completed
            };
            if left { Code::Problems } else { Code::Success }
        }
        Err(e) => {
            run.outcome = Outcome::Failed;
            run.note = Some(e.to_string());
            eprintln!("error: {e}");
            Code::Failed
        }
    };
    // A runner that lost its lease leaves the run to the one that took it
    // over (which resumes the same run): the ledger's record is theirs. It
    // gives back the leases it still holds (a release deletes only a lease
    // that is still its own).
    let lost = run.note.as_deref() == Some(LOST);
    if !args.dry_run {
        if !lost {
            if run.outcome != Outcome::Interrupted {
                run.ended_ms = Some(cx.store.now_ms().await.map_err(store_error)?);
            }
            ledger::save(&cx.store, &ns, &run)
                .await
                .map_err(store_error)?;
        }
        for l in leases {
            l.release(&cx.store).await.map_err(store_error)?;
        }
    }
    match args.format {
        Format::Text => print(&text(&run, args.dry_run))?,
        Format::Json => {
            let mut doc = serde_json::to_value(&run).unwrap_or_default();
            doc["dry_run"] = serde_json::Value::Bool(args.dry_run);
            print(&format!(
                "{}\n",
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            ))?
        }
    }
    Ok(code)
}

/// Migrates each entity of the run that is not done; `Some(code)` when it
/// stopped early (interrupted, or the lease was lost).
async fn migrate_entities(
    cx: &Context,
    args: &MigrateArgs,
    entities: &[EntityModel],
    run: &mut Run,
    leases: &mut [Lease],
    pause: u64,
    progress: &mut Progress,
) -> kvmodel_runtime::Result<Option<Code>> {
    let ns = cx.model.namespace.clone();
    // The run lists the entities in the same order (a resumed run has the
    // same plan).
    for (i, model) in entities.iter().enumerate() {
        let Some(er) = run.entities.get(i).cloned() else {
            break;
        };
        if er.done {
            continue;
        }
        let def = ModelDef::new(model.clone());
        let walker = Walker::new(&def, &cx.store);
        let total = def.records(&cx.store).count(&cx.store).await?;
        let cursor = er.cursor.as_deref().and_then(hex::decode);
        let mut st = MigrateState::after(cursor);
        st.dry_run = args.dry_run;
        st.visited = er.visited;
        st.rewritten = er.rewritten;
        st.duplicates = er.duplicates.clone();
        st.oldest_left = er.oldest_left;
        let command = if args.dry_run {
            "migrate --dry-run"
        } else {
            "migrate"
        };
        let label = format!("{command} {}", model.name);
        while !st.done {
            walker.migrate_step(&mut st, args.page_size).await?;
            progress.update(&label, st.visited, Some(total));
            let Some(slot) = run.entities.get_mut(i) else {
                break;
            };
            slot.visited = st.visited;
            slot.rewritten = st.rewritten;
            slot.skipped = er.skipped + st.skipped.len() as u64;
            slot.duplicates = st.duplicates.clone();
            slot.conflicts = er.conflicts + st.conflicts.len() as u64;
            slot.oldest_left = st.oldest_left;
            slot.cursor = st.cursor().map(hex::encode);
            slot.done = st.done;
            if args.dry_run {
                continue;
            }
            for l in leases.iter_mut() {
                if !l.renew(&cx.store, run.number).await? {
                    run.outcome = Outcome::Failed;
                    run.note = Some(LOST.to_owned());
                    eprintln!("error: lost the migration lease; stopped");
                    return Ok(Some(Code::Problems));
                }
            }
            if st.done {
                let by = format!("kvmodel migrate (run {})", run.number);
                state::record_migration(
                    &cx.store,
                    def.space(),
                    def.version(),
                    st.oldest_left,
                    &st.duplicates,
                    &by,
                )
                .await?;
            }
            ledger::save(&cx.store, &ns, run).await?;
            if cx.stopped() && !st.done {
                run.outcome = Outcome::Interrupted;
                run.note = Some(format!("interrupted in {}", model.name));
                progress.done(&format!("{label}: interrupted"));
                eprintln!("migrate was interrupted; run it again to resume");
                return Ok(Some(Code::Interrupted));
            }
            if pause > 0 && !st.done {
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
        }
        progress.done(&format!(
            "{label}: {} visited, {}",
            st.visited,
            rewritten(st.rewritten, args.dry_run)
        ));
    }
    Ok(None)
}

/// The text report of a run.
fn text(run: &Run, dry_run: bool) -> String {
    let mut out = String::new();
    if dry_run {
        out.push_str("migrate --dry-run: nothing was written\n");
    } else {
        out.push_str(&format!(
            "migrate run {} by {}: {}\n",
            run.number,
            run.owner,
            outcome(run.outcome)
        ));
    }
    let stays = if dry_run { "would stay" } else { "stays" };
    for e in &run.entities {
        out.push_str(&format!(
            "{} (version {}): {} visited, {}",
            e.entity,
            e.version,
            e.visited,
            rewritten(e.rewritten, dry_run)
        ));
        if e.skipped > 0 {
            out.push_str(&format!(", {} unreadable", e.skipped));
        }
        if e.conflicts > 0 {
            out.push_str(&format!(", {} kept changing (run again)", e.conflicts));
        }
        out.push('\n');
        for d in &e.duplicates {
            out.push_str(&format!(
                "  duplicate {} `{}`: {} has the value {} holds; it {stays} at its version \
                 until one of them changes\n",
                d.index, d.value, d.record, d.holder
            ));
        }
    }
    out
}

/// `n` records rewritten, in words: what a dry run would do is said as
/// such.
fn rewritten(n: u64, dry_run: bool) -> String {
    if dry_run {
        format!("would rewrite {n}")
    } else {
        format!("{n} rewritten")
    }
}

/// An outcome in words.
pub fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Running => "running",
        Outcome::Completed => "completed",
        Outcome::CompletedWithProblems => "completed, with records left behind",
        Outcome::Interrupted => "interrupted (the next run resumes it)",
        Outcome::Failed => "failed",
    }
}

/// How long until `at` by the store's clock, in words.
async fn left(at: u64, cx: &Context) -> String {
    let now = cx.store.now_ms().await.unwrap_or(at);
    let secs = at.saturating_sub(now).div_ceil(1000);
    format!("{secs}s")
}
