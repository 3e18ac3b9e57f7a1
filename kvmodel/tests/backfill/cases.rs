//! The cases, generic over the store.

use std::time::Duration;

use kvmodel::__private::{Entity, serde_json};
use kvmodel::conformance::Harness;
use kvmodel::{Batch, Error, PageRequest, Store, Timestamp};
use kvmodel_runtime::__private::{
    MigrateState, Typed, WalkState, Walker,
    ledger::{self, Acquired, Lease, Outcome, Run},
    state,
};

use super::model::*;

fn not_readable<T: std::fmt::Debug>(r: kvmodel::Result<T>) -> bool {
    match r {
        Err(Error::NotReadable { since: 2, .. }) => true,
        other => panic!("expected NotReadable, got {other:?}"),
    }
}

fn member(i: usize, handle: &str, team: &str) -> Member {
    let o = old(i, handle, team);
    Member {
        id: o.id,
        email: o.email,
        handle: o.handle,
        team: o.team,
        nick: String::new(),
        joined: o.joined,
    }
}

/// What version 2 added is refused until a migration backfills it; a
/// duplicate of the new unique index is recorded, keeps its record at
/// version 1 and the index write-only, until it is resolved.
pub async fn write_only_until_backfilled<H: Harness>(h: &H) {
    let v1_repo = v1::MemberRepo::new(h.store());
    for (i, handle, team) in [
        (0, "Ann", "red"),
        (1, "bob", "red"),
        (2, "ann", "blue"),
        (3, "cy", "blue"),
        (4, "dee", "red"),
    ] {
        v1_repo.create(&old(i, handle, team)).await.unwrap();
    }
    let repo = MemberRepo::new(h.store());
    assert!(not_readable(repo.count_per_team("red").await));
    assert!(not_readable(repo.find_by_handle("bob").await));
    assert!(not_readable(
        repo.list_by_team("red", PageRequest::new(10)).await
    ));
    // What version 1 had stays readable.
    assert_eq!(repo.count_total().await.unwrap(), 5);
    assert!(repo.find_by_email("m1@club.io").await.unwrap().is_some());
    // Partial results on request: nothing is backfilled yet.
    let partial = MemberRepo::new(h.store()).with_partial_reads();
    assert_eq!(partial.count_per_team("red").await.unwrap(), 0);

    // A dry run finds the duplicate among the old records and writes nothing.
    let store = h.store();
    let def = Typed::<Member>::new();
    let mut dry = MigrateState::new(true);
    while !dry.done {
        Walker::new(&def, &store)
            .migrate_step(&mut dry, 2)
            .await
            .unwrap();
    }
    assert_eq!((dry.rewritten, dry.duplicates.len()), (4, 1), "{dry:?}");
    assert_eq!(
        (
            dry.duplicates[0].record.clone(),
            dry.duplicates[0].holder.clone()
        ),
        (MemberKeys::record("m02"), MemberKeys::record("m00"))
    );
    assert_eq!(partial.count_per_team("red").await.unwrap(), 0);
    assert!(
        state::load(&store, Member::space())
            .await
            .unwrap()
            .is_some_and(|s| s.complete == 1),
        "the dry run leaves the state as the first read established it"
    );

    let done = repo.migrate_all(2, |_| {}).await.unwrap();
    assert_eq!((done.visited, done.changed), (5, 4), "{done:?}");
    assert_eq!(done.duplicates.len(), 1, "{done:?}");
    let d = &done.duplicates[0];
    assert_eq!((d.index.as_str(), d.value.as_str()), ("by_handle", "ann"));
    assert_eq!(
        (d.record.clone(), d.holder.clone()),
        (MemberKeys::record("m02"), MemberKeys::record("m00"))
    );
    // The duplicate is left at version 1: still write-only.
    assert!(not_readable(repo.count_per_team("red").await));
    let st = state::load(&h.store(), Member::space())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((st.complete, st.duplicate_count), (1, 1));
    assert_eq!(st.duplicates, done.duplicates);

    // Resolve it, migrate again: readable, and every entry is there.
    repo.modify("m02", |m| m.handle = "ann2".into())
        .await
        .unwrap();
    let again = repo.migrate_all(2, |_| {}).await.unwrap();
    assert!(again.duplicates.is_empty(), "{again:?}");
    assert_eq!(again.changed, 0, "the update rewrote the last old record");
    assert_eq!(repo.count_per_team("red").await.unwrap(), 3);
    assert_eq!(repo.count_per_team("blue").await.unwrap(), 2);
    assert_eq!(repo.find_by_handle("ANN").await.unwrap().unwrap().id, "m00");
    let blue = repo
        .list_by_team("blue", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(blue.items.len(), 2);
    assert!(repo.verify(3).await.unwrap().is_clean());
}

/// A backfill resumed from its saved state, repeated from the start, or
/// run twice at once never counts a record twice.
pub async fn backfill_never_counts_twice<H: Harness>(h: &H) {
    let store = h.store();
    let v1_repo = v1::MemberRepo::new(store.clone());
    let team = |i: usize| if i.is_multiple_of(2) { "red" } else { "blue" };
    for i in 0..10 {
        v1_repo
            .create(&old(i, &format!("h{i}"), team(i)))
            .await
            .unwrap();
    }
    let def = Typed::<Member>::new();
    let walker = Walker::new(&def, &store);
    let mut run = MigrateState::new(false);
    walker.migrate_step(&mut run, 3).await.unwrap();
    walker.migrate_step(&mut run, 3).await.unwrap();
    assert_eq!(run.rewritten, 6);
    // Interrupted here; resumed from the saved state by another walker.
    let saved = serde_json::to_string(&run).unwrap();
    let mut resumed: MigrateState = serde_json::from_str(&saved).unwrap();
    let store2 = h.store();
    let walker2 = Walker::new(&def, &store2);
    while !resumed.done {
        walker2.migrate_step(&mut resumed, 3).await.unwrap();
    }
    assert_eq!(resumed.rewritten, 10);
    // Started over: nothing left to rewrite.
    let repo = MemberRepo::new(store.clone()).with_partial_reads();
    assert_eq!(repo.migrate_all(4, |_| {}).await.unwrap().changed, 0);
    assert_eq!(repo.count_per_team("red").await.unwrap(), 5);

    // Ten more old records, migrated by two runs at once.
    for i in 10..20 {
        v1_repo
            .create(&old(i, &format!("h{i}"), team(i)))
            .await
            .unwrap();
    }
    let (r1, r2) = (repo.clone(), repo.clone());
    let a = tokio::spawn(async move { r1.migrate_all(1, |_| {}).await.unwrap() });
    let b = tokio::spawn(async move { r2.migrate_all(1, |_| {}).await.unwrap() });
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    assert_eq!(a.changed + b.changed, 10, "{a:?} {b:?}");
    assert_eq!(repo.count_per_team("red").await.unwrap(), 10);
    assert_eq!(repo.count_per_team("blue").await.unwrap(), 10);
    assert_eq!(repo.count_total().await.unwrap(), 20);
    let drift = repo.verify(7).await.unwrap();
    assert!(drift.is_clean(), "after two runs at once: {drift:#?}");
}

/// An entity with no record is readable at once, and a store written only
/// by version 2 is readable at the first read.
pub async fn an_empty_entity_is_readable<H: Harness>(h: &H) {
    let repo = MemberRepo::new(h.store());
    assert_eq!(repo.count_per_team("red").await.unwrap(), 0);
    repo.create(&member(1, "a", "red")).await.unwrap();
    assert_eq!(repo.count_per_team("red").await.unwrap(), 1);
    let st = state::load(&h.store(), Member::space())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.complete, 2);

    // No state recorded, only version-2 records: the first read looks.
    let mut b = Batch::new();
    b.delete(Member::space().state_key());
    assert!(h.store().commit(b).await.unwrap().is_applied());
    repo.create(&member(2, "b", "red")).await.unwrap();
    let fresh = MemberRepo::new(h.store());
    assert_eq!(fresh.count_per_team("red").await.unwrap(), 2);
    let st = state::load(&h.store(), Member::space())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.complete, 2, "{st:?}");
}

/// A walk saved after every step (and resumed by a new walker each time)
/// finds what an uninterrupted one finds, and repairs it the same way.
pub async fn a_saved_walk_resumes<H: Harness>(h: &H) {
    let store = h.store();
    let repo = MemberRepo::new(store.clone());
    for i in 0..7 {
        let team = if i < 4 { "red" } else { "blue" };
        repo.create(&member(i, &format!("h{i}"), team))
            .await
            .unwrap();
    }
    let at = Timestamp::from_unix_millis(0).unwrap();
    let mut b = Batch::new();
    b.delete(MemberKeys::by_email("m1@club.io"))
        .incr(MemberKeys::counter_per_team("red"), 2)
        .add(
            MemberKeys::by_team("red"),
            kvmodel::__private::sort_of(&at),
            MemberKeys::record("gone").into_bytes(),
        );
    assert!(store.commit(b).await.unwrap().is_applied());
    let expected = repo.verify(2).await.unwrap();
    assert_eq!(
        (
            expected.missing_claims.len(),
            expected.counters.len(),
            expected.orphan_members.len()
        ),
        (1, 1, 1),
        "{expected:?}"
    );
    let def = Typed::<Member>::new();
    for repair in [false, true] {
        let mut state = WalkState::new(repair);
        Walker::new(&def, &store).start(&mut state).await.unwrap();
        let mut steps = 0;
        while !state.is_done() {
            let fresh = h.store();
            Walker::new(&def, &fresh).step(&mut state, 2).await.unwrap();
            let saved = serde_json::to_string(&state).unwrap();
            state = serde_json::from_str(&saved).unwrap();
            steps += 1;
        }
        assert!(steps > 4, "{steps} steps");
        assert_eq!(state.drift, expected, "repair: {repair}");
    }
    assert!(repo.verify(2).await.unwrap().is_clean());
}

/// One runner holds the migration lease: a second is refused while it is
/// live, racing runners have one winner, a lapsed lease is taken over and
/// its old holder learns it lost it.
pub async fn one_runner_holds_the_lease<H: Harness>(h: &H) {
    let store = h.store();
    let Acquired::Held {
        lease: a,
        took_over: None,
    } = Lease::acquire(&store, "club", "a", 1, 60_000)
        .await
        .unwrap()
    else {
        panic!("the first runner gets the lease");
    };
    match Lease::acquire(&store, "club", "b", 2, 60_000)
        .await
        .unwrap()
    {
        Acquired::Refused(info) => assert_eq!((info.owner.as_str(), info.run), ("a", 1)),
        other => panic!("expected a refusal, got {other:?}"),
    }
    a.release(&store).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..8u64 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            Lease::acquire(&s, "club", &format!("r{i}"), i, 300)
                .await
                .unwrap()
        }));
    }
    let mut held = Vec::new();
    for t in tasks {
        if let Acquired::Held { lease, .. } = t.await.unwrap() {
            held.push(lease);
        }
    }
    assert_eq!(held.len(), 1, "one of eight racing runners wins");
    let mut winner = held.pop().unwrap();
    assert!(winner.renew(&store, 7).await.unwrap());
    h.pass(Duration::from_millis(400)).await;
    match Lease::acquire(&store, "club", "late", 9, 60_000)
        .await
        .unwrap()
    {
        Acquired::Held {
            took_over: Some(old),
            ..
        } => assert_eq!(
            (old.owner.clone(), old.run),
            (winner.info().owner.clone(), 7)
        ),
        other => panic!("a lapsed lease is taken over, got {other:?}"),
    }
    assert!(
        !winner.renew(&store, 7).await.unwrap(),
        "the old holder lost it"
    );
    assert_eq!(
        ledger::current(&store, "club")
            .await
            .unwrap()
            .unwrap()
            .owner,
        "late"
    );
}

/// Runs are appended with increasing numbers and listed newest first.
pub async fn the_ledger_lists_runs<H: Harness>(h: &H) {
    let store = h.store();
    let mut run = Run {
        number: 0,
        owner: "a".into(),
        schema: "club.yaml".into(),
        entities: Vec::new(),
        started_ms: 1,
        ended_ms: None,
        outcome: Outcome::Running,
        note: None,
    };
    assert_eq!(ledger::append(&store, "club", &mut run).await.unwrap(), 1);
    run.outcome = Outcome::Completed;
    run.ended_ms = Some(2);
    ledger::save(&store, "club", &run).await.unwrap();
    let mut second = run.clone();
    second.outcome = Outcome::Interrupted;
    assert_eq!(
        ledger::append(&store, "club", &mut second).await.unwrap(),
        2
    );
    let runs = ledger::runs(&store, "club", 10).await.unwrap();
    let seen: Vec<(u64, Outcome)> = runs.iter().map(|r| (r.number, r.outcome)).collect();
    assert_eq!(
        seen,
        vec![(2, Outcome::Interrupted), (1, Outcome::Completed)]
    );
    assert!(runs[0].unfinished() && !runs[1].unfinished());
    // Neither the ledger nor the lease is an entity's: maintenance of the
    // namespace's entities passes them over.
    let repo = MemberRepo::new(store.clone());
    repo.create(&member(1, "a", "red")).await.unwrap();
    assert!(repo.verify(10).await.unwrap().is_clean());
    assert!(repo.reconcile(10).await.unwrap().is_clean());
    assert_eq!(ledger::runs(&store, "club", 10).await.unwrap().len(), 2);
}
