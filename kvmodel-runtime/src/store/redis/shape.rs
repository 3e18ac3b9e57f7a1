//! Commit scripts written for one plan: a generated repository sends few
//! shapes of batch (a create, an update that moves an index, a delete),
//! and a script that knows its shape runs its commands one after the
//! other, without reading the plan, keeping tables or defining functions,
//! which in Lua cost more than the commands themselves.
//!
//! A server runs a shape script alone; a cluster runs it for a batch
//! within one slot, behind the check of other writes' holds
//! (`lua/cluster/single.lua`), as it runs `commit.lua`.
//!
//! A shape script takes `commit.lua`'s `KEYS` and `ARGV` (the plan
//! ([`commit_args`](super::wire::commit_args)) names the script) and
//! commits an ordinary batch as `commit.lua` does: conditions checked with
//! one `GET` each, values checked, members added (to collections that lose
//! none) and counters moved first with commands that refuse a key of
//! another kind, values and collections that lose members written last, then
//! change-feed appends (with `feed.lua`'s `feed_append`, which such a
//! script starts with). Where
//! `commit.lua` would hand the batch to its general validation (a key of
//! another kind, a refusal), a shape script moves back what it moved and
//! answers `{-9}`, and the store sends the batch to `commit.lua`, which
//! names what does not fit.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use crate::store::redis::scripts::FEED;

/// The most entries (conditions and operations) a shape script takes.
const MAX_ENTRIES: usize = 48;

/// The most shape scripts a store keeps; later shapes go to `commit.lua`.
const MAX_SHAPES: usize = 256;

/// A server's shape script: its text and SHA1, and whether this store sent
/// its text (a store sends a new shape's text at once, with `EVAL`,
/// instead of learning from `NOSCRIPT` that the server lacks it).
pub(crate) struct Shape {
    pub(crate) text: String,
    pub(crate) sha: String,
    pub(crate) sent: std::sync::atomic::AtomicBool,
}

impl Shape {
    /// The server's script for a shape's `body` (with the change-feed
    /// append before it when the batch `appends`).
    pub(crate) fn for_server(body: String, appends: bool) -> Shape {
        let text = if appends {
            [FEED, &body].concat()
        } else {
            body
        };
        Shape {
            sha: redis::Script::new(&text).get_hash().to_owned(),
            text,
            sent: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// The shape scripts of one store, by plan, each made by the store's
/// `make` from the shape's body and whether the batch appends to a feed.
pub(crate) struct Shapes<T> {
    scripts: Mutex<HashMap<Vec<u8>, Arc<T>>>,
    make: fn(String, bool) -> T,
}

impl<T> Shapes<T> {
    pub(crate) fn new(make: fn(String, bool) -> T) -> Shapes<T> {
        Shapes {
            scripts: Mutex::default(),
            make,
        }
    }

    /// The script for `plan`, written on first sight; `None` for a plan no
    /// shape script takes (or past [`MAX_SHAPES`]).
    pub(crate) fn get(&self, plan: &[u8]) -> Option<Arc<T>> {
        // Too long to be a shape: not worth a look-up (nor a place).
        if plan.len() > 4 * MAX_ENTRIES {
            return None;
        }
        let mut scripts = self
            .scripts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(shape) = scripts.get(plan) {
            return Some(shape.clone());
        }
        if scripts.len() >= MAX_SHAPES {
            return None;
        }
        // A plan without a shape is not kept: reading it again is cheap,
        // and it takes no place from a shape.
        let (body, appends) = body(plan)?;
        let shape = Arc::new((self.make)(body, appends));
        scripts.insert(plan.to_vec(), shape.clone());
        Some(shape)
    }
}

/// Whether a shape script's reply hands the batch on to `commit.lua`
/// (`{-9}`: nothing was written).
pub(crate) fn handed_on(reply: &redis::Value) -> bool {
    matches!(reply, redis::Value::Array(items) if items.first() == Some(&redis::Value::Int(-9)))
}

/// One entry of a plan: its kind, key number and first value's `ARGV`
/// index.
struct Entry {
    kind: u8,
    key: usize,
    value: usize,
}

/// The entries of `plan`, or `None` for bytes a plan never holds.
fn entries(plan: &[u8]) -> Option<Vec<Entry>> {
    let mut out = Vec::new();
    let (mut p, mut value) = (0, 2);
    while p < plan.len() {
        let kind = plan[p];
        let first = usize::from(*plan.get(p + 1)?);
        let (key, width) = match first {
            0..=127 => (first, 1),
            128..=191 => ((first - 128) << 8 | usize::from(*plan.get(p + 2)?), 2),
            _ => (
                (first - 192) << 16
                    | usize::from(*plan.get(p + 2)?) << 8
                    | usize::from(*plan.get(p + 3)?),
                3,
            ),
        };
        out.push(Entry { kind, key, value });
        value += match kind {
            b'E' | b'O' | b'p' | b'c' | b'i' | b'z' | b'r' | b't' | b'x' => 1,
            b'q' | b'l' | b'f' => 2,
            _ => 0,
        };
        p += 1 + width;
    }
    Some(out)
}

/// What a key is to an ordinary batch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Put or deleted once.
    Value,
    /// Gains and loses members.
    Members,
    /// Moves.
    Counter,
    /// A change feed: grows.
    Feed,
}

/// A server's shape script for `plan` ([`body`], after the change-feed
/// append when the batch appends to a feed).
pub(crate) fn script(plan: &[u8]) -> Option<String> {
    body(plan).map(|(body, appends)| Shape::for_server(body, appends).text)
}

/// The body of the shape script of `plan`, and whether it appends to a
/// change feed (then it calls `feed_append`, which the script must define
/// first); `None` when the plan is not an ordinary batch of at most
/// [`MAX_ENTRIES`] entries (`commit.lua` takes it).
pub(crate) fn body(plan: &[u8]) -> Option<(String, bool)> {
    let entries = entries(plan)?;
    if entries.is_empty() || entries.len() > MAX_ENTRIES {
        return None;
    }
    let split = entries
        .iter()
        .position(|e| e.kind.is_ascii_lowercase())
        .unwrap_or(entries.len());
    let (conditions, ops) = entries.split_at(split);
    // A collection that loses members is checked first and changed with the
    // values, never moved back: a removal that empties it takes its time to
    // live with it, which adding the member again would not restore.
    let late: std::collections::HashSet<usize> = ops
        .iter()
        .filter(|e| e.kind == b'r')
        .map(|e| e.key)
        .collect();
    let mut roles: HashMap<usize, Role> = HashMap::new();
    let mut read = std::collections::HashSet::new();
    let mut out = String::from(
        "-- kvmodel: the commit of one shape of batch (kvmodel_runtime's store/redis/shape.rs)\n\
         local K, A, call, pcall, find = KEYS, ARGV, redis.call, redis.pcall, string.find\n\
         local c\n",
    );
    // Conditions: one GET each; a key that holds no value is for commit.lua.
    for (i, e) in conditions.iter().enumerate() {
        let (n, v) = (e.key, e.value);
        let fails = match e.kind {
            b'A' => "c".to_owned(),
            b'P' => "not c".to_owned(),
            b'E' => format!("c ~= A[{v}]"),
            b'O' => format!("c and c ~= A[{v}]"),
            _ => return None,
        };
        let _ = writeln!(
            out,
            "c = pcall('GET', K[{n}]) if type(c) == 'table' then return {{-9}} end \
             if {fails} then return {{0, {i}}} end"
        );
        read.insert(n);
    }
    // Roles, and what can be checked before any write.
    for e in ops {
        let (n, v) = (e.key, e.value);
        let role = match e.kind {
            b'p' | b'q' | b'd' | b'c' => Role::Value,
            b'z' | b'r' => Role::Members,
            b'u' | b'v' | b'i' => Role::Counter,
            b'f' => Role::Feed,
            _ => return None,
        };
        match roles.insert(n, role) {
            Some(_) if role == Role::Value => return None,
            Some(was) if was != role => return None,
            Some(_) => {}
            None if role == Role::Feed => {
                let _ = writeln!(
                    out,
                    "c = call('TYPE', K[{n}]).ok if c ~= 'stream' and c ~= 'none' then return {{-9}} end"
                );
            }
            None if late.contains(&n) => {
                let _ = writeln!(
                    out,
                    "c = call('TYPE', K[{n}]).ok if c ~= 'zset' and c ~= 'none' then return {{-9}} end"
                );
            }
            None => {}
        }
        if e.kind == b'f' {
            let t = v + 1;
            let _ = writeln!(
                out,
                "if not (find(A[{t}], '^[1-9][0-9]*$') and #A[{t}] <= 13) then return {{-9}} end"
            );
        }
        if e.kind == b'q' {
            let t = v + 1;
            let _ = writeln!(
                out,
                "if not (find(A[{t}], '^[1-9][0-9]*$') and #A[{t}] <= 13) then return {{-9}} end"
            );
        }
        // A conditional delete reads its key here (a key of another kind
        // is for commit.lua) and deletes it with the values.
        if e.kind == b'c' {
            let _ = writeln!(
                out,
                "local g{n} = pcall('GET', K[{n}]) if type(g{n}) == 'table' then return {{-9}} end"
            );
        }
        if matches!(e.kind, b'p' | b'q') && !read.contains(&n) {
            let _ = writeln!(
                out,
                "c = call('TYPE', K[{n}]).ok if c ~= 'string' and c ~= 'none' then return {{-9}} end"
            );
        }
        if e.kind == b'i' {
            let _ = writeln!(
                out,
                "c = A[{v}] if not ((#c <= 20 and find(c, '^%-?[1-9][0-9]*$')) or c == '0') then return {{-9}} end"
            );
        }
    }
    // Members (of collections that only gain them) and counters, each
    // refusal moving back what moved.
    let moves: Vec<&Entry> = ops
        .iter()
        .filter(|e| {
            matches!(e.kind, b'u' | b'v' | b'i') || (e.kind == b'z' && !late.contains(&e.key))
        })
        .collect();
    if !moves.is_empty() {
        let names: Vec<String> = (1..=moves.len()).map(|j| format!("r{j}")).collect();
        let _ = writeln!(out, "local done, {} = 0", names.join(", "));
        out.push_str("repeat\n");
        for (j, e) in moves.iter().enumerate() {
            let (j, n, v) = (j + 1, e.key, e.value);
            let call = match e.kind {
                b'z' => format!("pcall('ZADD', K[{n}], 0, A[{v}])"),
                b'u' => format!("pcall('INCRBY', K[{n}], '1')"),
                b'v' => format!("pcall('INCRBY', K[{n}], '-1')"),
                _ => format!("pcall('INCRBY', K[{n}], A[{v}])"),
            };
            let _ = writeln!(
                out,
                "r{j} = {call} if type(r{j}) == 'table' then break end done = {j}"
            );
        }
        let _ = writeln!(out, "until true\nif done < {} then", moves.len());
        for (j, e) in moves.iter().enumerate().rev() {
            let (j, n, v) = (j + 1, e.key, e.value);
            let back = match e.kind {
                b'z' => format!("if r{j} == 1 then call('ZREM', K[{n}], A[{v}]) end"),
                // A counter moved back to zero goes: an absent counter
                // reads as zero. (INCRBY only: the commands a writer's
                // ACL allows.)
                b'u' => {
                    format!("if call('INCRBY', K[{n}], '-1') == 0 then call('UNLINK', K[{n}]) end")
                }
                b'v' => {
                    format!("if call('INCRBY', K[{n}], '1') == 0 then call('UNLINK', K[{n}]) end")
                }
                _ => format!(
                    "c = A[{v}] \
                     if c == '-9223372036854775808' then call('INCRBY', K[{n}], '9223372036854775807') c = call('INCRBY', K[{n}], '1') \
                     elseif string.byte(c, 1) == 45 then c = call('INCRBY', K[{n}], string.sub(c, 2)) \
                     elseif c ~= '0' then c = call('INCRBY', K[{n}], '-' .. c) end \
                     if c == 0 then call('UNLINK', K[{n}]) end"
                ),
            };
            // The last one moved back nothing: had it moved, all did.
            if j < moves.len() {
                let _ = writeln!(out, "if done >= {j} then {back} end");
            }
        }
        out.push_str("return {-9}\nend\n");
    }
    // Values, and the collections that lose members: commands that cannot
    // fail now. UNLINK, never DEL: a big collection is freed in the
    // background.
    for e in ops {
        let (n, v) = (e.key, e.value);
        let _ = match e.kind {
            b'z' if late.contains(&n) => writeln!(out, "call('ZADD', K[{n}], 0, A[{v}])"),
            b'r' => writeln!(out, "call('ZREM', K[{n}], A[{v}])"),
            b'p' => writeln!(out, "call('SET', K[{n}], A[{v}])"),
            b'q' => writeln!(out, "call('SET', K[{n}], A[{v}], 'PX', A[{}])", v + 1),
            b'd' => writeln!(out, "call('UNLINK', K[{n}])"),
            b'c' => writeln!(out, "if g{n} == A[{v}] then call('UNLINK', K[{n}]) end"),
            _ => Ok(()),
        };
    }
    // The feeds last, as `commit.lua` appends them.
    let mut appends = false;
    for e in ops.iter().filter(|e| e.kind == b'f') {
        let (n, v) = (e.key, e.value);
        let _ = writeln!(out, "feed_append(K[{n}], A[{}], A[{v}])", v + 1);
        appends = true;
    }
    out.push_str("return {1}\n");
    Some((out, appends))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::batch::Batch;
    use crate::store::redis::wire::commit_args;

    fn plan(b: &Batch) -> Vec<u8> {
        commit_args(b).unwrap().1.swap_remove(0)
    }

    /// A create: two conditions, two values, two members, four counters.
    fn create() -> Batch {
        let mut b = Batch::new();
        b.absent("r")
            .absent_or_equals("u", b"r".to_vec())
            .put("r", b"{}".to_vec(), None)
            .put("u", b"r".to_vec(), None)
            .add("i", b"s".to_vec(), b"r".to_vec())
            .add("all", Vec::new(), b"r".to_vec())
            .incr("c1", 1)
            .incr("c2", 1)
            .incr("~{c1}", 1)
            .incr("~{c2}", 1);
        b
    }

    #[test]
    fn a_create_runs_its_commands_in_order_values_last() {
        let text = script(&plan(&create())).unwrap();
        if let Ok(path) = std::env::var("KV_SHAPE_OUT") {
            std::fs::write(path, &text).unwrap();
        }
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle} in\n{text}"))
        };
        assert!(at("pcall('GET', K[1])") < at("pcall('GET', K[2])"));
        assert!(text.contains("if c then return {0, 0} end"));
        assert!(text.contains("if c and c ~= A[2] then return {0, 1} end"));
        assert!(at("pcall('ZADD', K[3], 0, A[5])") < at("pcall('INCRBY', K[8], '1')"));
        assert!(at("pcall('INCRBY', K[8], '1')") < at("call('SET', K[1], A[3])"));
        // Conditions read both value keys: no TYPE.
        assert!(!text.contains("TYPE"));
        // Six moves: the first five can be moved back.
        assert!(text.contains("if done >= 5 then"));
        assert!(!text.contains("if done >= 6 then"));
    }

    #[test]
    fn batches_out_of_the_ordinary_have_no_shape_script() {
        let mut twice = Batch::new();
        twice.put("k", b"1".to_vec(), None).delete("k");
        let mut mixed = Batch::new();
        mixed.incr("k", 1).add("k", b"s".to_vec(), b"m".to_vec());
        let mut limited = Batch::new();
        limited.incr_within("k", 1, 10);
        let mut trim = Batch::new();
        trim.trim("k", 3);
        let mut expire = Batch::new();
        expire.expire("k", std::time::Duration::from_secs(1));
        let mut big = Batch::new();
        for i in 0..MAX_ENTRIES + 1 {
            big.delete(format!("k{i}"));
        }
        for b in [twice, mixed, limited, trim, expire, big] {
            assert!(script(&plan(&b)).is_none(), "{:?}", plan(&b));
        }
        assert!(script(b"").is_none());
        assert!(script(b"p").is_none(), "a key number cut off");
    }

    #[test]
    fn members_and_counters_may_move_many_times() {
        let mut b = Batch::new();
        b.remove("i", b"a".to_vec(), b"r".to_vec())
            .add("i", b"b".to_vec(), b"r".to_vec())
            .incr("c", 1)
            .incr("c", -1)
            .incr("c", 7)
            .put("r", b"v".to_vec(), Some(std::time::Duration::from_secs(5)));
        let text = script(&plan(&b)).unwrap();
        // The put's key was read by no condition: its TYPE is asked.
        assert!(text.contains("call('TYPE', K[3])"));
        assert!(text.contains("call('SET', K[3], A[5], 'PX', A[6])"));
        assert!(text.contains("pcall('INCRBY', K[2], A[4])"));
    }

    #[test]
    fn a_batch_with_a_feed_appends_after_its_values() {
        let mut b = create();
        b.append("feed", b"e".to_vec(), std::time::Duration::from_secs(60));
        let text = script(&plan(&b)).unwrap();
        assert!(text.starts_with(FEED), "the append's function first");
        // The feed is key 9; its entry and retention follow the members.
        assert!(text.contains("c = call('TYPE', K[9]).ok if c ~= 'stream'"));
        assert!(text.contains("#A[8] <= 13"));
        let append = text.find("feed_append(K[9], A[8], A[7])").unwrap();
        assert!(text.find("call('SET', K[2], A[4])").unwrap() < append);
    }

    #[test]
    fn a_store_keeps_one_script_per_plan_and_no_more_than_its_bound() {
        let shapes = Shapes::new(Shape::for_server);
        let p = plan(&create());
        let a = shapes.get(&p).unwrap();
        let b = shapes.get(&p).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        for i in 1..MAX_SHAPES {
            let mut p = b"d\x01".to_vec();
            for _ in 0..=i % 40 {
                p.extend_from_slice(b"u\x02");
            }
            p.extend_from_slice(&[b'p', u8::try_from(3 + i / 40).unwrap()]);
            assert!(shapes.get(&p).is_some(), "{p:?}");
        }
        let mut other = Batch::new();
        other.incr("fresh", 1).incr("other", 1);
        assert!(shapes.get(&plan(&other)).is_none(), "past the bound");
        assert!(shapes.get(&p).is_some(), "known plans keep their script");
    }
}
