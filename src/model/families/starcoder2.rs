//! StarCoder2: pre-LayerNorm with bias, biased projections, GQA with rotary, a plain
//! `c_proj(gelu_tanh(c_fc(x)))` MLP, residual dropout.

use super::*;

const STYLE: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    sequential_block(g, m, flags, x, &STYLE)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, true);
    p.qkvo(m, m.qkv_bias, m.o_bias);
    mlp_params(p, h, m.intermediate_size, l, false, false, m.mlp_bias);
    p.norms(h, 2, l, true);
}
