//! Phi-3: Llama with fused `qkv_proj` (q, k and v are views of one storage, so flash attention's
//! saved v keeps the whole projection) and fused `gate_up_proj`; residual dropout.

use super::*;

const STYLE: Style = Style { fused_qkv: true, fused_gate_up: true, ..LLAMA };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    sequential_block(g, m, flags, x, &STYLE)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.linear(m.q_width() + 2 * m.kv_width(), h, l, LinearRole::Q, false);
    p.linear(h, m.q_width(), l, LinearRole::O, false);
    mlp_params(p, h, m.intermediate_size, l, true, true, false);
    p.norms(h, 2, l, false);
}
