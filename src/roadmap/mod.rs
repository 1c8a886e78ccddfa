//! A short / mid / long-term roadmap for a scenario: a search over the changes the estimator
//! models, in order of horizon and effort, each applied on top of the ones before and measured by
//! [`crate::fit::verdict`] (what `vramscope estimate` prints for the flags the step names), at the
//! peak where it acts. A memory step that saves nothing is left out. The search stops once the job
//! fits with the chosen headroom; then it lists what raises the micro-batch, each change alone on
//! the fitted job, and the changes of method (LoRA, QLoRA) beside the path, on the short-term
//! settings. Steps that are not memory changes (monitoring, a custom allocator) are labelled so.

use crate::cost;
use crate::estimate::{Estimate, Scenario};
use crate::fit::{max_batch, verdict};
use crate::flags;
use crate::gpu::Gpu;
use crate::i18n::Lang;
use crate::options::product_line_in;
use serde::Serialize;

mod changes;
use changes::{Change, changes, method_changes};

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
    /// Display name (English).
    pub const fn label(self) -> &'static str {
        self.label_in(Lang::En)
    }

    /// Display name in `lang`.
    pub const fn label_in(self, lang: Lang) -> &'static str {
        match self {
            Self::Short => lang.pick("short term", "短期"),
            Self::Mid => lang.pick("mid term", "中期"),
            Self::Long => lang.pick("long term", "长期"),
        }
    }
}

/// An effort ("low", "medium", "high") in `lang`; any other text is returned as it is.
pub fn effort_in(effort: &'static str, lang: Lang) -> &'static str {
    match effort {
        "low" => lang.pick("low", "低"),
        "medium" => lang.pick("medium", "中"),
        "high" => lang.pick("high", "高"),
        other => other,
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
    /// What to do, in the roadmap's language.
    pub title: String,
    /// Per-GPU total after this step (and all before it), bytes: `vramscope estimate` with
    /// [`Step::estimate_args`]. `None` for a step that is not a memory change.
    pub total_after: Option<u64>,
    /// Bytes this step saves per GPU against the state before it (`None`: not a memory change,
    /// or a change of card that adds capacity instead).
    pub saves: Option<u64>,
    /// Saved share of the total before it, percent.
    pub saves_pct: Option<f64>,
    /// Where the peak is after the step ("optimizer step", "backward: block 0 …"); English in
    /// every language for now.
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
    /// low / medium / high (in the roadmap's language: 低 / 中 / 高 in zh-CN).
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

/// A state of the job: the scenario, its card and its verdict.
#[derive(Clone)]
struct State {
    sc: Scenario,
    gpu: Gpu,
    e: Estimate,
}

struct Search {
    headroom: f64,
    lang: Lang,
}

impl Search {
    fn limit(&self, g: &Gpu) -> u64 {
        (g.capacity() as f64 * (1.0 - self.headroom)) as u64
    }

    fn state(&self, sc: Scenario, gpu: Gpu) -> Option<(State, bool)> {
        let v = verdict(&sc, gpu.capacity()).ok()?;
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
        if card_change && to.gpu.capacity() <= from.gpu.capacity() {
            return None;
        }
        let before = from.sc.parallel.world().max(1) as f64
            * cost::on_demand_per_gpu_hour(&from.gpu.id).unwrap_or(f64::NAN);
        let after = to.sc.parallel.world().max(1) as f64
            * cost::on_demand_per_gpu_hour(&to.gpu.id).unwrap_or(f64::NAN);
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
            title: self.lang.pick(c.title, c.zh).to_owned(),
            total_after: Some(to.e.total),
            saves: if card_change { None } else { saves },
            saves_pct: if card_change {
                None
            } else {
                saves.map(|s| 100.0 * s as f64 / from.e.total.max(1) as f64)
            },
            peak_at: to.e.peak.describe_in(self.lang),
            gpus: to.sc.parallel.world(),
            capacity: to.gpu.capacity(),
            fits,
            max_batch_after: self.max_batch(&to),
            cost_change,
            gpu_hour_price: cost::on_demand_per_gpu_hour(&to.gpu.id),
            effort: effort_in(c.effort, self.lang),
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
            title: self.lang.pick(c.title, c.zh).to_owned(),
            total_after: None,
            saves: None,
            saves_pct: None,
            peak_at: String::new(),
            gpus: at.sc.parallel.world(),
            capacity: at.gpu.capacity(),
            fits: self.fits(at),
            max_batch_after: None,
            cost_change: None,
            gpu_hour_price: None,
            effort: effort_in(c.effort, self.lang),
            how: c.how.clone(),
            estimate_args: flags::words(&flags::flags(&at.sc, &at.gpu)),
            changes: Vec::new(),
            estimate: at.e.clone(),
        }
    }
}

/// A path: the changes taken, in order, each with the horizon at which it is done.
type Path = Vec<(usize, Horizon)>;

impl Search {
    /// The greedy search: horizon by horizon, the first change in order that applies is taken,
    /// then the list is tried again from its start, until the job fits.
    fn greedy(&self, start: &State, fits_before: bool, all: &[Change]) -> Path {
        let mut at = start.clone();
        let mut fits = fits_before;
        let mut path = Path::new();
        // what an earlier horizon could not use yet comes first (it is less effort), e.g. a
        // smaller micro-batch once sharding has moved the peak from the states to the activations
        let mut pending: Vec<usize> = Vec::new();
        for horizon in [Horizon::Short, Horizon::Mid, Horizon::Long] {
            pending.extend(
                (0..all.len()).filter(|&i| all[i].horizon == horizon && all[i].kind != StepKind::NotMemory),
            );
            // a change that saved nothing while another phase held the peak (a smaller
            // micro-batch under an optimizer-step peak) gets its turn before anything costlier
            while !fits {
                let found = pending
                    .iter()
                    .enumerate()
                    .find_map(|(k, &i)| self.try_step(&at, &all[i]).map(|r| (k, r)));
                let Some((k, (step, to))) = found else { break };
                // done at this stage of the path (a setting that only helps once sharding moved
                // the peak is part of that stage)
                path.push((pending.remove(k), horizon));
                fits = step.fits;
                at = to;
            }
        }
        path
    }

    /// The path without the steps it does not need: from the costliest (the last) down, a step
    /// is dropped when the job still fits without it. The greedy search takes a cheap change that
    /// saves little before the one that makes it fit (checkpointing under an optimizer-step
    /// peak); the roadmap names only what the fit needs.
    /// A step is kept where dropping it would change the hardware the path ends on (a larger
    /// card, more GPUs): a setting is cheaper than hardware.
    fn prune(&self, start: &State, all: &[Change], mut path: Path) -> Path {
        let hardware = |st: &State| (st.gpu.id.clone(), st.sc.parallel.world());
        let (_, end, _, _) = self.walk(start, false, all, &path);
        let mut k = path.len();
        while k > 0 {
            k -= 1;
            let mut without = path.clone();
            without.remove(k);
            let (_, at, fits, _) = self.walk(start, false, all, &without);
            if fits && hardware(&at) == hardware(&end) {
                path = without;
            }
        }
        path
    }

    /// The steps of `path` from `start`, with the notes (steps that are not memory changes) of
    /// each horizon before its steps: the steps, the state after them, whether it fits, and the
    /// state after the short-term steps. A change of the path that no longer saves anything is
    /// left out.
    fn walk(
        &self,
        start: &State,
        fits_before: bool,
        all: &[Change],
        path: &[(usize, Horizon)],
    ) -> (Vec<Step>, State, bool, State) {
        let mut at = start.clone();
        let mut fits = fits_before;
        let mut steps = Vec::new();
        let mut short_state = None;
        for horizon in [Horizon::Short, Horizon::Mid, Horizon::Long] {
            if horizon != Horizon::Short && short_state.is_none() {
                short_state = Some(at.clone());
            }
            for c in all.iter().filter(|c| c.horizon == horizon && c.kind == StepKind::NotMemory) {
                steps.push(self.note(&at, c));
            }
            for &(i, h) in path.iter().filter(|p| p.1 == horizon) {
                let Some((mut step, to)) = self.try_step(&at, &all[i]) else { continue };
                titled(&all[i], &mut step, &to, self.lang);
                step.horizon = h;
                fits = step.fits;
                steps.push(step);
                at = to;
            }
        }
        let short_state = short_state.unwrap_or_else(|| at.clone());
        (steps, at, fits, short_state)
    }
}

/// Names a step by what it did on this state: the card it moved to, the micro-batch and
/// accumulation it chose, the GPUs it sharded over.
fn titled(c: &Change, step: &mut Step, to: &State, lang: Lang) {
    if c.title == "A larger card" {
        let (name, line) = (&to.gpu.name, product_line_in(&to.gpu, lang));
        step.title = crate::text!(lang, "A larger card: {name} ({line})", "换显存更大的卡：{name}（{line}）");
        step.how = vec![format!("--gpu {}", to.gpu.id)];
    } else if c.title.starts_with("Micro-batch") {
        let (mb, accum) = (to.sc.batch, to.sc.stack.grad_accum);
        let batch = mb * u64::from(accum);
        step.title = crate::text!(
            lang,
            "Micro-batch {mb} with gradient accumulation x{accum} (same batch of {batch})",
            "微批次 {mb}，梯度累积 x{accum}（批次仍为 {batch}）"
        );
    } else if c.title.starts_with("Shard model states") {
        let dp = to.sc.parallel.dp;
        step.title = crate::text!(
            lang,
            "Shard model states over {dp} GPUs of this card (ZeRO-3 / FSDP full_shard)",
            "在 {dp} 张同型号 GPU 上切分模型状态（ZeRO-3 / FSDP full_shard）"
        );
    }
}

/// Builds the roadmap of `sc` on `gpu`, stopping once it fits with no headroom (in English).
pub fn roadmap(sc: &Scenario, gpu: &Gpu) -> Option<Roadmap> {
    roadmap_with(sc, gpu, 0.0)
}

/// Builds the roadmap of `sc` on `gpu`; "fits" keeps `headroom` (a fraction of the card) free
/// (in English).
pub fn roadmap_with(sc: &Scenario, gpu: &Gpu, headroom: f64) -> Option<Roadmap> {
    roadmap_in(sc, gpu, headroom, Lang::En)
}

/// [`roadmap_with`] with its texts (titles, headline, effort) in `lang`; the figures, flags and
/// commands are the same in every language.
pub fn roadmap_in(sc: &Scenario, gpu: &Gpu, headroom: f64, lang: Lang) -> Option<Roadmap> {
    let search = Search { headroom: headroom.clamp(0.0, 0.9), lang };
    let (start, fits_before) = search.state(sc.clone(), gpu.clone())?;
    let all = changes(sc, search.headroom);
    let mut path = search.greedy(&start, fits_before, &all);
    if !fits_before {
        path = search.prune(&start, &all, path);
    }
    let (steps, at, fits, short_state) = search.walk(&start, fits_before, &all, &path);
    // changes not on the path (they did not apply, saved nothing, came after the job fitted or
    // were not needed for it)
    let rest: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].kind != StepKind::NotMemory && !path.iter().any(|p| p.0 == i))
        .collect();
    // once it fits: what raises the micro-batch, each change alone on the fitted job
    let mb_now = search.max_batch(&at);
    let mut raise_batch = Vec::new();
    if fits {
        for c in rest.iter().map(|&i| &all[i]) {
            if let Some((mut step, to)) = search.try_step(&at, c)
                && step.max_batch_after > mb_now
                && to.gpu.id == at.gpu.id
            {
                titled(c, &mut step, &to, lang);
                let (title, from, to) = (&step.title, mb_now.unwrap_or(0), step.max_batch_after.unwrap_or(0));
                step.title = crate::text!(
                    lang,
                    "{title} (largest micro-batch {from} -> {to})",
                    "{title}（最大微批次 {from} -> {to}）"
                );
                raise_batch.push(step);
            }
        }
    }
    let mut method = Vec::new();
    let mut m_at = short_state;
    for c in method_changes(sc) {
        if let Some((step, to)) = search.try_step(&m_at, &c) {
            method.push(step);
            m_at = to;
        }
    }
    let memory_steps = steps.iter().filter(|s| s.kind != StepKind::NotMemory).count();
    let max_batch_before = search.max_batch(&start);
    let max_batch_after = mb_now;
    let job = |st: &State| format!("{} x {}", st.sc.parallel.world().max(1), st.gpu.name);
    let on = job(&at);
    let headline = match (fits_before, fits, max_batch_after) {
        (true, _, Some(b)) => crate::text!(
            lang,
            "fits already on {on}: largest micro-batch {b}; below, what raises it",
            "在 {on} 上已可容纳：最大微批次 {b}；下面列出能提高它的改动"
        ),
        (false, true, Some(b)) => crate::text!(
            lang,
            "fits on {on} after {memory_steps} step(s), with a largest micro-batch of {b}",
            "经过 {memory_steps} 步后可在 {on} 上容纳，最大微批次为 {b}"
        ),
        (_, true, None) => {
            crate::text!(lang, "fits on {on} at the batch asked", "按所要求的批次可在 {on} 上容纳")
        }
        (_, false, _) => lang
            .pick(
                "still does not fit after every step: a smaller model, a change of method (below) or a larger cluster",
                "所有步骤之后仍无法容纳：需要更小的模型、更换方法（见下文）或更大的集群",
            )
            .into(),
    };
    Some(Roadmap {
        total_before: start.e.total,
        capacity_before: gpu.capacity(),
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

/// The roadmap as Markdown (in English). `model` is the `--model` the flags follow (a preset
/// name or a path; `None`: the model's name in angle brackets, for a reader to fill in).
pub fn to_markdown(sc: &Scenario, r: &Roadmap, model: Option<&str>) -> String {
    to_markdown_in(sc, r, model, Lang::En)
}

/// [`to_markdown`] with its headings, table and prose in `lang` (the step texts are the
/// roadmap's own: build it with [`roadmap_in`] in the same language); commands and flags stay
/// as they are.
pub fn to_markdown_in(sc: &Scenario, r: &Roadmap, model: Option<&str>, lang: Lang) -> String {
    let model = model.map_or_else(|| crate::flags::model_arg(&sc.model), str::to_owned);
    let g = |b: u64| format!("{:.1} GiB", b as f64 / crate::units::GIB);
    let (name, headline, now, cap) = (&sc.model.name, &r.headline, g(r.total_before), g(r.capacity_before));
    let mut s = crate::text!(
        lang,
        "# Memory roadmap: {name}\n\n**{headline}** (per GPU now: {now} of {cap}).\n\nEach step is applied on top of the ones before it; its total is `vramscope estimate` with the flags under \"How\".\n\n",
        "# 显存路线图：{name}\n\n**{headline}**（当前每 GPU：{now} / {cap}）。\n\n每一步都叠加在之前各步之上；其总量即用“做法”一节中的参数运行 `vramscope estimate` 的结果。\n\n"
    );
    let table = |s: &mut String, steps: &[Step]| {
        *s += lang.pick(
            "| # | horizon | step | saves | total after | peak at | fits | largest micro-batch | cost change | effort |\n",
            "| # | 期限 | 步骤 | 节省 | 之后总量 | 峰值位置 | 可容纳 | 最大微批次 | 成本变化 | 投入 |\n",
        );
        *s += "|---|---|---|---:|---:|---|---|---:|---:|---|\n";
        for (i, st) in steps.iter().enumerate() {
            let saves = match (st.kind, st.saves, st.saves_pct) {
                (StepKind::NotMemory, _, _) => lang.pick("not a memory change", "不改变显存").to_owned(),
                (_, Some(b), Some(p)) => format!("{} ({p:.0} %)", g(b)),
                _ => {
                    let c = g(st.capacity);
                    crate::text!(lang, "capacity {c}", "容量 {c}")
                }
            };
            let total = st.total_after.map_or("-".into(), |t| {
                let (t, c) = (g(t), g(st.capacity));
                crate::text!(lang, "{t} of {c}", "{t} / {c}")
            });
            *s += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                i + 1,
                st.horizon.label_in(lang),
                st.title,
                saves,
                total,
                if st.peak_at.is_empty() { "-" } else { &st.peak_at },
                if st.kind == StepKind::NotMemory {
                    "-"
                } else if st.fits {
                    lang.pick("yes", "是")
                } else {
                    lang.pick("no", "否")
                },
                st.max_batch_after.map_or("-".into(), |b| b.to_string()),
                match (st.cost_change, st.gpu_hour_price) {
                    (Some(c), _) => format!("{:+.0} %", 100.0 * c),
                    (None, Some(p)) => crate::text!(lang, "${p:.2} per GPU-hour", "每 GPU 小时 ${p:.2}"),
                    (None, None) => "-".to_string(),
                },
                st.effort
            );
        }
    };
    table(&mut s, &r.steps);
    if !r.raise_batch.is_empty() {
        s += lang.pick(
            "\n## What raises the micro-batch (each alone, on the job that fits)\n\n",
            "\n## 提高微批次的改动（各自单独作用于已可容纳的任务）\n\n",
        );
        table(&mut s, &r.raise_batch);
    }
    if !r.method.is_empty() {
        s += lang.pick(
            "\n## Changes of method (on the short-term settings, this card)\n\n",
            "\n## 更换方法（基于短期设置，仍用这张卡）\n\n",
        );
        table(&mut s, &r.method);
    }
    s += lang.pick("\n## How\n\n", "\n## 做法\n\n");
    for st in r.steps.iter().chain(&r.raise_batch).chain(&r.method) {
        let mut lines = st.how.clone();
        if !st.changes.is_empty() {
            let changed = st.changes.join(" ");
            lines.push(crate::text!(
                lang,
                "vramscope estimate flags changed: {changed}",
                "vramscope estimate 改动的参数：{changed}"
            ));
        }
        if st.kind != StepKind::NotMemory {
            let args = st.estimate_args.join(" ");
            lines.push(crate::text!(
                lang,
                "after it: vramscope estimate --model {model} {args}",
                "执行之后：vramscope estimate --model {model} {args}"
            ));
        }
        s += &format!("### {}\n\n```\n{}\n```\n\n", st.title, lines.join("\n"));
    }
    s
}

#[cfg(test)]
mod tests;
