//! One file a family: the ops of its block (walked by [`crate::engine`]), its parameter tensors
//! and what it reads from `config.json`. A Llama-like family is a short [`Style`] plus its
//! parameter list; families whose block is shaped differently (parallel residual, latent
//! attention, encoders) write their own op sequence from the same op kinds.

mod bert;
mod deepseek;
mod falcon;
mod gemma;
mod gpt2;
mod gpt_neox;
mod gpt_oss;
mod litgpt;
mod llama;
mod megatron;
mod olmo2;
mod phi;
mod phi3;
mod qwen3;
mod starcoder2;
mod vit;

use super::{Family, Head, LinearRole, ParamGroup, ParamKind, Scope, TransformerSpec, layer};
use crate::engine::inputs::saved::Cat;
use crate::engine::inputs::{Ctx, Kernel};
use crate::engine::ops::{Act, Attn, Graph, NormKind, Shared, Softmax, T};

/// Whether the family's activation rules have been checked against measured PyTorch runs.
pub fn validated(f: Family) -> bool {
    f != Family::Generic
}

/// HF decoder-layer class name (FSDP auto-wrap policies), by family and model name.
pub fn block_class(m: &TransformerSpec, name: &str) -> &'static str {
    // the config's own model_type when known, else the display name
    let n = m.hf_model_type.clone().unwrap_or_else(|| name.to_ascii_lowercase());
    match m.family {
        Family::Gpt2 => "GPT2Block",
        Family::Bert => "BertLayer",
        Family::Megatron => "ParallelTransformerLayer",
        Family::Llama if n.contains("mixtral") => "MixtralDecoderLayer",
        Family::Llama if n.contains("mistral") => "MistralDecoderLayer",
        Family::Llama if n.contains("qwen") && m.moe.is_some() => "Qwen2MoeDecoderLayer",
        Family::Llama if n == "granite" => "GraniteDecoderLayer",
        Family::Llama if n.contains("qwen") => "Qwen2DecoderLayer",
        Family::Llama | Family::Generic => "LlamaDecoderLayer",
        Family::Qwen3 if m.moe.is_some() => "Qwen3MoeDecoderLayer",
        Family::Qwen3 => "Qwen3DecoderLayer",
        Family::Gemma => "GemmaDecoderLayer",
        Family::Gemma2 => "Gemma2DecoderLayer",
        Family::Gemma3 => "Gemma3DecoderLayer",
        Family::Phi3 => "Phi3DecoderLayer",
        Family::Phi => "PhiDecoderLayer",
        Family::Olmo2 => "Olmo2DecoderLayer",
        Family::GptNeox => "GPTNeoXLayer",
        Family::Falcon => "FalconDecoderLayer",
        Family::Starcoder2 => "Starcoder2DecoderLayer",
        Family::Granite => "GraniteDecoderLayer",
        Family::Smollm3 => "SmolLM3DecoderLayer",
        Family::Deepseek => "DeepseekV3DecoderLayer",
        Family::GptOss => "GptOssDecoderLayer",
        Family::Vit => "ViTLayer",
    }
}

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
}

/// q/k normalisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QkNorm {
    None,
    PerHead,
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
};

/// Flags of every layer when the spec lists none.
pub fn default_flags(m: &TransformerSpec) -> u8 {
    if m.sliding_window.is_some() { layer::SLIDING } else { 0 }
}

/// Does layer `flags` attend within a window shorter than the sequence?
pub(crate) fn windowed(ctx: &Ctx, m: &TransformerSpec, flags: u8) -> bool {
    flags & layer::SLIDING != 0 && m.sliding_window.is_some_and(|w| ctx.s > w)
}

/// Does litgpt's model code run this model (`--model-code litgpt`)?
pub(crate) fn litgpt_runs(ctx: &Ctx, m: &TransformerSpec) -> bool {
    litgpt::runs(ctx, m)
}

/// Is `family` one that litgpt's own model code is walked for?
pub fn litgpt_walks(family: Family) -> bool {
    litgpt::walks(family)
}

/// Rotary dimensions per head.
pub fn rope_dim(m: &TransformerSpec) -> u64 {
    match m.mla {
        Some(mla) => mla.qk_rope_head_dim,
        None if m.rope_dim > 0 => m.rope_dim.min(m.head_dim),
        None => m.head_dim,
    }
}

/// Columns of the rotary cos/sin tables (gpt-oss rotates two halves with `d/2`-wide tables).
pub fn rope_table_dim(m: &TransformerSpec) -> u64 {
    if m.family == Family::GptOss { rope_dim(m) / 2 } else { rope_dim(m) }
}

/// Does the family use rotary embeddings at all?
pub fn has_rope(m: &TransformerSpec) -> bool {
    !matches!(m.family, Family::Vit | Family::Gpt2 | Family::Bert | Family::Megatron)
}

/// Width of the widest MLP tensor per token (routed experts × top-k for MoE).
pub fn mlp_width(m: &TransformerSpec) -> u64 {
    match m.moe {
        Some(x) => (x.top_k * m.intermediate_size).max(m.dense_intermediate_size),
        None => m.intermediate_size,
    }
}

/// MLP width of the dense layers (an MoE model's `dense_intermediate_size` when it has one).
pub fn dense_width(m: &TransformerSpec) -> u64 {
    if m.moe.is_some() && m.dense_intermediate_size > 0 {
        m.dense_intermediate_size
    } else {
        m.intermediate_size
    }
}

/// Gated MLP?
pub fn gated(m: &TransformerSpec) -> bool {
    !matches!(
        m.family,
        Family::GptNeox
            | Family::Phi
            | Family::Falcon
            | Family::Starcoder2
            | Family::Vit
            | Family::Gpt2
            | Family::Bert
            | Family::Megatron
    )
}

/// Logit columns of the head (0 for a bare model).
pub fn classes(m: &TransformerSpec) -> u64 {
    match m.head {
        Head::CausalLm | Head::MaskedLm => m.vocab_size,
        Head::SequenceClassification { num_labels } => num_labels,
        Head::Base => 0,
    }
}

/// The attention kernel of a full-attention layer of this model.
pub(crate) fn kernel_of(ctx: &Ctx, m: &TransformerSpec) -> Kernel {
    crate::engine::ops::kernel(ctx, attn_of(ctx, m, default_flags(m) & !layer::SLIDING))
}

/// Dropout on the embedding output (StarCoder2 `embedding_dropout`, Phi-3 `embd_pdrop`).
pub(crate) fn embedding_dropout(m: &TransformerSpec) -> f64 {
    m.embedding_dropout
}

/// The attention call of a layer.
pub(crate) fn attn_of(ctx: &Ctx, m: &TransformerSpec, flags: u8) -> Attn {
    let (qk_dim, v_dim) = match m.mla {
        Some(x) => (x.qk_head_dim(), x.v_head_dim),
        None => (m.head_dim, m.head_dim),
    };
    Attn {
        heads: m.num_heads,
        kv_heads: if m.mla.is_some() { m.num_heads } else { m.num_kv_heads },
        qk_dim,
        v_dim,
        masked: windowed(ctx, m, flags) || m.family == Family::Falcon,
        q_head_major: has_rope(m) && (rope_dim(m) < m.head_dim || m.family == Family::GptOss),
        gqa_native: m.family == Family::Falcon,
        softcap: m.attn_softcap.is_some(),
        sinks: m.family == Family::GptOss,
        dropout: m.attention_dropout,
        softmax: match m.family {
            // Falcon: softmax(dtype=hidden_states.dtype)
            Family::Gpt2 | Family::Bert | Family::Falcon => Softmax::Native,
            Family::Megatron => Softmax::Fused,
            _ => Softmax::Fp32,
        },
    }
}

// ---- the walk: dispatch to the family -------------------------------------------------------

/// Walks one block of the family on `g`; `x` is the block input. Returns the block output.
pub(crate) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    match m.family {
        _ if litgpt::runs(g.ctx, m) => litgpt::block(g, m, flags, x),
        Family::Llama | Family::Granite | Family::Smollm3 | Family::Generic => llama::block(g, m, flags, x),
        Family::Qwen3 => qwen3::block(g, m, flags, x),
        Family::Gemma | Family::Gemma2 | Family::Gemma3 => gemma::block(g, m, flags, x),
        Family::Phi3 => phi3::block(g, m, flags, x),
        Family::Phi => phi::block(g, m, flags, x),
        Family::Olmo2 => olmo2::block(g, m, flags, x),
        Family::GptNeox => gpt_neox::block(g, m, flags, x),
        Family::Falcon => falcon::block(g, m, flags, x),
        Family::Starcoder2 => starcoder2::block(g, m, flags, x),
        Family::Deepseek => deepseek::block(g, m, flags, x),
        Family::GptOss => gpt_oss::block(g, m, flags, x),
        Family::Vit => vit::block(g, m, flags, x),
        Family::Gpt2 => gpt2::block(g, m, flags, x),
        Family::Bert => bert::block(g, m, flags, x),
        Family::Megatron => megatron::block(g, m, flags, x),
    }
}

/// Walks the embedding part; returns block 0's input.
pub(crate) fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> T {
    match m.family {
        Family::Gemma | Family::Gemma2 | Family::Gemma3 => {
            let e = g.embedding(m.hidden_size);
            let n = g.ctx.t * m.hidden_size;
            g.scale_by_tensor(e, n)
        }
        Family::Vit => vit::embed(g, m),
        Family::Gpt2 => gpt2::embed(g, m),
        Family::Bert => bert::embed(g, m),
        Family::Megatron => megatron::embed(g, m),
        _ => {
            let e = g.embedding(m.hidden_size);
            g.dropout(e, g.ctx.t * m.hidden_size, embedding_dropout(m))
        }
    }
}

/// Walks the final norm, head and loss on the last block's output; returns the bytes the head
/// and loss keep (released before the last block's backward).
pub(crate) fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: T) -> u64 {
    let ctx = g.ctx;
    let norm = match m.family {
        Family::Gemma | Family::Gemma2 | Family::Gemma3 => NormKind::RmsOffset,
        Family::Olmo2 | Family::GptOss => NormKind::RmsWeightFp32,
        Family::GptNeox | Family::Falcon | Family::Starcoder2 | Family::Vit | Family::Gpt2 | Family::Phi => {
            NormKind::Layer
        }
        Family::Llama if litgpt::runs(ctx, m) => litgpt::norm(ctx),
        _ => NormKind::Rms,
    };
    match m.family {
        Family::Vit => return vit::head(g, m, x),
        Family::Bert => return bert::head(g, m, x),
        Family::Megatron => return megatron::head(g, m, x),
        _ => {}
    }
    let n = g.norm(x, ctx.ts, m.hidden_size, norm, "final norm");
    g.head_loss(n, ctx.ts, m.hidden_size, classes(m), m.final_softcap.is_some(), m.head == Head::CausalLm)
}

// ---- shared pieces of Llama-like blocks ------------------------------------------------------

/// A sequential pre-norm (or sandwich / post-norm) block with attention and an MLP.
pub(crate) fn sequential_block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T, st: &Style) -> T {
    let ctx = g.ctx;
    let (ts, h) = (ctx.ts, m.hidden_size);
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

/// q/k/v projections, optional q/k norms, rotary, the attention core and o_proj.
pub(crate) fn attention(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T, st: &Style) -> T {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.t, ctx.ts, m.hidden_size);
    let (qw, kw) = (m.q_width(), m.kv_width());
    let (mut q, mut k, v) = if st.fused_qkv {
        let qkv = g.linear(x, ts, h, qw + 2 * kw, LinearRole::Q, Cat::AttentionIo, "qkv_proj");
        (qkv, qkv, qkv)
    } else {
        let q = g.linear(x, ts, h, qw, LinearRole::Q, Cat::AttentionIo, "q_proj");
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
        QkNorm::Full => {
            q = g.norm(q, t, qw, st.norm, "q_norm");
            k = g.norm(k, t, kw, st.norm, "k_norm");
        }
    }
    if flags & layer::NO_ROPE == 0 {
        // gpt-oss rotates the two halves with (s, d/2) cos/sin tables
        let rot = rope_table_dim(m);
        let table = if m.family == Family::Gemma3 && flags & layer::SLIDING != 0 {
            Shared::RopeLocal
        } else {
            Shared::Rope
        };
        if m.family == Family::Olmo2 {
            q = g.rope_fp32(q, t * qw, rot, table);
            k = g.rope_fp32(k, t * kw, rot, table);
        } else {
            q = g.rope(q, t * qw, rot, table);
            k = g.rope(k, t * kw, rot, table);
        }
    }
    let a = attn_of(ctx, m, flags);
    let o = g.attention(q, k, v, a);
    g.linear(o, t, qw, h, LinearRole::O, Cat::AttentionIo, "o_proj")
}

/// The MLP (dense, or the experts of an MoE layer).
pub(crate) fn mlp(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T, st: &Style) -> T {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.t, ctx.ts, m.hidden_size);
    if let Some(moe) = m.moe
        && flags & layer::DENSE == 0
    {
        let router_fp32 = m.family == Family::Deepseek;
        let gpt_oss = m.family == Family::GptOss;
        let mut out = g.moe(x, h, moe.experts, moe.top_k, m.intermediate_size, router_fp32, gpt_oss);
        if moe.shared_intermediate_size > 0 {
            let inter = moe.shared_intermediate_size;
            let s = dense_mlp(g, x, t, ts, h, inter, st);
            out = g.add(out, s, t * h, Cat::Mlp);
        }
        return out;
    }
    let i = dense_width(m);
    dense_mlp(g, x, t, ts, h, i, st)
}

/// A dense MLP of width `i`.
pub(crate) fn dense_mlp(g: &mut Graph<'_>, x: T, t: u64, ts: u64, h: u64, i: u64, st: &Style) -> T {
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

// ---- parameters -------------------------------------------------------------------------------

/// Collects parameter groups (empty shapes skipped).
pub(crate) struct Params(pub Vec<ParamGroup>);

impl Params {
    pub fn push(&mut self, rows: u64, cols: u64, count: u64, kind: ParamKind, scope: Scope, tp_split: bool) {
        if rows > 0 && cols > 0 && count > 0 {
            self.0.push(ParamGroup { rows, cols, count, kind, scope, tp_split });
        }
    }
    /// A projection weight per layer (+ its bias when `bias`).
    pub fn linear(&mut self, out_f: u64, in_f: u64, layers: u64, role: LinearRole, bias: bool) {
        self.push(out_f, in_f, layers, ParamKind::Linear(role), Scope::Block, true);
        if bias {
            let split = !matches!(role, LinearRole::O | LinearRole::Down);
            self.push(out_f, 1, layers, ParamKind::Vector, Scope::Block, split);
        }
    }
    /// Separate q, k, v and o projections of every layer (biases as given).
    pub fn qkvo(&mut self, m: &TransformerSpec, qkv_bias: bool, o_bias: bool) {
        use LinearRole as R;
        let (h, l) = (m.hidden_size, m.num_layers);
        let (q, kv) = (m.q_width(), m.kv_width());
        self.linear(q, h, l, R::Q, qkv_bias);
        self.linear(kv, h, l, R::K, qkv_bias);
        self.linear(kv, h, l, R::V, qkv_bias);
        self.linear(h, q, l, R::O, o_bias);
    }
    /// `count` norm vectors of `width` per layer (weight, and bias for LayerNorm).
    pub fn norms(&mut self, width: u64, per_layer: u64, layers: u64, bias: bool) {
        self.push(
            width,
            1,
            per_layer * layers * if bias { 2 } else { 1 },
            ParamKind::Vector,
            Scope::Block,
            false,
        );
    }
    /// Token embedding, final norm and LM head (untied unless `tied`).
    pub fn ends(&mut self, m: &TransformerSpec, final_norm_bias: bool) {
        self.push(m.vocab_size, m.hidden_size, 1, ParamKind::Embedding, Scope::Input, true);
        self.push(
            m.hidden_size,
            1,
            if final_norm_bias { 2 } else { 1 },
            ParamKind::Vector,
            Scope::Output,
            false,
        );
        head_params(self, m);
    }
}

fn head_params(p: &mut Params, m: &TransformerSpec) {
    match m.head {
        Head::CausalLm | Head::MaskedLm => {
            if !m.tie_word_embeddings {
                p.push(m.vocab_size, m.hidden_size, 1, ParamKind::Head, Scope::Output, true);
            }
        }
        Head::SequenceClassification { num_labels } => {
            p.push(num_labels, m.hidden_size, 1, ParamKind::Head, Scope::Output, false);
        }
        Head::Base => {}
    }
}

/// Gated (or plain) MLP weights of one kind of layer.
pub(crate) fn mlp_params(p: &mut Params, h: u64, i: u64, layers: u64, gated: bool, fused: bool, bias: bool) {
    use LinearRole as R;
    if gated && fused {
        p.linear(2 * i, h, layers, R::Gate, bias);
    } else if gated {
        p.linear(i, h, layers, R::Gate, bias);
        p.linear(i, h, layers, R::Up, bias);
    } else {
        p.linear(i, h, layers, R::Up, bias);
    }
    p.linear(h, i, layers, R::Down, bias);
}

/// Routed experts (transformers 5 keeps them as fused 3-D tensors: `gate_up_proj` (E, 2I, h) and
/// `down_proj` (E, h, I)), the router, and shared experts.
pub(crate) fn moe_params(
    p: &mut Params,
    m: &TransformerSpec,
    layers: u64,
    router_bias: bool,
    expert_bias: bool,
) {
    let Some(moe) = m.moe else { return };
    let (h, i, e) = (m.hidden_size, m.intermediate_size, moe.experts);
    p.push(e, h, layers, ParamKind::Router, Scope::Block, false);
    if router_bias {
        p.push(e, 1, layers, ParamKind::Vector, Scope::Block, false);
    }
    p.push(e * 2 * i, h, layers, ParamKind::Experts(LinearRole::Gate), Scope::Block, true);
    p.push(e * h, i, layers, ParamKind::Experts(LinearRole::Down), Scope::Block, true);
    if expert_bias {
        p.push(e * 2 * i, 1, layers, ParamKind::Vector, Scope::Block, true);
        p.push(e * h, 1, layers, ParamKind::Vector, Scope::Block, false);
    }
    if moe.shared_intermediate_size > 0 {
        mlp_params(p, h, moe.shared_intermediate_size, layers, true, false, false);
        if moe.router == crate::model::Router::SoftmaxSharedGate {
            p.push(1, h, layers, ParamKind::Router, Scope::Block, false);
        }
    }
}

/// Layers of an MoE model that are dense / sparse.
pub(crate) fn dense_and_sparse_layers(m: &TransformerSpec) -> (u64, u64) {
    if m.moe.is_none() {
        return (m.num_layers, 0);
    }
    let dense = (0..m.num_layers)
        .filter(|&i| m.layer_flags.get(i as usize).is_some_and(|f| f & layer::DENSE != 0))
        .count() as u64;
    (dense, m.num_layers - dense)
}

/// Every parameter tensor of a family handled here (all but GPT-2, BERT and Megatron).
pub(crate) fn param_groups(m: &TransformerSpec) -> Vec<ParamGroup> {
    let mut p = Params(Vec::with_capacity(24));
    match m.family {
        Family::Llama | Family::Granite | Family::Smollm3 | Family::Generic => llama::params(&mut p, m),
        Family::Qwen3 => qwen3::params(&mut p, m),
        Family::Gemma | Family::Gemma2 | Family::Gemma3 => gemma::params(&mut p, m),
        Family::Phi3 => phi3::params(&mut p, m),
        Family::Phi => phi::params(&mut p, m),
        Family::Olmo2 => olmo2::params(&mut p, m),
        Family::GptNeox => gpt_neox::params(&mut p, m),
        Family::Falcon => falcon::params(&mut p, m),
        Family::Starcoder2 => starcoder2::params(&mut p, m),
        Family::Deepseek => deepseek::params(&mut p, m),
        Family::GptOss => gpt_oss::params(&mut p, m),
        Family::Vit => vit::params(&mut p, m),
        Family::Gpt2 | Family::Bert | Family::Megatron => {}
    }
    if let Some(v) = m.vision {
        vision_params(&mut p, &v);
    }
    p.push(m.extra_params, 1, 1, ParamKind::Vector, Scope::Input, false);
    p.0
}

/// A vision tower's and projector's parameters.
fn vision_params(p: &mut Params, v: &super::VisionTower) {
    use super::VisionKind;
    let (h, i, l) = (v.hidden_size, v.intermediate_size, v.num_layers);
    let patches = (v.image_size / v.patch_size.max(1)).pow(2);
    let s = Scope::Input;
    let k = ParamKind::Frozen;
    match v.kind {
        VisionKind::Siglip => {
            p.push(h, v.num_channels * v.patch_size * v.patch_size, 1, k, s, false); // patch conv
            p.push(h, 1, 1, k, s, false);
            p.push(patches, h, 1, k, s, false); // position embedding
            // per layer: 2 LayerNorms (w, b), q/k/v/o with bias, fc1/fc2 with bias
            p.push(h, 1, 4 * l, k, s, false);
            p.push(h, h, 4 * l, k, s, false);
            p.push(h, 1, 4 * l, k, s, false);
            p.push(i, h, l, k, s, false);
            p.push(i, 1, l, k, s, false);
            p.push(h, i, l, k, s, false);
            p.push(h, 1, l, k, s, false);
            p.push(h, 1, 2, k, s, false); // post_layernorm
        }
        VisionKind::Pixtral => {
            p.push(h, v.num_channels * v.patch_size * v.patch_size, 1, k, s, false); // patch conv, no bias
            p.push(h, 1, 1, k, s, false); // ln_pre
            p.push(h, 1, 2 * l, k, s, false); // attention_norm, ffn_norm
            p.push(h, h, 4 * l, k, s, false);
            p.push(i, h, 2 * l, k, s, false);
            p.push(h, i, l, k, s, false);
        }
    }
    p.push(v.projector_params, 1, 1, k, s, false);
}
