//! `compress`: records at or above the threshold are stored compressed,
//! the codec named in the stored value's header, so that records written
//! under any codec or threshold read under any other.
//!
//! The types below share one key space: each is the same entity as a
//! schema declares it at a different time (lz4, then zstd, then no
//! compression, or a higher threshold).

use kvmodel::conformance::Harness;
use kvmodel::{Batch, Error, KvEntity, PageRequest, Store};
use serde::{Deserialize, Serialize};

macro_rules! doc {
    ($module:ident, $name:ident, $($storage:tt)*) => {
        mod $module {
        // Each type uses only some of its generated methods.
        #![allow(dead_code)]
        use super::*;

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
        #[kv(namespace = "cmp", key = "doc:{id}", $($storage)*)]
        #[kv(index(name = "by_owner", fields(owner), order_by = id))]
        pub struct $name {
            pub id: String,
            pub owner: String,
            pub body: String,
        }

        impl From<&Doc> for $name {
            fn from(d: &Doc) -> Self {
                $name {
                    id: d.id.clone(),
                    owner: d.owner.clone(),
                    body: d.body.clone(),
                }
            }
        }
        }
        pub use $module::*;
    };
}

/// lz4 from 1 KiB, at most 8 KiB encoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "cmp", key = "doc:{id}", max_size = "8KiB")]
#[kv(compress(codec = "lz4", above = "1KiB"))]
#[kv(index(name = "by_owner", fields(owner), order_by = id))]
pub struct Doc {
    pub id: String,
    pub owner: String,
    pub body: String,
}

doc!(zstd_doc, ZstdDoc, compress(codec = "zstd", above = "1KiB"));
doc!(plain_doc, PlainDoc, max_size = "64KiB");
doc!(late_doc, LateDoc, compress(codec = "lz4", above = "4KiB"));

const ABOVE: usize = 1024;

/// Deterministic prose, compressible like text is.
fn prose(len: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "store",
        "keeps",
        "every",
        "record",
        "whole",
        "and",
        "compressed",
        "when",
        "large",
        "enough",
        "readers",
        "never",
        "notice",
    ];
    let mut out = String::with_capacity(len + 16);
    let mut i = 0usize;
    while out.len() < len {
        out.push_str(WORDS[(i * 7 + i / 3) % WORDS.len()]);
        out.push(' ');
        i += 1;
    }
    out.truncate(len);
    out
}

fn doc(id: &str, body_len: usize) -> Doc {
    Doc {
        id: id.into(),
        owner: "ada".into(),
        body: prose(body_len),
    }
}

/// The body length that makes the encoded record of `id` exactly `size`
/// bytes.
fn body_for(id: &str, size: usize) -> usize {
    let empty = kvmodel::__private::serde_json::to_vec(&doc(id, 0)).unwrap();
    // `{"v":1,"d":` + payload + `}`
    size - (empty.len() + 12)
}

async fn stored<S: Store>(s: &S, id: &str) -> Vec<u8> {
    s.get(&DocKeys::record(id)).await.unwrap().unwrap()
}

/// The codec byte of a compressed value (`None`: a plain record).
fn codec(bytes: &[u8]) -> Option<u8> {
    (bytes[0] == 0xC1).then(|| bytes[1])
}

pub async fn a_record_just_below_the_threshold_is_stored_as_it_is<H: Harness>(h: &H) {
    let (store, repo) = (h.store(), DocRepo::new(h.store()));
    let d = doc("d1", body_for("d1", ABOVE - 1));
    repo.create(&d).await.unwrap();
    let bytes = stored(&store, "d1").await;
    assert_eq!(bytes.len(), ABOVE - 1);
    // Valid JSON, readable with `redis-cli GET`.
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(json["d"]["body"], d.body.as_str());
    assert_eq!(repo.get("d1").await.unwrap(), Some(d));
}

pub async fn a_record_at_the_threshold_is_stored_compressed<H: Harness>(h: &H) {
    let (store, repo) = (h.store(), DocRepo::new(h.store()));
    let zstd = ZstdDocRepo::new(h.store());
    let d = doc("d1", body_for("d1", ABOVE));
    repo.create(&d).await.unwrap();
    let bytes = stored(&store, "d1").await;
    assert_eq!(codec(&bytes), Some(1), "lz4");
    assert!(bytes.len() < ABOVE / 2, "{} bytes", bytes.len());
    assert_eq!(repo.get("d1").await.unwrap(), Some(d.clone()));
    let z = ZstdDoc::from(&doc("d2", body_for("d2", ABOVE)));
    zstd.create(&z).await.unwrap();
    let bytes = stored(&store, "d2").await;
    assert_eq!(codec(&bytes), Some(2), "zstd");
    assert!(bytes.len() < ABOVE / 2, "{} bytes", bytes.len());
    assert_eq!(zstd.get("d2").await.unwrap(), Some(z));
    // Listings and indexes read compressed records like any other.
    let page = repo
        .list_by_owner("ada", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.items[0], d);
}

pub async fn old_records_read_after_the_codec_changes<H: Harness>(h: &H) {
    let store = h.store();
    let (lz4, zstd) = (DocRepo::new(h.store()), ZstdDocRepo::new(h.store()));
    let (plain, late) = (PlainDocRepo::new(h.store()), LateDocRepo::new(h.store()));
    let big = doc("d1", 3000);
    // lz4 → zstd: the zstd schema reads the lz4 record and rewrites it.
    lz4.create(&big).await.unwrap();
    assert_eq!(codec(&stored(&store, "d1").await), Some(1));
    assert_eq!(zstd.get("d1").await.unwrap(), Some(ZstdDoc::from(&big)));
    let mut z = ZstdDoc::from(&big);
    z.body.push_str(" again");
    zstd.update(&z).await.unwrap();
    assert_eq!(codec(&stored(&store, "d1").await), Some(2));
    // zstd → none: read, then written plain.
    let mut p = plain.get("d1").await.unwrap().unwrap();
    assert_eq!(p.body, z.body);
    p.body.push('!');
    plain.update(&p).await.unwrap();
    let bytes = stored(&store, "d1").await;
    assert_eq!(codec(&bytes), None);
    serde_json::from_slice::<serde_json::Value>(&bytes).unwrap();
    // none → lz4, and a higher threshold: every earlier form still reads.
    assert_eq!(lz4.get("d1").await.unwrap().unwrap().body, p.body);
    lz4.create(&doc("d2", 3000)).await.unwrap();
    zstd.create(&ZstdDoc::from(&doc("d3", 3000))).await.unwrap();
    for id in ["d1", "d2", "d3"] {
        let read = late.get(id).await.unwrap().unwrap();
        assert_eq!(read.owner, "ada");
        // 3000 bytes is below the new threshold: written back plain.
        late.update(&read).await.unwrap();
        assert_eq!(codec(&stored(&store, id).await), None, "{id}");
    }
    // The index followed every rewrite.
    let page = plain
        .list_by_owner("ada", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 3);
}

pub async fn max_size_applies_before_compression<H: Harness>(h: &H) {
    let (store, repo) = (h.store(), DocRepo::new(h.store()));
    // 8 KiB of prose compresses far below 8 KiB: it is stored.
    let at = doc("d1", body_for("d1", 8 * 1024));
    repo.create(&at).await.unwrap();
    let bytes = stored(&store, "d1").await;
    assert!(bytes.len() < 4 * 1024, "{}", bytes.len());
    // One byte more is refused, however small it would compress.
    let over = doc("d2", body_for("d2", 8 * 1024 + 1));
    match repo.create(&over).await.unwrap_err() {
        Error::ValueTooLarge { size, limit, .. } => assert_eq!((size, limit), (8193, 8192)),
        other => panic!("expected ValueTooLarge, got {other:?}"),
    }
    assert_eq!(store.get(&DocKeys::record("d2")).await.unwrap(), None);
}

/// Writes `bytes` at the record key of `id`, behind the repository's back.
async fn forge<S: Store>(s: &S, id: &str, bytes: Vec<u8>) {
    let mut b = Batch::new();
    b.put(DocKeys::record(id), bytes, None);
    assert!(s.commit(b).await.unwrap().is_applied());
}

fn assert_refused(err: Error, id: &str) {
    assert!(matches!(err, Error::Decode { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&DocKeys::record(id)), "{text}");
}

pub async fn forged_compressed_values_are_errors_naming_the_key<H: Harness>(h: &H) {
    let (store, repo) = (h.store(), DocRepo::new(h.store()));
    let zstd = ZstdDocRepo::new(h.store());
    repo.create(&doc("good", 3000)).await.unwrap();
    zstd.create(&ZstdDoc::from(&doc("goodz", 3000)))
        .await
        .unwrap();
    let good = stored(&store, "good").await;
    let goodz = stored(&store, "goodz").await;
    // Truncated, in both codecs.
    forge(&store, "t1", good[..good.len() - 10].to_vec()).await;
    forge(&store, "t2", goodz[..goodz.len() - 10].to_vec()).await;
    // An lz4 size prefix of 4 GiB.
    let mut bomb = good.clone();
    bomb[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
    forge(&store, "b1", bomb).await;
    // A zstd frame that expands to 16 MiB of zeros behind a header that
    // declares 2 KiB.
    let zeros = vec![0u8; 16 << 20];
    let frame =
        kvmodel_runtime::__private::compress::pack("x", kvmodel::__private::Codec::Zstd, &zeros)
            .unwrap();
    let mut bomb = frame.clone();
    bomb[2..6].copy_from_slice(&2048u32.to_le_bytes());
    forge(&store, "b2", bomb).await;
    // An unknown codec.
    forge(&store, "u1", vec![0xC1, 7, 4, 0, 0, 0, 1, 2, 3, 4]).await;
    for id in ["t1", "t2", "b1", "b2", "u1"] {
        assert_refused(repo.get(id).await.unwrap_err(), id);
    }
    // The good ones still read.
    assert_eq!(repo.get("good").await.unwrap().unwrap().body, prose(3000));
    assert!(repo.get("goodz").await.unwrap().is_some());
}
