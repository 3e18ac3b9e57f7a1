//! Commands; their exit codes are [`Code`]'s, and the help texts list
//! them from there.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use kvmodel_build::{
    Project,
    keys::{Format, Store},
};

use crate::exit::{self, Code, Fail, fail};

/// Typed repositories for key-value stores, from a declared data model.
#[derive(Debug, Parser)]
///
/// The exit codes of the help texts are written from [`Code`] by
/// [`command`].
#[command(name = "kvmodel", version, about, long_about = None)]
struct Cli {
    /// When to color diagnostics.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    color: Color,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

/// The store `kvmodel keys` shows the layout and costs of.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum KeysStore {
    Redis,
    Dynamodb,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum KeysFormat {
    Text,
    Markdown,
    Mermaid,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate and lint schema files; report every problem with file:line:col.
    Check {
        /// Schema files and Rust source files (`.rs`) of `#[derive(KvEntity)]`
        /// structs, in any mix, read as one model.
        #[arg(required = true)]
        schemas: Vec<PathBuf>,
        /// Treat lint warnings as problems (exit 1); information (`I…`) never is.
        #[arg(long)]
        deny_warnings: bool,
    },
    /// Write the Rust declarations (#[derive(KvEntity)] structs) of schema files.
    Generate {
        /// Schema files, with Rust source files (`.rs`) of
        /// `#[derive(KvEntity)]` structs their entities relate to (only the
        /// schema files are written).
        #[arg(required = true)]
        schemas: Vec<PathBuf>,
        /// Output: a `.rs` file (one schema) or a directory (one file per
        /// schema); `-` or no `-o` prints to standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Write nothing; exit 1 if the files on disk differ from what would be written.
        #[arg(long)]
        check: bool,
    },
    /// Print the fully expanded repository code of schema files.
    Expand {
        /// Schema files and Rust source files (`.rs`) of
        /// `#[derive(KvEntity)]` structs, in any mix, read as one model.
        #[arg(required = true)]
        schemas: Vec<PathBuf>,
    },
    /// Compare two versions of a schema: safe, needs migration or breaking,
    /// with reasons (exit 1 when breaking).
    ///
    /// Either side may be a schema or a Rust source file (`.rs`) of
    /// `#[derive(KvEntity)]` structs and the `KvEnum` enums they hold, such as
    /// the deployed version saved with `git show v1:src/model.rs > old.rs`,
    /// or a directory: its schema files (`.yaml`, `.yml`) and Rust source
    /// files, subdirectories included, read as one model (a model split over
    /// files, such as the deployed tree saved with
    /// `git archive v1 src | tar -x -C old`).
    Diff {
        /// The schema as deployed (a file or a directory).
        old: PathBuf,
        /// The schema as changed (a file or a directory).
        new: PathBuf,
    },
    /// Check a live store against a schema: every record's claims, index
    /// entries and counters, and derived entries no record owns (exit 1 on
    /// drift).
    Verify(crate::ops::VerifyArgs),
    /// Repair what `verify` finds, and say what changed (exit 1 when
    /// something needs a person: a value two records claim, a record that
    /// cannot be read).
    Reconcile(crate::ops::ReconcileArgs),
    /// Rewrite records stored at an older version and backfill what later
    /// versions added, under the namespace's migration lease, recording the
    /// run in the store's ledger; `--status` shows both.
    Migrate(crate::ops::MigrateArgs),
    /// Look at live data through a schema: records by key, a unique lookup,
    /// a page of an index or relation, a counter, as JSON.
    Inspect(crate::ops::InspectArgs),
    /// Follow an entity's change feed (`feed:`), one JSON line per change:
    /// its position, commit, time, key, event and the record before and
    /// after.
    Tail(crate::ops::TailArgs),
    /// Remove records that cannot be read (bytes that do not decode,
    /// another key's record), with the claims, index and relation members
    /// and counter amounts found to point to them; a record that reads is
    /// refused (exit 3): delete it through the program.
    Purge(crate::ops::PurgeArgs),
    /// Print the Redis ACL rules (`ACL SETUSER` lines) of least-privilege
    /// users for the schemas' namespaces: a reader, a writer and an operator
    /// for the maintenance commands.
    ///
    /// Each line grants the keys of the namespaces (read-only for a reader)
    /// and exactly the commands kvmodel sends, its scripts' included. The
    /// users get no password: add `>PASSWORD` to each line before running it
    /// (`grep -v '^#' FILE | redis-cli` runs the lines of FILE), then
    /// connect with `redis://USER:PASSWORD@HOST:PORT`.
    Acl(crate::acl::AclArgs),
    /// Print the key layout and the cost of every access pattern.
    Keys {
        /// Schema files and Rust source files (`.rs`) of `#[derive(KvEntity)]`
        /// structs, in any mix, read as one model.
        #[arg(required = true)]
        schemas: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = KeysFormat::Text)]
        format: KeysFormat,
        /// The store whose layout and costs to show: redis (Redis and Redis
        /// Cluster keys and round trips; redb and memory make as many
        /// in-process calls unless noted) or dynamodb (the items of each key,
        /// and the requests, capacity units and transaction actions of each
        /// access pattern). The Mermaid diagram is the same for both.
        #[arg(long, value_enum, default_value_t = KeysStore::Redis)]
        store: KeysStore,
    },
    /// Print the .proto (proto3) of the entities encoded with protobuf, so
    /// that services in other languages can read their records.
    Proto {
        /// Schema files and Rust source files (`.rs`) of `#[derive(KvEntity)]`
        /// structs, in any mix, read as one model.
        #[arg(required = true)]
        schemas: Vec<PathBuf>,
    },
}

/// Loads the files as one project (schema files and Rust source files of
/// derived entities, in any mix); prints diagnostics; fails with 1 on
/// errors.
fn load_all(paths: &[PathBuf], color: bool, deny_warnings: bool) -> Result<Project, Fail> {
    let project = kvmodel_build::load_files(paths).map_err(fail)?;
    let rendered = project.render_diagnostics(color);
    if !rendered.is_empty() {
        eprintln!("{rendered}\n");
    }
    let errors = project.count(kvmodel_build::Severity::Error);
    let warnings = project.count(kvmodel_build::Severity::Warning);
    if errors > 0 || warnings > 0 {
        eprintln!("kvmodel: {errors} error(s), {warnings} warning(s)");
    }
    if errors > 0 || (deny_warnings && warnings > 0) {
        return Err(Fail(Code::Problems));
    }
    Ok(project)
}

/// The files of one side of `diff`: `path` itself, or, for a directory,
/// every schema file (`.yaml`, `.yml`) and Rust source file (`.rs`) under
/// it in name order (hidden directories and `target` left out).
fn model_files(path: &Path) -> Result<Vec<PathBuf>, Fail> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?;
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    walk(&path, out)?;
                }
            } else if [".yaml", ".yml", ".rs"].iter().any(|x| name.ends_with(x)) {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(path, &mut files).map_err(|e| {
        fail(format_args!(
            "cannot read the directory `{}`: {e}",
            path.display()
        ))
    })?;
    if files.is_empty() {
        return Err(fail(format_args!(
            "`{}` holds no schema file (`.yaml`, `.yml`) and no Rust source file (`.rs`)",
            path.display()
        )));
    }
    Ok(files)
}

/// An exit code as the command's result.
fn exit(code: Code) -> Result<(), Fail> {
    match code {
        Code::Success => Ok(()),
        code => Err(Fail(code)),
    }
}

fn write_stdout(text: &str) -> Result<(), Fail> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| fail(format_args!("cannot write output: {e}")))
}

fn generate(
    schemas: &[PathBuf],
    output: Option<&Path>,
    check: bool,
    color: bool,
) -> Result<(), Fail> {
    // Rust source declares its own structs; the schema files' are written,
    // with what the other files add to them (dependents of their relations).
    let loaded: Vec<_> = load_all(schemas, color, false)?
        .schemas
        .into_iter()
        .filter(|s| !kvmodel_build::is_rust_source(Path::new(&s.file)))
        .collect();
    if loaded.is_empty() {
        return Err(fail(format_args!(
            "every file given is Rust source, which declares its structs itself; give the schema files to write"
        )));
    }
    let files = kvmodel_build::generate(&loaded).map_err(|e| {
        eprintln!("{e}");
        Fail(Code::Problems)
    })?;
    let Some(output) = output.filter(|o| o.as_os_str() != "-") else {
        if check {
            return Err(fail(format_args!(
                "`--check` compares with files on disk; pass `-o FILE|DIR`"
            )));
        }
        let text: Vec<&str> = files.iter().map(|f| f.contents.as_str()).collect();
        return write_stdout(&text.join("\n"));
    };
    let to_file = output.extension().is_some_and(|e| e == "rs");
    if to_file && files.len() != 1 {
        return Err(fail(format_args!(
            "`{}` is a single file, but {} schemas were given; pass a directory",
            output.display(),
            files.len()
        )));
    }
    let mut stale = Vec::new();
    for f in &files {
        let path = if to_file {
            output.to_owned()
        } else {
            output.join(&f.name)
        };
        if check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(f.contents.as_str()) {
                stale.push(path);
            }
        } else {
            let wrote = kvmodel_build::write_if_changed(&path, &f.contents)
                .map_err(|e| fail(format_args!("cannot write `{}`: {e}", path.display())))?;
            eprintln!(
                "{} {}",
                if wrote { "wrote" } else { "unchanged" },
                path.display()
            );
        }
    }
    if !stale.is_empty() {
        for p in &stale {
            eprintln!(
                "`{}` is out of date; run `kvmodel generate` without `--check` to update it",
                p.display()
            );
        }
        return Err(Fail(Code::Problems));
    }
    Ok(())
}

fn execute(cli: Cli) -> Result<(), Fail> {
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal(),
    };
    match cli.command {
        Command::Check {
            schemas,
            deny_warnings,
        } => {
            let loaded = load_all(&schemas, color, deny_warnings)?;
            for s in &loaded.schemas {
                let counters = match s.model.tallies.len() {
                    0 => String::new(),
                    n => format!(", {n} standalone counters"),
                };
                eprintln!(
                    "ok {} ({} entities{counters})",
                    s.file,
                    s.model.entities.len()
                );
            }
            Ok(())
        }
        Command::Generate {
            schemas,
            output,
            check,
        } => generate(&schemas, output.as_deref(), check, color),
        Command::Expand { schemas } => {
            for s in load_all(&schemas, color, false)?.schemas {
                let text = kvmodel_build::expand(&s.model).map_err(|e| {
                    fail(format_args!(
                        "internal error while expanding {}: {e}",
                        s.file
                    ))
                })?;
                write_stdout(&text)?;
            }
            Ok(())
        }
        Command::Diff { old, new } => {
            let old = load_all(&model_files(&old)?, color, false)?;
            let new = load_all(&model_files(&new)?, color, false)?;
            let changes = kvmodel_build::diff::diff(&old.model, &new.model);
            write_stdout(&kvmodel_build::diff::report(&changes))?;
            if changes
                .iter()
                .any(|c| c.impact == kvmodel_build::diff::Impact::Breaking)
            {
                return Err(Fail(Code::Problems));
            }
            Ok(())
        }
        Command::Verify(args) => exit(crate::ops::run(crate::ops::verify(args))),
        Command::Reconcile(args) => exit(crate::ops::run(crate::ops::reconcile(args))),
        Command::Migrate(args) => exit(crate::ops::run(crate::ops::migrate(args))),
        Command::Inspect(args) => exit(crate::ops::run(crate::ops::inspect(args))),
        Command::Tail(args) => exit(crate::ops::run(crate::ops::tail(args))),
        Command::Purge(args) => exit(crate::ops::run(crate::ops::purge(args))),
        Command::Acl(args) => {
            if let Some(user) = &args.user {
                if user.is_empty() || user.contains(|c: char| c.is_whitespace() || c == '"') {
                    return Err(fail(format_args!(
                        "`{user}` cannot name a Redis user: write it without spaces or quotes"
                    )));
                }
            }
            let loaded = load_all(&args.schemas, color, false)?.schemas;
            let namespaces = crate::acl::namespaces(&loaded);
            if namespaces.is_empty() {
                return Err(fail(format_args!(
                    "the schemas declare no entity with a key, so no namespace to grant"
                )));
            }
            let files: Vec<String> = loaded.iter().map(|s| s.file.clone()).collect();
            write_stdout(&crate::acl::report(
                &files,
                &namespaces,
                &args.roles,
                args.user.as_deref(),
                crate::acl::Needs {
                    cluster: args.cluster,
                    feeds: crate::acl::feeds(&loaded),
                },
            ))
        }
        Command::Keys {
            schemas,
            format,
            store,
        } => {
            let format = match format {
                KeysFormat::Text => Format::Text,
                KeysFormat::Markdown => Format::Markdown,
                KeysFormat::Mermaid => Format::Mermaid,
            };
            for s in load_all(&schemas, color, false)?.schemas {
                write_stdout(&match store {
                    KeysStore::Redis => kvmodel_build::keys::report(&s.model, format),
                    KeysStore::Dynamodb => {
                        kvmodel_build::keys::report_for(&s.model, format, Store::Dynamodb)
                    }
                })?;
            }
            Ok(())
        }
        Command::Proto { schemas } => {
            for s in load_all(&schemas, color, false)?.schemas {
                write_stdout(&kvmodel_build::proto::print(&s.model))?;
            }
            Ok(())
        }
    }
}

/// The command line's definition, with the exit codes of [`Code`] in its
/// help texts.
pub fn command() -> clap::Command {
    Cli::command()
        .after_help(exit::general_help())
        .mut_subcommand("purge", |c| c.after_help(exit::purge_help()))
        .mut_subcommand("acl", |c| c.after_help(exit::acl_help()))
}

/// Parses the command line and runs the command.
pub fn run() -> ExitCode {
    let cli = match command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Code::Failed
            } else {
                Code::Success
            }
            .into();
        }
    };
    match execute(cli) {
        Ok(()) => Code::Success.into(),
        Err(Fail(code)) => code.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every exit code a help text names is one of [`Code`]'s, and the
    /// top-level help lists them all.
    #[test]
    fn help_texts_name_only_the_exit_codes() {
        let numbers: Vec<u8> = Code::ALL.iter().map(|c| c.number()).collect();
        let mut root = command();
        let mut texts = vec![root.render_long_help().to_string()];
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat(&texts[0]).contains(&exit::general_help()),
            "{}",
            texts[0]
        );
        for sub in root.get_subcommands_mut() {
            texts.push(sub.render_long_help().to_string());
        }
        for text in &texts {
            let flat = flat(text);
            for (at, _) in flat.match_indices("exit ") {
                let digits: String = flat[at + 5..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(n) = digits.parse::<u8>() {
                    assert!(numbers.contains(&n), "exit {n} is no code: {flat}");
                }
            }
            if let Some(at) = flat.find("Exit codes:") {
                let list = &flat[at + "Exit codes:".len()..];
                // `, N meaning`: a part that starts with no number goes on
                // the meaning before it.
                let listed: Vec<u8> = list
                    .split(", ")
                    .filter_map(|part| part.trim().split(' ').next()?.parse().ok())
                    .collect();
                assert!(listed.len() >= 3, "{flat}");
                for n in listed {
                    assert!(numbers.contains(&n), "{n} is no code: {flat}");
                }
            }
        }
    }
}
