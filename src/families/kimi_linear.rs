//! Kimi-Linear: most blocks mix with Kimi Delta Attention (a gated delta rule whose decay is per
//! channel), the `full_attention` ones with DeepSeek's multi-head latent attention without any
//! rotary (NoPE); a dense SwiGLU MLP in the first `first_k_dense_replace` layers, then routed
//! experts (sigmoid scores with a correction bias, the router in fp32) beside a shared expert.

use super::deepseek;
use super::prelude::*;
use serde_json::Value;

/// Kimi-Linear.
pub(super) struct KimiLinear;

impl FamilyDef for KimiLinear {
    fn id(&self) -> &'static str {
        "kimi_linear"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["kimi_linear"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "KimiLinearDecoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "kimi_linear").then_some(
            r#"{"vocab_size":163840,"hidden_size":2304,"intermediate_size":9216,"moe_intermediate_size":1024,
            "num_hidden_layers":27,"num_attention_heads":32,"num_key_value_heads":32,"num_shared_experts":1,
            "kv_lora_rank":512,"q_lora_rank":null,"qk_rope_head_dim":64,"v_head_dim":128,"qk_nope_head_dim":128,
            "num_expert_group":1,"topk_group":1,"num_experts_per_token":8,"moe_renormalize":true,
            "hidden_act":"silu","model_max_length":1048576,"rms_norm_eps":1e-5,"tie_word_embeddings":false,
            "attention_bias":false,"num_experts":256,"linear_head_dim":128,"linear_num_heads":32,
            "linear_conv_kernel_dim":4,"first_k_dense_replace":1}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        let kda = kda(r)?;
        d.spec.delta = Some(kda);
        let linear = linear_layers(r, l)?;
        d.more = linear.iter().map(|&x| if x { layer::SSM } else { 0 }).collect();
        // no rotary anywhere: the MLA layers are NoPE
        d.no_rope = vec![true; l as usize];
        deepseek::read_mla(r, d, false)?;
        read_moe(r, d)?;
        if let Some(moe) = &mut d.spec.moe {
            // `KimiLinearTopkRouter`: sigmoid scores, grouped top-k, whatever the file says
            moe.router = Router::SigmoidGroup;
            moe.groups = r.any_u64(&["num_expert_group", "n_group"])?.unwrap_or(1).max(1);
            moe.topk_group = r.u64_or("topk_group", 1)?.max(1);
        }
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        use LinearRole as R;
        let (h, l) = (m.hidden_size, m.num_layers);
        let linear = m.layers_with(layer::SSM, l);
        let attn = l - linear;
        p.ends(m, false);
        deepseek::mla_params(p, m, attn);
        if let Some(d) = &m.delta {
            let (w, hd) = (d.value_width(), d.k_dim);
            p.linear(d.key_width(), h, linear, R::Q, false);
            p.linear(d.key_width(), h, linear, R::K, false);
            p.linear(w, h, linear, R::V, false);
            p.push(d.conv_dim(), d.conv_kernel, linear, ParamKind::Vector, Scope::Block, true);
            // the forget gate: f_a, f_b, dt_bias (kept in fp32), A_log; b_proj; the output gate
            p.linear(hd, h, linear, R::Dense, false);
            p.linear(w, hd, linear, R::Dense, false);
            p.push(w, 1, linear, ParamKind::VectorFp32, Scope::Block, true);
            p.push(d.v_heads, 1, linear, ParamKind::Vector, Scope::Block, true);
            p.linear(d.v_heads, h, linear, R::Dense, false);
            p.linear(hd, h, linear, R::Dense, false);
            p.linear(w, hd, linear, R::Dense, false);
            p.push(d.v_dim, 1, linear, ParamKind::Vector, Scope::Block, false);
            p.linear(h, w, linear, R::O, false);
        }
        let (dense, sparse) = dense_and_sparse_layers(m);
        moe_params_fp32_router(p, m, sparse);
        mlp_params(p, h, dense_width(m), dense, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let (Some(d), true) = (m.delta, flags & layer::SSM != 0) else {
            return deepseek::block(g, m, flags, x);
        };
        mixer_block(g, m, flags, x, &LLAMA, ("input_layernorm", "post_attention_layernorm"), |g, n| {
            g.kda(n, m.hidden_size, &d)
        })
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        None
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        // the router: `F.linear(x.float(), w.float())`, its top-k weights left in fp32
        OpKinds { router_fp32: true, routing_fp32: true, ..LLAMA.kinds() }
    }
}

/// The KDA mixer's widths: the Hub files' `linear_attn_config` (`num_heads`, `head_dim`,
/// `short_conv_kernel_size`), else transformers' flattened `linear_*` keys.
fn kda(r: &Reader<'_>) -> Result<Delta, ConfigError> {
    let nested = r.get("linear_attn_config").cloned();
    let pick = |inner: &str, flat: &str, default: u64| -> Result<u64, ConfigError> {
        let n = match nested.as_ref().and_then(|v| v.get(inner)) {
            Some(v) => v.as_u64().ok_or_else(|| {
                r.invalid("linear_attn_config", format!("{inner}: expected a positive integer, found {v}"))
            })?,
            None => r.u64_or(flat, default)?,
        };
        if n == 0 {
            return Err(r.invalid(flat, "must be at least 1"));
        }
        Ok(n)
    };
    let heads = pick("num_heads", "linear_num_heads", 32)?;
    let dim = pick("head_dim", "linear_head_dim", 128)?;
    let taps = pick("short_conv_kernel_size", "linear_conv_kernel_dim", 4)?;
    Ok(Delta { k_heads: heads, v_heads: heads, k_dim: dim, v_dim: dim, conv_kernel: taps, kda: true })
}

/// Which layers mix with KDA: `layer_types`, else the Hub file's 1-based `kda_layers` /
/// `full_attn_layers`, else the class's pattern (full attention at every fourth layer from 4).
fn linear_layers(r: &Reader<'_>, l: u64) -> Result<Vec<bool>, ConfigError> {
    if let Some(listed) = super::ssm::listed_mixer_layers(r, l)? {
        return Ok(listed);
    }
    let full = r.get("linear_attn_config").and_then(|v| v.get("full_attn_layers")).and_then(Value::as_array);
    if let Some(full) = full {
        let mut linear = vec![true; l as usize];
        for v in full {
            match v.as_u64() {
                Some(i) if (1..=l).contains(&i) => linear[(i - 1) as usize] = false,
                _ => {
                    let msg = format!("full_attn_layers: {v} is not a layer number from 1 to {l}");
                    return Err(r.invalid("linear_attn_config", msg));
                }
            }
        }
        return Ok(linear);
    }
    Ok((0..l).map(|i| i == 0 || i % 4 != 0).collect())
}
