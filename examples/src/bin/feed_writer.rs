//! A write burst for the change feed's crash tests: several writers at
//! once, each creating, bumping and deleting its own ticks (entity `Tick`,
//! which has a feed) on the store at a URL, until it is killed or a write
//! fails. Before each write a writer prints `begin W OP ID` and after it
//! succeeds `ack W OP ID`, flushing each line, so whoever kills it knows
//! which writes were acknowledged and which were in flight.
//!
//! ```sh
//! feed_writer redb:/tmp/ticks.redb 0 4   # from tick 0 on, 4 writers, until killed
//! ```

use kvmodel::AnyStore;
use kvmodel_examples::ticks::{Tick, TickRepo};
use kvmodel_examples::workload::{self, step};

/// Writer `w`'s workload from tick `start` on: create tick `i`, bump tick
/// `i - 1`, delete tick `i - 2` when `i` is even.
async fn writer(ticks: TickRepo<AnyStore>, w: u64, start: u64) {
    for i in start.. {
        let id = |i: u64| format!("w{w}-{i}");
        step(
            format!("{w} create {}", id(i)),
            ticks.create(&Tick { id: id(i), n: 0 }),
        )
        .await;
        if i > start {
            step(format!("{w} bump {}", id(i - 1)), async {
                ticks.modify(&id(i - 1), |t| t.n += 1).await.map(drop)
            })
            .await;
        }
        if i >= start + 2 && i % 2 == 0 {
            step(format!("{w} delete {}", id(i - 2)), async {
                ticks.delete(&id(i - 2)).await.map(drop)
            })
            .await;
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let [url, start, writers] = workload::args("feed_writer STORE_URL FIRST_TICK WRITERS");
    let start = workload::number("FIRST_TICK", &start);
    let writers = workload::number("WRITERS", &writers);
    let store = workload::open(&url).await;
    let ticks = TickRepo::new(store);
    let tasks: Vec<_> = (0..writers)
        .map(|w| tokio::spawn(writer(ticks.clone(), w, start)))
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}
