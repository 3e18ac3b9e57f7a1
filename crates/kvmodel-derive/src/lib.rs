//! `#[derive(KvEntity)]` for kvmodel.
