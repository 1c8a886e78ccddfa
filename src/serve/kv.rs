//! vLLM's paged KV cache: pages, blocks, tokens, concurrency and the longest context that fits
//! (`kv_cache_interface.py` page sizes, `kv_cache_utils.py` grouping and `estimate_max_model_len`).

use crate::model::{TransformerSpec, layer};

/// The KV cache of the most loaded rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of one block of one layer: `block_size × kv_heads × (head_k + head_v) × dtype`, or
    /// MLA's latent `block_size × (kv_lora_rank + rope) × dtype`.
    pub page_bytes: u64,
    /// Tokens per block.
    pub block_size: u64,
    /// Full-attention layers on the rank.
    pub full_layers: u64,
    /// Sliding-window layers on the rank.
    pub sliding_layers: u64,
    /// The window.
    pub window: u64,
    /// Any sliding layer?
    pub has_sliding: bool,
}

impl Layout {
    /// The layout of `t` with tensor and pipeline parallelism (the first, most loaded stage).
    pub fn of(t: &TransformerSpec, tp: u64, pp: u64, block_size: u64, dtype_bytes: u64) -> Self {
        let per_token_layer = match t.mla {
            // one latent vector per token, the same on every TP rank
            Some(m) => m.kv_lora_rank + m.qk_rope_head_dim,
            None => {
                // KV heads split over TP, replicated when TP exceeds them
                let heads = (t.num_kv_heads / tp.max(1)).max(1);
                heads * 2 * t.head_dim
            }
        };
        // vLLM's get_pp_indices: the remainder layers go to the stages before the last
        let layers = t.num_layers.div_ceil(pp.max(1));
        let sliding_of = |i: u64| -> bool {
            if t.sliding_window.is_none() {
                return false;
            }
            if t.layer_flags.is_empty() {
                return true;
            }
            t.layer_flags.get(i as usize).is_some_and(|f| f & layer::SLIDING != 0)
        };
        let sliding = (0..layers).filter(|&i| sliding_of(i)).count() as u64;
        // short-convolution (LFM2) and Mamba2 layers hold no K/V: a fixed state per request
        // instead; Nemotron-H's MLP-only blocks hold nothing
        let conv = layers.saturating_sub(t.attention_layers_among(layers));
        Self {
            page_bytes: block_size * per_token_layer * dtype_bytes,
            block_size,
            full_layers: layers - sliding - conv.min(layers - sliding),
            sliding_layers: sliding,
            window: t.sliding_window.unwrap_or(0),
            has_sliding: sliding > 0,
        }
    }

    /// KV bytes of one token over the rank's layers (a full-attention view).
    pub fn bytes_per_token(&self) -> u64 {
        self.page_bytes / self.block_size.max(1) * (self.full_layers + self.sliding_layers)
    }

    /// Layers per KV-cache group and the number of full / sliding groups: one group when every
    /// layer is alike; for hybrid models the smaller type's count (or the larger, padded, when it
    /// is under 1.5 times the smaller), as vLLM groups them.
    fn groups(&self) -> (u64, u64, u64) {
        let (f, s) = (self.full_layers, self.sliding_layers);
        if f == 0 || s == 0 {
            return ((f + s).max(1), u64::from(f > 0), u64::from(s > 0));
        }
        let (lo, hi) = (f.min(s), f.max(s));
        let size = if (hi as f64) < 1.5 * lo as f64 { hi } else { lo };
        (size, f.div_ceil(size), s.div_ceil(size))
    }

    /// Bytes of one block: a page of every layer of a KV-cache group.
    pub fn block_bytes(&self) -> u64 {
        self.page_bytes * self.groups().0
    }

    /// Blocks one request of `len` tokens needs over all groups (`max_memory_usage_bytes` ÷ page).
    pub fn blocks_per_request(&self, len: u64, batched: u64) -> u64 {
        let (_, full, sliding) = self.groups();
        let bs = self.block_size.max(1);
        let full_blocks = len.div_ceil(bs);
        let sliding_blocks = (self.window.saturating_sub(1) + batched).min(len).div_ceil(bs) + 1;
        full * full_blocks + sliding * sliding_blocks
    }
}

/// What a KV pool of some bytes holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Capacity {
    /// Blocks (shared by the groups).
    pub blocks: u64,
    /// Tokens: `blocks × block_size` when every layer is full attention, else vLLM's
    /// `concurrency × max_model_len`.
    pub tokens: u64,
    /// Requests of `max_model_len` tokens at once.
    pub max_concurrency: f64,
    /// The largest max_model_len whose one request fits (0 when none does).
    pub max_model_len_that_fits: u64,
}

impl Capacity {
    /// The capacity of `kv_bytes` for requests of `max_model_len` tokens, with
    /// `max_num_batched_tokens` in flight (sliding windows keep those too).
    pub fn of(l: &Layout, kv_bytes: u64, max_model_len: u64, max_num_batched_tokens: u64) -> Self {
        let block_bytes = l.block_bytes().max(1);
        let blocks = kv_bytes / block_bytes;
        let per = l.blocks_per_request(max_model_len, max_num_batched_tokens).max(1);
        let max_concurrency = blocks as f64 / per as f64;
        let tokens = if l.has_sliding {
            (max_concurrency * max_model_len as f64) as u64
        } else {
            blocks * l.block_size
        };
        // estimate_max_model_len: the largest length whose one request fits the pool's bytes
        let fits = |len: u64| l.blocks_per_request(len, max_num_batched_tokens) * block_bytes <= kv_bytes;
        let (mut lo, mut hi) = (0u64, max_model_len + 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { lo = mid } else { hi = mid }
        }
        Self { blocks, tokens, max_concurrency, max_model_len_that_fits: lo }
    }
}
