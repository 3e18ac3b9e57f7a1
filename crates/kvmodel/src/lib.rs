//! kvmodel: typed repositories for key-value stores.
#![warn(missing_docs)]

pub use kvmodel_runtime::*;
