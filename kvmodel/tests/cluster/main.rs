//! Generated repositories on a Redis Cluster, where a write spans hash
//! slots: a crash at every step of the cross-slot protocol (readers stay
//! right, `verify` reports what is left, recovery brings drift to zero),
//! racing claims whose key lives on another node, contended
//! read-modify-writes, counters after a contended workload, and one hot
//! record under 64 writers.

mod hot;
mod tx_kill;

use std::collections::BTreeMap;
use std::time::Duration;

use kvmodel::conformance::{ClusterHarness, Harness};
use kvmodel::key::hash_slot;
use kvmodel::{Error, KvEntity, PageRequest, RedisClusterStore, Store};
use kvmodel_runtime::store::CrashPoint;
use serde::{Deserialize, Serialize};

/// A member of a team, with nothing co-located: its record, claim, index
/// entry, counters and discovery member live in different slots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "cl", key = "member:{id}")]
#[kv(index(name = "by_team", fields(team), order_by = score))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "per_team", group_by(team)))]
#[kv(counter(name = "score_per_team", sum = score, group_by(team)))]
struct Member {
    id: String,
    #[kv(unique)]
    email: String,
    team: String,
    score: i64,
}

fn member(id: &str, email: &str, team: &str) -> Member {
    Member {
        id: id.into(),
        email: email.into(),
        team: team.into(),
        score: 1,
    }
}

const LEASE: Duration = Duration::from_millis(200);

/// Which of the test cluster's three masters serves `key`.
fn node(key: &str) -> u16 {
    hash_slot(key) / 5462
}

/// What readers see is one whole image of the record, `None` or `Some`:
/// `get`, the unique lookup of every email named, the team listings and
/// `list_all` agree with it. Counters may lag behind a write whose commit
/// point passed (they move after it); they are checked after recovery.
async fn readers_agree(
    repo: &MemberRepo<RedisClusterStore>,
    id: &str,
    emails: &[&str],
    teams: &[&str],
) -> Option<Member> {
    let got = repo.get(id).await.unwrap();
    for email in emails {
        let found = repo.find_by_email(email).await.unwrap();
        let want = got.clone().filter(|m| m.email == *email);
        assert_eq!(found, want, "find_by_email({email}) against {got:?}");
    }
    for team in teams {
        let listed = repo
            .list_by_team(team, PageRequest::new(100))
            .await
            .unwrap()
            .items;
        let want: Vec<Member> = got
            .clone()
            .filter(|m| m.team == *team)
            .into_iter()
            .collect();
        assert_eq!(
            listed
                .iter()
                .filter(|m| m.id == id)
                .cloned()
                .collect::<Vec<_>>(),
            want
        );
    }
    let all = repo.list_all(PageRequest::new(100)).await.unwrap().items;
    assert_eq!(
        all.iter().find(|m| m.id == id).cloned(),
        got,
        "list_all against get"
    );
    got
}

async fn counters(repo: &MemberRepo<RedisClusterStore>, teams: &[&str]) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    out.insert("total".to_owned(), repo.count_total().await.unwrap());
    for t in teams {
        out.insert(format!("per {t}"), repo.count_per_team(t).await.unwrap());
        out.insert(
            format!("score {t}"),
            repo.sum_score_per_team(t).await.unwrap(),
        );
    }
    out
}

/// One write of each kind, stopped at every crash point of the protocol.
/// While the write is stuck, every reader sees the record before or after
/// it, whole; `verify` reports it once its lease has passed; `reconcile`
/// finishes it (past the commit point) or undoes it (before), and then
/// `verify` finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_at_every_step_is_seen_through_reported_and_repaired() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let store = h.store();
    let repo = MemberRepo::new(store.clone());
    let teams = ["red", "blue"];
    for (i, point) in CrashPoint::ALL.into_iter().enumerate() {
        let committed = matches!(
            point,
            CrashPoint::Committed | CrashPoint::AppliedPart | CrashPoint::Applied
        );
        let crashing = MemberRepo::new(store.crashing_at(point));
        let id = format!("m{i}");
        let (a, b) = (format!("a{i}@x.io"), format!("b{i}@x.io"));
        let emails = [a.as_str(), b.as_str()];
        let old = member(&id, &a, "red");
        let new = Member {
            email: b.clone(),
            team: "blue".into(),
            score: 5,
            ..old.clone()
        };

        // create, update (email and team change), delete.
        let steps: [(&str, Option<Member>, Option<Member>); 3] = [
            ("create", None, Some(old.clone())),
            ("update", Some(old.clone()), Some(new.clone())),
            ("delete", Some(new.clone()), None),
        ];
        for (what, before, after) in steps {
            let counted_before = counters(&repo, &teams).await;
            let err = match what {
                "create" => crashing.create(&old).await.unwrap_err(),
                "update" => crashing.update(&new).await.unwrap_err(),
                _ => crashing.delete(&id).await.unwrap_err(),
            };
            assert!(
                err.to_string().contains("test hook"),
                "{what} {point:?}: {err}"
            );
            let seen = readers_agree(&repo, &id, &emails, &teams).await;
            let expected = if committed { &after } else { &before };
            assert_eq!(&seen, expected, "{what} {point:?}");
            if !committed {
                assert_eq!(
                    counters(&repo, &teams).await,
                    counted_before,
                    "{what} {point:?}"
                );
            }

            store.outlive_leases();
            let drift = repo.verify(50).await.unwrap();
            assert!(
                !drift.is_clean(),
                "{what} {point:?}: the stuck write is reported"
            );
            assert_eq!(drift.unfinished.len(), 1, "{what} {point:?}: {drift:?}");

            repo.reconcile(50).await.unwrap();
            let drift = repo.verify(50).await.unwrap();
            assert!(drift.is_clean(), "{what} {point:?}: {drift:?}");
            assert_eq!(
                readers_agree(&repo, &id, &emails, &teams).await,
                *expected,
                "{what} {point:?}"
            );
            // Bring the record to where the next step expects it.
            match (what, committed) {
                ("create", false) => repo.create(&old).await.unwrap(),
                ("update", false) => repo.update(&new).await.unwrap(),
                ("delete", false) => assert!(repo.delete(&id).await.unwrap()),
                _ => {}
            }
        }
        assert!(repo.verify(50).await.unwrap().is_clean(), "{point:?}");
    }
}

/// The next write to a record whose write crashed finishes or undoes that
/// write (once its lease has passed) and goes on: nothing to repair after.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_next_write_to_the_record_recovers_it() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let store = h.store();
    let repo = MemberRepo::new(store.clone());
    for (i, point) in [CrashPoint::Prepared, CrashPoint::Committed]
        .into_iter()
        .enumerate()
    {
        let m = member(&format!("n{i}"), &format!("n{i}@x.io"), "red");
        let crashed = MemberRepo::new(store.crashing_at(point)).create(&m).await;
        assert!(crashed.is_err());
        // Within its lease the crashed write looks alive: a write meeting
        // its claim waits a little, then fails that condition. Once it is
        // overdue, the next write settles it and goes on.
        store.outlive_leases();
        match point {
            CrashPoint::Prepared => repo.create(&m).await.unwrap(),
            _ => assert!(matches!(
                repo.create(&m).await,
                Err(Error::AlreadyExists { .. })
            )),
        }
        let moved = repo
            .modify(&m.id, |m| m.team = "blue".into())
            .await
            .unwrap();
        assert_eq!(moved.team, "blue");
    }
    let drift = repo.verify(50).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(repo.count_per_team("blue").await.unwrap(), 2);
}

/// Sixteen tasks create sixteen members with one email whose claim lives
/// on another node than every record: exactly one wins, the others get
/// `UniqueViolation`, and nothing of the losers remains.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_racers_for_a_claim_on_another_node_have_one_winner() {
    let h = ClusterHarness::start().await;
    let repo = MemberRepo::new(h.store());
    let email = "race@x.io";
    let claim = MemberKeys::by_email(email);
    let ids: Vec<String> = (0..200)
        .map(|i| format!("racer{i}"))
        .filter(|id| node(&MemberKeys::record(id)) != node(&claim))
        .take(16)
        .collect();
    assert_eq!(ids.len(), 16);
    let wins = kvmodel::conformance::unique_race(16, |i| {
        let (repo, id) = (repo.clone(), ids[i].clone());
        async move { repo.create(&member(&id, email, "red")).await }
    })
    .await;
    assert_eq!(wins, 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert_eq!(
        repo.list_all(PageRequest::new(100))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert!(repo.find_by_email(email).await.unwrap().is_some());
    let drift = repo.verify(50).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

/// Forty modifies from eight tasks of one member, each moving it between
/// teams: none is lost, and its index entry and counters follow it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_contended_modifies_lose_nothing() {
    let h = ClusterHarness::start().await;
    let repo = MemberRepo::new(h.store());
    repo.create(&member("hot", "hot@x.io", "red"))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..5 {
                repo.modify("hot", |m| {
                    m.score += 1;
                    m.team = if (t + i) % 2 == 0 { "red" } else { "blue" }.into();
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let hot = repo.get("hot").await.unwrap().unwrap();
    assert_eq!(hot.score, 41);
    assert_eq!(repo.count_per_team(&hot.team).await.unwrap(), 1);
    assert_eq!(repo.sum_score_per_team(&hot.team).await.unwrap(), 41);
    let drift = repo.verify(50).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

/// Sixteen tasks create, move and delete overlapping members at once;
/// afterwards every counter equals what the records add up to.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn counters_are_exact_after_a_contended_workload() {
    let h = ClusterHarness::start().await;
    let repo = MemberRepo::new(h.store());
    let mut tasks = Vec::new();
    for t in 0..16u32 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..12u32 {
                let id = format!("w{}", (t * 7 + i) % 24);
                let email = format!("{id}@x.io");
                match i % 4 {
                    0 | 1 => match repo.create(&member(&id, &email, "red")).await {
                        Ok(()) | Err(Error::AlreadyExists { .. }) => {}
                        Err(e) => panic!("create: {e}"),
                    },
                    2 => match repo
                        .modify(&id, |m| {
                            m.team = if m.team == "red" { "blue" } else { "red" }.into();
                            m.score += 2;
                        })
                        .await
                    {
                        Ok(_) | Err(Error::NotFound { .. }) => {}
                        Err(e) => panic!("modify: {e}"),
                    },
                    _ => {
                        repo.delete(&id).await.unwrap();
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = repo.list_all(PageRequest::new(100)).await.unwrap().items;
    assert_eq!(repo.count_total().await.unwrap(), all.len() as i64);
    for team in ["red", "blue"] {
        let of: Vec<&Member> = all.iter().filter(|m| m.team == team).collect();
        assert_eq!(repo.count_per_team(team).await.unwrap(), of.len() as i64);
        assert_eq!(
            repo.sum_score_per_team(team).await.unwrap(),
            of.iter().map(|m| m.score).sum::<i64>()
        );
    }
    let drift = repo.verify(50).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    assert!(h.store().unfinished_writes().await.unwrap().is_empty());
}

/// A parent whose delete is restricted by its children.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "cl", key = "crew:{id}")]
#[kv(dependent(entity = Sailor, relation = crew))]
struct Crew {
    id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "cl", key = "sailor:{id}")]
#[kv(relation(name = crew, belongs_to = Crew, by = crew, on_delete = "restrict"))]
struct Sailor {
    id: String,
    crew: String,
}

/// The count of `crew`'s sailors.
fn children_of(crew: &str) -> String {
    format!("cl:sailor#count:crew.children:{crew}")
}

/// A child's create that stops after releasing its hold on the parent but
/// before its count of children moves (the protocol's `AppliedPart`, the
/// parent's slot applied first) must still hold off the parent's delete:
/// the count is locked until it moves. Otherwise the delete finds the count
/// at 0, succeeds, and the child outlives its parent.
#[tokio::test]
async fn a_restricted_delete_sees_a_child_whose_count_has_not_moved_yet() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let store = h.store();
    let (crews, sailors) = (CrewRepo::new(store.clone()), SailorRepo::new(store.clone()));
    // The key format, checked on a plain create.
    crews.create(&Crew { id: "probe".into() }).await.unwrap();
    let probe = Sailor {
        id: "probe".into(),
        crew: "probe".into(),
    };
    sailors.create(&probe).await.unwrap();
    assert_eq!(store.counter(&children_of("probe")).await.unwrap(), 1);

    // A crew, a sailor and the count in three different slots.
    let (crew, sailor) = (0..10_000)
        .map(|i| (format!("c{i}"), format!("s{i}")))
        .find(|(c, s)| {
            let slots = [
                hash_slot(&format!("cl:crew:{c}")),
                hash_slot(&format!("cl:sailor:{s}")),
                hash_slot(&children_of(c)),
            ];
            slots[0] != slots[1] && slots[1] != slots[2] && slots[0] != slots[2]
        })
        .unwrap();
    crews.create(&Crew { id: crew.clone() }).await.unwrap();
    let crashing = SailorRepo::new(store.crashing_at(CrashPoint::AppliedPart));
    let s = Sailor {
        id: sailor.clone(),
        crew: crew.clone(),
    };
    crashing.create(&s).await.unwrap_err();
    assert_eq!(sailors.get(&sailor).await.unwrap(), Some(s), "committed");

    match crews.delete(&crew).await {
        Err(Error::Restricted { .. }) => {}
        other => panic!("the delete must see the sailor, got {other:?}"),
    }
    assert!(crews.get(&crew).await.unwrap().is_some());
    // Once the crashed write is finished, the count holds the sailor.
    store.outlive_leases();
    store.recover_now().await.unwrap();
    assert_eq!(store.counter(&children_of(&crew)).await.unwrap(), 1);
}
