//! The `kvmodel` command. Argument parsing and file I/O live here; the work
//! is `kvmodel_build`'s and, on live stores, `kvmodel_runtime`'s.

#![warn(missing_docs)]

mod acl;
mod cli;
mod exit;
mod ops;

fn main() -> std::process::ExitCode {
    cli::run()
}
