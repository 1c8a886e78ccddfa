//! A short / mid / long-term roadmap for a scenario: a search over the changes the estimator
//! models, in order of horizon and effort, each applied on top of the ones before and measured by
//! [`crate::fit::verdict`] (what `vramscope estimate` prints for the flags the step names), at the
//! peak where it acts. A memory step that saves nothing is left out. The search stops once the job
//! fits with the chosen headroom; then it lists what raises the micro-batch, each change alone on
//! the fitted job, and the changes of method (LoRA, QLoRA) beside the path, on the short-term
//! settings. Steps that are not memory changes (monitoring, a custom allocator) are labelled so.

use crate::cost;
use crate::estimate::{Checkpointing, Estimate, Lora, Mode, Offload, Optimizer, Parallel, Scenario};
use crate::fit::{max_batch, verdict};
use crate::flags;
use crate::gpu::{self, Gpu};
use crate::options::product_line;
use crate::units::Precision;
use serde::Serialize;

/// When a step can be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Horizon {
    /// Within a week: settings.
    Short,
    /// Within a month: more GPUs of the card, a larger card.
    Mid,
    /// Three months and more: clusters, a newer generation.
    Long,
}

impl Horizon {
    /// Display name.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Short => "short term",
            Self::Mid => "mid term",
            Self::Long => "long term",
        }
    }
}

/// What kind of change a step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A setting of the same job (precision recipe, checkpointing, optimizer, batching, allocator).
    Setting,
    /// The job's GPUs or card (sharding, parallelism, offload, a larger card, more nodes).
    Hardware,
    /// A different training method (LoRA, QLoRA): fewer trainable parameters, other results.
    Method,
    /// Not a memory change (monitoring, a custom allocator): nothing measured.
    NotMemory,
}

/// One step of the roadmap.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// Horizon.
    pub horizon: Horizon,
    /// Kind of change.
    pub kind: StepKind,
    /// What to do.
    pub title: String,
    /// Per-GPU total after this step (and all before it), bytes: `vramscope estimate` with
    /// [`Step::estimate_args`]. `None` for a step that is not a memory change.
    pub total_after: Option<u64>,
    /// Bytes this step saves per GPU against the state before it (`None`: not a memory change,
    /// or a change of card that adds capacity instead).
    pub saves: Option<u64>,
    /// Saved share of the total before it, percent.
    pub saves_pct: Option<f64>,
    /// Where the peak is after the step ("optimizer step", "backward: block 0 …").
    pub peak_at: String,
    /// GPUs in the job after the step.
    pub gpus: u64,
    /// GPU capacity after the step, bytes.
    pub capacity: u64,
    /// Does the job fit after it (with the roadmap's headroom)?
    pub fits: bool,
    /// Largest micro-batch after the step (`None`: not even 1).
    pub max_batch_after: Option<u64>,
    /// Relative change of the hourly price (GPUs × price per GPU-hour), e.g. +1.0 for twice the
    /// price; `None` when a card on either side has no price in the cloud catalog.
    pub cost_change: Option<f64>,
    /// Cheapest on-demand cloud price per GPU-hour of the card after the step, if the catalog has it.
    pub gpu_hour_price: Option<f64>,
    /// low / medium / high.
    pub effort: &'static str,
    /// Commands or configuration lines.
    pub how: Vec<String>,
    /// Every setting after the step as `vramscope estimate` flags (after `--model`).
    pub estimate_args: Vec<String>,
    /// The flags this step changes.
    pub changes: Vec<String>,
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
    /// Fraction of the card kept free for "fits".
    pub headroom: f64,
    /// Largest micro-batch before the steps (None: not even 1).
    pub max_batch_before: Option<u64>,
    /// After the path's steps.
    pub max_batch_after: Option<u64>,
    /// Does the job fit after the path?
    pub fits_after: bool,
    /// The headline: what the path's steps deliver.
    pub headline: String,
    /// The path, in order, cumulative.
    pub steps: Vec<Step>,
    /// Once it fits: what raises the micro-batch, each change alone on the fitted job.
    pub raise_batch: Vec<Step>,
    /// Changes of method beside the path, on the short-term settings and the current card.
    pub method: Vec<Step>,
}

fn price_per_gpu_hour(g: &Gpu) -> Option<f64> {
    cost::cheapest_on_demand(&g.id).map(cost::Instance::per_gpu_hour)
}

/// A state of the job: the scenario, its card and its verdict.
#[derive(Clone)]
struct State {
    sc: Scenario,
    gpu: Gpu,
    e: Estimate,
}

/// What a change does to a scenario and its card; `false` when it does not apply.
type Apply = Box<dyn Fn(&mut Scenario, &mut Gpu) -> bool>;

/// A change the roadmap may make.
struct Change {
    horizon: Horizon,
    kind: StepKind,
    title: String,
    effort: &'static str,
    how: Vec<String>,
    apply: Apply,
}

impl Change {
    fn new(
        horizon: Horizon,
        kind: StepKind,
        title: impl Into<String>,
        effort: &'static str,
        how: &[&str],
        apply: impl Fn(&mut Scenario, &mut Gpu) -> bool + 'static,
    ) -> Self {
        Self {
            horizon,
            kind,
            title: title.into(),
            effort,
            how: how.iter().map(|s| (*s).to_owned()).collect(),
            apply: Box::new(apply),
        }
    }
}

struct Search {
    headroom: f64,
}

impl Search {
    fn limit(&self, g: &Gpu) -> u64 {
        (g.memory_bytes() as f64 * (1.0 - self.headroom)) as u64
    }

    fn state(&self, sc: Scenario, gpu: Gpu) -> Option<(State, bool)> {
        let v = verdict(&sc, gpu.memory_bytes()).ok()?;
        let fits = v.fits && v.estimate.total <= self.limit(&gpu);
        Some((State { sc, gpu, e: v.estimate }, fits))
    }

    fn fits(&self, st: &State) -> bool {
        self.state(st.sc.clone(), st.gpu.clone()).is_some_and(|(_, f)| f)
    }

    fn max_batch(&self, st: &State) -> Option<u64> {
        max_batch(&st.sc, self.limit(&st.gpu))
    }

    /// The step a change makes from `from`, or `None` when it does not apply or (for a memory
    /// change) saves nothing.
    fn try_step(&self, from: &State, c: &Change) -> Option<(Step, State)> {
        let mut sc = from.sc.clone();
        let mut g = from.gpu.clone();
        if !(c.apply)(&mut sc, &mut g) {
            return None;
        }
        let (to, fits) = self.state(sc, g)?;
        let card_change = to.gpu.id != from.gpu.id;
        let saves = from.e.total.checked_sub(to.e.total).filter(|s| *s > 0);
        if !card_change && saves.is_none() {
            return None;
        }
        if card_change && to.gpu.memory_bytes() <= from.gpu.memory_bytes() {
            return None;
        }
        let before =
            from.sc.parallel.world().max(1) as f64 * price_per_gpu_hour(&from.gpu).unwrap_or(f64::NAN);
        let after = to.sc.parallel.world().max(1) as f64 * price_per_gpu_hour(&to.gpu).unwrap_or(f64::NAN);
        let cost_change = if !card_change {
            Some(to.sc.parallel.world().max(1) as f64 / from.sc.parallel.world().max(1) as f64 - 1.0)
        } else if before.is_finite() && after.is_finite() && before > 0.0 {
            Some(after / before - 1.0)
        } else {
            None
        };
        let f_from = flags::flags(&from.sc, &from.gpu);
        let f_to = flags::flags(&to.sc, &to.gpu);
        let step = Step {
            horizon: c.horizon,
            kind: c.kind,
            title: c.title.clone(),
            total_after: Some(to.e.total),
            saves: if card_change { None } else { saves },
            saves_pct: if card_change {
                None
            } else {
                saves.map(|s| 100.0 * s as f64 / from.e.total.max(1) as f64)
            },
            peak_at: to.e.peak.describe(),
            gpus: to.sc.parallel.world(),
            capacity: to.gpu.memory_bytes(),
            fits,
            max_batch_after: self.max_batch(&to),
            cost_change,
            gpu_hour_price: price_per_gpu_hour(&to.gpu),
            effort: c.effort,
            how: c.how.clone(),
            estimate_args: flags::words(&f_to),
            changes: flags::words(&flags::changed(&f_from, &f_to)),
            estimate: to.e.clone(),
        };
        Some((step, to))
    }

    fn note(&self, at: &State, c: &Change) -> Step {
        Step {
            horizon: c.horizon,
            kind: StepKind::NotMemory,
            title: c.title.clone(),
            total_after: None,
            saves: None,
            saves_pct: None,
            peak_at: String::new(),
            gpus: at.sc.parallel.world(),
            capacity: at.gpu.memory_bytes(),
            fits: self.fits(at),
            max_batch_after: None,
            cost_change: None,
            gpu_hour_price: None,
            effort: c.effort,
            how: c.how.clone(),
            estimate_args: flags::words(&flags::flags(&at.sc, &at.gpu)),
            changes: Vec::new(),
            estimate: at.e.clone(),
        }
    }
}

/// The fewest GPUs of the card (2 to `max`, powers of two) over which ZeRO-3 fits, else `max`.
fn zero3_gpus(sc: &Scenario, g: &Gpu, limit: u64, max: u64) -> u64 {
    let mut n = 2;
    while n < max {
        let mut s = sc.clone();
        s.parallel = Parallel { dp: n * sc.parallel.dp.max(1), zero: 3, ..sc.parallel };
        if verdict(&s, g.memory_bytes()).is_ok_and(|v| v.fits && v.estimate.total <= limit) {
            return n;
        }
        n *= 2;
    }
    max
}

/// The changes the roadmap tries, in order of horizon and effort.
fn changes(sc: &Scenario, gpu: &Gpu, headroom: f64) -> Vec<Change> {
    use Horizon::{Long, Mid, Short};
    use StepKind::{Hardware, NotMemory, Setting};
    let train = sc.mode == Mode::Train;
    let limit = move |g: &Gpu| (g.memory_bytes() as f64 * (1.0 - headroom)) as u64;
    let mut v = Vec::new();
    if train {
        v.push(Change::new(
            Short,
            Setting,
            "Mixed precision: bf16 autocast over fp32 weights",
            "low",
            &[
                "PyTorch: with torch.autocast(\"cuda\", dtype=torch.bfloat16): ...",
                "HF Trainer: TrainingArguments(bf16=True)",
            ],
            |s, _| {
                let was = s.precision;
                if was == Precision::Fp32 {
                    s.precision = Precision::Bf16Amp;
                }
                was == Precision::Fp32
            },
        ));
        v.push(Change::new(Short, Setting, "Gradient checkpointing on every block", "low", &[
            "HF: model.gradient_checkpointing_enable()  or  TrainingArguments(gradient_checkpointing=True)",
        ], |s, _| {
            let apply = s.checkpointing != Checkpointing::Full;
            s.checkpointing = Checkpointing::Full;
            apply
        }));
        v.push(Change::new(Short, Setting, "Fused linear cross-entropy (Liger kernel): no full logits", "low", &[
            "pip install liger-kernel; from liger_kernel.transformers import apply_liger_kernel_to_llama; apply_liger_kernel_to_llama()",
        ], |s, _| {
            let apply = s.stack.loss != crate::estimate::Loss::FusedLinearCe && !s.stack.compiled_loss
                && s.model.transformer().is_some();
            if apply { s.stack.loss = crate::estimate::Loss::FusedLinearCe; }
            apply
        }));
        v.push(Change::new(Short, Setting, "Micro-batch with gradient accumulation (same global batch)", "low", &[
            "HF Trainer: per_device_train_batch_size=MB, gradient_accumulation_steps=N (MB x N = the batch before)",
        ], move |s, g| {
            if s.batch <= 1 || s.stack.optimizer_in_backward || s.parallel.pp > 1 {
                return false;
            }
            let b = s.batch;
            let accum = u64::from(s.stack.grad_accum.max(1));
            // the largest micro-batch dividing the batch that fits, else 1
            let cap = limit(g);
            let mb = (1..b).rev().filter(|d| b.is_multiple_of(*d)).find(|&d| {
                let mut t = s.clone();
                t.batch = d;
                t.stack.grad_accum = u32::try_from(accum * (b / d)).unwrap_or(u32::MAX);
                verdict(&t, g.memory_bytes()).is_ok_and(|v| v.fits && v.estimate.total <= cap)
            }).unwrap_or(1);
            s.batch = mb;
            s.stack.grad_accum = u32::try_from(accum * (b / mb)).unwrap_or(u32::MAX);
            true
        }));
        v.push(Change::new(
            Short,
            Setting,
            "8-bit AdamW (bitsandbytes): optimizer states in 8 bits",
            "low",
            &["pip install bitsandbytes; TrainingArguments(optim=\"adamw_bnb_8bit\")"],
            |s, _| {
                let apply = matches!(
                    s.optimizer,
                    Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwFused | Optimizer::AdamwLoop
                );
                if apply {
                    s.optimizer = Optimizer::Adamw8bit;
                }
                apply
            },
        ));
    }
    v.push(Change::new(
        Short,
        Setting,
        "Allocator: expandable segments (less fragmentation)",
        "low",
        &["export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"],
        |s, _| {
            let apply = !s.overhead.allocator.expandable_segments && !s.overhead.flat_reserve;
            s.overhead.allocator.expandable_segments = true;
            apply
        },
    ));
    v.push(Change::new(Short, NotMemory, "Measure it: memory monitoring in the job (not a memory change)", "low", &[
        "vramscope monitor --interval-ms 250 --count 100000 --json > trace.jsonl",
        "torch.cuda.memory._record_memory_history(); ...; torch.cuda.memory._dump_snapshot(\"snap.pickle\")",
    ], |_, _| false));
    if train {
        let node = sc.parallel.node_size();
        let (sc0, g0) = (sc.clone(), gpu.clone());
        let n = zero3_gpus(&sc0, &g0, limit(&g0), node);
        v.push(Change::new(
            Mid,
            Hardware,
            format!("Shard model states over {n} GPUs of this card (ZeRO-3 / FSDP full_shard)"),
            "medium",
            &[
                "DeepSpeed: \"zero_optimization\": {\"stage\": 3}",
                "accelerate: fsdp_sharding_strategy: FULL_SHARD",
            ],
            move |s, g| {
                if s.parallel.effective_zero() >= 3 || s.parallel.pp > 1 {
                    return false;
                }
                let n = zero3_gpus(s, g, limit(g), node);
                s.parallel = Parallel { dp: s.parallel.dp.max(1) * n, zero: 3, fsdp: None, ..s.parallel };
                true
            },
        ));
        v.push(Change::new(
            Mid,
            Hardware,
            "ZeRO-Offload: optimizer states and step on the CPU",
            "medium",
            &["DeepSpeed: \"offload_optimizer\": {\"device\": \"cpu\"}"],
            |s, _| {
                if s.parallel.offload != Offload::None || s.parallel.pp > 1 {
                    return false;
                }
                s.parallel =
                    Parallel { zero: s.parallel.zero.max(2), offload: Offload::Optimizer, ..s.parallel };
                true
            },
        ));
    }
    // a larger card: the smallest that fits, in this product line first
    v.push(Change::new(Mid, Hardware, "A larger card", "medium", &[], move |s, g| {
        let line = product_line(g);
        let mut cards: Vec<&Gpu> =
            gpu::catalog().iter().filter(|c| c.memory_bytes() > g.memory_bytes()).collect();
        cards.sort_by_key(|c| (product_line(c) != line, c.memory_mib));
        let fitting = cards.into_iter().find(|c| {
            let mut t = s.clone();
            let d = c.overhead();
            t.overhead.cuda_context_bytes = d.cuda_context_bytes;
            t.overhead.workspace_bytes = d.workspace_bytes;
            verdict(&t, c.memory_bytes()).is_ok_and(|v| v.fits && v.estimate.total <= limit(c))
        });
        let Some(c) = fitting else { return false };
        let d = c.overhead();
        s.overhead.cuda_context_bytes = d.cuda_context_bytes;
        s.overhead.workspace_bytes = d.workspace_bytes;
        *g = c.clone();
        true
    }));
    if train {
        // more nodes: the fastest layout the plan search finds on the fewest GPUs that fit
        v.push(Change::new(Long, Hardware, "More nodes: a layout with tensor / pipeline parallelism", "high", &[
            "Megatron-LM / DeepSpeed: the layout's --tensor-model-parallel-size and --pipeline-model-parallel-size",
        ], move |s, g| {
            let world = s.parallel.world().max(1);
            for n in (4..=10).map(|i| 1u64 << i).filter(|&n| n > world) {
                let global = s.batch * u64::from(s.stack.grad_accum.max(1)) * s.parallel.dp.max(1);
                let global = global.max(n);
                let speed = crate::plan::SpeedModel::default();
                if let Some(best) = crate::plan::search(s, g, n, global, &speed)
                    .into_iter()
                    .find(|p| p.total_bytes <= limit(g))
                {
                    *s = best.scenario;
                    return true;
                }
            }
            false
        }));
    }
    v.push(Change::new(
        Long,
        NotMemory,
        "A custom allocator for this workload (not a memory change the estimator measures)",
        "high",
        &["torch.cuda.memory.change_current_allocator(torch.cuda.memory.CUDAPluggableAllocator(...))"],
        |_, _| false,
    ));
    v
}

/// The changes of method beside the path.
fn method_changes() -> Vec<Change> {
    use Horizon::Mid;
    use StepKind::Method;
    let all: Lora = Lora { rank: 16, targets: crate::estimate::Targets::ALL, dropout: 0.0 };
    vec![
        Change::new(
            Mid,
            Method,
            "Change of method: LoRA (rank 16 on every projection) instead of full fine-tuning",
            "medium",
            &["PEFT: get_peft_model(model, LoraConfig(r=16, target_modules=\"all-linear\"))"],
            move |s, _| {
                if s.lora.is_some() || s.mode != Mode::Train {
                    return false;
                }
                s.lora = Some(all);
                true
            },
        ),
        Change::new(
            Mid,
            Method,
            "Change of method: QLoRA (LoRA on a 4-bit NF4 base)",
            "medium",
            &[
                "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True)",
            ],
            move |s, _| {
                if s.base_quant != crate::estimate::BaseQuant::None
                    || s.mode != Mode::Train
                    || s.precision.is_quantized()
                {
                    return false;
                }
                if s.lora.is_none() {
                    s.lora = Some(all);
                }
                s.base_quant = crate::estimate::BaseQuant::Nf4;
                true
            },
        ),
    ]
}

/// Builds the roadmap of `sc` on `gpu`, stopping once it fits with no headroom.
pub fn roadmap(sc: &Scenario, gpu: &Gpu) -> Option<Roadmap> {
    roadmap_with(sc, gpu, 0.0)
}

/// Builds the roadmap of `sc` on `gpu`; "fits" keeps `headroom` (a fraction of the card) free.
pub fn roadmap_with(sc: &Scenario, gpu: &Gpu, headroom: f64) -> Option<Roadmap> {
    let search = Search { headroom: headroom.clamp(0.0, 0.9) };
    let (start, fits_before) = search.state(sc.clone(), gpu.clone())?;
    let mut at = start.clone();
    let mut fits = fits_before;
    let mut steps = Vec::new();
    // changes not applied (they did not apply, saved nothing, or came after the job fitted)
    let mut rest: Vec<usize> = Vec::new();
    let mut short_state = None;
    let all = changes(sc, gpu, search.headroom);
    for horizon in [Horizon::Short, Horizon::Mid, Horizon::Long] {
        if horizon != Horizon::Short && short_state.is_none() {
            short_state = Some(at.clone());
        }
        let now = (0..all.len()).filter(|&i| all[i].horizon == horizon);
        // what an earlier horizon could not use yet comes first (it is less effort), e.g. a
        // smaller micro-batch once sharding has moved the peak from the states to the activations
        let mut pending = std::mem::take(&mut rest);
        for i in now {
            if all[i].kind == StepKind::NotMemory {
                steps.push(search.note(&at, &all[i]));
            } else {
                pending.push(i);
            }
        }
        // the first change in order that applies is taken, then the list is tried again from
        // its start: a change that saved nothing while another phase held the peak (a smaller
        // micro-batch under an optimizer-step peak) gets its turn before anything costlier
        while !fits {
            let found =
                pending.iter().enumerate().find_map(|(k, &i)| search.try_step(&at, &all[i]).map(|r| (k, r)));
            let Some((k, (mut step, to))) = found else { break };
            let c = &all[pending.remove(k)];
            // the step's title names what it did on this state
            if c.title == "A larger card" {
                step.title = format!("A larger card: {} ({})", to.gpu.name, product_line(&to.gpu));
                step.how = vec![format!("--gpu {}", to.gpu.id)];
            } else if c.title.starts_with("Micro-batch") {
                step.title = format!(
                    "Micro-batch {} with gradient accumulation x{} (same batch of {})",
                    to.sc.batch,
                    to.sc.stack.grad_accum,
                    to.sc.batch * u64::from(to.sc.stack.grad_accum)
                );
            } else if c.title.starts_with("Shard model states") {
                step.title = format!(
                    "Shard model states over {} GPUs of this card (ZeRO-3 / FSDP full_shard)",
                    to.sc.parallel.dp
                );
            }
            // done at this stage of the path (a setting that only helps once sharding moved the
            // peak is part of that stage)
            step.horizon = horizon;
            fits = step.fits;
            steps.push(step);
            at = to;
        }
        rest.extend(pending);
    }
    let short_state = short_state.unwrap_or_else(|| at.clone());
    // once it fits: what raises the micro-batch, each change alone on the fitted job
    let mb_now = search.max_batch(&at);
    let mut raise_batch = Vec::new();
    if fits {
        for c in rest.iter().map(|&i| &all[i]) {
            if let Some((mut step, to)) = search.try_step(&at, c)
                && step.max_batch_after > mb_now
                && to.gpu.id == at.gpu.id
            {
                step.title = format!(
                    "{} (largest micro-batch {} -> {})",
                    c.title,
                    mb_now.unwrap_or(0),
                    step.max_batch_after.unwrap_or(0)
                );
                raise_batch.push(step);
            }
        }
    }
    let mut method = Vec::new();
    let mut m_at = short_state;
    for c in method_changes() {
        if let Some((step, to)) = search.try_step(&m_at, &c) {
            method.push(step);
            m_at = to;
        }
    }
    let memory_steps = steps.iter().filter(|s| s.kind != StepKind::NotMemory).count();
    let max_batch_before = search.max_batch(&start);
    let max_batch_after = mb_now;
    let job = |st: &State| format!("{} x {}", st.sc.parallel.world().max(1), st.gpu.name);
    let headline = match (fits_before, fits, max_batch_after) {
        (true, _, Some(b)) => format!("fits already on {}: largest micro-batch {b}; below, what raises it", job(&at)),
        (false, true, Some(b)) => format!(
            "fits on {} after {memory_steps} step(s), with a largest micro-batch of {b}",
            job(&at)
        ),
        (_, true, None) => format!("fits on {} at the batch asked", job(&at)),
        (_, false, _) => "still does not fit after every step: a smaller model, a change of method (below) or a larger cluster".into(),
    };
    Some(Roadmap {
        total_before: start.e.total,
        capacity_before: gpu.memory_bytes(),
        headroom: search.headroom,
        max_batch_before,
        max_batch_after,
        fits_after: fits,
        headline,
        steps,
        raise_batch,
        method,
    })
}

/// The roadmap as Markdown. `model` is the `--model` the flags follow (a preset name or a path;
/// `None`: the model's name in angle brackets, for a reader to fill in).
pub fn to_markdown(sc: &Scenario, r: &Roadmap, model: Option<&str>) -> String {
    let model = model.map_or_else(|| format!("<{}>", sc.model.name), str::to_owned);
    let g = |b: u64| format!("{:.1} GiB", b as f64 / crate::units::GIB);
    let mut s = format!(
        "# Memory roadmap: {}\n\n**{}** (per GPU now: {} of {}).\n\nEach step is applied on top of the ones before it; its total is `vramscope estimate` with the flags under \"How\".\n\n",
        sc.model.name,
        r.headline,
        g(r.total_before),
        g(r.capacity_before)
    );
    let table = |s: &mut String, steps: &[Step]| {
        *s += "| # | horizon | step | saves | total after | peak at | fits | largest micro-batch | cost change | effort |\n|---|---|---|---:|---:|---|---|---:|---:|---|\n";
        for (i, st) in steps.iter().enumerate() {
            let saves = match (st.kind, st.saves, st.saves_pct) {
                (StepKind::NotMemory, _, _) => "not a memory change".to_owned(),
                (_, Some(b), Some(p)) => format!("{} ({p:.0} %)", g(b)),
                _ => format!("capacity {}", g(st.capacity)),
            };
            *s += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                i + 1,
                st.horizon.label(),
                st.title,
                saves,
                st.total_after.map_or("-".into(), |t| format!("{} of {}", g(t), g(st.capacity))),
                if st.peak_at.is_empty() { "-" } else { &st.peak_at },
                if st.kind == StepKind::NotMemory {
                    "-"
                } else if st.fits {
                    "yes"
                } else {
                    "no"
                },
                st.max_batch_after.map_or("-".into(), |b| b.to_string()),
                match (st.cost_change, st.gpu_hour_price) {
                    (Some(c), _) => format!("{:+.0} %", 100.0 * c),
                    (None, Some(p)) => format!("${p:.2} per GPU-hour"),
                    (None, None) => "-".to_string(),
                },
                st.effort
            );
        }
    };
    table(&mut s, &r.steps);
    if !r.raise_batch.is_empty() {
        s += "\n## What raises the micro-batch (each alone, on the job that fits)\n\n";
        table(&mut s, &r.raise_batch);
    }
    if !r.method.is_empty() {
        s += "\n## Changes of method (on the short-term settings, this card)\n\n";
        table(&mut s, &r.method);
    }
    s += "\n## How\n\n";
    for st in r.steps.iter().chain(&r.raise_batch).chain(&r.method) {
        let mut lines = st.how.clone();
        if !st.changes.is_empty() {
            lines.push(format!("vramscope estimate flags changed: {}", st.changes.join(" ")));
        }
        if st.kind != StepKind::NotMemory {
            lines
                .push(format!("after it: vramscope estimate --model {model} {}", st.estimate_args.join(" ")));
        }
        s += &format!("### {}\n\n```\n{}\n```\n\n", st.title, lines.join("\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset::builtin;

    /// The issue's case: a 13B full fine-tune in fp32 does not fit one 24 GB card. The path takes
    /// the seed's steps in order (mixed precision, checkpointing, 8-bit AdamW, sharding), each
    /// cumulative and measured, stops once it fits, and the headline is what the path delivers.
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
        let titles: Vec<&str> = r.steps.iter().map(|s| s.title.as_str()).collect();
        for want in ["Mixed precision", "Gradient checkpointing", "8-bit AdamW", "Shard model states"] {
            assert!(titles.iter().any(|t| t.starts_with(want)), "{want} missing: {titles:?}");
        }
        assert!(r.fits_after && r.steps.iter().rev().find(|s| s.kind != StepKind::NotMemory).unwrap().fits);
        // it stops at the first step that fits: every memory step before it does not fit
        let memory: Vec<&Step> = r.steps.iter().filter(|s| s.kind != StepKind::NotMemory).collect();
        assert!(memory[..memory.len() - 1].iter().all(|s| !s.fits));
        // cumulative: each step's saving is the total before it less the total after it
        let mut before = r.total_before;
        for s in &memory {
            let after = s.total_after.unwrap();
            if let Some(saved) = s.saves {
                assert_eq!(saved, before - after, "{}", s.title);
                assert!(saved > 0, "no step saves nothing: {}", s.title);
            }
            before = after;
        }
        // not-memory steps say so and carry no saving
        assert!(r.steps.iter().filter(|s| s.kind == StepKind::NotMemory).all(|s| s.saves.is_none()));
        // the headline is the last step's: its GPUs and micro-batch
        let last = memory.last().unwrap();
        assert_eq!(r.max_batch_after, last.max_batch_after);
        assert!(r.headline.contains(&format!("{} x", last.gpus)), "{}", r.headline);
        assert!(r.headline.contains(&format!("{}", r.max_batch_after.unwrap())), "{}", r.headline);
        // the changes of method are beside the path, marked as such
        assert!(r.method.iter().all(|s| s.kind == StepKind::Method) && !r.method.is_empty());
        let md = to_markdown(&sc, &r, Some("llama-2-13b"));
        assert!(md.contains("| short term |") && md.contains("not a memory change"), "{md}");
        assert!(!md.contains("0.0 GiB (0 %)"), "{md}");
    }
}
