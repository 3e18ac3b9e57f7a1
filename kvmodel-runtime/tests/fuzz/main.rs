//! Fuzz targets of the runtime's decoders: stored records (envelopes,
//! versions, JSON and MessagePack payloads), key components, sort keys,
//! collection entries, cursors and range requests. Whatever bytes a store
//! hands back, decoding returns a value or an error naming the key, never a
//! panic, and what is encoded decodes to itself.
//!
//! Each target replays its corpus (`tests/fuzz/__fuzz__/<target>/corpus`,
//! crashes found earlier included) and then random inputs for a bounded
//! time; docs/testing.md says how to run one for longer.

mod codec;
mod ranges;

use std::time::Duration;

/// How long each target draws random inputs inside `cargo test`
/// (`BOLERO_RANDOM_TEST_TIME_MS` or `BOLERO_RANDOM_ITERATIONS` override it).
pub const BUDGET: Duration = Duration::from_secs(2);
