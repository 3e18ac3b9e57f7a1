//! Serde forms of maintenance's saved state and reports: byte cursors as
//! hex, counter totals (which may exceed 64 bits) as decimal text.
//!
//! Layer: data, below the walks.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serializer};

/// `Option<Vec<u8>>` as optional hex text.
pub(crate) mod hex {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(bytes) => s.serialize_some(&crate::codec::hex::encode(bytes)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => crate::codec::hex::decode(&text)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("a cursor is not hex text")),
            None => Ok(None),
        }
    }
}

/// Counter totals as decimal text.
pub(crate) mod totals {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        v: &BTreeMap<String, i128>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(v.iter().map(|(k, n)| (k, n.to_string())))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, i128>, D::Error> {
        BTreeMap::<String, String>::deserialize(d)?
            .into_iter()
            .map(|(k, n)| {
                n.parse()
                    .map(|n| (k, n))
                    .map_err(|_| serde::de::Error::custom("a counter total is not an integer"))
            })
            .collect()
    }
}

/// One `i128` as decimal text.
pub(crate) mod int {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &i128, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i128, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(|_| serde::de::Error::custom("a counter total is not an integer"))
    }
}
