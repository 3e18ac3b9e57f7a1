//! JSON has no NaN or infinity (serde_json writes `null`, which no float
//! reads back): a JSON-encoded record holding one is refused with an error
//! naming the field, and nothing is written; MessagePack holds them.

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fl", key = "reading:{id}")]
pub struct Reading {
    pub id: String,
    pub value: f64,
    pub history: Vec<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fl", key = "packed:{id}", encoding = "msgpack")]
pub struct Packed {
    pub id: String,
    pub value: f64,
}

kvmodel_runtime::on_every_backend!(
    a_non_finite_float_is_refused_in_json_and_nothing_is_written,
    msgpack_keeps_non_finite_floats,
);

fn reading(id: &str, value: f64, history: Vec<f32>) -> Reading {
    Reading {
        id: id.into(),
        value,
        history,
    }
}

async fn a_non_finite_float_is_refused_in_json_and_nothing_is_written<H: Harness>(h: &H) {
    let repo = ReadingRepo::new(h.store());
    for (bad, field) in [
        (reading("a", f64::NAN, vec![]), "`value`"),
        (reading("a", 1.0, vec![0.5, f32::INFINITY]), "`history[1]`"),
        (reading("a", f64::NEG_INFINITY, vec![]), "`value`"),
    ] {
        match repo.create(&bad).await {
            Err(Error::Encode { key, reason }) => {
                assert_eq!(key, "fl:reading:a");
                assert!(reason.contains(field), "{reason}");
                assert!(reason.contains("NaN or infinite"), "{reason}");
            }
            other => panic!("expected an encode error, got {other:?}"),
        }
        assert_eq!(repo.get("a").await.unwrap(), None, "nothing written");
    }
    // An update to NaN leaves the stored record as it was.
    let good = reading("b", 2.0, vec![1.0]);
    repo.create(&good).await.unwrap();
    let err = repo
        .update(&reading("b", f64::NAN, vec![1.0]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Encode { .. }), "{err:?}");
    assert_eq!(repo.get("b").await.unwrap(), Some(good));
    // A string holding "null" is no float: it is stored as it is.
    let mut named = reading("null", 0.0, vec![]);
    named.id = "null".into();
    repo.create(&named).await.unwrap();
    assert_eq!(repo.get("null").await.unwrap(), Some(named));
}

async fn msgpack_keeps_non_finite_floats<H: Harness>(h: &H) {
    let repo = PackedRepo::new(h.store());
    for (id, value) in [("inf", f64::INFINITY), ("ninf", f64::NEG_INFINITY)] {
        let p = Packed {
            id: id.into(),
            value,
        };
        repo.create(&p).await.unwrap();
        assert_eq!(repo.get(id).await.unwrap(), Some(p));
    }
    let nan = Packed {
        id: "nan".into(),
        value: f64::NAN,
    };
    repo.create(&nan).await.unwrap();
    let back = repo.get("nan").await.unwrap().unwrap();
    assert!(back.value.is_nan());
}
