//! The `kvmodel` command. Argument parsing and file I/O live here; the work
//! is `kvmodel_build`'s.

#![warn(missing_docs)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
