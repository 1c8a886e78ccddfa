//! `vramscope timeline`: the predicted memory of one step, event by event.

use super::{EstimateArgs, inputs};
use anyhow::{Context, Result};
use clap::Args;
use std::fmt::Write as _;
use vramscope::estimate::step::{Event, Pass, Timeline};
use vramscope::estimate::timeline;

/// Flags of `timeline`.
#[derive(Args, Debug, Clone)]
pub struct TimelineArgs {
    #[command(flatten)]
    pub estimate: EstimateArgs,
    /// Comma-separated values, one row per event.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Only block-level events (no per-op rows).
    #[arg(long)]
    pub blocks_only: bool,
}

const CATS: [&str; 6] =
    ["parameters", "gradients", "optimizer_states", "activations", "temporaries", "kv_cache"];

fn parts(e: &Event) -> [u64; 6] {
    let a = e.alive;
    [a.parameters, a.gradients, a.optimizer_states, a.activations, a.temporaries, a.kv_cache]
}

fn pass_key(p: Pass) -> &'static str {
    match p {
        Pass::OpForward => "op_forward",
        Pass::OpBackward => "op_backward",
        Pass::Step => "step",
    }
}

/// Runs `timeline`.
pub fn run_timeline(a: &TimelineArgs) -> Result<String> {
    let inp = inputs(&a.estimate)?;
    // the stage `vramscope estimate` reports: picked by its replayed total, or by the flat
    // estimate where --reserve-frac asks for the flat reserve
    let t = if inp.sc.overhead.flat_reserve {
        timeline(&inp.sc)?
    } else {
        vramscope::estimate::replayed(&inp.sc, None)?.0
    };
    let keep = |e: &&Event| !a.blocks_only || e.pass == Pass::Step;
    if a.csv {
        let mut s = String::from("index,phase,block,op,pass,");
        s += &CATS.join(",");
        s += ",total\n";
        for (i, e) in t.events.iter().enumerate().filter(|(_, e)| keep(e)) {
            let block = e.block.map_or(String::new(), |b| b.to_string());
            let _ = write!(
                s,
                "{i},{},{block},\"{}\",{}",
                e.phase.label(),
                e.op.replace('"', "'"),
                pass_key(e.pass)
            );
            for v in parts(e) {
                let _ = write!(s, ",{v}");
            }
            let _ = writeln!(s, ",{}", e.alive.total());
        }
        return Ok(s);
    }
    if a.estimate.json {
        return Ok(serde_json::to_string_pretty(&to_json(&t, &keep, &inp.notes))
            .context("serialising the timeline")?
            + "\n");
    }
    Ok(to_text(&t, &inp.sc))
}

fn to_json(t: &Timeline, keep: &dyn Fn(&&Event) -> bool, notes: &[String]) -> serde_json::Value {
    use serde_json::json;
    let events: Vec<_> = t
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| keep(e))
        .map(|(i, e)| {
            let bytes: serde_json::Map<String, serde_json::Value> =
                CATS.iter().zip(parts(e)).map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
            json!({
                "index": i,
                "phase": e.phase,
                "block": e.block,
                "op": e.op,
                "pass": pass_key(e.pass),
                "candidate": e.candidate,
                "label": e.label(),
                "bytes": bytes,
                "total": e.alive.total(),
            })
        })
        .collect();
    let peak = t
        .peak()
        .map(|p| json!({"index": t.peak_index, "total": p.alive.total(), "phase": p.phase, "op": p.label()}));
    json!({
        "schema": 1,
        "stage": t.estimate.stage,
        "peak_allocated": t.estimate.peak_allocated,
        "peak_phase": t.estimate.peak.phase,
        "peak": peak,
        "events": events,
        "notes": notes,
    })
}

fn gib(b: u64) -> String {
    vramscope::units::gib(b)
}

fn to_text(t: &Timeline, sc: &vramscope::estimate::Scenario) -> String {
    let mut s = String::new();
    let top = t.peak().map_or(1, |p| p.alive.total().max(1));
    let _ =
        writeln!(s, "memory over one {} of {} ({} events)", sc.mode_label(), sc.model.name, t.events.len());
    if let Some(p) = t.peak() {
        // the moment's label, with its phase when the label does not already say it
        let (phase, what) = (p.phase.label(), p.label());
        let at = if what.starts_with(phase) { what.to_string() } else { format!("{phase}: {what}") };
        let _ = writeln!(s, "peak {} at event {} ({at})", gib(p.alive.total()), t.peak_index);
    }
    for (phase, r) in t.phase_spans() {
        let max = t.events[r.clone()].iter().map(|e| e.alive.total()).max().unwrap_or(0);
        let _ =
            writeln!(s, "  {:<16} events {:>5}..{:<5} max {:>12}", phase.label(), r.start, r.end, gib(max));
    }
    let _ = writeln!(s, "\n  {:>5}  {:<56} {:>12}", "event", "block-level moment", "alive");
    // the first and last two blocks of each pass; the ones between repeat them
    let blocks = t.estimate.stage.blocks;
    let shown = |e: &Event| e.block.is_none_or(|b| b < 2 || b + 2 >= blocks);
    let mut elided = false;
    for (i, e) in t.events.iter().enumerate().filter(|(_, e)| e.pass == Pass::Step) {
        if !shown(e) && i != t.peak_index {
            if !elided {
                let _ = writeln!(
                    s,
                    "  {:>5}  … (blocks 2 to {} alike: --blocks-only --csv lists them)",
                    "",
                    blocks.saturating_sub(3)
                );
            }
            elided = true;
            continue;
        }
        elided = false;
        let bar = "#".repeat((e.alive.total() as f64 / top as f64 * 24.0).round() as usize);
        let mark = if i == t.peak_index { " <- peak" } else { "" };
        let _ = writeln!(s, "  {i:>5}  {:<56} {:>12} {bar}{mark}", e.label(), gib(e.alive.total()));
    }
    s += "\n  per-op events: --json or --csv\n";
    s
}
