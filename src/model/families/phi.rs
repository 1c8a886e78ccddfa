//! Phi-1 / 1.5 / 2 (`PhiForCausalLM`): one LayerNorm feeds attention and the MLP in parallel,
//! `x + resid_dropout(attn(ln(x))) + resid_dropout(mlp(ln(x)))`; biased `q_proj`, `k_proj`,
//! `v_proj` and `dense`; rotary on the first `partial_rotary_factor` of each head (q and k are
//! concatenated back into new storages); an optional LayerNorm on each head of q and k
//! (`qk_layernorm`); `fc1`, `gelu_new` written out in ops, `fc2`; a biased `lm_head`.

use super::gpt_neox::parallel_block;
use super::*;

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let st = Style {
        norm: NormKind::Layer,
        qk_norm: if m.qk_layernorm { QkNorm::PerHead } else { QkNorm::None },
        act: if m.gelu_new { Act::GeluNew } else { Act::Gelu },
        gated: false,
        ..LLAMA
    };
    parallel_block(g, m, flags, x, &st)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, true);
    if m.head == Head::CausalLm {
        p.push(m.vocab_size, 1, 1, ParamKind::Vector, Scope::Output, true); // lm_head.bias
    }
    p.qkvo(m, true, true);
    mlp_params(p, h, m.intermediate_size, l, false, false, true);
    p.norms(h, 1, l, true);
    if m.qk_layernorm {
        p.norms(m.head_dim, 2, l, true);
    }
}
