//! A generated repository on `RedbStore` against code written directly on
//! redb for the same entity: an account with a unique lowercased e-mail, an
//! index by plan ordered by credits, a total and a per-plan counter.
//!
//! The hand-written side owns four tables (records by id, e-mail → id,
//! `(plan, credits, id)` entries, counters) in the store's own database file,
//! so both sides share one file, one page cache and one fsync; every write is
//! one durable write transaction on both sides. The repository is driven as
//! a synchronous caller would drive it: `block_on` per call on a
//! multi-thread tokio runtime, and (reads) polled on the calling thread
//! without a runtime; the hand-written code is called directly.
//!
//! Contenders are interleaved: each round runs a share of the operations of one kind
//! on one side, then the same operations on the other (the order alternates
//! between rounds), and the table reports the median time per operation and
//! the median of the per-round ratios.
//!
//! Run: `cargo bench -p kvmodel --bench vs_redb`
//! (`KV_BENCH_N` records, `KV_BENCH_OPS` reads × `KV_BENCH_ROUNDS` rounds,
//! `KV_BENCH_WRITE_OPS` writes × `KV_BENCH_WRITE_ROUNDS` rounds change the
//! size; a first argument filters the rows by name.)
//!
//! Concurrent creates (`concurrent.rs`): the same create from 1, 8, 32 and
//! 128 writers at once, each side on a fresh file, reported in creates per
//! second. They run after the other rows, or alone with the first argument
//! `concurrent` (`KV_BENCH_CONCURRENT_N` creates per run,
//! `KV_BENCH_CONCURRENT_ROUNDS` rounds, `KV_BENCH_WRITERS` the writer counts).
//!
//! Instructions instead of time: with `KV_BENCH_CALLGRIND=1` each row runs
//! its operations once per side, in the functions `counted_raw`,
//! `counted_tokio` and (reads) `counted_polled`, whose inclusive costs
//! `valgrind --tool=callgrind` then reports (see BENCHMARKS.md).

use std::alloc::System;
use std::time::{Duration, Instant};

use kvmodel::{KvEntity, KvEnum, PageRequest, RedbStore};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

mod concurrent;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
enum Plan {
    Free,
    Pro,
    Team,
}

const PLANS: [Plan; 3] = [Plan::Free, Plan::Pro, Plan::Team];

impl Plan {
    fn name(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Pro => "pro",
            Plan::Team => "team",
        }
    }

    fn next(self) -> Plan {
        match self {
            Plan::Free => Plan::Pro,
            Plan::Pro => Plan::Team,
            Plan::Team => Plan::Free,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bench", key = "account:{id}")]
#[kv(index(name = "by_plan", fields(plan), order_by = credits))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "by_plan", group_by(plan)))]
struct Account {
    id: u64,
    #[kv(unique, normalize = "lowercase")]
    email: String,
    name: String,
    plan: Plan,
    credits: u64,
}

fn account(id: u64) -> Account {
    Account {
        id,
        email: format!("User{id}@Example.com"),
        name: "Ada Lovelace".to_owned(),
        plan: PLANS[(id % 3) as usize],
        credits: id.wrapping_mul(2_654_435_761) % 1_000_000,
    }
}

/// The same entity written by hand on redb: what a careful engineer writes
/// without kvmodel.
mod raw {
    use super::*;

    const ACCOUNTS: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("raw_accounts");
    const EMAILS: TableDefinition<'_, &str, u64> = TableDefinition::new("raw_account_emails");
    const BY_PLAN: TableDefinition<'_, (&str, u64, u64), ()> =
        TableDefinition::new("raw_accounts_by_plan");
    const COUNTERS: TableDefinition<'_, &str, i64> = TableDefinition::new("raw_counters");

    /// Why a write was refused.
    #[derive(Debug)]
    pub enum Refused {
        AlreadyExists,
        EmailTaken,
        NotFound,
    }

    type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

    fn plan_counter(plan: Plan) -> String {
        format!("plan:{}", plan.name())
    }

    fn bump(t: &mut redb::Table<'_, &str, i64>, key: &str, delta: i64) -> Res<()> {
        let cur = t.get(key)?.map_or(0, |v| v.value());
        t.insert(key, cur + delta)?;
        Ok(())
    }

    pub fn create_tables(db: &Database) -> Res<()> {
        let txn = db.begin_write()?;
        txn.open_table(ACCOUNTS)?;
        txn.open_table(EMAILS)?;
        txn.open_table(BY_PLAN)?;
        txn.open_table(COUNTERS)?;
        txn.commit()?;
        Ok(())
    }

    pub fn insert(db: &Database, a: &Account) -> Res<Result<(), Refused>> {
        let email = a.email.to_lowercase();
        let bytes = serde_json::to_vec(a)?;
        let txn = db.begin_write()?;
        {
            let mut accounts = txn.open_table(ACCOUNTS)?;
            let mut emails = txn.open_table(EMAILS)?;
            if accounts.get(a.id)?.is_some() {
                return Ok(Err(Refused::AlreadyExists));
            }
            if emails.get(email.as_str())?.is_some() {
                return Ok(Err(Refused::EmailTaken));
            }
            accounts.insert(a.id, bytes.as_slice())?;
            emails.insert(email.as_str(), a.id)?;
            txn.open_table(BY_PLAN)?
                .insert((a.plan.name(), a.credits, a.id), ())?;
            let mut counters = txn.open_table(COUNTERS)?;
            bump(&mut counters, "total", 1)?;
            bump(&mut counters, &plan_counter(a.plan), 1)?;
        }
        txn.commit()?;
        Ok(Ok(()))
    }

    /// Loads `all` in one transaction (set-up, not measured).
    pub fn load(db: &Database, all: &[Account]) -> Res<()> {
        let txn = db.begin_write()?;
        {
            let mut accounts = txn.open_table(ACCOUNTS)?;
            let mut emails = txn.open_table(EMAILS)?;
            let mut entries = txn.open_table(BY_PLAN)?;
            let mut counters = txn.open_table(COUNTERS)?;
            for a in all {
                accounts.insert(a.id, serde_json::to_vec(a)?.as_slice())?;
                emails.insert(a.email.to_lowercase().as_str(), a.id)?;
                entries.insert((a.plan.name(), a.credits, a.id), ())?;
                bump(&mut counters, "total", 1)?;
                bump(&mut counters, &plan_counter(a.plan), 1)?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    pub fn get(db: &Database, id: u64) -> Res<Option<Account>> {
        let txn = db.begin_read()?;
        let accounts = txn.open_table(ACCOUNTS)?;
        Ok(match accounts.get(id)? {
            Some(v) => Some(serde_json::from_slice(v.value())?),
            None => None,
        })
    }

    pub fn find_by_email(db: &Database, email: &str) -> Res<Option<Account>> {
        let email = email.to_lowercase();
        let txn = db.begin_read()?;
        let Some(id) = txn
            .open_table(EMAILS)?
            .get(email.as_str())?
            .map(|v| v.value())
        else {
            return Ok(None);
        };
        let accounts = txn.open_table(ACCOUNTS)?;
        Ok(match accounts.get(id)? {
            Some(v) => Some(serde_json::from_slice(v.value())?),
            None => None,
        })
    }

    pub fn first_by_plan(db: &Database, plan: Plan, limit: usize) -> Res<Vec<Account>> {
        let txn = db.begin_read()?;
        let entries = txn.open_table(BY_PLAN)?;
        let accounts = txn.open_table(ACCOUNTS)?;
        let mut out = Vec::with_capacity(limit);
        for item in entries
            .range((plan.name(), 0, 0)..=(plan.name(), u64::MAX, u64::MAX))?
            .take(limit)
        {
            let (k, _) = item?;
            let id = k.value().2;
            if let Some(v) = accounts.get(id)? {
                out.push(serde_json::from_slice(v.value())?);
            }
        }
        Ok(out)
    }

    pub fn update(db: &Database, a: &Account) -> Res<Result<(), Refused>> {
        let bytes = serde_json::to_vec(a)?;
        let txn = db.begin_write()?;
        {
            let mut accounts = txn.open_table(ACCOUNTS)?;
            let old: Account = match accounts.get(a.id)? {
                Some(v) => serde_json::from_slice(v.value())?,
                None => return Ok(Err(Refused::NotFound)),
            };
            let (old_email, new_email) = (old.email.to_lowercase(), a.email.to_lowercase());
            if old_email != new_email {
                let mut emails = txn.open_table(EMAILS)?;
                if emails.get(new_email.as_str())?.is_some() {
                    return Ok(Err(Refused::EmailTaken));
                }
                emails.remove(old_email.as_str())?;
                emails.insert(new_email.as_str(), a.id)?;
            }
            if (old.plan, old.credits) != (a.plan, a.credits) {
                let mut entries = txn.open_table(BY_PLAN)?;
                entries.remove((old.plan.name(), old.credits, a.id))?;
                entries.insert((a.plan.name(), a.credits, a.id), ())?;
            }
            if old.plan != a.plan {
                let mut counters = txn.open_table(COUNTERS)?;
                bump(&mut counters, &plan_counter(old.plan), -1)?;
                bump(&mut counters, &plan_counter(a.plan), 1)?;
            }
            accounts.insert(a.id, bytes.as_slice())?;
        }
        txn.commit()?;
        Ok(Ok(()))
    }

    pub fn delete(db: &Database, id: u64) -> Res<bool> {
        let txn = db.begin_write()?;
        {
            let mut accounts = txn.open_table(ACCOUNTS)?;
            let old: Account = match accounts.remove(id)? {
                Some(v) => serde_json::from_slice(v.value())?,
                None => return Ok(false),
            };
            txn.open_table(EMAILS)?
                .remove(old.email.to_lowercase().as_str())?;
            txn.open_table(BY_PLAN)?
                .remove((old.plan.name(), old.credits, id))?;
            let mut counters = txn.open_table(COUNTERS)?;
            bump(&mut counters, "total", -1)?;
            bump(&mut counters, &plan_counter(old.plan), -1)?;
        }
        txn.commit()?;
        Ok(true)
    }

    pub fn count(db: &Database, plan: Plan) -> Res<i64> {
        let txn = db.begin_read()?;
        let counters = txn.open_table(COUNTERS)?;
        Ok(counters
            .get(plan_counter(plan).as_str())?
            .map_or(0, |v| v.value()))
    }
}

/// The system allocator, counting allocations: the table of allocations
/// per operation comes from it.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations so far (reallocations count: each may move the block).
fn allocations() -> u64 {
    let s = GLOBAL.stats();
    (s.allocations + s.reallocations) as u64
}

/// One operation of a row, the same for both sides.
#[derive(Clone)]
enum Op {
    Insert(Account),
    Get(u64),
    Find(String),
    Page(Plan),
    Update(Account),
    Delete(u64),
}

/// How a synchronous caller drives the repository's futures.
#[derive(Clone, Copy)]
enum Drive {
    /// `Runtime::block_on` of a multi-thread tokio runtime, per call.
    Tokio,
    /// Polled on this thread with no runtime at all (the embedded stores
    /// need none): what a small executor such as `pollster` does.
    Polled,
}

#[derive(Clone, Copy)]
enum Side {
    Kvmodel(Drive),
    Raw,
}

/// Polls `f` to completion on this thread, parking between polls.
fn poll_to_end<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    thread_local! {
        static WAKER: std::task::Waker =
            std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    }
    WAKER.with(|waker| {
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        loop {
            match f.as_mut().poll(&mut cx) {
                std::task::Poll::Ready(v) => return v,
                std::task::Poll::Pending => std::thread::park(),
            }
        }
    })
}

struct Ctx {
    rt: tokio::runtime::Runtime,
    repo: AccountRepo<RedbStore>,
    store: RedbStore,
}

impl Ctx {
    fn db(&self) -> &Database {
        self.store.__database()
    }

    /// Runs `op` on the repository, each call driven by `drive`.
    fn run_kvmodel(&self, op: &Op, drive: Drive) {
        let repo = &self.repo;
        match op {
            Op::Insert(a) => self.block_on(drive, repo.create(a)).unwrap(),
            Op::Get(id) => assert!(self.block_on(drive, repo.get(*id)).unwrap().is_some()),
            Op::Find(email) => {
                assert!(
                    self.block_on(drive, repo.find_by_email(email))
                        .unwrap()
                        .is_some()
                )
            }
            Op::Page(plan) => {
                let page = self
                    .block_on(drive, repo.list_by_plan(*plan, PageRequest::new(50)))
                    .unwrap();
                assert_eq!(page.items.len(), 50);
            }
            Op::Update(a) => self.block_on(drive, repo.update(a)).unwrap(),
            Op::Delete(id) => assert!(self.block_on(drive, repo.delete(*id)).unwrap()),
        }
    }

    fn block_on<F: std::future::Future>(&self, drive: Drive, f: F) -> F::Output {
        match drive {
            Drive::Tokio => self.rt.block_on(f),
            Drive::Polled => poll_to_end(f),
        }
    }

    fn run(&self, side: Side, op: &Op) {
        match side {
            Side::Kvmodel(drive) => self.run_kvmodel(op, drive),
            Side::Raw => self.run_raw(op),
        }
    }

    fn run_raw(&self, op: &Op) {
        let db = self.db();
        match op {
            Op::Insert(a) => raw::insert(db, a).unwrap().unwrap(),
            Op::Get(id) => assert!(raw::get(db, *id).unwrap().is_some()),
            Op::Find(email) => assert!(raw::find_by_email(db, email).unwrap().is_some()),
            Op::Page(plan) => assert_eq!(raw::first_by_plan(db, *plan, 50).unwrap().len(), 50),
            Op::Update(a) => raw::update(db, a).unwrap().unwrap(),
            Op::Delete(id) => assert!(raw::delete(db, *id).unwrap()),
        }
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn per_op(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e9 / n as f64
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// The operations of a row on raw redb, once: a function of its own, so
/// that callgrind reports its instructions.
#[inline(never)]
fn counted_raw(ctx: &Ctx, ops: &[Op]) {
    ops.iter().for_each(|op| ctx.run(Side::Raw, op));
}

/// [`counted_raw`] on the repository, polled on this thread.
#[inline(never)]
fn counted_polled(ctx: &Ctx, ops: &[Op]) {
    ops.iter()
        .for_each(|op| ctx.run(Side::Kvmodel(Drive::Polled), op));
}

/// [`counted_raw`] on the repository, driven by `block_on`.
#[inline(never)]
fn counted_tokio(ctx: &Ctx, ops: &[Op]) {
    ops.iter()
        .for_each(|op| ctx.run(Side::Kvmodel(Drive::Tokio), op));
}

/// Runs `rounds` rounds of `ops` (split evenly) on every side, rotating
/// which side goes first; returns each side's median time per operation
/// and the median of its per-round ratios to the last side (raw redb).
fn measure(ctx: &Ctx, sides: &[Side], ops: &[Op], rounds: usize) -> Measured {
    let chunk = ops.len() / rounds;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    let mut allocated_by = vec![0u64; sides.len()];
    let mut counted = 0;
    for (r, batch) in ops.chunks(chunk).take(rounds).enumerate() {
        let mut round = vec![0.0; sides.len()];
        counted += batch.len() as u64;
        for k in 0..sides.len() {
            let i = (r + k) % sides.len();
            let allocated = allocations();
            let start = Instant::now();
            for op in batch {
                ctx.run(sides[i], op);
            }
            round[i] = per_op(start.elapsed(), batch.len());
            allocated_by[i] += allocations() - allocated;
        }
        let base = round[sides.len() - 1];
        for (i, t) in round.into_iter().enumerate() {
            times[i].push(t);
            ratios[i].push(t / base);
        }
    }
    let sides = times
        .into_iter()
        .zip(ratios)
        .map(|(t, r)| (median(t), median(r)))
        .collect();
    let allocations = allocated_by
        .into_iter()
        .map(|a| a as f64 / counted as f64)
        .collect();
    Measured { sides, allocations }
}

/// Per side: the median time per operation and the median ratio to the
/// last side; and the allocations per operation.
struct Measured {
    sides: Vec<(f64, f64)>,
    allocations: Vec<f64>,
}

fn main() {
    let n = env("KV_BENCH_N", 20_000) as u64;
    let ops = env("KV_BENCH_OPS", 1_000);
    let rounds = env("KV_BENCH_ROUNDS", 6);
    let write_ops_per_round = env("KV_BENCH_WRITE_OPS", 250);
    let write_rounds = env("KV_BENCH_WRITE_ROUNDS", 4);
    let callgrind = std::env::var_os("KV_BENCH_CALLGRIND").is_some();
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    // Concurrent creates need none of the records loaded below.
    let concurrent = !callgrind && concurrent::NAME.contains(filter.as_str());
    if concurrent && !filter.is_empty() {
        concurrent::run();
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("bench.redb")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ctx = Ctx {
        repo: AccountRepo::new(store.clone()),
        store,
        rt,
    };
    raw::create_tables(ctx.db()).unwrap();
    eprintln!("loading {n} accounts on each side…");
    let all: Vec<Account> = (0..n).map(account).collect();
    for chunk in all.chunks(1_000) {
        ctx.rt.block_on(ctx.repo.create_many(chunk)).unwrap();
    }
    for chunk in all.chunks(1_000) {
        raw::load(ctx.db(), chunk).unwrap();
    }

    let mut rng = fastrand::Rng::with_seed(7);
    let write_ops = write_ops_per_round * write_rounds;
    let read_ops = ops * rounds;
    let inserted: Vec<u64> = (n..n + write_ops as u64).collect();
    let mut model = all.clone();
    let updates: Vec<Op> = (0..write_ops)
        .map(|_| {
            let a = &mut model[rng.usize(..n as usize)];
            a.plan = a.plan.next();
            a.credits = rng.u64(..1_000_000);
            Op::Update(a.clone())
        })
        .collect();
    let rows: Vec<(&str, Vec<Op>, usize)> = vec![
        (
            "insert",
            inserted.iter().map(|&i| Op::Insert(account(i))).collect(),
            write_rounds,
        ),
        (
            "get by id",
            (0..read_ops).map(|_| Op::Get(rng.u64(..n))).collect(),
            rounds,
        ),
        (
            "find by unique e-mail",
            (0..read_ops)
                .map(|_| Op::Find(format!("USER{}@example.COM", rng.u64(..n))))
                .collect(),
            rounds,
        ),
        (
            "first 50 of a plan by credits",
            (0..read_ops).map(|i| Op::Page(PLANS[i % 3])).collect(),
            rounds,
        ),
        ("update (plan moves)", updates, write_rounds),
        (
            "delete",
            inserted.iter().map(|&i| Op::Delete(i)).collect(),
            write_rounds,
        ),
    ];

    println!(
        "| operation | raw redb | kvmodel, tokio `block_on` | ratio | kvmodel, polled | ratio |"
    );
    println!("|---|---|---|---|---|---|");
    let all = |op: &Op| {
        for side in [
            Side::Kvmodel(Drive::Tokio),
            Side::Kvmodel(Drive::Polled),
            Side::Raw,
        ] {
            ctx.run(side, op);
        }
    };
    let mut allocations = Vec::new();
    for (name, ops, rounds) in &rows {
        let write = matches!(
            ops.first(),
            Some(Op::Insert(_) | Op::Update(_) | Op::Delete(_))
        );
        if !name.contains(filter.as_str()) {
            // Later rows may need what an earlier row wrote (delete needs the
            // inserts): run it untimed on both sides.
            if matches!(ops.first(), Some(Op::Insert(_) | Op::Update(_))) {
                for op in ops {
                    ctx.run_kvmodel(op, Drive::Tokio);
                    ctx.run_raw(op);
                }
            }
            continue;
        }
        if !write {
            // Reads repeat nothing: warm every side up on the first round's.
            ops[..ops.len() / rounds].iter().for_each(all);
        }
        if callgrind {
            counted_raw(&ctx, ops);
            counted_tokio(&ctx, ops);
            if !write {
                counted_polled(&ctx, ops);
            }
            println!(
                "| {name} | {} operations per side, for callgrind |",
                ops.len()
            );
            continue;
        }
        // Writes are dominated by the fsync of each commit; they run on the
        // tokio runtime only.
        let sides: &[Side] = if write {
            &[Side::Kvmodel(Drive::Tokio), Side::Raw]
        } else {
            &[
                Side::Kvmodel(Drive::Tokio),
                Side::Kvmodel(Drive::Polled),
                Side::Raw,
            ]
        };
        let measured = measure(&ctx, sides, ops, *rounds);
        let a = &measured.allocations;
        allocations.push(format!("| {name} | {:.1} | {:.1} |", a[a.len() - 1], a[0]));
        let m = measured.sides;
        let raw = m[m.len() - 1].0;
        let (tokio, tokio_ratio) = m[0];
        let polled = if write {
            "| – | – |".to_owned()
        } else {
            format!("| {} | {:.2}× |", fmt_ns(m[1].0), m[1].1)
        };
        println!(
            "| {name} | {} | {} | {tokio_ratio:.2}× {polled}",
            fmt_ns(raw),
            fmt_ns(tokio)
        );
    }
    if !allocations.is_empty() {
        println!("\n| operation | allocations per operation, raw redb | kvmodel |");
        println!("|---|---|---|");
        allocations.iter().for_each(|row| println!("{row}"));
    }
    // The floor under every read of the repository: `block_on` of a future
    // that is ready at once.
    let start = Instant::now();
    for _ in 0..ops * rounds {
        ctx.rt.block_on(async { std::hint::black_box(1) });
    }
    println!(
        "\n`block_on` of a ready future on this runtime: {}",
        fmt_ns(per_op(start.elapsed(), ops * rounds))
    );
    // Both sides ended in the same state.
    for plan in PLANS {
        let kv = ctx.rt.block_on(ctx.repo.count_by_plan(plan)).unwrap();
        assert_eq!(kv, raw::count(ctx.db(), plan).unwrap(), "{plan:?}");
    }
    if concurrent {
        concurrent::run();
    }
}
