//! OLMoE: Llama's pre-norm block with an RMSNorm over the whole q and k projections (as OLMo 2,
//! whose norms sit after each sublayer instead) and routed experts only, softmax routing whose
//! top-k weights are not renormalised (`norm_topk_prob: false`).

use super::prelude::*;

const STYLE: Style = Style { qk_norm: QkNorm::Full, ..LLAMA };

/// OLMoE.
pub(super) struct Olmoe;

impl FamilyDef for Olmoe {
    fn id(&self) -> &'static str {
        "olmoe"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["olmoe"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "OlmoeDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        p.norms(m.q_width(), 1, l, false);
        p.norms(m.kv_width(), 1, l, false);
        let (dense, sparse) = dense_and_sparse_layers(m);
        moe_params(p, m, sparse, false);
        mlp_params(p, h, dense_width(m), dense, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "olmoe").then_some(
            r#"{"vocab_size":50304,"hidden_size":2048,"intermediate_size":2048,"num_hidden_layers":16,
            "num_attention_heads":16,"num_key_value_heads":16,"tie_word_embeddings":false,"attention_bias":false,
            "num_experts":64,"num_experts_per_tok":8,"norm_topk_prob":false,"max_position_embeddings":4096,
            "rope_theta":10000.0}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        read_moe(r, d)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
