//! GPT-NeoX / Pythia: LayerNorm with bias, a fused biased `query_key_value` (q, k, v are views
//! of one storage), rotary on the first `rotary_pct` of each head, and — with
//! `use_parallel_residual` — `x + attn(ln1(x)) + mlp(ln2(x))`; plain GELU MLP.

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, fused_qkv: true, act: Act::Gelu, gated: false, ..LLAMA };

/// GPT-NeoX's (and Falcon's) module names for PEFT.
pub(super) const PEFT: PeftModules = PeftModules {
    qkv: Some("query_key_value"),
    o: r"(?:attention|self_attention)\.dense",
    up: "dense_h_to_4h",
    down: "dense_4h_to_h",
    ..PeftModules::LLAMA
};

/// GPT-NeoX and Pythia.
pub(super) struct GptNeox;

impl FamilyDef for GptNeox {
    fn id(&self) -> &'static str {
        "gpt_neox"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gpt_neox"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GPTNeoXLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        parallel_block(g, m, flags, x, &STYLE, attention)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PEFT)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "gpt_neox" => Some(
                r#"{"vocab_size":50432,"hidden_size":6144,"intermediate_size":24576,"num_hidden_layers":44,
                "num_attention_heads":64,"rotary_pct":0.25,"use_parallel_residual":true,"attention_bias":true,
                "tie_word_embeddings":false,"hidden_dropout":0.0,"attention_dropout":0.0}"#,
            ),
            _ => None,
        }
    }

    fn config_kv_heads(&self, _: &Reader<'_>, heads: u64) -> Result<u64, ConfigError> {
        Ok(heads)
    }

    fn config_head_dim_key(&self) -> bool {
        false
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let s = &mut d.spec;
        s.qkv_bias = r.bool_or("attention_bias", true)?;
        s.o_bias = s.qkv_bias;
        s.mlp_bias = true;
        let pct = r.rotary_fraction("rotary_pct")?.unwrap_or(0.25);
        s.rope_dim = ((s.head_dim as f64) * pct) as u64;
        s.parallel_norms = if r.bool_or("use_parallel_residual", true)? { 2 } else { 0 };
        s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        // modeling_gpt_neox's rope ends in a cat at any rotary_pct
        OpKinds { rope: Rope::Cat, ..STYLE.kinds() }
    }

    fn litgpt(&self) -> Option<Litgpt> {
        Some(Litgpt::Parallel)
    }
}

/// An attention sub-block: its input's norm output in, the output projection's output out.
pub(super) type AttentionFn = fn(&mut Graph<'_>, &TransformerSpec, u8, Tensor, &Style) -> Tensor;

/// `x + attn(norm_a(x)) + mlp(norm_m(x))` (one shared norm when `parallel_norms == 1`); a
/// sequential block when the model is not parallel.
pub(super) fn parallel_block(
    g: &mut Graph<'_>,
    m: &TransformerSpec,
    flags: u8,
    x: Tensor,
    st: &Style,
    attention: AttentionFn,
) -> Tensor {
    if m.parallel_norms == 0 {
        return sequential_block(g, m, flags, x, st);
    }
    let ctx = g.ctx;
    let (ts, h) = (ctx.rank_tokens, m.hidden_size);
    let n = ts * h;
    let a_in = g.norm(x, ts, h, st.norm, "input_layernorm");
    let mut a = attention(g, m, flags, a_in, st);
    a = g.dropout(a, n, m.hidden_dropout);
    let f_in =
        if m.parallel_norms >= 2 { g.norm(x, ts, h, st.norm, "post_attention_layernorm") } else { a_in };
    let mut f = mlp(g, m, flags, f_in, st);
    f = g.dropout(f, n, m.hidden_dropout);
    let s = g.add(f, a, n, Cat::Residual);
    g.add(s, x, n, Cat::Residual)
}

/// A fused-QKV LayerNorm block's tensors (GPT-NeoX, Falcon): biases as the config says, one or
/// two input norms when parallel, input and post-attention norms when sequential.
pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, true);
    p.linear(m.q_width() + 2 * m.kv_width(), h, l, LinearRole::Q, m.qkv_bias);
    p.linear(h, m.q_width(), l, LinearRole::O, m.o_bias);
    mlp_params(p, h, m.intermediate_size, l, false, false, m.mlp_bias);
    p.norms(h, if m.parallel_norms == 0 { 2 } else { m.parallel_norms }, l, true);
}
