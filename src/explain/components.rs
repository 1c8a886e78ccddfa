//! Each component's explanation, one function each ("Why this much?"): [`Subject`] holds what
//! they all read (the scenario, its estimate, the language) and the wording of a sharded state;
//! [`super::explain_in`] calls them in the stacked bar's order.

use super::{Component, Explanation, g};
use crate::estimate::{Checkpointing, Estimate, Mode, Optimizer, Phase, Scenario};
use crate::i18n::Lang;
use crate::text;

/// What every component's explanation reads: the scenario, its estimate and the language.
#[derive(Clone, Copy)]
pub(super) struct Subject<'a> {
    pub(super) sc: &'a Scenario,
    pub(super) e: &'a Estimate,
    pub(super) lang: Lang,
}

/// A count in a formula, never written with "B" (which the formulas keep for nothing: bytes are
/// "bytes"): "8.03 × 10⁹", "124.4 × 10⁶" in English; "80.3 亿", "1.244 亿", "1230 万" in
/// Chinese, the same digits as the CLI's "8.03 B", "124.4 M", "12.3 M".
pub(crate) fn count_in(n: u64, lang: Lang) -> String {
    let f = n as f64;
    match lang {
        Lang::En if f >= 1e9 => format!("{:.2} × 10⁹", f / 1e9),
        Lang::En if f >= 1e6 => format!("{:.1} × 10⁶", f / 1e6),
        Lang::En if f >= 1e3 => format!("{:.1} × 10³", f / 1e3),
        Lang::ZhCn if f >= 1e9 => format!("{:.1} 亿", f / 1e8),
        Lang::ZhCn if f >= 1e8 => format!("{:.3} 亿", f / 1e8),
        Lang::ZhCn if f >= 1e6 => format!("{:.0} 万", f / 1e4),
        Lang::ZhCn if f >= 1e4 => format!("{:.2} 万", f / 1e4),
        Lang::ZhCn if f >= 1e3 => format!("{:.1} 千", f / 1e3),
        _ => n.to_string(),
    }
}

/// A size in bytes in a formula: "2 bytes", "1 byte", "0.5 bytes"; "2 字节".
pub(crate) fn bytes_in(b: impl std::fmt::Display, lang: Lang) -> String {
    let b = b.to_string();
    match lang {
        Lang::En if b == "1" => "1 byte".into(),
        Lang::En => format!("{b} bytes"),
        Lang::ZhCn => format!("{b} 字节"),
    }
}

impl Subject<'_> {
    /// Bytes of one weight in the scenario's weight dtype.
    fn weight_bytes(&self) -> f64 {
        self.sc.precision.weight_dtype().bytes(8) as f64 / 8.0
    }

    /// " / N GPUs (scheme)" when the states from ZeRO stage `stage` up are sharded, else nothing.
    fn shard(&self, stage: u8) -> String {
        let Self { sc, lang, .. } = *self;
        let zero = sc.parallel.effective_zero();
        let ranks = sc.parallel.shard_degree();

        let scheme = match sc.parallel.fsdp {
            Some(m) => format!("FSDP {}", crate::flags::fsdp_name(m)),
            None => format!("ZeRO-{zero}"),
        };
        if ranks > 1 && zero >= stage {
            text!(lang, " / {ranks} GPUs ({scheme})", " / {ranks} 个 GPU（{scheme}）")
        } else {
            String::new()
        }
    }

    /// A split model: the rank holds its stage's blocks and its tensor / expert slice (empty when
    /// the rank holds the whole model).
    fn this_rank(&self) -> String {
        let Self { sc, e, lang } = *self;
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
                count_in(e.n_params, lang)
            )
        }
    }

    /// The parameters' substitution before its total: base and adapters, quantized or plain.
    fn parameters_substituted(&self) -> String {
        let Self { sc, e, lang } = *self;
        let p = sc.precision;
        let wb = self.weight_bytes();
        let shard = |stage: u8| self.shard(stage);
        let this_rank = self.this_rank();
        if let Some(t) = sc.model.traced() {
            return format!("{}{}", super::traced::params_text(t, lang), shard(3));
        }
        match (sc.lora, p.is_quantized()) {
            (Some(l), _) => text!(
                lang,
                "{} frozen base params{this_rank} ({} base) + LoRA r={} on {} in {}{}",
                "{}冻结的基座参数{this_rank}（{} 基座）+ LoRA r={}，作用于 {}，{}{}",
                count_in(e.rank_params, lang),
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
                "{}参数{this_rank}，{} 权重（+ 缩放因子），嵌入层和归一化层为 bf16",
                count_in(e.rank_params, lang),
                p
            ),
            (None, false) => text!(
                lang,
                "{} params{this_rank} × {} ({}){}",
                "{}参数{this_rank} × {}（{}）{}",
                count_in(e.rank_params, lang),
                bytes_in(wb, lang),
                p.weight_dtype().torch_name(),
                shard(3)
            ),
        }
    }

    /// ZeRO-3 / FSDP: the all-gathered blocks (and FSDP1's root unit) on top of the shard.
    fn gathered(&self) -> String {
        let Self { sc, e, lang } = *self;
        let zero = sc.parallel.effective_zero();
        let gathered = Component::Parameters.at_peak(e).saturating_sub(e.parameters);
        if zero >= 3 && gathered > 0 && sc.parallel.offload == crate::estimate::Offload::None {
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
        }
    }

    /// Model weights.
    pub(super) fn parameters(&self) -> Explanation {
        let Self { e, lang, .. } = *self;
        let params_sub = self.parameters_substituted();
        let gathered = self.gathered();
        Explanation {
            component: Component::Parameters,
            formula: lang.pick("N × bytes per weight", "N × 每个权重的字节数").into(),
            substituted: format!("{params_sub} = {}{gathered}", g(e.parameters)),
            bytes: Component::Parameters.at_peak(e),
        }
    }

    /// Bytes of one gradient: the adapters' dtype under LoRA, else the weights'.
    fn gradient_bytes(&self) -> f64 {
        let sc = self.sc;
        if sc.lora.is_some() {
            crate::estimate::states::adapter_dtype(sc).bytes(8) as f64 / 8.0
        } else {
            self.weight_bytes()
        }
    }

    /// Gradients (training).
    pub(super) fn gradients(&self) -> Explanation {
        let Self { sc, e, lang } = *self;
        let wb = self.weight_bytes();
        let gb = self.gradient_bytes();
        let dp = sc.parallel.dp;
        let zero = sc.parallel.effective_zero();
        let shard = |stage: u8| self.shard(stage);
        let frozen_too = crate::estimate::fsdp::block_weights_grad(sc);
        let unsharded = crate::estimate::fsdp::accumulates_unsharded(sc);
        let substituted = if frozen_too || unsharded {
            // FSDP1's own gradients: every block weight's (adapters in the blocks' flat
            // parameters), unsharded while no_sync accumulates
            let what = if frozen_too {
                text!(
                    lang,
                    "every block weight × {} + LoRA's {} (the adapters share each block's FSDP1 flat parameter, so the frozen weights get gradients too)",
                    "每个块的全部权重 × {} + LoRA 的 {}（适配器与每个块共用 FSDP1 扁平参数，冻结的权重也会得到梯度）",
                    bytes_in(wb, lang),
                    count_in(e.trainable_params, lang)
                )
            } else {
                format!("{} × {}", count_in(e.trainable_params, lang), bytes_in(gb, lang))
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
                "{} × {}{}{} = {} (alive at the peak: {})",
                "{} × {}{}{} = {}（峰值时驻留：{}）",
                count_in(e.trainable_params, lang),
                bytes_in(gb, lang),
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
        Explanation {
            component: Component::Gradients,
            formula: lang
                .pick("trainable params × bytes per gradient", "可训练参数 × 每个梯度的字节数")
                .into(),
            substituted,
            bytes: Component::Gradients.at_peak(e),
        }
    }

    /// Optimizer states (training).
    pub(super) fn optimizer_states(&self) -> Explanation {
        let Self { sc, e, lang } = *self;
        let gb = self.gradient_bytes();
        let shard = |stage: u8| self.shard(stage);
        let (formula, per) = match sc.optimizer {
            Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwFused | Optimizer::AdamwLoop => (
                lang.pick("2 moments × trainable × bytes", "2 个矩估计 × 可训练参数 × 字节数"),
                format!("2 × {}", bytes_in(gb, lang)),
            ),
            Optimizer::Adamw8bit => (
                lang.pick("2 × (1 byte + 4 bytes / 2048) per trainable param", "每个可训练参数 2 × (1 字节 + 4 字节 / 2048)"),
                format!("≈{}", bytes_in(2, lang)),
            ),
            Optimizer::PagedAdamw8bit => (
                lang.pick(
                    "2 × (1 byte + 4 bytes / 2048) per trainable param, in unified memory (not in the allocator's peak)",
                    "每个可训练参数 2 × (1 字节 + 4 字节 / 2048)，位于统一内存（不计入分配器的峰值）",
                ),
                format!("≈{}", bytes_in(2, lang)),
            ),
            Optimizer::PagedAdamw32bit => (
                lang.pick(
                    "2 fp32 moments per trainable param, in unified memory (not in the allocator's peak)",
                    "每个可训练参数 2 个 fp32 矩估计，位于统一内存（不计入分配器的峰值）",
                ),
                bytes_in(8, lang),
            ),
            Optimizer::Adafactor => (
                lang.pick("rows + cols per matrix (factored second moment)", "每个矩阵 行 + 列（分解的二阶矩）"),
                "≈0".into(),
            ),
            Optimizer::SgdMomentum => (
                lang.pick("1 momentum buffer × trainable × bytes", "1 个动量缓冲区 × 可训练参数 × 字节数"),
                bytes_in(gb, lang),
            ),
            Optimizer::Sgd | Optimizer::None => (lang.pick("no state", "无状态"), bytes_in(0, lang)),
        };
        Explanation {
            component: Component::OptimizerStates,
            formula: formula.into(),
            substituted: format!(
                "{} {} × {per}{} = {}{}",
                sc.optimizer.name(),
                count_in(e.trainable_params, lang),
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
        }
    }

    /// Saved activations (training).
    pub(super) fn activations(&self) -> Explanation {
        let Self { sc, e, lang } = *self;
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
            // a traced model: what the trace recorded
            _ if let Some(t) = sc.model.traced() => text!(
                lang,
                "the traced step ({0}) keeps what autograd saved for backward and the inputs, replayed from {1} recorded events{2}",
                "追踪的训练步（{0}）保留 autograd 为反向保存的张量和输入，由 {1} 个记录的事件回放得出{2}",
                t.model_file,
                t.events.len(),
                super::traced::modules_text(sc, lang)
            ),
            // a convolutional network: its ops, one by one
            _ if let Some(n) = sc.model.net() => text!(
                lang,
                "the {1} ops of the {0} network keep what backward needs ({2}), the images and labels included",
                "{0} 网络的 {1} 个算子保留反向所需的张量（{2}），含输入图像与标签",
                n.family_id(),
                crate::families::build_net(
                    n,
                    crate::engine::ops::net::NetCtx { batch: 1, elem: 2 },
                    sc.image.unwrap_or(n.image)
                )
                .nodes
                .len(),
                if matches!(n.kind, crate::model::net::NetKind::Swin(_)) {
                    text!(
                        lang,
                        "attention q/k/v and outputs, MLP intermediates, norm statistics",
                        "注意力 q/k/v 与输出、MLP 中间结果、归一化统计量"
                    )
                } else {
                    text!(
                        lang,
                        "feature maps, norm statistics, pooling indices",
                        "特征图、归一化统计量、池化索引"
                    )
                }
            ),
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
            other => format!("{}{of_stage}", other.phrase_in(lang)),
        };
        Explanation {
            component: Component::Activations,
            formula: lang
                .pick(
                    "sum over ops of the tensors each backward needs (per block × L + head/loss)",
                    "各算子反向所需张量之和（每块 × L + head/损失）",
                )
                .into(),
            substituted: text!(
                lang,
                "b={} × {}: {ckpt} = {} ({} still alive at the peak)",
                "b={} × {}：{ckpt} = {}（峰值时仍驻留 {}）",
                sc.batch,
                // a convolutional network's sample is an image, not a sequence
                match sc.model.traced() {
                    Some(_) => crate::report::shape_text(sc),
                    None => sc
                        .image_size()
                        .filter(|_| sc.model.net().is_some())
                        .map_or(format!("s={}", sc.seq), |i| i.to_string()),
                },
                g(e.activations),
                g(Component::Activations.at_peak(e))
            ),
            bytes: Component::Activations.at_peak(e),
        }
    }

    /// The KV cache of an inference run, if it has one.
    pub(super) fn kv_cache(&self) -> Option<Explanation> {
        let Self { sc, e, lang } = *self;
        let p = sc.precision;
        let t = sc.model.transformer()?;
        if sc.mode != Mode::Infer || e.kv_cache == 0 {
            return None;
        }
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
        Some(Explanation {
            component: Component::KvCache,
            formula: formula.into(),
            substituted: format!(
                "2 × {} × {} × {} × {} × {} × {} = {}",
                kv_layers,
                sc.batch,
                tokens,
                t.num_kv_heads,
                t.head_dim,
                bytes_in(kvb, lang),
                g(e.kv_cache)
            ),
            bytes: e.kv_cache,
        })
    }

    /// The short-lived tensors of the op running at the peak.
    pub(super) fn temporaries(&self) -> Explanation {
        let Self { sc, e, lang } = *self;
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
                // transformers' causal-LM loss upcasts the logits, as autocast does for
                // `cross_entropy`; an encoder's head runs it on the logits as they are
                Loss::Hf if !sc.precision.is_amp() && !upcast_loss(sc) => lang.pick(
                    "log-softmax backward: two (b·s × vocab) gradients in the logits' dtype",
                    "log-softmax 反向：两个 (b·s × vocab) 的梯度（logits 的 dtype）",
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
        (Phase::Backward, _) if sc.model.traced().is_some() => text!(
            lang,
            "{what}: the gradient buffers and transients the recorded backward has alive there",
            "{what}：记录的反向过程此刻驻留的梯度缓冲区与临时张量"
        ),
        (Phase::Backward, _) if sc.model.net().is_some() => text!(
            lang,
            "{what}: the gradients of its output and inputs, and of the tensors whose backward is still to come",
            "{what}：其输出与输入的梯度，以及尚待反向的张量的梯度"
        ),
        (Phase::Backward, _) => {
            text!(lang, "{what}: gradients of the block's widest tensors", "{what}：该块最宽张量的梯度")
        }
        (Phase::Forward, _) => {
            text!(lang, "{what}: the largest short-lived tensors", "{what}：最大的临时张量")
        }
    };
        Explanation {
            component: Component::Temporaries,
            formula: lang
                .pick("short-lived tensors of the op running at the peak", "峰值时正在运行的算子的临时张量")
                .into(),
            substituted: format!("{temp} = {}", g(e.peak.alive.temporaries)),
            bytes: e.peak.alive.temporaries,
        }
    }

    /// DeepSpeed ZeRO's gradient-reduction buckets (`estimate::deepspeed`), when it runs.
    pub(super) fn zero_buckets(&self) -> Option<Explanation> {
        let Self { sc, e, lang } = *self;
        let cfg = crate::estimate::deepspeed::config(sc)?;
        let (one, _, _) = crate::estimate::deepspeed::buckets(sc);
        if e.zero_buckets == 0 {
            return None;
        }
        let n = e.zero_buckets / one.max(1);
        let formula = if cfg.stage >= 3 {
            lang.pick(
                "ZeRO-3: one reduce bucket of reduce_bucket_size elements in the communication dtype, kept all run",
                "ZeRO-3：一个 reduce_bucket_size 个元素的归约桶（通信 dtype），整个运行期间保留",
            )
        } else {
            lang.pick(
                "ZeRO-1/2: reduce_bucket_size elements in the parameters' dtype, twice with overlap_comm, during the backward",
                "ZeRO-1/2：reduce_bucket_size 个元素（参数 dtype），overlap_comm 时两份，仅在反向期间",
            )
        };
        Some(Explanation {
            component: Component::ZeroBuckets,
            formula: formula.into(),
            substituted: format!(
                "{n} × {} × {} = {}",
                crate::units::digits(cfg.reduce_bucket_size),
                bytes_in(sc.precision.weight_dtype().bytes(8) / 8, lang),
                g(e.zero_buckets)
            ),
            bytes: e.peak.alive.zero_buckets,
        })
    }

    /// CUDA context, workspaces, NCCL and the allocator's cache: replayed when the estimate was,
    /// else the flat reserve.
    pub(super) fn overhead(&self) -> Explanation {
        let Self { sc, e, lang } = *self;
        let o = sc.overhead;
        if let Some(r) = e.reserved {
            let x = crate::estimate::context::outside(sc);
            return Explanation {
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
            };
        }
        Explanation {
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
        }
    }
}

/// Does the model's loss run on an fp32 copy of the logits (transformers' causal-LM loss)?
fn upcast_loss(sc: &crate::estimate::Scenario) -> bool {
    sc.model
        .transformer()
        .is_none_or(|t| crate::families::ops(t).loss == crate::engine::ops::LossKind::CausalLm)
}
