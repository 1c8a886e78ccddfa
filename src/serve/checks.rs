//! What `serve` checks before it answers, as vLLM does at start-up: a decoder model, settings in
//! range and dividing the model, and the dtype the model is served in.

use super::{ServeConfig, ServeError, bad};
use crate::gpu::Gpu;
use crate::model::{ModelSpec, TransformerSpec};
use crate::units::DType;

/// The dtype the model is served in: `--dtype`, else the checkpoint's as vLLM's "auto" takes it.
pub(super) fn model_dtype(
    cfg: &ServeConfig,
    checkpoint: Option<&str>,
    gpu: &Gpu,
    notes: &mut Vec<String>,
) -> Result<DType, ServeError> {
    // bfloat16 needs compute capability 8.0 (Ampere) or newer
    let no_bf16 = crate::options::generation(gpu).is_some_and(|(g, _)| g < 2);
    if let Some(d) = cfg.dtype {
        if d == DType::Bf16 && no_bf16 {
            return bad(format!(
                "--dtype bfloat16: the {} has no bfloat16 (compute capability below 8.0; vLLM refuses it): use --dtype float16",
                gpu.name
            ));
        }
        return Ok(d);
    }
    let d = match checkpoint {
        Some("float16") => DType::F16,
        Some("float32") => {
            notes.push("the checkpoint is float32: served in bfloat16, as vLLM's dtype \"auto\" does".into());
            DType::Bf16
        }
        _ => DType::Bf16,
    };
    if d == DType::Bf16 && no_bf16 {
        notes.push(format!(
            "the {} has no bfloat16: served in float16, as vLLM's dtype \"auto\" falls back",
            gpu.name
        ));
        return Ok(DType::F16);
    }
    Ok(d)
}

/// The model's transformer numbers, when it is a decoder language model.
pub(super) fn transformer(model: &ModelSpec) -> Result<&TransformerSpec, ServeError> {
    match model.transformer() {
        Some(t) if t.num_heads > 0 && crate::families::has_kv_cache(t) => Ok(t),
        _ => bad(format!("{}: serving capacity needs a decoder language model", model.name)),
    }
}

/// Checks the settings against the model, as vLLM does at start-up.
pub(super) fn check(cfg: &ServeConfig, t: &TransformerSpec) -> Result<(), ServeError> {
    let u = cfg.gpu_memory_utilization;
    if !(u > 0.0 && u <= 1.0) {
        return bad(format!("--gpu-memory-utilization {u} is outside (0, 1]"));
    }
    if cfg.block_size == 0 || !cfg.block_size.is_power_of_two() || cfg.block_size > 1024 {
        return bad(format!("--block-size {} is not a power of two up to 1024", cfg.block_size));
    }
    if cfg.tp == 0 || cfg.pp == 0 {
        return bad("--tp and --pp are at least 1");
    }
    if !t.num_heads.is_multiple_of(cfg.tp) {
        return bad(format!("--tp {} does not divide the {} attention heads", cfg.tp, t.num_heads));
    }
    if t.mla.is_none()
        && !t.num_kv_heads.is_multiple_of(cfg.tp)
        && !cfg.tp.is_multiple_of(t.num_kv_heads.max(1))
    {
        return bad(format!(
            "--tp {} neither divides the {} KV heads nor is a multiple of them (vLLM refuses it)",
            cfg.tp, t.num_kv_heads
        ));
    }
    if cfg.pp > t.num_layers {
        return bad(format!("--pp {} is more than the {} layers", cfg.pp, t.num_layers));
    }
    if let Some(m) = cfg.max_model_len {
        if m == 0 {
            return bad("--max-model-len is at least 1");
        }
        if m > t.max_context() && !cfg.allow_long_max_model_len && t.max_context() > 0 {
            return bad(format!(
                "--max-model-len {m} is above the model's {} positions (vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: add --allow-long-max-model-len)",
                t.max_context()
            ));
        }
    } else if t.max_context() == 0 {
        return bad(
            "the model's config names no context length (max_position_embeddings): give --max-model-len",
        );
    }
    for (name, v) in
        [("--max-num-batched-tokens", cfg.max_num_batched_tokens), ("--max-num-seqs", cfg.max_num_seqs)]
    {
        if v == Some(0) {
            return bad(format!("{name} is at least 1"));
        }
    }
    if cfg.context == Some(0) {
        return bad("--context is at least 1");
    }
    Ok(())
}
