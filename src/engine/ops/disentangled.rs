//! DeBERTa-v2's disentangled attention (`DisentangledSelfAttention`), op by op: the content
//! scores `q·(k^T/scale)`; the content-to-position and position-to-content scores (`bmm` of the
//! content's q or k against the position keys or queries, repeated over the batch, then `gather`
//! at each token pair's relative position and a division by the scale); their sum masked with the
//! inverted bool mask (`masked_fill`), softmax in the scores' dtype, dropout, `probs·v` and the
//! transpose-contiguous copy the output projection reads.

use super::*;

/// One disentangled attention call.
#[derive(Clone, Copy, Debug)]
pub struct RelAttn {
    /// Heads (on this rank).
    pub heads: u64,
    /// Width of a head.
    pub head_dim: u64,
    /// Rows of the relative position embeddings (`2·span`).
    pub positions: u64,
    /// Dropout on the probabilities.
    pub dropout: f64,
}

impl Graph<'_> {
    /// `bmm(a, b)`: keeps `a` when `b` requires grad and `b` when `a` does.
    fn bmm_keeps(&mut self, a: Tensor, b: Tensor) {
        if self.rg(b) {
            self.keep(a);
        }
        if self.rg(a) {
            self.keep(b);
        }
    }

    /// The attention core. `q`, `k`, `v`: the `(b·heads, s, d)` contiguous copies of the
    /// projections; `pos_k` / `pos_q`: the position keys (content-to-position scores) and
    /// queries (position-to-content), `(b·heads, 2·span, d)` repeats. `k^T/scale` is a new
    /// tensor kept by the content `bmm`; each `gather` keeps its input (the `(b·heads, s, 2·span)`
    /// scores, in the compute dtype) and its int64 `(s, s)` index (a clamp of the relative
    /// positions, made in every layer); the mask `~attention_mask.bool()` (`(b, 1, s, s)`, one
    /// byte) is kept by `masked_fill`; the softmax output, the dropout's mask and output (or the
    /// half copy autocast makes for `probs·v`) and `v` as eager attention keeps them. Returns
    /// the context as the output projection reads it.
    pub fn disentangled_attention(
        &mut self,
        (q, k, v): (Tensor, Tensor, Tensor),
        (pos_k, pos_q): (Option<Tensor>, Option<Tensor>),
        a: RelAttn,
    ) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        let (b, s, c) = (ctx.batch, ctx.seq, ctx.compute_elem);
        let elems = ctx.tokens * a.heads * a.head_dim;
        let scores = b * a.heads * s * s;
        self.eager_tail = 0;
        if self.selective {
            // the core is recomputed in backward: only its inputs and output are kept
            for x in [Some(q), Some(k), Some(v), pos_k, pos_q].into_iter().flatten() {
                self.keep(x);
            }
            let out = self.tensor(elems * c, c, true, Cat::AttentionIo);
            self.kept_at_attention = self.kept.total();
            self.record("disentangled attention", before);
            return out;
        }
        let kt = self.tensor(elems * c, c, self.rg(k), Cat::AttentionIo);
        self.bmm_keeps(q, kt);
        let mut probs_rg = self.rg(q) || self.rg(k);
        for (content, pos) in [(q, pos_k), (k, pos_q)] {
            let Some(pos) = pos else { continue };
            self.bmm_keeps(content, pos);
            if self.rg(content) || self.rg(pos) {
                self.keep_new(b * a.heads * s * a.positions * c + s * s * 8, Cat::AttentionScores);
                probs_rg = true;
            }
        }
        let sm = Softmax::Native.elem_bytes(ctx.amp, c);
        if probs_rg {
            // the inverted mask, then the softmax output
            self.keep_new(b * s * s, Cat::DropoutMasks);
            self.keep_new(scores * sm, Cat::AttentionScores);
            if a.dropout > 0.0 {
                self.keep_new(scores, Cat::DropoutMasks);
            }
        }
        // `probs·v` keeps the probabilities as it reads them (dropped out, or cast to half)
        let probs_kept = if a.dropout > 0.0 || sm != c { scores * c } else { 0 };
        if self.rg(v) && probs_rg {
            self.keep_new(probs_kept, Cat::AttentionScores);
        } else if self.rg(v) {
            self.keep_new(scores * c, Cat::AttentionScores);
        }
        if probs_rg {
            self.keep(v);
        }
        let out_rg = probs_rg || self.rg(v);
        if out_rg {
            let o_keeps = if ctx.weight_trains(LinearRole::O) { elems * c } else { 0 };
            self.eager_tail = elems * c + probs_kept + o_keeps;
        }
        let out = self.tensor(elems * c, c, out_rg, Cat::AttentionIo);
        self.kept_at_attention = self.kept.total();
        self.record("disentangled attention", before);
        out
    }
}
