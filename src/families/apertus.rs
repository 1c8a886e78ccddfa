//! Apertus: Llama's pre-norm block (`attention_layernorm`, `feedforward_layernorm`) with a
//! per-head q/k RMSNorm and a plain MLP, `down(xielu(up(x)))`, whose xIELU has two trained
//! scalars per layer (`alpha_p`, `alpha_n`) and runs as transformers' Python fallback unless
//! the `xielu` CUDA package is installed (not modelled).

use super::prelude::*;

const STYLE: Style = Style { qk_norm: QkNorm::PerHead, gated: false, act: Act::Xielu, ..LLAMA };

/// Swiss AI Apertus.
pub(super) struct Apertus;

impl FamilyDef for Apertus {
    fn id(&self) -> &'static str {
        "apertus"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["apertus"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "ApertusDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        p.norms(m.head_dim, 2, l, false);
        mlp_params(p, h, m.intermediate_size, l, false, false, m.mlp_bias);
        p.push(2, 1, l, ParamKind::Vector, Scope::Block, false); // xIELU's alpha_p, alpha_n
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "apertus").then_some(
            r#"{"vocab_size":131072,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":32,"tie_word_embeddings":false,
            "attention_bias":false,"max_position_embeddings":65536,
            "rope_parameters":{"rope_type":"llama3","rope_theta":12000000.0,"factor":8.0,
            "low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}}"#,
        )
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
