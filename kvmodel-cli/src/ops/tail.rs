//! `kvmodel tail`: follow an entity's change feed, one JSON line per change.
//! Reads only.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use kvmodel_runtime::__private::{EntityDef, ModelDef, RawEvent};
use kvmodel_runtime::store::FeedPosition;
use kvmodel_runtime::{Error, Store};

use super::{Code, Context, Fail, fail, print, store_error};

/// `kvmodel tail`.
#[derive(Debug, Args)]
pub struct TailArgs {
    /// The schema files the store's data follows: schema files (YAML) and
    /// Rust source files (`.rs`) of `#[derive(KvEntity)]` structs, read as
    /// one model (repeat `--schema` for more).
    #[arg(long, value_name = "SCHEMA", required = true)]
    pub schema: Vec<PathBuf>,
    /// The store: `redb:PATH`, `redis://HOST:PORT` (`rediss://` over TLS),
    /// `redis+cluster://HOST:PORT,…`.
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// The entity (its type name in the schema).
    pub entity: String,
    /// Where to start: `start` (the oldest retained change), `now` (only
    /// new ones), or a position a line printed earlier (`17-0`), to resume
    /// after it.
    #[arg(long, value_name = "POS", default_value = "now")]
    pub from: String,
    /// Stop after this many changes (default: follow until interrupted).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// How many changes one read fetches.
const PAGE: usize = 256;

/// How long one read waits for new changes before it reads again.
const WAIT: Duration = Duration::from_secs(5);

/// Prints each change of the entity's feed as a JSON line; exit 0 after
/// `--count` changes, 2 (an error naming the oldest position kept) when the
/// feed's retention has passed the position.
pub async fn tail(args: TailArgs) -> Result<Code, Fail> {
    let cx = Context::open(&args.schema, &args.store).await?;
    let model = cx.entity(&args.entity)?;
    let def = ModelDef::new(model.clone());
    let feed = def.space().feed_key();
    let store = &cx.store;
    let mut after = match args.from.as_str() {
        "start" => None,
        "now" => store.feed_last(&feed).await.map_err(store_error)?,
        pos => Some(pos.parse::<FeedPosition>().map_err(|_| {
            fail(format_args!(
                "`--from {pos}` is not a position: write `start`, `now` or a position a line \
                 printed (`17-0`)"
            ))
        })?),
    };
    let mut left = args.count;
    while left != Some(0) {
        let page = store
            .feed_read(&feed, after, PAGE, WAIT)
            .await
            .map_err(store_error)?;
        if let (Some(trimmed), Some(at)) = (page.trimmed, after)
            && at < trimmed
        {
            return Err(store_error(Error::FeedBehind {
                feed,
                position: at.to_string(),
                trimmed: trimmed.to_string(),
            }));
        }
        for e in page.entries {
            if left == Some(0) {
                break;
            }
            let raw = RawEvent::decode(&feed, e.position, &e.entry).map_err(store_error)?;
            let image = |bytes: &Option<Vec<u8>>| -> Value {
                match bytes {
                    None => Value::Null,
                    Some(b) => match def.read(&raw.key, b) {
                        Ok((_, r)) => r.value,
                        Err(err) => json!({ "error": err.to_string() }),
                    },
                }
            };
            let line = json!({
                "position": e.position.to_string(),
                "commit": raw.commit.to_string(),
                "at_ms": e.at_ms,
                "key": raw.key,
                "event": raw.kind,
                "before": image(&raw.before),
                "after": image(&raw.after),
            });
            print(&format!("{line}\n"))?;
            after = Some(e.position);
            left = left.map(|n| n - 1);
        }
    }
    Ok(Code::Success)
}
