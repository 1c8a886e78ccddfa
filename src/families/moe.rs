//! Mixture-of-experts blocks read from any decoder's `config.json`, under every spelling the
//! 2024-2025 configs use: how many experts and how many a token takes, their width, the shared
//! experts, which layers are sparse, and the router's scoring. The generic decoder reads its
//! experts here, and a family whose keys are one of these spellings reads them here too.

use super::config::{Draft, check_top_k};
use crate::model::config::{ConfigError, Reader};
use crate::model::{Moe, Router};

/// Routed experts per layer: Mixtral's, Qwen-MoE's, DeepSeek's, ERNIE's spellings.
const EXPERTS: &[&str] = &["num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"];
/// Experts a token is routed to.
pub(crate) const TOP_K: &[&str] =
    &["num_experts_per_tok", "num_experts_per_token", "moe_k", "moe_topk", "top_k", "num_selected_experts"];
/// One routed expert's MLP width (else the dense `intermediate_size`, as Mixtral).
const WIDTH: &[&str] = &["moe_intermediate_size", "expert_ffn_hidden_size", "moe_ffn_hidden_size"];
/// Shared (always active) experts.
const SHARED: &[&str] = &["n_shared_experts", "num_shared_experts", "moe_num_shared_experts"];

/// Reads the MoE keys into `d` when the file names more than one routed expert; a dense
/// decoder's file is left as it is. `intermediate_size` becomes the experts' width and the dense
/// layers' width moves to `dense_intermediate_size`.
pub(crate) fn read(r: &Reader<'_>, d: &mut Draft) -> Result<(), ConfigError> {
    let Some(experts) = experts(r)? else { return Ok(()) };
    if experts < 2 {
        return Ok(());
    }
    let top_k = r.any_u64(&set(r, TOP_K))?.filter(|k| *k > 0).ok_or_else(|| r.missing(TOP_K))?;
    check_top_k(r, top_k, experts)?;
    let dense_i = d.spec.intermediate_size;
    let width = r.any_u64(&set(r, WIDTH))?.filter(|w| *w > 0).unwrap_or(dense_i);
    let shared = r.any_u64(&set(r, SHARED))?.unwrap_or(0);
    let shared_width = match r.has("shared_expert_intermediate_size") {
        true => r.u64_or("shared_expert_intermediate_size", 0)?,
        false => shared * width,
    };
    d.spec.dense_intermediate_size = dense_i;
    d.spec.intermediate_size = width;
    d.dense = dense_layers(r, d.spec.num_layers)?;
    let router = router(r, shared_width > 0 && r.has("shared_expert_intermediate_size"))?;
    let grouped = router == Router::SigmoidGroup;
    d.spec.moe = Some(Moe {
        shared_experts: u64::from(shared_width > 0).max(shared),
        shared_intermediate_size: shared_width,
        router,
        groups: if grouped { r.u64_or("n_group", 1)?.max(1) } else { 0 },
        topk_group: if grouped { r.u64_or("topk_group", 1)?.max(1) } else { 0 },
        ..Moe::routed(experts, top_k)
    });
    Ok(())
}

/// The routed experts: a number, or ERNIE-4.5-VL's per-modality list (the text experts first).
fn experts(r: &Reader<'_>) -> Result<Option<u64>, ConfigError> {
    if let Some(n) = r.any_u64(&set(r, &EXPERTS[..3]))? {
        return Ok(Some(n));
    }
    if !r.has(EXPERTS[3]) {
        return Ok(None);
    }
    match r.get(EXPERTS[3]) {
        Some(v) if v.is_array() => Ok(r.u64_list(EXPERTS[3])?.and_then(|l| l.first().copied())),
        _ => r.opt_u64(EXPERTS[3]),
    }
}

/// The spellings of `keys` the file (or its class defaults) sets, so that only those are read
/// and named among the facts.
fn set<'k>(r: &Reader<'_>, keys: &[&'k str]) -> Vec<&'k str> {
    keys.iter().copied().filter(|k| r.has(k)).collect()
}

/// Which layers keep a dense MLP, from whichever pattern key the file uses; every layer sparse
/// when it uses none.
fn dense_layers(r: &Reader<'_>, l: u64) -> Result<Vec<bool>, ConfigError> {
    // an explicit per-layer list wins
    if let Some(v) =
        r.has("mlp_layer_types").then(|| r.get("mlp_layer_types")).flatten().and_then(|v| v.as_array())
    {
        if v.len() as u64 != l {
            return Err(r.invalid("mlp_layer_types", format!("{} entries for {l} layers", v.len())));
        }
        return Ok(v.iter().map(|t| t.as_str() != Some("sparse")).collect());
    }
    // Llama 4's explicit list of sparse layers
    if r.has("moe_layers")
        && let Some(sparse) = r.u64_list("moe_layers")?
    {
        return Ok((0..l).map(|j| !sparse.contains(&j)).collect());
    }
    // Jamba: layer i is sparse when i % expert_layer_period == expert_layer_offset
    if r.has("expert_layer_period") {
        let period = r.u64_or("expert_layer_period", 1)?.max(1);
        let offset = r.u64_or("expert_layer_offset", 0)?;
        return Ok((0..l).map(|j| j % period != offset % period).collect());
    }
    let only = if r.has("mlp_only_layers") {
        r.u64_list("mlp_only_layers")?.unwrap_or_default()
    } else {
        Vec::new()
    };
    let first = r
        .any_u64(&set(r, &["first_k_dense_replace", "moe_layer_start_index", "first_k_dense"]))?
        .unwrap_or(0);
    let last =
        if r.has("moe_layer_end_index") { r.u64_or("moe_layer_end_index", u64::MAX)? } else { u64::MAX };
    // every `step`-th layer is sparse: Qwen-MoE, Llama 4 and ERNIE count from 1
    // (`(layer_idx + 1) % step == 0`), DeepSeek from layer 0 (`layer_idx % moe_layer_freq == 0`)
    let step =
        r.any_u64(&set(r, &["decoder_sparse_step", "interleave_moe_layer_step", "moe_layer_interval"]))?;
    let (step, from_one) = match step {
        Some(s) => (s.max(1), true),
        None => (moe_layer_freq(r)?, false),
    };
    Ok((0..l)
        .map(|j| {
            let on_step = if from_one { (j + 1).is_multiple_of(step) } else { j.is_multiple_of(step) };
            only.contains(&j) || j < first || j > last || !on_step
        })
        .collect())
}

/// DeepSeek's `moe_layer_freq`: a number (every n-th layer from `first_k_dense_replace` on).
fn moe_layer_freq(r: &Reader<'_>) -> Result<u64, ConfigError> {
    match r.has("moe_layer_freq").then(|| r.get("moe_layer_freq")).flatten() {
        Some(v) if v.is_u64() => Ok(r.u64_or("moe_layer_freq", 1)?.max(1)),
        _ => Ok(1),
    }
}

/// The router's scoring: DeepSeek-V3-style sigmoid scores with a correction bias
/// (`scoring_func: sigmoid`, `topk_method: noaux_tc`), Qwen-MoE's gated shared expert, softmax
/// with or without renormalising the top k.
fn router(r: &Reader<'_>, qwen_shared: bool) -> Result<Router, ConfigError> {
    let is = |k: &str, v: &str| r.has(k) && r.str(k) == Some(v);
    if is("scoring_func", "sigmoid") || is("topk_method", "noaux_tc") {
        return Ok(Router::SigmoidGroup);
    }
    if qwen_shared {
        return Ok(Router::SoftmaxSharedGate);
    }
    let norm = !r.has("norm_topk_prob") || r.bool_or("norm_topk_prob", true)?;
    Ok(if norm { Router::Softmax } else { Router::SoftmaxNoNorm })
}
