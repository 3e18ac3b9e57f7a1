//! IR, checks and code generation of kvmodel.
