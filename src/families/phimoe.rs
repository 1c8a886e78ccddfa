//! PhiMoE (Phi-3.5-MoE): Mixtral's block with LayerNorms (weight and bias), biased attention
//! projections (`attention_bias`), an optionally biased LM head (`lm_head_bias`), and the
//! sparsemixer router: two rounds of a masked softmax in the logits' dtype, each drawing one
//! expert, so always two experts a token; in training the tokens may be jittered in place
//! (`input_jitter_noise`).

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, ..LLAMA };

/// PhiMoE.
pub(super) struct Phimoe;

impl FamilyDef for Phimoe {
    fn id(&self) -> &'static str {
        "phimoe"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["phimoe"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "PhimoeDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, true);
        if m.head == Head::CausalLm && m.head_bias {
            p.push(m.vocab_size, 1, 1, ParamKind::Vector, Scope::Output, true); // lm_head.bias
        }
        p.qkvo(m, m.qkv_bias, m.o_bias);
        moe_params(p, m, l, false);
        p.norms(h, 2, l, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "phimoe").then_some(
            r#"{"vocab_size":32064,"hidden_size":4096,"intermediate_size":6400,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":8,"max_position_embeddings":131072,
            "tie_word_embeddings":false,"sliding_window":null,"num_experts_per_tok":2,"num_local_experts":16,
            "input_jitter_noise":0.0,"attention_bias":false,"lm_head_bias":false,"rope_theta":1000000.0}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let experts = r.positive("num_local_experts")?;
        let top_k = r.positive("num_experts_per_tok")?;
        if top_k != 2 || experts < 2 {
            // sparsemixer draws exactly two experts whatever the config says
            return Err(r.invalid(
                "num_experts_per_tok",
                format!(
                    "{top_k}: PhiMoE's sparsemixer routes every token to exactly 2 of at least 2 experts"
                ),
            ));
        }
        let bias = r.bool_or("attention_bias", false)?;
        (d.spec.qkv_bias, d.spec.o_bias) = (bias, bias);
        d.spec.head_bias = r.bool_or("lm_head_bias", false)?;
        let input_jitter = r.f64_or("input_jitter_noise", 0.0)? > 0.0;
        d.spec.moe = Some(Moe { router: Router::SparseMixer, input_jitter, ..Moe::routed(experts, top_k) });
        d.all_sliding();
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
