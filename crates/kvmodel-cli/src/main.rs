//! The `kvmodel` command.
fn main() {}
