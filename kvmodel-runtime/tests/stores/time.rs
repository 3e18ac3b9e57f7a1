//! Every timestamp and date the types accept survives storage (JSON and
//! MessagePack records), sorts in keys as it compares, and falls in exactly
//! one hour, day and month bucket; nothing outside years 0000–9999 is built.

use kvmodel_runtime::__private::{Encoding, day, hour, month, record, sort_of};
use kvmodel_runtime::{Date, Timestamp};
use proptest::prelude::*;

const MIN: i64 = Timestamp::MIN.as_unix_millis();
const MAX: i64 = Timestamp::MAX.as_unix_millis();

/// Any accepted instant, with the edges of the range drawn often.
fn instant() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        MIN..=MAX,
        MIN..MIN + 100_000_000,
        MAX - 100_000_000..=MAX,
        -100_000_000i64..100_000_000,
    ]
    .prop_map(|ms| Timestamp::from_unix_millis(ms).expect("in range"))
}

fn date() -> impl Strategy<Value = Date> {
    instant().prop_map(Timestamp::date)
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Rec {
    at: Timestamp,
    on: Date,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn text_round_trips(t in instant()) {
        let text = t.to_string();
        prop_assert_eq!(text.len(), 24, "{}", text);
        prop_assert_eq!(text.parse::<Timestamp>().ok(), Some(t));
        prop_assert_eq!(t.date().to_string().parse::<Date>().ok(), Some(t.date()));
        prop_assert_eq!(Timestamp::from_unix_millis(t.as_unix_millis()), Ok(t));
        let sys = std::time::SystemTime::from(t);
        prop_assert_eq!(Timestamp::try_from(sys), Ok(t));
    }

    #[test]
    fn records_round_trip(t in instant(), d in date()) {
        let value = Rec { at: t, on: d };
        for encoding in [Encoding::Json, Encoding::MsgPack] {
            let bytes = record::encode("k", encoding, 1, &value).unwrap();
            let back: Rec = record::decode_current("k", &bytes).unwrap();
            prop_assert_eq!(&back, &value);
        }
    }

    #[test]
    fn sort_keys_order_as_values(a in instant(), b in instant(), c in date(), d in date()) {
        prop_assert_eq!(a.cmp(&b), sort_of(&a).cmp(&sort_of(&b)));
        prop_assert_eq!(c.cmp(&d), sort_of(&c).cmp(&sort_of(&d)));
        prop_assert_eq!(a.cmp(&b), a.to_string().cmp(&b.to_string()));
    }

    #[test]
    fn buckets_are_distinct_exactly_for_distinct_buckets(a in instant(), b in instant()) {
        let same_hour = a.as_unix_millis().div_euclid(3_600_000) == b.as_unix_millis().div_euclid(3_600_000);
        prop_assert_eq!(hour(a) == hour(b), same_hour, "{} {}", hour(a), hour(b));
        let same_day = a.as_unix_millis().div_euclid(86_400_000) == b.as_unix_millis().div_euclid(86_400_000);
        prop_assert_eq!(day(a) == day(b), same_day);
        let (da, db) = (a.date(), b.date());
        let same_month = (da.year(), da.month()) == (db.year(), db.month());
        prop_assert_eq!(month(da) == month(db), same_month);
        // Buckets order as their instants do.
        if a <= b {
            prop_assert!(hour(a) <= hour(b) && day(a) <= day(b) && month(da) <= month(db));
        }
        prop_assert_eq!(a.start_of_hour().date(), a.date());
        prop_assert_eq!(Timestamp::from(a.date()) <= a, true);
    }

    #[test]
    fn nothing_outside_the_range_is_built(ms in prop_oneof![i64::MIN..MIN, MAX + 1..=i64::MAX]) {
        prop_assert!(Timestamp::from_unix_millis(ms).is_err());
    }

    #[test]
    fn parsing_never_panics(s in "[-+0-9:TZtz. ]{0,32}") {
        if let Ok(t) = s.parse::<Timestamp>() {
            prop_assert!((MIN..=MAX).contains(&t.as_unix_millis()));
        }
        let _ = s.parse::<Date>();
    }
}

#[test]
fn the_edges_bucket_apart() {
    let (first, last) = (Timestamp::MIN, Timestamp::MAX);
    assert_eq!(hour(first), "0000-01-01T00");
    assert_eq!(hour(last), "9999-12-31T23");
    assert_eq!(month(last.date()), "9999-12");
    assert_eq!(month(first.date()), "0000-01");
}
