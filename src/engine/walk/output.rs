//! What a walk yields: the saves of each kind of block ([`LayerMix`]), the top of the model, the
//! transients of the peak and the tensors they are made of ([`Pieces`], [`HeadPieces`]), together
//! the [`ActivationModel`] the estimator composes.

use crate::engine::inputs::saved::Saved;
pub use crate::engine::ops::{HeadPieces, Pieces};

/// The distinct kinds of block of a model whose layers differ (sliding-window or global
/// attention, dense or MoE MLP, rotary or not), keyed by their [`crate::model::layer`] flags.
#[derive(Clone, Copy, Debug, Default)]
pub struct LayerMix {
    /// Kinds in use (0 or 1: every block is `full_layer`).
    pub n: usize,
    /// The flags of each kind.
    pub flags: [u8; 4],
    /// What a block of each kind keeps (input requiring grad).
    pub full: [Saved; 4],
    /// The same with the attention core recomputed.
    pub selective: [Saved; 4],
    /// `full`'s and `selective`'s totals (the step walk reads one per block).
    pub totals: [[u64; 4]; 2],
}

impl LayerMix {
    /// The saves of a block with these flags (`fallback` when the kind is not listed).
    pub fn of(&self, flags: u8, fallback: Saved, selective: bool) -> Saved {
        for i in 0..self.n.min(4) {
            if self.flags[i] == flags {
                return if selective { self.selective[i] } else { self.full[i] };
            }
        }
        fallback
    }

    /// The total a block with these flags keeps (`None` when the kind is not listed).
    pub fn total_of(&self, flags: u8, selective: bool) -> Option<u64> {
        let i = self.flags[..self.n.min(4)].iter().position(|&x| x == flags)?;
        Some(self.totals[usize::from(selective)][i])
    }

    /// Fills [`Self::totals`] from the saves.
    pub fn with_totals(mut self) -> Self {
        for i in 0..4 {
            self.totals[0][i] = self.full[i].total();
            self.totals[1][i] = self.selective[i].total();
        }
        self
    }

    /// How many of blocks `from..to` are of each listed kind (`[4]`: of none of them), block 0
    /// left out when `skip_first` (it is counted apart).
    pub fn counts(
        &self,
        m: &crate::model::TransformerSpec,
        from: u64,
        to: u64,
        skip_first: bool,
    ) -> [u64; 5] {
        let kinds = &self.flags[..self.n.min(4)];
        let kind = |f: u8| kinds.iter().position(|&x| x == f).unwrap_or(4);
        let mut out = [0u64; 5];
        // the listed blocks kind by kind (a compare per kind vectorizes; 100 blocks cost a few ns)
        let len = m.layer_flags.len() as u64;
        let listed = &m.layer_flags[from.min(len) as usize..to.min(len).max(from.min(len)) as usize];
        let mut counted = 0;
        for (k, &f) in kinds.iter().enumerate() {
            if kinds[..k].contains(&f) {
                continue;
            }
            out[k] = crate::model::count_flags(listed, |x| x == f);
            counted += out[k];
        }
        out[4] = listed.len() as u64 - counted;
        // blocks past the listed flags have the default kind
        let rest = to.saturating_sub(from.max(len));
        if rest > 0 {
            out[kind(crate::families::default_flags(m))] += rest;
        }
        if skip_first && from == 0 && to > 0 {
            let k = kind(super::layer_flags(m, 0));
            out[k] = out[k].saturating_sub(1);
        }
        out
    }
}

/// Activation model of one scenario: per-layer and top-level saves plus the transients.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActivationModel {
    /// Blocks of different kinds (empty when all blocks are alike).
    pub mix: LayerMix,
    /// A block whose input requires grad, keeping everything.
    pub full_layer: Saved,
    /// Block 0 (its input may not require grad when the embeddings are frozen).
    pub first_layer: Saved,
    /// `full_layer` with the attention core recomputed (selective checkpointing).
    pub selective_layer: Saved,
    /// Bytes of one block input (what a checkpointed block keeps).
    pub layer_input_bytes: u64,
    /// The first block's input (the embedding output), where it differs from the others' (an
    /// fp32 residual stream after a half embedding: Mamba2's `residual_in_fp32`).
    pub first_input_bytes: u64,
    /// Tables kept once for all non-checkpointed blocks (rotary cos/sin).
    pub shared_layer_bytes: u64,
    /// Tensors every checkpointed block receives as positional inputs, kept once (GPT-2's eager
    /// causal mask).
    pub shared_checkpoint_bytes: u64,
    /// Bytes of the last block freed before its attention core runs backward.
    pub freed_before_attention_backward: u64,
    /// Embeddings, final norm, head and loss.
    pub top: Saved,
    /// The part of `top` on the first pipeline stage (ids, embedding outputs).
    pub top_input: Saved,
    /// Part of `top` released by the time backward reaches the last block.
    pub head_released_bytes: u64,
    /// Allocation burst of the MLP backward of one block (gradients of its widest tensors).
    pub mlp_backward_transient: u64,
    /// Allocation burst of the attention backward of one block (score gradients for eager).
    pub attention_backward_transient: u64,
    /// Gradients alive while the loss and log-softmax run backward.
    pub loss_backward_transient: u64,
    /// Logits (and their fp32 upcast) alive while the loss runs forward.
    pub head_forward_transient: u64,
    /// What a block allocates at once in its forward beside what it keeps (DeepSeek-V3.2's
    /// sparse-attention indexer); 0 for the others.
    pub block_forward_transient: u64,
    /// A head run once per chunk of the sequence (torchtune's chunked output, litgpt's
    /// `lm_head_chunk_size`) with a trained weight: the temporaries alive when the second chunk's
    /// weight gradient is summed into the first (the autograd engine's input buffer of the weight:
    /// the first gradient, the new one and their sum, three weight-sized tensors, out of place
    /// because the first arrives as a view), with the logits gradients of the chunks not yet run
    /// backward and the two chunks' input gradients. 0 for a head run once or a frozen head.
    pub head_chunk_sum_transient: u64,
    /// The tensors of the head transients above and of the loss's saves (allocator replay).
    pub head_pieces: HeadPieces,
    /// At that moment, the head inputs still kept (the whole hidden state when the chunks are
    /// views of it, else the copies of the chunks not yet run backward).
    pub head_chunk_kept: u64,
    /// Inference: bytes alive during the whole forward (embedding outputs, masks, rotary tables).
    pub infer_persistent: u64,
    /// Inference: most bytes one block holds at once, not counting the KV cache.
    pub infer_layer_peak: u64,
    /// Inference: bytes at the LM head (final hidden state and logits).
    pub infer_head_peak: u64,
    /// A 4-bit LM head's weight while its matmul dequantizes it (0 unless the head is 4-bit and
    /// its rows dequantize); in backward too, once per chunk.
    pub head_dequant: u64,
    /// A block's largest 4-bit projection while its matmul dequantizes it (0 when none does).
    pub layer_dequant: u64,
    /// KV-cache bytes per block (compute dtype; the caller rescales for another cache dtype).
    pub kv_per_layer_elems: u64,
}
