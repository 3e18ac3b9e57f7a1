//! Encodings: keys and sort keys ([`key`]), record envelopes ([`record`]),
//! what an entity does to its records before they are stored ([`storage`],
//! [`compress`]),
//! protobuf records ([`proto`]),
//! declarative migration steps ([`migrate`]), generic values ([`value`])
//! and byte positions as text ([`hex`]). Timestamps and dates live below
//! the codec, in the crate's `time` module, so that [`Error`](crate::Error)
//! can name them without importing any encoding.

pub mod compress;
mod finite;
pub mod hex;
pub mod key;
pub mod migrate;
pub mod proto;
pub mod record;
pub mod scalar;
pub mod storage;
pub mod value;
