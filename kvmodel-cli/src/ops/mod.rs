//! Maintenance of a live store through a schema: `verify`, `reconcile`,
//! `migrate`, `inspect` and `purge`. The schema is lowered to the runtime's
//! model and the runtime's walks do the work (the same code generated
//! repositories run); this module parses arguments, shows progress, saves
//! checkpoints and prints reports.
//!
//! Exit codes: [`crate::exit::Code`].

mod inspect;
mod migrate;
mod progress;
mod purge;
mod report;
mod tail;
mod walk;

/// The expiring entity the tests of `purge` write, shared with the
/// end-to-end tests.
#[cfg(test)]
#[path = "../../tests/ops/visit.rs"]
mod visit;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};
use kvmodel_runtime::__private::{EntityModel, Model};
use kvmodel_runtime::AnyStore;

pub use inspect::{InspectArgs, inspect};
pub use migrate::{MigrateArgs, migrate};
pub use purge::{PurgeArgs, purge};
pub use tail::{TailArgs, tail};
pub use walk::{ReconcileArgs, VerifyArgs, reconcile, verify};

pub use crate::exit::{Code, Fail, fail};

/// The schema and the store.
#[derive(Debug, Args)]
pub struct Target {
    /// The schema files the store's data follows: schema files (YAML) and
    /// Rust source files (`.rs`) of `#[derive(KvEntity)]` structs, in any
    /// mix, read as one model.
    #[arg(long, value_name = "SCHEMA", required = true, num_args = 1..)]
    pub schema: Vec<PathBuf>,
    /// The store: `redb:PATH`, `redis://HOST:PORT`, `redis+cluster://HOST:PORT,…`
    /// (`rediss://`, `rediss+cluster://` over TLS).
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// Only this entity (repeat for more; default: every entity).
    #[arg(long = "entity", value_name = "ENTITY")]
    pub entities: Vec<String>,
}

/// How reports are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Lines for people.
    Text,
    /// One JSON document.
    Json,
}

/// Refuses a store URL that cannot name data some program wrote: `memory:`
/// (a store inside one process, empty in this one) and a redb file that does
/// not exist (opening it would create an empty file and report it clean).
fn live_store(url: &str) -> Result<(), Fail> {
    let (scheme, rest) = url.split_once(':').unwrap_or((url, ""));
    match scheme.to_ascii_lowercase().as_str() {
        "memory" => Err(fail(format_args!(
            "`{url}` is a store inside one process, so this command would see an empty one; \
             run the repository methods (`verify`, `reconcile`, `migrate_all`) inside the \
             program that owns it, or give a `redb:PATH` or `redis://HOST:PORT` store"
        ))),
        "redb" if !rest.is_empty() && !std::path::Path::new(rest).is_file() => {
            Err(fail(format_args!(
                "there is no redb file at `{rest}`; check the path (this command never creates \
                 a store)"
            )))
        }
        _ => Ok(()),
    }
}

/// `url` with its password replaced by `***`, for reports and checkpoints.
pub use kvmodel_runtime::store::redact_url as redact;

/// What every maintenance command starts with.
pub struct Context {
    /// The schema files as given, joined with `, `.
    pub schema: String,
    /// The store URL as given, its password hidden ([`redact`]): reports
    /// and checkpoints show it.
    pub url: String,
    /// The run-time model.
    pub model: Model,
    /// The store.
    pub store: AnyStore,
    /// Set when the user interrupts (Ctrl-C): commands stop after the page
    /// in progress.
    pub interrupted: Arc<AtomicBool>,
}

impl Context {
    /// A fingerprint of the model (hex), which a saved walk is resumed
    /// under only when it is the same.
    pub fn fingerprint(&self) -> String {
        let text = format!("{:?}", self.model);
        format!(
            "{:016x}",
            kvmodel_runtime::__private::fnv1a(text.as_bytes())
        )
    }

    /// Loads the schema files as one model (exit 2 on errors), lowers it,
    /// opens the store.
    pub async fn open(schemas: &[PathBuf], url: &str) -> Result<Context, Fail> {
        let loaded = kvmodel_build::load_files(schemas).map_err(fail)?;
        let files = loaded.files();
        if loaded.has_errors() {
            eprintln!("{}\n", loaded.render_diagnostics(false));
            return Err(fail(format_args!(
                "`{files}` has errors; fix them before using it on a store"
            )));
        }
        let model = kvmodel_build::runtime_model::lower(&loaded.model)
            .map_err(|e| fail(format_args!("cannot use `{files}`: {e}")))?;
        live_store(url)?;
        let store = AnyStore::open(url)
            .await
            .map_err(|e| fail(format_args!("cannot open the store: {e}")))?;
        let interrupted = Arc::new(AtomicBool::new(false));
        let flag = interrupted.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                flag.store(true, Ordering::SeqCst);
            }
        });
        Ok(Context {
            schema: files,
            url: redact(url),
            model,
            store,
            interrupted,
        })
    }

    /// Whether the user asked to stop.
    pub fn stopped(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// The entities named (all when none is), in schema order; an unknown
    /// name is an error that lists the known ones.
    pub fn entities(&self, names: &[String]) -> Result<Vec<EntityModel>, Fail> {
        for n in names {
            if self.model.entity(n).is_none() {
                return Err(fail(format_args!(
                    "`{}` declares no entity `{n}`; it declares {}",
                    self.schema,
                    self.known()
                )));
            }
        }
        Ok(self
            .model
            .entities
            .iter()
            .filter(|e| names.is_empty() || names.contains(&e.name))
            .cloned()
            .collect())
    }

    /// The entity named `name`; an unknown name is an error that lists the
    /// known ones.
    pub fn entity(&self, name: &str) -> Result<EntityModel, Fail> {
        self.model.entity(name).cloned().ok_or_else(|| {
            fail(format_args!(
                "`{}` declares no entity `{name}`; it declares {}",
                self.schema,
                self.known()
            ))
        })
    }

    /// The entity names, for messages.
    pub fn known(&self) -> String {
        self.model
            .entities
            .iter()
            .map(|e| format!("`{}`", e.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Runs `body` on a runtime and turns its result into an exit code.
pub fn run<F>(body: F) -> Code
where
    F: std::future::Future<Output = Result<Code, Fail>>,
{
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format_args!("cannot start the async runtime: {e}")).0,
    };
    match rt.block_on(body) {
        Ok(code) => code,
        Err(Fail(code)) => code,
    }
}

/// Prints `text` on standard output.
pub fn print(text: &str) -> Result<(), Fail> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| fail(format_args!("cannot write output: {e}")))
}

/// A store error as a failure of the command.
pub fn store_error(e: kvmodel_runtime::Error) -> Fail {
    fail(e)
}

/// Milliseconds of a duration written `250ms`, `2s`, `1m` (or plain
/// milliseconds).
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. `250ms`, `2s` or `1m`"))?;
    let factor = match unit {
        "" | "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        _ => {
            return Err(format!(
                "`{text}` has an unknown unit; use `ms`, `s` or `m`"
            ));
        }
    };
    Ok(n.saturating_mul(factor))
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_shown_without_their_password() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            (
                "redis://ops:s3cret@10.0.0.5:6379/2",
                "redis://ops:***@10.0.0.5:6379/2",
            ),
            ("rediss://:s3cret@host:6380", "rediss://:***@host:6380"),
            ("redis://ops@host:6379", "redis://ops@host:6379"),
            ("redb:/var/lib/a@b.redb", "redb:/var/lib/a@b.redb"),
            (
                "redis+cluster://ops:p@ss@a:1,b:2",
                "redis+cluster://ops:***@a:1,b:2",
            ),
        ] {
            assert_eq!(super::redact(url), shown);
        }
    }
}

/// What the unit tests of the commands share.
#[cfg(test)]
pub mod testing {
    use kvmodel_runtime::__private::Model;
    use kvmodel_runtime::__private::ModelDef;

    /// The schema file at `path` (from the repository's root), lowered as
    /// the commands lower it.
    pub fn model(path: &str) -> Model {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(path);
        let schema = kvmodel_build::load_file(&path).unwrap();
        kvmodel_build::runtime_model::lower(&schema.model).unwrap()
    }

    /// The entity `entity` of the schema file at `path`.
    pub fn def(path: &str, entity: &str) -> ModelDef {
        ModelDef::new(model(path).entity(entity).unwrap().clone())
    }
}
