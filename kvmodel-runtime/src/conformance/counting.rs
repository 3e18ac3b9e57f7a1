//! A store that counts the calls made to it: the round trips an access
//! pattern costs on a networked backend (reading the clock is not a call:
//! every built-in backend reads it in process).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::Result;
use crate::store::{Batch, Outcome, Planned, RangeRequest, RangeResult, ScanPage, Store, Via};

/// Wraps a store and counts every call made to it.
#[derive(Debug, Clone)]
pub struct CountingStore<S> {
    inner: S,
    calls: Arc<AtomicU64>,
    conditions: Arc<AtomicU64>,
}

impl<S: Store> CountingStore<S> {
    /// Counts the calls made to `inner` from now on.
    pub fn new(inner: S) -> Self {
        CountingStore {
            inner,
            calls: Arc::default(),
            conditions: Arc::default(),
        }
    }

    /// The calls made so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// The conditions of every batch committed so far (by `commit`, or
    /// planned by `commit_after_read`).
    pub fn conditions(&self) -> u64 {
        self.conditions.load(Ordering::Relaxed)
    }

    /// The store underneath.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn call(&self) -> &S {
        self.calls.fetch_add(1, Ordering::Relaxed);
        &self.inner
    }
}

impl<S: Store> Store for CountingStore<S> {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        let conditions = u64::try_from(batch.conditions().len()).unwrap_or(u64::MAX);
        self.conditions.fetch_add(conditions, Ordering::Relaxed);
        self.call().commit(batch).await
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.call().get(key).await
    }
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        self.call().get_many(keys).await
    }
    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        self.call().range(key, req).await
    }
    fn keeps_feeds(&self) -> bool {
        self.inner.keeps_feeds()
    }
    async fn feed_read(
        &self,
        feed: &str,
        after: Option<crate::store::FeedPosition>,
        limit: usize,
        wait: std::time::Duration,
    ) -> Result<crate::store::FeedPage> {
        self.call().feed_read(feed, after, limit, wait).await
    }
    async fn feed_last(&self, feed: &str) -> Result<Option<crate::store::FeedPosition>> {
        self.call().feed_last(feed).await
    }
    fn orders_keys(&self) -> bool {
        self.inner.orders_keys()
    }
    async fn range_keys_with<T, K, F>(
        &self,
        prefix: &str,
        keep: K,
        req: RangeRequest,
        read: F,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)>
    where
        T: Send,
        K: Fn(&str) -> bool + Send,
        F: FnMut(&str, Option<&[u8]>) -> T + Send,
    {
        self.call().range_keys_with(prefix, keep, req, read).await
    }
    async fn time_to_live(&self, key: &str) -> Result<Option<Duration>> {
        self.call().time_to_live(key).await
    }
    async fn collection_len(&self, key: &str) -> Result<u64> {
        self.call().collection_len(key).await
    }
    /// Not counted: every built-in backend reads its clock in process.
    async fn now_ms(&self) -> Result<u64> {
        self.inner.now_ms().await
    }
    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        self.call().scan(prefix, cursor, count).await
    }
    async fn counter(&self, key: &str) -> Result<i64> {
        self.call().counter(key).await
    }
    async fn commit_after_read<T, F>(&self, keys: &[String], plan: F) -> Result<(Outcome, T)>
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        let conditions = self.conditions.clone();
        let plan = move |values, now| {
            let planned = plan(values, now)?;
            if let Planned::Commit(batch, _) = &planned {
                let n = u64::try_from(batch.conditions().len()).unwrap_or(u64::MAX);
                conditions.fetch_add(n, Ordering::Relaxed);
            }
            Ok(planned)
        };
        self.call().commit_after_read(keys, plan).await
    }
    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        self.call().get_via(key).await
    }
    async fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        self.call().range_values(key, req).await
    }
    async fn recover(&self) -> Result<u64> {
        self.call().recover().await
    }
    async fn unfinished_writes(&self) -> Result<Vec<String>> {
        self.call().unfinished_writes().await
    }
    /// The view counts its calls with the store's.
    async fn snapshot(&self) -> Result<Option<Self>> {
        Ok(self.call().snapshot().await?.map(|inner| CountingStore {
            inner,
            calls: Arc::clone(&self.calls),
            conditions: Arc::clone(&self.conditions),
        }))
    }
    async fn change_stamps(&self, keys: &[String]) -> Result<Option<Vec<u64>>> {
        self.call().change_stamps(keys).await
    }
    fn delete_plans(&self) -> Option<crate::store::PlanDelete> {
        self.inner.delete_plans()
    }
    fn holds_plans(&self) -> bool {
        self.inner.holds_plans()
    }
    async fn delete_planned(
        &self,
        key: &str,
        plan: &str,
        unless: &str,
        tag: u64,
    ) -> Result<crate::store::PlannedDelete> {
        self.call().delete_planned(key, plan, unless, tag).await
    }
}
