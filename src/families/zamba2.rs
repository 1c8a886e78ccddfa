//! Zamba2: Mamba2 blocks (`x + mamba(norm(x))`), and at the `hybrid` layers a shared transformer
//! block before the Mamba2 one. The shared block (`num_mem_blocks` copies whose weights every
//! hybrid layer reuses in turn) reads the concatenation of the stream and the embeddings' output
//! (`2h` wide): an RMSNorm over it, attention with heads of `2h / heads`, o_proj back to `h`, an
//! RMSNorm and a gated MLP (`gate_up_proj` fused); each hybrid layer has its own low-rank
//! adapters on q/k/v (`use_shared_attention_adapter`) and gate_up, and its own `h × h` Linear,
//! whose output is added to the Mamba2 block's input (the residual is the block's input alone).

use super::prelude::*;

const STYLE: Style = Style { fused_gate_up: true, act: Act::Gelu, ..LLAMA };

/// `Zamba2Config`'s spellings of the Mamba2 mixer.
const KEYS: super::ssm::Keys = super::ssm::Keys {
    heads: &["n_mamba_heads"],
    head_dim: &["mamba_headdim"],
    state: &["mamba_d_state"],
    groups: &["mamba_ngroups"],
    chunk: &["chunk_size"],
    conv: &["mamba_d_conv"],
    conv_bias: "use_conv_bias",
    proj_bias: "add_bias_linear",
    expand: &["mamba_expand"],
};

/// Zyphra Zamba2.
pub(super) struct Zamba2;

impl FamilyDef for Zamba2 {
    fn id(&self) -> &'static str {
        "zamba2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["zamba2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Zamba2MambaDecoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "zamba2").then_some(
            r#"{"vocab_size":32000,"hidden_size":2560,"num_hidden_layers":54,"num_attention_heads":32,
            "num_key_value_heads":32,"intermediate_size":10240,"mamba_d_state":64,"mamba_d_conv":4,
            "mamba_expand":2,"mamba_ngroups":1,"mamba_headdim":640,"n_mamba_heads":8,
            "num_mem_blocks":1,"adapter_rank":128,"use_shared_attention_adapter":false,
            "use_mem_rope":false,"add_bias_linear":false,"use_conv_bias":true,"chunk_size":256,
            "hidden_act":"gelu","tie_word_embeddings":true,"max_position_embeddings":4096,
            "attention_dropout":0.0,"layers_block_type":["linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention","linear_attention","hybrid","linear_attention","linear_attention"]}"#,
        )
    }

    fn config_head_dim_key(&self) -> bool {
        false
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let h = d.spec.hidden_size;
        let mut s = super::ssm::read(r, h, &KEYS)?;
        // the Mamba2 mixer runs in every layer, the hybrid ones too
        s.beside_attention = true;
        d.spec.ssm = Some(s);
        // attention over the concatenated stream: heads of 2h / heads
        d.spec.head_dim = 2 * h / d.spec.num_heads.max(1);
        // `layers_block_type` (the file's `hybrid_layer_ids` is derived from it, not read)
        let hybrid: Vec<bool> =
            super::ssm::mamba_layers(r, d.spec.num_layers)?.into_iter().map(|m| !m).collect();
        d.more = hybrid.iter().map(|&x| if x { 0 } else { layer::SSM | layer::NO_MLP }).collect();
        if !r.bool_or("use_mem_rope", false)? {
            d.no_rope = vec![true; d.spec.num_layers as usize];
        }
        d.spec.zamba = Some(crate::model::Zamba {
            shared_blocks: r.u64_or("num_mem_blocks", 1)?.max(1),
            adapter_rank: r.u64_or("adapter_rank", 128)?,
            attention_adapters: r.bool_or("use_shared_attention_adapter", false)?,
        });
        d.spec.mlp_bias = r.bool_or("add_bias_linear", false)?;
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        use LinearRole as R;
        let (h, l) = (m.hidden_size, m.num_layers);
        let hybrid = m.attention_layers_among(l);
        p.ends(m, false);
        if let Some(s) = &m.ssm {
            ssm_params(p, s, h, l);
        }
        p.norms(h, 1, l, false);
        p.linear(h, h, hybrid, R::Dense, false);
        let Some(z) = m.zamba else { return };
        // the shared blocks (as many as are used), their adapters one per hybrid layer
        let shared = z.shared_blocks.min(hybrid);
        let (w, i, r) = (2 * h, m.intermediate_size, z.adapter_rank);
        p.norms(w, 1, shared, false);
        p.norms(h, 1, shared, false);
        p.linear(m.q_width(), w, shared, R::Q, false);
        p.linear(m.kv_width(), w, shared, R::K, false);
        p.linear(m.kv_width(), w, shared, R::V, false);
        p.linear(h, m.q_width(), shared, R::O, false);
        mlp_params(p, h, i, shared, true, true, m.mlp_bias);
        if z.attention_adapters {
            p.linear(r, w, 3 * hybrid, R::Dense, false);
            p.linear(w, r, 3 * hybrid, R::Dense, false);
        }
        p.linear(r, h, hybrid, R::Dense, false);
        p.linear(2 * i, r, hybrid, R::Dense, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let Some(s) = m.ssm else { return x };
        let (ts, h) = (g.ctx.rank_tokens, m.hidden_size);
        let input = if flags & layer::SSM == 0 {
            let t = shared_transformer(g, m, flags, x);
            let t = g.linear(t, ts, h, h, LinearRole::Dense, Cat::Mlp, "linear");
            g.add(x, t, ts * h, Cat::Residual)
        } else {
            x
        };
        let n = g.norm(input, ts, h, LLAMA.norm, "input_layernorm");
        let a = g.mamba2(n, h, &s);
        g.add(a, x, ts * h, Cat::Residual)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        // the hybrid layers receive a clone of the embeddings' output (`original_hidden_states`)
        OpKinds { rope: Rope::None, checkpoint_shares_embeddings: true, ..STYLE.kinds() }
    }
}

/// The shared transformer block on `cat(x, embeddings)`: its norm, attention (with q/k/v
/// adapters), norm and gated MLP (with its adapter); returns the MLP's output.
fn shared_transformer(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    let w = 2 * h;
    let Some(z) = m.zamba else { return x };
    let cat = g.tensor(ts * w * ctx.residual_elem, ctx.residual_elem, g.rg(x), Cat::Residual);
    let n = g.norm(cat, ts, w, LLAMA.norm, "input_layernorm");
    let (qw, kw) = (m.q_width(), m.kv_width());
    let mut q = g.linear(n, ts, w, qw, LinearRole::Q, Cat::AttentionIo, "q_proj");
    let mut k = g.linear(n, ts, w, kw, LinearRole::K, Cat::AttentionIo, "k_proj");
    let mut v = g.linear(n, ts, w, kw, LinearRole::V, Cat::AttentionIo, "v_proj");
    if z.attention_adapters {
        for (y, width, name) in
            [(&mut q, qw, "q adapter"), (&mut k, kw, "k adapter"), (&mut v, kw, "v adapter")]
        {
            let a = g.linear(n, ts, w, z.adapter_rank, LinearRole::Dense, Cat::AttentionIo, name);
            let b = g.linear(a, ts, z.adapter_rank, width, LinearRole::Dense, Cat::AttentionIo, name);
            *y = g.add(*y, b, t * width, Cat::AttentionIo);
        }
    }
    let kinds = super::ops(m);
    let o = g.attention(q, k, v, super::attn_with(&kinds, ctx, m, flags));
    let o = g.linear(o, t, qw, h, LinearRole::O, Cat::AttentionIo, "o_proj");
    let n2 = g.norm(o, ts, h, LLAMA.norm, "pre_ff_layernorm");
    // gate_up plus its adapter, then act(gate) · up
    let i = m.intermediate_size;
    let gu = g.linear(n2, ts, h, 2 * i, LinearRole::Gate, Cat::Mlp, "gate_up_proj");
    let a = g.linear(n2, ts, h, z.adapter_rank, LinearRole::Dense, Cat::Mlp, "gate_up adapter");
    let b = g.linear(a, ts, z.adapter_rank, 2 * i, LinearRole::Dense, Cat::Mlp, "gate_up adapter");
    let gu = g.add(gu, b, t * 2 * i, Cat::Mlp);
    // `chunk` reads two views of the sum: the activation keeps it, the product too
    let act = g.act(gu, t * i, STYLE.act);
    let p = g.mul(act, gu, t * i);
    g.linear(p, t, i, h, LinearRole::Down, Cat::Mlp, "down_proj")
}
