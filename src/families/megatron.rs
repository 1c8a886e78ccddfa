//! Megatron-LM GPT (the layer Korthikanti et al. 2022 account for): the GPT-2 block run with
//! Megatron's fused kernels — fused LayerNorm (fp32 statistics), a fused scale-mask-softmax that
//! keeps its half output, a fused GeLU that keeps only its input — with half activations under
//! mixed precision, and tensor / sequence parallelism through the sharded spec.

use super::gpt2::{GptLayout, gpt_block};
use super::params::classic_head_params;
use super::prelude::*;

/// Megatron-LM's GPT.
pub(super) struct Megatron;

impl FamilyDef for Megatron {
    fn id(&self) -> &'static str {
        "megatron"
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "ParallelTransformerLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::gpt2::gpt_params(p, m);
        classic_head_params(p, m, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        block(g, m, flags, x)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        embed(g, m)
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        head(g, m, x)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        None
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds {
            rope: Rope::None,
            gated: false,
            softmax: Softmax::Fused,
            half_residual: true,
            loss: LossKind::VocabParallel,
            inference: InferKind::HalfStream,
            qkv_one_adapter: true,
            final_norm: NormKind::LayerFp32Stats,
            ..OpKinds::DECODER
        }
    }
}

/// The GPT-2 layout with Megatron's fused LayerNorm (fp32 statistics) and fused GeLU (keeps
/// only its input); its LoRA adapter is q's.
const LAYOUT: GptLayout = GptLayout {
    norm: NormKind::LayerFp32Stats,
    act: Act::Gelu,
    adapter_any_qkv: false,
    names: [
        "input_layernorm",
        "query_key_value",
        "dense",
        "post_attention_layernorm",
        "dense_h_to_4h",
        "dense_4h_to_h",
    ],
};

fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    gpt_block(g, m, flags, x, &LAYOUT)
}

/// Token and position ids, embedding dropout.
fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    let ctx = g.ctx;
    let e = g.embedding(m.hidden_size);
    g.keep_new(ctx.seq * 8, Cat::Embeddings);
    g.dropout(e, ctx.rank_tokens * m.hidden_size, m.hidden_dropout)
}

/// Final fused LayerNorm (its output is the LM head's input), then the vocab-parallel
/// cross-entropy: fp32 softmax over the local vocabulary shard and the labels.
fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
    let ctx = g.ctx;
    let n = g.norm(x, ctx.rank_tokens, m.hidden_size, NormKind::LayerFp32Stats, "final_layernorm");
    g.keep(n);
    let before = g.kept.total();
    g.keep_new(ctx.tokens * classes(m) * 4 + ctx.tokens * 8, Cat::HeadLoss);
    g.kept.total() - before
}
