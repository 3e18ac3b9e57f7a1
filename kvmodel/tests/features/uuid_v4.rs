//! The `uuid-v4` feature: `kvmodel::Uuid::new_v4()` makes random
//! (version 4) ids that round-trip through a `uuid` key.
#![cfg(feature = "uuid-v4")]

use kvmodel::Uuid;

#[test]
fn new_v4_makes_distinct_random_ids() {
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    assert_ne!(a, b);
    assert_eq!(a.get_version_num(), 4);
    assert_eq!(a.to_string().parse::<Uuid>().unwrap(), a);
}
