// kvmodel without its `zstd` feature reads a record stored zstd-compressed
// as an error that names the key and the feature, never a panic.
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::task::{Context, Poll, Waker};

#[derive(Debug, Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "note:{id}", compress(codec = "lz4", above = "1KiB"))]
pub struct Note {
    pub id: String,
}

/// Runs a future that the in-memory store completes without waiting.
fn ready<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("the in-memory store did not complete");
}

fn main() {
    // `{"v":1,"d":{"id":"1"}}` (23 bytes) compressed with zstd, behind
    // kvmodel's header: 0xC1, codec 2, the length.
    let mut bytes = vec![0xC1, 2, 23, 0, 0, 0];
    bytes.extend_from_slice(&[
        0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0xb1, 0x00, 0x00, 0x7b, 0x22, 0x76, 0x22, 0x3a, 0x31,
        0x2c, 0x22, 0x64, 0x22, 0x3a, 0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0x31, 0x22, 0x7d,
        0x7d, 0xfd, 0x15, 0x42, 0x75,
    ]);
    let store = kvmodel::MemoryStore::new();
    let key = NoteKeys::record("1");
    let mut batch = kvmodel::Batch::new();
    batch.put(key.clone(), bytes, None);
    let _ = ready(kvmodel::Store::commit(&store, batch)).unwrap();
    let err = ready(NoteRepo::new(store).get("1")).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, kvmodel::Error::Decode { .. }), "{text}");
    assert!(text.contains(&key) && text.contains("`zstd` feature"), "{text}");
}
