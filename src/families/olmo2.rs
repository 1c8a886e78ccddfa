//! OLMo 2: norms after attention and after the MLP (`x + norm(f(x))`, no pre-norm), an RMSNorm
//! over the whole q and k projections, the weight multiplied in fp32, rotary tables in fp32.

use super::prelude::*;

const STYLE: Style = Style {
    norm: NormKind::RmsWeightFp32,
    qk_norm: QkNorm::Full,
    placement: Placement::Post,
    rope_fp32: true,
    ..LLAMA
};

/// OLMo 2.
pub(super) struct Olmo2;

impl FamilyDef for Olmo2 {
    fn id(&self) -> &'static str {
        "olmo2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["olmo2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Olmo2DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        let (q, kv) = (m.q_width(), m.kv_width());
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.qkv_bias);
        p.norms(q, 1, l, false);
        p.norms(kv, 1, l, false);
        mlp_params(p, h, m.intermediate_size, l, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "olmo2" => Some(
                r#"{"vocab_size":50304,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
                "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false}"#,
            ),
            _ => None,
        }
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
