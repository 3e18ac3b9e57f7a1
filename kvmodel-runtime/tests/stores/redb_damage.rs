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

/// Replaces the second byte of the first `copies` copies of `pattern` in the
/// file with 0xFF, which no UTF-8 text holds; returns how many it changed.
fn spoil_text(path: &Path, pattern: &[u8], copies: usize) -> usize {
    let mut bytes = std::fs::read(path).unwrap();
    let mut n = 0;
    let mut i = 0;
    while n < copies && i + pattern.len() <= bytes.len() {
        if &bytes[i..i + pattern.len()] == pattern {
            bytes[i + 1] = 0xff;
            n += 1;
        }
        i += 1;
    }
    std::fs::write(path, bytes).unwrap();
    n
}

/// A page that opens fine but holds a key that is no longer text (damage
/// redb's open does not look for in a cleanly closed file) makes redb
/// panic when it reads that key; every call is an error naming the file,
/// before and after such a panic, and the store never panics.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_damaged_after_a_clean_close_is_an_error_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spoiled.redb");
    write_store(&path).await;
    assert_eq!(spoil_text(&path, b"k0100", 1), 1);
    assert_eq!(spoil_text(&path, b"set", 1), 1);
    let store = RedbStore::open(&path).unwrap();
    let name = path.display().to_string();
    for round in 0..2 {
        let s = store.clone();
        let scanned = tokio::spawn(async move { s.scan("", None, 1000).await })
            .await
            .unwrap_or_else(|_| panic!("round {round}: the scan panicked"));
        let err = scanned
            .expect_err("a damaged key cannot be listed")
            .to_string();
        assert!(err.contains(&name), "{err}");
        assert!(err.contains("the file may be damaged"), "{err}");
        // Reads that do not reach the damaged keys still serve.
        let s = store.clone();
        let got = tokio::spawn(async move { s.get("k0150").await })
            .await
            .unwrap_or_else(|_| panic!("round {round}: a read panicked"));
        assert_eq!(got.unwrap().map(|v| v.len()), Some(300));
    }
}

/// A panic of the caller's own code inside a store call (a reader of a
/// page, a plan of a write) is the caller's panic, not a damaged file.
#[tokio::test(flavor = "multi_thread")]
async fn the_callers_own_panic_passes_through_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("fine.redb")).unwrap();
    let mut b = Batch::new();
    b.put("k", b"v".to_vec(), None)
        .add("set", vec![1], b"k".to_vec());
    assert!(store.commit(b).await.unwrap().is_applied());
    let s = store.clone();
    let read = tokio::spawn(async move {
        s.range_values_with("set", RangeRequest::all(10), |_, _| -> () {
            panic!("the reader's own panic")
        })
        .await
    })
    .await;
    let panic = read.expect_err("the reader panicked").into_panic();
    assert_eq!(message(panic).as_deref(), Some("the reader's own panic"));
    let s = store.clone();
    let planned = tokio::spawn(async move {
        s.commit_after_read(
            &["k".to_owned()],
            |_, _| -> kvmodel_runtime::Result<kvmodel_runtime::Planned<()>> {
                panic!("the plan's own panic")
            },
        )
        .await
    })
    .await;
    let panic = planned.expect_err("the plan panicked").into_panic();
    assert_eq!(message(panic).as_deref(), Some("the plan's own panic"));
    // The store is still whole.
    assert_eq!(store.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
}

/// A clock the caller hands the store (`open_with_clock`) that panics
/// once it is told to: the caller's own code, like a page reader or a plan.
#[derive(Debug)]
struct StoppedClock(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl kvmodel_runtime::store::clock::Clock for StoppedClock {
    fn now_ms(&self) -> u64 {
        if self.0.load(std::sync::atomic::Ordering::SeqCst) {
            panic!("the test clock was stopped");
        }
        1_000_000
    }
}

/// The clock is the caller's code too, but the store reads it inside the
/// guard that turns a redb panic into "the file may be damaged": a panic of
/// the caller's clock comes back as an error telling the caller to restore
/// a perfectly healthy file from a backup, on a read (a value with an
/// expiry) and on a write (a put with a TTL). Expected: the clock's own
/// panic passes through unchanged, as a reader's or a plan's does.
#[tokio::test(flavor = "multi_thread")]
async fn a_panic_of_the_callers_clock_is_not_reported_as_damage() {
    let dir = tempfile::tempdir().unwrap();
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let store =
        RedbStore::open_with_clock(dir.path().join("fine.redb"), StoppedClock(stopped.clone()))
            .unwrap();
    let mut b = Batch::new();
    b.put("k", b"v".to_vec(), Some(std::time::Duration::from_secs(60)));
    assert!(store.commit(b).await.unwrap().is_applied());
    stopped.store(true, std::sync::atomic::Ordering::SeqCst);
    let s = store.clone();
    let read = tokio::spawn(async move { s.get("k").await.map_err(|e| e.to_string()) }).await;
    match read {
        Ok(returned) => panic!("the clock's panic became {returned:?}"),
        Err(panic) => assert_eq!(
            message(panic.into_panic()).as_deref(),
            Some("the test clock was stopped")
        ),
    }
    let s = store.clone();
    let written = tokio::spawn(async move {
        let mut b = Batch::new();
        b.put(
            "k2",
            b"v".to_vec(),
            Some(std::time::Duration::from_secs(60)),
        );
        s.commit(b).await.map_err(|e| e.to_string())
    })
    .await;
    match written {
        Ok(returned) => panic!("the clock's panic became {returned:?}"),
        Err(panic) => assert_eq!(
            message(panic.into_panic()).as_deref(),
            Some("the test clock was stopped")
        ),
    }
}

/// What a panic said, when it said it with a string.
fn message(panic: Box<dyn std::any::Any + Send>) -> Option<String> {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
}
