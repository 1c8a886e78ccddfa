//! The Serve mode's texts (a vLLM-style server's KV budget, its curve, options and roadmap),
//! English and Simplified Chinese side by side; [`tr_serve`] answers in
//! [`crate::gui::lang::current`].

use crate::gui::lang::{self, Lang};

strings! {
    /// The Serve mode's texts (a vLLM-style server's KV budget).
    pub struct ServeStrings, SERVE_EN, SERVE_ZH {
        mode_serve: "Serve" / "服务",
        mode_serve_tip: "A vLLM-style server: what it gives the KV cache after weights, the profiling forward and CUDA graphs, and how many requests fit at once (vramscope serve)."
            / "vLLM 式推理服务器：扣除权重、剖析前向和 CUDA graphs 之后留给 KV 缓存的显存，以及可同时容纳多少个请求（vramscope serve）。",
        section: "Server (vLLM)" / "服务器（vLLM）",
        utilisation: "GPU memory utilisation" / "GPU 显存利用率",
        utilisation_tip: "--gpu-memory-utilization: the share of the CUDA-visible memory the server may use. Everything but the weights, the profiling peak and non-torch memory becomes KV cache."
            / "--gpu-memory-utilization：服务器可使用的 CUDA 可见显存比例。除权重、剖析峰值和非 torch 显存外，其余全部用作 KV 缓存。",
        max_model_len: "max model len" / "最大模型长度",
        max_model_len_tip: "--max-model-len: the longest request (prompt + output). One request of this length must fit in the KV cache or the server refuses to start."
            / "--max-model-len：最长请求（prompt + 输出）。KV 缓存必须能放下一个这种长度的请求，否则服务器拒绝启动。",
        batched_tokens: "max batched tokens" / "最大批处理 token 数",
        batched_tokens_tip: "--max-num-batched-tokens: tokens per scheduler step, and of the profiling forward whose peak is kept free. 0: vLLM's default for the card."
            / "--max-num-batched-tokens：每个调度步的 token 数，也是剖析前向的 token 数（其峰值需预留）。0：该显卡的 vLLM 默认值。",
        num_seqs: "max sequences" / "最大序列数",
        num_seqs_tip: "--max-num-seqs: sequences per step, and rows of the profiling sampler (a sort over the vocabulary for each). 0: vLLM's default for the card."
            / "--max-num-seqs：每步的序列数，也是剖析采样器的行数（每行对整个词表排序一次）。0：该显卡的 vLLM 默认值。",
        card_default: "0 = vLLM's default" / "0 = vLLM 默认值",
        kv_fp8: "fp8 KV cache" / "fp8 KV 缓存",
        kv_fp8_tip: "--kv-cache-dtype fp8: one byte per key/value element, twice the tokens. Check quality on your prompts."
            / "--kv-cache-dtype fp8：每个键/值元素占 1 字节，可容纳的 token 数翻倍。请用你自己的 prompt 检查质量。",
        weights: "Weights" / "权重",
        weights_tip: "As the checkpoint stores them, vLLM's online fp8 (--quantization fp8), or a 4-bit AWQ export of the model (a what-if: serve that repository)."
            / "按检查点存储的格式、vLLM 在线 fp8 量化（--quantization fp8），或该模型的 4-bit AWQ 导出版本（假设分析：改为部署那个仓库）。",
        weights_checkpoint: "as the checkpoint" / "与权重文件相同",
        weights_fp8: "fp8 (online)" / "fp8（在线）",
        weights_awq: "AWQ 4-bit export" / "AWQ 4-bit 导出",
        fp16: "float16 (--dtype)" / "float16（--dtype）",
        fp16_tip: "--dtype float16 instead of the checkpoint's dtype (bfloat16 needs an Ampere or newer card)."
            / "用 --dtype float16 代替检查点的 dtype（bfloat16 需要 Ampere 或更新的显卡）。",
        eager: "enforce eager" / "强制 eager",
        eager_tip: "--enforce-eager: no CUDA graphs. vLLM 0.21+ subtracts its CUDA-graph estimate before the KV cache; earlier versions capture graphs after it."
            / "--enforce-eager：不使用 CUDA graphs。vLLM 0.21+ 在分配 KV 缓存之前扣除 CUDA graph 的估算值；更早的版本在分配之后才捕获 graph。",
        context: "mean context" / "平均上下文",
        context_tip: "Also give the concurrency at this mean request length (prompt + output), tokens. 0: none."
            / "同时给出该平均请求长度（prompt + 输出，单位 token）下的并发数。0：不计算。",
        target: "target concurrency" / "目标并发数",
        target_tip: "Concurrent requests the roadmap aims for (at the mean context, else at max model len). 0: the roadmap only makes the server start."
            / "路线图追求的并发请求数（按平均上下文计，未设置时按最大模型长度）。0：路线图只求服务器能够启动。",
        tp: "tensor parallel" / "张量并行",
        pp: "pipeline parallel" / "流水线并行",
        parallel_tip: "--tensor-parallel-size / --pipeline-parallel-size: weights and KV heads split over the GPUs; every rank takes the smallest block count."
            / "--tensor-parallel-size / --pipeline-parallel-size：权重和 KV 头分布到各 GPU 上；每个 rank 取最小的块数。",
        tokens_of_kv: "tokens of KV cache" / "KV 缓存 token",
        concurrent: "concurrent" / "个并发",
        token_requests: "-token requests" / " token 请求",
        at_context: "at" / "于",
        does_not_start: "does not start" / "无法启动",
        request_too_long: "one request of max model len needs more KV cache than is left"
            / "一个最大模型长度的请求所需的 KV 缓存超过了剩余空间",
        nothing_left: "nothing is left for the KV cache" / "没有剩余显存可用作 KV 缓存",
        longest_fits: "longest request that fits" / "可容纳的最长请求",
        starts: "starts" / "可启动",
        cli_hint: "The same answer on the command line:" / "在命令行中得到相同结果：",
        seg_weights: "weights" / "权重",
        seg_profile: "profiling peak" / "剖析峰值",
        seg_non_torch: "non-torch" / "非 torch 显存",
        seg_graphs: "CUDA graphs" / "CUDA graphs",
        seg_kv: "KV cache" / "KV 缓存",
        seg_reserved: "kept free" / "预留不用",
        budget_line: "budget" / "预算",
        cuda_total_line: "CUDA-visible" / "CUDA 可见",
        why_title: "Why this much KV cache?" / "为什么 KV 缓存是这么多？",
        why_hint: "Each term as vLLM computes it at start-up, per GPU."
            / "各项均按 vLLM 启动时的计算方式给出，按每 GPU 计。",
        tab_concurrency: "Concurrency vs context" / "并发数随上下文",
        curve_hint: "Requests that fit at once against their length (prompt + output); the KV cache is the same, each request needs its own blocks."
            / "可同时容纳的请求数随请求长度（prompt + 输出）的变化；KV 缓存总量不变，每个请求需要各自的块。",
        curve_x: "context length (tokens)" / "上下文长度（token）",
        curve_y: "concurrent requests" / "并发请求数",
        curve_line: "concurrent requests that fit" / "可容纳的并发请求数",
        curve_target: "target" / "目标",
        curve_context: "concurrent at the mean context" / "平均上下文处的并发",
        curve_max_len: "concurrent at max model len" / "最大模型长度处的并发",
        options_title: "Each change alone" / "单独应用每项更改",
        roadmap_title: "Roadmap (each step on top of the ones before)" / "路线图（每一步叠加在之前各步之上）",
        beside_title: "Beside it (changes what the server accepts)" / "路线图之外（会改变服务器接受的请求）",
        col_change: "change" / "更改",
        col_when: "when" / "期限",
        col_effort: "effort" / "工作量",
        col_gpus: "GPUs" / "GPU 数",
        col_tokens: "KV tokens" / "KV token 数",
        col_concurrency: "concurrent (at mean context)" / "并发数（平均上下文）",
        col_starts: "starts" / "可启动",
        col_price: "price" / "价格",
        apply: "apply" / "应用",
        apply_tip: "Set these settings in the controls (undo brings the current ones back)."
            / "把这些设置填入控件（撤销可恢复当前设置）。",
        yes: "yes" / "是",
        no: "no" / "否",
        notes: "Notes" / "备注",
        export_text: "Serving answer, options and roadmap (text)…" / "服务结果、方案与路线图（文本）…",
        export_json: "Serving answer, options and roadmap (JSON)…" / "服务结果、方案与路线图（JSON）…",
        export_none: "Nothing to export: the server could not be computed"
            / "没有可导出的内容：无法计算服务器配置",
    }
}

/// The Serve mode's texts in the current language.
pub fn tr_serve() -> &'static ServeStrings {
    match lang::current() {
        Lang::En => &SERVE_EN,
        Lang::ZhCn => &SERVE_ZH,
    }
}
