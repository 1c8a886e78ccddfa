//! Activation functions and the gated product: what each keeps for backward.

use super::*;

/// Activation functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// SiLU (keeps its input).
    Silu,
    /// GELU, erf or tanh approximation (keeps its input).
    Gelu,
    /// transformers' `gelu_new` written out in elementwise ops ([`Graph::gelu_new`]).
    GeluNew,
    /// ReLU (OPT): keeps its output, not its input.
    Relu,
    /// tanh: keeps its output (DeBERTa-v2's default `conv_act`).
    Tanh,
    /// ReLU² (`square(relu(x))`, Arcee, Nemotron): relu keeps its output, which square reads
    /// (and keeps) too; the input is not kept.
    Relu2,
    /// xIELU (Apertus) as transformers runs it without the CUDA kernel (`_xielu_python`): the
    /// input (`α_p·x` and `min(x, ε)` both keep it), `α_p·x`, `expm1(min(x, ε))`, its difference
    /// with x (kept by `· α_n`) and `where`'s bool condition.
    Xielu,
}

/// What an MLP's backward allocates at once, by its activation's rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlpBackward {
    /// The gradients of its widest tensors: three widths gated (`act(gate) * up`), two plain.
    Widths,
    /// transformers' `gelu_new` in elementwise ops as GPT-2 runs it: four intermediates, fp32
    /// under autocast.
    GeluNewFp32,
}

impl MlpBackward {
    /// The bytes, for MLPs `width` wide per token.
    pub fn transient(self, ctx: &Ctx, width: u64, gated: bool) -> u64 {
        let (t, c) = (ctx.tokens, ctx.compute_elem);
        match self {
            Self::Widths => (if gated { 3 } else { 2 }) * t * width * c,
            Self::GeluNewFp32 => 4 * t * width * if ctx.amp { 4 } else { c },
        }
    }
}

impl Graph<'_> {
    /// An activation function on `elems` elements: keeps its input.
    pub fn act(&mut self, x: Tensor, elems: u64, kind: Act) -> Tensor {
        if kind == Act::GeluNew {
            return self.gelu_new(x, elems);
        }
        let before = self.kept.total();
        let e = self.elem(x);
        if self.rg(x) {
            match kind {
                // relu's and tanh's output is the op's own output: kept below
                Act::Relu | Act::Tanh => {}
                Act::Relu2 => self.keep_new(elems * e, Cat::Mlp),
                Act::Xielu => {
                    self.keep(x);
                    // and the two scalars the products keep: softplus(α_p) and β + softplus(α_n)
                    self.keep_new(3 * elems * e + elems + 2 * e, Cat::Mlp);
                }
                _ => self.keep(x),
            }
        }
        let out = self.tensor(elems * e, e, self.rg(x), Cat::Mlp);
        if matches!(kind, Act::Relu | Act::Tanh) && self.rg(x) {
            self.keep(out);
        }
        self.record(
            match kind {
                Act::Silu => "act_fn (silu)",
                Act::Gelu | Act::GeluNew => "act_fn (gelu)",
                Act::Relu => "act_fn (relu)",
                Act::Tanh => "act_fn (tanh)",
                Act::Relu2 => "act_fn (relu²)",
                Act::Xielu => "act_fn (xielu)",
            },
            before,
        );
        out
    }

    /// HF's `gelu_new` written out, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`: `pow` keeps x,
    /// `tanh` its output, the final product both `0.5·x` and `1 + tanh`. Under autocast `pow` is
    /// an fp32 op: x is upcast (kept), tanh and `1 + tanh` are fp32, `0.5·x` stays half, and the
    /// product is fp32.
    pub fn gelu_new(&mut self, x: Tensor, elems: u64) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        let c = ctx.compute_elem;
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
    pub fn mul(&mut self, a: Tensor, b: Tensor, elems: u64) -> Tensor {
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
}
