//! Pages, cursors and the repository methods beyond the core (`exists`,
//! `count_all`, `upsert`, `try_modify`, `create_many`, `get_many` over
//! owned keys), through derive-generated repositories on the in-memory,
//! embedded and Redis stores: each case runs on all three.

mod methods;
#[allow(dead_code)] // the model is shared with the upkeep suite
#[path = "../repo/model.rs"]
mod model;
mod pages;

macro_rules! suite {
    ($harness:expr) => {
        suite!(@each $harness;
            pages::cursor_of_another_listing_is_refused,
            pages::next_page_continues_in_the_cursor_direction,
            pages::bounds_take_the_order_by_type,
            pages::bounds_on_buckets_cover_the_bucket,
            methods::get_many_takes_owned_and_borrowed_keys,
            methods::exists_and_count_all,
            methods::upsert_creates_then_replaces_atomically,
            methods::try_modify_returns_the_refusal_without_writing,
            methods::create_many_is_one_commit,
            methods::create_many_names_the_failing_record,
        );
    };
    (@each $harness:expr; $($module:ident :: $case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            let harness = $harness.await;
            crate::$module::$case(&harness).await;
        }
    )*};
}

mod memory {
    suite!(async { kvmodel::conformance::MemoryHarness::new() });
}

mod redb {
    suite!(async { kvmodel::conformance::RedbHarness::new() });
}

mod redis {
    suite!(kvmodel::conformance::RedisHarness::start());
}
