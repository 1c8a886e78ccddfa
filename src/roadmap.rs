//! A short / mid / long-term roadmap for a scenario: the changes that apply, applied one after the
//! other, each measured by the estimator (memory saved, whether the job fits, the stacked bar after
//! it), with its effort, its cost change and the settings that do it.

use crate::cost;
use crate::estimate::{Checkpointing, Estimate, Mode, Offload, Optimizer, Parallel, Scenario, estimate};
use crate::fit::max_batch;
use crate::gpu::{self, Gpu};
use crate::units::Precision;
use serde::Serialize;

/// When a step can be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Horizon {
    /// Within a week: settings.
    Short,
    /// Within a month: hardware and parallelism.
    Mid,
    /// Three months and more: clusters, offload, allocators, new generations.
    Long,
}

/// One step of the roadmap.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// Horizon.
    pub horizon: Horizon,
    /// What to do.
    pub title: String,
    /// Per-GPU total after this step (and all before it), bytes.
    pub total_after: u64,
    /// Bytes this step saves per GPU (0 for steps that change capacity or speed instead).
    pub saves: u64,
    /// Saved share of the total before it, percent.
    pub saves_pct: f64,
    /// GPU capacity after the step, bytes.
    pub capacity: u64,
    /// Does the job fit after it?
    pub fits: bool,
    /// Relative change of the hourly price (GPUs × price per GPU-hour), e.g. +1.0 for twice the
    /// price; `None` when a card on either side has no price in the cloud catalog.
    pub cost_change: Option<f64>,
    /// Cheapest on-demand cloud price per GPU-hour of the card after the step, if the catalog has it.
    pub gpu_hour_price: Option<f64>,
    /// low / medium / high.
    pub effort: &'static str,
    /// Commands or configuration lines.
    pub how: Vec<String>,
    /// The estimate after the step (the stacked bar).
    pub estimate: Estimate,
}

/// The roadmap.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Roadmap {
    /// Per-GPU total before any step.
    pub total_before: u64,
    /// Capacity before.
    pub capacity_before: u64,
    /// Largest micro-batch before / after (None: not even 1).
    pub max_batch_before: Option<u64>,
    /// After all steps.
    pub max_batch_after: Option<u64>,
    /// The headline: what the steps buy.
    pub headline: String,
    /// Steps, in order.
    pub steps: Vec<Step>,
}

struct Ctx {
    sc: Scenario,
    gpu: Gpu,
    prev_total: u64,
    prev_price: f64,
    steps: Vec<Step>,
}

fn price_per_gpu_hour(g: &Gpu) -> f64 {
    cost::cheapest_on_demand(&g.id).map_or(f64::NAN, cost::Instance::per_gpu_hour)
}

impl Ctx {
    /// Applies a change; keeps it when it is valid, and records the step.
    fn step(
        &mut self,
        horizon: Horizon,
        title: String,
        effort: &'static str,
        how: Vec<String>,
        change: impl FnOnce(&mut Scenario, &mut Gpu),
    ) {
        let mut sc = self.sc.clone();
        let mut g = self.gpu.clone();
        change(&mut sc, &mut g);
        let Ok(e) = estimate(&sc) else { return };
        let saves = self.prev_total.saturating_sub(e.total);
        let gpus_before = self.sc.parallel.world().max(1) as f64;
        let gpus_after = sc.parallel.world().max(1) as f64;
        let price = price_per_gpu_hour(&g);
        let cost_change = if g.id == self.gpu.id {
            Some(gpus_after / gpus_before - 1.0)
        } else if self.prev_price.is_finite() && price.is_finite() && self.prev_price > 0.0 {
            Some(price * gpus_after / (self.prev_price * gpus_before) - 1.0)
        } else {
            None
        };
        let capacity = g.memory_bytes();
        self.steps.push(Step {
            horizon,
            title,
            total_after: e.total,
            saves,
            saves_pct: if self.prev_total > 0 { 100.0 * saves as f64 / self.prev_total as f64 } else { 0.0 },
            capacity,
            fits: e.total <= capacity,
            cost_change,
            gpu_hour_price: price.is_finite().then_some(price),
            effort,
            how,
            estimate: e.clone(),
        });
        self.prev_total = e.total;
        self.prev_price = price;
        self.sc = sc;
        self.gpu = g;
    }
}

impl Ctx {
    /// Like [`Ctx::step`], for a change whose only point is memory: dropped when it saves nothing
    /// (e.g. checkpointing when the peak is the optimizer step, not the activations).
    fn saving_step(
        &mut self,
        horizon: Horizon,
        title: String,
        effort: &'static str,
        how: Vec<String>,
        change: impl FnOnce(&mut Scenario, &mut Gpu),
    ) {
        let (sc, g, total, price, n) =
            (self.sc.clone(), self.gpu.clone(), self.prev_total, self.prev_price, self.steps.len());
        self.step(horizon, title, effort, how, change);
        if self.steps.len() > n && self.steps.last().is_some_and(|s| s.saves == 0) {
            self.steps.truncate(n);
            (self.sc, self.gpu, self.prev_total, self.prev_price) = (sc, g, total, price);
        }
    }
}

/// The next card up in memory: same generation first, then newer ones.
fn bigger_card(g: &Gpu, need: u64) -> Option<Gpu> {
    let mut cards: Vec<Gpu> =
        gpu::catalog().iter().filter(|c| c.memory_bytes() > g.memory_bytes()).cloned().collect();
    cards.sort_by_key(|c| c.memory_mib);
    cards.iter().find(|c| c.memory_bytes() >= need).or(cards.first()).cloned()
}

/// Builds the roadmap of `sc` on `gpu`.
pub fn roadmap(sc: &Scenario, gpu: &Gpu) -> Option<Roadmap> {
    let before = estimate(sc).ok()?;
    let cap = gpu.memory_bytes();
    let mut c = Ctx {
        sc: sc.clone(),
        gpu: gpu.clone(),
        prev_total: before.total,
        prev_price: price_per_gpu_hour(gpu),
        steps: Vec::new(),
    };
    let train = sc.mode == Mode::Train;
    // --- short term: settings
    if train && sc.precision == Precision::Fp32 {
        c.saving_step(
            Horizon::Short,
            "Mixed precision (bf16 autocast)".into(),
            "low",
            vec![
                "PyTorch: with torch.autocast(\"cuda\", dtype=torch.bfloat16): ...".into(),
                "HF Trainer: TrainingArguments(bf16=True)".into(),
            ],
            |s, _| s.precision = Precision::Bf16Amp,
        );
    }
    if train && sc.checkpointing != Checkpointing::Full {
        c.saving_step(Horizon::Short, "Gradient checkpointing on every block".into(), "low", vec![
            "HF: model.gradient_checkpointing_enable()  or  TrainingArguments(gradient_checkpointing=True)".into(),
        ], |s, _| s.checkpointing = Checkpointing::Full);
    }
    if train && matches!(c.sc.optimizer, Optimizer::Adamw | Optimizer::Adam) {
        c.saving_step(
            Horizon::Short,
            "8-bit AdamW (bitsandbytes)".into(),
            "low",
            vec!["pip install bitsandbytes; TrainingArguments(optim=\"adamw_bnb_8bit\")".into()],
            |s, _| s.optimizer = Optimizer::Adamw8bit,
        );
    }
    if c.prev_total > cap && c.sc.batch > 1 {
        let fit = max_batch(&c.sc, cap).unwrap_or(1);
        let keep = c.sc.batch;
        let smaller = Scenario { batch: fit, ..c.sc.clone() };
        // Only when activations are part of the peak: an optimizer-step peak does not move.
        let saves = matches!((estimate(&c.sc), estimate(&smaller)), (Ok(a), Ok(b)) if b.total < a.total);
        if saves {
            c.step(
                Horizon::Short,
                format!("Micro-batch {fit} with gradient accumulation x{}", keep.div_ceil(fit)),
                "low",
                vec![format!(
                    "TrainingArguments(per_device_train_batch_size={fit}, gradient_accumulation_steps={})",
                    keep.div_ceil(fit)
                )],
                |s, _| s.batch = fit,
            );
        }
    }
    c.saving_step(
        Horizon::Short,
        "Allocator: expandable segments (less fragmentation)".into(),
        "low",
        vec!["export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True".into()],
        |s, _| {
            s.overhead.allocator_reserve_fraction = (s.overhead.allocator_reserve_fraction * 0.4).min(0.02)
        },
    );
    // --- mid term: hardware and parallelism
    if c.prev_total > cap
        && let Some(big) = bigger_card(gpu, c.prev_total)
    {
        c.step(
            Horizon::Mid,
            format!("A larger card: {}", big.name),
            "medium",
            vec![format!("--gpu {}", big.id)],
            |_, g| *g = big.clone(),
        );
    }
    if train && c.prev_total > c.gpu.memory_bytes() {
        c.saving_step(
            Horizon::Mid,
            "Shard model states over 8 GPUs (ZeRO-3 / FSDP full_shard)".into(),
            "medium",
            vec![
                "DeepSpeed: \"zero_optimization\": {\"stage\": 3}".into(),
                "accelerate: fsdp_sharding_strategy: FULL_SHARD".into(),
            ],
            |s, _| s.parallel = Parallel { dp: 8, zero: 3, ..s.parallel },
        );
    }
    c.step(Horizon::Mid, "Memory monitoring in the training job".into(), "low", vec![
        "vramscope monitor --interval-ms 250 --count 100000 --json > trace.jsonl".into(),
        "torch.cuda.memory._record_memory_history(); ...; torch.cuda.memory._dump_snapshot(\"snap.pickle\")".into(),
    ], |_, _| {});
    // --- long term
    if train && c.prev_total > c.gpu.memory_bytes() {
        c.saving_step(
            Horizon::Long,
            "ZeRO-Offload: optimizer states and step on the CPU".into(),
            "medium",
            vec!["DeepSpeed: \"offload_optimizer\": {\"device\": \"cpu\"}".into()],
            |s, _| {
                s.parallel =
                    Parallel { zero: s.parallel.zero.max(2), offload: Offload::Optimizer, ..s.parallel }
            },
        );
    }
    if train && c.prev_total > c.gpu.memory_bytes() {
        c.saving_step(
            Horizon::Long,
            "ZeRO-Infinity: parameters and states on NVMe".into(),
            "high",
            vec![
                "DeepSpeed: \"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"/local_nvme\"}".into(),
            ],
            |s, _| s.parallel = Parallel { zero: 3, offload: Offload::Params, ..s.parallel },
        );
    }
    if c.prev_total > c.gpu.memory_bytes() {
        c.step(
            Horizon::Long,
            "A cluster: 64 GPUs with tensor and pipeline parallelism".into(),
            "high",
            vec!["Megatron-LM: --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4".into()],
            |s, _| {
                s.parallel = Parallel {
                    dp: 2,
                    tp: 8,
                    pp: 4,
                    zero: 1,
                    micro_batches: 8,
                    offload: Offload::None,
                    ..s.parallel
                }
            },
        );
    }
    c.step(
        Horizon::Long,
        "A custom allocator (PyTorch pluggable CUDA allocator) for this workload".into(),
        "high",
        vec![
            "torch.cuda.memory.change_current_allocator(torch.cuda.memory.CUDAPluggableAllocator(...))"
                .into(),
        ],
        |_, _| {},
    );
    if let Some(newest) =
        gpu::catalog().iter().filter(|g| g.id.starts_with('b')).max_by_key(|g| g.memory_mib).cloned()
        && newest.memory_mib > c.gpu.memory_mib
    {
        c.step(
            Horizon::Long,
            format!("New hardware generation: {}", newest.name),
            "high",
            vec![format!("--gpu {}", newest.id)],
            |_, g| *g = newest.clone(),
        );
    }
    let max_batch_before = max_batch(sc, cap);
    let max_batch_after = max_batch(&c.sc, c.gpu.memory_bytes());
    let headline = match (max_batch_before, max_batch_after) {
        (Some(a), Some(b)) => format!("largest micro-batch {a} -> {b} ({:.1}x)", b as f64 / a as f64),
        (None, Some(b)) => format!("from not fitting at all to a micro-batch of {b}"),
        (Some(a), None) => format!("largest micro-batch {a} now; the steps trade memory for speed"),
        (None, None) => "still does not fit: a larger cluster or a smaller model is needed".into(),
    };
    Some(Roadmap {
        total_before: before.total,
        capacity_before: cap,
        max_batch_before,
        max_batch_after,
        headline,
        steps: c.steps,
    })
}

/// The roadmap as Markdown.
pub fn to_markdown(sc: &Scenario, r: &Roadmap) -> String {
    let g = |b: u64| format!("{:.1} GiB", b as f64 / crate::units::GIB);
    let mut s = format!(
        "# Memory roadmap: {}\n\n**{}** (per GPU now: {} of {}).\n\n| horizon | step | saves | total after | fits | cost change | effort |\n|---|---|---:|---:|---|---:|---|\n",
        sc.model.name,
        r.headline,
        g(r.total_before),
        g(r.capacity_before)
    );
    for st in &r.steps {
        s += &format!(
            "| {:?} | {} | {} ({:.0} %) | {} | {} | {} | {} |\n",
            st.horizon,
            st.title,
            g(st.saves),
            st.saves_pct,
            g(st.total_after),
            if st.fits { "yes" } else { "no" },
            match (st.cost_change, st.gpu_hour_price) {
                (Some(c), _) => format!("{:+.0} %", 100.0 * c),
                (None, Some(p)) => format!("${p:.2} per GPU-hour"),
                (None, None) => "no cloud price".to_string(),
            },
            st.effort
        );
    }
    s += "\n## How\n\n";
    for st in &r.steps {
        s += &format!("### {}\n\n```\n{}\n```\n\n", st.title, st.how.join("\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset::builtin;

    /// The issue's case: a 13B full fine-tune does not fit one 24 GB card; the roadmap makes it fit.
    #[test]
    fn a_13b_full_fine_tune_on_24_gb_becomes_a_fitting_plan() {
        let mut sc = Scenario::new(builtin("llama-2-13b").unwrap());
        sc.seq = 2048;
        sc.batch = 4;
        sc.precision = Precision::Fp32;
        sc.checkpointing = Checkpointing::None;
        let gpu = gpu::find("rtx-4090").unwrap();
        let r = roadmap(&sc, &gpu).unwrap();
        assert!(r.total_before > gpu.memory_bytes());
        assert_eq!(r.max_batch_before, None);
        assert!(
            r.steps.iter().any(|s| s.fits),
            "some step makes it fit: {:#?}",
            r.steps.iter().map(|s| (&s.title, s.total_after, s.fits)).collect::<Vec<_>>()
        );
        assert!(r.max_batch_after.is_some());
        // steps are cumulative: each total is what the estimator says after all steps so far
        for w in r.steps.windows(2) {
            assert_eq!(w[1].saves, w[0].total_after.saturating_sub(w[1].total_after));
        }
        let md = to_markdown(&sc, &r);
        assert!(md.contains("| Short |") && md.contains("Gradient checkpointing"));
    }
}
