//! A scratch crate that compiles generated files: each file becomes a module
//! of one library that depends on the workspace's `kvmodel` by path, and one
//! `cargo check` compiles them all. The crate and its target directory live
//! under Cargo's scratch directory for tests, so the dependencies are built
//! once and reused by later runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One generated file to compile, with the schema it came from.
pub struct Unit {
    /// Module name (a plain identifier).
    pub module: String,
    /// The schema text, printed when the module does not compile.
    pub schema: String,
    /// The generated Rust source.
    pub code: String,
}

/// Why a batch did not compile: the failing modules with their schemas and
/// the compiler's messages, or the whole output when no module is named.
#[derive(Debug)]
pub struct Failure(pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Compiles `units` as the modules of a crate called `name`, with every
/// warning denied. `Err` names each module that failed, with its schema.
pub fn check(name: &str, units: &[Unit]) -> Result<(), Failure> {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch");
    let dir = root.join(name);
    let src = dir.join("src");
    if src.exists() {
        std::fs::remove_dir_all(&src).unwrap();
    }
    std::fs::create_dir_all(&src).unwrap();
    let kvmodel = workspace().join("kvmodel");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nkvmodel = {{ path = {:?}, default-features = false, features = [\"derive\", \"zstd\", \"protobuf\"] }}\n\n\
         [workspace]\n",
        kvmodel.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // The workspace's lock file pins every dependency to what is already
    // downloaded, so no network is needed.
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let mut lib = String::from("#![deny(warnings)]\n");
    for u in units {
        std::fs::write(src.join(format!("{}.rs", u.module)), &u.code).unwrap();
        lib.push_str(&format!("pub mod {};\n", u.module));
    }
    std::fs::write(src.join("lib.rs"), lib).unwrap();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["check", "--offline", "--quiet", "--message-format=short"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .unwrap();
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    // `src/m12.rs:3:45: error[E0415]: …` names the module of each message.
    let mut by_module: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in stderr.lines() {
        let module = line
            .strip_prefix("src/")
            .and_then(|l| l.split_once(".rs:"))
            .map(|(m, _)| m);
        if let Some(m) = module.filter(|m| units.iter().any(|u| u.module == *m)) {
            by_module.entry(m).or_default().push(line);
        }
    }
    if by_module.is_empty() {
        return Err(Failure(format!(
            "the scratch crate `{name}` did not compile:\n{stderr}"
        )));
    }
    let mut report = format!(
        "{} of {} generated modules do not compile:\n",
        by_module.len(),
        units.len()
    );
    for (m, lines) in by_module {
        let unit = units.iter().find(|u| u.module == m).unwrap();
        report.push_str(&format!(
            "\n===== module `{m}`, from this schema:\n{}\n----- errors:\n{}\n",
            unit.schema,
            lines.join("\n")
        ));
    }
    Err(Failure(report))
}
