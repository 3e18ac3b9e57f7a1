//! Every Lua script the Redis stores run, each put together from the
//! pieces in `lua/`, so that what the server and the cluster do alike is
//! one text:
//!
//! - `feed.lua` starts every script that writes: the change-feed append.
//! - `prelude.lua` follows it in every script that writes: the checks of a time
//!   to live, the application of an operation, the check of a condition;
//!   and, defined only by the scripts that call its `library()` (Redis
//!   runs a script's whole text on every call, so each function defined
//!   costs every run), exact counter arithmetic, the validation (with the
//!   rules of [`check`](fn@crate::store::check)) of an operation, a batch
//!   read from `ARGV`.
//! - `commit.lua` commits a batch in one step: [`COMMIT`] on a server, and
//!   the cluster's batch within one slot behind the holds of unfinished
//!   cross-slot writes (`cluster/locks.lua`, `cluster/single.lua`). It
//!   commits an ordinary batch (a value key put or deleted once, members
//!   and counters moved) without a function of its own, and hands any
//!   other, or one a command refused, to `general.lua` (the prelude's
//!   exact validation, then the writes).
//! - `delete.lua` ([`DELETE`]) deletes a record by the plan its last
//!   write stored beside it, with `commit.lua` on the plan's batch.
//! - `read.lua` ([`READ`]) reads a key and the key it names, or a page of a
//!   collection and the records its members name (server only).
//! - `cluster/step.lua` is what every step of the cross-slot protocol
//!   shares (after the prelude and `cluster/locks.lua`), followed by the
//!   step's own body (`cluster/prepare_*.lua`, `commit.lua`, `apply.lua`,
//!   `undo.lua`, `resolve.lua`, `finish.lua`).

macro_rules! lua {
    ($file:literal) => {
        include_str!(concat!("lua/", $file))
    };
}

/// The commit script of a server: `commit.lua`, after the two functions it
/// defines on every run, the feed append and `general` (the prelude and
/// `general.lua`, whose own functions are defined only when a batch needs
/// them).
pub(crate) const COMMIT: &str = concat!(
    lua!("feed.lua"),
    "local function general(known)\n",
    lua!("prelude.lua"),
    lua!("general.lua"),
    "end\n",
    lua!("commit.lua")
);

/// A server's delete of a record by the plan stored beside it
/// (`delete.lua`, then `commit.lua` on the plan's batch; a batch that would
/// need `general` is left to the caller).
pub(crate) const DELETE: &str = concat!(lua!("delete.lua"), lua!("commit.lua"));

/// The read-only script behind a server's `get_via` and `range_values`.
pub(crate) const READ: &str = lua!("read.lua");

#[cfg(feature = "redis-cluster")]
pub(crate) use cluster::Scripts;

#[cfg(feature = "redis-cluster")]
mod cluster {
    use redis::Script;

    use crate::store::redis::shape::Shapes;

    /// A step of the cross-slot protocol: the prelude, the holds, what
    /// every step shares, then the step's own body.
    macro_rules! step {
        ($file:literal) => {
            Script::new(concat!(
                lua!("feed.lua"),
                lua!("prelude.lua"),
                lua!("cluster/locks.lua"),
                lua!("cluster/step.lua"),
                include_str!(concat!("lua/cluster/", $file))
            ))
        };
    }

    /// Every script the cluster store runs, loaded on first use (on
    /// `NOSCRIPT`) by the redis crate on the node a call reaches.
    pub(crate) struct Scripts {
        /// A batch within one slot: the server's commit script behind the
        /// holds of unfinished cross-slot writes.
        pub(crate) single: Script,
        /// A batch within one slot with a shape script: the same, the
        /// shape script instead of the commit script.
        pub(crate) shapes: Shapes<Script>,
        pub(crate) prepare_primary: Script,
        pub(crate) prepare_group: Script,
        pub(crate) prepare_adds: Script,
        pub(crate) commit: Script,
        pub(crate) apply: Script,
        pub(crate) undo: Script,
        pub(crate) resolve: Script,
        pub(crate) finish: Script,
    }

    /// What a batch within one slot runs first: the pieces every script
    /// that writes starts with, and the check of other writes' holds.
    macro_rules! single_head {
        () => {
            concat!(
                lua!("feed.lua"),
                lua!("prelude.lua"),
                lua!("cluster/locks.lua"),
                lua!("cluster/single.lua")
            )
        };
    }

    impl Scripts {
        pub(crate) fn new() -> Scripts {
            Scripts {
                shapes: Shapes::new(|body, _| {
                    Script::new(&[single_head!(), "do\n", &body, "end\n"].concat())
                }),
                single: Script::new(concat!(
                    single_head!(),
                    "local function general(known)\n",
                    lua!("general.lua"),
                    "end\n",
                    lua!("commit.lua")
                )),
                prepare_primary: step!("prepare_primary.lua"),
                prepare_group: step!("prepare_group.lua"),
                prepare_adds: step!("prepare_adds.lua"),
                commit: step!("commit.lua"),
                apply: step!("apply.lua"),
                undo: step!("undo.lua"),
                resolve: step!("resolve.lua"),
                finish: step!("finish.lua"),
            }
        }
    }
}

/// The change-feed append (`feed_append`), which a shape script that
/// appends starts with.
pub(crate) const FEED: &str = lua!("feed.lua");
