//! Llama and its kin (Mistral, Qwen2, Mixtral, Qwen2-MoE, Granite, SmolLM3, and the generic
//! decoder): `x + attn(rms(x))`, `x + mlp(rms(x))`, rotary, gated SiLU MLP or experts.
//! Granite's multipliers scale by Python floats (nothing kept); SmolLM3's NoPE layers skip the
//! rotary op (the `NO_ROPE` flag).

use super::*;

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    sequential_block(g, m, flags, x, &LLAMA)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.qkvo(m, m.qkv_bias, m.o_bias);
    let (dense, sparse) = dense_and_sparse_layers(m);
    // routed experts are fused 3-D tensors in transformers 5 (Mixtral included)
    moe_params(p, m, sparse, false, false);
    let di = dense_width(m);
    mlp_params(p, h, di, dense, true, false, m.mlp_bias);
    p.norms(h, 2, l, false);
}
