//! A generated repository on `RedbStore` against code written directly on
//! redb for the same entity: an account with a unique lowercased e-mail, an
//! index by plan ordered by credits, a total and a per-plan counter.
//!
//! The hand-written side owns four tables (records by id, e-mail → id,
//! `(plan, credits, id)` entries, counters) in the store's own database file,
//! so both sides share one file, one page cache and one fsync; every write is
//! one durable write transaction on both sides. Reads of the repository are
//! driven with `block_on` per request on a multi-thread runtime, as a
//! synchronous caller would; the hand-written code is called directly.
//!
//! Contenders are interleaved: each round runs `OPS` operations of one kind
//! on one side, then the same operations on the other (the order alternates
//! between rounds), and the table reports the median time per operation and
//! the median of the per-round ratios.
//!
//! Run: `cargo bench -p kvmodel --bench vs_redb`
//! (`KV_BENCH_N`, `KV_BENCH_OPS`, `KV_BENCH_ROUNDS` change the size; a first
//! argument filters the rows by name.)

use std::time::{Duration, Instant};

use kvmodel::{KvEntity, KvEnum, PageRequest, RedbStore};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

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
        let Some(id) = txn.open_table(EMAILS)?.get(email.as_str())?.map(|v| v.value()) else {
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

struct Ctx {
    rt: tokio::runtime::Runtime,
    repo: AccountRepo<RedbStore>,
    store: RedbStore,
}

impl Ctx {
    fn db(&self) -> &Database {
        self.store.__database()
    }

    fn run_kvmodel(&self, op: &Op) {
        let rt = &self.rt;
        match op {
            Op::Insert(a) => rt.block_on(self.repo.create(a)).unwrap(),
            Op::Get(id) => assert!(rt.block_on(self.repo.get(*id)).unwrap().is_some()),
            Op::Find(email) => {
                assert!(rt.block_on(self.repo.find_by_email(email)).unwrap().is_some())
            }
            Op::Page(plan) => {
                let page = rt
                    .block_on(self.repo.list_by_plan(*plan, PageRequest::new(50)))
                    .unwrap();
                assert_eq!(page.items.len(), 50);
            }
            Op::Update(a) => rt.block_on(self.repo.update(a)).unwrap(),
            Op::Delete(id) => assert!(rt.block_on(self.repo.delete(*id)).unwrap()),
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

/// Runs `rounds` rounds of `ops` (split evenly), alternating which side
/// goes first; returns (kvmodel ns/op, raw ns/op, median ratio).
fn measure(ctx: &Ctx, ops: &[Op], rounds: usize) -> (f64, f64, f64) {
    let chunk = ops.len() / rounds;
    let (mut kv, mut raw, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for (r, batch) in ops.chunks(chunk).take(rounds).enumerate() {
        let time = |kvmodel: bool| {
            let start = Instant::now();
            for op in batch {
                if kvmodel {
                    ctx.run_kvmodel(op)
                } else {
                    ctx.run_raw(op)
                }
            }
            per_op(start.elapsed(), batch.len())
        };
        let (k, w) = if r % 2 == 0 {
            let k = time(true);
            (k, time(false))
        } else {
            let w = time(false);
            (time(true), w)
        };
        kv.push(k);
        raw.push(w);
        ratios.push(k / w);
    }
    (median(kv), median(raw), median(ratios))
}

fn main() {
    let n = env("KV_BENCH_N", 20_000) as u64;
    let ops = env("KV_BENCH_OPS", 1_000);
    let rounds = env("KV_BENCH_ROUNDS", 6);
    let write_rounds = env("KV_BENCH_WRITE_ROUNDS", 4);
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();

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
    for a in &all {
        // Loading speed does not matter; one transaction per record keeps
        // the raw side's code to the functions measured.
        raw::insert(ctx.db(), a).unwrap().unwrap();
    }

    let mut rng = fastrand::Rng::with_seed(7);
    let write_ops = ops * write_rounds;
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
            (0..read_ops)
                .map(|i| Op::Page(PLANS[i % 3]))
                .collect(),
            rounds,
        ),
        ("update (plan moves)", updates, write_rounds),
        (
            "delete",
            inserted.iter().map(|&i| Op::Delete(i)).collect(),
            write_rounds,
        ),
    ];

    println!("| operation | kvmodel (RedbStore) | raw redb | kvmodel / raw redb |");
    println!("|---|---|---|---|");
    for (name, ops, rounds) in &rows {
        if !name.contains(filter.as_str()) {
            // Later rows may need what an earlier row wrote (delete needs the
            // inserts): run it untimed on both sides.
            if matches!(ops.first(), Some(Op::Insert(_) | Op::Update(_))) {
                for op in ops {
                    ctx.run_kvmodel(op);
                    ctx.run_raw(op);
                }
            }
            continue;
        }
        if matches!(ops.first(), Some(Op::Get(_) | Op::Find(_) | Op::Page(_))) {
            // Reads repeat nothing: warm both sides up on the first round's.
            for op in &ops[..ops.len() / rounds] {
                ctx.run_kvmodel(op);
                ctx.run_raw(op);
            }
        }
        let (k, w, ratio) = measure(&ctx, ops, *rounds);
        println!(
            "| {name} | {} | {} | {ratio:.2}× |",
            fmt_ns(k),
            fmt_ns(w)
        );
    }
    // Both sides ended in the same state.
    for plan in PLANS {
        let kv = ctx.rt.block_on(ctx.repo.count_by_plan(plan)).unwrap();
        assert_eq!(kv, raw::count(ctx.db(), plan).unwrap(), "{plan:?}");
    }
}
