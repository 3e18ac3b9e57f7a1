//! See `benches/compare.rs`.
