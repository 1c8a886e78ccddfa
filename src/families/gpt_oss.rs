//! gpt-oss: Llama-like pre-norm block with biased projections, learned attention sinks (an
//! extra logit column per head in eager attention; transformers has no SDPA path for them),
//! alternating sliding-window and full layers, rotary over two halves, and an MoE MLP (router with
//! a bias, top-k then softmax, experts with biases and a clamped SwiGLU).

use super::prelude::*;

/// gpt-oss's RMSNorm multiplies the weight in fp32 before casting back (like OLMo 2's).
const STYLE: Style = Style { norm: NormKind::RmsWeightFp32, ..LLAMA };

/// gpt-oss.
pub(super) struct GptOss;

impl FamilyDef for GptOss {
    fn id(&self) -> &'static str {
        "gpt_oss"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gpt_oss"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GptOssDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, true, true);
        p.push(m.num_heads, 1, l, ParamKind::Vector, Scope::Block, true); // sinks
        moe_params(p, m, l, true);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "gpt_oss" => Some(
                r#"{"vocab_size":201088,"hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":36,
                "num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"tie_word_embeddings":false,
                "attention_bias":true,"sliding_window":128,"num_local_experts":128,"num_experts_per_tok":4}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let experts = r.positive("num_local_experts")?;
        let top_k = r.positive_any(&["num_experts_per_tok", "experts_per_token"])?;
        check_top_k(r, top_k, experts)?;
        d.spec.moe =
            Some(Moe { router: Router::TopkSoftmax, router_bias: true, ..Moe::routed(experts, top_k) });
        d.spec.qkv_bias = r.bool_or("attention_bias", true)?;
        d.spec.o_bias = d.spec.qkv_bias;
        let n = d.spec.num_layers as usize;
        d.sliding =
            r.layer_types(d.spec.num_layers)?.unwrap_or_else(|| (0..n).map(|j| (j + 1) % 2 != 0).collect());
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::Halves, sinks: true, eager_only: true, clamped_swiglu: true, ..STYLE.kinds() }
    }
}
