//! litgpt's own implementation of Llama-like models (`litgpt/model.py`, `litgpt/lora.py`), run
//! by `--model-code litgpt` (the litgpt framework preset): the same architecture as
//! transformers' Llama, other tensors kept.
//!
//! * `CausalSelfAttention`: one fused `attn` Linear; q and k are reshaped copies rotated and
//!   concatenated (new storages), v stays a view of the fused output, so SDPA keeping `v` keeps
//!   the whole qkv storage.
//! * `LoRAQKVLinear`: one adapter over the fused projection (`Graph::lora_qkv`).
//! * `RMSNorm`: `x.float()`, `x * rsqrt(mean(x * x))`, `(x_normed * weight.float()).to(dtype)`
//!   (the fp32 product, as OLMo 2's); before Oct 2023 in the input dtype throughout.
//! * `LLaMAMLP`: `fc_1`, `fc_2`, `silu(fc_1) * fc_2`, `proj` — transformers' gated MLP.
//! * Phi-1.5/2 and GPT-NeoX (StableLM-Alpha, Pythia): LayerNorm, the same fused `attn` with
//!   rotary on the first `rope_n_elem` of each head, `x + attn(norm_1(x)) + mlp(n_2)` with one
//!   shared norm (Phi) or a second `norm_2(x)` (NeoX), `GptNeoxMLP`'s one GELU kernel where
//!   transformers' Phi writes `gelu_new` out in ops.

use super::prelude::*;
use crate::engine::inputs::{Ctx, ModelCode};

/// Does litgpt's code replace transformers' for this family? (Its `GPT` covers the Llama-like
/// models, Phi-1.5/2 and the GPT-NeoX ones: StableLM-Alpha, Pythia; a family says so with
/// [`FamilyDef::litgpt`].)
pub(super) fn runs(ctx: &Ctx, shape: Option<Litgpt>) -> bool {
    ctx.model_code.litgpt() && shape.is_some()
}

/// litgpt's `GptNeoxMLP`: `fc`, `gelu(approximate=...)` (one kernel: keeps its input), `proj`.
const NEOX_MLP: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };

/// litgpt's RMSNorm of that version.
pub(super) fn norm(ctx: &Ctx) -> NormKind {
    if ctx.model_code == ModelCode::Litgpt2023 { NormKind::RmsNoUpcast } else { NormKind::RmsWeightFp32 }
}

/// litgpt's `Block` of the given shape.
pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor, shape: Litgpt) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    let n = ts * h;
    let llama = shape == Litgpt::Llama;
    let kind = if llama { norm(ctx) } else { NormKind::Layer };
    let n1 = g.norm(x, ts, h, kind, "norm_1");
    let (qw, kw) = (m.q_width(), m.kv_width());
    let qkv = g.lora_qkv(n1, ts, h, [qw, kw, kw], "attn (fused qkv)");
    let (mut q, mut k) = (qkv, qkv);
    if flags & layer::NO_ROPE == 0 {
        let rot = super::rope_table_dim(m);
        q = g.rope(q, t * qw, rot, Shared::Rope);
        k = g.rope(k, t * kw, rot, Shared::Rope);
    }
    let o = g.attention(q, k, qkv, attn_of(ctx, m, flags));
    let a = g.linear(o, t, qw, h, LinearRole::O, Cat::AttentionIo, "proj");
    if m.parallel_norms > 0 {
        // `parallel_residual`: `x + h + mlp(n_2)`, `n_2` the attention's norm output when
        // `shared_attention_norm` (Phi), else `norm_2(x)` (GPT-NeoX)
        let n2 = if m.parallel_norms == 1 { n1 } else { g.norm(x, ts, h, kind, "norm_2") };
        let f = dense_mlp(g, n2, t, ts, h, m.intermediate_size, &NEOX_MLP);
        let s = g.add(x, a, n, Cat::Residual);
        return g.add(s, f, n, Cat::Residual);
    }
    let x2 = g.add(x, a, n, Cat::Residual);
    let n2 = g.norm(x2, ts, h, kind, "norm_2");
    let f = if llama {
        mlp(g, m, flags, n2, &LLAMA)
    } else {
        dense_mlp(g, n2, t, ts, h, m.intermediate_size, &NEOX_MLP)
    };
    g.add(x2, f, n, Cat::Residual)
}

#[cfg(test)]
mod tests {
    use crate::engine::walk::block_ops;
    use crate::estimate::activations::Ctx;
    use crate::estimate::stack::{Framework, ModelCode, Torch};
    use crate::estimate::{Lora, Scenario};
    use crate::units::Precision;

    /// What one Llama-2-7B block keeps in litgpt's LoRA fine-tuning (r 8 on q and v, dropout
    /// 0.05, bf16-true, one 1304-token sample), measured by running litgpt 8641822's model and
    /// LoRA code under autograd's saved-tensor hooks (fake tensors, flash attention and CUDA's
    /// dropout dispatched as on an A100) with PyTorch 2.1.0 and 2.15: per token 176,804 bytes and
    /// 160,420 bytes (2.1 keeps each norm's `x * x` for `mean`), plus `zero_pad`'s int64 index
    /// (8,192 entries) once per block.
    #[test]
    fn a_litgpt_llama_block_keeps_what_its_code_keeps() {
        let l = crate::model::preset::load("llama-2-7b").unwrap_or_else(|e| panic!("{e}"));
        let mut sc = Scenario::new(l.model);
        sc.seq = 1304;
        sc.precision = Precision::Bf16;
        let mut lora: Lora = "8:q,v".parse().unwrap_or_else(|e| panic!("{e}"));
        lora.dropout = 0.05;
        sc.lora = Some(lora);
        sc.stack = Framework::Litgpt.stack();
        sc.stack.model_code = ModelCode::Litgpt2023;
        let m = sc.model.transformer().cloned().unwrap_or_else(|| panic!("a transformer"));
        let kept =
            |sc: &Scenario| -> u64 { block_ops(&Ctx::new(sc), &m, 0).iter().map(|o| o.kept_bytes).sum() };
        // per token (one more token's difference), and what does not grow with the tokens: the
        // index and flash attention's few bytes of RNG state
        let split = |sc: &mut Scenario| {
            sc.seq = 1303;
            let less = kept(sc);
            sc.seq = 1304;
            let all = kept(sc);
            (all - less, all - 1304 * (all - less))
        };
        let (per_token, fixed) = split(&mut sc);
        assert_eq!(per_token, 160_420);
        assert!((8 * 8192..8 * 8192 + 64).contains(&fixed), "{fixed}");
        sc.stack.torch = Torch::Before2_2;
        assert_eq!(split(&mut sc).0, 176_804);
        // transformers' Llama keeps other tensors for the same run
        sc.stack.model_code = ModelCode::Hf;
        assert_ne!(split(&mut sc).0, 176_804);
    }
}
