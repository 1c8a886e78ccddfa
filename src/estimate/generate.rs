//! HF `generate` (greedy or sampling, `DynamicCache`): the prompt's forward keeps only the last
//! token's logits, then one forward per new token appends its keys and values to the cache.
//!
//! What transformers 5 does (`generation/utils.py::_sample`, `cache_utils.py`):
//! - prefill: `logits_to_keep=1`, so the head multiplies the last position only: `b × V` logits
//!   in the compute dtype, then `outputs.logits[:, -1].to(copy=True, dtype=float32)`;
//! - each decode step's `DynamicLayer.update` is `torch.cat([keys, new])`: the layer's old and new
//!   tensors are alive together for a moment (the values' cat, once the keys' old one is freed);
//! - the previous step's fp32 logits stay bound (`next_token_logits`) until the next copy
//!   replaces them, so two fp32 copies and the step's logits meet at the head;
//! - `input_ids` and `attention_mask` grow by one int64 column a step;
//! - a sliding-window layer keeps `min(tokens, window)` positions once it has decoded
//!   (`DynamicSlidingWindowLayer`: the cat of the last `window - 1` and the new token); its mask
//!   is not skipped once the window is full, so SDPA gets a mask and HF repeats grouped K/V;
//! - the last new token is never fed back: the cache ends with `prompt + new - 1` tokens.
//!
//! Checked against `model.generate` on real tensors (`tests/data/truth/reference_generate.json`).

use super::activations::Kernel;
use super::activations::kv_cache_bytes;
use crate::families;
use crate::model::{TransformerSpec, layer};
use crate::units::DType;

/// The terms of one rank's `generate`, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Terms {
    /// New tokens asked for (`max_new_tokens`).
    pub new_tokens: u64,
    /// Tokens in the cache at the end: prompt + new - 1.
    pub cached_tokens: u64,
    /// KV cache after the prompt's forward.
    pub kv_prefill: u64,
    /// KV cache at the end.
    pub kv_final: u64,
    /// One layer's keys (or values) before the last step's cat: alive beside the new ones.
    pub cat_transient: u64,
    /// The last token's logits, `b × V` in the compute dtype.
    pub logits: u64,
    /// Their fp32 copy, `b × V × 4`.
    pub logits_fp32: u64,
    /// The final norm's output over the prompt, alive while the head multiplies its last row.
    pub prefill_hidden: u64,
    /// `input_ids` and `attention_mask` at the end (int64 each).
    pub ids: u64,
    /// A decode step's attention transients at the longest context: eager scores and grouped
    /// K/V repeated to every head (eager always; SDPA on a masked sliding layer).
    pub decode_attention: u64,
}

fn sliding(m: &TransformerSpec, i: u64) -> bool {
    m.sliding_window.is_some()
        && (m.layer_flags.is_empty()
            || m.layer_flags.get(i as usize).is_some_and(|f| f & layer::SLIDING != 0))
}

/// Cache bytes of the spec's layers holding `tokens` positions each, sliding layers at most
/// their window once they have decoded (`decoded`).
fn kv_bytes(m: &TransformerSpec, b: u64, tokens: u64, decoded: bool, dtype: DType) -> u64 {
    let one = TransformerSpec { num_layers: 1, layer_flags: Vec::new(), ..m.clone() };
    (0..m.num_layers)
        .map(|i| {
            let flags = m.layer_flags.get(i as usize).copied().unwrap_or(0);
            if flags & layer::CONV != 0 {
                // a short convolution keeps its last taps, not the positions
                return crate::estimate::activations::conv_state_bytes(m, b, dtype);
            }
            if flags & layer::SSM != 0 {
                // a Mamba2 mixer keeps its conv taps and its scan state, whatever the length
                return crate::estimate::activations::ssm_state_bytes(m, b, dtype);
            }
            if flags & layer::MAMBA != 0 {
                return crate::estimate::activations::mamba_state_bytes(m, b, dtype);
            }
            if flags & layer::NO_MIXER != 0 {
                return 0;
            }
            let keep = match m.sliding_window {
                Some(w) if decoded && sliding(m, i) => tokens.min(w),
                _ => tokens,
            };
            kv_cache_bytes(&one, b, keep, dtype)
        })
        .sum()
}

/// The terms for a rank holding `m`'s layers (already sharded), batch `b`, prompt `s`; `c` / `r`
/// bytes per element of the compute dtype / the residual stream (fp32 under autocast).
/// `first` / `last`: the rank holds the embedding (ids) / the head (logits).
#[allow(clippy::too_many_arguments)]
pub fn terms(
    m: &TransformerSpec,
    b: u64,
    s: u64,
    new_tokens: u64,
    (c, r): (u64, u64),
    kv_dtype: DType,
    kernel: Kernel,
    (first, last): (bool, bool),
) -> Terms {
    let n = new_tokens.max(1);
    let cached = s + n - 1;
    let decoded = n > 1;
    let kv_prefill = kv_bytes(m, b, s, false, kv_dtype);
    let kv_final = kv_bytes(m, b, cached, decoded, kv_dtype);
    // the largest layer's one tensor before the last cat (a sliding layer: its window)
    let cat_transient = if decoded && m.num_layers > 0 {
        let one = TransformerSpec { num_layers: 1, layer_flags: Vec::new(), ..m.clone() };
        let before = cached - 1;
        let full = (0..m.num_layers).any(|i| !sliding(m, i));
        let keep = if full { before } else { before.min(m.sliding_window.unwrap_or(before)) };
        kv_cache_bytes(&one, b, keep, kv_dtype) / 2
    } else {
        0
    };
    let v = if last { families::classes(m) } else { 0 };
    let heads = m.num_heads;
    let grouped = m.num_kv_heads != m.num_heads && m.mla.is_none();
    let repeat = |len: u64| if grouped { 2 * b * heads * len * m.head_dim * c } else { 0 };
    let decode_attention = if !decoded {
        0
    } else if kernel == Kernel::Eager {
        // scores, softmax(float32) of them and its cast back, over the whole context
        let per = if c == 4 { 8 } else { c + 8 };
        b * heads * cached * per + repeat(cached)
    } else {
        match m.sliding_window {
            Some(w) if cached >= w && (0..m.num_layers).any(|i| sliding(m, i)) => repeat(w) + b * w,
            _ => 0,
        }
    };
    Terms {
        new_tokens: n,
        cached_tokens: cached,
        kv_prefill,
        kv_final,
        cat_transient,
        logits: b * v * c,
        logits_fp32: b * v * 4,
        prefill_hidden: if last { b * s * m.hidden_size * r } else { 0 },
        ids: if first { 2 * b * (cached + 1) * 8 } else { 0 },
        decode_attention,
    }
}

impl Terms {
    /// The prompt's head: the final norm's output and the last token's logits, then the logits
    /// with their fp32 copy.
    pub fn prefill_head(&self) -> u64 {
        (self.prefill_hidden + self.logits).max(self.logits + self.logits_fp32)
    }

    /// The last decode step's layer moment: one layer's cat transient or its attention
    /// transients, with the previous step's fp32 logits still bound.
    pub fn decode_layer(&self) -> u64 {
        self.cat_transient.max(self.decode_attention) + self.logits_fp32 + self.ids
    }

    /// The last decode step's head: its logits, the previous fp32 copy and the new one.
    pub fn decode_head(&self) -> u64 {
        self.logits + 2 * self.logits_fp32 + self.ids
    }
}
