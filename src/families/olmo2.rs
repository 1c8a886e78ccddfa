//! OLMo 2: norms after attention and after the MLP (`x + norm(f(x))`, no pre-norm), an RMSNorm
//! over the whole q and k projections, the weight multiplied in fp32, rotary tables in fp32.
//! OLMo 3: the same block with sliding-window layers (`layer_types`), each kind of layer with a
//! rotary table of its own.

use super::prelude::*;

const STYLE: Style = Style {
    norm: NormKind::RmsWeightFp32,
    qk_norm: QkNorm::Full,
    placement: Placement::Post,
    rope_fp32: true,
    ..LLAMA
};

const OLMO3: Style = Style { local_rope: true, ..STYLE };

/// OLMo 2 and OLMo 3.
pub(super) struct Olmo2;

impl FamilyDef for Olmo2 {
    fn id(&self) -> &'static str {
        "olmo2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["olmo2", "olmo3"]
    }

    fn block_class(&self, m: &TransformerSpec, _: &str) -> &'static str {
        if m.sliding_window.is_some() { "Olmo3DecoderLayer" } else { "Olmo2DecoderLayer" }
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
        sequential_block(g, m, flags, x, if m.sliding_window.is_some() { &OLMO3 } else { &STYLE })
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "olmo2" => Some(
                r#"{"vocab_size":50304,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
                "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false}"#,
            ),
            "olmo3" => Some(
                r#"{"vocab_size":50304,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
                "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,
                "sliding_window":4096,"max_position_embeddings":2048}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        if model_type == "olmo3" {
            // `layer_types`, else three sliding layers and a full one (the config class's)
            let l = d.spec.num_layers;
            d.sliding =
                r.layer_types(l)?.unwrap_or_else(|| (0..l).map(|j| !(j + 1).is_multiple_of(4)).collect());
        }
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
