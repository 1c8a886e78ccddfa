//! The texts of the "Options & cost" tab's tables (hardware paths, the cost of a run, the
//! roadmap), English and Simplified Chinese side by side; [`tr_options`] answers in
//! [`crate::gui::lang::current`]. Placeholders in braces (`{flops}`, `{gpu}`, …) are replaced by
//! the panel and kept as they are in each language.

use crate::gui::lang::{self, Lang};

strings! {
    /// The Options tab's texts.
    pub struct OptionsStrings, OPTIONS_EN, OPTIONS_ZH {
        /// Column: the hardware path ("current", "more GPUs", …).
        col_path: "path" / "方案",
        /// Column: the card.
        col_gpu: "GPU" / "GPU",
        /// Column: GPUs in the job.
        col_gpus: "GPUs" / "GPU 数",
        /// Column: the parallel layout.
        col_layout: "layout" / "布局",
        /// Column: micro-batch (x accumulation).
        col_batch: "batch" / "批次",
        /// Column: per-GPU total of capacity.
        col_gib_per_gpu: "GiB per GPU" / "每 GPU 显存（GiB）",
        /// Column: does it fit.
        col_fits: "fits" / "可容纳",
        /// Column: speed against the current card.
        col_speed: "speed" / "速度",
        /// Column: price per hour.
        col_usd_per_hour: "$/h" / "$/小时",
        /// Column: price per million tokens.
        col_usd_per_m_tokens: "$/M tokens" / "$/百万 token",
        /// Layout suffix: the optimizer states offloaded.
        offload_optimizer: ", offload optimizer" / "，卸载优化器状态",
        /// Layout suffix: the parameters offloaded.
        offload_params: ", offload params" / "，卸载参数",
        /// Layout: the checkpointing's name before its value.
        ckpt: "ckpt" / "检查点",
        /// Hover of a row that changes nothing.
        as_it_is: "the scenario as it is" / "当前场景，未做改动",
        /// Fits.
        yes: "yes" / "是",
        /// Does not fit.
        no: "no" / "否",
        /// Title of the cost of a run.
        run_cost: "Cost of a run:" / "一次运行的成本：",
        /// Suffix of the run's tokens (billions).
        run_tokens_suffix: " × 10⁹ tokens" / " × 10⁹ 个 token",
        /// Hover of the run's tokens.
        run_tokens_tip: "Tokens processed by the whole run, in billions (6 x active params x tokens FLOPs to train, 2 x to infer)."
            / "整个运行处理的 token 数，单位为十亿（训练的 FLOPs 为 6 × 激活参数量 × token 数，推理为 2 ×）。",
        /// Label before the MFU.
        at_mfu: "at MFU" / "MFU",
        /// Hover of the MFU.
        mfu_tip: "Model FLOPs utilisation: the share of the GPU's dense bf16 peak the run sustains (40 % is typical)."
            / "模型 FLOPs 利用率：运行中能持续达到的 GPU 稠密 bf16 峰值算力的比例（典型值为 40 %）。",
        /// How the run's cost is counted: `{flops}`, `{gpus}`.
        run_cost_note: "{flops} FLOPs on whole instances with at least the layout's {gpus} GPU(s) (extra GPUs run data-parallel); spot -70 % (interruptions cost the work since the last checkpoint), committed -40 %."
            / "共 {flops} FLOPs，按整台实例计，每台至少有布局所需的 {gpus} 张 GPU（多出的 GPU 做数据并行）；竞价实例 -70 %（中断会损失上次检查点之后的计算），承诺使用 -40 %。",
        /// Column: the instance.
        col_option: "option" / "实例",
        /// Column: instances rented.
        col_instances: "instances" / "实例数",
        /// Column: wall-clock hours.
        col_wall_hours: "wall hours" / "耗时（小时）",
        /// Column: GPU-hours.
        col_gpu_hours: "GPU-hours" / "GPU 小时",
        /// Column: on-demand price.
        col_on_demand: "on demand" / "按需",
        /// Column: spot price.
        col_spot: "spot" / "竞价",
        /// Column: committed-use price.
        col_committed: "committed" / "承诺使用",
        /// Hover of an instance: `{date}`, `{region}`.
        price_noted: "price noted {date} ({region})" / "价格记录于 {date}（{region}）",
        /// A job small enough for a MIG slice: `{slices}`, `{gib}`, `{jobs}`, `{gpu}`.
        mig_share: "Small enough to share: a MIG {slices}g.{gib}gb slice holds it; {jobs} such jobs fit one {gpu}."
            / "足够小，可以共享：一个 MIG {slices}g.{gib}gb 切片即可容纳；一张 {gpu} 可同时放下 {jobs} 个这样的任务。",
        /// The roadmap's title: `{headline}`.
        roadmap_title: "Roadmap: {headline}" / "路线图：{headline}",
        /// How to read the roadmap's bars.
        roadmap_hint: "Each bar is the per-GPU total (GiB) after that step and all before it; the bar across is that step's GPU capacity. Hover a step for how to do it."
            / "每根柱子是执行该步（及之前所有步骤）之后的每 GPU 总量（GiB）；横线是该步的 GPU 容量。鼠标悬停在步骤上可查看做法。",
        /// The bar of the job before any step.
        now: "now" / "当前",
        /// Title of the steps that raise the micro-batch.
        raise_batch_title: "What raises the micro-batch (each alone, on the job that fits)"
            / "提高微批次的改动（各自单独作用于已可容纳的任务）",
        /// Title of the changes of method.
        method_title: "Changes of method (on the short-term settings, this card)"
            / "更换方法（基于短期设置，仍用这张卡）",
        /// Column: step number.
        col_number: "#" / "#",
        /// Column: the horizon.
        col_when: "when" / "期限",
        /// Column: the step.
        col_step: "step" / "步骤",
        /// Column: what it saves.
        col_saves: "saves" / "节省",
        /// Column: per-GPU total after the step.
        col_total_after: "total after" / "之后总量",
        /// Column: effort.
        col_effort: "effort" / "投入",
        /// Hover of a step: before the flags it changes.
        flags: "flags:" / "参数：",
        /// A step that is not a memory change.
        not_memory: "not a memory change" / "不改变显存",
        /// A change of card: `{gib}`.
        card_of: "card of {gib} GiB" / "{gib} GiB 的卡",
    }
}

/// The Options tab's texts in the current language.
pub fn tr_options() -> &'static OptionsStrings {
    match lang::current() {
        Lang::En => &OPTIONS_EN,
        Lang::ZhCn => &OPTIONS_ZH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GUI's cache answers in the language of the moment: switching it rewrites the hardware
    /// paths, the roadmap and the serving advice (the estimate is not recomputed).
    #[test]
    fn the_cache_follows_the_language() {
        use crate::gui::derived::Derived;
        use crate::gui::state::AppState;
        let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let mut state = AppState::default();
        state.settings.serving = true;
        let mut d = Derived::default();
        crate::gui::lang::set(Lang::En);
        d.update(&state);
        let headline = |d: &Derived| {
            d.serve
                .as_ref()
                .and_then(|s| s.as_ref().ok())
                .and_then(|s| s.advice.as_ref().ok())
                .map(|a| a.headline.clone())
        };
        let en = headline(&d).unwrap_or_default();
        assert!(!en.is_empty() && !cjk(&en), "{en}");
        let en_paths = d.options(&state.settings).to_vec();
        let n = d.recomputations;
        crate::gui::lang::set(Lang::ZhCn);
        d.update(&state);
        let zh = headline(&d).unwrap_or_default();
        assert!(cjk(&zh), "{zh}");
        assert_eq!(d.recomputations, n, "the estimate is the same in every language");
        let zh_paths = d.options(&state.settings).to_vec();
        assert_eq!(zh_paths.len(), en_paths.len());
        assert!(zh_paths.iter().all(|p| cjk(&p.kind)));
        let totals = |v: &[crate::options::HardwarePath]| v.iter().map(|p| p.total_bytes).collect::<Vec<_>>();
        assert_eq!(totals(&zh_paths), totals(&en_paths));
        assert!(d.roadmap.as_ref().is_none_or(|r| cjk(&r.headline)));
        crate::gui::lang::set(Lang::En);
    }
}
