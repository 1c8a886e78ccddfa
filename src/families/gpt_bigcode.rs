//! GPT-BigCode (StarCoder, SantaCoder): GPT-2's layout (learned positions, pre-LayerNorm, one
//! fused `c_attn`, biases everywhere, dropout on embeddings, attention probabilities and both
//! residual branches) with multi-query attention (`multi_query`: one K/V head), `nn.Linear`
//! projections, GELU as one kernel (`gelu_pytorch_tanh`) and transformers' shared attention
//! code (eager softmax in fp32, SDPA).

use super::gpt2::{GPT2_PEFT, GptLayout, gpt_block, positions_embed};
use super::params::classic_head_params;
use super::prelude::*;

/// GPT-BigCode.
pub(super) struct GptBigcode;

const LAYOUT: GptLayout = GptLayout {
    norm: NormKind::Layer,
    act: Act::Gelu,
    adapter_any_qkv: true,
    names: ["ln_1", "c_attn", "attn.c_proj", "ln_2", "c_fc", "mlp.c_proj"],
};

impl FamilyDef for GptBigcode {
    fn id(&self) -> &'static str {
        "gpt_bigcode"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gpt_bigcode"]
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        Some(read(c.text))
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GPTBigCodeBlock"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        use LinearRole as R;
        use ParamKind as K;
        let (h, l, i, q, kv) = (m.hidden_size, m.num_layers, m.intermediate_size, m.q_width(), m.kv_width());
        p.push(m.vocab_size, h, 1, K::Embedding, Scope::Input, true);
        p.push(m.max_position_embeddings, h, 1, K::Embedding, Scope::Input, false);
        p.push(h, 1, 4 * l, K::Vector, Scope::Block, false); // ln_1, ln_2 weight + bias
        p.linear(q + 2 * kv, h, l, R::Q, true);
        p.linear(h, q, l, R::O, true);
        p.linear(i, h, l, R::Up, true);
        p.linear(h, i, l, R::Down, true);
        p.push(h, 1, 2, K::Vector, Scope::Output, false); // ln_f
        classic_head_params(p, m, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        gpt_block(g, m, flags, x, &LAYOUT)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        positions_embed(g, m, m.embedding_dropout)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "gpt_bigcode").then_some(
            r#"{"vocab_size":50257,"n_positions":1024,"n_embd":768,"n_layer":12,"n_head":12,"multi_query":true,
            "attn_pdrop":0.1,"resid_pdrop":0.1,"embd_pdrop":0.1,"tie_word_embeddings":true}"#,
        )
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&GPT2_PEFT)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds {
            rope: Rope::None,
            gated: false,
            act: Act::Gelu,
            // at the MLP: the block's input (the loop's variable), the attention output (still
            // held by `attn_outputs`), the residual sum and ln_2's output; c_fc's output and GELU's
            inference: InferKind::Classic { positions: true, mlp_widths: 2, mlp_inputs: 4 },
            qkv_one_adapter: true,
            final_norm: NormKind::Layer,
            ..OpKinds::DECODER
        }
    }
}

/// GPT-BigCode's own keys (GPT-2's names, `multi_query`).
fn read(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("n_embd")?;
    let a = r.positive("n_head")?;
    super::config::check_divides(r, "n_head", h, a)?;
    let multi_query = r.bool_or("multi_query", true)?;
    Ok(TransformerSpec {
        family: super::by_id("gpt_bigcode").unwrap_or_default(),
        head: Head::CausalLm,
        hidden_size: h,
        num_layers: r.positive("n_layer")?,
        num_heads: a,
        num_kv_heads: if multi_query { 1 } else { a },
        head_dim: h / a,
        intermediate_size: r.opt_u64("n_inner")?.unwrap_or(4 * h),
        vocab_size: r.positive("vocab_size")?,
        max_position_embeddings: r.positive("n_positions")?,
        tie_word_embeddings: r.bool_or("tie_word_embeddings", true)?,
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attn_pdrop", 0.1)?,
        hidden_dropout: r.f64_or("resid_pdrop", 0.1)?,
        embedding_dropout: r.f64_or("embd_pdrop", 0.1)?,
        context_length: r.opt_u64("n_positions")?.unwrap_or(0),
        ..TransformerSpec::default()
    })
}
