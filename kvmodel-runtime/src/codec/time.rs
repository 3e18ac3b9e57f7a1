//! UTC timestamps and calendar dates, with order-preserving key encodings.
//!
//! [`Timestamp`] is milliseconds since the Unix epoch. It serializes as an
//! RFC 3339 string (`2026-11-22T05:56:24.123Z`) so JSON records stay readable.

use std::fmt;
use std::str::FromStr;

use crate::codec::key::{KeyPart, SortPart};

/// An instant in UTC with millisecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

/// A calendar date (proleptic Gregorian, UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    year: i32,
    month: u8,
    day: u8,
}

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

const MS_PER_DAY: i64 = 86_400_000;

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// From milliseconds since the Unix epoch.
    pub const fn from_unix_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_unix_millis(self) -> i64 {
        self.0
    }

    /// The current time from the system clock.
    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// The date this instant falls on (UTC).
    pub fn date(self) -> Date {
        let (y, m, d) = civil_from_days(self.0.div_euclid(MS_PER_DAY));
        Date {
            year: y as i32,
            month: m as u8,
            day: d as u8,
        }
    }

    /// The start of the hour containing this instant.
    pub fn start_of_hour(self) -> Timestamp {
        Timestamp(self.0 - self.0.rem_euclid(3_600_000))
    }

    /// Adds a signed number of milliseconds, saturating.
    pub fn plus_millis(self, ms: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(ms))
    }
}

impl Date {
    /// A date, or `None` if the month or day is out of range.
    pub fn from_ymd(year: i32, month: u8, day: u8) -> Option<Self> {
        let ok = (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month);
        ok.then_some(Date { year, month, day })
    }

    /// The year.
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

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let date = self.date();
        let ms = self.0.rem_euclid(MS_PER_DAY);
        let (h, m, s, milli) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
        write!(f, "{date}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
    }
}

/// The error of parsing a [`Timestamp`] or [`Date`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseTimeError(String);

impl fmt::Display for ParseTimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not an RFC 3339 date or timestamp (expected e.g. 2026-11-22 or 2026-11-22T05:56:24.123Z)",
            self.0
        )
    }
}

impl std::error::Error for ParseTimeError {}

fn parse_date(s: &str) -> Option<Date> {
    let (y, rest) = s.split_once('-')?;
    let (m, d) = rest.split_once('-')?;
    if y.len() < 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    Date::from_ymd(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
}

fn parse_timestamp(s: &str) -> Option<Timestamp> {
    let (date, time) = s.split_once(['T', 't', ' '])?;
    let date = parse_date(date)?;
    let (clock, offset_ms) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let pos = time.rfind(['+', '-'])?;
        let (c, off) = time.split_at(pos);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':')?;
        let (oh, om): (i64, i64) = (oh.parse().ok()?, om.parse().ok()?);
        (c, sign * (oh * 60 + om) * 60_000)
    };
    let mut parts = clock.splitn(3, ':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let sec = parts.next()?;
    let (s, frac) = sec.split_once('.').unwrap_or((sec, ""));
    let s: i64 = s.parse().ok()?;
    if h > 23 || m > 59 || s > 60 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let milli: i64 = format!("{:0<3}", &frac[..frac.len().min(3)]).parse().ok()?;
    let ms = date.start().0 + ((h * 60 + m) * 60 + s) * 1000 + milli - offset_ms;
    Some(Timestamp(ms))
}

impl FromStr for Timestamp {
    type Err = ParseTimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_timestamp(s).ok_or_else(|| ParseTimeError(s.to_owned()))
    }
}

impl FromStr for Date {
    type Err = ParseTimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_date(s).ok_or_else(|| ParseTimeError(s.to_owned()))
    }
}

macro_rules! serde_via_str {
    ($t:ty, $what:literal) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$t, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}
serde_via_str!(Timestamp, "an RFC 3339 timestamp string");
serde_via_str!(Date, "an RFC 3339 date string (YYYY-MM-DD)");

impl KeyPart for Timestamp {
    fn write_key(&self, out: &mut String) {
        self.0.write_key(out);
    }
}

impl SortPart for Timestamp {
    fn write_sort(&self, out: &mut Vec<u8>) {
        self.0.write_sort(out);
    }
}

impl KeyPart for Date {
    fn write_key(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = write!(out, "{self}");
    }
}

impl SortPart for Date {
    fn write_sort(&self, out: &mut Vec<u8>) {
        self.start().write_sort(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_round_trip() {
        for ms in [
            0,
            1,
            -1,
            1_763_790_984_123,
            -62_135_596_800_000,
            253_402_300_799_999,
        ] {
            let t = Timestamp::from_unix_millis(ms);
            assert_eq!(t.to_string().parse::<Timestamp>().unwrap(), t, "{t}");
        }
        assert_eq!(
            Timestamp::from_unix_millis(0).to_string(),
            "1970-01-01T00:00:00.000Z"
        );
        let t: Timestamp = "2026-11-22T07:56:24.5+02:00".parse().unwrap();
        assert_eq!(t.to_string(), "2026-11-22T05:56:24.500Z");
    }

    #[test]
    fn rejects_bad_input() {
        for s in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-02-30",
            "2026-11-22T25:00:00Z",
            "x",
        ] {
            assert!(s.parse::<Timestamp>().is_err(), "{s}");
        }
        assert!("2024-02-29".parse::<Date>().is_ok());
        assert!("2023-02-29".parse::<Date>().is_err());
    }

    #[test]
    fn buckets() {
        let t: Timestamp = "2026-11-22T05:56:24Z".parse().unwrap();
        assert_eq!(t.date().to_string(), "2026-11-22");
        assert_eq!(t.start_of_hour().to_string(), "2026-11-22T05:00:00.000Z");
        assert_eq!(t.date().first_of_month().to_string(), "2026-11-01");
    }
}
