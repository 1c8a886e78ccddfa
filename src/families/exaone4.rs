//! EXAONE 4.0: norms after each sublayer only (`x + norm(f(x))`, as OLMo 2, with Llama's
//! RMSNorm), a per-head q/k RMSNorm, and sliding-window layers (`layer_types`) beside global
//! ones that skip rotary when there is a window.

use super::prelude::*;

const STYLE: Style = Style { qk_norm: QkNorm::PerHead, placement: Placement::Post, ..LLAMA };

/// LG EXAONE 4.0.
pub(super) struct Exaone4;

impl FamilyDef for Exaone4 {
    fn id(&self) -> &'static str {
        "exaone4"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["exaone4"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Exaone4DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, false, false);
        p.norms(m.head_dim, 2, l, false);
        mlp_params(p, h, m.intermediate_size, l, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "exaone4").then_some(
            r#"{"vocab_size":102400,"hidden_size":4096,"intermediate_size":16384,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":32,"tie_word_embeddings":false,
            "sliding_window":4096,"sliding_window_pattern":4,"max_position_embeddings":2048,
            "rope_theta":10000.0}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        d.sliding = sliding_or_every(r, l, 4)?;
        // a global layer skips rotary when the model has a window
        if d.window.is_some() {
            d.no_rope = d.sliding.iter().map(|s| !s).collect();
        }
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
