//! Records a listing or a maintenance walk could not read: reported with
//! their key and error, never a reason to stop.
//!
//! Layer: data (the lowest layer).

use std::fmt;
use std::sync::Arc;

use crate::error::Error;

/// A record that was passed over because it could not be read (bytes that
/// do not decode, a version newer than this code, a record stored under a
/// key that is not its own), with the error that says why.
///
/// Listings ([`Page::skipped`](crate::Page::skipped)) and maintenance
/// reports carry these and go on with the other records. `get` of the key
/// still fails with the same error; the repository's `purge` removes such a
/// record.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The record key.
    pub key: String,
    /// Why it could not be read (shared, so reports stay cheap to clone).
    pub error: Arc<Error>,
}

impl Skipped {
    /// A skipped record.
    pub fn new(key: impl Into<String>, error: Error) -> Self {
        Skipped {
            key: key.into(),
            error: Arc::new(error),
        }
    }
}

/// Equal when the keys and the error messages are.
impl PartialEq for Skipped {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.error.to_string() == other.error.to_string()
    }
}

impl Eq for Skipped {}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

/// The stored form of a report (a saved walk): the key and the message.
#[derive(serde::Serialize, serde::Deserialize)]
struct Wire {
    key: String,
    error: String,
}

impl serde::Serialize for Skipped {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            key: self.key.clone(),
            error: self.error.to_string(),
        }
        .serialize(s)
    }
}

/// A skipped record read back from a saved report keeps its key and
/// message, as a decode error.
impl<'de> serde::Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(d)?;
        let reason = match wire.error.split_once("` could not be decoded: ") {
            Some((_, reason)) => reason.to_owned(),
            None => wire.error,
        };
        let error = Error::decode(&wire.key, reason, None);
        Ok(Skipped::new(wire.key, error))
    }
}
