//! The op kinds and their autograd rules — the one table.
//!
//! A family builds a block by calling these ops in forward order on a [`Graph`]. Each op is
//! interpreted as it is called: it creates its output storage, and its *rule* says what its
//! backward keeps, given which inputs require grad, whether its weight trains and the dtype
//! recipe (pure fp32 / pure half / autocast / LoRA), the way PyTorch's `derivatives.yaml` does
//! (`mm`: the input is kept when the weight needs a gradient, the weight when the input does).
//!
//! Tensors are *storages*: a view (a split of a fused projection, a transpose) is the same
//! [`Tensor`], so a storage kept by two ops, or through two views, counts once — as the measured
//! numbers count them. Sizes come from the op's arguments, never from the tensor.

use crate::engine::inputs::saved::{Cat, Saved};
use crate::engine::inputs::{AttentionImpl, Ctx, Kernel, Loss};
use crate::model::LinearRole;

mod activations;
mod attention;
mod conv;
mod disentangled;
mod inference;
mod kda;
mod linear;
mod loss;
mod mixers;
mod moe;
pub mod net;
pub mod net_window;
pub use moe::{MoeOp, Renorm, Routing};
mod norms;
mod pieces;
pub use activations::{Act, MlpBackward};
pub use attention::{Attn, Softmax, attention_backward_transient, indexer_transient, kernel};
pub use disentangled::RelAttn;
pub use inference::{InferKind, InferPeaks};
pub use kda::kda_backward_transient;
pub use linear::Dequant;
pub use loss::{HeadTransients, LossKind};
pub use mixers::{mamba_backward_transient, mixer_infer_working_set, ssm_backward_transient};
pub use norms::NormKind;
pub use pieces::{HeadPieces, Pieces};

/// A storage created while walking one block (or the embedding / head part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tensor(u16);

#[derive(Clone, Copy, Debug, Default)]
struct Storage {
    bytes: u64,
    /// Bytes per element of its dtype (4 = fp32, 2 = half, 8 = int64).
    elem: u8,
    /// Requires grad.
    rg: bool,
    saved: bool,
    cat: Option<Cat>,
    /// A table every block reads (made once a forward): kept once for the model, not per block.
    table: Option<Shared>,
}

const MAX_STORAGES: usize = 112;

/// Tables every block shares (saved once for the whole model, not per block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shared {
    /// Rotary cos/sin of the (global) attention layers.
    Rope,
    /// Rotary cos/sin of local (sliding-window) layers with their own base (Gemma 3).
    RopeLocal,
    /// DeBERTa-v2's relative position embeddings after their LayerNorm, made once a forward and
    /// read by every layer's position projections.
    RelPositions,
}

/// Storages one op record lists one by one; more are summed into the last.
pub const OP_TENSORS: usize = 6;

/// What a walked op kept, for the "which op keeps what" table and the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OpRecord {
    /// Op kind and role, e.g. `"linear q_proj"`.
    pub op: &'static str,
    /// Bytes its backward keeps that no earlier op kept.
    pub kept_bytes: u64,
    /// Those bytes storage by storage, in the order the op kept them (zeros after the last): the
    /// tensors the allocator replay allocates.
    #[serde(skip)]
    pub tensors: [u64; OP_TENSORS],
}

/// The facts of a model's blocks that the transient rules read, resolved once per walk from the
/// family's op kinds and the scenario.
#[derive(Clone, Copy, Debug)]
pub struct BlockFacts {
    /// The attention kernel of a full-attention layer.
    pub kernel: Kernel,
    /// SDPA gets an explicit mask in some layer.
    pub any_masked: bool,
    /// Eager attention with learned sinks (the softmax stays in the logits' dtype).
    pub eager_sinks: bool,
    /// Eager attention that keeps its raw scores named and returns its probabilities (BLOOM).
    pub named_scores: bool,
    /// Bytes per element of eager attention's probabilities.
    pub probs_elem: u64,
    /// The widest MLP tensor per token (routed experts × top-k for MoE).
    pub mlp_width: u64,
    /// Gated MLP.
    pub gated: bool,
    /// The MLP's activation.
    pub act: Act,
    /// gate and up from one fused projection.
    pub fused_gate_up: bool,
    /// transformers' `gelu_new` written out in elementwise ops runs (Phi under transformers).
    pub gelu_new_ops: bool,
    /// The MoE router works on an fp32 copy of the tokens.
    pub router_fp32: bool,
    /// The routing weights stay fp32: the weighted rows are fp32.
    pub routing_fp32: bool,
    /// Every token through every expert (Llama 4).
    pub moe_all_experts: bool,
    /// Columns of the rotary cos/sin tables (0: no rotary).
    pub rope_cols: u64,
    /// Logit columns of the head (0 for a bare model).
    pub classes: u64,
    /// Bytes a recurrent mixer holds at once in inference (0 without one).
    pub mixer_infer: u64,
    /// Some layer attends (an attention-free model has no attention phase).
    pub attends: bool,
}

/// The interpreter's state for one walk: storages, what is kept, and a mark for the peak.
pub struct Graph<'c> {
    /// Scenario quantities (tokens, dtypes, recipe).
    pub ctx: &'c Ctx,
    st: [Storage; MAX_STORAGES],
    n: usize,
    /// Bytes kept, by category.
    pub kept: Saved,
    /// Shared tables this walk asked for, with their bytes (rotary cos/sin).
    pub shared: [(Option<Shared>, u64); 2],
    /// Selective recompute: the attention core keeps only its inputs and output.
    pub selective: bool,
    /// Bytes kept when the (last) attention core was walked.
    pub kept_at_attention: u64,
    /// Eager attention's tensors freed before its softmax runs backward.
    pub eager_tail: u64,
    trace: Option<Vec<OpRecord>>,
    /// The storages the running op kept so far (traced walks only).
    noted: ([u64; OP_TENSORS], usize),
    /// The walk is of the model's first block, which some families build differently
    /// ([`crate::families::first_block_differs`]: ModernBERT's has no attention norm).
    pub first_block: bool,
}

impl<'c> Graph<'c> {
    /// An empty walk.
    pub fn new(ctx: &'c Ctx) -> Self {
        Self {
            ctx,
            st: [Storage::default(); MAX_STORAGES],
            n: 0,
            kept: Saved::default(),
            shared: [(None, 0); 2],
            selective: false,
            kept_at_attention: 0,
            eager_tail: 0,
            trace: None,
            noted: ([0; OP_TENSORS], 0),
            first_block: false,
        }
    }

    /// Records every op with what it kept (for the per-op table).
    pub fn with_trace(mut self) -> Self {
        self.trace = Some(Vec::with_capacity(48));
        self
    }

    /// The per-op records of a traced walk.
    pub fn records(&self) -> &[OpRecord] {
        self.trace.as_deref().unwrap_or(&[])
    }

    // ---- storage plumbing -------------------------------------------------------------------

    /// A new storage of `bytes` (elements of `elem` bytes).
    pub fn tensor(&mut self, bytes: u64, elem: u64, rg: bool, cat: Cat) -> Tensor {
        // a block walk makes a few dozen storages; the bound is checked in debug builds (every
        // family's walk runs in the tests)
        debug_assert!(self.n < MAX_STORAGES - 1, "a block walk made more than {MAX_STORAGES} storages");
        let i = self.n.min(MAX_STORAGES - 1);
        self.st[i] = Storage { bytes, elem: elem as u8, rg, saved: false, cat: Some(cat), table: None };
        self.n = (self.n + 1).min(MAX_STORAGES - 1);
        Tensor(i as u16)
    }

    fn s(&self, t: Tensor) -> Storage {
        self.st[t.0 as usize]
    }

    /// Does this storage require grad?
    pub fn rg(&self, t: Tensor) -> bool {
        self.s(t).rg
    }

    /// Element size of a storage.
    pub fn elem(&self, t: Tensor) -> u64 {
        u64::from(self.s(t).elem)
    }

    /// A storage made once a forward that every block reads (`which`): what keeps it counts it
    /// once for the model.
    pub fn shared_tensor(&mut self, bytes: u64, elem: u64, rg: bool, which: Shared) -> Tensor {
        let t = self.tensor(bytes, elem, rg, Cat::Embeddings);
        self.st[t.0 as usize].table = Some(which);
        t
    }

    /// Keeps a storage for backward (counted once however many ops keep it).
    pub fn keep(&mut self, t: Tensor) {
        let s = &mut self.st[t.0 as usize];
        if let Some(which) = s.table {
            let b = s.bytes;
            s.saved = true;
            self.share(which, b);
            return;
        }
        if !s.saved {
            s.saved = true;
            if let Some(cat) = s.cat {
                let b = s.bytes;
                self.kept.add(cat, b);
                self.note(b);
            }
        }
    }

    /// Keeps a storage for backward under `cat` (the op's category, not the storage's own), once.
    fn keep_as(&mut self, t: Tensor, cat: Cat) {
        let s = &mut self.st[t.0 as usize];
        if !s.saved {
            s.saved = true;
            let b = s.bytes;
            self.kept.add(cat, b);
            self.note(b);
        }
    }

    /// Keeps a storage the op creates internally (statistics, casts, masks, logsumexp).
    pub fn keep_new(&mut self, bytes: u64, cat: Cat) {
        self.kept.add(cat, bytes);
        self.note(bytes);
    }

    /// Notes a kept storage of the running op (for the allocator replay's tensor sizes).
    fn note(&mut self, bytes: u64) {
        if self.trace.is_none() || bytes == 0 {
            return;
        }
        let (t, n) = &mut self.noted;
        if *n < OP_TENSORS {
            t[*n] = bytes;
            *n += 1;
        } else {
            t[OP_TENSORS - 1] += bytes;
        }
    }

    fn share(&mut self, which: Shared, bytes: u64) {
        for slot in &mut self.shared {
            match slot.0 {
                Some(w) if w == which => return,
                None => {
                    *slot = (Some(which), bytes);
                    return;
                }
                _ => {}
            }
        }
    }

    fn record(&mut self, op: &'static str, before: u64) {
        let now = self.kept.total();
        if let Some(tr) = &mut self.trace {
            tr.push(OpRecord { op, kept_bytes: now - before, tensors: self.noted.0 });
        }
        self.noted = ([0; OP_TENSORS], 0);
    }

    // ---- ops ---------------------------------------------------------------------------------

    /// `nn.Embedding`: keeps the int64 ids when its weight trains. Output in the stream dtype.
    pub fn embedding(&mut self, width: u64) -> Tensor {
        let before = self.kept.total();
        let trains = self.ctx.full;
        if trains {
            self.keep_new(self.ctx.tokens * 8, Cat::Embeddings);
            if self.ctx.image_mask {
                // `inputs_embeds.masked_scatter(image_mask, image_embeds)` keeps its bool mask
                self.keep_new(self.ctx.tokens, Cat::Embeddings);
            }
        }
        let out = self.tensor(
            self.ctx.tokens * width * self.ctx.residual_elem,
            self.ctx.residual_elem,
            trains,
            Cat::Embeddings,
        );
        self.record("embedding", before);
        out
    }

    /// `x * embed_scale` (Gemma's embedding normaliser, a 0-dim buffer in x's dtype): the scalar
    /// it keeps is a buffer, not an activation.
    pub fn scale_by_tensor(&mut self, x: Tensor, elems: u64) -> Tensor {
        let before = self.kept.total();
        let e = self.elem(x);
        let out = self.tensor(elems * e, e, self.rg(x), Cat::Embeddings);
        self.record("mul (embedding scale)", before);
        out
    }

    /// Rotary embedding `x·cos + rotate_half(x)·sin` over `rot` of each head's dimensions: keeps
    /// only the cos/sin tables (shared by every block), returns a new storage of `elems`.
    pub fn rope(&mut self, x: Tensor, elems: u64, rot: u64, table: Shared) -> Tensor {
        self.rope_tables_in(x, elems, rot, table, false)
    }

    /// Rotary with cos/sin kept in fp32 whatever the stream dtype (OLMo 2).
    pub fn rope_fp32(&mut self, x: Tensor, elems: u64, rot: u64, table: Shared) -> Tensor {
        self.rope_tables_in(x, elems, rot, table, true)
    }

    /// Multimodal rotary (Qwen2.5-VL, Qwen3-VL): the position ids are `(3, b, s)`, one row of
    /// positions a sequence, so the shared cos/sin tables are `(b, s, rot)`.
    pub fn rope_per_sequence(&mut self, x: Tensor, elems: u64, rot: u64, table: Shared) -> Tensor {
        self.rope_tables_in(x, elems, self.ctx.batch * rot, table, false)
    }

    /// Llama 4's attention temperature on layers without rotary: `(q · scales).to(q.dtype)` with
    /// fp32 `scales` of the positions, which the product keeps (one per layer); q comes out as
    /// a new storage.
    pub fn position_scale(&mut self, q: Tensor, elems: u64) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        if self.rg(q) {
            self.keep_new(ctx.seq * 4, Cat::AttentionIo);
        }
        let c = ctx.compute_elem;
        let out = self.tensor(elems * c, c, self.rg(q), Cat::AttentionIo);
        self.record("attention temperature", before);
        out
    }

    /// Rotary whose cos/sin are rebuilt in every attention call (GLM's and ERNIE's interleaved
    /// layout, `cos[..., :d/2].repeat_interleave(2, dim=-1)`): the products `q·cos` and
    /// `rotate_half(q)·sin` keep the call's `(1, 1, s, rot)` pair, which q and k share, so each
    /// layer keeps one pair of its own (fp32 where the tables are, ERNIE's). Returns q and k as
    /// new storages (the rotated halves concatenated, or cast back to the stream's dtype).
    pub fn rope_rebuilt(
        &mut self,
        q: Tensor,
        k: Tensor,
        elems: (u64, u64),
        rot: u64,
        fp32: bool,
    ) -> (Tensor, Tensor) {
        let before = self.kept.total();
        let ctx = self.ctx;
        if self.rg(q) || self.rg(k) {
            let e = if ctx.amp || fp32 { 4 } else { ctx.compute_elem };
            self.keep_new(2 * ctx.seq * rot * e, Cat::AttentionIo);
        }
        let c = ctx.compute_elem;
        let q2 = self.tensor(elems.0 * c, c, self.rg(q), Cat::AttentionIo);
        let k2 = self.tensor(elems.1 * c, c, self.rg(k), Cat::AttentionIo);
        self.record("rotary (tables rebuilt)", before);
        (q2, k2)
    }

    /// `cols`: the tables' elements a position (`rot`, or `b · rot` with per-sequence positions).
    fn rope_tables_in(&mut self, x: Tensor, elems: u64, cols: u64, table: Shared, fp32: bool) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        if self.rg(x) {
            // (1, s, rot) cos and sin in the stream dtype (fp32 under autocast)
            let e = if ctx.amp || fp32 { 4 } else { ctx.compute_elem };
            self.share(table, 2 * ctx.seq * cols * e);
        }
        let out = self.tensor(elems * ctx.compute_elem, ctx.compute_elem, self.rg(x), Cat::AttentionIo);
        self.record("rotary", before);
        out
    }

    /// `a + b`: keeps nothing. The output is a residual-stream storage when `cat` says so.
    pub fn add(&mut self, a: Tensor, b: Tensor, elems: u64, cat: Cat) -> Tensor {
        let e = self.elem(a).max(self.elem(b));
        self.tensor(elems * e, e, self.rg(a) || self.rg(b), cat)
    }

    /// Dropout (CUDA's fused `native_dropout`): keeps a 1-byte mask in training when p > 0.
    pub fn dropout(&mut self, x: Tensor, elems: u64, p: f64) -> Tensor {
        if p <= 0.0 || !self.rg(x) {
            return x;
        }
        let before = self.kept.total();
        self.keep_new(elems, Cat::DropoutMasks);
        let e = self.elem(x);
        let out = self.tensor(elems * e, e, true, self.s(x).cat.unwrap_or(Cat::Mlp));
        self.record("dropout", before);
        out
    }
}

#[cfg(test)]
mod tests;
