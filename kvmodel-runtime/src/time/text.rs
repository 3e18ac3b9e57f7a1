//! RFC 3339 text of [`Timestamp`] and [`Date`]: printing, parsing, serde.
//!
//! Printing always gives `YYYY-MM-DDTHH:MM:SS.mmmZ` (a four-digit year: the
//! range holds nothing else). Parsing takes a date alone (midnight UTC), or a
//! date and a time `HH:MM:SS` with an optional fraction (digits past the
//! millisecond are dropped) and a zone `Z` or `±HH:MM`; the separator may be
//! `T`, `t` or a space. An instant outside years 0000–9999 is refused as
//! such, after its offset is applied.

use std::fmt;
use std::str::FromStr;

use super::{Date, MAX_MS, MIN_MS, MS_PER_DAY, Timestamp};

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

/// Why a text is not a [`Timestamp`] or [`Date`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    /// Not RFC 3339.
    Syntax,
    /// Well-formed, but outside years 0000–9999.
    Range,
}

/// The error of parsing a [`Timestamp`] or [`Date`]: the text is not
/// RFC 3339, or it names an instant outside years 0000–9999.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseTimeError {
    input: String,
    problem: Problem,
}

impl ParseTimeError {
    /// Whether the text was well-formed but outside years 0000–9999.
    pub fn is_out_of_range(&self) -> bool {
        self.problem == Problem::Range
    }
}

impl fmt::Display for ParseTimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problem {
            Problem::Syntax => write!(
                f,
                "`{}` is not an RFC 3339 date or timestamp; write e.g. 2026-11-22, \
                 2026-11-22T05:56:24Z or 2026-11-22T07:56:24.123+02:00",
                self.input
            ),
            Problem::Range => write!(
                f,
                "`{}` is outside the years 0000 to 9999 that kvmodel dates and timestamps hold \
                 ({} to {})",
                self.input,
                Timestamp::MIN,
                Timestamp::MAX
            ),
        }
    }
}

impl std::error::Error for ParseTimeError {}

/// `n` ASCII digits as a number.
fn digits(s: &str, n: usize) -> Option<i64> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn parse_date(s: &str) -> Result<Date, Problem> {
    let (negative, signed, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, true, &s[1..]),
        Some(b'+') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let mut parts = rest.splitn(3, '-');
    let (y, m, d) = match (parts.next(), parts.next(), parts.next()) {
        (Some(y), Some(m), Some(d)) => (y, m, d),
        _ => return Err(Problem::Syntax),
    };
    let (m, d) = digits(m, 2).zip(digits(d, 2)).ok_or(Problem::Syntax)?;
    if y.is_empty() || !y.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::Syntax);
    }
    if !signed && y.len() == 4 {
        let y = digits(y, 4).ok_or(Problem::Syntax)?;
        return Date::from_ymd(y as i32, m as u8, d as u8).ok_or(Problem::Syntax);
    }
    // A signed or longer year (ISO 8601's expanded form, or what printed a
    // year before 0 once) is well-formed but outside the range.
    let year = y.trim_start_matches('0');
    let beyond = year.len() > 4 || (negative && !year.is_empty());
    let calendar = (1..=12).contains(&m) && (1..=31).contains(&d);
    Err(if beyond && calendar {
        Problem::Range
    } else {
        Problem::Syntax
    })
}

fn parse_timestamp(s: &str) -> Result<Timestamp, Problem> {
    let Some((date, time)) = s.split_once(['T', 't', ' ']) else {
        return parse_date(s).map(Date::start);
    };
    // Out-of-range dates are judged after the offset, which can bring them in.
    let date = parse_date(date)?;
    let (clock, offset_ms) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let pos = time.rfind(['+', '-']).ok_or(Problem::Syntax)?;
        let (c, off) = time.split_at(pos);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':').ok_or(Problem::Syntax)?;
        let (oh, om) = digits(oh, 2).zip(digits(om, 2)).ok_or(Problem::Syntax)?;
        if oh > 23 || om > 59 {
            return Err(Problem::Syntax);
        }
        (c, sign * (oh * 60 + om) * 60_000)
    };
    let mut parts = clock.splitn(3, ':');
    let (h, m, sec) = match (parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(m), Some(sec)) => (h, m, sec),
        _ => return Err(Problem::Syntax),
    };
    let (s, frac) = match sec.split_once('.') {
        Some((s, frac)) if !frac.is_empty() => (s, frac),
        Some(_) => return Err(Problem::Syntax),
        None => (sec, ""),
    };
    let (h, m) = digits(h, 2).zip(digits(m, 2)).ok_or(Problem::Syntax)?;
    let s = digits(s, 2).ok_or(Problem::Syntax)?;
    if h > 23 || m > 59 || s > 60 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::Syntax);
    }
    let milli = frac
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0, |acc, b| acc * 10 + i64::from(b - b'0'));
    let ms = date.start().0 + ((h * 60 + m) * 60 + s) * 1000 + milli - offset_ms;
    if !(MIN_MS..=MAX_MS).contains(&ms) {
        return Err(Problem::Range);
    }
    Ok(Timestamp(ms))
}

/// Parses RFC 3339 text; a date alone (`2026-01-01`) is midnight UTC.
impl FromStr for Timestamp {
    type Err = ParseTimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_timestamp(s).map_err(|problem| ParseTimeError {
            input: s.to_owned(),
            problem,
        })
    }
}

/// Parses `YYYY-MM-DD`.
impl FromStr for Date {
    type Err = ParseTimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_date(s).map_err(|problem| ParseTimeError {
            input: s.to_owned(),
            problem,
        })
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
serde_via_str!(
    Timestamp,
    "an RFC 3339 timestamp string in years 0000 to 9999"
);
serde_via_str!(
    Date,
    "an RFC 3339 date string (YYYY-MM-DD) in years 0000 to 9999"
);

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
            MIN_MS,
        ] {
            let t = Timestamp::from_unix_millis(ms).unwrap();
            assert_eq!(t.to_string().parse::<Timestamp>().unwrap(), t, "{t}");
        }
        assert_eq!(Timestamp::EPOCH.to_string(), "1970-01-01T00:00:00.000Z");
        let t: Timestamp = "2026-11-22T07:56:24.5+02:00".parse().unwrap();
        assert_eq!(t.to_string(), "2026-11-22T05:56:24.500Z");
        let t: Timestamp = "2026-11-22 05:56:24.123456z".parse().unwrap();
        assert_eq!(t.to_string(), "2026-11-22T05:56:24.123Z");
    }

    #[test]
    fn a_date_alone_is_midnight_utc() {
        let t: Timestamp = "2026-01-01".parse().unwrap();
        assert_eq!(t.to_string(), "2026-01-01T00:00:00.000Z");
        assert_eq!(t, "2026-01-01".parse::<Date>().unwrap().start());
    }

    #[test]
    fn rejects_bad_input() {
        for s in [
            "",
            "x",
            "2026-13-01T00:00:00Z",
            "2026-02-30",
            "2026-11-22T25:00:00Z",
            "2026-11-22T+5:00:00Z",
            "2026-11-22T05:00Z",
            "2026-11-22T05:00:00.Z",
            "2026-11-22T05:00:00+2:00",
            "2026-11-22T05:00:00",
            "26-11-22",
            "2026-1-22",
        ] {
            let err = s.parse::<Timestamp>().unwrap_err();
            assert!(!err.is_out_of_range(), "{s}");
            assert!(err.to_string().contains("2026-11-22T05:56:24Z"), "{err}");
        }
        assert!("2024-02-29".parse::<Date>().is_ok());
        assert!("2023-02-29".parse::<Date>().is_err());
    }

    #[test]
    fn refuses_what_lies_outside_years_0000_to_9999() {
        for s in [
            "-002-12-17T10:00:00.000Z",
            "-0001-12-31",
            "+10000-01-01",
            "10000-01-01T00:00:00Z",
            "0000-01-01T00:30:00+01:00",
            "9999-12-31T23:30:00-01:00",
        ] {
            let err = s.parse::<Timestamp>().unwrap_err();
            assert!(err.is_out_of_range(), "{s}: {err}");
            assert!(
                err.to_string().contains("outside the years 0000 to 9999"),
                "{err}"
            );
        }
        // An offset can bring a date just past the edge back in.
        let t: Timestamp = "9999-12-31T23:30:00+01:00".parse().unwrap();
        assert_eq!(t.to_string(), "9999-12-31T22:30:00.000Z");
        let bad = serde_json::from_str::<Timestamp>("\"10000-01-01T00:00:00Z\"").unwrap_err();
        assert!(
            bad.to_string().contains("outside the years 0000 to 9999"),
            "{bad}"
        );
    }
}
