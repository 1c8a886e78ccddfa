//! Llama and its kin (Mistral, Qwen2, Mixtral, Qwen2-MoE, Granite, SmolLM3, and the generic
//! decoder): `x + attn(rms(x))`, `x + mlp(rms(x))`, rotary, gated SiLU MLP or experts.
//! Granite's multipliers scale by Python floats (nothing kept); SmolLM3's NoPE layers skip the
//! rotary op (the `NO_ROPE` flag).

use super::*;

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    sequential_block(g, m, flags, x, &LLAMA)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    use LinearRole as R;
    let (h, l) = (m.hidden_size, m.num_layers);
    let (q, kv) = (m.q_width(), m.kv_width());
    p.ends(m, false);
    p.linear(q, h, l, R::Q, m.qkv_bias);
    p.linear(kv, h, l, R::K, m.qkv_bias);
    p.linear(kv, h, l, R::V, m.qkv_bias);
    p.linear(h, q, l, R::O, m.o_bias);
    let (dense, sparse) = dense_and_sparse_layers(m);
    match m.moe {
        // Mixtral keeps its historical per-expert listing (same elements as the fused tensors)
        Some(moe) if moe.router == crate::model::Router::Softmax && moe.shared_intermediate_size == 0 => {
            let i = m.intermediate_size;
            p.push(moe.experts, h, sparse, ParamKind::Router, Scope::Block, false);
            p.push(i, h, sparse * moe.experts, ParamKind::Linear(R::Gate), Scope::Block, true);
            p.push(i, h, sparse * moe.experts, ParamKind::Linear(R::Up), Scope::Block, true);
            p.push(h, i, sparse * moe.experts, ParamKind::Linear(R::Down), Scope::Block, true);
        }
        Some(_) => moe_params(p, m, sparse, false, false),
        None => {}
    }
    let di = if m.moe.is_some() && m.dense_intermediate_size > 0 {
        m.dense_intermediate_size
    } else {
        m.intermediate_size
    };
    mlp_params(p, h, di, dense, true, false, m.mlp_bias);
    p.norms(h, 2, l, false);
}
