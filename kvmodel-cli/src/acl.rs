//! `kvmodel acl`: the Redis ACL rules (`ACL SETUSER`) of the users a
//! service needs, derived from its schemas: the key patterns of their
//! namespaces and exactly the commands kvmodel sends to a Redis server.
//!
//! Where each key and command comes from (keep these lists in step with
//! `kvmodel-runtime`'s Redis store and its scripts):
//!
//! - keys: every key of a namespace starts with `{namespace}:` (records,
//!   claims, index and relation collections, counters, discovery sets,
//!   expiry ledgers and receipts, index states, the migration lease and
//!   ledger `{namespace}:#kvmodel:…`), except the change stamps of
//!   counters: `~{{namespace}:…}` (the counter's key in hash-tag braces,
//!   so that the stamp shares its counter's slot) or `~{namespace}:…` for a
//!   counter whose key carries a hash tag of its own;
//! - commands the store sends itself: `GET`, `MGET`, `ZRANGEBYLEX`,
//!   `ZREVRANGEBYLEX`, `ZCARD`, `PTTL`, `SCAN` and `INFO` (maintenance walks), and
//!   `EVALSHA` of its scripts with `EVAL` when the server does not have one
//!   yet (the redis client also names itself with `CLIENT SETINFO` when
//!   it connects, and goes on when that is refused: it is left out, as
//!   Redis 7.0 does not know it);
//! - commands its scripts run, which Redis checks against the same user:
//!   the read script (`GET`, `ZRANGEBYLEX`, `ZREVRANGEBYLEX`), the commit
//!   script (`TYPE`, `GET`, `SET`, `UNLINK`, `INCRBY`, `ZADD`, `ZREM`,
//!   `ZREMRANGEBYRANK`, `PEXPIRE`) and the delete script (`GET`, `UNLINK`,
//!   then the commit script's on the record's delete plan).
//!
//! On a Redis Cluster (`--cluster`) the store also sends: `CLUSTER SLOTS`
//! (the redis client's routing table) and `ASKING` (a key moving between
//! nodes) and `SCRIPT LOAD` (scripts are loaded on each node before
//! their first run there) for everyone; for writers, the reads of the cross-slot protocol
//! (`EXISTS`, `HGET`, `HMGET`, `HEXISTS`) and its scripts' commands (`HSET`,
//! `HDEL`, `HGETALL`, `DEL` of its own keys, `TIME`), on its own keys
//! `kvmodel~*` (locks, shared holds, intents, tokens: one set for every
//! namespace on the cluster); for operators, `CLUSTER NODES` (walks visit
//! every master) and `HVALS` (recovery reads the shared holds).
//!
//! Redis takes every key given to `EVAL`/`EVALSHA` as read *and* written,
//! so a reader, whose keys are read-only (`%R~`), runs the read script
//! through a selector that allows only `EVALSHA`/`EVAL` on its keys; what a
//! script then runs is checked command by command, and a reader has no
//! command that writes.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// `kvmodel acl`.
#[derive(Debug, Args)]
pub struct AclArgs {
    /// Schema files and Rust source files (`.rs`) of `#[derive(KvEntity)]`
    /// structs, in any mix; the users may use every namespace they declare.
    #[arg(long = "schema", value_name = "SCHEMA", required = true, num_args = 1..)]
    pub schemas: Vec<PathBuf>,
    /// The roles to print a user for (repeat for more; default: all three).
    #[arg(long = "role", value_enum, value_name = "ROLE")]
    pub roles: Vec<Role>,
    /// The user's name (default `<namespace>-<role>`); with more than one
    /// role, each user is `<NAME>-<role>`.
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Users of a Redis Cluster (`redis+cluster://`): also the commands and
    /// the keys (`kvmodel~*`) of the cluster's routing and its cross-slot
    /// protocol. ACL users are per node: run each line on every node.
    #[arg(long)]
    pub cluster: bool,
}

/// What a user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Role {
    /// A service that only reads: gets, lookups, pages, counters.
    Reader,
    /// A service that reads and writes through its repositories.
    Writer,
    /// `kvmodel verify`, `reconcile`, `migrate`, `purge` and `inspect`: a
    /// writer that may also walk the keys of its namespaces (`SCAN`).
    Operator,
}

impl Role {
    const ALL: [Role; 3] = [Role::Reader, Role::Writer, Role::Operator];

    fn name(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Writer => "writer",
            Role::Operator => "operator",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Role::Reader => "reads records, lookups, pages and counters; writes nothing",
            Role::Writer => "reads and writes through the repositories",
            Role::Operator => {
                "the writer's commands, SCAN and INFO: verify, reconcile, migrate, purge and inspect"
            }
        }
    }
}

/// Who first needs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    /// Every user (a read, or the connection).
    Read,
    /// Writers and operators.
    Write,
    /// Operators.
    Operate,
}

impl Need {
    fn of(role: Role) -> Need {
        match role {
            Role::Reader => Need::Read,
            Role::Writer => Need::Write,
            Role::Operator => Need::Operate,
        }
    }
}

/// Every command kvmodel sends to a Redis server, or runs in its scripts,
/// with the first role that needs it, in the form `ACL SETUSER` takes.
const COMMANDS: &[(&str, Need)] = &[
    // Reads of the store, and of its read script.
    ("get", Need::Read),
    ("mget", Need::Read),
    ("zrangebylex", Need::Read),
    ("zrevrangebylex", Need::Read),
    ("zcard", Need::Read),
    ("pttl", Need::Read),
    // The commit script: its checks, then its writes.
    ("type", Need::Write),
    ("set", Need::Write),
    ("unlink", Need::Write),
    ("incrby", Need::Write),
    ("zadd", Need::Write),
    ("zrem", Need::Write),
    ("zremrangebyrank", Need::Write),
    ("pexpire", Need::Write),
    // Maintenance walks the derived keys of an entity; each page is sent
    // with `INFO server`, whose `run_id` tells whether the page's cursor was
    // made by the same server process.
    ("scan", Need::Operate),
    ("info", Need::Operate),
];

/// What a Redis Cluster adds to [`COMMANDS`].
const CLUSTER_COMMANDS: &[(&str, Need)] = &[
    // The redis client's routing: the slot table, and a key on the move.
    ("cluster|slots", Need::Read),
    ("asking", Need::Read),
    // Scripts are loaded on every node before their first run there.
    ("script|load", Need::Read),
    // The cross-slot protocol's reads of its locks, holds and intents.
    ("exists", Need::Write),
    ("hget", Need::Write),
    ("hmget", Need::Write),
    ("hexists", Need::Write),
    // Its scripts: holds and intents are hashes; its own keys are
    // deleted with `DEL`; deadlines are read off the server's clock.
    ("hset", Need::Write),
    ("hdel", Need::Write),
    ("hgetall", Need::Write),
    ("del", Need::Write),
    ("time", Need::Write),
    // Walks visit every master; recovery reads the shared holds.
    ("cluster|nodes", Need::Operate),
    ("hvals", Need::Operate),
];

/// What an entity with a change feed (`feed:`) adds to [`COMMANDS`]: its
/// feed is a Stream under the namespace.
const FEED_COMMANDS: &[(&str, Need)] = &[
    // Reading the feed (`tail`, a program's feed reader).
    ("xrange", Need::Read),
    ("xrevrange", Need::Read),
    ("xread", Need::Read),
    ("xinfo|stream", Need::Read),
    // Every commit's append (its scripts), trimmed to the retention on the
    // server's clock.
    ("time", Need::Write),
    ("xadd", Need::Write),
    ("xtrim", Need::Write),
    ("xsetid", Need::Write),
    // Following the feed in a consumer group, which writes the group's
    // state: a writer's (or operator's) work.
    ("xgroup|create", Need::Write),
    ("xinfo|groups", Need::Write),
    ("xreadgroup", Need::Write),
    ("xack", Need::Write),
];

/// The keys of the cluster's cross-slot protocol (see the module docs).
const CLUSTER_KEYS: &str = "kvmodel~*";

/// Running the store's scripts: `EVALSHA`, and `EVAL` the first time a
/// server meets one.
const SCRIPTS: &[&str] = &["evalsha", "eval"];

/// What the schemas need beyond the commands every one needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// A Redis Cluster: its routing and cross-slot protocol.
    pub cluster: bool,
    /// An entity with a change feed.
    pub feeds: bool,
}

/// The commands of `role`, scripts included, in `ACL SETUSER` form, with
/// those the schemas' `needs` add, each once.
pub fn commands(role: Role, needs: Needs) -> Vec<&'static str> {
    let cluster_commands = if needs.cluster { CLUSTER_COMMANDS } else { &[] };
    let feed_commands = if needs.feeds { FEED_COMMANDS } else { &[] };
    let mut out: Vec<&'static str> = Vec::new();
    let all = COMMANDS.iter().chain(cluster_commands).chain(feed_commands);
    for (c, _) in all.filter(|(_, need)| *need <= Need::of(role)) {
        if !out.contains(c) {
            out.push(c);
        }
    }
    out.extend(SCRIPTS.iter().copied());
    out
}

/// Whether any entity of the schemas keeps a change feed.
pub fn feeds(schemas: &[kvmodel_build::Schema]) -> bool {
    schemas
        .iter()
        .flat_map(|s| &s.model.entities)
        .any(|e| e.feed.is_some())
}

/// The glob patterns of every key of `namespace`: its keys, and the change
/// stamps of its counters (`~{…}` or `~…`).
pub fn key_patterns(namespace: &str) -> Vec<String> {
    let ns = glob_escape(namespace);
    vec![format!("{ns}:*"), format!("~{{{ns}:*"), format!("~{ns}:*")]
}

/// `text` with Redis glob's special characters escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The `ACL SETUSER` line of `user` in `role` over `namespaces`, for a
/// Redis Cluster with `cluster`.
pub fn setuser(user: &str, role: Role, namespaces: &BTreeSet<String>, needs: Needs) -> String {
    let mut patterns: Vec<String> = namespaces.iter().flat_map(|ns| key_patterns(ns)).collect();
    if needs.cluster && role != Role::Reader {
        patterns.push(CLUSTER_KEYS.to_owned());
    }
    let mut line = format!("ACL SETUSER {user} on resetkeys resetchannels clearselectors -@all");
    for c in commands(role, needs) {
        if role == Role::Reader && SCRIPTS.contains(&c) {
            continue;
        }
        let _ = write!(line, " +{c}");
    }
    match role {
        Role::Reader => {
            for p in &patterns {
                let _ = write!(line, " %R~{p}");
            }
            // EVAL/EVALSHA take their keys as read and written: allowed
            // here alone, their scripts still run only the reads above.
            let mut selector = String::from("(");
            for ns in namespaces {
                let _ = write!(selector, "~{}:* ", glob_escape(ns));
            }
            selector.push_str(
                &SCRIPTS
                    .iter()
                    .map(|c| format!("+{c}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            selector.push(')');
            let _ = write!(line, " \"{selector}\"");
        }
        Role::Writer | Role::Operator => {
            for p in &patterns {
                let _ = write!(line, " ~{p}");
            }
        }
    }
    line
}

/// The namespaces the schemas declare, each once: those of their entities
/// and of their standalone counters.
pub fn namespaces(schemas: &[kvmodel_build::Schema]) -> BTreeSet<String> {
    let entities = schemas
        .iter()
        .flat_map(|s| &s.model.entities)
        .filter(|e| e.key.is_some())
        .filter_map(|e| e.namespace.as_ref());
    let tallies = schemas
        .iter()
        .flat_map(|s| &s.model.tallies)
        .filter_map(|t| t.namespace.as_ref());
    entities.chain(tallies).map(|n| n.value.clone()).collect()
}

/// The whole output: a comment on passwords, then a comment and an
/// `ACL SETUSER` line per role.
pub fn report(
    files: &[String],
    namespaces: &BTreeSet<String>,
    roles: &[Role],
    user: Option<&str>,
    needs: Needs,
) -> String {
    let cluster = needs.cluster;
    let roles: Vec<Role> = if roles.is_empty() {
        Role::ALL.to_vec()
    } else {
        let set: BTreeSet<Role> = roles.iter().copied().collect();
        set.into_iter().collect()
    };
    let base = namespaces.iter().cloned().collect::<Vec<_>>().join("-");
    let mut out = String::new();
    let named: Vec<String> = namespaces.iter().map(|n| format!("`{n}`")).collect();
    let _ = writeln!(
        out,
        "# Redis ACL users for the namespace{} {} ({}), on a {} (7.0 or later).",
        if namespaces.len() == 1 { "" } else { "s" },
        named.join(", "),
        files.join(", "),
        if cluster {
            "Redis Cluster"
        } else {
            "Redis server"
        }
    );
    if cluster {
        let _ = writeln!(
            out,
            "# ACL users are per node: run every line on every node, replicas included.\n\
             # Writers and operators share the cross-slot protocol's keys `kvmodel~*` with every\n\
             # namespace on the cluster (locks, holds and intents; never another namespace's data)."
        );
    }
    let _ = writeln!(
        out,
        "# Each user is created without a password and cannot log in until it has one: add\n\
         # `>PASSWORD` (or `#SHA256-HEX`) to its line, or run e.g. `ACL SETUSER NAME >PASSWORD`.\n\
         # Running a line again resets the user's commands and keys and keeps its passwords.\n\
         # A store URL that names a database (`redis://…/N`) needs `+select` too."
    );
    let one = roles.len() == 1;
    for role in roles {
        let name = match user {
            Some(user) if one => user.to_owned(),
            Some(user) => format!("{user}-{}", role.name()),
            None => format!("{base}-{}", role.name()),
        };
        let _ = writeln!(out, "# {}: {}", role.name(), role.what());
        let _ = writeln!(out, "{}", setuser(&name, role, namespaces, needs));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_of_standalone_counters_names_its_namespace() {
        let source = "kvmodel: 1\nnamespace: site\ncounters:\n  Views: { key: \"views:{page}\", fields: { page: string } }\n";
        let schema = kvmodel_build::load("site.yaml", source);
        assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
        let namespaces = super::namespaces(&[schema]);
        assert_eq!(namespaces.into_iter().collect::<Vec<_>>(), ["site"]);
    }
}
