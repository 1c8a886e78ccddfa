//! Qwen3-Next: three of every four blocks mix with a gated DeltaNet (`linear_attention`), the
//! fourth with gated attention (q_proj also makes a gate whose sigmoid scales the output; per-head
//! q/k norms; a quarter of each head rotated); zero-centred RMSNorms (`1 + w`, in fp32); every MLP
//! a mixture of SwiGLU experts beside a sigmoid-gated shared expert.

use super::prelude::*;

const STYLE: Style =
    Style { norm: NormKind::RmsOffset, qk_norm: QkNorm::PerHead, output_gate: true, ..LLAMA };

/// Qwen3-Next.
pub(super) struct Qwen3Next;

impl FamilyDef for Qwen3Next {
    fn id(&self) -> &'static str {
        "qwen3_next"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["qwen3_next", "qwen3_5_moe", "qwen3_5_moe_text"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Qwen3NextDecoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "qwen3_next").then_some(
            r#"{"vocab_size":151936,"hidden_size":2048,"intermediate_size":5632,"num_hidden_layers":48,
            "num_attention_heads":16,"num_key_value_heads":2,"hidden_act":"silu","max_position_embeddings":32768,
            "rms_norm_eps":1e-6,"tie_word_embeddings":false,"attention_bias":false,"attention_dropout":0.0,
            "head_dim":256,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_value_head_dim":128,
            "linear_num_key_heads":16,"linear_num_value_heads":32,"decoder_sparse_step":1,
            "moe_intermediate_size":512,"shared_expert_intermediate_size":512,"num_experts_per_tok":10,
            "num_experts":512,"norm_topk_prob":true,"partial_rotary_factor":0.25,
            "full_attention_interval":4}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        let delta = Delta {
            k_heads: r.positive("linear_num_key_heads")?,
            v_heads: r.positive("linear_num_value_heads")?,
            k_dim: r.positive("linear_key_head_dim")?,
            v_dim: r.positive("linear_value_head_dim")?,
            conv_kernel: r.positive("linear_conv_kernel_dim")?,
            kda: false,
        };
        if !delta.v_heads.is_multiple_of(delta.k_heads) {
            let msg = format!("{} value heads must be a multiple of the key heads", delta.v_heads);
            return Err(r.invalid("linear_num_value_heads", msg));
        }
        d.spec.delta = Some(delta);
        let every = r.u64_or("full_attention_interval", 4)?.max(1);
        let linear = match super::ssm::listed_mixer_layers(r, l)? {
            Some(listed) => listed,
            None => (0..l).map(|i| (i + 1) % every != 0).collect(),
        };
        d.more = linear.iter().map(|&x| if x { layer::SSM } else { 0 }).collect();
        read_moe(r, d)?;
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        use LinearRole as R;
        let (h, l) = (m.hidden_size, m.num_layers);
        let linear = m.layers_with(layer::SSM, l);
        let attn = l - linear;
        p.ends(m, false);
        p.linear(2 * m.q_width(), h, attn, R::Q, m.qkv_bias);
        p.linear(m.kv_width(), h, attn, R::K, m.qkv_bias);
        p.linear(m.kv_width(), h, attn, R::V, m.qkv_bias);
        p.linear(h, m.q_width(), attn, R::O, m.o_bias);
        p.norms(m.head_dim, 2, attn, false);
        if let Some(d) = &m.delta {
            let (kw, vw) = (d.key_width(), d.value_width());
            p.linear(2 * kw + 2 * vw, h, linear, R::Q, false);
            p.linear(2 * d.v_heads, h, linear, R::K, false);
            p.push(d.conv_dim(), d.conv_kernel, linear, ParamKind::Vector, Scope::Block, true);
            p.push(d.v_heads, 1, 2 * linear, ParamKind::Vector, Scope::Block, true);
            p.push(d.v_dim, 1, linear, ParamKind::Vector, Scope::Block, false);
            p.linear(h, vw, linear, R::O, false);
        }
        let (dense, sparse) = dense_and_sparse_layers(m);
        mlp_params(p, h, dense_width(m), dense, true, false, false);
        moe_params(p, m, sparse, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let (Some(d), true) = (m.delta, flags & layer::SSM != 0) else {
            return sequential_block(g, m, flags, x, &STYLE);
        };
        mixer_block(g, m, flags, x, &STYLE, ("input_layernorm", "post_attention_layernorm"), |g, n| {
            g.gated_delta(n, m.hidden_size, &d)
        })
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
