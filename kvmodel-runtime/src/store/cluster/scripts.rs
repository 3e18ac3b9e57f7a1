//! The Lua scripts of the cluster store and the shapes of their replies.
//!
//! A batch within one slot runs `redis.lua` (RedisStore's commit script,
//! unchanged) behind a check that no other write holds its keys. The steps
//! of the cross-slot protocol share `lua/lib.lua` (conditions, validation
//! with the rules of [`check`](crate::store::check), taking and releasing
//! holds) and add one body each. Every script starts with `prelude.lua`, the
//! counter arithmetic and TTL checks RedisStore's script uses too, and
//! `lua/locks.lua`, how a write meets the holds of others.

use redis::{Script, Value};

use crate::error::{Error, Result};

macro_rules! step {
    ($file:literal) => {
        concat!(
            include_str!("../prelude.lua"),
            include_str!("lua/locks.lua"),
            include_str!("lua/lib.lua"),
            include_str!(concat!("lua/", $file))
        )
    };
}

/// Every script the store runs, loaded on first use (on `NOSCRIPT`) by the
/// redis crate on the node a call reaches.
pub(crate) struct Scripts {
    pub(crate) single: Script,
    pub(crate) prepare_primary: Script,
    pub(crate) prepare_group: Script,
    pub(crate) prepare_adds: Script,
    pub(crate) commit: Script,
    pub(crate) apply: Script,
    pub(crate) undo: Script,
    pub(crate) resolve: Script,
    pub(crate) finish: Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        Scripts {
            single: Script::new(concat!(
                include_str!("../prelude.lua"),
                include_str!("lua/locks.lua"),
                include_str!("lua/single.lua"),
                include_str!("../redis.lua")
            )),
            prepare_primary: Script::new(step!("prepare_primary.lua")),
            prepare_group: Script::new(step!("prepare_group.lua")),
            prepare_adds: Script::new(step!("prepare_adds.lua")),
            commit: Script::new(step!("commit.lua")),
            apply: Script::new(step!("apply.lua")),
            undo: Script::new(step!("undo.lua")),
            resolve: Script::new(step!("resolve.lua")),
            finish: Script::new(step!("finish.lua")),
        }
    }
}

/// Another write's hold that a step met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Met {
    /// The lock's key, or the key's shared holds.
    pub(crate) lock: String,
    /// Which write holds it (`write|deadline|intent|token`), or `!` for a
    /// claim.
    pub(crate) held: String,
    /// Whether that holder changes the key.
    pub(crate) changes: bool,
}

/// What a script said about a batch (or a part of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Done; the extra text some steps return (which members were new).
    Done(Vec<u8>),
    /// Condition number `index` of the batch failed; nothing was written.
    /// `held`: it failed on meeting another unfinished write.
    Failed { index: usize, held: bool },
    /// An operation does not fit its key; nothing was written.
    Invalid { key: String, reason: String },
    /// A key is held by another unfinished cross-slot write; nothing was
    /// written.
    Locked(Met),
    /// The step was refused (its write was dropped, aborted, or outlived
    /// its lease); nothing was written.
    Refused(String),
}

pub(crate) fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
        Some(Value::SimpleString(s)) => s.clone(),
        Some(Value::Int(i)) => i.to_string(),
        Some(Value::Nil) | None => String::new(),
        Some(other) => format!("{other:?}"),
    }
}

pub(crate) fn bytes(v: Option<&Value>) -> Vec<u8> {
    match v {
        Some(Value::BulkString(b)) => b.clone(),
        other => text(other).into_bytes(),
    }
}

fn unexpected(reply: &Value) -> Error {
    Error::backend(
        "redis-cluster",
        "read a script reply",
        format!("unexpected reply {reply:?}"),
    )
}

/// Reads the `{status, …}` reply of a commit script.
pub(crate) fn reply(value: &Value) -> Result<Reply> {
    let Value::Array(items) = value else {
        return Err(unexpected(value));
    };
    match items.first() {
        Some(Value::Int(1)) => Ok(Reply::Done(bytes(items.get(1)))),
        Some(Value::Int(0)) => match items.get(1) {
            Some(Value::Int(i)) => Ok(Reply::Failed {
                index: usize::try_from(*i).map_err(|_| unexpected(value))?,
                held: items.get(2).is_some(),
            }),
            _ => Err(unexpected(value)),
        },
        Some(Value::Int(-1)) => Ok(Reply::Invalid {
            key: text(items.get(1)),
            reason: text(items.get(2)),
        }),
        Some(Value::Int(-2)) => Ok(Reply::Locked(Met {
            lock: text(items.get(1)),
            held: text(items.get(2)),
            changes: text(items.get(3)) != "0",
        })),
        Some(Value::Int(-3)) => Ok(Reply::Refused(text(items.get(1)))),
        _ => Err(unexpected(value)),
    }
}
