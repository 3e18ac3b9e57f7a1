//! A damaged store file is an error that names it, never a panic from
//! inside the store, and never a silently empty store.

use std::panic::AssertUnwindSafe;
use std::path::Path;

use kvmodel_runtime::{Batch, RangeRequest, RedbStore, Store};

/// A store file with some values and a collection, closed cleanly.
async fn write_store(path: &Path) {
    let store = RedbStore::open(path).unwrap();
    for i in 0..200 {
        let mut b = Batch::new();
        b.put(format!("k{i:04}"), vec![i as u8; 300], None).add(
            "set",
            vec![(i % 256) as u8],
            format!("m{i}").into_bytes(),
        );
        assert!(store.commit(b).await.unwrap().is_applied());
    }
}

/// What reading the whole store gives: every value and member, or the
/// first error.
async fn read_all(store: &RedbStore) -> kvmodel_runtime::Result<usize> {
    let keys: Vec<String> = (0..200).map(|i| format!("k{i:04}")).collect();
    let found = store.get_many(&keys).await?.iter().flatten().count();
    let members = store
        .range("set", RangeRequest::all(1000))
        .await?
        .members
        .len();
    Ok(found + members)
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Empty,
    Truncate(u64),
    Flip(u64),
    Zero(u64, u64),
    Garbage,
}

fn damage(path: &Path, how: Damage) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = |x: u64| (x as usize).min(bytes.len().saturating_sub(1));
    match how {
        Damage::Empty => bytes.clear(),
        Damage::Truncate(n) => bytes.truncate(n as usize),
        Damage::Flip(x) => {
            let i = at(x);
            bytes[i] ^= 0xff;
        }
        Damage::Zero(from, len) => {
            let (a, b) = (at(from), at(from + len));
            bytes[a..b].fill(0);
        }
        Damage::Garbage => {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            for b in &mut bytes {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = seed as u8;
            }
        }
    }
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn damaged_files_are_errors_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.redb");
    write_store(&clean).await;
    let len = std::fs::metadata(&clean).unwrap().len();
    let cases = [
        Damage::Empty,
        Damage::Truncate(1),
        Damage::Truncate(64),
        Damage::Truncate(4096),
        Damage::Truncate(len / 2),
        Damage::Truncate(len - 1),
        Damage::Flip(0),
        Damage::Flip(9),
        Damage::Flip(40),
        Damage::Flip(len / 2),
        Damage::Flip(len - 10),
        Damage::Zero(0, 512),
        Damage::Zero(4096, 4096),
        Damage::Zero(len / 3, 8192),
        Damage::Garbage,
    ];
    for (n, how) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("case{n}.redb"));
        std::fs::copy(&clean, &path).unwrap();
        damage(&path, how);
        let opened = std::panic::catch_unwind(AssertUnwindSafe(|| RedbStore::open(&path)));
        let opened = opened.unwrap_or_else(|_| panic!("{how:?}: open panicked"));
        match opened {
            Err(e) => {
                let text = e.to_string();
                eprintln!("{how:?}: {text}");
                assert!(
                    text.contains(&path.display().to_string()),
                    "{how:?}: {text}"
                );
            }
            // redb repairs some damage from its checksums and second header;
            // what it then serves must read without a panic, and a store
            // it opens is never silently empty.
            Ok(store) => {
                let read = tokio::spawn(async move { read_all(&store).await }).await;
                let read = read.unwrap_or_else(|_| panic!("{how:?}: a read panicked"));
                eprintln!(
                    "{how:?}: opened; reading gives {:?}",
                    read.as_ref().map_err(|e| e.to_string())
                );
                if let Ok(n) = read {
                    assert!(n > 0, "{how:?}: the damaged store opened empty");
                }
            }
        }
    }
}

#[tokio::test]
async fn an_empty_file_is_not_a_new_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.redb");
    std::fs::write(&path, b"").unwrap();
    let err = RedbStore::open(&path).unwrap_err().to_string();
    assert!(err.contains("the file is empty"), "{err}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        0,
        "nothing written"
    );
    // A path with no file at all still starts a new store.
    RedbStore::open(dir.path().join("new.redb")).unwrap();
}
