//! The op kinds and their autograd rules — the one table.
//!
//! A family builds a block by calling these ops in forward order on a [`Graph`]. Each op is
//! interpreted as it is called: it creates its output storage, and its *rule* says what its
//! backward keeps, given which inputs require grad, whether its weight trains and the dtype
//! recipe (pure fp32 / pure half / autocast / LoRA), the way PyTorch's `derivatives.yaml` does
//! (`mm`: the input is kept when the weight needs a gradient, the weight when the input does).
//!
//! Tensors are *storages*: a view (a split of a fused projection, a transpose) is the same
//! [`T`], so a storage kept by two ops, or through two views, counts once — as the measured
//! numbers count them. Sizes come from the op's arguments, never from the tensor.

use crate::engine::inputs::saved::{Cat, Saved};
use crate::engine::inputs::{AttentionImpl, Ctx, Kernel, Loss};
use crate::model::LinearRole;

mod attention;
pub use attention::{Attn, Softmax, kernel};

/// A storage created while walking one block (or the embedding / head part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct T(u16);

#[derive(Clone, Copy, Debug, Default)]
struct Storage {
    bytes: u64,
    /// Bytes per element of its dtype (4 = fp32, 2 = half, 8 = int64).
    elem: u8,
    /// Requires grad.
    rg: bool,
    saved: bool,
    cat: Option<Cat>,
}

const MAX_STORAGES: usize = 112;

/// Tables every block shares (saved once for the whole model, not per block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shared {
    /// Rotary cos/sin of the (global) attention layers.
    Rope,
    /// Rotary cos/sin of local (sliding-window) layers with their own base (Gemma 3).
    RopeLocal,
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

/// Normalisation kinds, each with its own saved-tensor rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormKind {
    /// HF `LlamaRMSNorm`: fp32 upcast, `x·rsqrt(mean(x²)+eps)`, cast back, `weight · y`.
    Rms,
    /// Gemma's RMSNorm: computed in fp32 throughout, `y · (1 + w)`, cast back at the end.
    RmsOffset,
    /// OLMo 2's RMSNorm: `(w · y).to(dtype)` — the weight multiplies the fp32 normalised value.
    RmsWeightFp32,
    /// `nn.LayerNorm` (`native_layer_norm` keeps input, mean and rstd).
    Layer,
    /// Apex/Megatron fused LayerNorm: input kept, fp32 mean and rstd.
    LayerFp32Stats,
    /// litgpt's RMSNorm before Oct 2023: `x * rsqrt(mean(x * x))` in the input dtype, `weight *`.
    RmsNoUpcast,
}

/// Activation functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// SiLU (keeps its input).
    Silu,
    /// GELU, erf or tanh approximation (keeps its input).
    Gelu,
    /// transformers' `gelu_new` written out in elementwise ops ([`Graph::gelu_new`]).
    GeluNew,
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
    pub fn tensor(&mut self, bytes: u64, elem: u64, rg: bool, cat: Cat) -> T {
        // a block walk makes a few dozen storages; the bound is checked in debug builds (every
        // family's walk runs in the tests)
        debug_assert!(self.n < MAX_STORAGES - 1, "a block walk made more than {MAX_STORAGES} storages");
        let i = self.n.min(MAX_STORAGES - 1);
        self.st[i] = Storage { bytes, elem: elem as u8, rg, saved: false, cat: Some(cat) };
        self.n = (self.n + 1).min(MAX_STORAGES - 1);
        T(i as u16)
    }

    fn s(&self, t: T) -> Storage {
        self.st[t.0 as usize]
    }

    /// Does this storage require grad?
    pub fn rg(&self, t: T) -> bool {
        self.s(t).rg
    }

    /// Element size of a storage.
    pub fn elem(&self, t: T) -> u64 {
        u64::from(self.s(t).elem)
    }

    /// Keeps a storage for backward (counted once however many ops keep it).
    pub fn keep(&mut self, t: T) {
        let s = &mut self.st[t.0 as usize];
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
    fn keep_as(&mut self, t: T, cat: Cat) {
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
    pub fn embedding(&mut self, width: u64) -> T {
        let before = self.kept.total();
        let trains = self.ctx.full;
        if trains {
            self.keep_new(self.ctx.t * 8, Cat::Embeddings);
        }
        let out = self.tensor(self.ctx.t * width * self.ctx.r, self.ctx.r, trains, Cat::Embeddings);
        self.record("embedding", before);
        out
    }

    /// `x * embed_scale` (Gemma's embedding normaliser, a 0-dim buffer in x's dtype): the scalar
    /// it keeps is a buffer, not an activation.
    pub fn scale_by_tensor(&mut self, x: T, elems: u64) -> T {
        let before = self.kept.total();
        let e = self.elem(x);
        let out = self.tensor(elems * e, e, self.rg(x), Cat::Embeddings);
        self.record("mul (embedding scale)", before);
        out
    }

    /// A normalisation over `rows` rows of `width` (tokens, or tokens × heads for q/k norms).
    /// Output in x's dtype; category of what it keeps: `Norms`.
    pub fn norm(&mut self, x: T, rows: u64, width: u64, kind: NormKind, name: &'static str) -> T {
        let before = self.kept.total();
        let (xe, active) = (self.elem(x), self.rg(x));
        let trains = self.ctx.full;
        let n = rows * width;
        match kind {
            NormKind::Rms => {
                // u = x.to(f32) (x itself when fp32) kept by pow and mul; rsqrt kept; y =
                // (u·rsqrt).to(x.dtype) kept by `weight * y` when the weight trains
                if active {
                    self.keep_new(rows * 4, Cat::Norms);
                    if xe == 4 { self.keep(x) } else { self.keep_new(n * 4, Cat::Norms) }
                }
                if trains {
                    self.keep_new(n * xe, Cat::Norms);
                }
            }
            NormKind::RmsNoUpcast => {
                // `x * x` and `x * rsqrt` keep x itself, rsqrt (input dtype) is kept; the
                // normalised value is kept by `weight * x_normed` when the weight trains
                if active {
                    self.keep(x);
                    self.keep_new(rows * xe, Cat::Norms);
                }
                if trains {
                    self.keep_new(n * xe, Cat::Norms);
                }
            }
            NormKind::RmsWeightFp32 => {
                if active {
                    self.keep_new(rows * 4, Cat::Norms);
                    if xe == 4 { self.keep(x) } else { self.keep_new(n * 4, Cat::Norms) }
                }
                if trains {
                    self.keep_new(n * 4, Cat::Norms);
                }
            }
            NormKind::RmsOffset => {
                // u = x.float(); rsqrt; n = u·rsqrt (fp32) kept by `n * (1 + w.float())` when the
                // weight trains; (1 + w) (fp32, width) kept when n requires grad
                if active {
                    self.keep_new(rows * 4, Cat::Norms);
                    if xe == 4 {
                        self.keep(x)
                    } else {
                        self.keep_new(n * 4, Cat::Norms)
                    }
                    self.keep_new(width * 4, Cat::Norms);
                }
                if trains {
                    self.keep_new(n * 4, Cat::Norms);
                }
            }
            NormKind::LayerFp32Stats => {
                if active || trains {
                    self.keep(x);
                    self.keep_new(2 * rows * 4, Cat::Norms);
                }
            }
            NormKind::Layer => {
                // native_layer_norm keeps input, mean and rstd (the reference reports the
                // statistics in the input dtype for half inputs); layer_norm is an fp32 autocast
                // op, so a half input is upcast first and the output is fp32
                if active || trains {
                    if self.ctx.amp && xe != 4 {
                        self.keep_new(n * 4, Cat::HeadLoss);
                        self.keep_new(2 * rows * 4, Cat::Norms);
                    } else {
                        self.keep(x);
                        self.keep_new(2 * rows * xe, Cat::Norms);
                    }
                }
            }
        }
        if active && self.ctx.torch.mean_keeps_input() {
            // before PyTorch 2.2 `mean(dim)` keeps its input: the squared tensor (in fp32 when
            // the norm upcasts)
            match kind {
                NormKind::Rms | NormKind::RmsWeightFp32 | NormKind::RmsOffset => {
                    self.keep_new(n * 4, Cat::Norms)
                }
                NormKind::RmsNoUpcast => self.keep_new(n * xe, Cat::Norms),
                NormKind::Layer | NormKind::LayerFp32Stats => {}
            }
        }
        let out_e = if kind == NormKind::Layer && self.ctx.amp { 4 } else { xe };
        let out = self.tensor(n * out_e, out_e, active || trains, Cat::Norms);
        self.record(name, before);
        out
    }

    /// `nn.Linear` on `rows` rows: keeps its input when the weight trains (under autocast the
    /// half-precision copy of it), the (cast) weight when the input requires grad (parameters
    /// themselves are not activations), and a PEFT LoRA adapter's tensors when it is targeted.
    #[allow(clippy::too_many_arguments)]
    pub fn linear(
        &mut self,
        x: T,
        rows: u64,
        in_f: u64,
        out_f: u64,
        role: LinearRole,
        cat: Cat,
        name: &'static str,
    ) -> T {
        let before = self.kept.total();
        let out = self.linear_base(x, rows, in_f, out_f, role, cat, self.ctx.adapted(role), true);
        self.record(name, before);
        out
    }

    /// litgpt's `LoRAQKVLinear` on `rows` rows: the fused q/k/v projection (`widths`) as a Linear,
    /// and one adapter over it when any of q, k, v is targeted: `lora_dropout(x)` (its output
    /// and bool mask kept), `lora_A` (its input kept, its output kept by the grouped `conv1d` that
    /// applies B), then `zero_pad`, whose `index_copy` keeps its source (B's output, the adapted
    /// widths) and the int64 index when not all three are adapted.
    pub fn lora_qkv(&mut self, x: T, rows: u64, in_f: u64, widths: [u64; 3], name: &'static str) -> T {
        let before = self.kept.total();
        let ctx = self.ctx;
        let on = [LinearRole::Q, LinearRole::K, LinearRole::V].map(|r| ctx.adapted(r));
        let any = on.iter().any(|&o| o);
        let sum: u64 = widths.iter().sum();
        let out = self.linear_base(x, rows, in_f, sum, LinearRole::Q, Cat::AttentionIo, any, false);
        if any && let Some(l) = ctx.lora {
            let ad = if ctx.amp { ctx.c } else { ctx.adapter_elem };
            let n_on = on.iter().filter(|&&o| o).count() as u64;
            let on_width: u64 = widths.iter().zip(on).filter(|(_, o)| *o).map(|(w, _)| w).sum();
            if l.dropout > 0.0 {
                self.keep_new(rows * in_f * ad, Cat::Adapters);
                self.keep_new(rows * in_f, Cat::DropoutMasks);
            } else if ad != self.elem(x) {
                self.keep_new(rows * in_f * ad, Cat::Adapters);
            } else if !self.s(x).saved {
                let b = self.s(x).bytes;
                self.st[x.0 as usize].saved = true;
                self.kept.add(Cat::Adapters, b);
                self.note(b);
            }
            self.keep_new(rows * l.rank * n_on * ad, Cat::Adapters);
            if n_on < 3 {
                self.keep_new(rows * on_width * ad + 8 * on_width, Cat::Adapters);
            }
        }
        self.record(name, before);
        out
    }

    /// The Linear's rule; `adapted`: an adapter makes its output require grad, `peft`: PEFT's
    /// adapter (per projection) is walked here.
    #[allow(clippy::too_many_arguments)]
    fn linear_base(
        &mut self,
        x: T,
        rows: u64,
        in_f: u64,
        out_f: u64,
        role: LinearRole,
        cat: Cat,
        adapted: bool,
        peft: bool,
    ) -> T {
        let ctx = self.ctx;
        let c = ctx.c;
        let trains = ctx.weight_trains(role);
        // autocast casts an fp32 input to half (a new storage); a half input is used as it is
        let cast = ctx.amp && self.elem(x) == 4 && c != 4;
        if trains {
            if cast { self.keep_new(rows * in_f * c, Cat::InputCasts) } else { self.keep(x) }
        }
        // a 4-bit base weight is no fp32 tensor for autocast to cast: `MatMul4Bit` dequantizes it
        // to the input's dtype inside its forward and again in backward, keeping the 4-bit one
        let four_bit = ctx.nf4_dequant.is_some() && !trains && role != LinearRole::Dense;
        if ctx.amp && (self.rg(x) || trains) && !four_bit {
            self.keep_new(out_f * in_f * c, Cat::WeightCasts);
        }
        if let Some(e) = ctx.bnb4_input
            && !trains
            && role != LinearRole::Dense
            && self.rg(x)
        {
            // bitsandbytes' MatMul4Bit keeps its input whenever an input needs a gradient
            // (`ctx.tensors = (A, B)`), unlike a frozen nn.Linear; Linear4bit first casts the input
            // to bnb_4bit_compute_dtype (a new storage per projection when the dtype differs)
            if e == self.elem(x) && !cast {
                self.keep(x)
            } else {
                self.keep_new(rows * in_f * e, Cat::InputCasts)
            }
        }
        if adapted
            && peft
            && let Some(l) = ctx.lora
        {
            // lora_B(lora_A(dropout(x))) with fp32 adapters (PEFT autocast_adapter_dtype) or in the
            // model's dtype: an input of another dtype is copied per adapter (under autocast to the
            // autocast dtype)
            let ad = if ctx.amp { c } else { ctx.adapter_elem };
            if l.dropout > 0.0 {
                self.keep_new(rows * in_f * ad, Cat::Adapters);
                self.keep_new(rows * in_f, Cat::DropoutMasks);
            } else if cast || ad != self.elem(x) {
                self.keep_new(rows * in_f * ad, Cat::Adapters);
            } else if !self.s(x).saved {
                // the fp32 input itself, shared by the group's adapters
                let b = self.s(x).bytes;
                self.st[x.0 as usize].saved = true;
                self.kept.add(Cat::Adapters, b);
                self.note(b);
            }
            self.keep_new(rows * l.rank * ad, Cat::Adapters);
        }
        let rg = self.rg(x) || trains || adapted;
        // under sequence parallelism a residual-width input holds this rank's tokens and is
        // all-gathered for a column-parallel Linear: its output has every token
        let out_rows = if rows == ctx.ts { ctx.t } else { rows };
        self.tensor(out_rows * out_f * c, c, rg, cat)
    }

    /// Rotary embedding `x·cos + rotate_half(x)·sin` over `rot` of each head's dimensions: keeps
    /// only the cos/sin tables (shared by every block), returns a new storage of `elems`.
    pub fn rope(&mut self, x: T, elems: u64, rot: u64, table: Shared) -> T {
        self.rope_tables_in(x, elems, rot, table, false)
    }

    /// Rotary with cos/sin kept in fp32 whatever the stream dtype (OLMo 2).
    pub fn rope_fp32(&mut self, x: T, elems: u64, rot: u64, table: Shared) -> T {
        self.rope_tables_in(x, elems, rot, table, true)
    }

    fn rope_tables_in(&mut self, x: T, elems: u64, rot: u64, table: Shared, fp32: bool) -> T {
        let before = self.kept.total();
        let ctx = self.ctx;
        if self.rg(x) {
            // (1, s, rot) cos and sin in the stream dtype (fp32 under autocast)
            let e = if ctx.amp || fp32 { 4 } else { ctx.c };
            self.share(table, 2 * ctx.s * rot * e);
        }
        let out = self.tensor(elems * ctx.c, ctx.c, self.rg(x), Cat::AttentionIo);
        self.record("rotary", before);
        out
    }

    /// An activation function on `elems` elements: keeps its input.
    pub fn act(&mut self, x: T, elems: u64, kind: Act) -> T {
        if kind == Act::GeluNew {
            return self.gelu_new(x, elems);
        }
        let before = self.kept.total();
        let e = self.elem(x);
        if self.rg(x) {
            self.keep(x);
        }
        let out = self.tensor(elems * e, e, self.rg(x), Cat::Mlp);
        self.record(
            match kind {
                Act::Silu => "act_fn (silu)",
                Act::Gelu | Act::GeluNew => "act_fn (gelu)",
            },
            before,
        );
        out
    }

    /// HF's `gelu_new` written out, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`: `pow` keeps x,
    /// `tanh` its output, the final product both `0.5·x` and `1 + tanh`. Under autocast `pow` is
    /// an fp32 op: x is upcast (kept), tanh and `1 + tanh` are fp32, `0.5·x` stays half, and the
    /// product is fp32.
    pub fn gelu_new(&mut self, x: T, elems: u64) -> T {
        let before = self.kept.total();
        let ctx = self.ctx;
        let c = ctx.c;
        let rg = self.rg(x);
        let out_e = if ctx.amp { 4 } else { c };
        if rg {
            if ctx.amp {
                self.keep_new(3 * elems * 4 + elems * c, Cat::Mlp);
            } else {
                self.keep(x);
                self.keep_new(3 * elems * c, Cat::Mlp);
            }
        }
        let out = self.tensor(elems * out_e, out_e, rg, Cat::Mlp);
        self.record("gelu_new", before);
        out
    }

    /// `a * b` (same shape): keeps each operand the other's gradient needs.
    pub fn mul(&mut self, a: T, b: T, elems: u64) -> T {
        let before = self.kept.total();
        if self.rg(b) {
            self.keep(a);
        }
        if self.rg(a) {
            self.keep(b);
        }
        let e = self.elem(a).max(self.elem(b));
        let out = self.tensor(elems * e, e, self.rg(a) || self.rg(b), Cat::Mlp);
        self.record("mul (act · up)", before);
        out
    }

    /// `a + b`: keeps nothing. The output is a residual-stream storage when `cat` says so.
    pub fn add(&mut self, a: T, b: T, elems: u64, cat: Cat) -> T {
        let e = self.elem(a).max(self.elem(b));
        self.tensor(elems * e, e, self.rg(a) || self.rg(b), cat)
    }

    /// Dropout (CUDA's fused `native_dropout`): keeps a 1-byte mask in training when p > 0.
    pub fn dropout(&mut self, x: T, elems: u64, p: f64) -> T {
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

    /// A sparse MoE layer as transformers 5 runs it (`experts_implementation="grouped_mm"`):
    /// the router Linear, softmax in fp32, top-k ids and normalised weights, the token
    /// permutation (int64 ids, sort order and inverse, int32 offsets), the gathered tokens and
    /// their fp32 weights, and per routed row the grouped gate_up output, the activation, the
    /// product and the down output.
    #[allow(clippy::too_many_arguments)]
    pub fn moe(
        &mut self,
        x: T,
        width: u64,
        experts: u64,
        top_k: u64,
        inter: u64,
        router_fp32: bool,
        gpt_oss: bool,
    ) -> T {
        let before = self.kept.total();
        let ctx = self.ctx;
        let (t, c) = (ctx.t, ctx.c);
        let tk = t * top_k;
        if ctx.full {
            if router_fp32 && self.elem(x) != 4 {
                // DeepSeek's router: `F.linear(x.float(), w.float())` keeps the fp32 copy of x
                self.keep_new(t * width * 4, Cat::Mlp);
            } else if ctx.amp {
                self.keep_new(t * width * c, Cat::InputCasts);
                self.keep_new(experts * width * c, Cat::WeightCasts);
            } else {
                self.keep(x);
            }
        }
        let active = self.rg(x) || ctx.full;
        if active {
            // before PyTorch 1.11 the router's softmax keeps its input too: the top-k values
            // (gpt-oss), else the logits (`softmax(logits, dtype=float32)`: fp16 logits as they
            // are, bf16 ones as the fp32 copy it converts them to)
            let old = ctx.torch.softmax_keeps_input();
            if gpt_oss {
                // top-k of the logits (int64 ids) then softmax over the k values (logits' dtype)
                self.keep_new(tk * 8 + tk * c + if old { tk * c } else { 0 }, Cat::Mlp);
            } else {
                // softmax over all experts (fp32), top-k ids, the k weights and their sum
                let logits = if router_fp32 { 4 } else { c };
                let input = if old { Softmax::fp32_input_bytes(logits, ctx.f16) } else { 0 };
                self.keep_new(t * experts * (4 + input) + tk * 8 + tk * 4 + t * 4, Cat::Mlp);
            }
            self.keep_new(3 * tk * 8 + experts * 4, Cat::Mlp);
            self.keep_new(tk * width * c + tk * 4, Cat::Mlp);
            // per routed row: the grouped gate_up output, then SiLU(gate)·up keeps the SiLU output
            // and the product; gpt-oss's clamped SwiGLU keeps the clamped gate, the sigmoid, up + 1,
            // the GLU and the product
            let glu = if gpt_oss { 5 } else { 2 };
            self.keep_new(tk * 2 * inter * c + glu * tk * inter * c + tk * width * c, Cat::Mlp);
            if ctx.amp {
                self.keep_new(experts * 3 * width * inter * c, Cat::WeightCasts);
            }
        }
        let out = self.tensor(t * width * c, c, active, Cat::Mlp);
        self.record("moe experts", before);
        out
    }

    /// LM head (or classifier) and loss on `rows` rows of `width` into `classes` logits: the
    /// head keeps its input when it trains (autocast: the cast copy, and the cast weight), an
    /// optional final soft-capping keeps its tanh output, and the loss keeps the fp32
    /// log-softmax output, a scalar and the int64 labels. Returns the bytes kept.
    pub fn head_loss(
        &mut self,
        x: T,
        rows: u64,
        width: u64,
        classes: u64,
        softcap: bool,
        shifted: bool,
    ) -> u64 {
        let before = self.kept.total();
        let ctx = self.ctx;
        let c = ctx.c;
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
        let ce_rows = ctx.loss.rows(ctx.b, ctx.s);
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
        let t = ctx.t;
        let pieces = ctx.loss.pieces(ctx.b, ctx.s, width, classes);
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
        } else if shifted && ctx.b == 1 && ctx.loss == Loss::Hf {
            (ctx.s + 1) * 8
        } else {
            t * 8
        };
        self.keep_new(labels, Cat::HeadLoss);
        self.record("lm head + loss", before);
        self.kept.total() - before
    }
}

#[cfg(test)]
mod tests;
