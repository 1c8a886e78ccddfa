//! Falcon: a fused `query_key_value` for multi-query (one K/V head) or grouped attention
//! (`new_decoder_architecture`), rotary, attention and MLP in parallel on one LayerNorm (two with
//! the new architecture), plain GELU MLP, no biases by default.

use super::gpt_neox::parallel_block;
use super::*;

const STYLE: Style = Style { norm: NormKind::Layer, fused_qkv: true, act: Act::Gelu, gated: false, ..LLAMA };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    parallel_block(g, m, flags, x, &STYLE)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, true);
    p.linear(m.q_width() + 2 * m.kv_width(), h, l, LinearRole::Q, m.qkv_bias);
    p.linear(h, m.q_width(), l, LinearRole::O, m.o_bias);
    mlp_params(p, h, m.intermediate_size, l, false, false, m.mlp_bias);
    p.norms(h, m.parallel_norms.max(1), l, true);
}
