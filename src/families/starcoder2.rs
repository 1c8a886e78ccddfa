//! StarCoder2: pre-LayerNorm with bias, biased projections, GQA with rotary, a plain
//! `c_proj(gelu_tanh(c_fc(x)))` MLP, residual dropout.

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };

/// StarCoder2.
pub(super) struct Starcoder2;

impl FamilyDef for Starcoder2 {
    fn id(&self) -> &'static str {
        "starcoder2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["starcoder2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Starcoder2DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, true);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        mlp_params(p, h, m.intermediate_size, l, false, false, m.mlp_bias);
        p.norms(h, 2, l, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PeftModules { up: "c_fc", down: r"mlp\.c_proj", ..PeftModules::LLAMA })
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
