//! What generated code uses. Not a public API: it may change in any release.

pub use crate::codec::compress::Codec;
pub use crate::codec::key::Space;
pub use crate::codec::key::{Derived, KeyBuilder, KeyMatch, KeyPart, Segments, SortPart};
pub use crate::codec::migrate;
pub use crate::codec::proto::{ProtoEnum, ProtoField, ProtoKind, ProtoMessage, ProtoShape};
pub use crate::codec::record::Encoding;
pub use crate::codec::storage::Storage;
pub use crate::codec::time::{Date, Timestamp};
pub use crate::engine::entity::{Entity, EntityMeta, Facts, Ttl, Versioned};
pub use crate::engine::links::{End, KeyArgs, Link};
pub use crate::engine::maintenance::{Drift, Progress};
pub use crate::engine::on_delete::{
    DependentFact, Kind, OnDelete, ParentFact, names_dependent, on_delete_of, same,
};
pub use crate::engine::page::ListRequest;
pub use crate::engine::repo::Engine;
pub use crate::engine::state::ReadGate;
pub use crate::{Error, Page, PageRequest, Result, Store};
pub use serde;
pub use serde_json;
pub use uuid::Uuid;

/// `normalize = "lowercase"`.
pub fn lowercase(s: &str) -> String {
    s.to_lowercase()
}

/// An order-preserving sort key of one value.
pub fn sort_of<P: SortPart + ?Sized>(p: &P) -> Vec<u8> {
    crate::codec::key::sort_key(p)
}

pub use crate::codec::key::sort_is;

/// The hour bucket of an instant, as a key component: `2026-11-22T05`
/// (a four-digit year always: timestamps hold years 0000–9999).
pub fn hour(t: Timestamp) -> String {
    format!("{}T{:02}", t.date(), t.hour())
}

/// The day bucket of an instant.
pub fn day(t: Timestamp) -> Date {
    t.date()
}

/// The month bucket of an instant or date, as a key component: `2026-11`.
pub fn month(d: Date) -> String {
    format!("{:04}-{:02}", d.year(), d.month())
}

/// The sum contribution of an integer field, exactly: every integer type a
/// sum accepts fits in an `i128`. Writes refuse a contribution outside the
/// range of a 64-bit counter rather than saturate it.
pub fn sum_i64<T: Into<i128>>(v: T) -> i128 {
    v.into()
}

/// The error of a record written at a version with no migration path.
pub fn no_migration(key: &str, version: u32, current: u32) -> Error {
    Error::decode(
        key,
        format!("it is at version {version}, and no migration to version {current} is declared"),
        None,
    )
}

/// Converts a migrated value into the target type.
pub fn from_value<T: serde::de::DeserializeOwned>(key: &str, v: serde_json::Value) -> Result<T> {
    crate::codec::record::from_value(key, v)
}

/// Expands to nothing in a build that reads and writes zstd records, and to
/// a compile error naming the feature otherwise: the generated code of an
/// entity that compresses with zstd invokes it.
#[cfg(feature = "zstd")]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_zstd {
    ($entity:literal) => {};
}

/// Expands to nothing in a build that reads and writes zstd records, and to
/// a compile error naming the feature otherwise: the generated code of an
/// entity that compresses with zstd invokes it.
#[cfg(not(feature = "zstd"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_zstd {
    ($entity:literal) => {
        ::core::compile_error!(::core::concat!(
            "`",
            $entity,
            "` compresses its records with zstd, which needs kvmodel's `zstd` feature: enable \
             it (`kvmodel = { version = \"…\", features = [\"zstd\"] }`) or use `codec = \"lz4\"`"
        ));
    };
}

pub use crate::__kvmodel_require_zstd as require_zstd;

/// Expands to nothing in a build that reads and writes protobuf records,
/// and to a compile error naming the feature otherwise: the generated code
/// of a protobuf-encoded entity invokes it.
#[cfg(feature = "protobuf")]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_protobuf {
    ($entity:literal) => {};
}

/// Expands to nothing in a build that reads and writes protobuf records,
/// and to a compile error naming the feature otherwise: the generated code
/// of a protobuf-encoded entity invokes it.
#[cfg(not(feature = "protobuf"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_protobuf {
    ($entity:literal) => {
        ::core::compile_error!(::core::concat!(
            "`",
            $entity,
            "` is encoded with protobuf, which needs kvmodel's `protobuf` feature: enable it \
             (`kvmodel = { version = \"…\", features = [\"protobuf\"] }`) or use \
             `encoding = \"json\"`"
        ));
    };
}

pub use crate::__kvmodel_require_protobuf as require_protobuf;
