//! The LM head and the loss: what the head's matmul, soft-capping and the cross-entropy keep.

use super::*;
use crate::model::{Head as ModelHead, TransformerSpec};

/// The loss a family's head runs: each is its own op (or autograd Function) with its own rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// transformers' causal-LM loss (`ForCausalLMLoss`: full logits, an fp32 copy, cross-entropy
    /// keeping the fp32 log-softmax) and the stack's alternatives (`--loss`: torchtune's chunked
    /// and linear cross-entropy, litgpt's chunks, fused linear cross-entropy).
    CausalLm,
    /// BERT's MLM head: cross-entropy on every token's logits in the compute dtype (autocast
    /// upcasts them for `cross_entropy`).
    MaskedLm,
    /// A pooled classifier on the first token (BERT's sequence classification).
    Pooled,
    /// ViT's classifier: cross-entropy on the logits in the model dtype.
    Classifier,
    /// Megatron's vocab-parallel cross-entropy, its own autograd Function: an fp32 softmax over
    /// the local vocabulary shard.
    VocabParallel,
}

/// The head's and the loss's transients (beside what they keep) and the tensors they are made of.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeadTransients {
    /// Logits (and their fp32 upcast) alive while the loss runs forward.
    pub forward: u64,
    /// Gradients alive while the loss and log-softmax run backward.
    pub loss_backward: u64,
    /// A chunked head's weight-gradient sum (see [`crate::engine::walk::ActivationModel`]).
    pub chunk_sum: u64,
    /// At that moment, the head inputs still kept.
    pub chunk_kept: u64,
    /// The tensors of the above and of the loss's saves (allocator replay).
    pub pieces: HeadPieces,
}

/// The quantities the head's rules share.
struct Head<'a> {
    ctx: &'a Ctx,
    kind: LossKind,
    /// tokens, hidden size, compute bytes, logit columns, sequence length
    t: u64,
    h: u64,
    c: u64,
    v: u64,
    s: u64,
    /// pieces the logits are computed in, tokens per piece, rows per piece of torchtune's
    /// LinearCrossEntropyLoss (the unmasked rows only)
    pieces: u64,
    chunk: u64,
    ce_chunk: u64,
    /// before PyTorch 1.11 log_softmax keeps its input: the fp32 logits the formulas hold for a
    /// moment are kept instead (Megatron's vocab-parallel loss is its own Function)
    lsm_input: bool,
    /// the logits are half, so an fp32 copy of them exists
    up: u64,
    head_released: u64,
    sums_chunks: bool,
}

impl HeadTransients {
    /// The transients of `kind` for this model; `head_released` is what the head and the loss
    /// keep, `head_dequant` a 4-bit head's dequantized weight.
    pub fn of(kind: LossKind, ctx: &Ctx, m: &TransformerSpec, head_released: u64, head_dequant: u64) -> Self {
        let (t, h, c, s) = (ctx.tokens, m.hidden_size, ctx.compute_elem, ctx.seq);
        let v = match m.head {
            ModelHead::CausalLm | ModelHead::MaskedLm => m.vocab_size,
            ModelHead::SequenceClassification { num_labels } => num_labels,
            ModelHead::Base => 0,
        };
        let pieces = ctx.loss.pieces(ctx.batch, s, h, v);
        // a head run per chunk makes one weight-sized gradient per chunk. Every loss op was created
        // after every chunk's projection, so the engine (ready nodes by decreasing sequence number)
        // runs the whole loss backward first: all chunks' logits gradients exist in the compute
        // dtype. Then the chunks' projections run backward one by one, and each weight gradient goes
        // to the engine's input buffer of the weight's AccumulateGrad, which runs once, after the
        // last use (with tied embeddings after the embedding's backward): the second chunk's sum is
        // `first + new` out of place (the first is a `t()` view), three weight-sized tensors at once,
        // with the logits gradients of the N-2 chunks not yet run and two chunks' input gradients
        // (waiting for the split's backward). Later sums have fewer logits gradients beside them.
        let chunked_head =
            matches!(ctx.loss, Loss::Chunked { .. } | Loss::ChunkedNative { .. } | Loss::LinearCe { .. })
                && kind == LossKind::CausalLm
                && m.head == ModelHead::CausalLm;
        let hd = Head {
            ctx,
            kind,
            t,
            h,
            c,
            v,
            s,
            pieces,
            chunk: t.div_ceil(pieces),
            ce_chunk: ctx.loss.rows(ctx.batch, s).div_ceil(pieces),
            lsm_input: ctx.torch.softmax_keeps_input()
                && !ctx.compiled_loss
                && kind != LossKind::VocabParallel,
            up: u64::from(c != 4),
            head_released,
            sums_chunks: chunked_head && ctx.full && pieces > 1 && v > 0,
        };
        let forward = hd.forward();
        // a 4-bit head dequantizes its weight for each chunk it runs, the earlier chunks' logits alive
        let forward = if head_dequant > 0 {
            let before = if pieces > 1 { (t - hd.chunk.min(t)) * v * c } else { 0 };
            forward.max(before + head_dequant)
        } else {
            forward
        };
        let (chunk_sum, chunk_kept) = hd.chunk_sums();
        let logits_head = matches!(m.head, ModelHead::CausalLm | ModelHead::MaskedLm);
        Self {
            forward,
            loss_backward: hd.loss_backward(),
            chunk_sum,
            chunk_kept,
            pieces: if logits_head { hd.pieces() } else { HeadPieces::default() },
        }
    }
}

impl Head<'_> {
    fn weight_grad(&self) -> u64 {
        crate::units::round_alloc(self.v * self.h * self.c)
    }

    /// The head forward's transient.
    fn forward(&self) -> u64 {
        let Self { ctx, kind, t, h, c, v, s, chunk, ce_chunk, lsm_input, up, .. } = *self;
        match (kind, ctx.loss) {
            (LossKind::VocabParallel, _) => t * v * (c + 4),
            // the compiled loss keeps the logits it reads (counted as saved) and fuses the upcast
            _ if ctx.compiled_loss => 0,
            (LossKind::MaskedLm | LossKind::Pooled | LossKind::Classifier, _)
            | (_, Loss::Hf | Loss::Chunked { .. })
                if lsm_input =>
            {
                up * t * v * c
            }
            (_, Loss::LinearCe { .. }) if lsm_input => {
                let copy = if ctx.full { 0 } else { ctx.loss.rows(ctx.batch, s) * h * c };
                t * h * c + copy + up * ce_chunk * v * c
            }
            (LossKind::MaskedLm | LossKind::Pooled | LossKind::Classifier, _) | (_, Loss::Hf) => {
                t * v * (c + if c == 4 { 0 } else { 4 })
            }
            // the chunks' logits stay in a list until the loss returns; one chunk's fp32 copy at a time
            (_, Loss::Chunked { .. }) => t * v * c + if c == 4 { 0 } else { chunk * v * 4 },
            // the chunks in the compute dtype while Fabric converts them (the fp32 list is kept)
            (_, Loss::ChunkedNative { .. }) => {
                if c == 4 {
                    0
                } else {
                    t * v * c
                }
            }
            // one chunk of logits at a time
            (_, Loss::FusedLinearCe) => chunk * v * c,
            // the model's final hidden state (no op keeps it) and, for a frozen head, the unsaved
            // copy of its unmasked rows, alive while the loss runs; the last chunk's logits and
            // their fp32 copy
            (_, Loss::LinearCe { .. }) => {
                let copy = if ctx.full { 0 } else { ctx.loss.rows(ctx.batch, s) * h * c };
                t * h * c + copy + ce_chunk * v * (c + if c == 4 { 0 } else { 4 })
            }
        }
    }

    /// The loss backward's transient.
    fn loss_backward(&self) -> u64 {
        let Self { ctx, kind, t, c, v, pieces, chunk, ce_chunk, .. } = *self;
        match (kind, ctx.loss) {
            (LossKind::MaskedLm, _) => 2 * t * v * if ctx.amp { 4 } else { c },
            (LossKind::Pooled, _) => 2 * ctx.batch * v * 4,
            _ if v == 0 => 0,
            // the compiled backward writes each piece's logits gradient in the compute dtype at once
            (LossKind::VocabParallel | LossKind::Classifier, _) if ctx.compiled_loss => 2 * t * v * 4,
            _ if ctx.compiled_loss => t.div_ceil(pieces) * v * c,
            (LossKind::VocabParallel | LossKind::Classifier, _) | (_, Loss::Hf) => 2 * t * v * 4,
            // chunk by chunk: nll's and log-softmax's fp32 gradients and the cast back
            (_, Loss::Chunked { .. }) => chunk * v * (8 + if c == 4 { 0 } else { c }),
            // chunk by chunk: nll's and log-softmax's fp32 gradients
            (_, Loss::ChunkedNative { .. }) => 2 * chunk * v * 4,
            // the input's gradient was computed in the forward
            (_, Loss::FusedLinearCe) => 0,
            // the last chunk first: its nll and log-softmax fp32 gradients and the cast back
            (_, Loss::LinearCe { .. }) => ce_chunk * v * (8 + if c == 4 { 0 } else { c }),
        }
    }

    /// A chunked head's weight-gradient sum and the head inputs kept then.
    fn chunk_sums(&self) -> (u64, u64) {
        let Self { ctx, h, c, v, pieces, chunk, ce_chunk, head_released, .. } = *self;
        let weight_grad = self.weight_grad();
        match (self.sums_chunks, ctx.loss) {
            // LinearCrossEntropyLoss runs each chunk's projection, cast and loss one after the other,
            // so backward finishes the last chunk (its log-softmax freed) before the next: at the
            // second chunk's weight-gradient sum only those two chunks' input gradients are alive
            // beside the three weight-sized tensors
            (true, Loss::LinearCe { .. }) => {
                (3 * weight_grad + 2 * ce_chunk * h * c, head_released.saturating_sub(2 * ce_chunk * v * 4))
            }
            (true, _) => {
                let logits_grads = (pieces - 2) * chunk * v * c;
                let transient = 3 * weight_grad + logits_grads + 2 * chunk * h * c;
                // tensor_split / split along the sequence: views of one storage when b == 1, else
                // strided chunks the matmul's reshape copies (each freed by its chunk's backward);
                // autocast casts each chunk on its own
                let kept = if ctx.batch == 1 && !ctx.amp {
                    ctx.rank_tokens * h * c
                } else {
                    (pieces - 2) * chunk * h * c
                };
                (transient, kept)
            }
            (false, _) => (0, 0),
        }
    }

    /// The tensors of those transients, as the formulas above make them: a piece of logits in the
    /// compute dtype (`low`), its fp32 copy or log-softmax (`f32`), `up` of the copies.
    fn pieces(&self) -> HeadPieces {
        let Self { ctx, kind, t, c, v, pieces, chunk, ce_chunk, lsm_input, up, .. } = *self;
        let (low, f32) = (chunk * v * c, chunk * v * 4);
        let (ce_low, ce_f32) = (ce_chunk * v * c, ce_chunk * v * 4);
        let whole = |e: u64| Pieces::of(t * v * e, 2);
        let weight_grad = self.weight_grad();
        HeadPieces {
            forward: match (kind, ctx.loss) {
                _ if ctx.compiled_loss && kind != LossKind::VocabParallel => Pieces::default(),
                // the fp32 copies are kept (before PyTorch 1.11): the half logits alone
                (LossKind::MaskedLm | LossKind::Pooled | LossKind::Classifier, _) | (_, Loss::Hf)
                    if lsm_input =>
                {
                    Pieces::of(t * v * c, up)
                }
                (_, Loss::Chunked { .. }) if lsm_input => Pieces::of(low, pieces * up),
                (_, Loss::LinearCe { .. }) if lsm_input => Pieces::of(ce_low, up),
                (
                    LossKind::VocabParallel | LossKind::MaskedLm | LossKind::Pooled | LossKind::Classifier,
                    _,
                )
                | (_, Loss::Hf) => {
                    Pieces::two(t * v * c, 1, t * v * 4, if kind == LossKind::VocabParallel { 1 } else { up })
                }
                (_, Loss::Chunked { .. }) => Pieces::two(low, pieces, f32, up),
                (_, Loss::ChunkedNative { .. }) => Pieces::of(low, pieces * up),
                (_, Loss::FusedLinearCe) => Pieces::of(low, 1),
                (_, Loss::LinearCe { .. }) => Pieces::two(ce_low, 1, ce_f32, up),
            },
            saved: match (kind, ctx.loss) {
                (
                    LossKind::VocabParallel | LossKind::MaskedLm | LossKind::Pooled | LossKind::Classifier,
                    _,
                )
                | (_, Loss::Hf)
                    if !ctx.compiled_loss =>
                {
                    t * v * 4
                }
                _ if ctx.compiled_loss => low,
                (_, Loss::Chunked { .. } | Loss::ChunkedNative { .. }) => f32,
                (_, Loss::LinearCe { .. }) => ce_f32,
                (_, Loss::FusedLinearCe) => 0,
                (_, Loss::Hf) => t * v * 4,
            },
            loss_backward: match (kind, ctx.loss) {
                (LossKind::MaskedLm, _) => whole(if ctx.amp { 4 } else { c }),
                (LossKind::Pooled, _) => Pieces::of(ctx.batch * v * 4, 2),
                _ if v == 0 => Pieces::default(),
                (LossKind::VocabParallel | LossKind::Classifier, _) => whole(4),
                _ if ctx.compiled_loss => Pieces::of(low, 1),
                (_, Loss::Hf) => whole(4),
                (_, Loss::Chunked { .. }) => Pieces::two(f32, 2, low, up),
                (_, Loss::ChunkedNative { .. }) => Pieces::of(f32, 2),
                (_, Loss::FusedLinearCe) => Pieces::default(),
                (_, Loss::LinearCe { .. }) => Pieces::two(ce_f32, 2, ce_low, up),
            },
            chunk_sum: match (self.sums_chunks, ctx.loss) {
                (true, Loss::LinearCe { .. }) => Pieces::of(weight_grad, 3),
                (true, _) => Pieces::two(weight_grad, 3, low, pieces - 2),
                (false, _) => Pieces::default(),
            },
        }
    }
}

impl Graph<'_> {
    /// LM head (or classifier) and loss on `rows` rows of `width` into `classes` logits: the
    /// head keeps its input when it trains (autocast: the cast copy, and the cast weight), an
    /// optional final soft-capping keeps its tanh output, and the loss keeps the fp32
    /// log-softmax output, a scalar and the int64 labels. Returns the bytes kept.
    pub fn head_loss(
        &mut self,
        x: Tensor,
        rows: u64,
        width: u64,
        classes: u64,
        softcap: bool,
        shifted: bool,
    ) -> u64 {
        let before = self.kept.total();
        let ctx = self.ctx;
        let c = ctx.compute_elem;
        if classes == 0 {
            return 0;
        }
        let fused = ctx.loss == Loss::FusedLinearCe;
        // the fused kernel computes the input's gradient in its forward and keeps that instead
        // (Liger's FusedLinearCrossEntropy: grad_input in the input's dtype)
        let linear_ce = matches!(ctx.loss, Loss::LinearCe { .. });
        // LinearCrossEntropyLoss: `index_select` of the unmasked rows (a copy, which the chunks'
        // projections keep when the head trains; its backward keeps the int64 index) and the
        // labels selected the same way, kept by nll
        let ce_rows = ctx.loss.rows(ctx.batch, ctx.seq);
        if linear_ce && self.rg(x) {
            self.keep_new(ce_rows * 8, Cat::HeadLoss);
        }
        if ctx.full && !fused && linear_ce {
            self.keep_new(ce_rows * width * if ctx.amp { c } else { self.elem(x) }, Cat::HeadLoss);
        } else if ctx.full && !fused {
            if ctx.amp {
                self.keep_new(rows * width * c, Cat::InputCasts);
            } else {
                // the final norm's output, kept by lm_head (one storage however it is chunked)
                self.keep_as(x, Cat::HeadLoss);
            }
        }
        if !ctx.full && !fused && ctx.head_bnb4 && ctx.bnb4_input.is_some() && self.rg(x) {
            // a frozen 4-bit head is bitsandbytes' `MatMul4Bit`, which keeps its input whenever
            // it requires grad (`ctx.tensors = (A, B)`)
            self.keep_as(x, Cat::HeadLoss);
        }
        if ctx.amp && !fused {
            self.keep_new(classes * width * c, Cat::WeightCasts);
        }
        let t = ctx.tokens;
        let pieces = ctx.loss.pieces(ctx.batch, ctx.seq, width, classes);
        if fused {
            if self.rg(x) {
                self.keep_new(rows * width * self.elem(x), Cat::HeadLoss);
            }
            self.record("fused linear cross-entropy", before);
            return self.kept.total() - before;
        }
        if softcap {
            self.keep_new(t * classes * c, Cat::HeadLoss); // tanh output
        }
        if ctx.compiled_loss {
            // inductor's fused cross-entropy saves its input (the logits in the compute dtype)
            // and an fp32 max and logsumexp per row; the softmax is recomputed in backward
            self.keep_new(t * classes * c + 2 * t * 4, Cat::HeadLoss);
        } else {
            // log_softmax output in fp32: transformers' upcast, torchtune's per-chunk .float(),
            // litgpt's chunks converted by Fabric
            let lsm = if linear_ce { ce_rows } else { t } * classes * 4;
            self.keep_new(lsm, Cat::HeadLoss);
            if matches!(ctx.loss, Loss::ChunkedNative { .. }) {
                // litgpt: Fabric returns the chunks' logits in fp32 and the training loop's
                // `logits` list holds them through backward
                self.keep_new(t * classes * 4, Cat::HeadLoss);
            } else if ctx.torch.softmax_keeps_input() {
                // before PyTorch 1.11 log_softmax keeps its input too: the fp32 logits (the
                // upcast copies, or the logits themselves in an fp32 run)
                self.keep_new(lsm, Cat::HeadLoss);
            }
        }
        self.keep_new(4 * pieces, Cat::HeadLoss); // nll_loss total_weight, one per chunk
        // labels: HF pads with -100 then takes [..., 1:].contiguous(): a view when b == 1
        let labels = if linear_ce {
            ce_rows * 8
        } else if shifted && ctx.batch == 1 && ctx.loss == Loss::Hf {
            (ctx.seq + 1) * 8
        } else {
            t * 8
        };
        self.keep_new(labels, Cat::HeadLoss);
        self.record("lm head + loss", before);
        self.kept.total() - before
    }
}

impl Graph<'_> {
    /// `F.cross_entropy(logits (rows, n), labels)`, run as `nll_loss(log_softmax(logits))` on
    /// the logits of a classifier or an MLM head: keeps the log-softmax output in the compute
    /// dtype, `total_weight` and the int64 labels; under autocast (which runs `cross_entropy` in
    /// fp32) also the logits' fp32 copy and an fp32 `total_weight`. Before PyTorch 1.11
    /// log_softmax keeps its input as well.
    pub fn cross_entropy(&mut self, rows: u64, n: u64) {
        let before = self.kept.total();
        let ctx = self.ctx;
        let c = ctx.compute_elem;
        if ctx.amp {
            self.keep_new(rows * n * 4 + rows * n * c + 4 + rows * 8, Cat::HeadLoss);
        } else {
            self.keep_new(rows * n * c + c + rows * 8, Cat::HeadLoss);
        }
        if ctx.torch.softmax_keeps_input() {
            self.keep_new(rows * n * if ctx.amp { 4 } else { c }, Cat::HeadLoss);
        }
        self.record("cross_entropy", before);
    }
}
