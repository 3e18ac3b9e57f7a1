//! `scan` across every master of the cluster, and the maintenance walks of
//! the store's own keys.
//!
//! A cursor names a shard by the lowest hash slot it served when the cursor
//! was made, the server process then its master (its `run_id`), and that
//! process's `SCAN` cursor: `slot:run_id:cursor`. Shards are scanned in the
//! order of their lowest slot, which a failover does not change. A page
//! resumes on the master serving that slot now; if that is another process
//! (a replica took over, the node restarted, the slot moved), the shard is
//! scanned again from its start, since a `SCAN` cursor means nothing to
//! another process: keys are repeated, never skipped. The shards after it
//! are those whose lowest slot is higher. A key moved between shards while
//! the scan runs may be missed or repeated, as a key written meanwhile may
//! be.

use redis::cluster_routing::SingleNodeRoutingInfo;
use redis::{FromRedisValue, Value};

use crate::error::{Error, Result};
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::wire::{info_server_cmd, prefix_pattern, run_id, scan_cmd};
use crate::store::{ScanPage, scan_count};

fn bad_cursor() -> Error {
    Error::InvalidCursor {
        reason: "it is not a Redis Cluster scan cursor".to_owned(),
    }
}

/// A master that serves hash slots, as `CLUSTER NODES` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Master {
    id: String,
    host: String,
    port: u16,
    /// The slot ranges it serves, inclusive, lowest first; never empty.
    slots: Vec<(u16, u16)>,
}

impl Master {
    /// The lowest slot it serves (a master without slots is not listed).
    fn first(&self) -> u16 {
        self.slots[0].0
    }

    fn serves(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot))
    }

    /// One line of `CLUSTER NODES`, if it is a master that is not failing
    /// and serves slots: `id addr flags master ping pong epoch link slot…`.
    fn parse(line: &str) -> Option<Master> {
        let fields: Vec<&str> = line.split(' ').collect();
        let flags = fields.get(2)?;
        if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
            return None;
        }
        let addr = fields.get(1)?.split('@').next()?;
        let (host, port) = addr.rsplit_once(':')?;
        let mut slots: Vec<(u16, u16)> = fields
            .get(8..)?
            .iter()
            // `[slot->-id]`, `[slot-<-id]`: a slot being migrated or imported.
            .filter(|f| !f.starts_with('['))
            .filter_map(|f| match f.split_once('-') {
                Some((lo, hi)) => Some((lo.parse().ok()?, hi.parse().ok()?)),
                None => f.parse().ok().map(|s| (s, s)),
            })
            .collect();
        slots.sort_unstable();
        // Only masters that serve slots hold keys.
        slots.first()?;
        Some(Master {
            id: fields[0].to_owned(),
            host: host.to_owned(),
            port: port.parse().ok()?,
            slots,
        })
    }
}

/// Where a scan stands: the slot naming the shard being scanned, the
/// position of its master in the list, that master's `SCAN` cursor, and
/// the server process that made it (`None` before the shard is begun, or
/// for a cursor of the older form).
#[derive(Debug, Clone, PartialEq, Eq)]
struct At {
    slot: u16,
    master: usize,
    cursor: u64,
    made_on: Option<String>,
}

impl At {
    /// The start of the shard of `masters[master]`.
    fn start(masters: &[Master], master: usize) -> At {
        At {
            slot: masters[master].first(),
            master,
            cursor: 0,
            made_on: None,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let made_on = self.made_on.as_deref().unwrap_or_default();
        format!("{}:{made_on}:{}", self.slot, self.cursor).into_bytes()
    }
}

/// The shard after the one named by `slot`: the master with the lowest
/// first slot above it.
fn after(masters: &[Master], slot: u16) -> Option<At> {
    let master = masters.iter().position(|m| m.first() > slot)?;
    Some(At::start(masters, master))
}

/// Where the scan `cursor` resumes among `masters` (sorted by first slot),
/// or `None` if it is done. A cursor of the older form, `position:cursor`,
/// names a master by its position among them sorted by address.
fn resume(masters: &[Master], cursor: &[u8]) -> Result<Option<At>> {
    let text = std::str::from_utf8(cursor).map_err(|_| bad_cursor())?;
    let parts: Vec<&str> = text.split(':').collect();
    let (slot, made_on, at) = match parts[..] {
        [slot, made_on, at] => (
            slot.parse::<u16>().map_err(|_| bad_cursor())?,
            Some(made_on).filter(|m| !m.is_empty()),
            at.parse::<u64>().map_err(|_| bad_cursor())?,
        ),
        // The older form: a position among the masters sorted by address.
        [position, at] => {
            let position: usize = position.parse().map_err(|_| bad_cursor())?;
            let at: u64 = at.parse().map_err(|_| bad_cursor())?;
            let mut by_address: Vec<&Master> = masters.iter().collect();
            by_address.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
            let Some(m) = by_address.get(position) else {
                return Ok(None);
            };
            (m.first(), None, at)
        }
        _ => return Err(bad_cursor()),
    };
    if slot > 16_383 || (made_on.is_none() && at != 0 && parts.len() == 3) {
        return Err(bad_cursor());
    }
    Ok(match masters.iter().position(|m| m.serves(slot)) {
        Some(master) => Some(At {
            slot,
            master,
            cursor: at,
            made_on: made_on.map(str::to_owned),
        }),
        // No master serves it now (a failover under way): the shards after.
        None => after(masters, slot),
    })
}

impl RedisClusterStore {
    /// The masters that serve slots, sorted by their lowest slot.
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
        let mut masters: Vec<Master> = text.lines().filter_map(Master::parse).collect();
        masters.sort_by_key(Master::first);
        Ok(masters)
    }

    /// One `SCAN` step on the master `node`: the server process it ran on
    /// (its `run_id`), the next cursor, and the stored keys.
    pub(crate) async fn scan_node(
        &self,
        node: &Master,
        cursor: u64,
        pattern: &str,
        count: usize,
    ) -> Result<(String, u64, Vec<String>)> {
        let mut pipe = redis::pipe();
        pipe.add_command(info_server_cmd())
            .add_command(scan_cmd(cursor, pattern, count));
        let node = SingleNodeRoutingInfo::ByAddress {
            host: node.host.clone(),
            port: node.port,
        };
        let replies = self.query_node_pipe(pipe, 2, node, "scan keys").await?;
        let read = |e: redis::ParsingError| Error::backend("redis-cluster", "read a scan reply", e);
        let [info, scan] = <[Value; 2]>::try_from(replies)
            .map_err(|r| Error::backend("redis-cluster", "read a scan reply", format!("{r:?}")))?;
        let info = String::from_redis_value(info).map_err(read)?;
        let (next, keys) = <(u64, Vec<String>)>::from_redis_value(scan).map_err(read)?;
        let run = run_id(&info).ok_or_else(|| {
            Error::backend(
                "redis-cluster",
                "scan keys",
                "`INFO server` names no `run_id`",
            )
        })?;
        Ok((run.to_owned(), next, keys))
    }

    /// Every stored key matching `pattern`, on every master (maintenance).
    pub(crate) async fn scan_all(&self, pattern: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for node in self.masters().await? {
            let (mut cursor, mut made_on) = (0, None);
            loop {
                let (run, next, keys) = self.scan_node(&node, cursor, pattern, 1000).await?;
                if made_on.as_ref().is_some_and(|made_on| *made_on != run) {
                    // The node restarted: its keys from the start.
                    (cursor, made_on) = (0, None);
                    continue;
                }
                out.extend(keys);
                if next == 0 {
                    break;
                }
                (cursor, made_on) = (next, Some(run));
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
            None => (!masters.is_empty()).then(|| At::start(&masters, 0)),
            Some(c) => resume(&masters, &c)?,
        };
        let pattern = prefix_pattern(&self.phys(prefix));
        let mut keys = Vec::new();
        while let Some(here) = at {
            let (run, next, found) = self
                .scan_node(
                    &masters[here.master],
                    here.cursor,
                    &pattern,
                    scan_count(count),
                )
                .await?;
            if here.made_on.as_ref().is_some_and(|made_on| *made_on != run) {
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
                    made_on: Some(run),
                    ..here
                });
                break;
            }
            at = after(&masters, here.slot);
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
c3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383 [5470-<-b2]
d4 127.0.0.1:7003@17003 slave b2 0 0 2 connected
e5 127.0.0.1:7004@17004 master,fail - 0 0 4 disconnected 100-200
f6 127.0.0.1:7005@17005 master - 0 0 5 connected";

    fn masters(text: &str) -> Vec<Master> {
        let mut m: Vec<Master> = text.lines().filter_map(Master::parse).collect();
        m.sort_by_key(Master::first);
        m
    }

    #[test]
    fn only_masters_serving_slots_are_listed_by_their_lowest_slot() {
        let m = masters(NODES);
        let ids: Vec<&str> = m.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["a1", "b2", "c3"]);
        assert_eq!(m[1].slots, [(5461, 5461), (5462, 10922)]);
        assert_eq!((m[1].host.as_str(), m[1].port), ("127.0.0.1", 7000));
        assert!(m[1].serves(5470) && !m[2].serves(5470));
    }

    fn at(slot: u16, master: usize, cursor: u64, made_on: Option<&str>) -> Option<At> {
        Some(At {
            slot,
            master,
            cursor,
            made_on: made_on.map(str::to_owned),
        })
    }

    #[test]
    fn a_cursor_resumes_on_the_master_serving_its_slot() {
        let m = masters(NODES);
        let cursor = at(5461, 1, 77, Some("r1")).unwrap().encode();
        assert_eq!(cursor, b"5461:r1:77");
        assert_eq!(resume(&m, &cursor).unwrap(), at(5461, 1, 77, Some("r1")));
        assert_eq!(resume(&m, b"10923::0").unwrap(), at(10923, 2, 0, None));
        assert_eq!(after(&m, 5461), at(10923, 2, 0, None));
        assert_eq!(after(&m, 10923), None);
    }

    #[test]
    fn a_failover_keeps_the_order_of_the_shards() {
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
        assert_eq!(m[1].id, "d4");
        // Whose process made the cursor is the scan's to compare.
        assert_eq!(
            resume(&m, b"5461:r1:77").unwrap(),
            at(5461, 1, 77, Some("r1"))
        );
    }

    #[test]
    fn a_slot_no_master_serves_resumes_with_the_shards_after_it() {
        // `b2` failed and no replica has taken over yet.
        let m = masters(&NODES.replace("7000@17000 master", "7000@17000 master,fail"));
        assert_eq!(m.len(), 2);
        assert_eq!(resume(&m, b"5461:r1:77").unwrap(), at(10923, 1, 0, None));
    }

    #[test]
    fn a_cursor_of_the_older_form_names_a_master_by_address() {
        let m = masters(NODES);
        // By address: b2 (7000), a1 (7001), c3 (7002).
        assert_eq!(resume(&m, b"0:9").unwrap(), at(5461, 1, 9, None));
        assert_eq!(resume(&m, b"2:4").unwrap(), at(10923, 2, 4, None));
        assert_eq!(resume(&m, b"3:0").unwrap(), None);
    }

    #[test]
    fn a_cursor_it_did_not_make_is_refused() {
        let m = masters(NODES);
        for bad in [
            &b"x"[..],
            b"5461::7",
            b"1:2:3:4",
            b"16384:a1:0",
            b"1:a1:-1",
            b"a:b",
            b"\xff:1",
        ] {
            assert!(
                matches!(resume(&m, bad), Err(Error::InvalidCursor { .. })),
                "{bad:?}"
            );
        }
    }
}
