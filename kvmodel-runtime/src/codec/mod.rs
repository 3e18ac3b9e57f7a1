//! Encodings: keys and sort keys ([`key`]), record envelopes ([`record`]),
//! declarative migration steps ([`migrate`]) and time ([`time`]).

pub mod key;
pub mod migrate;
pub mod record;
pub mod time;
