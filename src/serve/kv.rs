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
    /// Recurrent layers on the rank (short convolutions, Mamba, Mamba2, gated DeltaNet): each
    /// holds a fixed state per request instead of K/V ([`Self::with_state`]).
    pub state_layers: u64,
    /// Bytes of one such layer's state per request on a rank, before vLLM pads it to a page.
    pub state_bytes: u64,
    /// vLLM before 0.21 logs "GPU KV cache size" as the blocks of one group times the block
    /// size (`num_blocks // groups × block_size`) for a hybrid model.
    pub tokens_per_group: bool,
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
        // instead; Nemotron-H's MLP-only blocks hold nothing; LongCat-Flash's hold two
        let attending = t.attention_layers_among(layers);
        Self {
            page_bytes: block_size * per_token_layer * dtype_bytes,
            block_size,
            full_layers: attending.saturating_sub(sliding),
            sliding_layers: sliding,
            window: t.sliding_window.unwrap_or(0),
            has_sliding: sliding > 0,
            state_layers: 0,
            state_bytes: 0,
            tokens_per_group: false,
        }
    }

    /// The layout with vLLM's hybrid allocator (`HybridAttentionMambaModelConfig`,
    /// `MambaSpec`): the recurrent layers' state per request in `state_dtype` bytes, and the
    /// attention block raised to `16 · ceil(state ÷ (16 · one token's K/V))` tokens (a larger
    /// `--block-size` is kept) so that one page of K/V holds one state, padded to it.
    /// `old_log`: the release logs the token count per group (before 0.21).
    pub fn with_state(
        mut self,
        t: &TransformerSpec,
        tp: u64,
        pp: u64,
        state_dtype: u64,
        old_log: bool,
    ) -> Self {
        let layers = t.num_layers.div_ceil(pp.max(1));
        let n =
            t.conv_layers_among(layers) + t.ssm_layers_among(layers) + t.layers_with(layer::MAMBA, layers);
        let state = state_bytes(t, tp, state_dtype);
        if n == 0 || state == 0 {
            return self;
        }
        (self.state_layers, self.state_bytes, self.tokens_per_group) = (n, state, old_log);
        let attention = self.full_layers + self.sliding_layers;
        if attention == 0 {
            // attention-free: a page is one state
            self.page_bytes = state;
            return self;
        }
        let token = self.page_bytes / self.block_size.max(1);
        let needed = 16 * state.div_ceil(16 * token.max(1));
        self.block_size = self.block_size.max(needed);
        self.page_bytes = self.block_size * token;
        self
    }

    /// How much vLLM pads a state to the page, in percent ("Padding mamba page size by …").
    pub fn state_padding_percent(&self) -> f64 {
        if self.state_bytes == 0 {
            return 0.0;
        }
        100.0 * self.page_bytes.saturating_sub(self.state_bytes) as f64 / self.state_bytes as f64
    }

    /// KV bytes of one token over the rank's layers (a full-attention view).
    pub fn bytes_per_token(&self) -> u64 {
        self.page_bytes / self.block_size.max(1) * (self.full_layers + self.sliding_layers)
    }

    /// Layers per KV-cache group and the number of full / sliding / state groups: one group
    /// when every layer is alike; for hybrid models the smallest type's count (or the largest,
    /// padded, when it is under 1.5 times the smallest), as vLLM groups them
    /// (`_get_kv_cache_groups_uniform_page_size`).
    pub fn groups(&self) -> (u64, u64, u64, u64) {
        let counts = [self.full_layers, self.sliding_layers, self.state_layers];
        let present = || counts.iter().copied().filter(|&c| c > 0);
        let (Some(lo), Some(hi)) = (present().min(), present().max()) else {
            return (1, 0, 0, 0);
        };
        let size = if (hi as f64) < 1.5 * lo as f64 { hi } else { lo };
        let [f, s, st] = counts.map(|c| c.div_ceil(size));
        (size, f, s, st)
    }

    /// Bytes of one block: a page of every layer of a KV-cache group.
    pub fn block_bytes(&self) -> u64 {
        self.page_bytes * self.groups().0
    }

    /// Blocks one request of `len` tokens needs over all groups (`max_memory_usage_bytes` ÷ page).
    pub fn blocks_per_request(&self, len: u64, batched: u64) -> u64 {
        let (_, full, sliding, state) = self.groups();
        let bs = self.block_size.max(1);
        let full_blocks = len.div_ceil(bs);
        let sliding_blocks = (self.window.saturating_sub(1) + batched).min(len).div_ceil(bs) + 1;
        // a request's state: one block in each state group (prefix caching off)
        full * full_blocks + sliding * sliding_blocks + state
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
        let (_, full, sliding, state) = l.groups();
        let tokens = if state > 0 && full + sliding == 0 {
            // attention-free: a request's state per block, max_model_len tokens each
            blocks * max_model_len
        } else if state > 0 && l.tokens_per_group {
            blocks / (full + sliding + state) * l.block_size.min(max_model_len)
        } else if l.has_sliding || state > 0 {
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

/// The state one recurrent layer keeps per request on one of `tp` ranks in vLLM
/// (`MambaStateShapeCalculator`): the convolution's last `taps − 1` inputs and the scan's state,
/// in `dtype` bytes each (`mamba_cache_dtype` and `mamba_ssm_cache_dtype` "auto": the model's).
pub fn state_bytes(t: &TransformerSpec, tp: u64, dtype: u64) -> u64 {
    let tp = tp.max(1);
    let elems = if let Some(d) = t.delta {
        // gated DeltaNet: conv over q·k·v, a (k_dim, v_dim) state per value head
        d.conv_kernel.saturating_sub(1) * d.conv_dim() / tp + d.v_heads / tp * d.k_dim * d.v_dim
    } else if let Some(s) = t.ssm {
        // Mamba2: groups that TP cannot split are repeated up to one per rank
        let groups = if s.groups.is_multiple_of(tp) { s.groups } else { tp };
        s.conv_kernel.saturating_sub(1) * (s.inner() + 2 * groups * s.state) / tp
            + s.heads / tp * s.head_dim * s.state
    } else if let Some(m) = t.mamba {
        m.conv_kernel.saturating_sub(1) * m.inner / tp + m.inner / tp * m.state
    } else if t.conv_layers() > 0 {
        // a short convolution (LFM2): its last `conv_L_cache − 1` inputs
        t.conv_kernel.saturating_sub(1) * t.hidden_size / tp
    } else {
        0
    };
    elems * dtype
}
