//! Plain data of a declared schema that the run-time model and the engine
//! share: record lifetimes ([`Ttl`]), referential actions ([`OnDelete`]),
//! counters that keep their count ([`CounterKeep`]),
//! the normalizers and time buckets of key components ([`rules`]), and the
//! derived entries of a record image ([`Facts`]). It depends on the codec
//! alone (for time), never on the model, the store or the engine.

mod facts;
pub mod rules;

pub use facts::{ClaimFact, Facts, MemberFact};

/// Time to live of an entity's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl {
    /// Base time to live in milliseconds.
    pub after_ms: u64,
    /// Jitter in thousandths of `after_ms`, added at random to spread expiry.
    pub jitter_permille: u32,
}

impl Ttl {
    /// A TTL with jitter applied.
    pub fn sample(&self) -> std::time::Duration {
        let spread = self
            .after_ms
            .saturating_mul(u64::from(self.jitter_permille))
            / 1000;
        let extra = if spread == 0 {
            0
        } else {
            fastrand::u64(0..=spread)
        };
        std::time::Duration::from_millis(self.after_ms.saturating_add(extra))
    }
}

/// When a counter keeps the amount a record added after the record is gone
/// (`keep: on_expiry | always` on a counter): a counter that only counts,
/// for analytics that outlive the records they count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CounterKeep {
    /// Never: the counter follows the live records; an expired or deleted
    /// record takes its amount back (the default).
    #[default]
    Follows,
    /// When a record expires: the expiry sweep leaves the counter alone; a
    /// delete still takes the record's amount back.
    OnExpiry,
    /// When a record expires or is deleted: only a write that moves the
    /// record to another group (or changes a summed field) takes anything
    /// back.
    Always,
}

impl CounterKeep {
    /// Whether the expiry sweep leaves the counter alone.
    pub const fn on_expiry(self) -> bool {
        !matches!(self, CounterKeep::Follows)
    }

    /// Whether a delete leaves the counter alone.
    pub const fn on_delete(self) -> bool {
        matches!(self, CounterKeep::Always)
    }

    /// Whether the counter keeps amounts of records that are gone, so that
    /// live records only tell a lower bound of it.
    pub const fn kept(self) -> bool {
        !matches!(self, CounterKeep::Follows)
    }

    /// The schema spelling (`keep: …`); `None` for the default.
    pub const fn as_str(self) -> Option<&'static str> {
        match self {
            CounterKeep::Follows => None,
            CounterKeep::OnExpiry => Some("on_expiry"),
            CounterKeep::Always => Some("always"),
        }
    }
}

/// What deleting a parent does to the children of a relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDelete {
    /// Nothing: the children stay (the default).
    Keep,
    /// The delete fails while children exist.
    Restrict,
    /// The delete deletes the children first.
    Cascade,
}

impl OnDelete {
    /// Whether the parent's delete acts on the children.
    pub const fn enforced(self) -> bool {
        !matches!(self, OnDelete::Keep)
    }

    /// The schema spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            OnDelete::Keep => "keep",
            OnDelete::Restrict => "restrict",
            OnDelete::Cascade => "cascade",
        }
    }
}
