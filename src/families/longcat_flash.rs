//! LongCat-Flash: each decoder layer runs two sublayers, each an MLA (DeepSeek's, with q's
//! low-rank latent, both latents scaled) and a dense SwiGLU MLP, and a "shortcut" MoE that reads
//! the first sublayer's normed stream and is added after the second. The router scores the
//! routed experts and `zero_expert_num` identity experts with a softmax (no renormalisation),
//! in fp32.

use super::deepseek;
use super::prelude::*;

/// LongCat-Flash.
pub(super) struct LongcatFlash;

impl FamilyDef for LongcatFlash {
    fn id(&self) -> &'static str {
        "longcat_flash"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["longcat_flash"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "LongcatFlashDecoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "longcat_flash").then_some(
            r#"{"vocab_size":131072,"hidden_size":6144,"num_layers":28,"num_attention_heads":64,
            "hidden_act":"silu","max_position_embeddings":131072,"rms_norm_eps":1e-5,
            "tie_word_embeddings":false,"attention_bias":false,"ffn_hidden_size":12288,"q_lora_rank":1536,
            "kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"moe_topk":12,
            "n_routed_experts":512,"zero_expert_num":256,"expert_ffn_hidden_size":2048,
            "routed_scaling_factor":6.0}"#,
        )
    }

    fn config_layers(&self, r: &Reader<'_>) -> Result<u64, ConfigError> {
        // decoder layers (`num_layers`); `num_hidden_layers` counts their attention sublayers
        if r.has("num_layers") || !r.has("num_hidden_layers") {
            return r.positive("num_layers");
        }
        Ok(r.positive("num_hidden_layers")?.div_ceil(2))
    }

    fn config_intermediate(&self, r: &Reader<'_>, _: u64) -> Result<u64, ConfigError> {
        r.positive_any(&["ffn_hidden_size", "intermediate_size"])
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        deepseek::read_mla(r, d, false)?;
        d.spec.attn_per_block = 2;
        read_moe(r, d)?;
        let Some(moe) = &mut d.spec.moe else {
            return Err(r.missing(&["n_routed_experts"]));
        };
        // every layer has its shortcut MoE beside the two dense MLPs
        d.dense = Vec::new();
        moe.router = Router::SoftmaxNoNorm;
        moe.zero_experts = r.u64_or("zero_expert_num", 0)?;
        moe.router_bias = r.bool_or("router_bias", false)?;
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        deepseek::mla_params(p, m, 2 * l);
        // the router (`classifier`, the identity experts' rows with the routed ones) stays in the
        // model's dtype: `_keep_in_fp32_modules` applies under fp16 or quantisation only
        moe_params(p, m, l, false);
        mlp_params(p, h, dense_width(m), 2 * l, true, false, false);
        p.norms(h, 4, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let ctx = g.ctx;
        let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
        let (n, i) = (ts * h, dense_width(m));
        let a_in = g.norm(x, ts, h, NormKind::Rms, "input_layernorm.0");
        let a = deepseek::mla(g, m, flags, a_in);
        let x1 = g.add(x, a, n, Cat::Residual);
        let f_in = g.norm(x1, ts, h, NormKind::Rms, "post_attention_layernorm.0");
        let shortcut = mlp(g, m, flags, f_in, &LLAMA);
        let f = dense_mlp(g, f_in, t, ts, h, i, &LLAMA);
        let x2 = g.add(x1, f, n, Cat::Residual);
        let a_in = g.norm(x2, ts, h, NormKind::Rms, "input_layernorm.1");
        let a = deepseek::mla(g, m, flags, a_in);
        let x3 = g.add(x2, a, n, Cat::Residual);
        let f_in = g.norm(x3, ts, h, NormKind::Rms, "post_attention_layernorm.1");
        let f = dense_mlp(g, f_in, t, ts, h, i, &LLAMA);
        let y = g.add(x3, f, n, Cat::Residual);
        g.add(y, shortcut, n, Cat::Residual)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        None
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        // the router: `F.linear(x.float(), w.float())` with its weight in the model's dtype, its
        // top-k weights left in fp32
        OpKinds { router_fp32: true, router_weight_cast: true, routing_fp32: true, ..LLAMA.kinds() }
    }
}
