//! Phi-1 / 1.5 / 2 (`PhiForCausalLM`): one LayerNorm feeds attention and the MLP in parallel,
//! `x + resid_dropout(attn(ln(x))) + resid_dropout(mlp(ln(x)))`; biased `q_proj`, `k_proj`,
//! `v_proj` and `dense`; rotary on the first `partial_rotary_factor` of each head (q and k are
//! concatenated back into new storages); an optional LayerNorm on each head of q and k
//! (`qk_layernorm`); `fc1`, `gelu_new` written out in ops, `fc2`; a biased `lm_head`.

use super::gpt_neox::parallel_block;
use super::prelude::*;

/// Phi's block as its config asks (q/k LayerNorm, `gelu_new` or one GELU kernel).
fn style(m: &TransformerSpec) -> Style {
    Style {
        norm: NormKind::Layer,
        qk_norm: if m.qk_layernorm { QkNorm::PerHead } else { QkNorm::None },
        act: if m.gelu_new { Act::GeluNew } else { Act::Gelu },
        gated: false,
        ..LLAMA
    }
}

/// Phi-1, 1.5 and 2.
pub(super) struct Phi;

impl FamilyDef for Phi {
    fn id(&self) -> &'static str {
        "phi"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["phi"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "PhiDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, true);
        if m.head == Head::CausalLm {
            p.push(m.vocab_size, 1, 1, ParamKind::Vector, Scope::Output, true); // lm_head.bias
        }
        p.qkvo(m, true, true);
        mlp_params(p, h, m.intermediate_size, l, false, false, true);
        p.norms(h, 1, l, true);
        if m.qk_layernorm {
            p.norms(m.head_dim, 2, l, true);
        }
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        parallel_block(g, m, flags, x, &style(m), attention)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PeftModules { o: r"self_attn\.dense", up: "fc1", down: "fc2", ..PeftModules::LLAMA })
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        style(m).kinds()
    }

    fn litgpt(&self) -> Option<Litgpt> {
        Some(Litgpt::Parallel)
    }
}
