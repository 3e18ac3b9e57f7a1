//! Property tests of the key and sort encodings.

use kvmodel_runtime::__private::{
    Derived, KeyBuilder, KeyPart, SortPart,
    key::{self, SortReader, sort_key},
};
use kvmodel_runtime::store::{decode_entry, encode_entry};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(4096)
}

/// Strings biased towards the bytes that matter to the key layout.
fn tricky() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9:%{}#]{0,8}", ".{0,12}", "[\\x00-\\x1f:%]{0,4}",]
}

fn tuple_key(parts: &[String]) -> String {
    parts
        .iter()
        .fold(KeyBuilder::new("ns").lit("user"), |b, p| b.part(p.as_str()))
        .finish()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn escape_round_trips(s in tricky()) {
        let e = key::escape(&s);
        let reserved = e.contains([':', '{', '}', '#']);
        prop_assert!(!reserved, "reserved byte left in {:?}", e);
        prop_assert!(!e.bytes().any(|b| b < 0x20 || b == 0x7f));
        prop_assert_eq!(key::unescape(&e).unwrap(), s);
    }

    #[test]
    fn distinct_component_tuples_never_collide(
        a in proptest::collection::vec(tricky(), 1..4),
        b in proptest::collection::vec(tricky(), 1..4),
    ) {
        prop_assume!(a != b);
        prop_assert_ne!(tuple_key(&a), tuple_key(&b));
    }

    #[test]
    fn record_keys_never_reach_derived_keys(id in tricky(), idx in "[a-z_]{1,8}", v in tricky()) {
        let record = KeyBuilder::new("shop").lit("user").part(id.as_str()).finish();
        let derived = KeyBuilder::derived("shop", "user", Derived::Claim).lit(&idx).part(v.as_str()).finish();
        prop_assert_ne!(&record, &derived);
        prop_assert!(!record.contains('#'));
    }

    #[test]
    fn bytes_components_round_trip(b in proptest::collection::vec(any::<u8>(), 0..16)) {
        let mut out = String::new();
        key::escape_bytes_into(&mut out, &b);
        prop_assert_eq!(key::unescape_bytes(&out).unwrap(), b);
    }

    #[test]
    fn i64_order_and_round_trip(a: i64, b: i64) {
        prop_assert_eq!(a.cmp(&b), sort_key(&a).cmp(&sort_key(&b)));
        prop_assert_eq!(SortReader::new(&sort_key(&a)).i64(), Some(a));
    }

    #[test]
    fn u64_order_and_round_trip(a: u64, b: u64) {
        prop_assert_eq!(a.cmp(&b), sort_key(&a).cmp(&sort_key(&b)));
        prop_assert_eq!(SortReader::new(&sort_key(&a)).u64(), Some(a));
    }

    /// `read_terminated` reads any bytes as a byte-at-a-time reader of
    /// `write_terminated`'s escapes does: the same bytes and rest, or `None`.
    #[test]
    fn read_terminated_reads_as_the_escapes_say(
        input in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff), any::<u8>()], 0..24)
    ) {
        fn reference(input: &[u8]) -> Option<(Vec<u8>, &[u8])> {
            let mut out = Vec::new();
            let mut i = 0;
            while i < input.len() {
                match (input[i], input.get(i + 1)) {
                    (0, Some(0xff)) => out.push(0),
                    (0, Some(1)) => return Some((out, &input[i + 2..])),
                    (0, _) => return None,
                    (b, _) => {
                        out.push(b);
                        i += 1;
                        continue;
                    }
                }
                i += 2;
            }
            None
        }
        prop_assert_eq!(key::read_terminated(&input), reference(&input));
    }

    /// An integer key component is its decimal digits, as `{}` writes them.
    #[test]
    fn integer_components_are_decimal(a: i64, b: u64, c: i32, d: u32, e: i16, f: u16, g: i8, h: u8) {
        fn written<P: KeyPart>(p: P) -> String {
            let mut out = String::new();
            p.write_key(&mut out);
            out
        }
        prop_assert_eq!(written(a), a.to_string());
        prop_assert_eq!(written(b), b.to_string());
        prop_assert_eq!(written(c), c.to_string());
        prop_assert_eq!(written(d), d.to_string());
        prop_assert_eq!(written(e), e.to_string());
        prop_assert_eq!(written(f), f.to_string());
        prop_assert_eq!(written(g), g.to_string());
        prop_assert_eq!(written(h), h.to_string());
    }

    #[test]
    fn i32_u32_order(a: i32, b: i32, c: u32, d: u32) {
        prop_assert_eq!(a.cmp(&b), sort_key(&a).cmp(&sort_key(&b)));
        prop_assert_eq!(c.cmp(&d), sort_key(&c).cmp(&sort_key(&d)));
        prop_assert_eq!(SortReader::new(&sort_key(&a)).i32(), Some(a));
        prop_assert_eq!(SortReader::new(&sort_key(&c)).u32(), Some(c));
    }

    #[test]
    fn f64_order(a in proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL | proptest::num::f64::INFINITE,
                 b in proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::INFINITE) {
        // -0.0 == 0.0, but the encoding orders -0.0 first (IEEE total order).
        if let Some(ord) = a.partial_cmp(&b) && (a != b || a.to_bits() == b.to_bits()) {
            prop_assert_eq!(ord, sort_key(&a).cmp(&sort_key(&b)));
        }
        prop_assert_eq!(SortReader::new(&sort_key(&a)).f64().map(f64::to_bits), Some(a.to_bits()));
    }

    #[test]
    fn bool_order(a: bool, b: bool) {
        prop_assert_eq!(a.cmp(&b), sort_key(&a).cmp(&sort_key(&b)));
        prop_assert_eq!(SortReader::new(&sort_key(&a)).bool(), Some(a));
    }

    #[test]
    fn string_tuples_sort_as_tuples(a in (tricky(), any::<i64>()), b in (tricky(), any::<i64>())) {
        let enc = |(s, n): &(String, i64)| {
            let mut out = Vec::new();
            s.write_sort(&mut out);
            n.write_sort(&mut out);
            out
        };
        prop_assert_eq!(a.cmp(&b), enc(&a).cmp(&enc(&b)));
        let bytes = enc(&a);
        let mut r = SortReader::new(&bytes);
        prop_assert_eq!(r.string(), Some(a.0.clone()));
        prop_assert_eq!(r.i64(), Some(a.1));
        prop_assert!(r.is_empty());
    }

    #[test]
    fn entries_sort_by_sort_then_member(
        a in (proptest::collection::vec(any::<u8>(), 0..6), proptest::collection::vec(any::<u8>(), 0..6)),
        b in (proptest::collection::vec(any::<u8>(), 0..6), proptest::collection::vec(any::<u8>(), 0..6)),
    ) {
        let (ea, eb) = (encode_entry(&a.0, &a.1), encode_entry(&b.0, &b.1));
        prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
        let m = decode_entry(&ea).unwrap();
        prop_assert_eq!((m.sort, m.member), a);
    }
}

/// The extremes of every integer width are written as `{}` writes them.
#[test]
fn integer_components_at_the_extremes() {
    fn written<P: KeyPart>(p: P) -> String {
        let mut out = String::new();
        p.write_key(&mut out);
        out
    }
    assert_eq!(written(0u64), "0");
    assert_eq!(written(u64::MAX), u64::MAX.to_string());
    assert_eq!(written(i64::MIN), i64::MIN.to_string());
    assert_eq!(written(i64::MAX), i64::MAX.to_string());
    assert_eq!(written(-1i8), "-1");
    assert_eq!(written(i8::MIN), "-128");
    assert_eq!(written(i32::MIN), i32::MIN.to_string());
    assert_eq!(written(u8::MAX), "255");
}

#[test]
fn the_documented_collision_does_not_happen() {
    // An id of "1:orders" must not touch user 1's orders.
    let user = KeyBuilder::new("shop")
        .lit("user")
        .part("1:orders")
        .finish();
    let orders = KeyBuilder::new("shop")
        .lit("user")
        .part("1")
        .lit("orders")
        .finish();
    assert_ne!(user, orders);
    assert_eq!(user, "shop:user:1%3Aorders");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn derived_parts_inverts_the_builder(a in tricky(), b in tricky()) {
        let key = KeyBuilder::derived("shop", "user", Derived::Claim).lit("by_pair").part(a.as_str()).part(b.as_str()).finish();
        prop_assert_eq!(key::derived_parts(&key, Derived::Claim, "by_pair"), Some(vec![a, b]));
    }
}
