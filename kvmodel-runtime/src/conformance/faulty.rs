//! A store that fails the way real deployments do, on demand: the process
//! dies before a commit (nothing written, an error), or a commit is
//! applied and its reply lost ([`Error::OutcomeUnknown`]), or a condition
//! fails on meeting another unfinished write while what it checks holds (as
//! on a Redis Cluster). Tests of what callers see and what is left behind
//! wrap any backend in it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::store::{Batch, Outcome, Planned, RangeRequest, RangeResult, ScanPage, Store, Via};

/// Wraps a store and injects commit failures; reads pass through.
#[derive(Debug, Clone)]
pub struct FaultyStore<S> {
    inner: S,
    /// Commits still allowed before the process "dies" (`u64::MAX`: no
    /// limit).
    budget: Arc<AtomicU64>,
    lose_next: Arc<AtomicBool>,
    contend: Arc<Mutex<Option<String>>>,
}

impl<S: Store> FaultyStore<S> {
    /// Passes everything to `inner` until told to fail.
    pub fn new(inner: S) -> Self {
        FaultyStore {
            inner,
            budget: Arc::new(AtomicU64::new(u64::MAX)),
            lose_next: Arc::default(),
            contend: Arc::default(),
        }
    }

    /// Fails the next commit that has a condition on `key`, at that
    /// condition, writing nothing, whatever the key holds: what a Redis
    /// Cluster answers when the key is held by another unfinished write.
    pub fn contend_next(&self, key: &str) {
        *self.contend.lock().unwrap_or_else(|e| e.into_inner()) = Some(key.to_owned());
    }

    /// The condition to fail in `batch`, if it is the one [`contend_next`]
    /// named (which is then used up).
    ///
    /// [`contend_next`]: FaultyStore::contend_next
    fn contended(&self, batch: &Batch) -> Option<usize> {
        let mut target = self.contend.lock().unwrap_or_else(|e| e.into_inner());
        let index = batch
            .conditions()
            .iter()
            .position(|c| Some(c.key()) == target.as_deref())?;
        *target = None;
        Some(index)
    }

    /// Whether the commit [`contend_next`](FaultyStore::contend_next) named
    /// has not come yet.
    pub fn contending(&self) -> bool {
        self.contend
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Lets `commits` more commits through, then fails every later one
    /// before it reaches the store, as a process that died would.
    pub fn die_after(&self, commits: u64) {
        self.budget.store(commits, Ordering::SeqCst);
    }

    /// Applies the next commit but loses its reply: the caller gets
    /// [`Error::OutcomeUnknown`].
    pub fn lose_next_reply(&self) {
        self.lose_next.store(true, Ordering::SeqCst);
    }

    /// The store underneath.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn before_commit(&self) -> Result<()> {
        let spent = self
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1));
        match spent {
            Ok(_) => Ok(()),
            Err(_) => Err(Error::backend(
                "faulty",
                "commit",
                std::io::Error::other("the process died"),
            )),
        }
    }

    fn after_commit(&self) -> Result<()> {
        if self.lose_next.swap(false, Ordering::SeqCst) {
            return Err(Error::OutcomeUnknown {
                backend: "faulty",
                source: "the reply was lost".into(),
            });
        }
        Ok(())
    }
}

impl<S: Store> Store for FaultyStore<S> {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        self.before_commit()?;
        if let Some(index) = self.contended(&batch) {
            return Ok(Outcome::Failed { index });
        }
        let outcome = self.inner.commit(batch).await?;
        self.after_commit()?;
        Ok(outcome)
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
        self.inner.feed_read(feed, after, limit, wait).await
    }
    async fn feed_last(&self, feed: &str) -> Result<Option<crate::store::FeedPosition>> {
        self.inner.feed_last(feed).await
    }
    async fn commit_after_read<T, F>(&self, keys: &[String], plan: F) -> Result<(Outcome, T)>
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        if self.contending() {
            // Read and commit apart, so that the commit meets the failure.
            return crate::store::commit_after_read_optimistic(self, keys, plan).await;
        }
        self.before_commit()?;
        let done = self.inner.commit_after_read(keys, plan).await?;
        self.after_commit()?;
        Ok(done)
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key).await
    }
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        self.inner.get_many(keys).await
    }
    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        self.inner.range(key, req).await
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
        self.inner.range_keys_with(prefix, keep, req, read).await
    }
    async fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        self.inner.range_values(key, req).await
    }
    async fn time_to_live(&self, key: &str) -> Result<Option<Duration>> {
        self.inner.time_to_live(key).await
    }
    async fn collection_len(&self, key: &str) -> Result<u64> {
        self.inner.collection_len(key).await
    }
    async fn now_ms(&self) -> Result<u64> {
        self.inner.now_ms().await
    }
    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        self.inner.scan(prefix, cursor, count).await
    }
    async fn counter(&self, key: &str) -> Result<i64> {
        self.inner.counter(key).await
    }
    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        self.inner.get_via(key).await
    }
    async fn recover(&self) -> Result<u64> {
        self.inner.recover().await
    }
    async fn unfinished_writes(&self) -> Result<Vec<String>> {
        self.inner.unfinished_writes().await
    }
    /// The view fails as the store does (it shares its budget).
    async fn snapshot(&self) -> Result<Option<Self>> {
        Ok(self.inner.snapshot().await?.map(|inner| FaultyStore {
            inner,
            ..self.clone()
        }))
    }
    async fn change_stamps(&self, keys: &[String]) -> Result<Option<Vec<u64>>> {
        self.inner.change_stamps(keys).await
    }
    fn delete_plans(&self) -> Option<crate::store::PlanDelete> {
        self.inner.delete_plans()
    }
    fn holds_plans(&self) -> bool {
        self.inner.holds_plans()
    }
    /// A commit like any other: it dies, or loses its reply, as told.
    async fn delete_planned(
        &self,
        key: &str,
        plan: &str,
        unless: &str,
        tag: u64,
    ) -> Result<crate::store::PlannedDelete> {
        self.before_commit()?;
        let done = self.inner.delete_planned(key, plan, unless, tag).await?;
        self.after_commit()?;
        Ok(done)
    }
}
