//! The declared form: a model as Rust declarations annotated with
//! `#[derive(KvEntity)]` and `#[kv(…)]`, as `kvmodel generate` writes it
//! ([`print()`]) and as it is read back ([`read()`]), side by side. The
//! round-trip test `read(print(model)) == model`, over every schema, keeps
//! the printer, the reader and the YAML front-end from drifting.

mod clippy;
mod print;
mod read;

pub use print::{default_fn_name, print};
pub use read::read;
