//! Phi-1 / 1.5 / 2 (`PhiForCausalLM`): one LayerNorm feeds attention and the MLP in parallel,
//! `x + resid_dropout(attn(ln(x))) + resid_dropout(mlp(ln(x)))`; biased `q_proj`, `k_proj`,
//! `v_proj` and `dense`; rotary on the first `partial_rotary_factor` of each head (q and k are
//! concatenated back into new storages); an optional LayerNorm on each head of q and k
//! (`qk_layernorm`); `fc1`, `gelu_new` written out in ops, `fc2`; a biased `lm_head`.

use super::*;

const STYLE: Style = Style { norm: NormKind::Layer, ..LLAMA };
const QK_LN: Style = Style { qk_norm: QkNorm::PerHead, ..STYLE };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let ctx = g.ctx;
    let (t, ts, h, i) = (ctx.t, ctx.ts, m.hidden_size, m.intermediate_size);
    let n = ts * h;
    let a_in = g.norm(x, ts, h, NormKind::Layer, "input_layernorm");
    let a = attention(g, m, flags, a_in, if m.qk_layernorm { &QK_LN } else { &STYLE });
    let a = g.dropout(a, n, m.hidden_dropout);
    let up = g.linear(a_in, ts, h, i, LinearRole::Up, Cat::Mlp, "fc1");
    let act = if m.gelu_new { g.gelu_new(up, t * i) } else { g.act(up, t * i, Act::Gelu) };
    let f = g.linear(act, t, i, h, LinearRole::Down, Cat::Mlp, "fc2");
    let f = g.dropout(f, n, m.hidden_dropout);
    let s = g.add(a, f, n, Cat::Residual);
    g.add(s, x, n, Cat::Residual)
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
