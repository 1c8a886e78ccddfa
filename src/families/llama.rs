//! Llama and its kin that transformers runs with the same block (Mistral, Qwen2, Mixtral,
//! Qwen2-MoE): `x + attn(rms(x))`, `x + mlp(rms(x))`, rotary, gated SiLU MLP or experts.

use super::prelude::*;

/// Llama, Mistral, Qwen2, Mixtral and Qwen2-MoE.
pub(super) struct Llama;

impl FamilyDef for Llama {
    fn id(&self) -> &'static str {
        "llama"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["llama", "mistral", "qwen2", "mixtral", "qwen2_moe"]
    }

    fn block_class(&self, m: &TransformerSpec, model_type: &str) -> &'static str {
        let n = model_type;
        if n.contains("mixtral") {
            "MixtralDecoderLayer"
        } else if n.contains("mistral") {
            "MistralDecoderLayer"
        } else if n.contains("qwen") && m.moe.is_some() {
            "Qwen2MoeDecoderLayer"
        } else if n == "granite" {
            "GraniteDecoderLayer"
        } else if n.contains("qwen") {
            "Qwen2DecoderLayer"
        } else {
            "LlamaDecoderLayer"
        }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &LLAMA)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }

    fn litgpt(&self) -> Option<Litgpt> {
        Some(Litgpt::Llama)
    }
}

/// A Llama-like model's tensors: embedding, final norm and head, q/k/v/o, the experts of the
/// sparse layers and the dense MLPs of the others, two norms a block.
pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.qkvo(m, m.qkv_bias, m.o_bias);
    let (dense, sparse) = dense_and_sparse_layers(m);
    // routed experts are fused 3-D tensors in transformers 5 (Mixtral included)
    moe_params(p, m, sparse, false, false);
    let di = dense_width(m);
    mlp_params(p, h, di, dense, true, false, m.mlp_bias);
    p.norms(h, 2, l, false);
}
