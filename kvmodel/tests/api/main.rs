//! Pages, cursors and the repository methods beyond the core (`exists`,
//! `count_all`, `upsert`, `try_modify`, `create_many`, `get_many` over
//! owned keys), through derive-generated repositories on the in-memory,
//! embedded and Redis stores: each case runs on all three.

mod methods;
#[allow(dead_code)] // the model is shared with the upkeep suite
#[path = "../repo/model.rs"]
mod model;
mod pages;

use methods::*;
use pages::*;

kvmodel_runtime::on_every_backend!(
    cursor_of_another_listing_is_refused,
    next_page_continues_in_the_cursor_direction,
    bounds_take_the_order_by_type,
    bounds_on_buckets_cover_the_bucket,
    get_many_takes_owned_and_borrowed_keys,
    exists_and_count_all,
    upsert_creates_then_replaces_atomically,
    try_modify_returns_the_refusal_without_writing,
    create_many_is_one_commit,
    create_many_names_the_failing_record,
);
