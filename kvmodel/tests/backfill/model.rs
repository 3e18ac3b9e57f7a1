//! Two versions of a member: version 2 adds a unique index, an ordered
//! index and a counter, which version-1 records lack.

use kvmodel::{KvEntity, Timestamp};
use serde::{Deserialize, Serialize};

pub mod v1 {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "club", key = "member:{id}", version = 1)]
    #[kv(counter(name = "total"))]
    pub struct Member {
        pub id: String,
        #[kv(unique)]
        pub email: String,
        pub handle: String,
        pub team: String,
        pub joined: Timestamp,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "club", key = "member:{id}", version = 2)]
#[kv(counter(name = "total"))]
#[kv(index(
    name = "by_handle",
    fields(handle),
    unique,
    normalize = "lowercase",
    since = 2
))]
#[kv(index(name = "by_team", fields(team), order_by = joined, since = 2))]
#[kv(counter(name = "per_team", group_by(team), since = 2))]
#[kv(migration(from = 1, add(nick = "")))]
pub struct Member {
    pub id: String,
    #[kv(unique)]
    pub email: String,
    pub handle: String,
    pub team: String,
    pub nick: String,
    pub joined: Timestamp,
}

pub fn old(i: usize, handle: &str, team: &str) -> v1::Member {
    v1::Member {
        id: format!("m{i:02}"),
        email: format!("m{i}@club.io"),
        handle: handle.into(),
        team: team.into(),
        joined: Timestamp::from_unix_millis(1_767_225_600_000 + i as i64 * 1000).unwrap(),
    }
}
