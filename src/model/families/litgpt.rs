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

use super::*;
use crate::estimate::stack::ModelCode;

/// Does litgpt's code replace transformers' for this model?
pub(crate) fn runs(ctx: &Ctx, m: &TransformerSpec) -> bool {
    ctx.model_code.litgpt() && m.family == Family::Llama
}

/// litgpt's RMSNorm of that version.
pub(crate) fn norm(ctx: &Ctx) -> NormKind {
    if ctx.model_code == ModelCode::Litgpt2023 { NormKind::RmsNoUpcast } else { NormKind::RmsWeightFp32 }
}

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.t, ctx.ts, m.hidden_size);
    let n = ts * h;
    let kind = norm(ctx);
    let n1 = g.norm(x, ts, h, kind, "norm_1");
    let (qw, kw) = (m.q_width(), m.kv_width());
    let qkv = g.lora_qkv(n1, ts, h, [qw, kw, kw], "attn (fused qkv)");
    let (mut q, mut k) = (qkv, qkv);
    if flags & layer::NO_ROPE == 0 {
        let rot = rope_table_dim(m);
        q = g.rope(q, t * qw, rot, Shared::Rope);
        k = g.rope(k, t * kw, rot, Shared::Rope);
    }
    let o = g.attention(q, k, qkv, attn_of(ctx, m, flags));
    let a = g.linear(o, t, qw, h, LinearRole::O, Cat::AttentionIo, "proj");
    let x2 = g.add(x, a, n, Cat::Residual);
    let n2 = g.norm(x2, ts, h, kind, "norm_2");
    let f = mlp(g, m, flags, n2, &super::LLAMA);
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
