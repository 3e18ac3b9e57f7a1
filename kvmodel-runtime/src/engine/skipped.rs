//! Records a listing or a maintenance walk could not read: reported with
//! their key and error, never a reason to stop.

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
