//! A scenario as a walk's input: [`Ctx::new`] reads the quantities the op rules need from a
//! [`Scenario`] (the engine itself knows no scenario), [`transformer`] walks the model, and
//! [`kv_cache_bytes`] sizes an inference cache. The walk and its output types are
//! [`crate::engine::walk`].

use super::scenario::{AttentionImpl, Scenario};
pub use crate::engine::inputs::{Ctx, Kernel};
pub use crate::engine::walk::{ActivationModel, HeadPieces, LayerMix, Pieces};
use crate::families::KvLayout;
use crate::model::{TransformerSpec, layer};
use crate::units::DType;

impl Ctx {
    /// The quantities of a scenario every op rule reads (the one place a [`Scenario`] becomes a
    /// walk's input).
    pub fn new(sc: &Scenario) -> Self {
        let c = sc.precision.compute_dtype().bytes(1);
        let amp = sc.precision.is_amp();
        // a 4-bit (NF4) base: the dtype its matmuls compute in
        let nf4_base =
            matches!(sc.base_quant, super::scenario::BaseQuant::Nf4 | super::scenario::BaseQuant::Nf4NoDq);
        let compute = sc.stack.bnb_compute_dtype.unwrap_or(sc.precision.compute_dtype());
        let nf4 = nf4_base.then(|| compute.bytes(1));
        // bitsandbytes 4-bit weights in inference: a checkpoint's own format, when no base
        // format is asked for
        let bnb4_checkpoint = sc.mode == super::Mode::Infer
            && sc.base_quant == super::scenario::BaseQuant::None
            && matches!(
                sc.model.transformer().and_then(|t| t.quant),
                Some(crate::model::quant::WeightFormat::Bnb4 { .. })
            );
        // what a 4-bit matmul holds while it dequantizes, per weight element: the weight in
        // `quant_state.dtype` (fp16 when quantized from fp16, else the model's weight dtype) and,
        // when that is not the compute dtype (`bnb_4bit_compute_dtype`), its cast (`.to(A.dtype)`)
        let dequant = (nf4_base || bnb4_checkpoint).then(|| {
            // otherwise the dtype the model was loaded in: the precision's half dtype (a quantized
            // base is loaded in it also under autocast), fp32 for an fp32 run
            let from = if sc.stack.bnb.from_fp16() {
                crate::units::DType::F16
            } else {
                sc.precision.compute_dtype()
            };
            from.bytes(1) + if from == compute { 0 } else { compute.bytes(1) }
        });
        // transformers 5 has no SDPA path for Gemma 2 (soft-capping) and gpt-oss (sinks), and
        // PyTorch before 2.0 has no SDPA at all: eager runs
        let kinds = sc.model.transformer().map(crate::families::ops);
        let attention = match (sc.attention, kinds) {
            (AttentionImpl::Sdpa, Some(k)) if k.eager_only => AttentionImpl::Eager,
            // BLOOM's and DeBERTa's attention is their own code, not transformers' attention
            // interface
            (_, Some(k)) if k.own_attention => AttentionImpl::Eager,
            (AttentionImpl::Sdpa, _) if !sc.stack.torch.has_sdpa() => AttentionImpl::Eager,
            (a, _) => a,
        };
        Self {
            batch: sc.batch,
            seq: sc.seq,
            pixels: sc
                .model
                .transformer()
                .and_then(|t| t.patches)
                .zip(sc.image_size())
                .map_or(0, |(p, i)| p.pixels(i)),
            image_mask: sc.vlm_images().is_some(),
            tokens: sc.batch * sc.seq,
            rank_tokens: if sc.parallel.sp && sc.parallel.tp > 1 {
                (sc.batch * sc.seq).div_ceil(sc.parallel.tp)
            } else {
                sc.batch * sc.seq
            },
            compute_elem: c,
            // Megatron keeps half activations under mixed precision
            residual_elem: if amp && kinds.is_none_or(|k| !k.half_residual) { 4 } else { c },
            amp,
            full: sc.lora.is_none(),
            lora: sc.lora,
            attn: attention,
            selective: sc.checkpointing == super::scenario::Checkpointing::Selective,
            loss: sc.stack.loss,
            compiled_loss: sc.stack.compiled_loss,
            // torchtune's QLoRA runs torchao's NF4Tensor through `linear_nf4`, which keeps only the
            // weight: the input rule is bitsandbytes' own
            bnb4_input: nf4.filter(|_| sc.stack.framework != Some(super::stack::Framework::Torchtune)),
            nf4_dequant: dequant,
            head_bnb4: (nf4_base || bnb4_checkpoint) && sc.stack.bnb.quantizes_head(),
            adapter_elem: super::states::adapter_dtype(sc).bytes(1),
            model_code: sc.stack.model_code,
            torch: sc.stack.torch,
            mixer: sc.stack.mixer,
            f16: sc.precision.compute_dtype() == crate::units::DType::F16,
            block_weights_grad: super::fsdp::block_weights_grad(sc),
        }
    }
}

/// Builds the activation model of a transformer scenario.
pub(crate) fn transformer(sc: &Scenario, m: &TransformerSpec) -> ActivationModel {
    let ctx = Ctx::new(sc);
    crate::engine::walk::activation_model(&ctx, m)
}

/// KV cache bytes for the whole model: K/V of every attention layer, the state of every short
/// convolution and of every Mamba2 mixer.
pub fn kv_cache_bytes(m: &TransformerSpec, batch: u64, seq: u64, dtype: DType) -> u64 {
    let attn = TransformerSpec { num_layers: m.attention_layers_among(m.num_layers), ..m.clone() };
    attention_kv_bytes(&attn, batch, seq, dtype)
        + m.conv_layers() * conv_state_bytes(m, batch, dtype)
        + m.ssm_layers_among(m.num_layers) * ssm_state_bytes(m, batch, dtype)
        + m.layers_with(layer::MAMBA, m.num_layers) * mamba_state_bytes(m, batch, dtype)
}

/// One Mamba (1) mixer's cached state: the convolution's last `conv_kernel` inputs,
/// `(b, inner, taps)` in the cache's dtype, and the scan's last state `(b, inner, state)` in fp32.
pub fn mamba_state_bytes(m: &TransformerSpec, batch: u64, dtype: DType) -> u64 {
    m.mamba.map_or(0, |x| dtype.bytes(batch * x.inner * x.conv_kernel) + batch * x.inner * x.state * 4)
}

/// One short convolution's cached state: its last `conv_L_cache` inputs, `(b, h, taps)` in the
/// cache's dtype (transformers' `update_conv_state`).
pub fn conv_state_bytes(m: &TransformerSpec, batch: u64, dtype: DType) -> u64 {
    dtype.bytes(batch * m.hidden_size * m.conv_kernel)
}

/// One Mamba2 mixer's cached state: the convolution's last `conv_kernel` inputs over `x·B·C`,
/// `(b, conv_dim, taps)` in the cache's dtype, and the scan's final state `(b, heads, head_dim,
/// state)` in fp32 (the chunked scan computes it in fp32 and the cache keeps it as made).
pub fn ssm_state_bytes(m: &TransformerSpec, batch: u64, dtype: DType) -> u64 {
    if let Some(d) = m.delta {
        // a gated DeltaNet: the conv taps over q·k·v, and `(b, v_heads, k_dim, v_dim)` in fp32
        return dtype.bytes(batch * d.conv_dim() * d.conv_kernel) + batch * d.v_heads * d.k_dim * d.v_dim * 4;
    }
    m.ssm.map_or(0, |x| dtype.bytes(batch * x.conv_dim() * x.conv_kernel) + batch * x.inner() * x.state * 4)
}

/// K/V bytes of `m.num_layers` attention layers.
fn attention_kv_bytes(m: &TransformerSpec, batch: u64, seq: u64, dtype: DType) -> u64 {
    let width = match crate::families::ops(m).kv {
        KvLayout::None => return 0,
        // K/V broadcast to every query head (Falcon's new decoder architecture)
        KvLayout::Broadcast => m.q_width(),
        KvLayout::PerKvHead => match m.mla {
            // DeepSeek's HF cache holds the MLA latent (`kv_lora_rank`) and the shared rotary
            // key part, one tensor per layer
            Some(mla) => {
                return dtype.bytes(m.num_layers * batch * seq * (mla.kv_lora_rank + mla.qk_rope_head_dim));
            }
            None => m.kv_width(),
        },
    };
    // sliding-window layers keep a view of the full-length prefill K/V: the storage is full length
    dtype.bytes(2 * m.num_layers * batch * seq * width)
}
