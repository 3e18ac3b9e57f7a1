//! `kvmodel migrate --status`: the lease, the last runs, the index states.

use serde_json::json;

use kvmodel_runtime::__private::{EntityDef, ModelDef, ledger, state};
use kvmodel_runtime::Store;

use super::outcome;
use crate::ops::{Code, Context, Fail, Format, print, store_error};

/// Runs shown.
const RUNS: usize = 10;

/// Prints the status; exit 0.
pub async fn show(cx: &Context, format: Format) -> Result<Code, Fail> {
    let ns = &cx.model.namespace;
    let now = cx.store.now_ms().await.map_err(store_error)?;
    let lease = ledger::current(&cx.store, ns).await.map_err(store_error)?;
    let runs = ledger::runs(&cx.store, ns, RUNS)
        .await
        .map_err(store_error)?;
    let mut states = Vec::new();
    for m in &cx.model.entities {
        let def = ModelDef::new(m.clone());
        let st = state::load(&cx.store, def.space())
            .await
            .map_err(store_error)?;
        let write_only: Vec<String> = m
            .declared()
            .iter()
            .filter(|d| d.since > 1 && st.as_ref().is_none_or(|s| !s.readable(d.since)))
            .map(|d| format!("{} (since version {})", d.name, d.since))
            .collect();
        states.push((m.name.clone(), m.version, st, write_only));
    }
    if format == Format::Json {
        let doc = json!({
            "namespace": ns,
            "lease": lease.as_ref().map(|l| json!({
                "owner": l.owner, "run": l.run, "since_ms": l.since_ms,
                "expires_ms": l.expires_ms, "live": l.expires_ms > now,
            })),
            "runs": runs,
            "entities": states.iter().map(|(name, version, st, write_only)| json!({
                "entity": name, "version": version, "index_state": st, "write_only": write_only,
            })).collect::<Vec<_>>(),
        });
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        ))?;
        return Ok(Code::Success);
    }
    let mut out = format!("namespace {ns}\n");
    match &lease {
        Some(l) if l.expires_ms > now => out.push_str(&format!(
            "lease: held by {} (run {}), renewed within the next {}s\n",
            l.owner,
            l.run,
            (l.expires_ms - now).div_ceil(1000)
        )),
        Some(l) => out.push_str(&format!(
            "lease: lapsed {}s ago ({} stopped renewing it during run {}); the next run takes it over\n",
            (now - l.expires_ms) / 1000,
            l.owner,
            l.run
        )),
        None => out.push_str("lease: free\n"),
    }
    if runs.is_empty() {
        out.push_str("runs: none\n");
    }
    for r in &runs {
        let took = match r.ended_ms {
            Some(end) => format!(", {:.1}s", end.saturating_sub(r.started_ms) as f64 / 1000.0),
            None => String::new(),
        };
        out.push_str(&format!(
            "run {} by {} ({}): {}{took}\n",
            r.number,
            r.owner,
            r.schema,
            outcome(r.outcome)
        ));
        for e in &r.entities {
            out.push_str(&format!(
                "  {} → version {}: {} visited, {} rewritten, {} duplicate(s){}\n",
                e.entity,
                e.version,
                e.visited,
                e.rewritten,
                e.duplicates.len(),
                if e.done { "" } else { ", not done" }
            ));
        }
        if let Some(note) = &r.note {
            out.push_str(&format!("  note: {note}\n"));
        }
    }
    for (name, version, st, write_only) in &states {
        let known = match st {
            Some(s) => format!("complete through version {} ({})", s.complete, s.by),
            None => "no state recorded yet".to_owned(),
        };
        out.push_str(&format!("{name} (version {version}): {known}\n"));
        for w in write_only {
            out.push_str(&format!("  write-only: {w}\n"));
        }
    }
    print(&out)?;
    Ok(Code::Success)
}
