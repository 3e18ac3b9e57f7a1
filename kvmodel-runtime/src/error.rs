//! The one error type of kvmodel.

use std::fmt;

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in kvmodel, as one enum.
///
/// Messages are full sentences that say what happened and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The record to update, modify or read for a write does not exist.
    #[error("{entity} `{key}` was not found; create it first or check the key")]
    NotFound {
        /// Entity name.
        entity: &'static str,
        /// The record key that was looked up.
        key: String,
    },
    /// `create` found a record already stored under the same key.
    #[error("{entity} `{key}` already exists; use `update` or `modify` to change it")]
    AlreadyExists {
        /// Entity name.
        entity: &'static str,
        /// The record key.
        key: String,
    },
    /// A unique index value is already claimed by another record.
    #[error(
        "{entity}.{index} must be unique, but `{value}` is already taken by another record; \
         choose another value or update the record that holds it"
    )]
    UniqueViolation {
        /// Entity name.
        entity: &'static str,
        /// Index name.
        index: &'static str,
        /// The (normalized) value that was already claimed.
        value: String,
    },
    /// Optimistic retries were exhausted because other writers kept changing the record.
    #[error(
        "{entity} `{key}` kept changing under concurrent writers and the write gave up after \
         {attempts} attempts; retry later or reduce contention on this record"
    )]
    Conflict {
        /// Entity name.
        entity: &'static str,
        /// The record key.
        key: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// A stored record was written by a newer version of the code.
    #[error(
        "the record at `{key}` has version {found}, but this code supports versions up to \
         {supported}; deploy the newer code before reading it"
    )]
    FutureVersion {
        /// The record key.
        key: String,
        /// Version found in the stored bytes.
        found: u32,
        /// Highest version this code reads.
        supported: u32,
    },
    /// Stored bytes could not be decoded.
    #[error("the record at `{key}` could not be decoded: {reason}")]
    Decode {
        /// The key whose value failed to decode.
        key: String,
        /// What was wrong with it.
        reason: String,
        /// The underlying decoder error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A value could not be encoded.
    #[error("a value for `{key}` could not be encoded: {reason}")]
    Encode {
        /// The key being written.
        key: String,
        /// What went wrong.
        reason: String,
    },
    /// A key or key component was not acceptable.
    #[error("invalid key `{key}`: {reason}")]
    InvalidKey {
        /// The key, or as much of it as is known.
        key: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A value exceeds what the store accepts.
    #[error(
        "the value for `{key}` is {size} bytes, more than the limit of {limit} bytes; store large blobs elsewhere and keep a reference"
    )]
    ValueTooLarge {
        /// The key being written.
        key: String,
        /// Encoded size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// A cursor passed to a listing was not produced by that listing.
    #[error(
        "the pagination cursor is not valid for this listing: {reason}; start again without a cursor"
    )]
    InvalidCursor {
        /// Why it was rejected.
        reason: String,
    },
    /// An operation in a batch does not fit the value stored at its key.
    #[error("the batch could not be applied to `{key}`: {reason}; nothing was written")]
    InvalidBatch {
        /// The key of the offending operation.
        key: String,
        /// Why it failed.
        reason: String,
    },
    /// The storage backend failed.
    #[error("the {backend} store failed while trying to {context}: {source}")]
    Backend {
        /// Backend name (`memory`, `redb`, `redis`, ...).
        backend: &'static str,
        /// What kvmodel was doing.
        context: String,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// Wraps a backend error with what was being attempted.
    pub fn backend(
        backend: &'static str,
        context: impl fmt::Display,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Backend {
            backend,
            context: context.to_string(),
            source: source.into(),
        }
    }

    /// A decode error for the value at `key`.
    pub fn decode(
        key: impl Into<String>,
        reason: impl fmt::Display,
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Decode {
            key: key.into(),
            reason: reason.to_string(),
            source,
        }
    }
}
