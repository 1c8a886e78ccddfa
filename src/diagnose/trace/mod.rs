//! Memory-usage curves: reading `nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total
//! --format=csv` logs (or vramscope's own `t_s,gpu,used_bytes,total_bytes` CSV) and telling apart
//! a model too large for the card, a batch too large, a leak, and a healthy run.

use crate::i18n::Lang;
use crate::text;
use serde::Serialize;

/// One sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the first sample.
    pub t_s: f64,
    /// GPU index.
    pub gpu: u32,
    /// Used memory, bytes.
    pub used: u64,
    /// Total memory, bytes.
    pub total: u64,
}

/// Why a trace could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// A line that is neither a header nor a sample.
    #[error("line {line}: {msg}")]
    Line {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Too few samples to say anything.
    #[error("{0} samples of GPU {1}: at least 8 are needed")]
    TooShort(usize, u32),
    /// The GPU asked for is not in the trace.
    #[error("GPU {0} is not in the trace (it has GPU {1})")]
    NoSuchGpu(u32, String),
}

mod period;
mod read;
#[cfg(test)]
mod tests;

pub use read::{Log, parse, read_log, with_total};

/// The verdict on a curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Usage pinned near capacity from the start: the model (states) alone nearly fill the card.
    ModelTooLarge,
    /// Periodic peaks that reach capacity: the per-step activations (batch) are too large.
    BatchTooLarge,
    /// Usage keeps growing from iteration to iteration.
    Leak,
    /// None of the above.
    Healthy,
    /// Healthy until its process ended together with another GPU's that ran out of memory
    /// (the job was killed on every rank).
    StoppedWithJob,
    /// Nothing fails, but usage sits near the card from the first sample to the last: the job's
    /// memory may already be at the edge, or the caching allocator (or a server's memory
    /// fraction) holds the card and hides the steps' peaks.
    NearCapacity,
}

impl Verdict {
    /// Name for display.
    pub const fn label(self) -> &'static str {
        match self {
            Self::ModelTooLarge => "model too large for the card",
            Self::BatchTooLarge => "batch too large (the step's peaks reach the card)",
            Self::Leak => "memory leak",
            Self::Healthy => "healthy",
            Self::StoppedWithJob => "stopped with the job (another GPU ran out of memory)",
            Self::NearCapacity => "near capacity all along (at the edge, or the allocator holds the card)",
        }
    }

    /// Name for display in `lang` ([`Verdict::label`] in English).
    pub const fn label_in(self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.label(),
            Lang::ZhCn => match self {
                Self::ModelTooLarge => "模型对这张卡来说太大",
                Self::BatchTooLarge => "批次太大（每步的峰值触及显卡容量）",
                Self::Leak => "内存泄漏",
                Self::Healthy => "正常",
                Self::StoppedWithJob => "随作业一起停止（另一块 GPU 显存不足）",
                Self::NearCapacity => "始终接近显卡容量（处于边缘，或分配器占住了显卡）",
            },
        }
    }

    /// Does the verdict say the job fails (or will)?
    pub const fn fails(self) -> bool {
        !matches!(self, Self::Healthy | Self::StoppedWithJob | Self::NearCapacity)
    }

    /// Does it ask for a look without saying the job fails (near capacity all along)?
    pub const fn warns(self) -> bool {
        matches!(self, Self::NearCapacity)
    }
}

/// A diagnosed curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceReport {
    /// GPU examined.
    pub gpu: u32,
    /// Samples of it.
    pub samples: usize,
    /// Verdict.
    pub verdict: Verdict,
    /// Iterations (peaks) detected: 0 when the curve does not repeat (a steady run).
    pub iterations: usize,
    /// Seconds between iterations, read from the curve's own repetition (`None`: no iterations).
    pub period_s: Option<f64>,
    /// Growth of the per-window minimum, MiB per iteration (leaks), robust (Theil–Sen): the
    /// growth a second times the period (0 without iterations).
    pub growth_mib_per_iteration: f64,
    /// Growth, MiB per second.
    pub growth_mib_per_s: f64,
    /// Seconds until the card is full at that rate (leaks).
    pub seconds_to_oom: Option<f64>,
    /// Highest use as a fraction of capacity.
    pub peak_fraction: f64,
    /// Sample index ranges that show the evidence (to highlight on a plot).
    pub evidence: Vec<(usize, usize)>,
    /// What it means and what to do.
    pub advice: Vec<String>,
    /// When the GPU's process ended (usage fell to the driver's own and stayed there), seconds.
    pub ended_at_s: Option<f64>,
}

/// The lowest use, as a fraction of the card, of a curve that sits near it from the first sample
/// to the last (a curve that starts at 90 % reads as a model too large instead).
const NEAR_CAPACITY: f64 = 0.85;

/// What to do when the step's peaks reach the card.
fn batch_advice(lang: Lang) -> &'static str {
    lang.pick(
        "lower the micro-batch or sequence length (keep the global batch with gradient accumulation), enable gradient checkpointing, or use SDPA/flash attention — `vramscope estimate` shows what each saves",
        "减小微批次或序列长度（用梯度累积保持全局批次大小）、启用梯度检查点，或使用 SDPA/flash attention —— `vramscope estimate` 会列出每项能省多少",
    )
}

/// Median of a slice (sorted copy).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Theil–Sen slope of (x, y) points: the median of pairwise slopes (robust to spikes).
pub fn theil_sen(points: &[(f64, f64)]) -> f64 {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if (b.0 - a.0).abs() > 1e-12 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    median(&mut slopes)
}

/// Classifies every GPU of the trace, in the order they first appear (a GPU with too few samples
/// is left out; an error only when none has enough).
pub fn classify_all(samples: &[Sample]) -> Result<Vec<TraceReport>, TraceError> {
    classify_all_in(samples, Lang::En)
}

/// [`classify_all`] with the advice written in `lang`.
pub fn classify_all_in(samples: &[Sample], lang: Lang) -> Result<Vec<TraceReport>, TraceError> {
    let mut gpus: Vec<u32> = Vec::new();
    for x in samples {
        if !gpus.contains(&x.gpu) {
            gpus.push(x.gpu);
        }
    }
    let mut out = Vec::new();
    let mut first_err = None;
    for g in gpus {
        match classify_in(samples, Some(g), lang) {
            Ok(r) => out.push(r),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    // a GPU whose process ended when another ran out of memory was killed with the job
    let died: Vec<(u32, f64)> = out
        .iter()
        .filter(|r| r.verdict == Verdict::BatchTooLarge)
        .filter_map(|r| r.ended_at_s.map(|t| (r.gpu, t)))
        .collect();
    for r in out.iter_mut().filter(|r| r.verdict == Verdict::Healthy) {
        let Some(t) = r.ended_at_s else { continue };
        if let Some((g, at)) = died.iter().find(|(_, at)| (t - at).abs() <= 5.0) {
            r.verdict = Verdict::StoppedWithJob;
            r.advice.insert(
                0,
                text!(
                    lang,
                    "Its process ended at {t:.1} s, when GPU {g} ran out of memory ({at:.1} s): the job stopped on every rank.",
                    "其进程在 {t:.1} s 时结束，正是 GPU {g} 显存不足的时候（{at:.1} s）：作业在所有 rank 上都停止了。"
                ),
            );
        }
    }
    match (out.is_empty(), first_err) {
        (true, Some(e)) => Err(e),
        (true, None) => Err(TraceError::TooShort(0, 0)),
        _ => Ok(out),
    }
}

/// Classifies the curve of one GPU (the first one in the trace when `gpu` is `None`).
pub fn classify(samples: &[Sample], gpu: Option<u32>) -> Result<TraceReport, TraceError> {
    classify_in(samples, gpu, Lang::En)
}

/// [`classify`] with the advice written in `lang` (the verdict and the numbers are the same in
/// every language).
pub fn classify_in(samples: &[Sample], gpu: Option<u32>, lang: Lang) -> Result<TraceReport, TraceError> {
    let (gpu, s) = gpu_samples(samples, gpu)?;
    let c = Curve::read(&s);
    let frac = &c.frac;
    // when the process ended: usage above 30 % of the card, then under 10 % to the end
    let ended_at_s = frac
        .iter()
        .rposition(|f| *f >= 0.3)
        .filter(|&i| i + 2 < frac.len() && frac[i + 1..].iter().all(|f| *f < 0.1))
        .map(|i| s[i + 1].t_s);
    let Judgement { verdict, evidence, seconds_to_oom, advice } = c.verdict(lang);
    let Curve { iterations, period_s, growth_mib_per_iteration, growth_mib_per_s, peak_fraction, .. } = c;
    Ok(TraceReport {
        period_s,
        ended_at_s,
        gpu,
        samples: s.len(),
        verdict,
        iterations,
        growth_mib_per_iteration,
        growth_mib_per_s,
        seconds_to_oom,
        peak_fraction,
        evidence,
        advice,
    })
}

/// The samples of `gpu` (the trace's first GPU when `None`), at least 8 of them.
fn gpu_samples(samples: &[Sample], gpu: Option<u32>) -> Result<(u32, Vec<&Sample>), TraceError> {
    let gpu = gpu.or_else(|| samples.first().map(|s| s.gpu)).unwrap_or(0);
    let s: Vec<&Sample> = samples.iter().filter(|x| x.gpu == gpu).collect();
    if s.is_empty() && !samples.is_empty() {
        let mut gpus: Vec<u32> = samples.iter().map(|x| x.gpu).collect();
        gpus.sort_unstable();
        gpus.dedup();
        return Err(TraceError::NoSuchGpu(
            gpu,
            gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        ));
    }
    if s.len() < 8 {
        return Err(TraceError::TooShort(s.len(), gpu));
    }
    Ok((gpu, s))
}

/// One GPU's curve as fractions of the card, and the numbers the verdict reads from it.
struct Curve {
    /// Samples.
    samples: usize,
    /// The card's memory, bytes (the largest total reported).
    cap: f64,
    /// Each sample's used memory, as a fraction of the card.
    frac: Vec<f64>,
    peak_fraction: f64,
    /// Iterations: the curve's own repeating peaks (`period`), and their period in seconds.
    iterations: usize,
    period_s: Option<f64>,
    /// The iterations' (start, peak) samples that reach 95 % of the card.
    near_cap_peaks: Vec<(usize, usize)>,
    /// Windows of the baseline, and each one's (time, minimum used).
    windows: usize,
    mins: Vec<(f64, f64)>,
    /// Windows whose minimum rises by 0.05 % of the card.
    rises: usize,
    /// The baseline's growth (robust slope of the minima).
    slope_b_per_s: f64,
    growth_mib_per_s: f64,
    growth_mib_per_iteration: f64,
    /// The baseline's growth over the trace, as a fraction of the card.
    grew: f64,
    /// Samples in the first tenth, and their lowest fraction.
    early_len: usize,
    early_min: f64,
    /// The highest sample (index, fraction) and whether the process died after it.
    top: (usize, f64),
    died: bool,
    /// The first sample at half the card; whether the curve sits at 97 % from there.
    settled: usize,
    pinned: bool,
    /// The last sample's used memory, bytes.
    last: f64,
    /// The lowest sample, as a fraction of the card.
    lowest: f64,
}

impl Curve {
    fn read(s: &[&Sample]) -> Self {
        let cap = s.iter().map(|x| x.total).max().unwrap_or(1).max(1) as f64;
        let frac: Vec<f64> = s.iter().map(|x| x.used as f64 / cap).collect();
        let peak_fraction = frac.iter().copied().fold(0.0, f64::max);
        // baseline growth: per-window minima over time, robust slope
        let windows = 12.min(s.len() / 2).max(2);
        let per = s.len() / windows;
        let mins: Vec<(f64, f64)> = (0..windows)
            .map(|w| {
                let chunk = &s[w * per..((w + 1) * per).min(s.len())];
                chunk.iter().min_by_key(|x| x.used).map_or((0.0, 0.0), |x| (x.t_s, x.used as f64))
            })
            .collect();
        let slope_b_per_s = theil_sen(&mins);
        let duration = s.last().map_or(0.0, |x| x.t_s).max(1e-9);
        let growth_mib_per_s = slope_b_per_s / 1048576.0;
        // iterations: the curve's own period, with the baseline's growth taken out (never the card)
        let (t, used): (Vec<f64>, Vec<f64>) = s.iter().map(|x| (x.t_s, x.used as f64)).unzip();
        let steps = period::steps(&t, &used, slope_b_per_s);
        let peaks = steps.peaks;
        let iterations = peaks.len();
        let mut gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).filter(|d| *d > 0.0).collect();
        let dt = median(&mut gaps);
        // the period in seconds: the peaks' mean spacing on the trace's clock (the
        // autocorrelation's lag is whole samples, the period need not be)
        let period_s = steps.period.map(|p| p as f64 * dt).filter(|p| *p > 0.0).map(|p| {
            match (peaks.first(), peaks.last()) {
                (Some(a), Some(b)) if b.1 > a.1 => (t[b.1] - t[a.1]) / (iterations - 1) as f64,
                _ => p,
            }
        });
        let growth_mib_per_iteration = period_s.map_or(0.0, |p| growth_mib_per_s * p);
        let grew = slope_b_per_s * duration / cap; // fraction of the card over the trace
        let early = &frac[..(frac.len() / 10).max(1)];
        let early_min = early.iter().copied().fold(f64::INFINITY, f64::min);
        let near_cap_peaks: Vec<(usize, usize)> =
            peaks.iter().copied().filter(|(_, p)| frac[*p] >= 0.95).collect();
        // the process disappeared after reaching the card: the last samples are back near zero
        // (only the driver's own use) and stay there — the job died, most likely of an OOM
        let top =
            frac.iter().copied().enumerate().fold((0, 0.0), |m, (i, f)| if f >= m.1 { (i, f) } else { m });
        let tail_from = top.0 + 1;
        let died = top.1 >= 0.95
            && tail_from < frac.len()
            && frac[tail_from..].iter().all(|f| *f < 0.1)
            && frac.len() - tail_from >= 2;
        // a flat curve pinned at the card (one "iteration" or none): once the first rise is over,
        // nearly every sample sits at 97 % or more
        let settled = frac.iter().position(|f| *f >= 0.5).unwrap_or(frac.len());
        let pinned = frac.len() - settled >= 8 && {
            let after = &frac[settled..];
            after.iter().filter(|f| **f >= 0.97).count() * 10 >= after.len() * 9
        };
        let last = s.last().map_or(0.0, |x| x.used as f64);
        // a leak grows window after window; one step up (a plateau the caching allocator settles on)
        // is not one: at least half the windows' minima must rise, each by 0.05 % of the card
        let rises = mins.windows(2).filter(|w| w[1].1 > w[0].1 + cap * 5e-4).count();
        let early_len = early.len();
        let lowest = frac.iter().copied().fold(f64::INFINITY, f64::min);
        Self {
            samples: s.len(),
            cap,
            frac,
            peak_fraction,
            iterations,
            period_s,
            near_cap_peaks,
            windows,
            mins,
            rises,
            slope_b_per_s,
            growth_mib_per_s,
            growth_mib_per_iteration,
            grew,
            early_len,
            early_min,
            top,
            died,
            settled,
            pinned,
            last,
            lowest,
        }
    }

    /// What the curve's shape says, the advice in `lang`.
    fn verdict(&self, lang: Lang) -> Judgement {
        let Curve {
            samples,
            cap,
            peak_fraction,
            iterations,
            windows,
            rises,
            slope_b_per_s,
            growth_mib_per_s,
            growth_mib_per_iteration,
            grew,
            early_len,
            early_min,
            top,
            died,
            settled,
            pinned,
            last,
            ..
        } = *self;
        let (frac, mins) = (&self.frac, &self.mins);
        let mut advice = Vec::new();
        let (verdict, evidence, seconds_to_oom) = if grew > 0.02
            && mins.windows(2).filter(|w| w[1].1 >= w[0].1).count() * 3 >= (windows - 1) * 2
            && rises * 2 >= windows - 1
        {
            let left = (cap - last).max(0.0);
            let tto = if slope_b_per_s > 0.0 { Some(left / slope_b_per_s) } else { None };
            advice.push(match self.period_s {
                Some(p) => text!(
                    lang,
                    "Memory grows by about {growth_mib_per_iteration:.1} MiB per iteration (one every {p:.1} s; {growth_mib_per_s:.2} MiB/s) and does not come back: something keeps tensors alive across steps.",
                    "显存每次迭代增长约 {growth_mib_per_iteration:.1} MiB（每 {p:.1} s 一次迭代；{growth_mib_per_s:.2} MiB/s），且不再回落：有东西让张量在各步之间一直存活。"
                ),
                None => text!(
                    lang,
                    "Memory grows by about {growth_mib_per_s:.2} MiB/s (the curve shows no repeating iterations) and does not come back: something keeps tensors alive.",
                    "显存以约 {growth_mib_per_s:.2} MiB/s 的速度增长（曲线中看不出重复的迭代），且不再回落：有东西让张量一直存活。"
                ),
            });
            advice.push(lang.pick(
            "usual causes: accumulating `loss` (not `loss.item()`) for logging, keeping outputs or hidden states in a list, a growing cache (KV cache, `torch.compile` recompiles, dataloader pinning); `torch.cuda.memory._record_memory_history()` then `_dump_snapshot()` shows which allocations stay",
            "常见原因：为记录日志累加 `loss`（而不是 `loss.item()`）、把输出或隐藏状态存进列表、不断增长的缓存（KV 缓存、`torch.compile` 反复重新编译、dataloader 的 pinning）；先调用 `torch.cuda.memory._record_memory_history()`，再调用 `_dump_snapshot()`，即可看出哪些分配一直没有释放",
        ).into());
            (Verdict::Leak, vec![(0, samples - 1)], tto)
        } else if died {
            advice.push(text!(
            lang,
            "Usage reached {:.0} % of the card at sample {} and then dropped to nothing: the process ended there, the way a step that runs out of memory ends it.",
            "占用在第 {1} 个样本处达到整卡的 {0:.0} %，随后降到零：进程在那里结束了，正如某一步显存不足时那样。",
            100.0 * top.1,
            top.0
        ));
            advice.push(batch_advice(lang).into());
            (Verdict::BatchTooLarge, vec![(top.0.saturating_sub(1), frac.len() - 1)], None)
        } else if early_min >= 0.90 || pinned {
            // the level it sits at: the median once the load ramp is over
            let mut after: Vec<f64> = frac[settled..].to_vec();
            let level = if after.is_empty() { early_min } else { median(&mut after) };
            advice.push(text!(
            lang,
            "Usage is pinned at about {:.0} % of the card from the start, with no room for a step to breathe: the model states (weights, gradients, optimizer) nearly fill it before any batch runs.",
            "占用从一开始就停在整卡的约 {:.0} %，每一步都没有回旋余地：还没跑任何批次，模型状态（权重、梯度、优化器状态）就几乎占满了显卡。",
            100.0 * level
        ));
            advice.push(lang.pick(
            "shrink the states: bf16 or 8-bit optimizer, LoRA/QLoRA, ZeRO-2/3 or FSDP across GPUs, or a larger card — `vramscope plan --search` lists layouts that fit",
            "缩减这些状态：bf16 或 8-bit 优化器、LoRA/QLoRA、跨 GPU 的 ZeRO-2/3 或 FSDP，或换一张更大的卡 —— `vramscope plan --search` 会列出放得下的布局",
        ).into());
            (Verdict::ModelTooLarge, vec![(settled.min(early_len - 1), samples - 1)], None)
        } else if self.near_cap_peaks.len() >= 2 {
            advice.push(text!(
            lang,
            "{} of {iterations} iterations peak at 95 % of the card or more and fall back between steps: activations of each step are what fills it.",
            "{iterations} 次迭代中有 {} 次的峰值达到整卡的 95 % 或以上，并在步与步之间回落：占满显卡的是每一步的激活值。",
            self.near_cap_peaks.len()
        ));
            advice.push(batch_advice(lang).into());
            (Verdict::BatchTooLarge, self.near_cap_peaks.clone(), None)
        } else if self.lowest >= NEAR_CAPACITY {
            let (lo, hi) = ((100.0 * self.lowest).round(), (100.0 * peak_fraction).round());
            let level = if lo == hi {
                text!(lang, "at about {lo:.0} %", "约 {lo:.0} %")
            } else {
                text!(lang, "between {lo:.0} % and {hi:.0} %", "{lo:.0} % 到 {hi:.0} % 之间")
            };
            advice.push(text!(
                lang,
                "Usage stays {level} of the card from the first sample to the last: either the job's memory is already at the edge (a longer sequence or a larger batch will not fit), or the caching allocator (or a server's gpu_memory_utilization) holds the card and the curve cannot show the steps' peaks.",
                "占用从第一个样本到最后一直处于整卡的{level}：要么作业的显存已处于边缘（更长的序列或更大的批次放不下），要么缓存分配器（或服务的 gpu_memory_utilization）占住了显卡，曲线无法显示每一步的峰值。"
            ));
            advice.push(lang.pick(
                "torch.cuda.max_memory_allocated() against torch.cuda.mem_get_info() in the job (or a memory snapshot) tells which; `vramscope estimate` gives the step's peak against the card",
                "在作业中对比 torch.cuda.max_memory_allocated() 与 torch.cuda.mem_get_info()（或导出显存快照）即可分辨；`vramscope estimate` 给出每步峰值与显卡容量的对比",
            ).into());
            (Verdict::NearCapacity, vec![(0, samples - 1)], None)
        } else {
            advice.push(if iterations == 0 {
                text!(
                    lang,
                    "Peak {:.0} % of the card, steady: no repeating iterations and no growth.",
                    "峰值为整卡的 {:.0} %，保持平稳：没有重复的迭代，也没有增长。",
                    100.0 * peak_fraction
                )
            } else {
                text!(
                    lang,
                    "Peak {:.0} % of the card, no growth across iterations.",
                    "峰值为整卡的 {:.0} %，各次迭代之间没有增长。",
                    100.0 * peak_fraction
                )
            });
            (Verdict::Healthy, Vec::new(), None)
        };
        Judgement { verdict, evidence, seconds_to_oom, advice }
    }
}

/// What a curve's shape says: the verdict, its evidence (sample ranges), the seconds left before
/// an out-of-memory error (a leak) and the advice.
struct Judgement {
    verdict: Verdict,
    evidence: Vec<(usize, usize)>,
    seconds_to_oom: Option<f64>,
    advice: Vec<String>,
}
