//! `scan` across every master of the cluster, and the maintenance walks of
//! the store's own keys.
//!
//! A scan goes through the hash slots in order, a shard at a time: it
//! scans the master serving the lowest slot not yet covered, then counts
//! every slot that master serves as covered. Its cursor holds the slots
//! covered, the slot naming the shard being scanned, the server process
//! scanning it (its `run_id`) and that process's `SCAN` cursor:
//! `covered:slot:run_id:cursor`, the covered slots as ranges (`0-5460`).
//! A page resumes on the master serving that slot now; if that is another
//! process (a replica took over, the node restarted, the slot moved), the
//! shard is scanned again from its start, since a `SCAN` cursor means
//! nothing to another process: keys are repeated, never skipped. A slot no
//! master serves (a master failed and no replica has taken over yet) is an
//! error to retry with the same cursor, never skipped. A key moved between
//! shards while the scan runs may be missed or repeated, as a key written
//! meanwhile may be.

use redis::cluster_routing::SingleNodeRoutingInfo;
use redis::{FromRedisValue, Value};

use crate::error::{Error, Result};
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::wire::{
    another_process, info_server_cmd, prefix_pattern, process_of, scan_cmd,
};
use crate::store::{ScanPage, scan_count};

fn bad_cursor() -> Error {
    Error::InvalidCursor {
        reason: "it is not a Redis Cluster scan cursor".to_owned(),
    }
}

/// A master that serves hash slots, as `CLUSTER NODES` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Master {
    host: String,
    port: u16,
    /// The slots it serves; never empty.
    slots: Slots,
}

impl Master {
    /// One line of `CLUSTER NODES`, if it is a master that serves slots
    /// and can be reached: `id addr flags master ping pong epoch link
    /// slot…`. A master the cluster agreed has failed (`fail`, not the
    /// suspicion `fail?`), or with no address, is left out: its slots are
    /// then served by no master listed.
    fn parse(line: &str) -> Option<Master> {
        let fields: Vec<&str> = line.split(' ').collect();
        let flags: Vec<&str> = fields.get(2)?.split(',').collect();
        if !flags.contains(&"master") || flags.contains(&"fail") || flags.contains(&"noaddr") {
            return None;
        }
        let addr = fields.get(1)?.split('@').next()?;
        let (host, port) = addr.rsplit_once(':')?;
        let ranges: Vec<(u16, u16)> = fields
            .get(8..)?
            .iter()
            // `[slot->-id]`, `[slot-<-id]`: a slot being migrated or imported.
            .filter(|f| !f.starts_with('['))
            .filter_map(|f| match f.split_once('-') {
                Some((lo, hi)) => Some((lo.parse().ok()?, hi.parse().ok()?)),
                None => f.parse().ok().map(|s| (s, s)),
            })
            .collect();
        // Only masters that serve slots hold keys.
        ranges.first()?;
        let mut slots = Slots::default();
        slots.add(&ranges);
        Some(Master {
            host: host.to_owned(),
            port: port.parse().ok()?,
            slots,
        })
    }
}

/// The highest hash slot.
const LAST_SLOT: u16 = 16_383;

/// Slot ranges, inclusive, sorted, neither overlapping nor adjacent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Slots(Vec<(u16, u16)>);

impl Slots {
    fn add(&mut self, ranges: &[(u16, u16)]) {
        self.0.extend_from_slice(ranges);
        self.0.sort_unstable();
        let mut merged: Vec<(u16, u16)> = Vec::with_capacity(self.0.len());
        for &(lo, hi) in &self.0 {
            match merged.last_mut() {
                Some(last) if u32::from(lo) <= u32::from(last.1) + 1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        self.0 = merged;
    }

    fn contains(&self, slot: u16) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot))
    }

    /// The lowest slot not in the set, if any.
    fn first_missing(&self) -> Option<u16> {
        match self.0.first() {
            Some(&(0, hi)) => hi.checked_add(1).filter(|s| *s <= LAST_SLOT),
            _ => Some(0),
        }
    }

    fn encode(&self) -> String {
        let ranges: Vec<String> = self.0.iter().map(|(lo, hi)| format!("{lo}-{hi}")).collect();
        ranges.join(",")
    }

    fn decode(text: &str) -> Option<Slots> {
        let mut slots = Slots::default();
        if text.is_empty() {
            return Some(slots);
        }
        let mut ranges = Vec::new();
        for range in text.split(',') {
            let (lo, hi) = range.split_once('-')?;
            let (lo, hi): (u16, u16) = (lo.parse().ok()?, hi.parse().ok()?);
            if lo > hi || hi > LAST_SLOT {
                return None;
            }
            ranges.push((lo, hi));
        }
        slots.add(&ranges);
        Some(slots)
    }
}

/// Where a scan stands: the slots covered, the slot naming the shard being
/// scanned and the position of its master in the list (`None` if no master
/// serves it now), that master's `SCAN` cursor, and the server process that
/// made it (`None` before the shard is begun).
#[derive(Debug, Clone, PartialEq, Eq)]
struct At {
    covered: Slots,
    slot: u16,
    master: Option<usize>,
    cursor: u64,
    made_on: Option<String>,
}

impl At {
    fn encode(&self) -> Vec<u8> {
        let made_on = self.made_on.as_deref().unwrap_or_default();
        let covered = self.covered.encode();
        format!("{covered}:{}:{made_on}:{}", self.slot, self.cursor).into_bytes()
    }
}

/// The error of a slot no master serves now.
fn unserved(slot: u16) -> Error {
    Error::backend(
        "redis-cluster",
        "scan keys",
        format!(
            "no master serves hash slot {slot} now (a master failed and no replica has \
             taken over yet?); ask again with the same cursor once the cluster is ok"
        ),
    )
}

/// Where a scan that has `covered` those slots goes on: the start of the
/// shard serving the lowest slot not covered; `None` once every slot is.
fn next_shard(masters: &[Master], covered: Slots) -> Option<At> {
    let slot = covered.first_missing()?;
    Some(At {
        covered,
        slot,
        master: masters.iter().position(|m| m.slots.contains(slot)),
        cursor: 0,
        made_on: None,
    })
}

/// Where the scan `cursor` resumes among `masters`. A cursor of the older
/// form (`position:cursor`) named a master by a position that a failover
/// changes: the scan starts again.
fn resume(masters: &[Master], cursor: &[u8]) -> Result<Option<At>> {
    let text = std::str::from_utf8(cursor).map_err(|_| bad_cursor())?;
    let parts: Vec<&str> = text.split(':').collect();
    match parts[..] {
        [covered, slot, made_on, at] => {
            let covered = Slots::decode(covered).ok_or_else(bad_cursor)?;
            let slot: u16 = slot.parse().map_err(|_| bad_cursor())?;
            let at: u64 = at.parse().map_err(|_| bad_cursor())?;
            let made_on = Some(made_on).filter(|m| !m.is_empty());
            // An empty `run_id`: the shard is not begun, or its master named no
            // process (`INFO` refused).
            if slot > LAST_SLOT || covered.contains(slot) {
                return Err(bad_cursor());
            }
            Ok(Some(At {
                covered,
                slot,
                master: masters.iter().position(|m| m.slots.contains(slot)),
                cursor: at,
                made_on: made_on.map(str::to_owned),
            }))
        }
        [position, at] if position.parse::<usize>().is_ok() && at.parse::<u64>().is_ok() => {
            Ok(next_shard(masters, Slots::default()))
        }
        _ => Err(bad_cursor()),
    }
}

impl RedisClusterStore {
    /// The masters that serve slots and can be reached.
    pub(crate) async fn masters(&self) -> Result<Vec<Master>> {
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("NODES");
        let reply = self
            .query_node(
                cmd,
                SingleNodeRoutingInfo::RandomPrimary,
                "list the masters of the cluster",
            )
            .await?;
        let text = match reply {
            Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            Value::VerbatimString { text, .. } => text,
            Value::SimpleString(s) => s,
            other => {
                return Err(Error::backend(
                    "redis-cluster",
                    "list the masters of the cluster",
                    format!("unexpected reply {other:?}"),
                ));
            }
        };
        Ok(text.lines().filter_map(Master::parse).collect())
    }

    /// One `SCAN` step on the master `node`, sent with `INFO server` in one
    /// pipeline: the server process it ran on (its `run_id`; `None` if
    /// `INFO` is refused, as it is to an operator user made before scans
    /// asked for it), the next cursor, and the stored keys.
    pub(crate) async fn scan_node(
        &self,
        node: &Master,
        cursor: u64,
        pattern: &str,
        count: usize,
    ) -> Result<(Option<String>, u64, Vec<String>)> {
        let mut pipe = redis::pipe();
        pipe.add_command(info_server_cmd())
            .add_command(scan_cmd(cursor, pattern, count));
        let node = SingleNodeRoutingInfo::ByAddress {
            host: node.host.clone(),
            port: node.port,
        };
        // The replies as the server gave them: a refused `INFO` is a value.
        let replies = self.query_node_pipe(pipe, 2, node, "scan keys").await?;
        let read = |e: String| Error::backend("redis-cluster", "read a scan reply", e);
        let [info, scan] = <[Value; 2]>::try_from(replies).map_err(|r| read(format!("{r:?}")))?;
        let (next, keys) =
            <(u64, Vec<String>)>::from_redis_value(scan).map_err(|e| read(e.to_string()))?;
        Ok((process_of(&info), next, keys))
    }

    /// Every stored key matching `pattern`, on every master (maintenance).
    pub(crate) async fn scan_all(&self, pattern: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for node in self.masters().await? {
            let (mut cursor, mut made_on) = (0, None);
            loop {
                let (run, next, keys) = self.scan_node(&node, cursor, pattern, 1000).await?;
                if another_process(made_on.as_deref(), run.as_deref()) {
                    // The node restarted: its keys from the start.
                    (cursor, made_on) = (0, None);
                    continue;
                }
                out.extend(keys);
                if next == 0 {
                    break;
                }
                (cursor, made_on) = (next, run);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// [`Store::scan`](crate::Store::scan): one page from one master.
    pub(crate) async fn scan_masters(
        &self,
        prefix: &str,
        cursor: Option<Vec<u8>>,
        count: usize,
    ) -> Result<ScanPage> {
        let masters = self.masters().await?;
        let mut at = match cursor {
            None => next_shard(&masters, Slots::default()),
            Some(c) => resume(&masters, &c)?,
        };
        let pattern = prefix_pattern(&self.phys(prefix));
        let mut keys = Vec::new();
        while let Some(here) = at {
            let Some(master) = here.master else {
                if keys.is_empty() {
                    return Err(unserved(here.slot));
                }
                // This page's keys first; the next page meets the error.
                at = Some(here);
                break;
            };
            let (run, next, found) = self
                .scan_node(&masters[master], here.cursor, &pattern, scan_count(count))
                .await?;
            if another_process(here.made_on.as_deref(), run.as_deref()) {
                // Another process than the one that made the cursor serves
                // the shard: its keys from the start (some again, none
                // missed).
                at = Some(At {
                    cursor: 0,
                    made_on: None,
                    ..here
                });
                continue;
            }
            keys.extend(found.iter().filter_map(|k| self.logical(k)));
            if next != 0 {
                at = Some(At {
                    cursor: next,
                    made_on: run,
                    ..here
                });
                break;
            }
            let mut covered = here.covered;
            covered.add(&masters[master].slots.0);
            at = next_shard(&masters, covered);
            if !keys.is_empty() {
                break;
            }
        }
        keys.sort();
        keys.dedup();
        Ok(ScanPage {
            keys,
            next: at.map(|a| a.encode()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7000@17000 master - 0 0 2 connected 5462-10922 5461 [5470->-c3]
c3 127.0.0.1:7002@17002 master,fail? - 0 0 3 connected 10923-16383 [5470-<-b2]
d4 127.0.0.1:7003@17003 slave b2 0 0 2 connected
e5 127.0.0.1:7004@17004 master,fail - 0 0 4 disconnected 100-200
f6 127.0.0.1:7005@17005 master - 0 0 5 connected
g7 :0@0 master,noaddr - 0 0 7 disconnected 300";

    fn masters(text: &str) -> Vec<Master> {
        text.lines().filter_map(Master::parse).collect()
    }

    fn slots(ranges: &[(u16, u16)]) -> Slots {
        let mut s = Slots::default();
        s.add(ranges);
        s
    }

    fn at(
        covered: &[(u16, u16)],
        slot: u16,
        master: Option<usize>,
        cursor: u64,
        made_on: Option<&str>,
    ) -> Option<At> {
        Some(At {
            covered: slots(covered),
            slot,
            master,
            cursor,
            made_on: made_on.map(str::to_owned),
        })
    }

    #[test]
    fn masters_that_serve_slots_are_listed_a_suspected_one_too() {
        let m = masters(NODES);
        let ports: Vec<u16> = m.iter().map(|m| m.port).collect();
        assert_eq!(ports, [7001, 7000, 7002]);
        assert_eq!(m[1].slots.0, [(5461, 10922)]);
        assert_eq!(m[1].host, "127.0.0.1");
        assert!(m[1].slots.contains(5470) && !m[2].slots.contains(5470));
    }

    #[test]
    fn slot_ranges_merge_and_read_back() {
        let s = slots(&[(5461, 10922), (0, 5460), (20, 30), (16000, 16383)]);
        assert_eq!(s.0, [(0, 10922), (16000, 16383)]);
        assert_eq!(s.first_missing(), Some(10923));
        assert_eq!(s.encode(), "0-10922,16000-16383");
        assert_eq!(Slots::decode(&s.encode()), Some(s));
        assert_eq!(slots(&[(1, 5)]).first_missing(), Some(0));
        assert_eq!(slots(&[(0, LAST_SLOT)]).first_missing(), None);
        assert_eq!(Slots::default().first_missing(), Some(0));
        for bad in ["5-1", "0-16384", "1", "a-b", "0-1,", "-"] {
            assert_eq!(Slots::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_scan_goes_through_the_slots_a_shard_at_a_time() {
        let m = masters(NODES);
        assert_eq!(
            next_shard(&m, Slots::default()),
            at(&[], 0, Some(0), 0, None)
        );
        assert_eq!(
            next_shard(&m, slots(&[(0, 5460)])),
            at(&[(0, 5460)], 5461, Some(1), 0, None)
        );
        assert_eq!(next_shard(&m, slots(&[(0, LAST_SLOT)])), None);
        let cursor = at(&[(0, 5460)], 5461, Some(1), 77, Some("r1"))
            .unwrap()
            .encode();
        assert_eq!(cursor, b"0-5460:5461:r1:77");
        assert_eq!(
            resume(&m, &cursor).unwrap(),
            at(&[(0, 5460)], 5461, Some(1), 77, Some("r1"))
        );
        assert_eq!(
            resume(&m, b"0-10922:10923::0").unwrap(),
            at(&[(0, 10922)], 10923, Some(2), 0, None)
        );
        // A cursor of a master that named no process (`INFO` refused).
        assert_eq!(
            resume(&m, b"0-5460:5461::7").unwrap(),
            at(&[(0, 5460)], 5461, Some(1), 7, None)
        );
    }

    #[test]
    fn a_shard_that_gains_a_lower_slot_is_still_scanned() {
        // Slot 0 moved from a1 to c3 while b2 was being scanned: c3's
        // lowest slot is now below b2's, and its keys are not skipped.
        let moved = NODES
            .replace("connected 0-5460", "connected 1-5460")
            .replace("connected 10923-16383", "connected 0 10923-16383");
        let m = masters(&moved);
        let here = resume(&m, b"0-5460:5461:r1:77").unwrap().unwrap();
        let mut covered = here.covered;
        covered.add(&m[1].slots.0);
        assert_eq!(
            next_shard(&m, covered),
            at(&[(0, 10922)], 10923, Some(2), 0, None)
        );
    }

    #[test]
    fn a_failover_keeps_the_scan_on_the_shard() {
        // The replica `d4` took over from `b2`.
        let failed_over = NODES
            .replace(
                "b2 127.0.0.1:7000@17000 master",
                "b2 127.0.0.1:7000@17000 slave",
            )
            .replace(
                "d4 127.0.0.1:7003@17003 slave b2 0 0 2 connected",
                "d4 127.0.0.1:7003@17003 master - 0 0 6 connected 5461-10922",
            );
        let m = masters(&failed_over);
        let here = resume(&m, b"0-5460:5461:r1:77").unwrap().unwrap();
        assert_eq!(m[here.master.unwrap()].port, 7003, "d4");
        // Whose process made the cursor is the scan's to compare.
        assert_eq!(here.made_on.as_deref(), Some("r1"));
    }

    #[test]
    fn a_slot_no_master_serves_is_not_skipped() {
        // `b2` failed and no replica has taken over yet.
        let m = masters(&NODES.replace("7000@17000 master", "7000@17000 master,fail"));
        assert_eq!(m.len(), 2);
        assert_eq!(
            resume(&m, b"0-5460:5461:r1:77").unwrap(),
            at(&[(0, 5460)], 5461, None, 77, Some("r1"))
        );
        assert_eq!(
            next_shard(&m, slots(&[(0, 5460)])),
            at(&[(0, 5460)], 5461, None, 0, None)
        );
        assert!(unserved(5461).to_string().contains("slot 5461"));
    }

    #[test]
    fn a_cursor_of_the_older_form_starts_again() {
        let m = masters(NODES);
        assert_eq!(resume(&m, b"1:9").unwrap(), at(&[], 0, Some(0), 0, None));
        assert_eq!(resume(&m, b"7:0").unwrap(), at(&[], 0, Some(0), 0, None));
    }

    #[test]
    fn a_cursor_it_did_not_make_is_refused() {
        let m = masters(NODES);
        for bad in [
            &b"x"[..],
            b"0-5460:100:r:0",
            b"1:2:3:4:5",
            b":16384:a1:0",
            b":1:a1:-1",
            b"a:b",
            b"\xff:1",
            b"5461:r1:77",
        ] {
            assert!(
                matches!(resume(&m, bad), Err(Error::InvalidCursor { .. })),
                "{bad:?}"
            );
        }
    }
}
