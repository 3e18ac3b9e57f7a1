//! `kvmodel verify | reconcile | migrate | inspect | purge` end to end, on a
//! redb file, on a Redis server, on a Redis Cluster and on a DynamoDB
//! emulator started for the test: a store populated by generated code and damaged by hand is found
//! out (exit 1), repaired and clean again; a migration backfills what reads
//! refused before; a second migration is refused while the first holds the
//! lease; an interrupted migration resumes; a saved walk resumes; a record
//! that cannot be read is purged with what points to it; a sharded counter
//! is inspected whole. `kvmodel acl` and `kvmodel tail` have their own
//! modules.

mod acl;
mod cases;
mod click;
mod mixed;
mod support;
mod tail;
mod visit;

use cases::*;
use support::Backend;

macro_rules! on_every_store {
    ($($case:ident),* $(,)?) => {
        mod redb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::Backend::redb()).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::Backend::redis()).await;
                }
            )*
        }
        mod cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::Backend::cluster()).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::Backend::dynamo().await).await;
                }
            )*
        }
    };
}

on_every_store!(
    damage_is_found_repaired_and_gone,
    migrate_backfills_what_reads_refused,
    a_held_lease_refuses_and_a_lapsed_one_is_taken_over,
    a_saved_verify_resumes,
    inspect_reads_through_the_schema,
    compressed_records_are_verified_and_inspected,
    purge_removes_what_cannot_be_read,
    purge_takes_back_what_a_receipt_lists,
    inspect_sums_every_shard_of_a_counter,
    inspect_pages_a_records_links,
    a_dry_run_migration_says_what_it_would_do,
    a_kept_counter_is_checked_from_below_and_never_lowered,
    an_older_writer_after_migrate_is_reported_behind,
);

/// A model of a Rust source file and a schema file, verified as one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_of_both_files_are_verified() {
    mixed::entities_of_both_files_are_verified(Backend::redb()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_over_tls() {
    cases::verify_over_tls(Backend::tls()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_migrations_one_refused() {
    cases::two_concurrent_migrations_one_refused(Backend::redis()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_lost_its_lease_leaves_the_run_to_its_new_holder() {
    cases::a_runner_that_lost_its_lease_leaves_the_run_to_its_new_holder(Backend::redis()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_migration_resumes() {
    cases::an_interrupted_migration_resumes(Backend::redis()).await;
}

/// A store URL that names no data a program wrote is refused (exit 2) by
/// every command, and no file is created.
#[test]
fn stores_that_hold_no_data_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo.redb");
    let redb = format!("redb:{}", missing.display());
    for command in ["verify", "reconcile", "migrate", "inspect", "purge"] {
        for (url, says) in [
            (redb.as_str(), "there is no redb file at"),
            ("memory:", "is a store inside one process"),
        ] {
            let mut args = support::ops(command, url, &[]);
            if command == "inspect" || command == "purge" {
                args.extend(["User", "u1"]);
            }
            let o = support::kvmodel(&args);
            assert_eq!(
                support::code(&o),
                2,
                "{command} {url}: {}",
                support::err(&o)
            );
            assert!(
                support::err(&o).contains(says),
                "{command} {url}: {}",
                support::err(&o)
            );
            assert!(!missing.exists(), "{command} created {}", missing.display());
        }
    }
}

/// An empty store is readable at once (the first read would say so), so
/// `verify` calls nothing of it write-only; it exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_store_has_nothing_write_only() {
    let b = Backend::redb();
    drop(b.open().await);
    let url = b.url();
    let o = support::kvmodel(&support::ops("verify", &url, &["-q"]));
    assert_eq!(support::code(&o), 0, "{}", support::err(&o));
    assert!(
        !support::out(&o).contains("write-only"),
        "{}",
        support::out(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_migrations_one_refused_on_a_cluster() {
    cases::two_concurrent_migrations_one_refused(Backend::cluster()).await;
}
