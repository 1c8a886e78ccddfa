//! Qwen3 and Qwen3-MoE: Llama with an RMSNorm over each head of q and k (before rotary).

use super::prelude::*;

const STYLE: Style = Style { qk_norm: QkNorm::PerHead, ..LLAMA };

/// Qwen3 and Qwen3-MoE.
pub(super) struct Qwen3;

impl FamilyDef for Qwen3 {
    fn id(&self) -> &'static str {
        "qwen3"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["qwen3", "qwen3_moe"]
    }

    fn block_class(&self, m: &TransformerSpec, _: &str) -> &'static str {
        if m.moe.is_some() { "Qwen3MoeDecoderLayer" } else { "Qwen3DecoderLayer" }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        p.norms(m.head_dim, 2, l, false); // q_norm, k_norm
        let (dense, sparse) = dense_and_sparse_layers(m);
        moe_params(p, m, sparse, false, false);
        let di = dense_width(m);
        mlp_params(p, h, di, dense, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
