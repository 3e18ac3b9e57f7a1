//! `kvmodel verify` and `kvmodel reconcile`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::{Deserialize, Serialize};

use kvmodel_runtime::__private::{EntityDef, ModelDef, Phase, WalkState, Walker, state};

use super::progress::Progress;
use super::report::{self, EntityReport};
use super::{Code, Context, Fail, Format, Target, fail, print, store_error};

/// What both walks take.
#[derive(Debug, Args)]
pub struct WalkOptions {
    #[command(flatten)]
    pub target: Target,
    /// Records, keys or counters per page (and per saved step).
    #[arg(long, default_value_t = 500, value_name = "N")]
    pub page_size: usize,
    /// Save progress to FILE after every page, and resume from it when it
    /// exists (after an interruption); it is removed when the walk is done.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// The report's format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Show no progress.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `kvmodel verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub options: WalkOptions,
}

/// `kvmodel reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    #[command(flatten)]
    pub options: WalkOptions,
    /// Report what would be repaired and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// A walk saved between pages.
#[derive(Serialize, Deserialize)]
struct Checkpoint {
    command: String,
    schema: String,
    /// A fingerprint of the model the walk judges by (hex): a walk resumed
    /// under another schema would judge what it measured by other
    /// definitions (a counter one version declares and the other does not).
    #[serde(default)]
    model: String,
    store: String,
    /// Reports of the entities already walked.
    done: Vec<EntityReport>,
    /// The entity being walked, and where.
    current: Option<(String, WalkState)>,
}

impl Checkpoint {
    fn load(path: &Path) -> Result<Option<Checkpoint>, Fail> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                fail(format_args!(
                    "`{}` is not a kvmodel checkpoint ({e}); remove it to start over",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(fail(format_args!("cannot read `{}`: {e}", path.display()))),
        }
    }

    fn save(&self, path: &Path) -> Result<(), Fail> {
        let tmp = path.with_extension("tmp");
        let bytes = serde_json::to_vec(self).map_err(fail)?;
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| fail(format_args!("cannot write `{}`: {e}", path.display())))
    }
}

/// Checks a live store against the schema; exit 1 when anything drifted.
pub async fn verify(args: VerifyArgs) -> Result<Code, Fail> {
    walk("verify", args.options, false).await
}

/// Repairs what verify finds; exit 1 when something needs a person.
pub async fn reconcile(args: ReconcileArgs) -> Result<Code, Fail> {
    let command = if args.dry_run {
        "reconcile --dry-run"
    } else {
        "reconcile"
    };
    walk(command, args.options, !args.dry_run).await
}

async fn walk(command: &str, o: WalkOptions, repair: bool) -> Result<Code, Fail> {
    let cx = Context::open(&o.target.schema, &o.target.store).await?;
    let entities = cx.entities(&o.target.entities)?;
    let mut cp = Checkpoint {
        command: command.to_owned(),
        schema: cx.schema.clone(),
        model: cx.fingerprint(),
        store: cx.url.clone(),
        done: Vec::new(),
        current: None,
    };
    if let Some(path) = &o.checkpoint {
        if let Some(saved) = Checkpoint::load(path)? {
            if (saved.command.as_str(), saved.store.as_str()) != (command, cx.url.as_str()) {
                return Err(fail(format_args!(
                    "`{}` saves a `{}` of `{}`, not this command; remove it or name another file",
                    path.display(),
                    saved.command,
                    saved.store
                )));
            }
            if saved.model.is_empty() {
                return Err(fail(format_args!(
                    "`{}` was saved by an older kvmodel, which did not record the schema it \
                     walked under; remove it to start over",
                    path.display()
                )));
            }
            if saved.model != cp.model {
                return Err(fail(format_args!(
                    "`{}` saves a walk made under another schema than `{}` (its entities, \
                     indexes or counters differ); a walk resumed under another schema would \
                     judge what it measured by other definitions: remove it to start over",
                    path.display(),
                    cx.schema
                )));
            }
            if !o.quiet {
                eprintln!(
                    "resuming from `{}`: {} entit(ies) done",
                    path.display(),
                    saved.done.len()
                );
            }
            cp = saved;
        }
    }
    let mut progress = Progress::new(o.quiet);
    for model in entities {
        if cp.done.iter().any(|r| r.entity == model.name) {
            continue;
        }
        let def = ModelDef::new(model.clone());
        let walker = Walker::new(&def, &cx.store);
        let mut st = match cp.current.take() {
            Some((name, st)) if name == model.name => st,
            _ => {
                let mut st = WalkState::new(repair);
                walker.start(&mut st).await.map_err(store_error)?;
                st
            }
        };
        let total = def
            .records(&cx.store)
            .count(&cx.store)
            .await
            .map_err(store_error)?;
        while !st.is_done() {
            walker
                .step(&mut st, o.page_size)
                .await
                .map_err(store_error)?;
            match st.phase {
                Phase::Records => progress.update(
                    &format!("{command} {} records", model.name),
                    st.visited,
                    Some(total),
                ),
                Phase::Derived | Phase::Counters => progress.update(
                    &format!("{command} {} derived keys", model.name),
                    st.examined,
                    None,
                ),
                Phase::Done => {}
            }
            cp.current = Some((model.name.clone(), st.clone()));
            if let Some(path) = &o.checkpoint {
                cp.save(path)?;
            }
            if cx.stopped() && !st.is_done() {
                progress.done(&format!("{command}: interrupted"));
                return Ok(interrupted(command, &o));
            }
        }
        let index_state = state::load(&cx.store, def.space())
            .await
            .map_err(store_error)?;
        let r = EntityReport::new(&model, &st.drift, index_state.as_ref());
        progress.done(&format!(
            "{command} {}: {} records, {} problem(s)",
            model.name,
            r.records,
            r.problems.len()
        ));
        cp.done.push(r);
        cp.current = None;
        if let Some(path) = &o.checkpoint {
            cp.save(path)?;
        }
    }
    let verb = match command {
        "reconcile" => "repaired",
        "reconcile --dry-run" => "would repair",
        _ => "",
    };
    match o.format {
        Format::Text => print(&report::text(command, &cp.done, verb))?,
        Format::Json => print(&report::json(command, &cx.url, &cx.schema, &cp.done))?,
    }
    if let Some(path) = &o.checkpoint {
        let _ = std::fs::remove_file(path);
    }
    let problems = cp.done.iter().flat_map(|r| &r.problems);
    let failed = if repair {
        problems.filter(|p| !p.repairable).count() > 0
    } else {
        problems.count() > 0
    };
    let unsettled = cp.done.iter().any(|r| !r.unsettled.is_empty());
    Ok(if failed {
        Code::Problems
    } else if unsettled {
        Code::Unsettled
    } else {
        Code::Success
    })
}

/// The message and code of an interrupted walk.
fn interrupted(command: &str, o: &WalkOptions) -> Code {
    match &o.checkpoint {
        Some(path) => eprintln!(
            "{command} was interrupted; run it again with `--checkpoint {}` to resume",
            path.display()
        ),
        None => eprintln!(
            "{command} was interrupted; pass `--checkpoint FILE` to be able to resume a walk"
        ),
    }
    Code::Interrupted
}
