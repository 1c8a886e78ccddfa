//! What to change so a server starts, or serves more requests: the serving options (each change
//! alone on the current server) and a short / mid / long-term roadmap (changes applied on top of
//! each other until the server starts and, when a target is given, holds that many concurrent
//! requests). Every row is [`serve`] for the flags it names ([`Serve::args`]), so pasting them
//! after `vramscope serve --model M` gives the row's figures.
//!
//! `changes` holds the catalogue of changes; this module tries them (alone, then as a path) and
//! words the result.

mod changes;

use super::{Serve, ServeConfig, ServeError, serve};
use crate::gpu::{self, Gpu};
use crate::i18n::Lang;
use crate::model::ModelSpec;
use crate::options::{generation, product_line};
use crate::roadmap::{Horizon, StepKind, effort_in};
use changes::{Change, applicable, apply, title};
use serde::Serialize;

/// A server to advise on: the model, its card and the settings.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The model.
    pub model: ModelSpec,
    /// The card.
    pub gpu: Gpu,
    /// vLLM's settings.
    pub cfg: ServeConfig,
    /// The checkpoint's `torch_dtype`.
    pub checkpoint_dtype: Option<String>,
}

impl Setup {
    fn run(&self) -> Result<Serve, ServeError> {
        serve(&self.model, &self.gpu, &self.cfg, self.checkpoint_dtype.as_deref())
    }
}

/// One change and what the server gives after it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServeStep {
    /// When it can be done.
    pub horizon: Horizon,
    /// A setting, hardware, or a change of what the server offers ([`StepKind::Method`]).
    pub kind: StepKind,
    /// What to do, in the advice's language.
    pub title: String,
    /// low / medium / high (低 / 中 / 高 in zh-CN).
    pub effort: &'static str,
    /// What it costs besides memory (throughput, quality, price), in the advice's language.
    pub trade_off: String,
    /// The flags this step changes.
    pub changes: Vec<String>,
    /// Every setting after the step as `vramscope serve` flags (after `--model`).
    pub serve_args: Vec<String>,
    /// GPUs after the step.
    pub gpus: u64,
    /// Tokens of KV cache after the step.
    pub kv_tokens: u64,
    /// Requests of max_model_len at once.
    pub max_concurrency: f64,
    /// Requests of the target's context at once, when one was given.
    pub concurrency_at_context: Option<f64>,
    /// Does the server start?
    pub starts: bool,
    /// Does it meet the target (starts, and holds the target concurrency)?
    pub meets_target: bool,
    /// Relative change of the hourly price (GPUs × price per GPU-hour) against the server
    /// before any step; `None` when a card has no price in the catalog.
    pub cost_change: Option<f64>,
    /// The full answer after the step.
    pub serve: Serve,
}

/// The serving options and roadmap of one server.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServeAdvice {
    /// Schema version (1).
    pub schema: u32,
    /// The server as it is.
    pub before: Serve,
    /// Concurrent requests asked for (at `--context`, else at max_model_len).
    pub target_concurrency: Option<f64>,
    /// Each change alone on the current server.
    pub options: Vec<ServeStep>,
    /// The changes applied in order, each on top of the ones before, until the target is met.
    pub roadmap: Vec<ServeStep>,
    /// Beside the path: serving shorter requests (the longest max_model_len that fits).
    pub beside: Vec<ServeStep>,
    /// Does the roadmap reach the target?
    pub meets_target_after: bool,
    /// What the roadmap delivers, in one line, in the advice's language.
    pub headline: String,
}

/// Concurrency the target is measured at: at the context, else at max_model_len.
fn concurrency(s: &Serve) -> f64 {
    s.concurrency_at_context.unwrap_or(s.max_concurrency)
}

fn meets(s: &Serve, target: Option<f64>) -> bool {
    s.fits && target.is_none_or(|t| concurrency(s) >= t)
}

fn hourly(s: &Setup) -> Option<f64> {
    crate::cost::on_demand_per_gpu_hour(&s.gpu.id).map(|p| p * (s.cfg.tp * s.cfg.pp) as f64)
}

/// What the advice aims for and the language it speaks.
#[derive(Clone, Copy)]
struct Goal {
    target: Option<f64>,
    lang: Lang,
}

fn step(
    c: Change,
    title: String,
    first: &Setup,
    before: &Serve,
    after: &Setup,
    r: Serve,
    goal: Goal,
) -> ServeStep {
    let a = before.args();
    let b = r.args();
    let changes = diff(&a, &b);
    let cost_change = match (hourly(first), hourly(after)) {
        (Some(x), Some(y)) if x > 0.0 => Some(y / x - 1.0),
        _ => None,
    };
    ServeStep {
        horizon: c.horizon(),
        kind: c.kind(),
        title,
        effort: effort_in(c.effort(), goal.lang),
        trade_off: c.trade_off(goal.lang).into(),
        changes,
        serve_args: b,
        gpus: r.gpus(),
        kv_tokens: r.kv_tokens,
        max_concurrency: r.max_concurrency,
        concurrency_at_context: r.concurrency_at_context,
        starts: r.fits,
        meets_target: meets(&r, goal.target),
        cost_change,
        serve: r,
    }
}

/// The flag/value pairs of `to` that differ from `from`'s; a switch `to` drops is named off.
fn diff(from: &[String], to: &[String]) -> Vec<String> {
    let pairs = |w: &[String]| -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < w.len() {
            let k = w[i].clone();
            match w.get(i + 1).filter(|v| !v.starts_with("--")) {
                Some(v) => {
                    out.push((k, Some(v.clone())));
                    i += 2;
                }
                None => {
                    out.push((k, None));
                    i += 1;
                }
            }
        }
        out
    };
    let (f, t) = (pairs(from), pairs(to));
    let mut out = Vec::new();
    for p in &t {
        if !f.contains(p) {
            out.push(match &p.1 {
                Some(v) => format!("{} {v}", p.0),
                None => p.0.clone(),
            });
        }
    }
    for (k, _) in &f {
        if !t.iter().any(|(k2, _)| k2 == k) {
            out.push(format!("{k} (dropped)"));
        }
    }
    out
}

/// Cards with more CUDA-visible memory than `g`, smallest first (same product line first at a
/// tie), for the change of card.
fn larger_cards(g: &Gpu) -> Vec<Gpu> {
    let mine = super::cuda_total(g).0;
    let generation_of = |c: &Gpu| generation(c).map_or(0, |(n, _)| n);
    // a larger card, not an older generation (bf16 and vLLM's kernels need Ampere or newer)
    let mut v: Vec<Gpu> = gpu::catalog()
        .iter()
        .filter(|c| super::cuda_total(c).0 > mine && generation_of(c) >= generation_of(g).max(2))
        .cloned()
        .collect();
    v.sort_by_key(|c| (super::cuda_total(c).0, product_line(c) != product_line(g), c.id.clone()));
    v
}

/// TP sizes the model allows above the current one, up to a node of 8.
fn tp_sizes(s: &Setup) -> Vec<u64> {
    [2u64, 4, 8]
        .into_iter()
        .filter(|&t| t > s.cfg.tp)
        .filter(|&t| {
            let mut n = s.clone();
            n.cfg.tp = t;
            n.run().is_ok()
        })
        .collect()
}

/// The options and the roadmap of `setup`; `target` is the concurrency to reach (at
/// `setup.cfg.context`, else at max_model_len). The texts are in English.
pub fn advise(setup: &Setup, target: Option<f64>) -> Result<ServeAdvice, ServeError> {
    advise_in(setup, target, Lang::En)
}

/// [`advise`] with its texts (titles, trade-offs, effort, headline) in `lang`; the figures and
/// flags are the same in every language, the errors English.
pub fn advise_in(setup: &Setup, target: Option<f64>, lang: Lang) -> Result<ServeAdvice, ServeError> {
    let goal = Goal { target, lang };
    if let Some(t) = target
        && !(t.is_finite() && t > 0.0)
    {
        return Err(ServeError::Invalid(format!("--target-concurrency {t} is not a positive number")));
    }
    let before = setup.run()?;
    // the server as it runs, its defaults made explicit, so every row changes only its own flags
    let mut base = setup.clone();
    base.cfg.max_model_len = Some(before.settings.max_model_len);
    base.cfg.max_num_batched_tokens = Some(before.settings.max_num_batched_tokens);
    base.cfg.max_num_seqs = Some(before.settings.max_num_seqs);

    // options: each change alone
    let mut options = Vec::new();
    let simple = [
        Change::Utilisation,
        Change::FewerSeqs,
        Change::Eager,
        Change::KvFp8,
        Change::WeightsFp8,
        Change::Checkpoint4Bit,
    ];
    for c in simple {
        if !applicable(c, &base, &before) {
            continue;
        }
        let n = apply(c, &base, &before);
        if let Ok(r) = n.run()
            && gains(&before, &r)
        {
            options.push(step(c, title(c, &n, &base, lang), &base, &before, &n, r, goal));
        }
    }
    for t in tp_sizes(&base) {
        let n = apply(Change::Tp(t), &base, &before);
        if let Ok(r) = n.run() {
            let t = Change::Tp(t);
            options.push(step(t, title(t, &n, &base, lang), &base, &before, &n, r, goal));
        }
    }
    if let Some((n, r)) = pick_card(&base, &before, target) {
        options.push(step(Change::Card, title(Change::Card, &n, &base, lang), &base, &before, &n, r, goal));
    }

    // the roadmap: cumulative, in order of horizon and effort, until the target is met; more
    // GPUs (the smallest TP that meets the target, else the largest), then a 4-bit checkpoint,
    // then a larger card
    let mut path = Path { base: &base, cur: base.clone(), now: before.clone(), steps: Vec::new(), goal };
    for c in [Change::Utilisation, Change::FewerSeqs, Change::Eager, Change::KvFp8, Change::WeightsFp8] {
        path.try_change(c);
    }
    if !path.done()
        && let Some((n, r)) = pick_tp(&path.cur, &path.now, target)
    {
        path.take(Change::Tp(n.cfg.tp), n, r);
    }
    path.try_change(Change::Checkpoint4Bit);
    if !path.done()
        && let Some((n, r)) = pick_card(&path.cur, &path.now, target)
    {
        path.take(Change::Card, n, r);
    }
    let Path { now, steps: roadmap, .. } = path;

    // beside the path: shorter requests on the server as it is
    let mut beside = Vec::new();
    if !before.fits && before.max_model_len_that_fits > 0 {
        let mut n = base.clone();
        n.cfg.max_model_len = Some(before.max_model_len_that_fits);
        if let Ok(r) = n.run() {
            let mut st = step(Change::Utilisation, String::new(), &base, &before, &n, r, goal);
            st.horizon = Horizon::Short;
            st.kind = StepKind::Method;
            st.effort = effort_in("low", lang);
            let len = before.max_model_len_that_fits;
            st.title = crate::text!(
                lang,
                "--max-model-len {len} (the longest request that fits today)",
                "--max-model-len {len}（目前能容纳的最长请求）"
            );
            st.trade_off =
                lang.pick("requests longer than that are refused", "超过这个长度的请求会被拒绝").into();
            beside.push(st);
        }
    }
    let meets_target_after = meets(&now, target);
    let headline = headline(&before, &now, roadmap.len(), goal, meets_target_after);
    Ok(ServeAdvice {
        schema: 1,
        before,
        target_concurrency: target,
        options,
        roadmap,
        beside,
        meets_target_after,
        headline,
    })
}

/// Does `after` give more than `before`: it starts where it did not, holds more KV tokens, or —
/// neither with any KV cache — leaves more of the budget after the non-KV terms (fp8 weights on
/// a server that TP then makes start)?
pub fn gains(before: &Serve, after: &Serve) -> bool {
    (after.fits && !before.fits)
        || after.kv_tokens > before.kv_tokens
        || (after.kv_tokens == 0 && before.kv_tokens == 0 && margin(after) > margin(before))
}

/// "starts", or "does not start" with how far the non-KV terms are over the budget.
pub fn verdict(s: &Serve) -> String {
    verdict_in(s, Lang::En)
}

/// [`verdict`] in `lang`.
pub fn verdict_in(s: &Serve, lang: Lang) -> String {
    let m = margin(s);
    if s.fits {
        lang.pick("starts", "可启动").into()
    } else if m <= 0 {
        let over = crate::units::gib(u64::try_from(-m).unwrap_or(u64::MAX));
        crate::text!(lang, "does not start ({over} over the budget)", "无法启动（超出预算 {over}）")
    } else {
        lang.pick(
            "does not start (one request of max_model_len does not fit)",
            "无法启动（放不下一个 max_model_len 长度的请求）",
        )
        .into()
    }
}

/// The budget less the non-KV terms, signed (negative: that much over).
pub fn margin(s: &Serve) -> i128 {
    let b = &s.bytes;
    i128::from(b.budget) - i128::from(b.weights + b.activation_peak + b.non_torch + b.cudagraph)
}

/// The first of `tried` (smallest first) that meets the target, else the last; kept when it
/// gains on `now`.
fn first_meeting(tried: Vec<(Setup, Serve)>, now: &Serve, target: Option<f64>) -> Option<(Setup, Serve)> {
    let i = tried.iter().position(|(_, r)| meets(r, target)).or(tried.len().checked_sub(1))?;
    let (n, r) = tried.into_iter().nth(i)?;
    gains(now, &r).then_some((n, r))
}

/// The smallest TP size on which the server meets the target, else the largest.
fn pick_tp(s: &Setup, now: &Serve, target: Option<f64>) -> Option<(Setup, Serve)> {
    let tried = tp_sizes(s)
        .into_iter()
        .filter_map(|t| {
            let n = apply(Change::Tp(t), s, now);
            n.run().ok().map(|r| (n, r))
        })
        .collect();
    first_meeting(tried, now, target)
}

/// The smallest larger card on which the server meets the target, else the largest card.
fn pick_card(s: &Setup, now: &Serve, target: Option<f64>) -> Option<(Setup, Serve)> {
    let tried = larger_cards(&s.gpu)
        .into_iter()
        .filter_map(|g| {
            let mut n = apply(Change::Card, s, now);
            n.gpu = g;
            n.run().ok().map(|r| (n, r))
        })
        .collect();
    first_meeting(tried, now, target)
}

/// The roadmap as it is built: the server after the steps so far.
struct Path<'a> {
    base: &'a Setup,
    cur: Setup,
    now: Serve,
    steps: Vec<ServeStep>,
    goal: Goal,
}

impl Path<'_> {
    fn done(&self) -> bool {
        meets(&self.now, self.goal.target)
    }

    /// Adds the step to `n` (whose answer is `r`) and moves on from it.
    fn take(&mut self, c: Change, n: Setup, r: Serve) {
        let st =
            step(c, title(c, &n, &self.cur, self.goal.lang), self.base, &self.now, &n, r.clone(), self.goal);
        self.steps.push(st);
        self.cur = n;
        self.now = r;
    }

    /// Takes `c` when the target is not met yet, `c` applies and it gains.
    fn try_change(&mut self, c: Change) {
        if self.done() || !applicable(c, &self.cur, &self.now) {
            return;
        }
        let n = apply(c, &self.cur, &self.now);
        if let Ok(r) = n.run()
            && gains(&self.now, &r)
        {
            self.take(c, n, r);
        }
    }
}

fn headline(before: &Serve, after: &Serve, steps: usize, goal: Goal, met: bool) -> String {
    use crate::units::digits;
    let (target, lang) = (goal.target, goal.lang);
    let what = |s: &Serve| {
        let name = gpu::find(&s.gpu).map_or_else(|_| s.gpu.clone(), |g| g.name);
        let (kv, n, len, gpus) = (
            digits(s.kv_tokens),
            concurrency(s),
            digits(s.context.unwrap_or(s.settings.max_model_len)),
            s.gpus(),
        );
        crate::text!(
            lang,
            "{kv} tokens of KV cache, {n:.1} concurrent {len}-token requests on {gpus}×{name}",
            "KV 缓存 {kv} 个 token，{gpus}×{name} 上可并发 {n:.1} 个 {len} token 的请求"
        )
    };
    if lang == Lang::ZhCn {
        let aim = target.map_or_else(|| "启动".to_owned(), |t| format!("承载 {t} 个并发请求"));
        return if steps == 0 && met {
            format!("服务器现在就能{aim}：{}", what(before))
        } else if met {
            format!("{steps} 步之后即可{aim}：{}", what(after))
        } else if steps > 0 {
            format!("没有任何已建模的改动能让它{aim}：{steps} 步之后为 {}", what(after))
        } else {
            format!("没有任何已建模的改动能让它{aim}")
        };
    }
    let goal = match target {
        Some(t) => format!("holds {t} concurrent requests"),
        None => "starts".into(),
    };
    if steps == 0 && met {
        format!("the server already {goal}: {}", what(before))
    } else if met {
        format!("{goal} after {steps} step(s): {}", what(after))
    } else if steps > 0 {
        format!(
            "no modelled change makes it {}: after {steps} step(s), {}",
            goal.replace("holds", "hold").replace("starts", "start"),
            what(after)
        )
    } else {
        format!("no modelled change makes it {}", goal.replace("holds", "hold").replace("starts", "start"))
    }
}

#[cfg(test)]
mod tests;
