//! MiniMax-M2: Llama's pre-norm block with an RMSNorm over the whole q and k projections,
//! partial rotary ending in a `cat` (the legacy `rotary_dim` key), and routed experts of
//! `intermediate_size` chosen by sigmoid scores plus a correction bias (a buffer, not a
//! parameter), their top-k weights renormalised.

use super::prelude::*;

const STYLE: Style = Style { qk_norm: QkNorm::Full, ..LLAMA };

/// MiniMax-M2.
pub(super) struct MinimaxM2;

impl FamilyDef for MinimaxM2 {
    fn id(&self) -> &'static str {
        "minimax_m2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["minimax_m2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "MiniMaxM2DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::olmoe::Olmoe.params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "minimax_m2").then_some(
            r#"{"vocab_size":200064,"hidden_size":3072,"intermediate_size":1536,"num_hidden_layers":62,
            "num_attention_heads":48,"num_key_value_heads":8,"head_dim":128,"tie_word_embeddings":false,
            "num_local_experts":256,"num_experts_per_tok":8,"max_position_embeddings":196608,
            "rope_theta":5000000.0}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        // released checkpoints give the rotary width as `rotary_dim` (the config class turns it
        // into `partial_rotary_factor`)
        if let Some(rot) = r.opt_u64("rotary_dim")?.filter(|&x| x > 0 && x < d.spec.head_dim) {
            d.spec.rope_dim = rot;
        }
        read_moe(r, d)?;
        if let Some(moe) = d.spec.moe.as_mut() {
            moe.router = Router::SigmoidGroup;
        }
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        // the sigmoid scores' top-k weights stay fp32 (`routing_weights.gather(...)`)
        OpKinds { rope: Rope::Cat, routing_fp32: true, ..STYLE.kinds() }
    }
}
