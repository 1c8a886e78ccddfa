//! "Why this much?": each component of an estimate with its formula and the current numbers
//! substituted, for the GUI's hover texts, the "Why" panel and reports.

use crate::estimate::{Cat, Checkpointing, Estimate, Mode, Optimizer, Phase, Scenario};
use crate::i18n::Lang;
use crate::report::human_count;
use crate::text;
use crate::units::{GIB, MIB};

/// A component of the per-GPU memory, in the order the stacked bar draws them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// Model weights.
    Parameters,
    /// Gradients.
    Gradients,
    /// Optimizer states.
    OptimizerStates,
    /// Saved activations.
    Activations,
    /// KV cache.
    KvCache,
    /// Short-lived tensors at the peak.
    Temporaries,
    /// CUDA context, workspaces, allocator reserve.
    Overhead,
}

impl Component {
    /// All components, bottom of the bar first.
    pub const ALL: [Self; 7] = [
        Self::Parameters,
        Self::Gradients,
        Self::OptimizerStates,
        Self::Activations,
        Self::KvCache,
        Self::Temporaries,
        Self::Overhead,
    ];

    /// Stable key.
    pub const fn key(self) -> &'static str {
        match self {
            Self::Parameters => "parameters",
            Self::Gradients => "gradients",
            Self::OptimizerStates => "optimizer_states",
            Self::Activations => "activations",
            Self::KvCache => "kv_cache",
            Self::Temporaries => "temporaries",
            Self::Overhead => "overhead",
        }
    }

    /// Bytes of this component alive at the peak (what the stacked bar shows).
    pub fn at_peak(self, e: &Estimate) -> u64 {
        let a = &e.peak.alive;
        match self {
            Self::Parameters => a.parameters,
            Self::Gradients => a.gradients,
            Self::OptimizerStates => a.optimizer_states,
            Self::Activations => a.activations,
            Self::KvCache => a.kv_cache,
            Self::Temporaries => a.temporaries,
            Self::Overhead => e.overhead,
        }
    }
}

/// One explained component.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// Which component.
    pub component: Component,
    /// The rule in symbols.
    pub formula: String,
    /// The rule with this scenario's numbers.
    pub substituted: String,
    /// Bytes at the peak.
    pub bytes: u64,
}

fn g(b: u64) -> String {
    if b as f64 >= GIB / 10.0 {
        format!("{:.2} GiB", b as f64 / GIB)
    } else {
        format!("{:.1} MiB", b as f64 / MIB)
    }
}

/// Explains every component of `e` (in English: [`explain_in`] with [`Lang::En`]).
pub fn explain(sc: &Scenario, e: &Estimate) -> Vec<Explanation> {
    explain_in(sc, e, Lang::En)
}

/// Explains every component of `e`, the formulas and their substitutions written in `lang`
/// (numbers, units, symbols, dtype, optimizer and code names as they are).
pub fn explain_in(sc: &Scenario, e: &Estimate, lang: Lang) -> Vec<Explanation> {
    let p = sc.precision;
    let wb = p.weight_dtype().bytes(8) as f64 / 8.0;
    let dp = sc.parallel.dp;
    let zero = sc.parallel.effective_zero();
    let ranks = sc.parallel.shard_degree();
    let scheme = match sc.parallel.fsdp {
        Some(m) => format!("FSDP {}", crate::flags::fsdp_name(m)),
        None => format!("ZeRO-{zero}"),
    };
    let shard = |stage: u8| {
        if ranks > 1 && zero >= stage {
            text!(lang, " / {ranks} GPUs ({scheme})", " / {ranks} 个 GPU（{scheme}）")
        } else {
            String::new()
        }
    };
    let mut out = Vec::with_capacity(7);
    // a split model: the rank holds its stage's blocks and its tensor / expert slice
    let this_rank = {
        let q = &sc.parallel;
        let mut parts = Vec::new();
        if q.pp > 1 {
            parts.push(text!(lang, "stage {} of {}", "共 {1} 个阶段中的阶段 {0}", e.stage.index, q.pp));
        }
        if q.tp > 1 {
            parts.push(text!(lang, "1/{} tensor slice", "1/{} 张量切片", q.tp));
        }
        if q.ep > 1 && sc.model.transformer().is_some_and(|t| t.moe.is_some()) {
            parts.push(text!(lang, "1/{} of the experts", "1/{} 的专家", q.ep));
        }
        if parts.is_empty() || e.rank_params == e.n_params {
            String::new()
        } else {
            text!(
                lang,
                " (this rank: {}, of the model's {})",
                "（本 rank：{}；模型共 {}）",
                parts.join(lang.pick(", ", "，")),
                human_count(e.n_params)
            )
        }
    };
    let params_sub = match (sc.lora, p.is_quantized()) {
        (Some(l), _) => text!(
            lang,
            "{} frozen base params{this_rank} ({} base) + LoRA r={} on {} in {}{}",
            "{} 冻结的基座参数{this_rank}（{} 基座）+ LoRA r={}，作用于 {}，{}{}",
            human_count(e.rank_params),
            match sc.base_quant {
                crate::estimate::BaseQuant::None => sc.precision.weight_dtype().name(),
                crate::estimate::BaseQuant::Nf4 => "NF4",
                crate::estimate::BaseQuant::Nf4NoDq =>
                    lang.pick("NF4, no double quantization", "NF4，无双重量化"),
                crate::estimate::BaseQuant::Int8 => "int8",
            },
            l.rank,
            l.targets.names(),
            crate::estimate::states::adapter_dtype(sc).name(),
            shard(3)
        ),
        (None, true) => text!(
            lang,
            "{} params{this_rank}, {} weights (+ scales), embeddings and norms in bf16",
            "{} 参数{this_rank}，{} 权重（+ 缩放因子），嵌入层和归一化层为 bf16",
            human_count(e.rank_params),
            p
        ),
        (None, false) => text!(
            lang,
            "{} params{this_rank} × {wb} B ({}){}",
            "{} 参数{this_rank} × {wb} B（{}）{}",
            human_count(e.rank_params),
            p.weight_dtype().torch_name(),
            shard(3)
        ),
    };
    // ZeRO-3 / FSDP: the all-gathered blocks (and FSDP1's root unit) on top of the shard
    let gathered = Component::Parameters.at_peak(e).saturating_sub(e.parameters);
    let gathered = if zero >= 3 && gathered > 0 && sc.parallel.offload == crate::estimate::Offload::None {
        let root = crate::estimate::fsdp::fsdp1(sc);
        text!(
            lang,
            "; at the peak + {} all-gathered ({}the running and the prefetched block)",
            "；峰值时另有 {} 处于聚合状态（{}正在运行的块和预取的下一块）",
            g(gathered),
            if root {
                lang.pick(
                    "FSDP1's root unit — embeddings, final norm, head — kept through the step, ",
                    "FSDP1 的根单元——嵌入层、最终归一化层、输出头——整个步骤中保持聚合，",
                )
            } else {
                ""
            }
        )
    } else {
        String::new()
    };
    out.push(Explanation {
        component: Component::Parameters,
        formula: lang.pick("N × bytes per weight", "N × 每个权重的字节数").into(),
        substituted: format!("{params_sub} = {}{gathered}", g(e.parameters)),
        bytes: Component::Parameters.at_peak(e),
    });
    if sc.mode == Mode::Train {
        let gb = if sc.lora.is_some() {
            crate::estimate::states::adapter_dtype(sc).bytes(8) as f64 / 8.0
        } else {
            wb
        };
        let frozen_too = crate::estimate::fsdp::block_weights_grad(sc);
        let unsharded = crate::estimate::fsdp::accumulates_unsharded(sc);
        let substituted = if frozen_too || unsharded {
            // FSDP1's own gradients: every block weight's (adapters in the blocks' flat
            // parameters), unsharded while no_sync accumulates
            let what = if frozen_too {
                text!(
                    lang,
                    "every block weight × {wb} B + LoRA's {} (the adapters share each block's FSDP1 flat parameter, so the frozen weights get gradients too)",
                    "每个块的全部权重 × {wb} B + LoRA 的 {}（适配器与每个块共用 FSDP1 扁平参数，冻结的权重也会得到梯度）",
                    human_count(e.trainable_params)
                )
            } else {
                text!(lang, "{} × {gb} B", "{} × {gb} B", human_count(e.trainable_params))
            };
            let how = if unsharded {
                text!(
                    lang,
                    ", kept unsharded by no_sync while {} micro-batches accumulate",
                    "，梯度累积 {} 个微批次期间 no_sync 保留未切分的梯度",
                    sc.stack.grad_accum
                )
            } else {
                shard(2)
            };
            text!(
                lang,
                "{what}{how} = {} (alive at the peak: {})",
                "{what}{how} = {}（峰值时驻留：{}）",
                g(e.gradients),
                g(Component::Gradients.at_peak(e))
            )
        } else {
            text!(
                lang,
                "{} × {gb} B{}{} = {} (alive at the peak: {})",
                "{} × {gb} B{}{} = {}（峰值时驻留：{}）",
                human_count(e.trainable_params),
                shard(2),
                if dp > 1 && zero == 0 {
                    lang.pick(" + DDP bucket copy", " + DDP 梯度桶副本")
                } else {
                    ""
                },
                g(e.gradients),
                g(Component::Gradients.at_peak(e))
            )
        };
        out.push(Explanation {
            component: Component::Gradients,
            formula: lang
                .pick("trainable params × bytes per gradient", "可训练参数 × 每个梯度的字节数")
                .into(),
            substituted,
            bytes: Component::Gradients.at_peak(e),
        });
        let (formula, per) = match sc.optimizer {
            Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwFused | Optimizer::AdamwLoop => (
                lang.pick("2 moments × trainable × bytes", "2 个矩估计 × 可训练参数 × 字节数"),
                format!("2 × {gb} B"),
            ),
            Optimizer::Adamw8bit => (
                lang.pick("2 × (1 B + 4 B / 2048) per trainable param", "每个可训练参数 2 × (1 B + 4 B / 2048)"),
                "≈2 B".into(),
            ),
            Optimizer::PagedAdamw8bit => (
                lang.pick(
                    "2 × (1 B + 4 B / 2048) per trainable param, in unified memory (not in the allocator's peak)",
                    "每个可训练参数 2 × (1 B + 4 B / 2048)，位于统一内存（不计入分配器的峰值）",
                ),
                "≈2 B".into(),
            ),
            Optimizer::PagedAdamw32bit => (
                lang.pick(
                    "2 fp32 moments per trainable param, in unified memory (not in the allocator's peak)",
                    "每个可训练参数 2 个 fp32 矩估计，位于统一内存（不计入分配器的峰值）",
                ),
                "8 B".into(),
            ),
            Optimizer::Adafactor => (
                lang.pick("rows + cols per matrix (factored second moment)", "每个矩阵 行 + 列（分解的二阶矩）"),
                "≈0".into(),
            ),
            Optimizer::SgdMomentum => (
                lang.pick("1 momentum buffer × trainable × bytes", "1 个动量缓冲区 × 可训练参数 × 字节数"),
                format!("{gb} B"),
            ),
            Optimizer::Sgd | Optimizer::None => (lang.pick("no state", "无状态"), "0 B".into()),
        };
        out.push(Explanation {
            component: Component::OptimizerStates,
            formula: formula.into(),
            substituted: format!(
                "{} {} × {per}{} = {}{}",
                sc.optimizer.name(),
                human_count(e.trainable_params),
                shard(1),
                g(e.optimizer_states),
                if e.paged_optimizer_states > 0 {
                    lang.pick(
                        " in unified memory, paged to host memory as the card needs: not on the card's total",
                        "，位于统一内存，显存不够时分页到主机内存：不计入显卡上的总量",
                    )
                } else {
                    ""
                }
            ),
            bytes: Component::OptimizerStates.at_peak(e),
        });
        // the blocks of this rank's pipeline stage
        let layers = sc.model.transformer().map_or(0, |_| e.stage.blocks);
        let of_stage = if e.stage.stages > 1 {
            let n = e.stage.in_flight;
            let mb = if n == 1.0 { "micro-batch" } else { "micro-batches" };
            text!(
                lang,
                " (stage {} of {}, {n} {mb} in flight)",
                "（共 {1} 个阶段中的阶段 {0}；{n} 个微批次同时在途）",
                e.stage.index,
                e.stage.stages
            )
        } else {
            String::new()
        };
        let ckpt = match sc.checkpointing {
            Checkpointing::None => {
                text!(
                    lang,
                    "{layers} blocks{of_stage} keep what backward needs, the embedding and head what theirs need",
                    "{layers} 个块{of_stage}保留反向所需的张量，嵌入层和输出头保留各自所需的"
                )
            }
            Checkpointing::Full => text!(
                lang,
                "{layers} checkpointed blocks{of_stage} keep only their input, the embedding and head what backward needs",
                "{layers} 个做了梯度检查点的块{of_stage}只保留各自的输入，嵌入层和输出头保留反向所需的张量"
            ),
            other => text!(lang, "checkpointing {other}{of_stage}", "梯度检查点 {other}{of_stage}"),
        };
        out.push(Explanation {
            component: Component::Activations,
            formula: lang
                .pick(
                    "sum over ops of the tensors each backward needs (per block × L + head/loss)",
                    "各算子反向所需张量之和（每块 × L + head/损失）",
                )
                .into(),
            substituted: text!(
                lang,
                "b={} × s={}: {ckpt} = {} ({} still alive at the peak)",
                "b={} × s={}：{ckpt} = {}（峰值时仍驻留 {}）",
                sc.batch,
                sc.seq,
                g(e.activations),
                g(Component::Activations.at_peak(e))
            ),
            bytes: Component::Activations.at_peak(e),
        });
    }
    if let Some(t) = sc.model.transformer()
        && sc.mode == Mode::Infer
        && e.kv_cache > 0
    {
        let kvb = sc.kv_cache_dtype.unwrap_or(p.compute_dtype()).bytes(8) as f64 / 8.0;
        // this rank's layers (its pipeline stage) and KV heads (its tensor-parallel share)
        let t = &crate::estimate::shard_spec(t, &sc.parallel);
        let kv_layers = e.stage.blocks;
        // HF generate: the cache ends with prompt + new - 1 tokens (sliding layers: their window)
        let (tokens, formula) = match e.generate {
            Some(g) => (
                g.cached_tokens,
                if t.sliding_window.is_some() {
                    lang.pick(
                        "2 (K,V) × L × b × (prompt + new − 1) × kv_heads × head_dim × bytes (sliding layers: their window)",
                        "2 (K,V) × L × b × (prompt + new − 1) × kv_heads × head_dim × 字节数（滑动窗口层：按其窗口）",
                    )
                } else {
                    lang.pick(
                        "2 (K,V) × L × b × (prompt + new − 1) × kv_heads × head_dim × bytes",
                        "2 (K,V) × L × b × (prompt + new − 1) × kv_heads × head_dim × 字节数",
                    )
                },
            ),
            None => (
                sc.seq,
                lang.pick(
                    "2 (K,V) × L × b × s × kv_heads × head_dim × bytes",
                    "2 (K,V) × L × b × s × kv_heads × head_dim × 字节数",
                ),
            ),
        };
        out.push(Explanation {
            component: Component::KvCache,
            formula: formula.into(),
            substituted: format!(
                "2 × {} × {} × {} × {} × {} × {kvb} B = {}",
                kv_layers,
                sc.batch,
                tokens,
                t.num_kv_heads,
                t.head_dim,
                g(e.kv_cache)
            ),
            bytes: e.kv_cache,
        });
    }
    let what = crate::estimate::moment_in(e.peak.what, lang);
    let temp = match (e.peak.phase, sc.optimizer) {
        (Phase::OptimizerStep, Optimizer::Adamw | Optimizer::Adam) => lang
            .pick(
                "foreach AdamW: sqrt(exp_avg_sq) is one parameter-sized temporary (adamw-fused avoids it)",
                "foreach AdamW：sqrt(exp_avg_sq) 是一个与参数同样大小的临时张量（adamw-fused 可避免）",
            )
            .to_string(),
        (Phase::OptimizerStep, _) => {
            lang.pick("the optimizer's per-step temporaries", "优化器每步的临时张量").to_string()
        }
        (Phase::Backward, _) if e.peak.what.contains("loss") => {
            use crate::estimate::Loss;
            match sc.stack.loss {
                Loss::FusedLinearCe => lang.pick(
                    "fused linear cross-entropy: the input's gradient was computed in the forward",
                    "融合线性交叉熵：输入的梯度已在前向中算出",
                ),
                _ if sc.stack.compiled_loss => lang.pick(
                    "compiled cross-entropy backward: one piece's logits gradient in the compute dtype",
                    "编译的交叉熵反向：一个分片的 logits 梯度（计算 dtype）",
                ),
                Loss::Hf => lang.pick(
                    "log-softmax backward: two (b·s × vocab) fp32 gradients",
                    "log-softmax 反向：两个 (b·s × vocab) 的 fp32 梯度",
                ),
                Loss::Chunked { .. } => lang.pick(
                    "chunk by chunk: one chunk's fp32 nll and log-softmax gradients and the cast back",
                    "逐块计算：一个分块的 fp32 nll 与 log-softmax 梯度，以及转换回计算 dtype 的副本",
                ),
                Loss::ChunkedNative { .. } => lang.pick(
                    "chunk by chunk: one chunk's two gradients in the compute dtype",
                    "逐块计算：一个分块的两个梯度（计算 dtype）",
                ),
                Loss::LinearCe { .. } => lang.pick(
                    "chunk by chunk, each chunk's projection right after its loss: one chunk's fp32 nll and log-softmax gradients and the cast back",
                    "逐块计算，每块的投影紧随其损失之后：一个分块的 fp32 nll 与 log-softmax 梯度，以及转换回计算 dtype 的副本",
                ),
            }
            .to_string()
        }
        (Phase::Backward, _) => {
            text!(lang, "{what}: gradients of the block's widest tensors", "{what}：该块最宽张量的梯度")
        }
        (Phase::Forward, _) => {
            text!(lang, "{what}: the largest short-lived tensors", "{what}：最大的临时张量")
        }
    };
    out.push(Explanation {
        component: Component::Temporaries,
        formula: lang
            .pick("short-lived tensors of the op running at the peak", "峰值时正在运行的算子的临时张量")
            .into(),
        substituted: format!("{temp} = {}", g(e.peak.alive.temporaries)),
        bytes: e.peak.alive.temporaries,
    });
    let o = sc.overhead;
    if let Some(r) = e.reserved {
        let x = crate::estimate::context::outside(sc);
        out.push(Explanation {
            component: Component::Overhead,
            formula: text!(
                lang,
                "CUDA context ({} module loading) + NCCL buffers + allocator cache (replayed max_memory_reserved − peak allocated, at least the cuBLAS workspace)",
                "CUDA 上下文（{} 模块加载）+ NCCL 缓冲区 + 分配器缓存（重放得到的 max_memory_reserved − 已分配峰值，至少为 cuBLAS 工作区）",
                o.module_loading
            ),
            substituted: format!(
                "{} + {} + max({} − {}, {}) = {}",
                g(x.cuda_context + x.eager_kernels),
                g(x.nccl),
                g(r),
                g(e.peak_allocated),
                g(o.workspace_bytes),
                g(e.overhead)
            ),
            bytes: e.overhead,
        });
        return out;
    }
    out.push(Explanation {
        component: Component::Overhead,
        formula: lang
            .pick(
                "CUDA context + cuBLAS workspace + allocator reserve × peak",
                "CUDA 上下文 + cuBLAS 工作区 + 分配器预留比例 × 峰值",
            )
            .into(),
        substituted: format!(
            "{} + {} + {:.0} % × {} = {}",
            g(o.cuda_context_bytes),
            g(o.workspace_bytes),
            100.0 * o.allocator_reserve_fraction,
            g(e.peak_allocated),
            g(e.overhead)
        ),
        bytes: e.overhead,
    });
    out
}

/// One-sentence description of an activation category, for hover texts (in English:
/// [`category_help_in`] with [`Lang::En`]).
pub fn category_help(c: Cat) -> &'static str {
    category_help_in(c, Lang::En)
}

/// One-sentence description of an activation category in `lang`.
pub fn category_help_in(c: Cat, lang: Lang) -> &'static str {
    match c {
        Cat::AttentionScores => lang.pick(
            "eager attention keeps b·a·s² scores: the softmax output (fp32 in Llama), its half cast, dropout",
            "eager 注意力保留 b·a·s² 的分数：softmax 输出（Llama 中为 fp32）、其半精度副本、dropout",
        ),
        Cat::AttentionIo => lang.pick(
            "q, k, v copies and the attention output the kernels keep for backward",
            "内核为反向保留的 q、k、v 副本和注意力输出",
        ),
        Cat::Mlp => lang.pick(
            "MLP intermediates b·s·I: activation inputs/outputs, gate × up products, MoE routing",
            "MLP 中间结果 b·s·I：激活函数的输入/输出、gate × up 乘积、MoE 路由",
        ),
        Cat::Norms => lang.pick(
            "norm outputs kept by the next Linear, mean/rstd, RMSNorm's fp32 upcast",
            "下一个 Linear 保留的归一化输出、mean/rstd、RMSNorm 的 fp32 上转换",
        ),
        Cat::Residual => {
            lang.pick("residual-stream sums kept by the following norm", "后续归一化层保留的残差流之和")
        }
        Cat::DropoutMasks => {
            lang.pick("one byte per element for every dropout", "每个 dropout 每个元素 1 字节")
        }
        Cat::InputCasts => lang.pick(
            "autocast: each matmul keeps its own half copy of its input",
            "autocast：每次矩阵乘法各自保留其输入的半精度副本",
        ),
        Cat::WeightCasts => lang.pick(
            "autocast: each matmul keeps a half copy of its weight",
            "autocast：每次矩阵乘法保留其权重的半精度副本",
        ),
        Cat::Embeddings => {
            lang.pick("token/position ids and rotary tables", "token/位置 id 与旋转位置编码（rotary）表")
        }
        Cat::HeadLoss => lang.pick(
            "LM-head input, log-softmax over the vocabulary (fp32), labels",
            "LM head 的输入、词表上的 log-softmax（fp32）、标签",
        ),
        Cat::CheckpointInputs => {
            lang.pick("checkpointed blocks keep only their input", "设了检查点的块只保留其输入")
        }
        Cat::Adapters => lang
            .pick("LoRA adapters' fp32 input copies and A outputs", "LoRA 适配器的 fp32 输入副本和 A 的输出"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipeline_rank_is_explained_with_its_own_params_and_blocks() {
        let mut sc = Scenario::new(crate::model::preset::builtin("llama-3.1-8b").expect("preset"));
        sc.parallel.pp = 2;
        sc.checkpointing = Checkpointing::Full;
        let e = crate::estimate::estimate(&sc).expect("estimate");
        let x = explain(&sc, &e);
        let params = &x.iter().find(|x| x.component == Component::Parameters).expect("params").substituted;
        assert!(e.rank_params < e.n_params / 2 + e.n_params / 10, "{} of {}", e.rank_params, e.n_params);
        assert!(params.starts_with(&human_count(e.rank_params)), "{params}");
        assert!(params.contains(&format!("stage {} of 2", e.stage.index)), "{params}");
        assert!(params.contains(&format!("of the model's {}", human_count(e.n_params))), "{params}");
        let acts = &x.iter().find(|x| x.component == Component::Activations).expect("acts").substituted;
        assert!(acts.contains("16 checkpointed blocks (stage"), "{acts}");
        // unsplit: no rank wording
        sc.parallel.pp = 1;
        let e = crate::estimate::estimate(&sc).expect("estimate");
        let x = explain(&sc, &e);
        assert!(!x[0].substituted.contains("this rank"), "{}", x[0].substituted);
        assert!(x[3].substituted.contains("32 checkpointed blocks keep"), "{}", x[3].substituted);
    }

    #[test]
    fn fsdp_runs_explain_their_own_gradients_and_gathered_parameters() {
        let mut sc = Scenario::new(crate::model::preset::builtin("llama-2-7b").expect("preset"));
        sc.lora = Some("8:q,v".parse().expect("lora"));
        sc.parallel.dp = 2;
        sc.parallel.fsdp = Some(crate::estimate::FsdpMode::FullShard);
        sc.stack = crate::estimate::Framework::Litgpt.stack();
        sc.stack.grad_accum = 4;
        let e = crate::estimate::estimate(&sc).expect("estimate");
        let x = explain(&sc, &e);
        let find = |c: Component| x.iter().find(|x| x.component == c).expect("component").substituted.clone();
        let grads = find(Component::Gradients);
        assert!(grads.contains("frozen weights get gradients") && grads.contains("no_sync"), "{grads}");
        assert!(grads.contains(&g(e.gradients)), "{grads}");
        let params = find(Component::Parameters);
        assert!(params.contains("/ 2 GPUs (FSDP full_shard)") && params.contains("root unit"), "{params}");
        let gathered = Component::Parameters.at_peak(&e) - e.parameters;
        assert!(params.contains(&g(gathered)), "{params}");
        // and in Chinese
        let zh = explain_in(&sc, &e, Lang::ZhCn);
        assert!(zh.iter().take(2).all(|x| cjk(&x.substituted) && x.substituted.contains("FSDP1")), "{zh:?}");
    }

    fn cjk(s: &str) -> bool {
        s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }

    /// Every "12.34 GiB" / "5.6 MiB" figure of a text.
    fn sizes(s: &str) -> Vec<String> {
        let w: Vec<&str> = s.split(|c: char| c.is_whitespace() || "()（）：:，,=+×".contains(c)).collect();
        w.windows(2)
            .filter(|p| (p[1] == "GiB" || p[1] == "MiB") && p[0].contains('.') && p[0].parse::<f64>().is_ok())
            .map(|p| format!("{} {}", p[0], p[1]))
            .collect()
    }

    #[test]
    fn chinese_explanations_carry_the_same_numbers() {
        use crate::estimate::{Lora, Loss};
        let llama = || Scenario::new(crate::model::preset::builtin("llama-3.1-8b").expect("preset"));
        let mut cases = vec![llama()];
        let mut s = llama();
        s.parallel.pp = 2;
        s.parallel.dp = 4;
        s.parallel.zero = 1;
        s.checkpointing = Checkpointing::Full;
        cases.push(s);
        let mut s = llama();
        s.lora = Some("16".parse::<Lora>().expect("lora"));
        s.base_quant = crate::estimate::BaseQuant::Nf4NoDq;
        s.stack.loss = Loss::Chunked { chunks: 8 };
        s.checkpointing = Checkpointing::Every(2);
        cases.push(s);
        let mut s = llama();
        s.mode = Mode::Infer;
        s.new_tokens = 128;
        cases.push(s);
        let mut s = llama();
        s.optimizer = Optimizer::Adam;
        s.parallel.dp = 2;
        cases.push(s);
        for (i, sc) in cases.iter().enumerate() {
            // the flat reserve and the replayed allocator word the overhead differently
            let flat = crate::estimate::estimate(sc).expect("estimate");
            let (replayed, _) = crate::estimate::estimate_reserved(sc, None).expect("estimate");
            for e in [flat, replayed] {
                let en = explain(sc, &e);
                assert_eq!(en, explain_in(sc, &e, Lang::En));
                let zh = explain_in(sc, &e, Lang::ZhCn);
                assert_eq!(en.len(), zh.len());
                for (a, b) in en.iter().zip(&zh) {
                    assert_eq!((a.component, a.bytes), (b.component, b.bytes));
                    assert!(cjk(&b.formula), "case {i}: {}", b.formula);
                    // the substitutions with words (the others are numbers and symbols only)
                    let worded = [
                        Component::Parameters,
                        Component::Gradients,
                        Component::Activations,
                        Component::Temporaries,
                    ];
                    if worded.contains(&b.component) {
                        assert!(cjk(&b.substituted), "case {i}: {}", b.substituted);
                    }
                    let want = sizes(&a.substituted);
                    assert!(!want.is_empty(), "case {i}: {}", a.substituted);
                    assert_eq!(
                        want,
                        sizes(&b.substituted),
                        "case {i}: {} / {}",
                        a.substituted,
                        b.substituted
                    );
                }
            }
        }
        for c in Cat::ALL {
            assert_eq!(category_help(c), category_help_in(c, Lang::En));
            assert!(cjk(category_help_in(c, Lang::ZhCn)), "{c:?}");
        }
    }
}
