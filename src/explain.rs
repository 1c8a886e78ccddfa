//! "Why this much?": each component of an estimate with its formula and the current numbers
//! substituted, for the GUI's hover texts, the "Why" panel and reports.

use crate::estimate::{Cat, Checkpointing, Estimate, Mode, Optimizer, Phase, Scenario};
use crate::report::human_count;
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

/// Explains every component of `e`.
pub fn explain(sc: &Scenario, e: &Estimate) -> Vec<Explanation> {
    let p = sc.precision;
    let wb = p.weight_dtype().bytes(8) as f64 / 8.0;
    let dp = sc.parallel.dp;
    let zero = sc.parallel.zero;
    let shard = |stage: u8| {
        if dp > 1 && zero >= stage { format!(" / {dp} GPUs (ZeRO-{zero})") } else { String::new() }
    };
    let mut out = Vec::with_capacity(7);
    // a split model: the rank holds its stage's blocks and its tensor / expert slice
    let this_rank = {
        let q = &sc.parallel;
        let mut parts = Vec::new();
        if q.pp > 1 {
            parts.push(format!("stage {} of {}", e.stage.index, q.pp));
        }
        if q.tp > 1 {
            parts.push(format!("1/{} tensor slice", q.tp));
        }
        if q.ep > 1 && sc.model.transformer().is_some_and(|t| t.moe.is_some()) {
            parts.push(format!("1/{} of the experts", q.ep));
        }
        if parts.is_empty() || e.rank_params == e.n_params {
            String::new()
        } else {
            format!(" (this rank: {}, of the model's {})", parts.join(", "), human_count(e.n_params))
        }
    };
    let params_sub = match (sc.lora, p.is_quantized()) {
        (Some(l), _) => format!(
            "{} frozen base params{this_rank} ({} base) + LoRA r={} on {} in fp32{}",
            human_count(e.rank_params),
            match sc.base_quant {
                crate::estimate::BaseQuant::None => sc.precision.weight_dtype().name(),
                crate::estimate::BaseQuant::Nf4 => "NF4",
                crate::estimate::BaseQuant::Nf4NoDq => "NF4, no double quantization",
                crate::estimate::BaseQuant::Int8 => "int8",
            },
            l.rank,
            l.targets.names(),
            shard(3)
        ),
        (None, true) => format!(
            "{} params{this_rank}, {} weights (+ scales), embeddings and norms in bf16",
            human_count(e.rank_params),
            p
        ),
        (None, false) => format!(
            "{} params{this_rank} × {wb} B ({}){}",
            human_count(e.rank_params),
            p.weight_dtype().torch_name(),
            shard(3)
        ),
    };
    out.push(Explanation {
        component: Component::Parameters,
        formula: "N × bytes per weight".into(),
        substituted: format!("{params_sub} = {}", g(e.parameters)),
        bytes: Component::Parameters.at_peak(e),
    });
    if sc.mode == Mode::Train {
        let gb = if sc.lora.is_some() { 4.0 } else { wb };
        out.push(Explanation {
            component: Component::Gradients,
            formula: "trainable params × bytes per gradient".into(),
            substituted: format!(
                "{} × {gb} B{}{} = {} (alive at the peak: {})",
                human_count(e.trainable_params),
                shard(2),
                if dp > 1 && zero == 0 { " + DDP bucket copy" } else { "" },
                g(e.gradients),
                g(Component::Gradients.at_peak(e))
            ),
            bytes: Component::Gradients.at_peak(e),
        });
        let (formula, per) = match sc.optimizer {
            Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwFused | Optimizer::AdamwLoop => {
                ("2 moments × trainable × bytes", format!("2 × {gb} B"))
            }
            Optimizer::Adamw8bit => ("2 × (1 B + 4 B / 2048) per trainable param", "≈2 B".into()),
            Optimizer::PagedAdamw8bit => (
                "2 × (1 B + 4 B / 2048) per trainable param, in unified memory (not in the allocator's peak)",
                "≈2 B".into(),
            ),
            Optimizer::PagedAdamw32bit => (
                "2 fp32 moments per trainable param, in unified memory (not in the allocator's peak)",
                "8 B".into(),
            ),
            Optimizer::Adafactor => ("rows + cols per matrix (factored second moment)", "≈0".into()),
            Optimizer::SgdMomentum => ("1 momentum buffer × trainable × bytes", format!("{gb} B")),
            Optimizer::Sgd | Optimizer::None => ("no state", "0 B".into()),
        };
        out.push(Explanation {
            component: Component::OptimizerStates,
            formula: formula.into(),
            substituted: format!(
                "{} {} × {per}{} = {}",
                sc.optimizer.name(),
                human_count(e.trainable_params),
                shard(1),
                g(e.optimizer_states)
            ),
            bytes: Component::OptimizerStates.at_peak(e),
        });
        // the blocks of this rank's pipeline stage
        let layers = sc.model.transformer().map_or(0, |_| e.stage.blocks);
        let of_stage = if e.stage.stages > 1 {
            let n = e.stage.in_flight;
            let mb = if n == 1.0 { "micro-batch" } else { "micro-batches" };
            format!(" (stage {} of {}, {n} {mb} in flight)", e.stage.index, e.stage.stages)
        } else {
            String::new()
        };
        let ckpt = match sc.checkpointing {
            Checkpointing::None => format!("{layers} blocks{of_stage} keep what backward needs"),
            Checkpointing::Full => format!("{layers} checkpointed blocks{of_stage} keep only their input"),
            other => format!("checkpointing {other}{of_stage}"),
        };
        out.push(Explanation {
            component: Component::Activations,
            formula: "sum over ops of the tensors each backward needs (per block × L + head/loss)".into(),
            substituted: format!(
                "b={} × s={}: {ckpt} = {} ({} still alive at the peak)",
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
                    "2 (K,V) × L × b × (prompt + new − 1) × kv_heads × head_dim × bytes (sliding layers: their window)"
                } else {
                    "2 (K,V) × L × b × (prompt + new − 1) × kv_heads × head_dim × bytes"
                },
            ),
            None => (sc.seq, "2 (K,V) × L × b × s × kv_heads × head_dim × bytes"),
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
    let temp = match (e.peak.phase, sc.optimizer) {
        (Phase::OptimizerStep, Optimizer::Adamw | Optimizer::Adam) => {
            "foreach AdamW: sqrt(exp_avg_sq) is one parameter-sized temporary (adamw-fused avoids it)"
                .to_string()
        }
        (Phase::OptimizerStep, _) => "the optimizer's per-step temporaries".to_string(),
        (Phase::Backward, _) if e.peak.what.contains("loss") => {
            use crate::estimate::Loss;
            match sc.stack.loss {
                Loss::FusedLinearCe => {
                    "fused linear cross-entropy: the input's gradient was computed in the forward"
                }
                _ if sc.stack.compiled_loss => {
                    "compiled cross-entropy backward: one piece's logits gradient in the compute dtype"
                }
                Loss::Hf => "log-softmax backward: two (b·s × vocab) fp32 gradients",
                Loss::Chunked { .. } => {
                    "chunk by chunk: one chunk's fp32 nll and log-softmax gradients and the cast back"
                }
                Loss::ChunkedNative { .. } => {
                    "chunk by chunk: one chunk's two gradients in the compute dtype"
                }
            }
            .to_string()
        }
        (Phase::Backward, _) => format!("{}: gradients of the block's widest tensors", e.peak.what),
        (Phase::Forward, _) => format!("{}: the largest short-lived tensors", e.peak.what),
    };
    out.push(Explanation {
        component: Component::Temporaries,
        formula: "short-lived tensors of the op running at the peak".into(),
        substituted: format!("{temp} = {}", g(e.peak.alive.temporaries)),
        bytes: e.peak.alive.temporaries,
    });
    let o = sc.overhead;
    if let Some(r) = e.reserved {
        let x = crate::estimate::context::outside(sc);
        out.push(Explanation {
            component: Component::Overhead,
            formula: format!(
                "CUDA context ({} module loading) + NCCL buffers + allocator cache (replayed max_memory_reserved − peak allocated, at least the cuBLAS workspace)",
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
        formula: "CUDA context + cuBLAS workspace + allocator reserve × peak".into(),
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

/// One-sentence description of an activation category, for hover texts.
pub fn category_help(c: Cat) -> &'static str {
    match c {
        Cat::AttentionScores => {
            "eager attention keeps b·a·s² scores: the softmax output (fp32 in Llama), its half cast, dropout"
        }
        Cat::AttentionIo => "q, k, v copies and the attention output the kernels keep for backward",
        Cat::Mlp => "MLP intermediates b·s·I: activation inputs/outputs, gate × up products, MoE routing",
        Cat::Norms => "norm outputs kept by the next Linear, mean/rstd, RMSNorm's fp32 upcast",
        Cat::Residual => "residual-stream sums kept by the following norm",
        Cat::DropoutMasks => "one byte per element for every dropout",
        Cat::InputCasts => "autocast: each matmul keeps its own half copy of its input",
        Cat::WeightCasts => "autocast: each matmul keeps a half copy of its weight",
        Cat::Embeddings => "token/position ids and rotary tables",
        Cat::HeadLoss => "LM-head input, log-softmax over the vocabulary (fp32), labels",
        Cat::CheckpointInputs => "checkpointed blocks keep only their input",
        Cat::Adapters => "LoRA adapters' fp32 input copies and A outputs",
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
}
