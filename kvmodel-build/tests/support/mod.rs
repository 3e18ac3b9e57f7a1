//! Helpers of the tests that compile generated code.

pub mod schema_gen;
pub mod scratch;
