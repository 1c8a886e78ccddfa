//! DeepSeek-V2/V3: multi-head latent attention (q through an optional low-rank `q_a → norm →
//! q_b`, k/v through the joint latent `kv_a → norm → kv_b` plus a shared rotary key part; q and k
//! concatenated from their rotary and non-rotary halves, v a view of `kv_b`'s output), dense
//! MLPs in the first `first_k_dense_replace` layers, then routed + shared experts.

use super::prelude::*;
use crate::model::Mla;

/// DeepSeek-V2 and V3.
pub(super) struct Deepseek;

impl FamilyDef for Deepseek {
    fn id(&self) -> &'static str {
        "deepseek"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["deepseek_v2", "deepseek_v3", "deepseek_v32"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "DeepseekV3DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        block(g, m, flags, x)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        None
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "deepseek_v2" => Some(
                r#"{"vocab_size":102400,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
                "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,
                "first_k_dense_replace":0,"kv_lora_rank":512,"q_lora_rank":1536,"n_routed_experts":64,
                "n_shared_experts":2,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
                "moe_intermediate_size":1407,"moe_layer_freq":1}"#,
            ),
            "deepseek_v3" => Some(
                r#"{"vocab_size":129280,"hidden_size":7168,"intermediate_size":18432,"num_hidden_layers":61,
                "num_attention_heads":128,"tie_word_embeddings":false,"attention_bias":false,
                "first_k_dense_replace":3,"kv_lora_rank":512,"q_lora_rank":1536,"n_routed_experts":256,
                "n_shared_experts":1,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
                "moe_intermediate_size":2048,"num_experts_per_tok":8,"moe_layer_freq":1,"n_group":8,
                "topk_group":4}"#,
            ),
            "deepseek_v32" => Some(
                r#"{"vocab_size":129280,"hidden_size":7168,"intermediate_size":18432,"num_hidden_layers":61,
                "num_attention_heads":128,"tie_word_embeddings":false,"attention_bias":false,
                "first_k_dense_replace":3,"kv_lora_rank":512,"q_lora_rank":1536,"n_routed_experts":256,
                "n_shared_experts":1,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
                "moe_intermediate_size":2048,"num_experts_per_tok":8,"moe_layer_freq":1,"n_group":8,
                "topk_group":4,"index_n_heads":64,"index_head_dim":128}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let v3 = model_type != "deepseek_v2";
        let l = d.spec.num_layers;
        read_mla(r, d, model_type == "deepseek_v32")?;
        let experts = r.positive("n_routed_experts")?;
        let top_k = r.positive("num_experts_per_tok")?;
        check_top_k(r, top_k, experts)?;
        let moe_i = r.positive("moe_intermediate_size")?;
        let shared = r.u64_or("n_shared_experts", 0)?;
        d.spec.dense_intermediate_size = d.spec.intermediate_size;
        d.spec.intermediate_size = moe_i;
        let first = r.u64_or("first_k_dense_replace", 0)?;
        let freq = r.u64_or("moe_layer_freq", 1)?.max(1);
        d.dense = (0..l).map(|j| j < first || !j.is_multiple_of(freq)).collect();
        d.spec.moe = Some(Moe {
            shared_experts: shared,
            shared_intermediate_size: moe_i * shared,
            router: if v3 { Router::SigmoidGroup } else { Router::Softmax },
            groups: if v3 { r.u64_or("n_group", 1)?.max(1) } else { 0 },
            topk_group: if v3 { r.u64_or("topk_group", 1)?.max(1) } else { 0 },
            ..Moe::routed(experts, top_k)
        });
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        // the router: `F.linear(x.float(), w.float())`, its top-k weights left in fp32
        OpKinds { router_fp32: true, routing_fp32: true, ..LLAMA.kinds() }
    }
}

/// Reads multi-head latent attention's widths into `d` (every query head its own K/V head),
/// with V3.2's indexer when `indexer`.
pub(super) fn read_mla(r: &Reader<'_>, d: &mut Draft, indexer: bool) -> Result<(), ConfigError> {
    let mla = Mla {
        q_lora_rank: r.u64_or("q_lora_rank", 0)?,
        kv_lora_rank: r.positive("kv_lora_rank")?,
        qk_nope_head_dim: r.u64_or("qk_nope_head_dim", 0)?,
        qk_rope_head_dim: r.u64_or("qk_rope_head_dim", 0)?,
        v_head_dim: r.positive("v_head_dim")?,
        index_heads: if indexer { r.u64_or("index_n_heads", 64)? } else { 0 },
        index_head_dim: if indexer { r.u64_or("index_head_dim", 128)? } else { 0 },
    };
    d.spec.head_dim = mla.qk_head_dim();
    d.spec.num_kv_heads = d.spec.num_heads;
    d.spec.mla = Some(mla);
    Ok(())
}

/// A pre-norm block of MLA and the MLP (dense or experts).
pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    let ctx = g.ctx;
    let (ts, h) = (ctx.rank_tokens, m.hidden_size);
    let n = ts * h;
    let a_in = g.norm(x, ts, h, NormKind::Rms, "input_layernorm");
    let a = mla(g, m, flags, a_in);
    let x2 = g.add(x, a, n, Cat::Residual);
    let f_in = g.norm(x2, ts, h, NormKind::Rms, "post_attention_layernorm");
    let f = mlp(g, m, flags, f_in, &LLAMA);
    g.add(x2, f, n, Cat::Residual)
}

/// Multi-head latent attention; without rotary on `NO_ROPE` layers.
pub(super) fn mla(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    use LinearRole as R;
    let Some(a) = m.mla else { return attention(g, m, flags, x, &LLAMA) };
    let ctx = g.ctx;
    let (t, ts, h, heads) = (ctx.tokens, ctx.rank_tokens, m.hidden_size, m.num_heads);
    let qk = a.qk_head_dim();
    let q = if a.q_lora_rank > 0 {
        let qa = g.linear(x, ts, h, a.q_lora_rank, R::Q, Cat::AttentionIo, "q_a_proj");
        let qn = g.norm(qa, t, a.q_lora_rank, NormKind::Rms, "q_a_layernorm");
        g.linear(qn, t, a.q_lora_rank, heads * qk, R::Q, Cat::AttentionIo, "q_b_proj")
    } else {
        g.linear(x, ts, h, heads * qk, R::Q, Cat::AttentionIo, "q_proj")
    };
    let ckv =
        g.linear(x, ts, h, a.kv_lora_rank + a.qk_rope_head_dim, R::K, Cat::AttentionIo, "kv_a_proj_with_mqa");
    let kn = g.norm(ckv, t, a.kv_lora_rank, NormKind::Rms, "kv_a_layernorm");
    let kv = g.linear(
        kn,
        t,
        a.kv_lora_rank,
        heads * (a.qk_nope_head_dim + a.v_head_dim),
        R::V,
        Cat::AttentionIo,
        "kv_b_proj",
    );
    let c = ctx.compute_elem;
    if flags & layer::NO_ROPE != 0 {
        // no rotary (Kimi-Linear's MLA): q is a view of its projection, k a new storage filled
        // from kv_b's key part and the shared latent key part
        let key = g.tensor(t * heads * qk * c, c, g.rg(kv) || g.rg(ckv), Cat::AttentionIo);
        let o = g.attention(q, key, kv, attn_of(ctx, m, flags));
        return g.linear(o, t, heads * a.v_head_dim, h, R::O, Cat::AttentionIo, "o_proj");
    }
    // rotary on q's and the shared key's rotary parts, then q and k concatenated (new storages)
    let q_rot = g.rope(q, t * heads * a.qk_rope_head_dim, a.qk_rope_head_dim, Shared::Rope);
    let k_rot = g.rope(ckv, t * a.qk_rope_head_dim, a.qk_rope_head_dim, Shared::Rope);
    let rg_q = g.rg(q_rot) || g.rg(q);
    let rg_k = g.rg(k_rot) || g.rg(kv);
    let query = g.tensor(t * heads * qk * c, c, rg_q, Cat::AttentionIo);
    let key = g.tensor(t * heads * qk * c, c, rg_k, Cat::AttentionIo);
    let mut at = attn_of(ctx, m, flags);
    // DeepSeek-V3.2's indexer (no grad) picks the keys each query attends: eager and SDPA get
    // the pick as an additive `(b, 1, s, s)` mask of the layer's own, which SDPA keeps
    at.masked |= a.index_heads > 0;
    let o = g.attention(query, key, kv, at);
    g.linear(o, t, heads * a.v_head_dim, h, R::O, Cat::AttentionIo, "o_proj")
}

fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    mla_params(p, m, l);
    if let Some(a) = m.mla
        && a.index_heads > 0
    {
        // V3.2's indexer: wq_b from the q latent, wk, a LayerNorm on its key (weight and bias),
        // weights_proj; it runs under `no_grad`, so they never get a gradient nor AdamW states
        let (ih, id) = (a.index_heads, a.index_head_dim);
        let frozen = ParamKind::Frozen;
        p.push(ih * id, a.q_lora_rank.max(1), l, frozen, Scope::Block, false);
        p.push(id, h, l, frozen, Scope::Block, false);
        p.push(2 * id, 1, l, frozen, Scope::Block, false);
        p.push(ih, h, l, frozen, Scope::Block, false);
    }
    let (dense, sparse) = dense_and_sparse_layers(m);
    moe_params_fp32_router(p, m, sparse);
    let di = dense_width(m);
    mlp_params(p, h, di, dense, true, false, false);
    p.norms(h, 2, l, false);
}

/// `layers` multi-head latent attentions: q directly or through its low-rank latent and norm,
/// the joint k/v latent with the shared rotary key part, its norm, kv_b and o_proj.
pub(super) fn mla_params(p: &mut Params, m: &TransformerSpec, layers: u64) {
    use LinearRole as R;
    let Some(a) = m.mla else { return };
    let (h, heads, qk) = (m.hidden_size, m.num_heads, a.qk_head_dim());
    if a.q_lora_rank > 0 {
        p.linear(a.q_lora_rank, h, layers, R::Q, m.qkv_bias);
        p.norms(a.q_lora_rank, 1, layers, false);
        p.linear(heads * qk, a.q_lora_rank, layers, R::Q, false);
    } else {
        p.linear(heads * qk, h, layers, R::Q, false);
    }
    p.linear(a.kv_lora_rank + a.qk_rope_head_dim, h, layers, R::K, m.qkv_bias);
    p.norms(a.kv_lora_rank, 1, layers, false);
    p.linear(heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, layers, R::V, false);
    p.linear(h, heads * a.v_head_dim, layers, R::O, m.o_bias);
}
