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

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "phi" => Some(
                r#"{"vocab_size":51200,"hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":24,
                "num_attention_heads":32,"resid_pdrop":0.0,"embd_pdrop":0.0,"attention_dropout":0.0,
                "hidden_act":"gelu_new","tie_word_embeddings":false,"partial_rotary_factor":0.5,
                "qk_layernorm":false}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let s = &mut d.spec;
        (s.qkv_bias, s.o_bias, s.mlp_bias) = (true, true, true);
        s.parallel_norms = 1;
        s.hidden_dropout = r.f64_or("resid_pdrop", 0.0)?;
        s.embedding_dropout = r.f64_or("embd_pdrop", 0.0)?;
        s.qk_layernorm = r.bool_or("qk_layernorm", false)?;
        s.gelu_new = match r.str("hidden_act").unwrap_or("gelu_new") {
            "gelu_new" => true,
            // one GELU kernel (erf or tanh): keeps its input
            "gelu" | "gelu_pytorch_tanh" => false,
            other => {
                return Err(r.invalid(
                    "hidden_act",
                    format!("{other:?}: phi is modelled with gelu_new, gelu or gelu_pytorch_tanh"),
                ));
            }
        };
        Ok(())
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        style(m).kinds()
    }

    fn litgpt(&self) -> Option<Litgpt> {
        Some(Litgpt::Parallel)
    }
}
