//! What generated code uses. Not a public API: it may change in any release.

pub use crate::codec::compress::Codec;
pub use crate::codec::key::Space;
pub use crate::codec::key::{Derived, KeyBuilder, KeyMatch, KeyPart, Segments, SortPart};
pub use crate::codec::key::{sort_is, sort_key as sort_of};
pub use crate::codec::migrate::{self, no_migration};
pub use crate::codec::proto::{ProtoEnum, ProtoField, ProtoKind, ProtoMessage, ProtoShape};
pub use crate::codec::record::{Encoding, from_value};
pub use crate::codec::storage::Storage;
pub use crate::engine::entity::{Entity, EntityMeta, FeedMeta, Versioned};
pub use crate::engine::feed::Feed;
pub use crate::engine::links::{End, KeyArgs, Link};
pub use crate::engine::page::ListRequest;
pub use crate::engine::relation::{
    DependentFact, Kind, ParentFact, names_dependent, on_delete_of, same,
};
pub use crate::engine::repo::Engine;
pub use crate::engine::report::{Drift, Progress};
pub use crate::engine::state::ReadGate;
pub use crate::engine::tally::{self, TallyDef, TallyKey};
pub use crate::engine::txn::{Transaction, TxRepo};
pub use crate::schema::rules::{day, hour, lowercase, month, sum_i64};
pub use crate::schema::{CounterKeep, Facts, OnDelete, Ttl};
pub use crate::time::{Date, Timestamp};
pub use crate::{Error, Page, PageRequest, Result, Store};
pub use serde;
pub use serde_json;
pub use uuid::Uuid;

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
