//! Llama 4 (text): Llama's pre-norm block whose rotary layers rotate q and k as complex numbers
//! (`view_as_complex(q.float()) · freqs_cis`), then L2-normalise them (`use_qk_norm`), and
//! attend within chunks (`attention_chunk_size`, a window for the mask); every
//! `no_rope_layer_interval`-th layer has no rotary and scales q by a position-dependent
//! temperature. The MoE layers send every token through every expert, weighted by the sigmoid
//! of its top-k router logit (zero elsewhere), beside one shared expert; the dense layers use
//! `intermediate_size_mlp`.

use super::prelude::*;

const STYLE: Style = Style { rope_fp32: true, ..LLAMA };

/// Meta Llama 4 (the text model).
pub(super) struct Llama4;

impl FamilyDef for Llama4 {
    fn id(&self) -> &'static str {
        "llama4"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["llama4_text"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Llama4TextDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        let (dense, sparse) = dense_and_sparse_layers(m);
        moe_params(p, m, sparse, false);
        mlp_params(p, h, dense_width(m), dense, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let ctx = g.ctx;
        let (ts, h) = (ctx.rank_tokens, m.hidden_size);
        let n = ts * h;
        let a_in = g.norm(x, ts, h, NormKind::Rms, "input_layernorm");
        let a = attention(g, m, flags, a_in);
        let x2 = g.add(x, a, n, Cat::Residual);
        let f_in = g.norm(x2, ts, h, NormKind::Rms, "post_attention_layernorm");
        let f = feed_forward(g, m, flags, f_in);
        g.add(x2, f, n, Cat::Residual)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "llama4_text").then_some(
            r#"{"vocab_size":202048,"hidden_size":5120,"intermediate_size":8192,"intermediate_size_mlp":16384,
            "num_hidden_layers":48,"num_attention_heads":40,"num_key_value_heads":8,"head_dim":128,
            "tie_word_embeddings":false,"attention_bias":false,"num_local_experts":16,"num_experts_per_tok":1,
            "interleave_moe_layer_step":1,"no_rope_layer_interval":4,"attention_chunk_size":8192,
            "use_qk_norm":true,"attn_temperature_tuning":true,"max_position_embeddings":131072,
            "rope_theta":500000.0}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        let mlp = r.u64_or("intermediate_size_mlp", 16384)?;
        read_moe(r, d)?;
        d.spec.dense_intermediate_size = mlp;
        if let Some(moe) = d.spec.moe.as_mut() {
            // one shared expert as wide as a routed one; scores: sigmoid of the top-k logits
            (moe.shared_experts, moe.shared_intermediate_size) = (1, d.spec.intermediate_size);
            moe.router = Router::TopkSoftmax;
        }
        // `no_rope_layers`: 1 where a layer rotates; else every `no_rope_layer_interval`-th has none
        let rope: Vec<bool> = match r.u64_list("no_rope_layers")?.filter(|v| v.len() as u64 == l) {
            Some(v) => v.iter().map(|&x| x != 0).collect(),
            None => {
                let every = r.u64_or("no_rope_layer_interval", 4)?.max(1);
                (0..l).map(|j| !(j + 1).is_multiple_of(every)).collect()
            }
        };
        d.no_rope = rope.iter().map(|x| !x).collect();
        // the rotary layers attend within chunks: a window for the mask and the cache
        d.window = r.opt_u64("attention_chunk_size")?.filter(|&c| c > 0);
        d.sliding = rope;
        d.spec.qk_layernorm = r.bool_or("use_qk_norm", true)?;
        d.spec.attn_temperature = r.bool_or("attn_temperature_tuning", true)?;
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::Complex, moe_all_experts: true, ..STYLE.kinds() }
    }
}

/// q/k/v, complex rotary and the L2 q/k norm on rotary layers (a position temperature on q
/// elsewhere), the attention core, o_proj.
fn attention(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    let (qw, kw) = (m.q_width(), m.kv_width());
    let mut q = g.linear(x, ts, h, qw, LinearRole::Q, Cat::AttentionIo, "q_proj");
    let mut k = g.linear(x, ts, h, kw, LinearRole::K, Cat::AttentionIo, "k_proj");
    let v = g.linear(x, ts, h, kw, LinearRole::V, Cat::AttentionIo, "v_proj");
    if flags & layer::NO_ROPE == 0 {
        let rot = rope_dim(m) / 2;
        q = g.rope_fp32(q, t * qw, rot, Shared::Rope);
        k = g.rope_fp32(k, t * kw, rot, Shared::Rope);
        if m.qk_layernorm {
            q = g.norm(q, t * m.num_heads, m.head_dim, NormKind::L2, "qk_norm (q)");
            k = g.norm(k, t * m.num_kv_heads, m.head_dim, NormKind::L2, "qk_norm (k)");
        }
    } else if m.attn_temperature {
        q = g.position_scale(q, t * qw);
    }
    let o = g.attention(q, k, v, attn_of(ctx, m, flags));
    g.linear(o, t, qw, h, LinearRole::O, Cat::AttentionIo, "o_proj")
}

/// Every expert and the shared one on MoE layers, a gated MLP of `intermediate_size_mlp` on the
/// others.
fn feed_forward(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    let Some(moe) = m.moe.filter(|_| flags & layer::DENSE == 0) else {
        return dense_mlp(g, x, t, ts, h, dense_width(m), &STYLE);
    };
    let op = MoeOp {
        experts: moe.experts,
        top_k: moe.top_k,
        inter: m.intermediate_size,
        routing: Routing::TopkFirst { elem: 4 },
        router_fp32: false,
        weights_fp32: false,
        clamped_swiglu: false,
        gated: true,
        act: Act::Silu,
        zero_experts: 0,
        router_weight_cast: false,
    };
    let routed = g.moe_all_experts(x, h, op);
    let shared = dense_mlp(g, x, t, ts, h, moe.shared_intermediate_size, &STYLE);
    g.add(shared, routed, t * h, Cat::Mlp)
}
