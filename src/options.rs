//! Hardware paths for a scenario: a bigger card of the same generation, a newer generation, and
//! more GPUs with the layout that fits — each with fit, headroom, speed against the current card
//! and price.

use crate::cost;
use crate::estimate::{Parallel, Scenario, estimate};
use crate::fit::max_batch;
use crate::gpu::{self, Gpu};
use crate::plan::{self, SpeedModel};
use serde::Serialize;

/// Architecture generation of a catalog card, oldest first (`None` when unknown).
pub fn generation(g: &Gpu) -> Option<(u8, &'static str)> {
    let id = g.id.as_str();
    let gens: [(&[&str], u8, &str); 6] = [
        (&["v100"], 0, "Volta"),
        (&["t4"], 1, "Turing"),
        (&["a10", "a100", "rtx-3090"], 2, "Ampere"),
        (&["l4", "l40", "rtx-4090"], 3, "Ada"),
        (&["h100", "h200", "mi300"], 4, "Hopper / CDNA3"),
        (&["b200", "b300", "rtx-5090"], 5, "Blackwell"),
    ];
    gens.iter()
        .find(|(prefixes, _, _)| prefixes.iter().any(|p| id.starts_with(p)))
        .map(|(_, n, name)| (*n, *name))
}

/// One way to run the scenario on other hardware.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HardwarePath {
    /// "current", "bigger card, same generation", "newer generation", "more GPUs".
    pub kind: &'static str,
    /// The card.
    pub gpu: String,
    /// Its name.
    pub gpu_name: String,
    /// GPUs in the job.
    pub gpus: u64,
    /// The layout (for "more GPUs": the best one the search found).
    pub parallel: Parallel,
    /// Activation checkpointing of the layout.
    pub checkpoint: String,
    /// Micro-batch per GPU.
    pub micro_batch: u64,
    /// Per-GPU total, bytes.
    pub total_bytes: u64,
    /// Per-GPU capacity, bytes.
    pub capacity: u64,
    /// Fits?
    pub fits: bool,
    /// Capacity minus total (negative: short by), bytes.
    pub headroom: i64,
    /// Largest micro-batch that fits this card with this layout.
    pub max_batch: Option<u64>,
    /// Step time for the global batch, seconds.
    pub step_s: f64,
    /// Training throughput, tokens per second (the whole job).
    pub tokens_per_s: f64,
    /// This path's tokens per second over the current card's (higher is faster).
    pub speedup: f64,
    /// Cheapest on-demand price for all the job's GPUs, USD per hour.
    pub usd_per_hour: Option<f64>,
    /// USD per million training tokens at that price.
    pub usd_per_m_tokens: Option<f64>,
}

fn price_per_gpu_hour(g: &Gpu) -> Option<f64> {
    cost::cheapest_on_demand(&g.id).map(cost::Instance::per_gpu_hour)
}

fn on_card(sc: &Scenario, g: &Gpu) -> Scenario {
    let mut s = sc.clone();
    s.overhead = g.overhead();
    s
}

/// The current card and the paths away from it, for `global_batch` sequences per step.
pub fn hardware_paths(
    sc: &Scenario,
    current: &Gpu,
    global_batch: u64,
    speed: &SpeedModel,
) -> Vec<HardwarePath> {
    let mut out = Vec::new();
    let Ok(base_e) = estimate(sc) else { return out };
    let base_tps = plan::step_time(sc, &base_e, current, global_batch, speed).tokens_per_s;
    let rel = |tps: f64| if base_tps > 0.0 { tps / base_tps } else { 0.0 };
    let per_m = |usd_h: f64, tps: f64| if tps > 0.0 { usd_h / (tps * 3600.0) * 1e6 } else { f64::INFINITY };
    let same_layout = |kind: &'static str, g: &Gpu| -> Option<HardwarePath> {
        let s = on_card(sc, g);
        let e = estimate(&s).ok()?;
        let st = plan::step_time(&s, &e, g, global_batch, speed);
        let gpus = s.parallel.world();
        let price = price_per_gpu_hour(g).map(|p| p * gpus as f64);
        Some(HardwarePath {
            kind,
            gpu: g.id.clone(),
            gpu_name: g.name.clone(),
            gpus,
            parallel: s.parallel,
            checkpoint: s.checkpointing.to_string(),
            micro_batch: s.batch,
            total_bytes: e.total,
            capacity: g.memory_bytes(),
            fits: e.total <= g.memory_bytes(),
            headroom: g.memory_bytes() as i64 - e.total as i64,
            max_batch: max_batch(&s, g.memory_bytes()),
            step_s: st.step_s,
            tokens_per_s: st.tokens_per_s,
            speedup: rel(st.tokens_per_s),
            usd_per_hour: price,
            usd_per_m_tokens: price.map(|p| per_m(p, st.tokens_per_s)),
        })
    };
    if let Some(p) = same_layout("current", current) {
        out.push(p);
    }
    let catalog = gpu::catalog();
    let cur_gen = generation(current).map(|(n, _)| n);
    let mut bigger: Vec<&Gpu> = catalog
        .iter()
        .filter(|g| g.memory_mib > current.memory_mib && generation(g).map(|(n, _)| n) == cur_gen)
        .collect();
    bigger.sort_by_key(|g| g.memory_mib);
    if let Some(g) = bigger.first().and_then(|g| same_layout("bigger card, same generation", g)) {
        out.push(g);
    }
    // newer generation: the smallest newer card that fits, else the largest newer one
    let mut newer: Vec<&Gpu> = catalog
        .iter()
        .filter(|g| matches!((generation(g), cur_gen), (Some((n, _)), Some(c)) if n > c))
        .collect();
    newer.sort_by_key(|g| g.memory_mib);
    let need = base_e.total;
    if let Some(g) = newer.iter().find(|g| g.memory_bytes() >= need).or(newer.last())
        && let Some(p) = same_layout("newer generation", g)
    {
        out.push(p);
    }
    // more GPUs of the current card: the fewest that some layout fits, with its best layout
    let world = sc.parallel.world().max(1);
    for n in (0..=10).map(|i| 1u64 << i).filter(|&n| n > world) {
        let plans = plan::search(&on_card(sc, current), current, n, global_batch.max(n), speed);
        if let Some(best) = plans.first() {
            let price = price_per_gpu_hour(current).map(|p| p * n as f64);
            out.push(HardwarePath {
                kind: "more GPUs",
                gpu: current.id.clone(),
                gpu_name: current.name.clone(),
                gpus: n,
                parallel: best.parallel,
                checkpoint: best.checkpoint.clone(),
                micro_batch: best.micro_batch,
                total_bytes: best.total_bytes,
                capacity: current.memory_bytes(),
                fits: true,
                headroom: best.headroom_bytes,
                max_batch: Some(best.micro_batch),
                step_s: best.step.step_s,
                tokens_per_s: best.step.tokens_per_s,
                speedup: rel(best.step.tokens_per_s),
                usd_per_hour: price,
                usd_per_m_tokens: price.map(|p| per_m(p, best.step.tokens_per_s)),
            });
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Checkpointing;
    use crate::model::preset::builtin;

    #[test]
    fn a_13b_fine_tune_on_an_a100_40gb_has_three_paths() {
        let mut sc = Scenario::new(builtin("llama-2-13b").unwrap());
        sc.seq = 2048;
        sc.checkpointing = Checkpointing::Full;
        let g = gpu::find("a100-40gb").unwrap();
        let paths = hardware_paths(&sc, &g, 8, &SpeedModel::default());
        let kinds: Vec<_> = paths.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, ["current", "bigger card, same generation", "newer generation", "more GPUs"]);
        assert!(!paths[0].fits, "13B with AdamW needs more than 40 GB");
        assert_eq!(paths[1].gpu, "a100-80gb");
        assert_eq!(generation(&gpu::find(&paths[2].gpu).unwrap()).unwrap().0, 4, "Hopper");
        let more = &paths[3];
        assert!(more.fits && more.gpus >= 2 && more.headroom >= 0);
        assert!(more.total_bytes <= more.capacity);
        // the layout's GPUs multiply out to the job's
        assert_eq!(more.parallel.world(), more.gpus);
        // prices: the A100 40 GB has catalog instances
        assert!(paths[0].usd_per_hour.is_some());
        // a faster card of a newer generation is faster
        assert!(paths[2].speedup > 1.0, "{}", paths[2].speedup);
    }
}
