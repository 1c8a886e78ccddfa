//! Hardware paths for a scenario: a bigger card of the same generation, a newer generation, and
//! more GPUs with the layout that fits — each with fit, headroom, speed against the current card
//! and price.

use crate::cost;
use crate::estimate::{Parallel, Scenario};
use crate::fit::max_batch;
use crate::flags;
use crate::gpu::{self, Gpu};
use crate::i18n::Lang;
use crate::plan::{self, SpeedModel};
use serde::Serialize;

/// Architecture generation of a catalog card, oldest first (`None` when unknown).
pub fn generation(g: &Gpu) -> Option<(u8, &'static str)> {
    let id = g.id.as_str();
    // an NPU (ascend-) has none: no CUDA card is its generation or its successor
    let gens: [(&[&str], u8, &str); 6] = [
        (&["v100"], 0, "Volta"),
        (&["t4"], 1, "Turing"),
        (&["a10", "a100", "a800", "rtx-3090", "rtx-a6000"], 2, "Ampere"),
        (&["l4", "l20", "l40", "rtx-40", "rtx-6000-ada"], 3, "Ada"),
        (&["h100", "h20", "h800", "mi300", "mi325"], 4, "Hopper / CDNA3"),
        (&["b200", "b300", "gb200", "rtx-5090", "rtx-pro-6000", "mi355"], 5, "Blackwell / CDNA4"),
    ];
    gens.iter()
        .find(|(prefixes, _, _)| prefixes.iter().any(|p| id.starts_with(p)))
        .map(|(_, n, name)| (*n, *name))
}

/// Which market a card is sold in: a path stays in it, or says that it leaves it.
pub fn product_line(g: &Gpu) -> &'static str {
    product_line_in(g, Lang::En)
}

/// [`product_line`]'s name in `lang`.
pub fn product_line_in(g: &Gpu, lang: Lang) -> &'static str {
    if g.id.starts_with("rtx-") {
        lang.pick("consumer / workstation", "消费级 / 工作站")
    } else {
        lang.pick("data centre", "数据中心")
    }
}

/// One way to run the scenario on other hardware.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HardwarePath {
    /// "current", "bigger card, same generation", "newer generation", "more GPUs", each with the
    /// product line when it is not the current card's (in the language asked for:
    /// [`hardware_paths_in`]).
    pub kind: String,
    /// The card.
    pub gpu: String,
    /// Its name.
    pub gpu_name: String,
    /// Its product line ([`product_line`], English in every language).
    pub product_line: &'static str,
    /// GPUs in the job.
    pub gpus: u64,
    /// The layout (for "more GPUs": the best one the search found), offload included.
    pub parallel: Parallel,
    /// Activation checkpointing of the layout.
    pub checkpoint: String,
    /// Precision recipe.
    pub precision: String,
    /// Micro-batch per GPU.
    pub micro_batch: u64,
    /// Sequences per optimizer step of the row (more GPUs: at least one per GPU).
    pub global_batch: u64,
    /// Micro-batches per optimizer step (gradient accumulation, or the pipeline's).
    pub grad_accum: u64,
    /// Per-GPU total, bytes: `vramscope estimate` with [`HardwarePath::estimate_args`].
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
    /// Every setting of the row as `vramscope estimate` flags (after `--model`).
    pub estimate_args: Vec<String>,
    /// The flags that differ from the scenario asked about.
    pub changes: Vec<String>,
    /// The row's scenario.
    #[serde(skip)]
    pub scenario: Scenario,
}

/// The scenario on another card: the card's own context and workspace, everything else kept.
pub(crate) fn on_card(sc: &Scenario, from: &Gpu, g: &Gpu) -> Scenario {
    let mut s = sc.clone();
    if g.id != from.id {
        let d = g.overhead();
        s.overhead.cuda_context_bytes = d.cuda_context_bytes;
        s.overhead.workspace_bytes = d.workspace_bytes;
    }
    s
}

/// The current card and the paths away from it, for `global_batch` sequences per step: a bigger
/// card of the same generation, a newer generation (in the current card's product line, and in
/// the other line when it has one, named so), and the fewest GPUs of the current card that some
/// layout fits. Every row's total and fit are [`crate::fit::verdict`]'s for the flags it lists.
/// The rows' kinds are in English.
pub fn hardware_paths(
    sc: &Scenario,
    current: &Gpu,
    global_batch: u64,
    speed: &SpeedModel,
) -> Vec<HardwarePath> {
    hardware_paths_in(sc, current, global_batch, speed, Lang::En)
}

/// [`hardware_paths`] with the rows' kinds in `lang` (the figures and flags are the same).
pub fn hardware_paths_in(
    sc: &Scenario,
    current: &Gpu,
    global_batch: u64,
    speed: &SpeedModel,
    lang: Lang,
) -> Vec<HardwarePath> {
    let mut out = Vec::new();
    let Ok(base) = crate::fit::verdict(sc, current.capacity()) else { return out };
    let base_flags = flags::flags(sc, current);
    let base_tps = plan::step_time(sc, &base.estimate, current, global_batch, speed).tokens_per_s;
    let rel = |tps: f64| if base_tps > 0.0 { tps / base_tps } else { 0.0 };
    let per_m = |usd_h: f64, tps: f64| if tps > 0.0 { usd_h / (tps * 3600.0) * 1e6 } else { f64::INFINITY };
    let line = product_line(current);
    let named = |kind: &str, g: &Gpu| {
        if product_line(g) == line {
            kind.to_owned()
        } else {
            let other = product_line_in(g, lang);
            crate::text!(lang, "{kind} ({other})", "{kind}（{other}）")
        }
    };
    let row = |kind: String, g: &Gpu, s: Scenario, accum: u64, global_batch: u64| -> Option<HardwarePath> {
        let v = crate::fit::verdict(&s, g.capacity()).ok()?;
        let st = plan::step_time(&s, &v.estimate, g, global_batch, speed);
        let gpus = s.parallel.world();
        let price = cost::on_demand_per_gpu_hour(&g.id).map(|p| p * gpus as f64);
        let f = flags::flags(&s, g);
        Some(HardwarePath {
            kind,
            gpu: g.id.clone(),
            gpu_name: g.name.clone(),
            product_line: product_line(g),
            gpus,
            parallel: s.parallel,
            checkpoint: s.checkpointing.to_string(),
            precision: s.precision.to_string(),
            micro_batch: s.batch,
            global_batch,
            grad_accum: accum,
            total_bytes: v.estimate.total,
            capacity: g.capacity(),
            fits: v.fits,
            headroom: v.headroom(),
            max_batch: max_batch(&s, g.capacity()),
            step_s: st.step_s,
            tokens_per_s: st.tokens_per_s,
            speedup: rel(st.tokens_per_s),
            usd_per_hour: price,
            usd_per_m_tokens: price.map(|p| per_m(p, st.tokens_per_s)),
            estimate_args: flags::words(&f),
            changes: flags::words(&flags::changed(&base_flags, &f)),
            scenario: s,
        })
    };
    let accum = sc.micro_batches_per_step();
    let same_layout = |kind: String, g: &Gpu| row(kind, g, on_card(sc, current, g), accum, global_batch);
    if let Some(p) = same_layout(lang.pick("current", "当前").into(), current) {
        out.push(p);
    }
    let catalog = gpu::catalog();
    let cur_gen = generation(current).map(|(n, _)| n);
    let need = base.estimate.total;
    // the smallest card of a set that fits, else the largest of them
    // (at equal memory the catalog's first: the A100 80 GB, not its export variant the A800)
    let pick = |mut cards: Vec<&'static Gpu>| -> Option<&'static Gpu> {
        cards.sort_by_key(|g| g.memory_mib);
        let largest = cards.last().map(|g| g.memory_mib);
        cards.iter().find(|g| g.capacity() >= need || Some(g.memory_mib) == largest).copied()
    };
    let bigger: Vec<&Gpu> = catalog
        .iter()
        .filter(|g| {
            g.memory_mib > current.memory_mib && cur_gen.is_some() && generation(g).map(|(n, _)| n) == cur_gen
        })
        .collect();
    let bigger_same_line: Vec<&Gpu> = bigger.iter().copied().filter(|g| product_line(g) == line).collect();
    let big = if bigger_same_line.is_empty() { pick(bigger) } else { pick(bigger_same_line) };
    if let Some(g) =
        big.and_then(|g| same_layout(named(lang.pick("bigger card, same generation", "同代更大的卡"), g), g))
    {
        out.push(g);
    }
    // newer generation: in this product line, and in the other one, each named
    // a successor: a later generation at least as fast and as large (an L4 is a later
    // generation than an A100, but not what replaces it)
    let newer: Vec<&Gpu> = catalog
        .iter()
        .filter(|g| matches!((generation(g), cur_gen), (Some((n, _)), Some(c)) if n > c))
        .filter(|g| {
            g.bf16_dense_tflops >= current.bf16_dense_tflops && g.memory_mib * 100 >= current.memory_mib * 95
        })
        .collect();
    // (the other line only when this one has no newer card that fits)
    let (same, other): (Vec<&Gpu>, Vec<&Gpu>) = newer.into_iter().partition(|g| product_line(g) == line);
    let mut fits_in_line = false;
    for (i, set) in [same, other].into_iter().enumerate() {
        if i == 1 && fits_in_line {
            break;
        }
        if let Some(g) = pick(set)
            && let Some(p) = same_layout(named(lang.pick("newer generation", "新一代"), g), g)
        {
            fits_in_line = p.fits;
            out.push(p);
        }
    }
    // more GPUs of the current card: the fewest that some layout fits, with its best layout
    let world = sc.parallel.world().max(1);
    for n in (0..=10).map(|i| 1u64 << i).filter(|&n| n > world) {
        let global = global_batch.max(n);
        let plans = plan::search(&on_card(sc, current, current), current, n, global, speed);
        if let Some(best) = plans.into_iter().next()
            && let Some(p) = row(
                lang.pick("more GPUs", "更多 GPU").into(),
                current,
                best.scenario,
                best.grad_accum,
                global,
            )
        {
            out.push(p);
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
        sc.overhead = g.overhead();
        let paths = hardware_paths(&sc, &g, 8, &SpeedModel::default());
        let kinds: Vec<_> = paths.iter().map(|p| p.kind.as_str()).collect();
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
        // each row names what it changes, offload included where the layout needs it
        assert_eq!(paths[1].changes, ["--gpu", "a100-80gb"]);
        assert!(more.changes.iter().any(|w| w == "--dp"), "{:?}", more.changes);
        if more.parallel.offload != crate::estimate::Offload::None {
            assert!(more.changes.iter().any(|w| w == "--offload"), "{:?}", more.changes);
        }
    }

    /// Every CUDA / ROCm card of the catalog has a generation; a card without one (the Ascend NPU)
    /// is no other card's generation, so it gets no "bigger card, same generation" (it had the
    /// GB200 as one when two unknown generations compared equal).
    #[test]
    fn every_gpu_has_a_generation_and_an_npu_none() {
        for g in gpu::catalog() {
            assert_eq!(generation(g).is_none(), g.id.starts_with("ascend-"), "{}", g.id);
        }
        let npu = gpu::find("ascend-910b").unwrap();
        let mut sc = Scenario::new(builtin("llama-3.1-8b").unwrap());
        sc.overhead = npu.overhead();
        let paths = hardware_paths(&sc, &npu, 8, &SpeedModel::default());
        assert!(
            paths.iter().all(|p| !p.kind.contains("generation")),
            "{:?}",
            paths.iter().map(|p| &p.kind).collect::<Vec<_>>()
        );
        assert_eq!(generation(&gpu::find("h20").unwrap()).unwrap().0, 4);
        assert_eq!(generation(&gpu::find("rtx-4060-ti-16gb").unwrap()).unwrap().0, 3);
    }

    /// The paths in Chinese: the same rows and figures, each kind in Chinese (with the other
    /// product line named in Chinese).
    #[test]
    fn the_paths_in_chinese_have_the_same_figures() {
        let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let mut sc = Scenario::new(builtin("llama-2-13b").unwrap());
        sc.seq = 2048;
        sc.checkpointing = Checkpointing::Full;
        for card in ["a100-40gb", "rtx-4090"] {
            let g = gpu::find(card).unwrap();
            let speed = SpeedModel::default();
            let en = hardware_paths(&sc, &g, 8, &speed);
            let zh = hardware_paths_in(&sc, &g, 8, &speed, Lang::ZhCn);
            assert_eq!(en.len(), zh.len());
            for (e, z) in en.iter().zip(&zh) {
                assert!(cjk(&z.kind), "{}", z.kind);
                assert_eq!(
                    (&e.gpu, e.gpus, e.total_bytes, e.fits, e.headroom),
                    (&z.gpu, z.gpus, z.total_bytes, z.fits, z.headroom)
                );
                assert_eq!(
                    (&e.estimate_args, &e.changes, e.product_line),
                    (&z.estimate_args, &z.changes, z.product_line)
                );
                assert_eq!(e.kind.contains('('), z.kind.contains('（'), "{} / {}", e.kind, z.kind);
                if z.product_line != product_line(&g) {
                    assert!(
                        z.kind.contains(product_line_in(&gpu::find(&z.gpu).unwrap(), Lang::ZhCn)),
                        "{}",
                        z.kind
                    );
                }
            }
            if card == "a100-40gb" {
                let kinds: Vec<_> = zh.iter().map(|p| p.kind.as_str()).collect();
                assert_eq!(kinds, ["当前", "同代更大的卡", "新一代", "更多 GPU"]);
            }
        }
    }

    #[test]
    fn a_newer_generation_is_a_successor_not_a_smaller_card() {
        let mut sc = Scenario::new(builtin("llama-2-13b").unwrap());
        sc.parallel.dp = 8;
        sc.parallel.zero = 3;
        let a100 = gpu::find("a100-80gb").unwrap();
        let paths = hardware_paths(&sc, &a100, 8, &plan::SpeedModel::default());
        let newer: Vec<_> = paths.iter().filter(|p| p.kind.starts_with("newer generation")).collect();
        assert!(!newer.is_empty());
        assert!(
            newer.iter().all(|p| p.gpu.starts_with("h") || p.gpu.starts_with("b")),
            "{:?}",
            newer.iter().map(|p| &p.gpu).collect::<Vec<_>>()
        );
        assert!(newer.iter().all(|p| p.speedup >= 1.0), "a successor is not slower");
    }

    #[test]
    fn newer_generation_stays_in_the_product_line_or_says_it_leaves_it() {
        let mut sc = Scenario::new(builtin("llama-3.1-8b").unwrap());
        sc.seq = 1024;
        let h100 = gpu::find("h100-80gb").unwrap();
        let paths = hardware_paths(&sc, &h100, 1, &SpeedModel::default());
        let newer: Vec<_> = paths.iter().filter(|p| p.kind.starts_with("newer generation")).collect();
        assert!(!newer.is_empty());
        assert_eq!(newer[0].kind, "newer generation");
        assert_eq!(newer[0].product_line, "data centre", "an H100's newer generation is not an RTX 5090");
        for p in &paths {
            assert_eq!(p.kind.contains("consumer"), p.product_line != "data centre", "{}", p.kind);
        }
        let r4090 = gpu::find("rtx-4090").unwrap();
        let paths = hardware_paths(&sc, &r4090, 1, &SpeedModel::default());
        let newer: Vec<_> = paths.iter().filter(|p| p.kind.starts_with("newer generation")).collect();
        // the smallest Blackwell of its own line that fits: the 96 GB RTX PRO 6000 (the 32 GB
        // RTX 5090 does not), not an H200
        assert_eq!(newer[0].gpu, "rtx-pro-6000", "an RTX 4090's newer generation stays in its line");
        assert_eq!(newer[0].product_line, "consumer / workstation");
    }
}
