//! Maintenance over every record of an entity, as repository methods:
//! `migrate` (rewrite old versions), `verify` (recompute index entries and
//! counters, report drift) and `reconcile` (the same, and repair it).
//!
//! The walks themselves are written once, over any
//! [`EntityDef`](crate::engine::def::EntityDef), in
//! [`walk`](crate::engine::walk) and [`migrate`](crate::engine::migrate);
//! the `kvmodel` command runs the same code through the run-time model.
//!
//! Layer: maintenance (its top): the repository methods over
//! [`walk`](crate::engine::walk), [`migrate`](crate::engine::migrate) and
//! [`state`](crate::engine::state).

use crate::engine::def::Typed;
use crate::engine::entity::Entity;
use crate::engine::migrate::MigrateState;
use crate::engine::page::{Cursor, ListRequest, PageRequest};
use crate::engine::repo::Engine;
use crate::engine::report::{Drift, Progress};
use crate::engine::state;
use crate::engine::walk::Walker;
use crate::error::Result;
use crate::store::{Direction, Store};

impl<E: Entity, S: Store> Engine<E, S> {
    /// Migrates one page of records: every record older than the current
    /// version is rewritten at it, and what the versions since added
    /// (`since: N`) is backfilled in the same commit. Records that cannot
    /// be read are reported in [`Progress::skipped`], duplicates of a
    /// unique index in [`Progress::duplicates`].
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_page", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_page(&self, page: PageRequest, progress: &mut Progress) -> Result<()> {
        let (all, page) = (E::all_key(), ListRequest::from(page));
        let range = page.range(&all)?;
        let mut run = MigrateState::after(range.after);
        let def = Typed::<E>::new();
        Walker::new(&def, self.store())
            .migrate_step(&mut run, range.limit)
            .await?;
        progress.visited += run.visited;
        progress.changed += run.rewritten;
        progress.skipped.append(&mut run.skipped);
        progress.duplicates.append(&mut run.duplicates);
        progress.next = run.cursor.map(|p| page.next_cursor(&all, p));
        Ok(())
    }

    /// Migrates every record, `page_size` at a time, reporting progress
    /// after each page, and when done records the outcome in the entity's
    /// index state: indexes, relations and counters added since become
    /// readable when no old record is left. Resume an interrupted run with
    /// `migrate_from`.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_all", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_all(
        &self,
        page_size: usize,
        on_progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress> {
        self.migrate_from(None, page_size, on_progress).await
    }

    /// Migrates every record from `cursor` on (a [`Progress::next`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_from", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_from(
        &self,
        cursor: Option<Cursor>,
        page_size: usize,
        mut on_progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress> {
        let all = E::all_key();
        let def = Typed::<E>::new();
        let walker = Walker::new(&def, self.store());
        let resumed = cursor.is_some();
        let first = match cursor {
            Some(c) => {
                ListRequest::from(PageRequest::new(1).after(c))
                    .range(&all)?
                    .after
            }
            None => None,
        };
        let mut run = MigrateState::after(first);
        let mut progress = Progress::default();
        loop {
            let before = (run.rewritten, run.skipped.len(), run.duplicates.len());
            run.visited = 0;
            walker.migrate_step(&mut run, page_size.max(1)).await?;
            progress.visited += run.visited;
            progress.changed += run.rewritten - before.0;
            progress.skipped.extend_from_slice(&run.skipped[before.1..]);
            progress
                .duplicates
                .extend_from_slice(&run.duplicates[before.2..]);
            progress.next = run
                .cursor
                .clone()
                .map(|p| Cursor::new(&all, Direction::Ascending, p));
            on_progress(&progress);
            if run.done {
                if !resumed {
                    let by = format!("migrate_all of {} to version {}", E::META.name, E::VERSION);
                    state::record_migration(
                        self.store(),
                        E::space(),
                        E::VERSION,
                        run.oldest_left,
                        &run.duplicates,
                        &by,
                    )
                    .await?;
                }
                return Ok(progress);
            }
        }
    }

    /// Recomputes every claim, collection member and counter from the
    /// records, looks for derived entries no record implies, and reports
    /// what is out of step. Writes nothing.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "verify", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn verify(&self, page_size: usize) -> Result<Drift> {
        let def = Typed::<E>::new();
        Walker::new(&def, self.store()).run(false, page_size).await
    }

    /// Sweeps expired records, then does what [`verify`](Self::verify)
    /// does and repairs: missing claims and members are written (through
    /// the same transition as every write, with the record's remaining
    /// lifetime when it expires), receipts rewritten, orphaned claims and
    /// members removed, counters adjusted by the measured difference (a
    /// counter no record contributes to is deleted). Claims held by another
    /// record are reported, never taken; undecodable records are reported
    /// and left for `purge`; records behind the index state
    /// ([`Drift::behind`]) are reported and left for `migrate`. Before all that, the store finishes or undoes
    /// writes left half done ([`Store::recover`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "reconcile", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn reconcile(&self, page_size: usize) -> Result<Drift> {
        let def = Typed::<E>::new();
        Walker::new(&def, self.store()).run(true, page_size).await
    }
}
