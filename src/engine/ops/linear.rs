//! `nn.Linear` and its adapters: the input and the cast weight a matmul keeps, PEFT's LoRA
//! adapter, litgpt's `LoRAQKVLinear`, bitsandbytes' 4-bit matmul.

use super::*;

/// What 4-bit matmuls hold while they dequantize their weight (bitsandbytes'
/// `F.dequantize_4bit(B, state).to(A.dtype)`, torchao's `linear_nf4`: `weight.to(input.dtype)`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Dequant {
    /// In a forward: a block's largest 4-bit projection (0 when none dequantizes).
    pub layer: u64,
    /// In a forward: a 4-bit LM head's weight (Lightning's plugin converts every `nn.Linear`).
    pub head: u64,
    /// In backward, beside the MLP's and the attention's gradients: one projection's weight in
    /// the compute dtype while its input gradient is computed.
    backward: (u64, u64),
}

impl Dequant {
    /// For a model whose widest MLP tensor is `mlp_width` per token, with `classes` logits.
    pub fn of(ctx: &Ctx, m: &crate::model::TransformerSpec, mlp_width: u64, classes: u64) -> Self {
        let (h, qw, kvw) = (m.hidden_size, m.q_width(), m.kv_width());
        let Some(e) = ctx.nf4_dequant.filter(|_| m.moe.is_none()) else { return Self::default() };
        // a single row takes bitsandbytes' `gemv_4bit` instead (`matmul_4bit`:
        // `A.numel() == A.shape[-1]`, no grad), which dequantizes nothing
        let rows_dequantize = ctx.tokens > 1 || ctx.lora.is_some();
        let (layer, head) = if rows_dequantize {
            (mlp_width.max(qw).max(kvw) * h * e, if ctx.head_bnb4 { classes * h * e } else { 0 })
        } else {
            (0, 0)
        };
        Self { layer, head, backward: (mlp_width * h * e, qw.max(kvw) * h * e) }
    }

    /// The MLP's and the attention's backward transients with the dequantized weight beside them.
    pub fn in_backward(&self, mlp: u64, attention: u64) -> (u64, u64) {
        (mlp + self.backward.0, attention + self.backward.1)
    }
}

impl Graph<'_> {
    /// `nn.Linear` on `rows` rows: keeps its input when the weight trains (under autocast the
    /// half-precision copy of it), the (cast) weight when the input requires grad (parameters
    /// themselves are not activations), and a PEFT LoRA adapter's tensors when it is targeted.
    #[allow(clippy::too_many_arguments)]
    pub fn linear(
        &mut self,
        x: Tensor,
        rows: u64,
        in_f: u64,
        out_f: u64,
        role: LinearRole,
        cat: Cat,
        name: &'static str,
    ) -> Tensor {
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
    pub fn lora_qkv(
        &mut self,
        x: Tensor,
        rows: u64,
        in_f: u64,
        widths: [u64; 3],
        name: &'static str,
    ) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        let on = [LinearRole::Q, LinearRole::K, LinearRole::V].map(|r| ctx.adapted(r));
        let any = on.iter().any(|&o| o);
        let sum: u64 = widths.iter().sum();
        let out = self.linear_base(x, rows, in_f, sum, LinearRole::Q, Cat::AttentionIo, any, false);
        if any && let Some(l) = ctx.lora {
            let ad = if ctx.amp { ctx.compute_elem } else { ctx.adapter_elem };
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
        x: Tensor,
        rows: u64,
        in_f: u64,
        out_f: u64,
        role: LinearRole,
        cat: Cat,
        adapted: bool,
        peft: bool,
    ) -> Tensor {
        let ctx = self.ctx;
        let c = ctx.compute_elem;
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
        let out_rows = if rows == ctx.rank_tokens { ctx.tokens } else { rows };
        self.tensor(out_rows * out_f * c, c, rg, cat)
    }
}
