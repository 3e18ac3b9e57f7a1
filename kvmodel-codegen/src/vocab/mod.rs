//! The words a model is written in, each parsed and printed here once.
//!
//! Both front-ends (YAML in `kvmodel-build`, attributes in [`attr`](crate::attr))
//! read encodings, normalizations, field types, time buckets, durations,
//! jitters, version numbers and names through these functions, so the same
//! mistake gets the same code and the same words from either. A parser
//! returns a [`Mistake`]; the front-end adds where it was written.

use std::fmt;
use std::str::FromStr;

mod mistake;
mod names;
mod size;
mod types;

pub use mistake::Mistake;
pub use names::{
    ident, snake_case, stored_field, try_ident, unraw, upper_camel_case, variant, variant_ident,
    variant_text,
};
pub use size::{MAX_RECORD_SIZE, format_size, parse_size, size_from_int};

use crate::ir::{
    Codec, Compress, CounterKeep, Encoding, Feed, FieldExpr, Lint, Normalize, OnDelete, Ttl,
};
use crate::origin::{Diagnostics, Origin, Severity, Sp, suggestion};

/// The keys of an index, in both front-ends (the derive adds `name`).
pub const INDEX_KEYS: &[&str] = &[
    "fields",
    "unique",
    "normalize",
    "order_by",
    "keep",
    "since",
    "allow",
];
/// The keys of a counter (the derive adds `name`).
pub const COUNTER_KEYS: &[&str] = &["group_by", "sum", "shards", "keep", "since", "allow"];
/// The keys of a standalone counter: YAML takes `fields` (and
/// `description`) beside them, the derive `namespace`.
pub const TALLY_KEYS: &[&str] = &["key", "ttl", "shards"];
/// The keys of a relation (the derive adds `name`).
pub const RELATION_KEYS: &[&str] = &["belongs_to", "by", "order_by", "keep", "on_delete", "since"];
/// The keys of a `dependent(…)` in the derive.
pub const DEPENDENT_KEYS: &[&str] = &["entity", "relation"];
/// The keys of `compress`.
pub const COMPRESS_KEYS: &[&str] = &["codec", "above"];
/// The keys of a link (the derive adds `name`).
pub const LINK_KEYS: &[&str] = &["to", "inverse"];
/// The keys of a migration step.
pub const MIGRATION_KEYS: &[&str] = &["from", "rename", "add", "remove"];

/// A description as both front-ends keep it (YAML `description:`, doc
/// comments): lines without trailing whitespace and no blank lines at
/// either end; `None` when nothing is left.
pub fn description(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty())?;
    let end = lines.iter().rposition(|l| !l.is_empty())? + 1;
    Some(lines[start..end].join("\n"))
}

/// E001: a key the construct does not have, with a did-you-mean.
pub fn unknown_key(key: &str, what: &str, known: &[&str]) -> Mistake {
    let hint = suggestion(key, known.iter().copied());
    Mistake::new("E001", format!("unknown key `{key}` in {what}{hint}"))
        .help(format!("expected one of: {}", known.join(", ")))
}

/// E010: a value of the wrong kind (`expected a string for `key`, found a list`).
pub fn wrong_kind(expected: &str, found: &str) -> Mistake {
    Mistake::new("E010", format!("expected {expected}, found {found}"))
}

/// E011: a required key is missing (`{what} needs {needs}`).
pub fn missing(what: &str, needs: &str) -> Mistake {
    Mistake::new("E011", format!("{what} needs {needs}"))
}

/// `compress` put together from its parts, or E135 (reported to `diags`)
/// when the codec or the threshold is not given; `None` when a part is
/// missing or was wrong (already reported).
pub fn compress(
    codec: Option<Sp<Codec>>,
    above: Option<Sp<u64>>,
    origin: Origin,
    diags: &mut Diagnostics,
    given: (bool, bool),
) -> Option<Compress> {
    match (codec, above) {
        (Some(codec), Some(above)) => Some(Compress {
            codec,
            above,
            origin,
        }),
        _ => {
            if !given.0 || !given.1 {
                diags.push(
                    Mistake::new(
                        "E135",
                        format!(
                            "`compress` needs {}",
                            match given {
                                (false, false) => "a `codec` and a threshold `above`",
                                (false, _) => "a `codec`",
                                _ => "a threshold `above`",
                            }
                        ),
                    )
                    .help(
                        "give a codec (lz4 or zstd) and a threshold such as 1KiB: records \
                         that large or larger, encoded, are stored compressed",
                    )
                    .at(&origin),
                );
            }
            None
        }
    }
}

/// E011: a relation without its parent entity or the field that holds its id.
pub fn relation_without_parent(name: &str) -> Mistake {
    missing(
        &format!("relation `{name}`"),
        "`belongs_to` and `by`: the parent entity and the field that holds its id",
    )
}

/// E011: a link without its far entity or the name of its far side.
pub fn link_without_end(name: &str) -> Mistake {
    missing(
        &format!("link `{name}`"),
        "`to` and `inverse`: the linked entity and the link's name on its side",
    )
}

/// E011: a migration step without the version it upgrades.
pub fn migration_without_from() -> Mistake {
    missing("a migration step", "`from`, the version it upgrades")
}

/// `` `a` ``, `` `a` or `b` ``, `` `a`, `b` or `c` ``.
pub fn alternatives(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// One of a closed set of words, or E010 naming them all.
fn one_of<T: Copy>(
    what: &str,
    text: &str,
    all: &[T],
    word: fn(T) -> &'static str,
) -> Result<T, Mistake> {
    if let Some(v) = all.iter().copied().find(|v| word(*v) == text) {
        return Ok(v);
    }
    let words: Vec<&str> = all.iter().map(|v| word(*v)).collect();
    let hint = suggestion(text, words.iter().copied());
    Err(Mistake::new(
        "E010",
        format!(
            "unknown {what} `{text}`; expected {}{hint}",
            alternatives(&words)
        ),
    ))
}

impl Encoding {
    /// Every encoding, in documentation order.
    pub const ALL: [Encoding; 3] = [Encoding::Json, Encoding::MsgPack, Encoding::Protobuf];

    /// The schema spelling (`json`, `msgpack`, `protobuf`).
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Json => "json",
            Encoding::MsgPack => "msgpack",
            Encoding::Protobuf => "protobuf",
        }
    }
}

impl FromStr for Encoding {
    type Err = Mistake;
    fn from_str(s: &str) -> Result<Self, Mistake> {
        one_of("encoding", s, &Encoding::ALL, Encoding::as_str)
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Codec {
    /// Every codec, in documentation order.
    pub const ALL: [Codec; 2] = [Codec::Lz4, Codec::Zstd];

    /// The schema spelling (`lz4`, `zstd`).
    pub fn as_str(self) -> &'static str {
        match self {
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

/// E133: an unknown compression codec.
impl FromStr for Codec {
    type Err = Mistake;
    fn from_str(s: &str) -> Result<Self, Mistake> {
        one_of("compression codec", s, &Codec::ALL, Codec::as_str)
            .map_err(|m| Mistake { code: "E133", ..m })
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Lint {
    /// Every lint, in code order.
    pub const ALL: [Lint; 8] = [
        Lint::HotCounter,
        Lint::UnboundedIndex,
        Lint::LongKey,
        Lint::EphemeralWithoutTtl,
        Lint::BigRecord,
        Lint::DynamoTransaction,
        Lint::CrossSlot,
        Lint::HotCollections,
    ];

    /// Its code (`W002`, `I001`), as written in `allow` and in diagnostics.
    pub fn code(self) -> &'static str {
        match self {
            Lint::HotCounter => "W001",
            Lint::UnboundedIndex => "W002",
            Lint::LongKey => "W003",
            Lint::EphemeralWithoutTtl => "W004",
            Lint::BigRecord => "W005",
            Lint::DynamoTransaction => "W006",
            Lint::CrossSlot => "I001",
            Lint::HotCollections => "I002",
        }
    }

    /// How it is reported: a warning, or information that asks for no
    /// change.
    pub fn severity(self) -> Severity {
        match self {
            Lint::CrossSlot | Lint::HotCollections => Severity::Info,
            _ => Severity::Warning,
        }
    }
}

impl FromStr for Lint {
    type Err = Mistake;
    fn from_str(s: &str) -> Result<Self, Mistake> {
        one_of("lint", s, &Lint::ALL, Lint::code)
    }
}

impl fmt::Display for Lint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl CounterKeep {
    /// Every choice, in documentation order.
    pub const ALL: [CounterKeep; 2] = [CounterKeep::OnExpiry, CounterKeep::Always];

    /// The schema spelling (`on_expiry`, `always`).
    pub fn as_str(self) -> &'static str {
        match self {
            CounterKeep::OnExpiry => "on_expiry",
            CounterKeep::Always => "always",
        }
    }
}

impl FromStr for CounterKeep {
    type Err = Mistake;
    fn from_str(s: &str) -> Result<Self, Mistake> {
        one_of(
            "counter `keep` value",
            s,
            &CounterKeep::ALL,
            CounterKeep::as_str,
        )
    }
}

impl fmt::Display for CounterKeep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl OnDelete {
    /// Every action, in documentation order.
    pub const ALL: [OnDelete; 3] = [OnDelete::Keep, OnDelete::Restrict, OnDelete::Cascade];

    /// The schema spelling (`keep`, `restrict`, `cascade`).
    pub fn as_str(self) -> &'static str {
        match self {
            OnDelete::Keep => "keep",
            OnDelete::Restrict => "restrict",
            OnDelete::Cascade => "cascade",
        }
    }
}

impl FromStr for OnDelete {
    type Err = Mistake;
    fn from_str(s: &str) -> Result<Self, Mistake> {
        one_of("`on_delete` action", s, &OnDelete::ALL, OnDelete::as_str)
    }
}

impl fmt::Display for OnDelete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Normalize {
    /// Every normalization.
    pub const ALL: [Normalize; 1] = [Normalize::Lowercase];

    /// The schema spelling (`lowercase`).
    pub fn as_str(self) -> &'static str {
        match self {
            Normalize::Lowercase => "lowercase",
        }
    }
}

impl FromStr for Normalize {
    type Err = Mistake;
    fn from_str(s: &str) -> Result<Self, Mistake> {
        one_of("normalization", s, &Normalize::ALL, Normalize::as_str)
    }
}

impl fmt::Display for Normalize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The time buckets of `group_by` and `order_by`, each named by
/// [`FieldExpr::bucket`].
const BUCKETS: [fn(String) -> FieldExpr; 3] = [FieldExpr::Hour, FieldExpr::Day, FieldExpr::Month];

impl FieldExpr {
    /// The time bucket (`hour`, `day`, `month`), if it is one.
    pub fn bucket(&self) -> Option<&'static str> {
        match self {
            FieldExpr::Field(_) => None,
            FieldExpr::Hour(_) => Some("hour"),
            FieldExpr::Day(_) => Some("day"),
            FieldExpr::Month(_) => Some("month"),
        }
    }
}

impl FromStr for FieldExpr {
    type Err = Mistake;
    /// `status`, `day(created_at)`, …
    fn from_str(s: &str) -> Result<Self, Mistake> {
        let s = s.trim();
        let is_ident = |x: &str| {
            x.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && x.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let not_one = || {
            Mistake::new(
                "E010",
                format!(
                    "`{s}` is not a field or a time bucket; expected `field`, `hour(field)`, `day(field)` or `month(field)`"
                ),
            )
        };
        if let Some((func, rest)) = s.split_once('(') {
            let arg = rest
                .strip_suffix(')')
                .map(str::trim)
                .filter(|a| is_ident(a));
            let (func, Some(arg)) = (func.trim(), arg) else {
                return Err(not_one());
            };
            let mut buckets = BUCKETS.iter().map(|make| make(arg.to_owned()));
            return buckets.find(|x| x.bucket() == Some(func)).ok_or_else(|| {
                let names: Vec<&str> = BUCKETS
                    .iter()
                    .filter_map(|make| make(String::new()).bucket())
                    .collect();
                let hint = suggestion(func, names.iter().copied());
                Mistake::new(
                    "E010",
                    format!(
                        "unknown time bucket `{func}`{hint}; expected {}",
                        alternatives(&names)
                    ),
                )
            });
        }
        if is_ident(s) {
            Ok(FieldExpr::Field(s.into()))
        } else {
            Err(not_one())
        }
    }
}

impl fmt::Display for FieldExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bucket() {
            None => f.write_str(self.field()),
            Some(b) => write!(f, "{b}({})", self.field()),
        }
    }
}

/// A record version (`version`, `since`, `from`) from an integer: 1 up to
/// `u32::MAX`, or E106 saying which way it is out of range.
pub fn version_number(i: i64, what: &str) -> Result<u32, Mistake> {
    let why = match i {
        ..0 => format!("{what} is {i}, a negative number; record versions start at 1"),
        0 => format!("{what} is 0; record versions start at 1"),
        _ => match u32::try_from(i) {
            Ok(n) => return Ok(n),
            Err(_) => format!(
                "{what} is {i}, larger than the largest record version, {}",
                u32::MAX
            ),
        },
    };
    Err(Mistake::new("E106", why))
}

/// The most entries a capped collection may keep (`keep`).
pub const MAX_KEEP: u32 = 1_000_000;

/// The most keys a counter may be spread over (`shards`).
pub const MAX_SHARDS: u32 = 1024;

/// A whole number `what` must hold within `lo..=hi` (E131): `shards`, `keep`.
pub fn bounded_number(i: i64, what: &str, lo: u32, hi: u32) -> Result<u32, Mistake> {
    match u32::try_from(i) {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(Mistake::new(
            "E131",
            format!("{what} is {i}; it must be a whole number from {lo} to {hi}"),
        )),
    }
}

/// Whether `origin` is in a schema file (YAML), rather than in Rust
/// attributes: advice is then written in YAML.
pub fn schema_file(origin: &Origin) -> bool {
    matches!(origin, Origin::Location { .. })
}

/// How `key` set to `value` is written where `origin` is: `key: value` in
/// a schema file, `key = value` in an attribute.
pub fn setting(origin: &Origin, key: &str, value: &str) -> String {
    if schema_file(origin) {
        format!("`{key}: {value}`")
    } else {
        format!("`{key} = {value}`")
    }
}

/// How the list `key` of `items` is written where `origin` is:
/// `key: [items]` in a schema file, `key(items)` in an attribute.
pub fn list_setting(origin: &Origin, key: &str, items: &str) -> String {
    if schema_file(origin) {
        format!("`{key}: [{items}]`")
    } else {
        format!("`{key}({items})`")
    }
}

/// `word` with its indefinite article, as English spells it: `an index`,
/// `a counter`, `a uuid`, `an update`.
pub fn a(word: &str) -> String {
    let lower = word.trim_start_matches('`').to_ascii_lowercase();
    let mut chars = lower.chars();
    let an = match (chars.next(), chars.next(), chars.next()) {
        (Some('a' | 'e' | 'i' | 'o'), ..) => true,
        // `u` says "you" before one consonant and a vowel (`unique`,
        // `user`, `uuid`, `u32`), and "uh" before two (`update`).
        (Some('u'), Some(c), Some(v)) => {
            !(c.is_ascii_digit() || c == 'u' || (!is_vowel(c) && is_vowel(v)))
        }
        _ => false,
    };
    format!("{} {word}", if an { "an" } else { "a" })
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

const UNITS: &[(&str, u64)] = &[
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a duration such as `30m`, `1500ms`, `2h` into milliseconds (E116).
pub fn parse_duration_ms(s: &str) -> Result<u64, Mistake> {
    let parsed = (|| {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit())?;
        let (num, unit) = s.split_at(split);
        let n: u64 = num.parse().ok()?;
        let mult = UNITS.iter().find(|(u, _)| *u == unit.trim())?.1;
        n.checked_mul(mult).filter(|&ms| ms > 0)
    })();
    parsed.ok_or_else(|| {
        Mistake::new("E116", format!("`{s}` is not a duration; expected a positive number with a unit (ms, s, m, h, d), such as `30m`"))
    })
}

/// Formats milliseconds as the largest exact unit (`30m`).
pub fn format_duration_ms(ms: u64) -> String {
    let (unit, n) = UNITS
        .iter()
        .find(|(_, n)| ms.is_multiple_of(*n))
        .copied()
        .unwrap_or(("ms", 1));
    format!("{}{unit}", ms / n)
}

/// Parses a jitter such as `10%` or `2.5%` into thousandths, 0–1000 (E116).
pub fn parse_jitter_permille(s: &str) -> Result<u32, Mistake> {
    let parsed = (|| {
        let pct = s.trim().strip_suffix('%')?.trim();
        let (int, frac) = pct.split_once('.').unwrap_or((pct, ""));
        if int.is_empty()
            || frac.len() > 1
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let permille = int.parse::<u32>().ok()?.checked_mul(10)? + frac.parse::<u32>().unwrap_or(0);
        (permille <= 1000).then_some(permille)
    })();
    parsed.ok_or_else(|| {
        Mistake::new(
            "E116",
            format!("`{s}` is not a jitter; expected a percentage from 0% to 100%, such as `10%`"),
        )
    })
}

/// Formats thousandths as a percentage (`10%`, `2.5%`).
pub fn format_jitter(permille: u32) -> String {
    if permille.is_multiple_of(10) {
        format!("{}%", permille / 10)
    } else {
        format!("{}.{}%", permille / 10, permille % 10)
    }
}

impl Feed {
    /// Parses `retain` (e.g. `7d`), reporting it when it does not parse.
    pub fn parse(retain: Sp<String>, diags: &mut Diagnostics) -> Option<Feed> {
        match parse_duration_ms(&retain) {
            Ok(ms) => Some(Feed {
                retain_ms: Sp::new(ms, retain.origin),
            }),
            Err(m) => {
                diags.push(m.at(&retain.origin));
                None
            }
        }
    }
}

impl Ttl {
    /// Parses `after` (e.g. `30m`) and an optional `jitter` (e.g. `10%`),
    /// reporting what does not parse.
    pub fn parse(
        after: Sp<String>,
        jitter: Option<Sp<String>>,
        diags: &mut Diagnostics,
    ) -> Option<Ttl> {
        let jitter_permille = jitter.and_then(|j| match parse_jitter_permille(&j) {
            Ok(p) => Some(Sp::new(p, j.origin)),
            Err(m) => {
                diags.push(m.at(&j.origin));
                None
            }
        });
        match parse_duration_ms(&after) {
            Ok(ms) => Some(Ttl {
                after_ms: Sp::new(ms, after.origin),
                jitter_permille,
            }),
            Err(m) => {
                diags.push(m.at(&after.origin));
                None
            }
        }
    }
}
