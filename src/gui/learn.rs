//! The Learn view: eight lessons that walk a room through GPU memory with the live scenario, one
//! step at a time. Each lesson sets a scenario, shows a tab, highlights the segments it is about
//! and says its rule with this scenario's numbers substituted; leaving restores the user's own
//! scenario and tab.

use super::derived::Computed;
use super::state::{ModelChoice, Settings, Tab};
use crate::estimate::{Checkpointing, Mode, Optimizer, Phase};
use crate::explain::Component;
use crate::fit::Knob;
use crate::i18n::Lang;
use crate::text;
use crate::units::{GIB, Precision};
use serde::{Deserialize, Serialize};

/// A lesson.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lesson {
    /// Parameters × bytes per parameter.
    Parameters,
    /// Gradients, Adam's moments and the foreach step's temporary.
    States,
    /// Activations grow with batch and sequence.
    Activations,
    /// What mixed precision halves and what it keeps in fp32.
    MixedPrecision,
    /// Gradient checkpointing: the rule of thumb against the real segment curve.
    Checkpointing,
    /// Data / tensor / pipeline parallelism and ZeRO.
    Parallelism,
    /// Reading an OOM message and a memory curve.
    ReadingOom,
    /// The roadmap.
    Roadmap,
}

/// Where the room is: the lesson shown, and the user's own scenario and tab to go back to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LearnState {
    /// Index into [`Lesson::ALL`].
    pub index: usize,
    /// The user's scenario before the first lesson.
    pub saved: Box<Settings>,
    /// The user's tab before the first lesson.
    pub saved_tab: Tab,
}

impl LearnState {
    /// The lesson shown (a saved index past the last lesson shows the last).
    pub fn lesson(&self) -> Lesson {
        Lesson::ALL[self.index.min(Lesson::ALL.len() - 1)]
    }
}

/// A step of the Learn view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LearnStep {
    /// Start at the first lesson (keeping the user's scenario).
    Start,
    /// Go to lesson N (an index into [`Lesson::ALL`]), starting the lessons if needed (keeping
    /// the user's scenario as `Start` does).
    Go(usize),
    /// The next lesson.
    Next,
    /// The lesson before.
    Back,
    /// Leave: the user's scenario and tab come back.
    Leave,
}

fn preset(name: &str) -> ModelChoice {
    ModelChoice::Preset(name.to_owned())
}

impl Lesson {
    /// The lessons in order.
    pub const ALL: [Self; 8] = [
        Self::Parameters,
        Self::States,
        Self::Activations,
        Self::MixedPrecision,
        Self::Checkpointing,
        Self::Parallelism,
        Self::ReadingOom,
        Self::Roadmap,
    ];

    /// The lesson's title.
    pub fn title(self, l: Lang) -> &'static str {
        match self {
            Self::Parameters => l.pick("Parameters × bytes per parameter", "参数量 × 每个参数的字节数"),
            Self::States => l.pick("Gradients and Adam's two moments", "梯度与 Adam 的两个矩估计"),
            Self::Activations => {
                l.pick("Activations grow with batch and sequence", "激活值随批次和序列长度增长")
            }
            Self::MixedPrecision => {
                l.pick("Mixed precision: what it halves, what it keeps", "混合精度：减半了什么，保留了什么")
            }
            Self::Checkpointing => l.pick("Gradient checkpointing", "梯度检查点"),
            Self::Parallelism => {
                l.pick("Data, tensor and pipeline parallelism, ZeRO", "数据并行、张量并行、流水线并行与 ZeRO")
            }
            Self::ReadingOom => {
                l.pick("Reading an OOM message and a memory curve", "读懂显存不足（OOM）报错与显存曲线")
            }
            Self::Roadmap => l.pick("The roadmap: short, mid and long term", "路线图：短期、中期、长期"),
        }
    }

    /// The scenario the lesson shows (from the built-in default, never the user's).
    pub fn settings(self) -> Settings {
        let mut s = Settings::default();
        let small = |s: &mut Settings| {
            s.model = preset("llama-3.2-1b");
            s.precision = Precision::Bf16;
            s.checkpointing = Checkpointing::None;
            s.batch = 4;
            s.seq = 1024;
        };
        match self {
            Self::Parameters | Self::States => {
                // the textbook example: BERT-base in fp32 with Adam
                s.model = preset("bert-base-uncased");
                s.precision = Precision::Fp32;
                s.checkpointing = Checkpointing::None;
                // a batch small enough that the peak is the optimizer step: every state is on the bar
                s.batch = 4;
                s.seq = 128;
                s.gpu_id = "t4".into();
            }
            Self::Activations => small(&mut s),
            Self::MixedPrecision => {
                small(&mut s);
                s.precision = Precision::Bf16Amp;
                // the peak at the optimizer step, where the fp32 states are all alive
                s.batch = 1;
                s.seq = 512;
            }
            Self::Checkpointing => {
                small(&mut s);
                s.batch = 8;
                s.seq = 2048;
                s.checkpointing = Checkpointing::Segments(4);
            }
            Self::Parallelism => {
                s.gpu_id = "a100-40gb".into();
                s.dp = 8;
                s.zero = 3;
            }
            Self::ReadingOom | Self::Roadmap => {
                s.precision = Precision::Fp32;
                s.checkpointing = Checkpointing::None;
                s.batch = 4;
                s.gpu_id = "rtx-4090".into();
            }
        }
        s.mode = Mode::Train;
        s.optimizer = Optimizer::Adamw;
        s
    }

    /// The tab the lesson shows.
    pub const fn tab(self) -> Tab {
        match self {
            Self::Parameters | Self::Activations | Self::MixedPrecision => Tab::Batch,
            Self::States => Tab::Timeline,
            Self::Checkpointing => Tab::Segments,
            Self::Parallelism => Tab::Gpus,
            Self::ReadingOom => Tab::Live,
            Self::Roadmap => Tab::Options,
        }
    }

    /// The segments of the bar the lesson is about.
    pub const fn focus(self) -> &'static [Component] {
        use Component::*;
        match self {
            Self::Parameters => &[Parameters],
            Self::States => &[Gradients, OptimizerStates, Temporaries],
            Self::Activations | Self::Checkpointing => &[Activations],
            Self::MixedPrecision => &[Parameters, Gradients, OptimizerStates, Activations],
            Self::Parallelism => &[Parameters, Gradients, OptimizerStates],
            Self::ReadingOom | Self::Roadmap => &[],
        }
    }

    /// The lesson's text with the numbers of `c` (the scenario shown, which the room may have
    /// changed since) substituted; `roadmap` is the Options tab's roadmap once computed.
    pub fn body(self, c: &Computed, roadmap: Option<&crate::roadmap::Roadmap>, l: Lang) -> String {
        match self {
            Self::Parameters => parameters_text(c, l),
            Self::States => states_text(c, l),
            Self::Activations => activations_text(c, l),
            Self::MixedPrecision => mixed_precision_text(c, l),
            Self::Checkpointing => checkpointing_text(c, l),
            Self::Parallelism => parallelism_text(c, l),
            Self::ReadingOom => reading_oom_text(c, l),
            Self::Roadmap => roadmap_text(roadmap, l),
        }
    }
}

/// Lesson 1: the weights, parameters × bytes per parameter.
fn parameters_text(c: &Computed, l: Lang) -> String {
    let e = &c.estimate;
    let sc = &c.scenario;
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let gb = |b: u64| format!("{:.2} GB", b as f64 / 1e9);
    let n = crate::explain::count_in(e.rank_params, l);
    let wb = sc.precision.weight_dtype().bytes(8) as f64 / 8.0;
    let dtype = sc.precision.weight_dtype().torch_name();
    let (p, pg, pgb) = (g(e.parameters), gb(e.parameters), g(e.parameters));
    text!(
        l,
        "Every weight is stored in the GPU's memory: {n} parameters × {wb} bytes ({dtype}) = {pg} ({pgb}). \
         The textbook example is this BERT-base: 110 × 10⁶ × 4 bytes ≈ 0.44 GB (0.41 GiB) in fp32. The weights \
         do not change with the batch or the sequence: they are the curve's floor. In bf16 (2 bytes a \
         parameter) they would be half of today's {p}.",
        "每个权重都存放在显存中：{n}个参数 × {wb} 字节（{dtype}）= {pg}（{pgb}）。教材中的经典例子就是这个 \
         BERT-base：1.1 亿 × 4 字节 ≈ 0.44 GB（0.41 GiB，fp32）。权重与批次和序列长度无关，是曲线的基线。\
         换成 bf16（每个参数 2 字节），权重只有当前 {p} 的一半。"
    )
}

/// Lesson 2: gradients, Adam's moments and the foreach step's temporary.
fn states_text(c: &Computed, l: Lang) -> String {
    let e = &c.estimate;
    let sc = &c.scenario;
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let n = crate::explain::count_in(e.rank_params, l);
    let wb = sc.precision.weight_dtype().bytes(8) as f64 / 8.0;
    let temp = c
        .timeline
        .as_ref()
        .and_then(|t| {
            t.events.iter().filter(|ev| ev.phase == Phase::OptimizerStep).map(|ev| ev.alive.temporaries).max()
        })
        .unwrap_or(0);
    let (gr, op, tp) = (g(e.gradients), g(e.optimizer_states), g(temp));
    let sum = g(e.parameters + e.gradients + e.optimizer_states + temp);
    text!(
        l,
        "Training adds one gradient per trainable parameter ({gr}: {n} × {wb} bytes) and Adam's two moments, \
         exp_avg and exp_avg_sq: 2× the parameters ({op}). PyTorch's default foreach AdamW step also \
         makes a parameter-sized temporary for sqrt(exp_avg_sq) ({tp} at the step, see the timeline): \
         weights + gradients + moments + temporary = {sum}. The fused AdamW (adamw-fused) avoids the temporary.",
        "训练时每个可训练参数还要一个梯度（{gr}：{n} × {wb} 字节），以及 Adam 的两个矩估计 exp_avg 和 \
         exp_avg_sq：参数的 2 倍（{op}）。PyTorch 默认的 foreach AdamW 更新还会为 sqrt(exp_avg_sq) 分配一个与参数\
         同样大小的临时张量（优化器更新步时 {tp}，见时间线）：权重 + 梯度 + 矩估计 + 临时张量 = {sum}。融合版 \
         AdamW（adamw-fused）没有这个临时张量。"
    )
}

/// Lesson 3: activations grow with the batch and the sequence.
fn activations_text(c: &Computed, l: Lang) -> String {
    let e = &c.estimate;
    let sc = &c.scenario;
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let tokens = (sc.batch * sc.seq).max(1);
    let per_token =
        format!("{} KiB", crate::units::grouped(e.activations as f64 / tokens as f64 / 1024.0, 1));
    let acts = g(e.activations);
    let (b, s) = (sc.batch, sc.seq);
    // the same scenario at twice the micro-batch, estimated (not looked up in the curve's samples)
    let doubled = crate::estimate::Scenario { batch: 2 * b, ..sc.clone() };
    let twice = crate::estimate::estimate(&doubled).map_or_else(|_| "—".to_owned(), |d| g(d.activations));
    let mb = c.max_batch.map_or_else(|| "—".to_owned(), |m| m.to_string());
    text!(
        l,
        "The forward pass keeps what backward needs, for every token: at b={b} × s={s} that is {acts} \
         ({per_token} a token). Doubling the micro-batch doubles it (b={}: {twice}); a longer sequence \
         too, and eager attention's scores grow with s². The curve below: the weights and states are its \
         floor, the activations its slope. The largest micro-batch that fits: {mb}.",
        "前向传播为反向传播保留每个 token 所需的张量：b={b} × s={s} 时为 {acts}（每个 token {per_token}）。\
         微批次加倍，激活值也加倍（b={}：{twice}）；序列变长同理，eager 注意力的分数矩阵还按 s² 增长。\
         下方曲线：权重和状态是底部，激活值是斜率。可容纳的最大微批次：{mb}。",
        2 * b
    )
}

/// Lesson 4: what mixed precision halves and what stays fp32.
fn mixed_precision_text(c: &Computed, l: Lang) -> String {
    let e = &c.estimate;
    let sc = &c.scenario;
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let n = crate::explain::count_in(e.rank_params, l);
    let (p, gr, op, acts) = (g(e.parameters), g(e.gradients), g(e.optimizer_states), g(e.activations));
    text!(
        l,
        "Mixed precision ({}) runs the matmuls in half precision: the activations are mostly bf16 \
         copies ({acts}). It does not halve the states: the master weights stay fp32 ({p}, 4 bytes × {n}), \
         the gradients fp32 ({gr}), Adam's moments fp32 ({op}) — 16 bytes a parameter, plus the half copy \
         autocast keeps of each weight it casts. Switch the precision to bf16 (pure) to halve those too.",
        "混合精度（{}）用半精度做矩阵乘法：激活值大多是 bf16 副本（{acts}）。它不会把状态减半：主权重仍是 \
         fp32（{p}，4 字节 × {n}），梯度是 fp32（{gr}），Adam 的矩估计也是 fp32（{op}）——每个参数 16 字节，另加 \
         autocast 为每个转换的权重保留的半精度副本。把精度切换为纯 bf16，这些也会减半。",
        sc.precision
    )
}

/// Lesson 5: the checkpointing rule of thumb against the real segment curve.
fn checkpointing_text(c: &Computed, l: Lang) -> String {
    let e = &c.estimate;
    let sc = &c.scenario;
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let curve = c.curve(Knob::Segments);
    let segs = match sc.checkpointing {
        Checkpointing::Segments(k) => k,
        _ => 0,
    };
    let rule = if segs > 0 { 100.0 * (1.0 - 1.0 / segs as f64) } else { 0.0 };
    // the curve's totals (what the headline and the bar show), not the allocated peak
    let here = curve.iter().find(|p| p.x == segs).map_or_else(|| g(e.total), |p| g(p.total));
    let best = curve.iter().min_by_key(|p| p.total);
    let (bx, bp) = best.map_or((0, "—".to_owned()), |p| (p.x, g(p.total)));
    let layers = e.stage.blocks;
    let first = curve.iter().map(|p| p.x).min().unwrap_or(0);
    let last = curve.iter().map(|p| p.x).max().unwrap_or(0);
    // a U when the lowest point is inside the range; else it only falls (or rises)
    let shape = if bx > first && bx < last {
        l.pick(
            "The real curve below is a U: few segments recompute a large segment at once, many keep \
             many inputs.",
            "下方的真实曲线呈 U 形：段数太少，一次要重算很大的一段；段数太多，要保留很多段的输入。",
        )
    } else if bx == last {
        l.pick(
            "Here the real curve below falls all the way to one segment a block: recomputing a large \
             segment at once costs more than keeping every block's input.",
            "这里下方的真实曲线一直下降到每块一段：一次重算很大的一段，比保留每个块的输入更占显存。",
        )
    } else {
        l.pick(
            "Here the real curve below rises with more segments: the inputs they keep cost more than \
             the recompute saves.",
            "这里下方的真实曲线随段数增加而上升：多保留的输入比重算省下的更多。",
        )
    };
    text!(
        l,
        "Checkpointing keeps only each segment's input and recomputes the rest during backward. The \
         rule of thumb says {segs} segments save 1 − 1/{segs} = {rule:.0} % of the activations. {shape} \
         Here {segs} segments need {here} in all; the least is {bx} segments ({bp}) of {layers} blocks.",
        "梯度检查点只保留每段的输入，其余在反向传播时重新计算。经验法则：分 {segs} 段可节省 1 − 1/{segs} = \
         {rule:.0} % 的激活值。{shape}当前 {segs} 段共需 {here}；最少的是 {bx} 段（{bp}），共 {layers} 个块。"
    )
}

/// Lesson 6: data / tensor / pipeline parallelism and ZeRO.
fn parallelism_text(c: &Computed, l: Lang) -> String {
    let e = &c.estimate;
    let sc = &c.scenario;
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let q = &sc.parallel;
    let nn = q.dp.max(1);
    let rule = crate::plan::rule_of_thumb_speedup(nn);
    let speed = crate::plan::SpeedModel::default();
    let comm = crate::plan::comm_aware_speedup(sc, &c.gpu, nn, sc.batch * nn, &speed)
        .map_or_else(|| "—".to_owned(), |x| format!("{x:.2}×"));
    // what the bar shows: alive at the peak (ZeRO-3 gathers a layer's weights to compute it)
    let (p, gr, op) = (
        g(Component::Parameters.at_peak(e)),
        g(Component::Gradients.at_peak(e)),
        g(Component::OptimizerStates.at_peak(e)),
    );
    let shard = g(e.parameters);
    let z = q.zero;
    text!(
        l,
        "Data parallelism copies the model to every GPU. ZeRO-1 divides the optimizer states over the \
         GPUs, ZeRO-2 the gradients too, ZeRO-3 (FSDP) the weights too: here {nn} GPUs with ZeRO-{z} \
         hold {p} + {gr} + {op} each at the peak (a {shard} shard of the weights, plus the layer being \
         gathered). Tensor parallelism divides each layer's weights and most activations; pipeline \
         parallelism divides the blocks. Speed-up on {nn} GPUs: the rule of thumb N / (1 + 0.5 (N − 1)) \
         says {rule:.2}×; the step-time model of this model on this card says {comm}, counting only the \
         communication that does not overlap the compute.",
        "数据并行在每个 GPU 上复制一份模型。ZeRO-1 把优化器状态分到各 GPU，ZeRO-2 再分梯度，ZeRO-3（FSDP）\
         再分权重：这里 {nn} 个 GPU、ZeRO-{z}，峰值时每个 GPU 保存 {p} + {gr} + {op}（权重分片 {shard}，\
         外加正在聚合的那一层）。张量并行切分每层的权重和大部分激活值；流水线并行切分块。{nn} 个 GPU 的\
         加速比：经验法则 N / (1 + 0.5 (N − 1)) 给出 {rule:.2}×；按该模型在此显卡上的步时模型为 {comm}，\
         只计入不能与计算重叠的通信。"
    )
}

/// Lesson 7: reading an OOM message and a memory curve.
fn reading_oom_text(c: &Computed, l: Lang) -> String {
    let e = &c.estimate;
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let states = e.parameters + e.gradients + e.optimizer_states;
    let cap = c.capacity();
    let (total, capg, st) = (g(e.total), g(cap), g(states));
    let finding = if states > cap {
        l.pick(
            "Here the states alone do not fit: the model is too big for the card — a smaller batch will not help.",
            "这里仅状态就放不下：模型对这张卡来说太大——减小批次无济于事。",
        )
    } else {
        l.pick(
            "Here the states fit: what overflows is the activations — the batch is too big.",
            "这里状态放得下：溢出的是激活值——批次太大。",
        )
    };
    text!(
        l,
        "This job needs {total} on a {capg} card. An OOM message says what it tried to allocate and what \
         PyTorch already held. When weights + gradients + optimizer states ({st}) exceed the card, the \
         model is too big: shard it (ZeRO/FSDP) or train adapters (LoRA). When they fit and the failed \
         request is activation-sized, the batch is too big: lower it or checkpoint. When the memory curve \
         climbs step after step, it is a leak. {finding} Paste a message into this tab's \
         “Explain an out-of-memory message” box.",
        "这个作业需要 {total}，而显卡只有 {capg}。OOM 报错会写出它试图分配多少、PyTorch 已经占用多少。若权重 + \
         梯度 + 优化器状态（{st}）超过显卡容量，就是模型太大：要切分（ZeRO/FSDP）或只训练适配器（LoRA）。若它们\
         放得下、而失败的请求与激活值同量级，就是批次太大：减小批次或使用梯度检查点。若显存曲线逐步上升，\
         就是内存泄漏。{finding}请把报错粘贴到本页的“解读显存不足（OOM）报错”输入框中。"
    )
}

/// Lesson 8: the roadmap, horizon by horizon.
fn roadmap_text(roadmap: Option<&crate::roadmap::Roadmap>, l: Lang) -> String {
    let g = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let Some(r) = roadmap else {
        return l.pick("The roadmap is being computed…", "正在计算路线图…").to_owned();
    };
    // each horizon's steps: the step's name (its title up to the colon) and the total
    // after it
    use crate::roadmap::{Horizon, StepKind};
    let horizon = |h: Horizon, name: &str| {
        let steps: Vec<String> = r
            .steps
            .iter()
            .filter(|s| s.kind != StepKind::NotMemory && s.horizon == h)
            .map(|s| {
                let short = s.title.split([':', '：']).next().unwrap_or(&s.title).trim();
                let total = s.total_after.map_or_else(|| "—".into(), g);
                match l {
                    Lang::ZhCn => format!("{short}（{total}）"),
                    _ => format!("{short} ({total})"),
                }
            })
            .collect();
        (!steps.is_empty()).then(|| format!("{name}{}{}", l.pick(": ", "："), steps.join(l.pick(", ", "，"))))
    };
    let path: Vec<String> = [
        horizon(Horizon::Short, l.pick("short term", "短期")),
        horizon(Horizon::Mid, l.pick("mid term", "中期")),
        horizon(Horizon::Long, l.pick("long term", "长期")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let before = g(r.total_before);
    // a sentence: its first letter a capital ("Short term: …; mid term: …")
    let path = path.join(l.pick("; ", "；"));
    let path =
        path.chars().take(1).flat_map(char::to_uppercase).chain(path.chars().skip(1)).collect::<String>();
    let head = &r.headline;
    text!(
        l,
        "Each change on top of the ones before, measured, from {before}. {path}. {head}. The table \
         below has each step's flags.",
        "每一步都叠加在前面的改动之上并重新计算，起点 {before}。{path}。{head}。下表列出每一步的参数。"
    )
}

/// Applies a Learn step to the view and the settings; returns the settings to show, if they
/// change (`None`: nothing to do, e.g. Next on the last lesson).
pub fn step(
    learn: &mut Option<LearnState>,
    settings: &Settings,
    tab: &mut Tab,
    s: LearnStep,
) -> Option<Settings> {
    let go = |learn: &mut Option<LearnState>, tab: &mut Tab, i: usize| {
        let lesson = Lesson::ALL[i];
        if let Some(st) = learn.as_mut() {
            st.index = i;
        }
        *tab = lesson.tab();
        Some(lesson.settings())
    };
    match (s, learn.as_ref().map(|st| st.index)) {
        (LearnStep::Start, None) => {
            *learn = Some(LearnState { index: 0, saved: Box::new(settings.clone()), saved_tab: *tab });
            go(learn, tab, 0)
        }
        (LearnStep::Start, Some(i)) => go(learn, tab, i),
        (LearnStep::Go(i), None) if i < Lesson::ALL.len() => {
            *learn = Some(LearnState { index: i, saved: Box::new(settings.clone()), saved_tab: *tab });
            go(learn, tab, i)
        }
        (LearnStep::Go(i), Some(_)) if i < Lesson::ALL.len() => go(learn, tab, i),
        (LearnStep::Next, Some(i)) if i + 1 < Lesson::ALL.len() => go(learn, tab, i + 1),
        (LearnStep::Back, Some(i)) if i > 0 => go(learn, tab, i - 1),
        (LearnStep::Leave, Some(_)) => {
            let st = learn.take()?;
            *tab = st.saved_tab;
            Some(*st.saved)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lesson_computes_and_speaks_both_languages_with_the_same_numbers() {
        for lesson in Lesson::ALL {
            let c = Computed::new(&lesson.settings()).unwrap_or_else(|e| panic!("{lesson:?}: {e}"));
            let roadmap = crate::roadmap::roadmap(&c.scenario, &c.gpu);
            let en = lesson.body(&c, roadmap.as_ref(), Lang::En);
            let zh = lesson.body(&c, roadmap.as_ref(), Lang::ZhCn);
            assert!(zh.chars().any(|ch| ('\u{4e00}'..='\u{9fff}').contains(&ch)), "{lesson:?}: {zh}");
            // the sizes of a text ("0.41 GiB", "0.44 GB"); counts are written the way each
            // language counts (8.03 × 10⁹, 80.3 亿)
            let numbers = |s: &str| -> Vec<String> {
                let words: Vec<&str> = s.split([' ', '（', '(', '，', '：']).collect();
                words
                    .windows(2)
                    .filter(|w| w[1].starts_with("GiB") || w[1].starts_with("GB"))
                    .map(|w| w[0].trim_matches(|c: char| !(c.is_ascii_digit() || c == '.')).to_owned())
                    .filter(|x| x.contains('.'))
                    .collect()
            };
            // every GiB figure of the English text is in the Chinese one
            for x in numbers(&en) {
                assert!(zh.contains(&x), "{lesson:?}: {x} of {en} is not in {zh}");
            }
            assert!(!lesson.title(Lang::ZhCn).is_empty());
            let faults = crate::gui::strings::zh_punctuation_faults(&zh);
            assert!(faults.is_empty(), "{lesson:?}: {faults:?}");
        }
    }

    #[test]
    fn the_first_lesson_is_the_seed_s_bert_base_example() {
        let c = Computed::new(&Lesson::Parameters.settings()).expect("bert-base");
        let gb = c.estimate.parameters as f64 / 1e9;
        assert!((0.40..0.46).contains(&gb), "BERT-base fp32 weights {gb} GB");
        let body = Lesson::Parameters.body(&c, None, Lang::En);
        assert!(body.contains(&format!("{gb:.2} GB")), "{body}");
    }

    #[test]
    fn leaving_restores_the_user_s_scenario_and_tab() {
        let mine = Settings { batch: 3, seq: 777, ..Default::default() };
        let mut tab = Tab::Compare;
        let mut learn = None;
        let s = step(&mut learn, &mine, &mut tab, LearnStep::Start).expect("starts");
        assert_eq!(s, Lesson::Parameters.settings());
        assert_eq!(tab, Lesson::Parameters.tab());
        let mut shown = s;
        for i in 1..Lesson::ALL.len() {
            shown = step(&mut learn, &shown, &mut tab, LearnStep::Next).expect("next");
            assert_eq!(learn.as_ref().map(|l| l.index), Some(i));
        }
        assert_eq!(step(&mut learn, &shown, &mut tab, LearnStep::Next), None, "no lesson after the last");
        let back = step(&mut learn, &shown, &mut tab, LearnStep::Back).expect("back");
        assert_eq!(back, Lesson::ALL[6].settings());
        let restored = step(&mut learn, &back, &mut tab, LearnStep::Leave).expect("leave");
        assert_eq!(restored, mine);
        assert_eq!(tab, Tab::Compare);
        assert!(learn.is_none());
    }
}
