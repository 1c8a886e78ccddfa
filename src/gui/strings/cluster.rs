//! The Live tab's source controls (NVML or Prometheus) and a cluster read against the plan,
//! English and Simplified Chinese side by side. Placeholders in braces (`{gpu}`, `{rank}`, …) are
//! replaced by the panels and kept in both languages. [`tr_cluster`] answers in
//! [`crate::gui::lang::current`].

use crate::gui::lang::{self, Lang};

strings! {
    /// The Live tab's source controls and a cluster read against the plan.
    pub struct ClusterStrings, CLUSTER_EN, CLUSTER_ZH {
        source: "Source" / "数据源",
        source_tip: "This machine's GPUs through the NVIDIA driver (NVML), or every GPU of a cluster from the Prometheus server that scrapes NVIDIA's DCGM exporter."
            / "通过 NVIDIA 驱动（NVML）读取本机的 GPU，或从抓取 NVIDIA DCGM exporter 的 Prometheus 服务器读取集群中的每块 GPU。",
        source_nvml: "This machine (NVML)" / "本机（NVML）",
        source_prometheus: "Cluster (Prometheus)" / "集群（Prometheus）",
        url: "URL" / "URL",
        url_tip: "The Prometheus server that scrapes the DCGM exporter, e.g. http://prometheus:9090 (its HTTP API: /api/v1/query and /api/v1/query_range)."
            / "抓取 DCGM exporter 的 Prometheus 服务器，例如 http://prometheus:9090（使用其 HTTP API：/api/v1/query 和 /api/v1/query_range）。",
        selector: "Selector" / "选择器",
        selector_tip: "A PromQL label selector for the DCGM series, e.g. {job=\"train-42\"} or {Hostname=~\"gpu-0[1-4]\"}; empty: every GPU Prometheus has."
            / "DCGM 序列的 PromQL 标签选择器，例如 {job=\"train-42\"} 或 {Hostname=~\"gpu-0[1-4]\"}；留空：Prometheus 中的所有 GPU。",
        start_tip: "Query Prometheus every 5 s for every GPU's DCGM_FI_DEV_FB_USED / FREE / RESERVED and read them against the plan's ranks."
            / "每 5 s 向 Prometheus 查询每块 GPU 的 DCGM_FI_DEV_FB_USED / FREE / RESERVED，并与规划中的各 rank 对照。",
        range: "Range" / "时间范围",
        load_range: "Load range" / "加载范围",
        load_range_tip: "Read this range back from Prometheus (query_range, 240 points) and diagnose every GPU's curve over it; live samples continue after it."
            / "从 Prometheus 读回该时间范围（query_range，240 个点），诊断每块 GPU 在此期间的曲线；之后继续接收实时样本。",
        loading: "reading the range…" / "正在读取该范围…",
        open_recording: "Open recording…" / "打开录制文件…",
        open_recording_tip: "A cluster recorded on any machine that reaches Prometheus (vramscope monitor --prometheus URL --range 1h --json > run.json), or this tab's CSV."
            / "在任意能访问 Prometheus 的机器上录制的集群数据（vramscope monitor --prometheus URL --range 1h --json > run.json），或本标签页记录的 CSV。",
        /// "{what}": a path or "the last 1h from Prometheus".
        showing: "Showing {what}" / "正在显示 {what}",
        host_order: "Host order" / "主机顺序",
        host_order_tip: "The hosts in node-rank order (node 0 first), as torchrun's --node-rank or Slurm assign them; empty: by name. Node n holds the next GPUs-per-node ranks, local rank i on GPU i; the pipeline is the outermost dimension of the rank grid (Megatron-LM, torchtitan, DeepSpeed), so the first world/pp ranks run stage 0."
            / "按节点 rank 顺序（节点 0 在前）排列的主机，与 torchrun 的 --node-rank 或 Slurm 的分配一致；留空：按名称排序。节点 n 持有接下来的“每节点 GPU 数”个 rank，本地 rank i 对应 GPU i；流水线是 rank 网格的最外层维度（Megatron-LM、torchtitan、DeepSpeed），因此前 world/pp 个 rank 运行阶段 0。",
        host_order_hint: "node 0, node 1, … (empty: by name)" / "节点 0, 节点 1, …（留空：按名称）",
        col_host: "Host" / "主机",
        col_gpu: "GPU" / "GPU",
        col_rank: "Rank" / "Rank",
        col_stage: "Stage" / "阶段",
        col_used: "Peak used" / "峰值占用",
        used_tip: "The most each GPU used over the samples shown (the range or recording, then live), as nvidia-smi counts it: what the plan's per-rank total predicts."
            / "在所显示的样本（先是时间范围或录制文件，然后是实时数据）中每块 GPU 的最大占用，按 nvidia-smi 的口径统计：即规划中每个 rank 的总量所预测的值。",
        now: "now:" / "当前：",
        col_predicted: "Predicted" / "预测",
        col_error: "Δ" / "Δ",
        col_curve: "Curve" / "曲线",
        predicted_tip: "The total predicted for the pipeline stage the rank runs (what nvidia-smi would show); each stage's is what this command prints:"
            / "该 rank 所在流水线阶段的预测总量（即 nvidia-smi 应显示的值）；各阶段的值即以下命令的输出：",
        not_in_job: "not in the job" / "不在作业中",
        /// "{gpu}", "{rank}", "{stage}", "{used}", "{total}", "{predicted}", "{error}".
        worst: "Most loaded GPU: {gpu} (rank {rank}, stage {stage}): {used} of {total} at its peak; {predicted} predicted for its stage ({error})."
            / "负载最重的 GPU：{gpu}（rank {rank}，阶段 {stage}）：峰值时占用 {used} / {total}；其阶段的预测值为 {predicted}（{error}）。",
        /// "{stage}", "{predicted}".
        plan_worst_same: "The plan's most loaded stage is the same: stage {stage}, {predicted}."
            / "规划中负载最重的阶段与之相同：阶段 {stage}，{predicted}。",
        /// "{stage}", "{predicted}", "{measured}".
        plan_worst_other: "The plan's most loaded stage is stage {stage} ({predicted}); measured, stage {measured} is the most loaded."
            / "规划中负载最重的是阶段 {stage}（{predicted}）；实测中负载最重的是阶段 {measured}。",
        /// "{hosts}".
        unknown_hosts: "No GPU seen on: {hosts}." / "以下主机上未发现 GPU：{hosts}。",
        /// "{n}", "{world}".
        missing_ranks: "{n} of the job's {world} ranks have no GPU in the source."
            / "作业的 {world} 个 rank 中，有 {n} 个在数据源中找不到对应的 GPU。",
        /// "{n}", "{m}", "{list}".
        fails: "Curves: {n} of {m} GPUs fail ({list})." / "曲线：{m} 块 GPU 中有 {n} 块异常（{list}）。",
        /// "{m}".
        healthy: "Curves: all {m} GPUs healthy." / "曲线：全部 {m} 块 GPU 正常。",
        /// "{n}", "{m}", "{list}": GPUs whose use sits near the card from the first sample on.
        near_line: "Near capacity all along: {n} of {m} GPUs ({list}) — at the edge, or the allocator holds the card."
            / "始终接近显卡容量：{m} 块 GPU 中有 {n} 块（{list}）——处于边缘，或分配器占住了显卡。",
        too_few: "too few samples" / "样本太少",
        /// A GPU whose total memory the source does not give.
        no_total: "total memory unknown" / "总显存未知",
        /// "{s}": seconds since its last sample.
        stopped: "no sample for the last {s} s" / "已 {s} 秒无采样",
        /// "{n}", "{list}".
        stopped_line: "{n} GPU(s) stopped reporting (node or DCGM exporter down?): {list}."
            / "{n} 块 GPU 停止上报（节点或 DCGM exporter 已停止？）：{list}。",
        /// "{gpu}" (a host's GPU, as nvidia-smi there numbers it), "{rank}": the curve's name.
        gpu_with_rank: "{gpu} (rank {rank})" / "{gpu}（rank {rank}）",
        click_to_show: "Show this GPU's curve" / "显示该 GPU 的曲线",
        /// The breakdown's measured line in a cluster: the GPU shown's peak.
        measured_peak_on_bar: "measured peak" / "实测峰值",
        /// What a loaded range is ("{range}": 1h, 7d…), after `showing`.
        loaded_range: "the last {range} from Prometheus" / "Prometheus 中最近 {range} 的数据",
        /// "{n}", "{world}", "{list}": GPUs of the source beyond the job's ranks.
        outside_job: "{n} GPU(s) beyond the job's {world} ranks, not read against the plan: {list}."
            / "{n} 块 GPU 超出作业的 {world} 个 rank，未与计划对照：{list}。",
    }
}

/// The cluster texts in the current language.
pub fn tr_cluster() -> &'static ClusterStrings {
    match lang::current() {
        Lang::En => &CLUSTER_EN,
        Lang::ZhCn => &CLUSTER_ZH,
    }
}
