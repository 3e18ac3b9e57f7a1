//! A generated repository on `RedisStore` against code written directly on
//! Redis with the `redis` crate for the same entity as `vs_redb`: an account
//! with a unique lowercased e-mail, an index by plan ordered by credits, a
//! total and a per-plan counter.
//!
//! The hand-written side keeps its own keys (`raw:…`) on the same server:
//! the record as JSON, e-mail → id, a sorted set per plan scored by credits,
//! two counters; every write is one atomic Lua script (`EVALSHA`) that
//! decodes the old record with `cjson` where it needs it, a find and a page
//! are one script each, a get is one `GET`.
//!
//! Contenders are interleaved: each round runs a share of the operations of
//! one kind on one side, then the same operations on the other (the order
//! alternates between rounds). The table reports the median time per
//! operation, the median of the per-round ratios, and the server's CPU per
//! operation: `used_cpu_user + used_cpu_sys` of `INFO cpu` (everything the
//! server did, network included) and the time the server spent in the
//! commands the client sent (`INFO commandstats`, after `CONFIG RESETSTAT`:
//! `usec` of `evalsha` and `eval` when scripts ran, else of every command),
//! each summed over the side's rounds; and how many commands the server ran
//! per operation (a script's own commands, not the script: the same on
//! every run), and the round trips the kvmodel side took per operation.
//! Before the table: what a record and its delete plan take in the
//! server's memory.
//!
//! Run: `cargo bench -p kvmodel --bench vs_redis`
//! (`KV_BENCH_N` records, `KV_BENCH_OPS` reads × `KV_BENCH_ROUNDS` rounds,
//! `KV_BENCH_WRITE_OPS` writes × `KV_BENCH_WRITE_ROUNDS` rounds,
//! `KV_BENCH_WRITERS` the writers of the concurrent insert row,
//! `KV_BENCH_DELETE_PLANS=1` the kvmodel side's store built with
//! `delete_plans(true)`; a first argument filters the rows by name.)

use std::sync::Arc;
use std::time::Instant;

use kvmodel::{KvEntity, KvEnum, PageRequest, RedisStore};
use redis::aio::MultiplexedConnection;
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

/// The same entity written by hand on Redis: what a careful engineer
/// writes without kvmodel, one script per write.
mod raw {
    use super::*;

    type Res<T> = Result<T, redis::RedisError>;

    const INSERT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
redis.call('INCR', KEYS[4])
redis.call('INCR', KEYS[5])
return 0";

    const FIND: &str = r"
local id = redis.call('GET', KEYS[1])
if not id then return false end
return redis.call('GET', 'raw:account:' .. id)";

    const PAGE: &str = r"
local ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #ids == 0 then return {} end
for i, id in ipairs(ids) do ids[i] = 'raw:account:' .. id end
return redis.call('MGET', unpack(ids))";

    const UPDATE: &str = r"
local old = redis.call('GET', KEYS[1])
if not old then return 1 end
local o = cjson.decode(old)
local id, email, plan, credits = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local old_email = string.lower(o.email)
if old_email ~= email then
  if redis.call('EXISTS', 'raw:email:' .. email) == 1 then return 2 end
  redis.call('DEL', 'raw:email:' .. old_email)
  redis.call('SET', 'raw:email:' .. email, id)
end
if o.plan ~= plan or o.credits ~= tonumber(credits) then
  redis.call('ZREM', 'raw:by_plan:' .. o.plan, id)
  redis.call('ZADD', 'raw:by_plan:' .. plan, credits, id)
end
if o.plan ~= plan then
  redis.call('DECR', 'raw:count:plan:' .. o.plan)
  redis.call('INCR', 'raw:count:plan:' .. plan)
end
redis.call('SET', KEYS[1], ARGV[1])
return 0";

    const DELETE: &str = r"
local old = redis.call('GET', KEYS[1])
if not old then return 1 end
local o = cjson.decode(old)
redis.call('DEL', KEYS[1])
redis.call('DEL', 'raw:email:' .. string.lower(o.email))
redis.call('ZREM', 'raw:by_plan:' .. o.plan, ARGV[1])
redis.call('DECR', 'raw:count:total')
redis.call('DECR', 'raw:count:plan:' .. o.plan)
return 0";

    pub struct Raw {
        insert: redis::Script,
        find: redis::Script,
        page: redis::Script,
        update: redis::Script,
        delete: redis::Script,
    }

    impl Raw {
        pub fn new() -> Raw {
            Raw {
                insert: redis::Script::new(INSERT),
                find: redis::Script::new(FIND),
                page: redis::Script::new(PAGE),
                update: redis::Script::new(UPDATE),
                delete: redis::Script::new(DELETE),
            }
        }

        pub async fn insert(&self, con: &mut MultiplexedConnection, a: &Account) -> Res<i64> {
            let json = serde_json::to_vec(a).unwrap();
            self.insert
                .key(format!("raw:account:{}", a.id))
                .key(format!("raw:email:{}", a.email.to_lowercase()))
                .key(format!("raw:by_plan:{}", a.plan.name()))
                .key("raw:count:total")
                .key(format!("raw:count:plan:{}", a.plan.name()))
                .arg(json)
                .arg(a.id)
                .arg(a.credits)
                .invoke_async(con)
                .await
        }

        pub async fn get(&self, con: &mut MultiplexedConnection, id: u64) -> Res<Option<Account>> {
            let v: Option<Vec<u8>> = redis::cmd("GET")
                .arg(format!("raw:account:{id}"))
                .query_async(con)
                .await?;
            Ok(v.map(|v| serde_json::from_slice(&v).unwrap()))
        }

        pub async fn find(
            &self,
            con: &mut MultiplexedConnection,
            email: &str,
        ) -> Res<Option<Account>> {
            let v: Option<Vec<u8>> = self
                .find
                .key(format!("raw:email:{}", email.to_lowercase()))
                .invoke_async(con)
                .await?;
            Ok(v.map(|v| serde_json::from_slice(&v).unwrap()))
        }

        pub async fn page(
            &self,
            con: &mut MultiplexedConnection,
            plan: Plan,
            limit: usize,
        ) -> Res<Vec<Account>> {
            let vs: Vec<Option<Vec<u8>>> = self
                .page
                .key(format!("raw:by_plan:{}", plan.name()))
                .arg(limit)
                .invoke_async(con)
                .await?;
            Ok(vs
                .into_iter()
                .flatten()
                .map(|v| serde_json::from_slice(&v).unwrap())
                .collect())
        }

        pub async fn update(&self, con: &mut MultiplexedConnection, a: &Account) -> Res<i64> {
            let json = serde_json::to_vec(a).unwrap();
            self.update
                .key(format!("raw:account:{}", a.id))
                .arg(json)
                .arg(a.id)
                .arg(a.email.to_lowercase())
                .arg(a.plan.name())
                .arg(a.credits)
                .invoke_async(con)
                .await
        }

        pub async fn delete(&self, con: &mut MultiplexedConnection, id: u64) -> Res<i64> {
            self.delete
                .key(format!("raw:account:{id}"))
                .arg(id)
                .invoke_async(con)
                .await
        }

        /// Loads `all` (set-up, not measured), pipelined.
        pub async fn load(&self, con: &mut MultiplexedConnection, all: &[Account]) -> Res<()> {
            let mut p = redis::pipe();
            for a in all {
                let plan = a.plan.name();
                p.set(
                    format!("raw:account:{}", a.id),
                    serde_json::to_vec(a).unwrap(),
                )
                .set(format!("raw:email:{}", a.email.to_lowercase()), a.id)
                .zadd(format!("raw:by_plan:{plan}"), a.id, a.credits)
                .incr("raw:count:total", 1)
                .incr(format!("raw:count:plan:{plan}"), 1);
            }
            p.query_async::<()>(con).await
        }
    }
}

#[derive(Clone)]
enum Op {
    Insert(Account),
    Get(u64),
    Find(String),
    Page(Plan),
    Update(Account),
    Delete(u64),
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Kvmodel,
    Raw,
}

struct Ctx {
    repo: AccountRepo<RedisStore>,
    /// The repository's store, whose count of round trips is read.
    store: RedisStore,
    raw: raw::Raw,
    con: MultiplexedConnection,
    /// A connection of its own for `INFO` and `CONFIG RESETSTAT`.
    admin: MultiplexedConnection,
}

impl Ctx {
    async fn run(&self, side: Side, op: &Op) {
        let repo = &self.repo;
        let raw = &self.raw;
        let con = &mut self.con.clone();
        match (side, op) {
            (Side::Kvmodel, Op::Insert(a)) => repo.create(a).await.unwrap(),
            (Side::Kvmodel, Op::Get(id)) => assert!(repo.get(*id).await.unwrap().is_some()),
            (Side::Kvmodel, Op::Find(e)) => {
                assert!(repo.find_by_email(e).await.unwrap().is_some())
            }
            (Side::Kvmodel, Op::Page(plan)) => {
                let page = repo
                    .list_by_plan(*plan, PageRequest::new(50))
                    .await
                    .unwrap();
                assert_eq!(page.items.len(), 50);
            }
            (Side::Kvmodel, Op::Update(a)) => repo.update(a).await.unwrap(),
            (Side::Kvmodel, Op::Delete(id)) => assert!(repo.delete(*id).await.unwrap()),
            (Side::Raw, Op::Insert(a)) => assert_eq!(raw.insert(con, a).await.unwrap(), 0),
            (Side::Raw, Op::Get(id)) => assert!(raw.get(con, *id).await.unwrap().is_some()),
            (Side::Raw, Op::Find(e)) => assert!(raw.find(con, e).await.unwrap().is_some()),
            (Side::Raw, Op::Page(plan)) => {
                assert_eq!(raw.page(con, *plan, 50).await.unwrap().len(), 50)
            }
            (Side::Raw, Op::Update(a)) => assert_eq!(raw.update(con, a).await.unwrap(), 0),
            (Side::Raw, Op::Delete(id)) => assert_eq!(raw.delete(con, *id).await.unwrap(), 0),
        }
    }

    /// Runs `ops` on `side` from `writers` tasks at once (1: in order, on
    /// this task).
    async fn run_all(self: &Arc<Self>, side: Side, ops: &[Op], writers: usize) {
        if writers <= 1 {
            for op in ops {
                self.run(side, op).await;
            }
            return;
        }
        let per = ops.len().div_ceil(writers);
        let tasks: Vec<_> = ops
            .chunks(per)
            .map(|chunk| {
                let ctx = self.clone();
                let chunk = chunk.to_vec();
                tokio::spawn(async move {
                    for op in &chunk {
                        ctx.run(side, op).await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    }

    async fn reset_stats(&self) {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut self.admin.clone())
            .await
            .unwrap();
    }

    /// The server's CPU seconds so far (user + system).
    async fn cpu(&self) -> f64 {
        let info: String = redis::cmd("INFO")
            .arg("cpu")
            .query_async(&mut self.admin.clone())
            .await
            .unwrap();
        info.lines()
            .filter_map(|l| {
                let (k, v) = l.trim().split_once(':')?;
                matches!(k, "used_cpu_user" | "used_cpu_sys").then(|| v.parse::<f64>().unwrap())
            })
            .sum()
    }

    /// Microseconds the server spent in the commands sent since the last
    /// reset: `evalsha` and `eval` when scripts ran (their commands are
    /// counted inside), else every command; `config` and `info` not. With
    /// how many commands ran, a script's own commands counted and not the
    /// script.
    async fn command_usec(&self) -> (f64, f64) {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut self.admin.clone())
            .await
            .unwrap();
        let mut scripts = 0.0;
        let mut all = 0.0;
        let mut calls = 0.0;
        for l in info.lines() {
            let Some((name, rest)) = l.trim().split_once(':') else {
                continue;
            };
            let Some(name) = name.strip_prefix("cmdstat_") else {
                continue;
            };
            let usec: f64 = rest
                .split(',')
                .find_map(|f| f.strip_prefix("usec="))
                .unwrap()
                .parse()
                .unwrap();
            if name.starts_with("config") || name == "info" {
                continue;
            }
            if name == "evalsha" || name == "eval" {
                scripts += usec;
            } else {
                calls += rest
                    .split(',')
                    .find_map(|f| f.strip_prefix("calls="))
                    .unwrap()
                    .parse::<f64>()
                    .unwrap();
            }
            all += usec;
        }
        (if scripts > 0.0 { scripts } else { all }, calls)
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

/// Per side (kvmodel, raw): median µs per operation, median ratio over raw,
/// server CPU µs per operation, command µs per operation, commands per
/// operation.
struct Measured {
    time: [f64; 2],
    ratio: f64,
    cpu: [f64; 2],
    commands: [f64; 2],
    calls: [f64; 2],
    /// Round trips per operation of the kvmodel side (the hand-written
    /// side sends one command or script per operation).
    trips: f64,
}

async fn measure(ctx: &Arc<Ctx>, ops: &[Op], rounds: usize, writers: usize) -> Measured {
    let chunk = ops.len() / rounds;
    let sides = [Side::Kvmodel, Side::Raw];
    let mut times = [Vec::new(), Vec::new()];
    let mut ratios = Vec::new();
    let mut cpu = [0.0; 2];
    let mut commands = [0.0; 2];
    let mut calls = [0.0; 2];
    let mut trips = 0;
    let mut counted = 0;
    for (r, batch) in ops.chunks(chunk).take(rounds).enumerate() {
        let mut round = [0.0; 2];
        counted += batch.len();
        for k in 0..2 {
            let i = (r + k) % 2;
            ctx.reset_stats().await;
            let cpu_before = ctx.cpu().await;
            let trips_before = ctx.store.round_trips();
            let start = Instant::now();
            ctx.run_all(sides[i], batch, writers).await;
            round[i] = start.elapsed().as_secs_f64() * 1e6 / batch.len() as f64;
            trips += ctx.store.round_trips() - trips_before;
            cpu[i] += ctx.cpu().await - cpu_before;
            let (usec, n) = ctx.command_usec().await;
            commands[i] += usec;
            calls[i] += n;
        }
        times[0].push(round[0]);
        times[1].push(round[1]);
        ratios.push(round[0] / round[1]);
    }
    let per = |x: f64| x / counted as f64;
    Measured {
        time: [median(times[0].clone()), median(times[1].clone())],
        ratio: median(ratios),
        cpu: [per(cpu[0]) * 1e6, per(cpu[1]) * 1e6],
        commands: [per(commands[0]), per(commands[1])],
        calls: [per(calls[0]), per(calls[1])],
        trips: per(trips as f64),
    }
}

fn main() {
    let n = env("KV_BENCH_N", 20_000) as u64;
    let ops = env("KV_BENCH_OPS", 500);
    let rounds = env("KV_BENCH_ROUNDS", 6);
    let write_ops_per_round = env("KV_BENCH_WRITE_OPS", 500);
    let write_rounds = env("KV_BENCH_WRITE_ROUNDS", 4);
    let writers = env("KV_BENCH_WRITERS", 32);
    let plans = env("KV_BENCH_DELETE_PLANS", 0) == 1;
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();

    let server = kvmodel::conformance::RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = RedisStore::builder(&server.url())
            .delete_plans(plans)
            .connect()
            .await
            .unwrap();
        let client = redis::Client::open(server.url()).unwrap();
        let con = client.get_multiplexed_async_connection().await.unwrap();
        let admin = client.get_multiplexed_async_connection().await.unwrap();
        let ctx = Arc::new(Ctx {
            repo: AccountRepo::new(store.clone()),
            store,
            raw: raw::Raw::new(),
            con,
            admin,
        });
        eprintln!("loading {n} accounts on each side…");
        let all: Vec<Account> = (0..n).map(account).collect();
        for chunk in all.chunks(1_000) {
            ctx.repo.create_many(chunk).await.unwrap();
            ctx.raw.load(&mut ctx.con.clone(), chunk).await.unwrap();
        }

        // What a record's delete plan costs in the server's memory, beside
        // the record itself (`MEMORY USAGE`, a sample of 200).
        let mut usage = [0u64; 2];
        let space = <Account as kvmodel::__private::Entity>::space();
        for id in (0..n).step_by((n as usize / 200).max(1)).take(200) {
            let key = AccountKeys::record(id);
            for (i, k) in [key.clone(), space.plan_key(&key)].iter().enumerate() {
                let bytes: Option<u64> = redis::cmd("MEMORY")
                    .arg("USAGE")
                    .arg(k)
                    .query_async(&mut ctx.admin.clone())
                    .await
                    .unwrap();
                usage[i] += bytes.unwrap_or(0);
            }
        }
        let sampled = 200.min(n).max(1);
        println!(
            "memory per record (MEMORY USAGE): record {} B, its delete plan {} B",
            usage[0] / sampled,
            usage[1] / sampled
        );

        let mut rng = fastrand::Rng::with_seed(7);
        let write_ops = write_ops_per_round * write_rounds;
        let read_ops = ops * rounds;
        let inserted: Vec<u64> = (n..n + write_ops as u64).collect();
        let concurrent: Vec<u64> = (n + write_ops as u64..n + 2 * write_ops as u64).collect();
        let mut model = all.clone();
        let updates: Vec<Op> = (0..write_ops)
            .map(|_| {
                let a = &mut model[rng.usize(..n as usize)];
                a.plan = a.plan.next();
                a.credits = rng.u64(..1_000_000);
                Op::Update(a.clone())
            })
            .collect();
        let rows: Vec<(String, Vec<Op>, usize, usize)> = vec![
            (
                "insert".to_owned(),
                inserted.iter().map(|&i| Op::Insert(account(i))).collect(),
                write_rounds,
                1,
            ),
            (
                "get by id".to_owned(),
                (0..read_ops).map(|_| Op::Get(rng.u64(..n))).collect(),
                rounds,
                1,
            ),
            (
                "find by unique e-mail".to_owned(),
                (0..read_ops)
                    .map(|_| Op::Find(format!("USER{}@example.COM", rng.u64(..n))))
                    .collect(),
                rounds,
                1,
            ),
            (
                "first 50 of a plan by credits".to_owned(),
                (0..read_ops).map(|i| Op::Page(PLANS[i % 3])).collect(),
                rounds,
                1,
            ),
            ("update (plan moves)".to_owned(), updates, write_rounds, 1),
            (
                "delete".to_owned(),
                inserted.iter().map(|&i| Op::Delete(i)).collect(),
                write_rounds,
                1,
            ),
            (
                format!("insert, {writers} writers"),
                concurrent.iter().map(|&i| Op::Insert(account(i))).collect(),
                write_rounds,
                writers,
            ),
        ];

        println!(
            "| operation | hand-written | kvmodel | ratio | server CPU µs/op, hand / kvmodel | command µs/op, hand / kvmodel | commands/op, hand / kvmodel | round trips/op, kvmodel |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for (name, ops, rounds, writers) in &rows {
            if !name.contains(filter.as_str()) {
                // Keep the data the later rows expect.
                if matches!(ops.first(), Some(Op::Insert(_))) && !name.contains("writers") {
                    for op in ops {
                        ctx.run(Side::Kvmodel, op).await;
                        ctx.run(Side::Raw, op).await;
                    }
                }
                continue;
            }
            let m = measure(&ctx, ops, *rounds, *writers).await;
            println!(
                "| {name} | {:.1} µs | {:.1} µs | {:.2}× | {:.1} / {:.1} | {:.1} / {:.1} | {:.1} / {:.1} | {:.2} |",
                m.time[1],
                m.time[0],
                m.ratio,
                m.cpu[1],
                m.cpu[0],
                m.commands[1],
                m.commands[0],
                m.calls[1],
                m.calls[0],
                m.trips
            );
        }
    });
}
