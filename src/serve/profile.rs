//! The torch peak increase of vLLM's profiling run (`gpu_model_runner.py::profile_run`): one
//! forward over `max_num_batched_tokens` tokens split into `min(max_num_seqs, tokens)` requests,
//! then the dummy sampler over one row per request.
//!
//! Attention kernels do not run while profiling (no attention metadata: the backends return
//! early), so the attention block holds its projections' outputs only. vLLM's layers free a
//! tensor when the Python name holding it is rebound, which fixes what is alive together:
//!
//! * attention: residual + normed input + `qkv` + the attention output + `o_proj`'s output
//!   (`qkv` stays referenced until the method returns);
//! * gated MLP: residual + normed input + `gate_up` + `act_fn(gate_up)` (`x` is rebound after);
//!   plain MLP: `fc1`'s output + the activation; fused MoE: the router logits, the three
//!   `fused_moe` caches (`T·k·2I`, `T·k·I`, `T·k·h`) and the top-k weights and ids;
//! * sampler (`sampler.py`, `topk_topp_sampler.py`, with top-k and top-p set as the dummy run
//!   sets them), with the last hidden states (`T×h`), the `R` rows gathered for the logits and
//!   the `torch.rand_like` copy `_dummy_sampler_run` feeds `compute_logits` still referenced, the model-dtype logits `R×V` and the sampler's fp32 copy of them
//!   (`logits.to(torch.float32)`, the same tensor when the model runs in fp32); then, per
//!   `R×V` entry ([`sampler_bytes_per_entry`]):
//!   - FlashInfer: `top_k_mask_logits`' fp32 output and the `softmax` of it;
//!   - Triton (0.17 to 0.20): the kernel works in place on the fp32 logits; `softmax` and the
//!     exponential draw `q` (`random_sample`) are fp32 each (the kernel's per-SM buffer,
//!     `SMs × V` fp32, is left out: about 65 MiB for a 128k vocabulary on an H100);
//!   - the sort path: `logits.sort` returns fp32 values and int64 indices, and inside it
//!     PyTorch's `segmented_sort_pairs` (1,024 rows ≥ 128 segments; `SortStable.cu`) allocates
//!     an int64 index per entry and CUB's `DeviceSegmentedRadixSort::SortPairs` its alternate
//!     key (fp32) and value (int64) buffers: 36 bytes an entry besides the model-dtype logits,
//!     the peak of the path (the top-k / top-p masks and the scatter that follow stay below it).

use crate::model::TransformerSpec;
use crate::units::DType;

/// The profiling peak and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peak {
    /// Bytes.
    pub bytes: u64,
    /// Where ("decoder MLP", "sampler", …); [`peak_at_in`] says it in a language.
    pub at: &'static str,
}

/// The profiling peak of `t` on one rank (tensor-parallel shards of the projections; the
/// sampler's full-vocabulary logits, gathered on every rank) for `tokens` tokens and `seqs`
/// requests, activations in `dtype`.
pub fn peak(
    t: &TransformerSpec,
    tp: u64,
    pp: u64,
    tokens: u64,
    seqs: u64,
    dtype: DType,
    sampler: super::SamplerPath,
) -> Peak {
    let tp = tp.max(1);
    let b = dtype.bytes(1);
    let tk = tokens;
    let h = t.hidden_size;
    let stream = 2 * tk * h * b; // residual + normed input
    let (q_w, kv_w, out_w) = match t.mla {
        Some(m) => (
            t.num_heads * m.qk_head_dim() / tp,
            m.kv_lora_rank + m.qk_rope_head_dim,
            t.num_heads * m.v_head_dim / tp,
        ),
        None => {
            let kv = (t.num_kv_heads / tp).max(1) * t.head_dim;
            (t.num_heads * t.head_dim / tp, 2 * kv, t.num_heads * t.head_dim / tp)
        }
    };
    let attention = stream + tk * (q_w + kv_w + out_w + h) * b;
    let gated = crate::families::gated(t);
    let dense_i = if t.dense_intermediate_size > 0 { t.dense_intermediate_size } else { t.intermediate_size };
    let dense = |i: u64| {
        let i = i / tp;
        if gated { stream + tk * 3 * i * b } else { stream + tk * 2 * i * b }
    };
    let mlp = match t.moe {
        Some(m) => {
            let i = t.intermediate_size / tp;
            let k = m.top_k;
            let moe = stream
                + tk * m.experts * b // router logits
                + tk * k * 8 // top-k weights (fp32) and ids (int32)
                + tk * k * (2 * i + i + h) * b; // fused_moe's three caches
            moe.max(if t.dense_intermediate_size > 0 { dense(dense_i) } else { 0 })
        }
        None => dense(t.intermediate_size),
    };
    let mut best = if mlp >= attention {
        Peak { bytes: mlp, at: "decoder MLP" }
    } else {
        Peak { bytes: attention, at: "decoder attention projections" }
    };
    // the sampler runs on the last pipeline stage; the most loaded rank is taken as holding both
    let _ = pp;
    if crate::families::has_kv_cache(t) {
        let r = seqs.min(tokens).max(1);
        let v = t.vocab_size;
        let at = match sampler {
            super::SamplerPath::FlashInfer => {
                "sampler: FlashInfer top-k mask and softmax over the vocabulary"
            }
            super::SamplerPath::Triton => {
                "sampler: Triton top-k / top-p, softmax and draw over the vocabulary"
            }
            super::SamplerPath::Sort => "sampler: top-k / top-p sort over the vocabulary",
        };
        // the forward's hidden states (T×h), the R rows gathered for the logits and
        // `_dummy_sampler_run`'s `torch.rand_like` of them (R×h each)
        let bytes = tk * h * b + 2 * r * h * b + r * v * sampler_bytes_per_entry(sampler, dtype);
        if bytes > best.bytes {
            best = Peak { bytes, at };
        }
    }
    best
}

/// Bytes alive per entry of the `R×V` logits at the sampler's peak: the model-dtype logits, the
/// fp32 copy (none when the model runs in fp32) and what the path allocates (module docs).
pub fn sampler_bytes_per_entry(sampler: super::SamplerPath, dtype: DType) -> u64 {
    let b = dtype.bytes(1);
    let fp32_copy = if dtype == DType::F32 { 0 } else { 4 };
    let path = match sampler {
        // top_k_mask_logits' output + softmax
        super::SamplerPath::FlashInfer => 4 + 4,
        // softmax + q (the kernel is in place)
        super::SamplerPath::Triton => 4 + 4,
        // sorted values + int64 indices + segmented_sort_pairs' int64 indices + CUB's alternate
        // fp32 keys and int64 values
        super::SamplerPath::Sort => 4 + 8 + 8 + 4 + 8,
    };
    b + fp32_copy + path
}

/// Where the profiling forward peaks (`Serve::activation_peak_at`, English in the data) in `lang`.
pub fn peak_at_in(at: &str, lang: crate::i18n::Lang) -> std::borrow::Cow<'_, str> {
    use crate::i18n::Lang;
    let zh = match at {
        "decoder MLP" => "解码器 MLP",
        "decoder attention projections" => "解码器注意力投影",
        "sampler: FlashInfer top-k mask and softmax over the vocabulary" => {
            "采样器：FlashInfer 在整个词表上做 top-k 掩码和 softmax"
        }
        "sampler: Triton top-k / top-p, softmax and draw over the vocabulary" => {
            "采样器：Triton 在整个词表上做 top-k / top-p、softmax 和抽样"
        }
        "sampler: top-k / top-p sort over the vocabulary" => "采样器：在整个词表上做 top-k / top-p 排序",
        _ => return at.into(),
    };
    if lang == Lang::En { at.into() } else { zh.into() }
}

#[cfg(test)]
mod peak_at_tests {
    use super::*;

    #[test]
    fn every_profiling_peak_has_a_chinese_name() {
        let src = include_str!("profile.rs");
        // every place this file names (the strings the peaks are made with)
        for at in ["decoder MLP", "decoder attention projections"].into_iter().chain([
            "sampler: FlashInfer top-k mask and softmax over the vocabulary",
            "sampler: Triton top-k / top-p, softmax and draw over the vocabulary",
            "sampler: top-k / top-p sort over the vocabulary",
        ]) {
            assert!(src.contains(&format!("\"{at}\"")), "{at}");
            let zh = peak_at_in(at, crate::i18n::Lang::ZhCn);
            assert!(zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)), "{at}: {zh}");
            assert_eq!(peak_at_in(at, crate::i18n::Lang::En), at);
        }
    }
}
