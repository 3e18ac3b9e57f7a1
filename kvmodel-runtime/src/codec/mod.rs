//! Encodings: keys and sort keys ([`key`]), record envelopes ([`record`]),
//! what an entity does to its records before they are stored ([`storage`],
//! [`compress`]),
//! protobuf records ([`proto`]),
//! declarative migration steps ([`migrate`]), generic values ([`value`]),
//! time ([`time`]) and byte positions as text ([`hex`]).

pub mod compress;
mod finite;
pub mod hex;
pub mod key;
pub mod migrate;
pub mod proto;
pub mod record;
pub mod storage;
pub mod time;
pub mod value;
