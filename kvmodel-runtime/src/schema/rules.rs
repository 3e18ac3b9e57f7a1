//! The rules a schema applies to a field before it becomes a key component
//! or a counter amount: normalizers (`normalize = "lowercase"`), time
//! buckets (`bucket = "hour" | "day" | "month"`) and sum contributions.
//! Generated code and the run-time model call the same functions, so both
//! derive the same keys.

use crate::time::{Date, Timestamp};

/// `normalize = "lowercase"`.
pub fn lowercase(s: &str) -> String {
    s.to_lowercase()
}

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
