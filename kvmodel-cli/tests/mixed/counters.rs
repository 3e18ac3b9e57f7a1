//! Standalone counters declared with the derive, whose names and key
//! spaces meet those of `counters.yaml` and of the entity `Login` of
//! `clash.yaml`.

use kvmodel::KvCounter;

/// Page visits again: the key space of `Visits` in `counters.yaml`.
#[derive(KvCounter)]
#[kv(namespace = "app", key = "visits:{page}")]
pub struct PageVisits {
    pub page: String,
}

/// A second `Signups`, the name of a counter of `counters.yaml`.
#[derive(KvCounter)]
#[kv(namespace = "app", key = "joins:{day}")]
pub struct Signups {
    pub day: String,
}

/// Named as the entity `Login` of `clash.yaml`.
#[derive(KvCounter)]
#[kv(namespace = "app", key = "logins:{day}")]
pub struct Login {
    pub day: String,
}
