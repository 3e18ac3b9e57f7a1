//! UTC timestamps and calendar dates (their key encodings are in `codec::key`).
//!
//! [`Timestamp`] is milliseconds since the Unix epoch; [`Date`] a calendar
//! day. Both serialize as RFC 3339 text (`2026-11-22T05:56:24.123Z`,
//! `2026-11-22`) so JSON records stay readable.
//!
//! # Range
//!
//! Both types hold the years 0000 to 9999 and nothing else:
//! [`Timestamp::MIN`] is `0000-01-01T00:00:00.000Z`, [`Timestamp::MAX`] is
//! `9999-12-31T23:59:59.999Z`. Within it every value prints as a four-digit
//! year, parses back to itself, sorts in keys as it compares, and falls in
//! exactly one `hour`, `day` and `month` bucket. Every way to build one —
//! [`Timestamp::from_unix_millis`], `TryFrom<SystemTime>`, parsing,
//! deserializing a stored record, [`Date::from_ymd`] — refuses a value
//! outside the range with an error that says so, and arithmetic
//! ([`Timestamp::plus_millis`]) saturates at its ends.

mod text;

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use text::ParseTimeError;

/// An instant in UTC with millisecond precision, from
/// [`Timestamp::MIN`] (`0000-01-01T00:00:00.000Z`) to [`Timestamp::MAX`]
/// (`9999-12-31T23:59:59.999Z`).
///
/// ```
/// use kvmodel_runtime::{Date, Timestamp};
/// let t: Timestamp = "2026-11-22T05:56:24.123Z".parse().unwrap();
/// assert_eq!(t.as_unix_millis(), 1_795_326_984_123);
/// assert_eq!(Timestamp::from_unix_millis(1_795_326_984_123), Ok(t));
/// // A date alone is midnight UTC.
/// let midnight: Timestamp = "2026-11-22".parse().unwrap();
/// assert_eq!(midnight, Timestamp::from(t.date()));
/// assert_eq!(Date::from(t).to_string(), "2026-11-22");
/// // Outside years 0000–9999 nothing is built.
/// assert!(Timestamp::from_unix_millis(i64::MAX).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

/// A calendar date (proleptic Gregorian, UTC), from 0000-01-01 to
/// 9999-12-31.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    year: i32,
    month: u8,
    day: u8,
}

/// The error of building a [`Timestamp`] outside years 0000–9999.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRangeError {
    /// The refused instant, in milliseconds since the Unix epoch (saturated
    /// to `i64` for instants beyond even that).
    pub unix_millis: i64,
}

impl fmt::Display for TimeRangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ms since the Unix epoch is outside the years 0000 to 9999 that a kvmodel \
             timestamp holds ({} to {} ms, {} to {}); clamp or reject the value before storing it",
            self.unix_millis,
            MIN_MS,
            MAX_MS,
            Timestamp::MIN,
            Timestamp::MAX
        )
    }
}

impl std::error::Error for TimeRangeError {}

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

pub(crate) const MS_PER_DAY: i64 = 86_400_000;
const MS_PER_HOUR: i64 = 3_600_000;
/// `0000-01-01T00:00:00.000Z` in milliseconds since the Unix epoch.
const MIN_MS: i64 = -62_167_219_200_000;
/// `9999-12-31T23:59:59.999Z` in milliseconds since the Unix epoch.
const MAX_MS: i64 = 253_402_300_799_999;

impl Timestamp {
    /// The Unix epoch, `1970-01-01T00:00:00.000Z`.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// The earliest timestamp, `0000-01-01T00:00:00.000Z`.
    pub const MIN: Timestamp = Timestamp(MIN_MS);

    /// The latest timestamp, `9999-12-31T23:59:59.999Z`.
    pub const MAX: Timestamp = Timestamp(MAX_MS);

    /// From milliseconds since the Unix epoch; an error outside
    /// [`MIN`](Self::MIN)..=[`MAX`](Self::MAX).
    pub const fn from_unix_millis(ms: i64) -> Result<Self, TimeRangeError> {
        if ms < MIN_MS || ms > MAX_MS {
            Err(TimeRangeError { unix_millis: ms })
        } else {
            Ok(Timestamp(ms))
        }
    }

    /// Milliseconds since the Unix epoch (negative before 1970).
    pub const fn as_unix_millis(self) -> i64 {
        self.0
    }

    /// The current time from the system clock (clamped to the range, which
    /// a working clock never leaves).
    pub fn now() -> Self {
        Timestamp::try_from(SystemTime::now())
            .unwrap_or_else(|e| Timestamp(e.unix_millis.clamp(MIN_MS, MAX_MS)))
    }

    /// The date this instant falls on (UTC).
    pub fn date(self) -> Date {
        let (y, m, d) = civil_from_days(self.0.div_euclid(MS_PER_DAY));
        // Within the range, y is 0..=9999, m 1..=12 and d 1..=31.
        Date {
            year: y as i32,
            month: m as u8,
            day: d as u8,
        }
    }

    /// The start of the hour containing this instant.
    pub fn start_of_hour(self) -> Timestamp {
        // MIN is a whole hour, so the result stays in range.
        Timestamp(self.0 - self.0.rem_euclid(MS_PER_HOUR))
    }

    /// The hour of the day (UTC), 0–23.
    pub fn hour(self) -> u8 {
        (self.0.rem_euclid(MS_PER_DAY) / MS_PER_HOUR) as u8
    }

    /// Adds a signed number of milliseconds, saturating at
    /// [`MIN`](Self::MIN) and [`MAX`](Self::MAX).
    pub fn plus_millis(self, ms: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(ms).clamp(MIN_MS, MAX_MS))
    }

    /// Adds a signed number of milliseconds; `None` when the result falls
    /// outside the range.
    pub fn checked_add_millis(self, ms: i64) -> Option<Timestamp> {
        Timestamp::from_unix_millis(self.0.checked_add(ms)?).ok()
    }
}

impl Date {
    /// The earliest date, 0000-01-01.
    pub const MIN: Date = Date {
        year: 0,
        month: 1,
        day: 1,
    };

    /// The latest date, 9999-12-31.
    pub const MAX: Date = Date {
        year: 9999,
        month: 12,
        day: 31,
    };

    /// A date, or `None` if the year is outside 0–9999 or the month or day
    /// is out of range.
    pub fn from_ymd(year: i32, month: u8, day: u8) -> Option<Self> {
        let ok = (0..=9999).contains(&year)
            && (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month);
        ok.then_some(Date { year, month, day })
    }

    /// The year, 0–9999.
    pub fn year(self) -> i32 {
        self.year
    }

    /// The month, 1–12.
    pub fn month(self) -> u8 {
        self.month
    }

    /// The day of the month, 1–31.
    pub fn day(self) -> u8 {
        self.day
    }

    /// Midnight UTC at the start of this date.
    pub fn start(self) -> Timestamp {
        let days = days_from_civil(self.year.into(), self.month.into(), self.day.into());
        Timestamp(days * MS_PER_DAY)
    }

    /// The first day of this date's month.
    pub fn first_of_month(self) -> Date {
        Date { day: 1, ..self }
    }
}

/// Midnight UTC at the start of the date.
impl From<Date> for Timestamp {
    fn from(d: Date) -> Timestamp {
        d.start()
    }
}

/// The UTC date the instant falls on.
impl From<Timestamp> for Date {
    fn from(t: Timestamp) -> Date {
        t.date()
    }
}

/// The instant, rounded down to the millisecond; an error outside years
/// 0000–9999.
impl TryFrom<SystemTime> for Timestamp {
    type Error = TimeRangeError;
    fn try_from(t: SystemTime) -> Result<Self, TimeRangeError> {
        let nanos: i128 = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        };
        let ms = nanos.div_euclid(1_000_000);
        let saturated = i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX });
        Timestamp::from_unix_millis(saturated)
    }
}

/// The same instant. On a platform whose `SystemTime` cannot reach it
/// (Windows before 1601) the earliest instant it can hold is returned; on
/// Unix every timestamp converts exactly.
impl From<Timestamp> for SystemTime {
    fn from(t: Timestamp) -> SystemTime {
        let d = Duration::from_millis(t.0.unsigned_abs());
        if t.0 >= 0 {
            // At most ~8000 years after the epoch: every platform holds it.
            return UNIX_EPOCH.checked_add(d).unwrap_or(UNIX_EPOCH);
        }
        if let Some(s) = UNIX_EPOCH.checked_sub(d) {
            return s;
        }
        // The largest distance before the epoch the platform can hold.
        let (mut lo, mut hi) = (0u64, t.0.unsigned_abs());
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if UNIX_EPOCH.checked_sub(Duration::from_millis(mid)).is_some() {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        UNIX_EPOCH
            .checked_sub(Duration::from_millis(lo))
            .unwrap_or(UNIX_EPOCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_is_years_0000_to_9999() {
        assert_eq!(Timestamp::MIN.to_string(), "0000-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::MAX.to_string(), "9999-12-31T23:59:59.999Z");
        assert_eq!(Date::MIN.start(), Timestamp::MIN);
        assert_eq!(Date::MAX, Timestamp::MAX.date());
        for ms in [MIN_MS - 1, MAX_MS + 1, i64::MIN, i64::MAX] {
            let err = Timestamp::from_unix_millis(ms).unwrap_err();
            assert!(
                err.to_string().contains("outside the years 0000 to 9999"),
                "{err}"
            );
        }
        assert_eq!(Timestamp::MIN.plus_millis(-1), Timestamp::MIN);
        assert_eq!(Timestamp::MAX.plus_millis(i64::MAX), Timestamp::MAX);
        assert_eq!(Timestamp::MAX.checked_add_millis(1), None);
        assert_eq!(Timestamp::MIN.start_of_hour(), Timestamp::MIN);
        assert!(Date::from_ymd(-1, 12, 31).is_none());
        assert!(Date::from_ymd(10_000, 1, 1).is_none());
    }

    #[test]
    fn system_time_converts_both_ways() {
        let t = Timestamp::from_unix_millis(1_763_790_984_123).unwrap();
        let s = SystemTime::from(t);
        assert_eq!(Timestamp::try_from(s), Ok(t));
        // Sub-millisecond parts round down, also before the epoch.
        let before = UNIX_EPOCH - Duration::from_nanos(1);
        assert_eq!(Timestamp::try_from(before).unwrap().as_unix_millis(), -1);
        let after = s + Duration::from_micros(999);
        assert_eq!(Timestamp::try_from(after), Ok(t));
        for t in [Timestamp::MIN, Timestamp::MAX, Timestamp::EPOCH] {
            assert_eq!(Timestamp::try_from(SystemTime::from(t)), Ok(t), "{t}");
        }
        let far = UNIX_EPOCH + Duration::from_secs(400_000_000_000);
        assert!(Timestamp::try_from(far).is_err());
    }

    #[test]
    fn buckets() {
        let t: Timestamp = "2026-11-22T05:56:24Z".parse().unwrap();
        assert_eq!(t.date().to_string(), "2026-11-22");
        assert_eq!(t.start_of_hour().to_string(), "2026-11-22T05:00:00.000Z");
        assert_eq!(t.hour(), 5);
        assert_eq!(t.date().first_of_month().to_string(), "2026-11-01");
    }
}
