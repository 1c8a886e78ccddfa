//! Normalisations: what each norm kind keeps for backward (HF's RMSNorm variants, LayerNorm,
//! fused LayerNorm), and what `mean` keeps before PyTorch 2.2.

use super::*;

/// Normalisation kinds, each with its own saved-tensor rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormKind {
    /// HF `LlamaRMSNorm`: fp32 upcast, `x·rsqrt(mean(x²)+eps)`, cast back, `weight · y`.
    Rms,
    /// Gemma's RMSNorm: computed in fp32 throughout, `y · (1 + w)`, cast back at the end.
    RmsOffset,
    /// OLMo 2's RMSNorm: `(w · y).to(dtype)` — the weight multiplies the fp32 normalised value.
    RmsWeightFp32,
    /// Nemotron-H's RMSNorm: `(w.to(float32) · y).to(dtype)` — as OLMo 2's, and the weight's
    /// fp32 copy (of a half weight) is kept by the product too.
    RmsWeightCastFp32,
    /// `nn.LayerNorm` (`native_layer_norm` keeps input, mean and rstd).
    Layer,
    /// Apex/Megatron fused LayerNorm: input kept, fp32 mean and rstd.
    LayerFp32Stats,
    /// litgpt's RMSNorm before Oct 2023: `x * rsqrt(mean(x * x))` in the input dtype, `weight *`.
    RmsNoUpcast,
    /// Llama 4's weightless L2 norm of q and k: `(u · rsqrt(mean(u²) + eps)).type_as(x)` on
    /// `u = x.float()`.
    L2,
    /// Cohere's LayerNorm written out in fp32, no bias: `u = x.float()`,
    /// `(u - mean) · rsqrt(mean((u - mean)²) + eps)`, `w.float() · y`, cast back.
    LayerManualFp32,
}

impl Graph<'_> {
    /// A normalisation over `rows` rows of `width` (tokens, or tokens × heads for q/k norms).
    /// Output in x's dtype; category of what it keeps: `Norms`.
    pub fn norm(&mut self, x: Tensor, rows: u64, width: u64, kind: NormKind, name: &'static str) -> Tensor {
        self.norm_weighted(x, rows, width, width, kind, name)
    }

    /// [`Graph::norm`] with a weight of `weight` elements where it is not `width` (Cohere's
    /// q/k norms: one weight row per head).
    pub fn norm_weighted(
        &mut self,
        x: Tensor,
        rows: u64,
        width: u64,
        weight: u64,
        kind: NormKind,
        name: &'static str,
    ) -> Tensor {
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
            NormKind::L2 => {
                // u (x itself when fp32) kept by pow and mul, rsqrt kept; no weight
                if active {
                    self.keep_new(rows * 4, Cat::Norms);
                    if xe == 4 { self.keep(x) } else { self.keep_new(n * 4, Cat::Norms) }
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
            NormKind::RmsWeightFp32 | NormKind::RmsWeightCastFp32 => {
                if active {
                    self.keep_new(rows * 4, Cat::Norms);
                    if xe == 4 {
                        self.keep(x)
                    } else {
                        self.keep_new(n * 4, Cat::Norms)
                    }
                    // the weight's fp32 copy (the weight itself when it is fp32 already)
                    if kind == NormKind::RmsWeightCastFp32 && !self.ctx.amp && self.ctx.compute_elem != 4 {
                        self.keep_new(weight * 4, Cat::Norms);
                    }
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
            NormKind::LayerManualFp32 => {
                // `u - mean` twice: the first kept by pow, the second by the product with rsqrt
                // (kept); the weight's fp32 copy kept by `w.float() · y` when y requires grad
                // (the weight itself when it is fp32 already), y when the weight trains
                if active {
                    self.keep_new(2 * n * 4 + rows * 4, Cat::Norms);
                    if !self.ctx.amp && self.ctx.compute_elem != 4 {
                        self.keep_new(weight * 4, Cat::Norms);
                    }
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
                NormKind::Rms
                | NormKind::RmsWeightFp32
                | NormKind::RmsWeightCastFp32
                | NormKind::RmsOffset
                | NormKind::L2
                | NormKind::LayerManualFp32 => self.keep_new(n * 4, Cat::Norms),
                NormKind::RmsNoUpcast => self.keep_new(n * xe, Cat::Norms),
                NormKind::Layer | NormKind::LayerFp32Stats => {}
            }
        }
        let out_e = if kind == NormKind::Layer && self.ctx.amp { 4 } else { xe };
        let out = self.tensor(n * out_e, out_e, active || trains, Cat::Norms);
        self.record(name, before);
        out
    }
}
