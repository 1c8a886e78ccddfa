//! Arcee (AFM): Llama's block with a plain (not gated) MLP, `down(relu²(up(x)))`.

use super::prelude::*;

const STYLE: Style = Style { gated: false, act: Act::Relu2, ..LLAMA };

/// Arcee.
pub(super) struct Arcee;

impl FamilyDef for Arcee {
    fn id(&self) -> &'static str {
        "arcee"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["arcee"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "ArceeDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        mlp_params(p, h, m.intermediate_size, l, false, false, m.mlp_bias);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "arcee").then_some(
            r#"{"vocab_size":32000,"hidden_size":2560,"intermediate_size":18432,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":32,"head_dim":80,"tie_word_embeddings":false,
            "attention_bias":false,"mlp_bias":false,"max_position_embeddings":4096,"rope_theta":10000.0}"#,
        )
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
