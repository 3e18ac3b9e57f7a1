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
    #[error("{entity} `{}` was not found; create it first or check the key", short(.key))]
    NotFound {
        /// Entity name.
        entity: &'static str,
        /// The record key that was looked up.
        key: String,
    },
    /// `create` found a record already stored under the same key.
    #[error(
        "{entity} `{}` already exists; use `update` or `modify` to change it",
        short(.key)
    )]
    AlreadyExists {
        /// Entity name.
        entity: &'static str,
        /// The record key.
        key: String,
    },
    /// A unique index value is already claimed by another record.
    #[error(
        "{entity}.{index} must be unique, but `{}` is already taken by another record; \
         choose another value or update the record that holds it",
        short(.value)
    )]
    UniqueViolation {
        /// Entity name.
        entity: &'static str,
        /// Index name.
        index: &'static str,
        /// The (normalized) value that was already claimed.
        value: String,
    },
    /// A child record names a parent that does not exist, in a relation
    /// whose `on_delete` is `restrict` or `cascade`; nothing was written.
    #[error(
        "{entity} names in relation `{relation}` the {parent_entity} `{}`, which does not exist; \
         create the {parent_entity} first (the relation is `on_delete: {on_delete}`, so a child \
         may only name a parent that exists). Nothing was written",
        short(.parent)
    )]
    MissingParent {
        /// The child entity.
        entity: &'static str,
        /// The relation.
        relation: &'static str,
        /// The parent entity.
        parent_entity: &'static str,
        /// The parent's record key.
        parent: String,
        /// The relation's action (`restrict` or `cascade`).
        on_delete: &'static str,
    },
    /// A record names itself as its parent in a relation whose `on_delete`
    /// is `restrict` or `cascade` (the same entity, the same key); nothing
    /// was written.
    #[error(
        "{entity} `{}` names itself in relation `{relation}`, which is `on_delete: {on_delete}`; \
         a record cannot be its own parent (its delete would wait for itself): name another \
         {entity} as its parent. Nothing was written",
        short(.key)
    )]
    OwnParent {
        /// The entity.
        entity: &'static str,
        /// The record's key.
        key: String,
        /// The relation.
        relation: &'static str,
        /// The relation's action (`restrict` or `cascade`).
        on_delete: &'static str,
    },
    /// A parent still has children in a relation declared
    /// `on_delete: restrict`; nothing was deleted.
    #[error(
        "{entity} `{}` still has {child} records in their relation `{relation}`, which is \
         `on_delete: restrict`; delete or move those {child} records first. Nothing was deleted",
        short(.key)
    )]
    Restricted {
        /// The parent entity.
        entity: &'static str,
        /// The parent's record key.
        key: String,
        /// The child entity.
        child: &'static str,
        /// The child's relation to the parent.
        relation: &'static str,
    },
    /// Optimistic retries were exhausted because other writers kept changing the record.
    #[error(
        "{entity} `{}` kept changing under concurrent writers and the write gave up after \
         {attempts} attempts; retry later or reduce contention on this record",
        short(.key)
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
        "the record at `{}` has version {found}, but this code supports versions up to \
         {supported}; deploy the newer code before reading it",
        short(.key)
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
    #[error("the record at `{}` could not be decoded: {reason}", short(.key))]
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
    #[error("a value for `{}` could not be encoded: {reason}", short(.key))]
    Encode {
        /// The key being written.
        key: String,
        /// What went wrong.
        reason: String,
    },
    /// A key or key component was not acceptable.
    #[error("invalid key `{}`: {reason}", short(.key))]
    InvalidKey {
        /// The key, or as much of it as is known.
        key: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A record is larger, encoded and before compression, than its
    /// entity's `max_size` (or the 64 MiB any record may have); nothing was
    /// written.
    #[error(
        "the {entity} record at `{}` is {size} bytes encoded, more than its limit of {limit} \
         bytes, so nothing was written; keep large parts elsewhere with a reference to them, \
         or raise the entity's `max_size`",
        short(.key)
    )]
    ValueTooLarge {
        /// Entity name.
        entity: &'static str,
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
    /// A record's expiry field names a time that is not after the store's
    /// clock; nothing was written.
    #[error(
        "the {entity} record at `{}` would expire at {at} by its `{field}`, which is not after \
         the store's clock ({now}), so nothing was written; set a later time, clear the field, \
         or delete the record",
        short(.key)
    )]
    ExpiryPassed {
        /// Entity name.
        entity: &'static str,
        /// The key being written.
        key: String,
        /// The expiry field.
        field: String,
        /// The time the field names.
        at: crate::time::Timestamp,
        /// The store's clock when the write was planned.
        now: crate::time::Timestamp,
    },
    /// An operation in a batch does not fit the value stored at its key.
    #[error(
        "the batch could not be applied to `{}`: {reason}; nothing was written",
        short(.key)
    )]
    InvalidBatch {
        /// The key of the offending operation.
        key: String,
        /// Why it failed.
        reason: String,
    },
    /// A stored value read as a counter is not one: a counter holds a
    /// canonical 64-bit decimal integer. Only a read fails; nothing is written.
    #[error(
        "the value at `{}` is not a counter (a 64-bit decimal integer), so it cannot be read as \
         one; check what else writes to this key",
        short(.key)
    )]
    NotACounter {
        /// The key that was read.
        key: String,
    },
    /// A store URL could not be used (see `AnyStore::open`).
    #[error("the store URL `{}` cannot be used: {reason}", short(&redact_url(.url)))]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it and what to write instead.
        reason: String,
    },
    /// A write was sent but its reply was lost (a response timeout, or the
    /// connection dropped after sending): the batch may have been applied,
    /// and after a timeout it may still be applied later. Read the data back
    /// before acting on it. What a retry of a generated method does then:
    /// `create` fails with `AlreadyExists` if the first attempt was applied;
    /// `update` writes the same record again (harmless); `modify` applies its
    /// closure to the record as stored, so a change that was applied is
    /// applied twice (re-read and decide first); `delete` returns `false` if
    /// the first attempt deleted the record.
    #[error(
        "the {backend} store did not confirm the write, so it may have been applied (or may \
         still be): {source}; read the data back before retrying it"
    )]
    OutcomeUnknown {
        /// Backend name.
        backend: &'static str,
        /// Why the reply was lost.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// One record of a bulk write (`create_many`) could not be written, so
    /// none was: the whole batch is one commit.
    #[error(
        "the record at index {index} of the batch (`{}`) could not be written, so nothing \
         in the batch was: {source}",
        short(.key)
    )]
    Bulk {
        /// The record's position in the slice passed in.
        index: usize,
        /// The record's key.
        key: String,
        /// Why that record failed (`AlreadyExists`, `UniqueViolation`, …).
        #[source]
        source: Box<Error>,
    },
    /// An index, relation or counter added after the first version is
    /// write-only: records older than the version that added it lack its
    /// entries until a migration rewrites them, so a read would leave them
    /// out. Nothing was read.
    #[error(
        "{entity}.{name} ({what}) was added in version {since}, but the store holds records \
         older than that (it is known complete through version {complete}), whose entries \
         are not in it yet, so reading it would leave them out; run `kvmodel migrate` (or the \
         repository's `migrate_all`) to backfill it, or opt in to partial results with \
         `with_partial_reads()`"
    )]
    NotReadable {
        /// Entity name.
        entity: String,
        /// `index`, `unique index`, `relation` or `counter`.
        what: &'static str,
        /// Its name.
        name: String,
        /// The version that added it.
        since: u32,
        /// The version every record was known to be at or past.
        complete: u32,
    },
    /// A change feed reader asked for entries after `position`, but the
    /// feed's retention has removed entries up to `trimmed`: the reader
    /// would miss changes, so it gets this error instead of a gap.
    #[error(
        "the change feed `{feed}` no longer holds the entries after `{position}`: its \
         retention removed them up to `{trimmed}`; resynchronise the consumer from the \
         records, then follow the feed from `Position::Now`, or keep the feed longer"
    )]
    FeedBehind {
        /// The feed's key.
        feed: String,
        /// The position the reader resumed after.
        position: String,
        /// The newest position retention removed.
        trimmed: String,
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

/// The longest part of a key (or value) an error message shows, in bytes.
const SHOWN: usize = 200;

/// `url` with the password of its user part (`redis://USER:PASSWORD@…`,
/// `redis+cluster://USER:PASSWORD@HOST:PORT,…`), and of a `pass=` or
/// `password=` query parameter, replaced by `***`: a store URL as errors,
/// reports, checkpoints and logs may show it.
///
/// ```
/// use kvmodel_runtime::store::redact_url;
/// assert_eq!(redact_url("redis://ops:s3cret@10.0.0.5:6379/2"), "redis://ops:***@10.0.0.5:6379/2");
/// assert_eq!(redact_url("redb:data/app.redb"), "redb:data/app.redb");
/// assert_eq!(redact_url("redis://ops:a/b?c@h:1"), "redis://ops:***@h:1");
/// assert_eq!(
///     redact_url("redis+unix:///run/redis.sock?user=ops&pass=s3cret"),
///     "redis+unix:///run/redis.sock?user=ops&pass=***"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The user part ends at the last `@`: a password may hold `/`, `?` or
    // `@` itself (unescaped, which the URL parser then refuses, and the
    // refusal names the URL).
    let rest = match rest.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split_once(':').map_or(user, |(n, _)| n);
            format!("{name}:***@{host}")
        }
        _ => rest.to_owned(),
    };
    // A password in the query (`redis+unix:///s.sock?user=u&pass=…`).
    let rest = match rest.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _))
                        if k.eq_ignore_ascii_case("pass") || k.eq_ignore_ascii_case("password") =>
                    {
                        format!("{k}=***")
                    }
                    _ => p.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => rest,
    };
    format!("{scheme}://{rest}")
}

/// `text` for a message: whole when short, else its first [`SHOWN`] bytes
/// (cut at a character boundary) and its length. Every message that names a
/// key goes through it, so a huge key never makes a huge message.
fn short(text: &str) -> Short<'_> {
    Short(text)
}

struct Short<'a>(&'a str);

impl fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        if text.len() <= SHOWN {
            return f.write_str(text);
        }
        let mut end = SHOWN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        write!(f, "{}… ({} bytes)", &text[..end], text.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_short_keys_whole_and_long_keys_cut() {
        let err = Error::InvalidKey {
            key: "shop:user:1".into(),
            reason: "it is bad".into(),
        };
        assert_eq!(err.to_string(), "invalid key `shop:user:1`: it is bad");
        let huge = "é".repeat(1 << 20);
        let errors = [
            Error::NotFound {
                entity: "User",
                key: huge.clone(),
            },
            Error::AlreadyExists {
                entity: "User",
                key: huge.clone(),
            },
            Error::UniqueViolation {
                entity: "User",
                index: "by_email",
                value: huge.clone(),
            },
            Error::Conflict {
                entity: "User",
                key: huge.clone(),
                attempts: 3,
            },
            Error::MissingParent {
                entity: "Post",
                relation: "author",
                parent_entity: "Author",
                parent: huge.clone(),
                on_delete: "cascade",
            },
            Error::OwnParent {
                entity: "Node",
                key: huge.clone(),
                relation: "parent",
                on_delete: "cascade",
            },
            Error::Restricted {
                entity: "Author",
                key: huge.clone(),
                child: "Post",
                relation: "author",
            },
            Error::FutureVersion {
                key: huge.clone(),
                found: 3,
                supported: 2,
            },
            Error::decode(huge.clone(), "bad", None),
            Error::Encode {
                key: huge.clone(),
                reason: "bad".into(),
            },
            Error::InvalidKey {
                key: huge.clone(),
                reason: "bad".into(),
            },
            Error::ValueTooLarge {
                entity: "User",
                key: huge.clone(),
                size: 1,
                limit: 0,
            },
            Error::InvalidBatch {
                key: huge.clone(),
                reason: "bad".into(),
            },
            Error::NotACounter { key: huge.clone() },
            Error::ExpiryPassed {
                entity: "Link",
                key: huge.clone(),
                field: "expires_at".into(),
                at: crate::time::Timestamp::EPOCH,
                now: crate::time::Timestamp::EPOCH,
            },
            Error::InvalidUrl {
                url: huge.clone(),
                reason: "bad".into(),
            },
        ];
        for err in errors {
            let text = err.to_string();
            assert!(text.len() < 600, "{} bytes", text.len());
            assert!(text.contains("… (2097152 bytes)"), "{text}");
        }
    }
}
