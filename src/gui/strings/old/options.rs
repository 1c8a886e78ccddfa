//! The texts of the "Options & cost" tab's tables (hardware paths, the cost of a run, the
//! roadmap) in English and Simplified Chinese; [`tr_options`] answers in
//! [`crate::gui::lang::current`]. Placeholders in braces (`{flops}`, `{gpu}`, …) are replaced by the
//! panel and kept as they are in each language.

use crate::gui::lang::Lang;

/// The Options tab's texts.
#[derive(Clone, Copy, Debug)]
pub struct OptionsStrings {
    /// Column: the hardware path ("current", "more GPUs", …).
    pub col_path: &'static str,
    /// Column: the card.
    pub col_gpu: &'static str,
    /// Column: GPUs in the job.
    pub col_gpus: &'static str,
    /// Column: the parallel layout.
    pub col_layout: &'static str,
    /// Column: micro-batch (x accumulation).
    pub col_batch: &'static str,
    /// Column: per-GPU total of capacity.
    pub col_gib_per_gpu: &'static str,
    /// Column: does it fit.
    pub col_fits: &'static str,
    /// Column: speed against the current card.
    pub col_speed: &'static str,
    /// Column: price per hour.
    pub col_usd_per_hour: &'static str,
    /// Column: price per million tokens.
    pub col_usd_per_m_tokens: &'static str,
    /// Layout suffix: the optimizer states offloaded.
    pub offload_optimizer: &'static str,
    /// Layout suffix: the parameters offloaded.
    pub offload_params: &'static str,
    /// Layout: the checkpointing's name before its value.
    pub ckpt: &'static str,
    /// Hover of a row that changes nothing.
    pub as_it_is: &'static str,
    /// Fits.
    pub yes: &'static str,
    /// Does not fit.
    pub no: &'static str,
    /// Title of the cost of a run.
    pub run_cost: &'static str,
    /// Suffix of the run's tokens (billions).
    pub run_tokens_suffix: &'static str,
    /// Hover of the run's tokens.
    pub run_tokens_tip: &'static str,
    /// Label before the MFU.
    pub at_mfu: &'static str,
    /// Hover of the MFU.
    pub mfu_tip: &'static str,
    /// How the run's cost is counted: `{flops}`, `{gpus}`.
    pub run_cost_note: &'static str,
    /// Column: the instance.
    pub col_option: &'static str,
    /// Column: instances rented.
    pub col_instances: &'static str,
    /// Column: wall-clock hours.
    pub col_wall_hours: &'static str,
    /// Column: GPU-hours.
    pub col_gpu_hours: &'static str,
    /// Column: on-demand price.
    pub col_on_demand: &'static str,
    /// Column: spot price.
    pub col_spot: &'static str,
    /// Column: committed-use price.
    pub col_committed: &'static str,
    /// Hover of an instance: `{date}`, `{region}`.
    pub price_noted: &'static str,
    /// A job small enough for a MIG slice: `{slices}`, `{gib}`, `{jobs}`, `{gpu}`.
    pub mig_share: &'static str,
    /// The roadmap's title: `{headline}`.
    pub roadmap_title: &'static str,
    /// How to read the roadmap's bars.
    pub roadmap_hint: &'static str,
    /// The bar of the job before any step.
    pub now: &'static str,
    /// Title of the steps that raise the micro-batch.
    pub raise_batch_title: &'static str,
    /// Title of the changes of method.
    pub method_title: &'static str,
    /// Column: step number.
    pub col_number: &'static str,
    /// Column: the horizon.
    pub col_when: &'static str,
    /// Column: the step.
    pub col_step: &'static str,
    /// Column: what it saves.
    pub col_saves: &'static str,
    /// Column: per-GPU total after the step.
    pub col_total_after: &'static str,
    /// Column: effort.
    pub col_effort: &'static str,
    /// Hover of a step: before the flags it changes.
    pub flags: &'static str,
    /// A step that is not a memory change.
    pub not_memory: &'static str,
    /// A change of card: `{gib}`.
    pub card_of: &'static str,
}

/// English.
pub const OPTIONS_EN: OptionsStrings = OptionsStrings {
    col_path: "path",
    col_gpu: "GPU",
    col_gpus: "GPUs",
    col_layout: "layout",
    col_batch: "batch",
    col_gib_per_gpu: "GiB per GPU",
    col_fits: "fits",
    col_speed: "speed",
    col_usd_per_hour: "$/h",
    col_usd_per_m_tokens: "$/M tokens",
    offload_optimizer: ", offload optimizer",
    offload_params: ", offload params",
    ckpt: "ckpt",
    as_it_is: "the scenario as it is",
    yes: "yes",
    no: "no",
    run_cost: "Cost of a run:",
    run_tokens_suffix: " B tokens",
    run_tokens_tip: "Tokens processed by the whole run, in billions (6 x active params x tokens FLOPs to train, 2 x to infer).",
    at_mfu: "at MFU",
    mfu_tip: "Model FLOPs utilisation: the share of the GPU's dense bf16 peak the run sustains (40 % is typical).",
    run_cost_note: "{flops} FLOPs on whole instances with at least the layout's {gpus} GPU(s) (extra GPUs run data-parallel); spot -70 % (interruptions cost the work since the last checkpoint), committed -40 %.",
    col_option: "option",
    col_instances: "instances",
    col_wall_hours: "wall hours",
    col_gpu_hours: "GPU-hours",
    col_on_demand: "on demand",
    col_spot: "spot",
    col_committed: "committed",
    price_noted: "price noted {date} ({region})",
    mig_share: "Small enough to share: a MIG {slices}g.{gib}gb slice holds it; {jobs} such jobs fit one {gpu}.",
    roadmap_title: "Roadmap: {headline}",
    roadmap_hint: "Each bar is the per-GPU total (GiB) after that step and all before it; the bar across is that step's GPU capacity. Hover a step for how to do it.",
    now: "now",
    raise_batch_title: "What raises the micro-batch (each alone, on the job that fits)",
    method_title: "Changes of method (on the short-term settings, this card)",
    col_number: "#",
    col_when: "when",
    col_step: "step",
    col_saves: "saves",
    col_total_after: "total after",
    col_effort: "effort",
    flags: "flags:",
    not_memory: "not a memory change",
    card_of: "card of {gib} GiB",
};

/// 简体中文。
pub const OPTIONS_ZH: OptionsStrings = OptionsStrings {
    col_path: "方案",
    col_gpu: "GPU",
    col_gpus: "GPU 数",
    col_layout: "布局",
    col_batch: "批次",
    col_gib_per_gpu: "每 GPU 显存（GiB）",
    col_fits: "可容纳",
    col_speed: "速度",
    col_usd_per_hour: "$/小时",
    col_usd_per_m_tokens: "$/百万 token",
    offload_optimizer: "，卸载优化器状态",
    offload_params: "，卸载参数",
    ckpt: "检查点",
    as_it_is: "当前场景，未做改动",
    yes: "是",
    no: "否",
    run_cost: "一次运行的成本：",
    run_tokens_suffix: " B token",
    run_tokens_tip: "整个运行处理的 token 数，单位为十亿（训练的 FLOPs 为 6 × 激活参数量 × token 数，推理为 2 ×）。",
    at_mfu: "MFU",
    mfu_tip: "模型 FLOPs 利用率：运行中能持续达到的 GPU 稠密 bf16 峰值算力的比例（典型值为 40 %）。",
    run_cost_note: "共 {flops} FLOPs，按整台实例计，每台至少有布局所需的 {gpus} 张 GPU（多出的 GPU 做数据并行）；竞价实例 -70 %（中断会损失上次检查点之后的计算），承诺使用 -40 %。",
    col_option: "实例",
    col_instances: "实例数",
    col_wall_hours: "耗时（小时）",
    col_gpu_hours: "GPU 小时",
    col_on_demand: "按需",
    col_spot: "竞价",
    col_committed: "承诺使用",
    price_noted: "价格记录于 {date}（{region}）",
    mig_share: "足够小，可以共享：一个 MIG {slices}g.{gib}gb 切片即可容纳；一张 {gpu} 可同时放下 {jobs} 个这样的任务。",
    roadmap_title: "路线图：{headline}",
    roadmap_hint: "每根柱子是执行该步（及之前所有步骤）之后的每 GPU 总量（GiB）；横线是该步的 GPU 容量。鼠标悬停在步骤上可查看做法。",
    now: "当前",
    raise_batch_title: "提高微批次的改动（各自单独作用于已可容纳的任务）",
    method_title: "更换方法（基于短期设置，仍用这张卡）",
    col_number: "#",
    col_when: "期限",
    col_step: "步骤",
    col_saves: "节省",
    col_total_after: "之后总量",
    col_effort: "投入",
    flags: "参数：",
    not_memory: "不改变显存",
    card_of: "{gib} GiB 的卡",
};

/// The Options tab's texts in the current language.
pub fn tr_options() -> &'static OptionsStrings {
    match crate::gui::lang::current() {
        Lang::En => &OPTIONS_EN,
        Lang::ZhCn => &OPTIONS_ZH,
    }
}
