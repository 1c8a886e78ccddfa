//! Every decoder family's keys (Llama-shaped, with each family's extras) and the per-layer flags.

use super::*;

/// Per-layer flags from per-layer sliding / dense / no-rope bits; empty when every layer is
/// alike (every layer sliding is `sliding_window` alone).
pub(super) fn flags_of(sliding: &[bool], dense: &[bool], no_rope: &[bool], layers: u64) -> Vec<u8> {
    let f: Vec<u8> = (0..layers as usize)
        .map(|i| {
            let mut x = 0;
            if sliding.get(i).copied().unwrap_or(false) {
                x |= layer::SLIDING;
            }
            if dense.get(i).copied().unwrap_or(false) {
                x |= layer::DENSE;
            }
            if no_rope.get(i).copied().unwrap_or(false) {
                x |= layer::NO_ROPE;
            }
            x
        })
        .collect();
    match f.first() {
        Some(&x) if (x == 0 || x == layer::SLIDING) && f.iter().all(|&y| y == x) => Vec::new(),
        _ => f,
    }
}

/// Every decoder family but GPT-2 (Llama-shaped keys, with the family's own extras).
pub(super) fn decoder(r: &Reader<'_>, family: Family, mt: &str) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive_any(&["hidden_size", "n_embd", "d_model"])?;
    let enc_dec = r.bool_or("is_encoder_decoder", false)?;
    let mut l = r.positive_any(&["num_hidden_layers", "n_layer", "num_layers", "encoder_layers"])?;
    let a = r.positive_any(&["num_attention_heads", "n_head", "num_heads", "encoder_attention_heads"])?;
    let kv = match family.id() {
        "gpt_neox" => a,
        "falcon" => {
            if r.bool_or("new_decoder_architecture", false)? {
                r.u64_or("num_kv_heads", a)?
            } else if r.bool_or("multi_query", true)? {
                1
            } else {
                a
            }
        }
        _ => r.any_u64(&["num_key_value_heads", "num_kv_heads", "n_head_kv"])?.unwrap_or(a),
    };
    if kv == 0 || !a.is_multiple_of(kv) {
        return Err(r.invalid("num_key_value_heads", format!("{kv} must divide num_attention_heads ({a})")));
    }
    let mut head_dim = match r.any_u64(&["head_dim", "d_kv"])? {
        Some(d) if d > 0 && !matches!(family.id(), "gpt_neox" | "falcon") => d,
        _ => {
            check_divides(r, "num_attention_heads", h, a)?;
            h / a
        }
    };
    let mut i = match family.id() {
        "falcon" => r.opt_u64("ffn_hidden_size")?.unwrap_or(4 * h),
        _ => r
            .any_u64(&[
                "intermediate_size",
                "ffn_dim",
                "d_ff",
                "n_inner",
                "encoder_ffn_dim",
                "ffn_hidden_size",
            ])?
            .unwrap_or(4 * h),
    };
    let v = r.positive_any(&["vocab_size", "n_vocab", "padded_vocab_size"])?;
    if enc_dec {
        // encoder and decoder stacks; a Llama-shaped MLP with the real MLP's parameters
        l += r.any_u64(&["num_decoder_layers", "decoder_layers"])?.unwrap_or(l);
        let ff_proj = r.str("feed_forward_proj").unwrap_or("relu");
        if !ff_proj.starts_with("gated") {
            i = (2 * i / 3).max(1);
        }
    }
    let attention_bias = r.bool_or("attention_bias", false)?;
    let mut s = TransformerSpec {
        family,
        head: Head::CausalLm,
        hidden_size: h,
        num_layers: l,
        num_heads: a,
        num_kv_heads: kv,
        head_dim,
        intermediate_size: i,
        vocab_size: v,
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        mlp_bias: r.bool_or("mlp_bias", false)?,
        attention_dropout: r.f64_or("attention_dropout", 0.0)?,
        context_length: r
            .any_u64(&[
                "max_position_embeddings",
                "n_positions",
                "max_seq_len",
                "seq_length",
                "max_sequence_length",
            ])?
            .unwrap_or(0),
        ..TransformerSpec::default()
    };
    let n = l as usize;
    let mut sliding: Vec<bool> = Vec::new();
    let mut dense: Vec<bool> = Vec::new();
    let mut no_rope: Vec<bool> = Vec::new();
    let mut window = r.opt_u64("sliding_window")?.filter(|w| *w > 0);
    let all = vec![true; n];
    match mt {
        "qwen2" => {
            s.qkv_bias = true;
            s.o_bias = false;
        }
        "qwen2_moe" | "qwen3_moe" => {
            if mt == "qwen2_moe" {
                s.qkv_bias = r.bool_or("qkv_bias", true)?;
                s.o_bias = false;
            }
            let experts = r.positive_any(&["num_experts", "num_local_experts"])?;
            let top_k = r.positive("num_experts_per_tok")?;
            check_top_k(r, top_k, experts)?;
            let moe_i = r.positive("moe_intermediate_size")?;
            s.dense_intermediate_size = i;
            s.intermediate_size = moe_i;
            let step = r.u64_or("decoder_sparse_step", 1)?.max(1);
            let only = r.u64_list("mlp_only_layers")?.unwrap_or_default();
            dense = (0..l).map(|j| only.contains(&j) || !(j + 1).is_multiple_of(step)).collect();
            s.moe = Some(if mt == "qwen2_moe" {
                let shared = r.u64_or("shared_expert_intermediate_size", 0)?;
                Moe {
                    experts,
                    top_k,
                    shared_experts: u64::from(shared > 0),
                    shared_intermediate_size: shared,
                    router: Router::SoftmaxSharedGate,
                }
            } else {
                let router =
                    if r.bool_or("norm_topk_prob", false)? { Router::Softmax } else { Router::SoftmaxNoNorm };
                Moe { router, ..Moe::routed(experts, top_k) }
            });
        }
        "mixtral" => {
            let experts = r.positive("num_local_experts")?;
            let top_k = r.positive("num_experts_per_tok")?;
            check_top_k(r, top_k, experts)?;
            s.moe = Some(Moe::routed(experts, top_k));
        }
        "deepseek_v2" | "deepseek_v3" => {
            let mla = Mla {
                q_lora_rank: r.u64_or("q_lora_rank", 0)?,
                kv_lora_rank: r.positive("kv_lora_rank")?,
                qk_nope_head_dim: r.u64_or("qk_nope_head_dim", 0)?,
                qk_rope_head_dim: r.u64_or("qk_rope_head_dim", 0)?,
                v_head_dim: r.positive("v_head_dim")?,
            };
            head_dim = mla.qk_head_dim();
            s.head_dim = head_dim;
            s.num_kv_heads = a;
            s.mla = Some(mla);
            let experts = r.positive("n_routed_experts")?;
            let top_k = r.positive("num_experts_per_tok")?;
            check_top_k(r, top_k, experts)?;
            let moe_i = r.positive("moe_intermediate_size")?;
            let shared = r.u64_or("n_shared_experts", 0)?;
            s.dense_intermediate_size = i;
            s.intermediate_size = moe_i;
            let first = r.u64_or("first_k_dense_replace", 0)?;
            let freq = r.u64_or("moe_layer_freq", 1)?.max(1);
            dense = (0..l).map(|j| j < first || !j.is_multiple_of(freq)).collect();
            s.moe = Some(Moe {
                experts,
                top_k,
                shared_experts: shared,
                shared_intermediate_size: moe_i * shared,
                router: if mt == "deepseek_v3" { Router::SigmoidGroup } else { Router::Softmax },
            });
            window = None;
        }
        "gpt_oss" => {
            let experts = r.positive("num_local_experts")?;
            let top_k = r.positive_any(&["num_experts_per_tok", "experts_per_token"])?;
            check_top_k(r, top_k, experts)?;
            s.moe = Some(Moe { router: Router::TopkSoftmax, ..Moe::routed(experts, top_k) });
            s.qkv_bias = r.bool_or("attention_bias", true)?;
            s.o_bias = s.qkv_bias;
            sliding = r.layer_types(l)?.unwrap_or_else(|| (0..n).map(|j| (j + 1) % 2 != 0).collect());
        }
        "phi3" => {
            s.hidden_dropout = r.f64_or("resid_pdrop", 0.0)?;
        }
        "phi" => {
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
            window = None;
        }
        "gpt_neox" => {
            s.qkv_bias = r.bool_or("attention_bias", true)?;
            s.o_bias = s.qkv_bias;
            s.mlp_bias = true;
            let pct = r.rotary_fraction("rotary_pct")?.unwrap_or(0.25);
            s.rope_dim = ((head_dim as f64) * pct) as u64;
            s.parallel_norms = if r.bool_or("use_parallel_residual", true)? { 2 } else { 0 };
            s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
            window = None;
        }
        "falcon" => {
            let b = r.bool_or("bias", false)?;
            (s.qkv_bias, s.o_bias, s.mlp_bias) = (b, b, b);
            s.parallel_norms = if r.bool_or("new_decoder_architecture", false)? {
                r.u64_or("num_ln_in_parallel_attn", 2)?.max(1)
            } else if r.bool_or("parallel_attn", true)? {
                1
            } else {
                0
            };
            s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
            window = None;
        }
        "starcoder2" => {
            let b = r.bool_or("use_bias", true)?;
            (s.qkv_bias, s.o_bias, s.mlp_bias) = (b, b, b);
            s.hidden_dropout = r.f64_or("residual_dropout", 0.0)?;
        }
        "smollm3" => {
            let uses_rope = match r.u64_list("no_rope_layers")? {
                Some(v) => v.iter().map(|&x| x != 0).collect::<Vec<_>>(),
                None => {
                    let k = r.u64_or("no_rope_layer_interval", 4)?.max(1);
                    (0..l).map(|j| !(j + 1).is_multiple_of(k)).collect()
                }
            };
            no_rope = uses_rope.iter().map(|u| !u).collect();
            let sw = r.bool_or("use_sliding_window", false)? && window.is_some();
            sliding = match r.layer_types(l)? {
                Some(t) if sw => t,
                _ => uses_rope.iter().map(|u| sw && !u).collect(),
            };
        }
        "gemma" | "olmo2" | "llama" | "granite" => window = None,
        _ => {}
    }
    // sliding layers
    match mt {
        "mistral" | "mixtral" | "starcoder2" | "phi3" => sliding = all.clone(),
        "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" => {
            if r.bool_or("use_sliding_window", false)? && window.is_some() {
                let from = r.u64_or("max_window_layers", 28)?;
                sliding = r.layer_types(l)?.unwrap_or_else(|| (0..l).map(|j| j >= from).collect());
            } else {
                window = None;
            }
        }
        "gemma2" => sliding = r.layer_types(l)?.unwrap_or_else(|| (0..n).map(|j| (j + 1) % 2 != 0).collect()),
        "gemma3_text" | "gemma3" => {
            let p = r.any_u64(&["sliding_window_pattern", "_sliding_window_pattern"])?.unwrap_or(6).max(1);
            sliding =
                r.layer_types(l)?.unwrap_or_else(|| (0..l).map(|j| !(j + 1).is_multiple_of(p)).collect());
        }
        "gpt_oss" | "smollm3" => {}
        _ if family == crate::families::generic() => {
            sliding = match r.layer_types(l)? {
                Some(t) => t,
                None if r.bool_or("use_sliding_window", true)? => all.clone(),
                None => Vec::new(),
            }
        }
        _ => {}
    }
    if !sliding.iter().any(|&x| x) {
        window = None;
    }
    if window.is_none() {
        sliding.clear();
    }
    s.sliding_window = window;
    s.layer_flags = flags_of(&sliding, &dense, &no_rope, l);
    if matches!(family.id(), "gemma2" | "gemma3") {
        s.attn_softcap = r.opt_f64("attn_logit_softcapping")?.filter(|x| *x > 0.0);
        s.final_softcap = r.opt_f64("final_logit_softcapping")?.filter(|x| *x > 0.0);
    }
    if s.rope_dim == 0
        && let Some(f) = r.rotary_fraction("partial_rotary_factor")?
        && f > 0.0
        && f < 1.0
    {
        s.rope_dim = ((head_dim as f64) * f) as u64;
    }
    if family == crate::families::generic() {
        s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
    }
    Ok(s)
}

pub(super) fn check_top_k(r: &Reader<'_>, top_k: u64, experts: u64) -> Result<(), ConfigError> {
    if top_k > experts {
        return Err(
            r.invalid("num_experts_per_tok", format!("{top_k} exceeds the number of experts ({experts})"))
        );
    }
    Ok(())
}
