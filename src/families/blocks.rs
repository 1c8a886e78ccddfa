//! The pieces Llama-like blocks share: a [`Style`] (how a block differs from Llama's), the
//! sequential block (pre-norm, sandwich or post-norm), the attention with its projections, norms
//! and rotary, and the MLP (dense or experts).

use super::{OpKinds, attn_with, dense_width, ops, rope_cols};
use crate::engine::inputs::saved::Cat;
use crate::engine::ops::{Act, Graph, MoeOp, NormKind, Renorm, Routing, Shared, Tensor};
use crate::model::{LinearRole, Router, TransformerSpec, layer};

/// How a Llama-like block differs from Llama's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    /// Norm kind of every norm in the block.
    pub norm: NormKind,
    /// Norm on q and k: per head (Qwen3, Gemma 3) or over the whole projection (OLMo 2).
    pub qk_norm: QkNorm,
    /// Where the block's norms sit.
    pub placement: Placement,
    /// q, k and v come from one fused projection (views of one storage).
    pub fused_qkv: bool,
    /// gate and up come from one fused projection.
    pub fused_gate_up: bool,
    /// MLP activation.
    pub act: Act,
    /// Gated MLP (`act(gate) * up`) or plain (`act(fc)`).
    pub gated: bool,
    /// Rotary keeps its cos/sin in fp32 whatever the stream dtype (OLMo 2).
    pub rope_fp32: bool,
    /// Sliding-window layers rotate with a table of their own base (Gemma 3).
    pub local_rope: bool,
    /// Position ids per sequence (multimodal rotary): `(b, s, rot)` cos/sin tables.
    pub rope_per_sequence: bool,
    /// The cos/sin tables are rebuilt in each attention call (GLM's and ERNIE's interleaved
    /// rotary; ERNIE's in fp32 with `rope_fp32`).
    pub rope_rebuilt: bool,
    /// q_proj makes a gate beside q, and the attention's output is multiplied by its sigmoid
    /// before o_proj (Qwen3-Next's gated attention).
    pub output_gate: bool,
}

impl Style {
    /// The op kinds of a decoder built from this style (the rest as Llama's).
    pub(crate) const fn kinds(&self) -> OpKinds {
        OpKinds {
            gated: self.gated,
            act: self.act,
            fused_gate_up: self.fused_gate_up,
            final_norm: self.norm,
            ..OpKinds::DECODER
        }
    }
}

/// q/k normalisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QkNorm {
    None,
    PerHead,
    /// Per head, each head with a weight of its own (Cohere's `(heads, head_dim)` weights).
    PerHeadOwnWeights,
    Full,
}

/// Norm placement in a sequential block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// `x + f(norm(x))` (Llama).
    Pre,
    /// `x + norm_post(f(norm_pre(x)))` (Gemma 2/3).
    Sandwich,
    /// `x + norm(f(x))` (OLMo 2).
    Post,
}

pub(crate) const LLAMA: Style = Style {
    norm: NormKind::Rms,
    qk_norm: QkNorm::None,
    placement: Placement::Pre,
    fused_qkv: false,
    fused_gate_up: false,
    act: Act::Silu,
    gated: true,
    rope_fp32: false,
    local_rope: false,
    rope_rebuilt: false,
    rope_per_sequence: false,
    output_gate: false,
};

/// A sequential pre-norm (or sandwich / post-norm) block with attention and an MLP.
pub(crate) fn sequential_block(
    g: &mut Graph<'_>,
    m: &TransformerSpec,
    flags: u8,
    x: Tensor,
    st: &Style,
) -> Tensor {
    let ctx = g.ctx;
    let (ts, h) = (ctx.rank_tokens, m.hidden_size);
    let n = ts * h;
    let a_in = if st.placement == Placement::Post { x } else { g.norm(x, ts, h, st.norm, "input_layernorm") };
    let mut a = attention(g, m, flags, a_in, st);
    if st.placement != Placement::Pre {
        a = g.norm(a, ts, h, st.norm, "post_attention_layernorm");
    }
    a = g.dropout(a, n, m.hidden_dropout);
    let x2 = g.add(x, a, n, Cat::Residual);
    let f_in = match st.placement {
        Placement::Post => x2,
        Placement::Pre => g.norm(x2, ts, h, st.norm, "post_attention_layernorm"),
        Placement::Sandwich => g.norm(x2, ts, h, st.norm, "pre_feedforward_layernorm"),
    };
    let mut f = mlp(g, m, flags, f_in, st);
    if st.placement != Placement::Pre {
        f = g.norm(f, ts, h, st.norm, "post_feedforward_layernorm");
    }
    f = g.dropout(f, n, m.hidden_dropout);
    g.add(x2, f, n, Cat::Residual)
}

/// A pre-norm block whose mixer is not attention (a hybrid's recurrent layers):
/// `x2 = x + mixer(norm(x))`, then `x2 + mlp(norm(x2))`, the two norms named as the model names
/// them.
pub(crate) fn mixer_block(
    g: &mut Graph<'_>,
    m: &TransformerSpec,
    flags: u8,
    x: Tensor,
    st: &Style,
    (mixer_norm, mlp_norm): (&'static str, &'static str),
    mixer: impl FnOnce(&mut Graph<'_>, Tensor) -> Tensor,
) -> Tensor {
    let (ts, h) = (g.ctx.rank_tokens, m.hidden_size);
    let n = g.norm(x, ts, h, st.norm, mixer_norm);
    let a = mixer(g, n);
    let x2 = g.add(a, x, ts * h, Cat::Residual);
    let f_in = g.norm(x2, ts, h, st.norm, mlp_norm);
    let f = mlp(g, m, flags, f_in, st);
    g.add(f, x2, ts * h, Cat::Residual)
}

/// q/k/v projections, optional q/k norms, rotary, the attention core and o_proj.
pub(crate) fn attention(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor, st: &Style) -> Tensor {
    let ctx = g.ctx;
    let kinds = ops(m);
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    let (qw, kw) = (m.q_width(), m.kv_width());
    let (mut q, mut k, v) = if st.fused_qkv {
        let qkv = g.linear(x, ts, h, qw + 2 * kw, LinearRole::Q, Cat::AttentionIo, "qkv_proj");
        (qkv, qkv, qkv)
    } else {
        // with an output gate, q_proj's output holds q and the gate (q reads a view of it)
        let q_width = if st.output_gate { 2 * qw } else { qw };
        let q = g.linear(x, ts, h, q_width, LinearRole::Q, Cat::AttentionIo, "q_proj");
        let k = g.linear(x, ts, h, kw, LinearRole::K, Cat::AttentionIo, "k_proj");
        let v = g.linear(x, ts, h, kw, LinearRole::V, Cat::AttentionIo, "v_proj");
        (q, k, v)
    };
    match st.qk_norm {
        QkNorm::None => {}
        QkNorm::PerHead => {
            q = g.norm(q, t * m.num_heads, m.head_dim, st.norm, "q_norm");
            k = g.norm(k, t * m.num_kv_heads, m.head_dim, st.norm, "k_norm");
        }
        QkNorm::PerHeadOwnWeights => {
            q = g.norm_weighted(q, t * m.num_heads, m.head_dim, qw, st.norm, "q_norm");
            k = g.norm_weighted(k, t * m.num_kv_heads, m.head_dim, kw, st.norm, "k_norm");
        }
        QkNorm::Full => {
            q = g.norm(q, t, qw, st.norm, "q_norm");
            k = g.norm(k, t, kw, st.norm, "k_norm");
        }
    }
    // learned or no positions (ViT, SigLIP, Nemotron-H's attention): no rotary tables
    let rotary = flags & layer::NO_ROPE == 0 && kinds.rope != super::Rope::None;
    if rotary && st.rope_rebuilt {
        (q, k) = g.rope_rebuilt(q, k, (t * qw, t * kw), rope_cols(&kinds, m), st.rope_fp32);
    } else if rotary {
        // gpt-oss rotates the two halves with (s, d/2) cos/sin tables
        let rot = rope_cols(&kinds, m);
        let table =
            if st.local_rope && flags & layer::SLIDING != 0 { Shared::RopeLocal } else { Shared::Rope };
        if st.rope_fp32 {
            q = g.rope_fp32(q, t * qw, rot, table);
            k = g.rope_fp32(k, t * kw, rot, table);
        } else if st.rope_per_sequence {
            q = g.rope_per_sequence(q, t * qw, rot, table);
            k = g.rope_per_sequence(k, t * kw, rot, table);
        } else {
            q = g.rope(q, t * qw, rot, table);
            k = g.rope(k, t * kw, rot, table);
        }
    }
    let a = attn_with(&kinds, ctx, m, flags);
    let mut o = g.attention(q, k, v, a);
    if st.output_gate {
        // `o * sigmoid(gate)`: the sigmoid keeps its output, the product both
        let c = ctx.compute_elem;
        let sig = g.tensor(t * qw * c, c, g.rg(o), Cat::AttentionIo);
        g.keep(sig);
        o = g.mul(o, sig, t * qw);
    }
    g.linear(o, t, qw, h, LinearRole::O, Cat::AttentionIo, "o_proj")
}

/// The MLP (dense, or the experts of an MoE layer).
pub(crate) fn mlp(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor, st: &Style) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    if let Some(moe) = m.moe
        && flags & layer::DENSE == 0
    {
        let k = ops(m);
        let routing = match moe.router {
            // gpt-oss's softmax over the k logits stays in their dtype; Granite-MoE's in fp32
            Router::TopkSoftmax => {
                Routing::TopkFirst { elem: if k.clamped_swiglu { ctx.compute_elem } else { 4 } }
            }
            Router::SparseMixer => Routing::SparseMixer { input_jitter: moe.input_jitter },
            r => Routing::Scores {
                renorm: match r {
                    Router::SoftmaxNoNorm => Renorm::None,
                    Router::SoftmaxClampedNorm => Renorm::ClampedSum,
                    _ => Renorm::Sum,
                },
                groups: moe.groups,
                topk_group: moe.topk_group,
            },
        };
        let op = MoeOp {
            experts: moe.experts,
            top_k: moe.top_k,
            inter: m.intermediate_size,
            routing,
            router_fp32: k.router_fp32,
            router_weight_cast: k.router_weight_cast,
            weights_fp32: k.routing_fp32,
            clamped_swiglu: k.clamped_swiglu,
            gated: k.gated,
            act: k.act,
            zero_experts: moe.zero_experts,
        };
        let mut out = g.moe(x, h, op);
        if moe.shared_intermediate_size > 0 {
            let inter = moe.shared_intermediate_size;
            let mut s = dense_mlp(g, x, t, ts, h, inter, st);
            if moe.router == Router::SoftmaxSharedGate {
                // `sigmoid(shared_expert_gate(x)) * shared`: the gate's sigmoid (one column)
                // and the shared expert's output kept by the product
                let c = ctx.compute_elem;
                let gate = g.tensor(t * c, c, g.rg(x) || ctx.full, Cat::Mlp);
                g.keep(gate);
                s = g.mul(s, gate, t * h);
            }
            out = g.add(out, s, t * h, Cat::Mlp);
        }
        return out;
    }
    let i = dense_width(m);
    dense_mlp(g, x, t, ts, h, i, st)
}

/// A dense MLP of width `i`.
pub(crate) fn dense_mlp(g: &mut Graph<'_>, x: Tensor, t: u64, ts: u64, h: u64, i: u64, st: &Style) -> Tensor {
    if !st.gated {
        let up = g.linear(x, ts, h, i, LinearRole::Up, Cat::Mlp, "fc1");
        let a = g.act(up, t * i, st.act);
        return g.linear(a, t, i, h, LinearRole::Down, Cat::Mlp, "fc2");
    }
    let (gate, up) = if st.fused_gate_up {
        let gu = g.linear(x, ts, h, 2 * i, LinearRole::Gate, Cat::Mlp, "gate_up_proj");
        (gu, gu)
    } else {
        let gate = g.linear(x, ts, h, i, LinearRole::Gate, Cat::Mlp, "gate_proj");
        let up = g.linear(x, ts, h, i, LinearRole::Up, Cat::Mlp, "up_proj");
        (gate, up)
    };
    let a = g.act(gate, t * i, st.act);
    let p = g.mul(a, up, t * i);
    g.linear(p, t, i, h, LinearRole::Down, Cat::Mlp, "down_proj")
}
