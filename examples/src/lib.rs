//! Example models for kvmodel, generated from the schemas in `schemas/` with
//! `kvmodel generate schemas/NAME.yaml -o examples/src/generated/NAME.rs`.
//! The files are committed; a test fails when they are out of date.

#![warn(missing_docs)]

/// `schemas/shop.yaml`: users, products, orders.
#[allow(missing_docs)]
#[rustfmt::skip]
#[path = "generated/shop.rs"]
pub mod shop;

/// `schemas/sessions.yaml`: sessions and rate-limit windows with TTLs.
#[allow(missing_docs)]
#[rustfmt::skip]
#[path = "generated/sessions.rs"]
pub mod sessions;

/// `schemas/activity.yaml`: time-ordered events with per-hour counters.
#[allow(missing_docs)]
#[rustfmt::skip]
#[path = "generated/activity.rs"]
pub mod activity;

/// `schemas/social.yaml`: authors, posts linked to tags, and likes counted on
/// sharded counters.
#[allow(missing_docs)]
#[rustfmt::skip]
#[path = "generated/social.rs"]
pub mod social;

/// `schemas/forum.yaml`: boards, threads and replies with referential
/// actions (`on_delete`).
#[allow(missing_docs)]
#[rustfmt::skip]
#[path = "generated/forum.rs"]
pub mod forum;

/// `schemas/links.yaml`: a multi-tenant link shortener with per-link
/// expiry, tags, expiring clicks and hourly and daily counts that outlive
/// them.
#[allow(missing_docs)]
#[rustfmt::skip]
#[path = "generated/links.rs"]
pub mod links;

pub mod workload;

/// Counters with a change feed, written by the feed crash tests' writer
/// process (`src/bin/feed_writer.rs`).
pub mod ticks {
    /// A counter that its writer creates, bumps once and sometimes deletes;
    /// every change of it has its event in the feed.
    #[derive(
        Debug,
        Clone,
        PartialEq,
        Eq,
        ::kvmodel::KvEntity,
        ::kvmodel::serde::Serialize,
        ::kvmodel::serde::Deserialize,
    )]
    #[serde(crate = "::kvmodel::serde")]
    #[kv(namespace = "ticks", key = "tick:{id}", feed(retain = "1d"))]
    pub struct Tick {
        /// `w{writer}-{number}`.
        pub id: String,
        /// How often it was bumped.
        pub n: u64,
    }
}
