//! The feed contract ([`Store::keeps_feeds`]): a store that keeps feeds
//! appends a batch's entries exactly when it applies the batch, in order,
//! and reads them back after a position; one that keeps none refuses a
//! batch with entries and writes nothing of it.

use std::time::Duration;

use super::Harness;
use crate::store::Store;
use crate::store::batch::{Batch, Outcome};

/// Entries are appended with their batch, never without it.
pub async fn feed_entries_come_with_their_commit<H: Harness>(h: &H) {
    let s = h.store();
    let (k, feed) = (h.key("feed:rec"), h.key("feed:log"));
    let retain = Duration::from_secs(3600);
    let mut b = Batch::new();
    b.absent(&k)
        .put(&k, b"1".to_vec(), None)
        .append(&feed, b"first".to_vec(), retain)
        .append(&feed, b"second".to_vec(), retain);
    if !s.keeps_feeds() {
        let err = s.commit(b).await.expect_err("a batch with feed entries");
        assert!(err.to_string().contains("change feed"), "{err}");
        assert_eq!(s.get(&k).await.expect("get"), None, "nothing written");
        return;
    }
    assert_eq!(s.commit(b.clone()).await.expect("commit"), Outcome::Applied);
    assert_eq!(
        s.commit(b).await.expect("commit"),
        Outcome::Failed { index: 0 },
        "a refused batch appends nothing"
    );
    let page = s
        .feed_read(&feed, None, 10, Duration::ZERO)
        .await
        .expect("feed_read");
    let entries: Vec<&[u8]> = page.entries.iter().map(|e| e.entry.as_slice()).collect();
    assert_eq!(entries, [&b"first"[..], &b"second"[..]]);
    assert!(page.entries[0].position < page.entries[1].position);
    assert_eq!(
        s.feed_last(&feed).await.expect("feed_last"),
        Some(page.entries[1].position)
    );
    let after = s
        .feed_read(&feed, Some(page.entries[0].position), 10, Duration::ZERO)
        .await
        .expect("feed_read");
    assert_eq!(after.entries.len(), 1);
    assert_eq!(after.entries[0].entry, b"second");
}
