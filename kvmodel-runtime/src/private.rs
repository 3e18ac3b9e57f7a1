//! What kvmodel's own crates use of the runtime's internals, and nothing
//! else. Not a public API: it may change in any release.
//!
//! The modules behind it (`codec`, `engine`, `model`, `schema`) are private
//! to the crate; this module only re-exports, grouped by who needs what.
//! An item several groups need is listed once, in the first of them.

// Generated code: what `#[derive(KvEntity)]` and `#[derive(KvCounter)]`
// expand to names as `::kvmodel::__private::…`.
pub use crate::codec::compress::Codec;
pub use crate::codec::fnv1a;
pub use crate::codec::key::{Derived, KeyBuilder, KeyMatch, KeyPart, Segments, SortPart};
pub use crate::codec::key::{sort_is, sort_key as sort_of};
pub use crate::codec::migrate;
pub use crate::codec::proto::{ProtoEnum, ProtoField, ProtoMessage, ProtoShape};
pub use crate::codec::record::{Encoding, from_value};
pub use crate::codec::scalar::Scalar;
pub use crate::codec::storage::Storage;
pub use crate::engine::Engine;
pub use crate::engine::entity::{Entity, EntityMeta, FeedMeta, Versioned};
pub use crate::engine::feed::Feed;
pub use crate::engine::links::{End, Link};
pub use crate::engine::page::ListRequest;
pub use crate::engine::relation::{DependentFact, Kind, ParentFact, names_dependent, on_delete_of};
pub use crate::engine::state::ReadGate;
pub use crate::engine::tally::{self, TallyDef, TallyKey};
pub use crate::schema::rules::{day, hour, lowercase, month, sum_i64};
pub use crate::schema::{CounterKeep, Facts, OnDelete, Ttl};
pub use crate::time::Timestamp;
pub use crate::{
    __kvmodel_require_protobuf as require_protobuf, __kvmodel_require_zstd as require_zstd,
};
pub use crate::{Result, Store};
pub use serde_json;

// The `kvmodel` facade: what it re-exports under its own names.
pub use crate::codec::key::hash_slot;
pub use crate::engine::feed::{Change, Event, FeedStream, Position};
pub use crate::engine::links::KeyArgs;
pub use crate::engine::report::{CounterDrift, Drift, Duplicate, Progress, Unjudged, Unsettled};
pub use serde;

// The schema front-end (`kvmodel-build`): a schema lowered to the run-time
// model, and the cost reports of `kvmodel keys`.
pub use crate::codec::compress::Compress;
pub use crate::engine::on_delete::CASCADE_PAGE;
pub use crate::model::{
    CounterModel, EntityModel, EnumModel, FieldExpr, FieldModel, IndexModel, Model, RelationModel,
    Segment, StepModel, StructModel, TypeModel, children_counter,
};

/// What each operation costs in round trips (`kvmodel keys`), and the
/// state look-ups its tests count.
pub mod cost {
    pub use crate::engine::cost::{Access, STATE_CHECK, STATE_FIRST_LOOK, Shape, footnote};
}

/// What each write costs on DynamoDB, and DynamoDB's limits.
pub mod dynamo_cost {
    pub use crate::engine::dynamo_cost::{
        DISCOVERY_SHARDS, DynamoCost, DynamoShape, MAX_ACTIONS, MAX_ITEM_BYTES, Requests,
    };
}

// The operations CLI (`kvmodel-cli`): a store read, checked, repaired and
// migrated through the run-time model.
pub use crate::engine::MAX_ATTEMPTS;
pub use crate::engine::def::{EntityDef, ModelDef, Typed};
pub use crate::engine::feed::RawEvent;
pub use crate::engine::links::{EdgeValue, Registry, registry_key, stands};
pub use crate::engine::migrate::MigrateState;
pub use crate::engine::records::Records;
pub use crate::engine::report::KeptCounter;
pub use crate::engine::walk::{Phase, WalkState, Walker};
pub use crate::model::parse_arg;

/// Byte positions as text (the cursors of `kvmodel purge` and `migrate`).
pub mod hex {
    pub use crate::codec::hex::{decode, encode};
}

/// The migration lease and the ledger of runs (`kvmodel migrate`).
pub mod ledger {
    pub use crate::engine::ledger::{
        Acquired, EntityRun, Lease, Outcome, Run, append, current, key, runs, save,
    };
}

/// Index states (`kvmodel inspect`, `walk`, `migrate`).
pub mod state {
    pub use crate::engine::state::{IndexState, load, record_migration, require};
}

/// Sharded counters read whole (`kvmodel inspect`).
pub mod shards {
    pub use crate::engine::shards::{read, sum};
}

/// Records no parent holds any more (`kvmodel purge`).
pub mod orphans {
    pub use crate::engine::orphans::{Found, Purge, plan};
}

// Tests and benchmarks: the encodings they check directly, below the
// repositories.

/// Records as an entity stores them.
pub mod entity {
    pub use crate::engine::entity::{decode_at, encode};
}

/// Record envelopes.
pub mod record {
    pub use crate::codec::record::{
        MAX_RECORD_BYTES, decode_current, decode_value, encode, encode_with, header,
    };
}

/// Key components, sort keys and counter shards.
pub mod key {
    pub use crate::codec::key::{
        SortReader, derived_parts, escape, escape_bytes_into, read_terminated, shard_key, sort_key,
        unescape, unescape_bytes, write_terminated,
    };
}

/// Protobuf envelopes.
pub mod proto {
    pub use crate::codec::proto::{TAG, decode, encode};
}

/// Compressed values.
pub mod compress {
    pub use crate::codec::compress::{open, pack};
}
