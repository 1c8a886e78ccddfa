//! gpt-oss: Llama-like pre-norm block with biased projections, learned attention sinks (an
//! extra logit column per head in eager attention), alternating sliding-window and full layers,
//! and an MoE MLP (router with a bias, top-k then softmax, experts with biases).

use super::*;

/// gpt-oss's RMSNorm multiplies the weight in fp32 before casting back (like OLMo 2's).
const STYLE: Style = Style { norm: NormKind::RmsWeightFp32, ..LLAMA };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    sequential_block(g, m, flags, x, &STYLE)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.qkvo(m, true, true);
    p.push(m.num_heads, 1, l, ParamKind::Vector, Scope::Block, true); // sinks
    moe_params(p, m, l, true, true);
    p.norms(h, 2, l, false);
}
