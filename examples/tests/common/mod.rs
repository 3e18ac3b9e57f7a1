//! What the crash tests share.

pub mod writer;
