//! The training stack around the model: how the loss is computed, when the optimizer steps, which
//! dtype adapters and bitsandbytes' 4-bit matmuls compute in, and the framework presets that set
//! these the way each framework defaults them.
//!
//! Each choice is a rule of the ops it changes (the loss in `engine::ops::Graph::head_loss`, the
//! 4-bit Linear in `Graph::linear`, the step in `estimate::step`), never a per-framework factor.

pub use crate::engine::inputs::choices::{Loss, LossKeyword, MixerImpl, ModelCode, Torch};
use crate::tokens::Parse;
use crate::units::{DType, Precision};
use serde::{Deserialize, Serialize};

crate::tokens::token_enum! {
    /// The dtype LoRA adapter weights are kept and run in.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum AdapterDtype {
        /// PEFT's default (`autocast_adapter_dtype=True`): fp32 adapters, the input copied to fp32.
        #[default]
        Fp32 => "fp32",
        /// The model's weight dtype (litgpt's and torchtune's LoRA under `bf16-true` / `dtype: bf16`).
        Model => "model",
    }
    impl FromStr = Parse::named("--adapter-dtype");
}

crate::tokens::token_enum! {
    /// How FSDP runs, where the implementations keep different tensors (`--fsdp` names the sharding
    /// strategy; this names the code under it). Only a run with `--fsdp` uses it.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum FsdpImpl {
        /// `FullyShardedDataParallel` (FSDP1, `use_orig_params=True`) as accelerate and the HF
        /// Trainer run it: one flat parameter per wrapped block, the root unit (embeddings, final
        /// norm, head) left unsharded from its forward to its backward, and `no_sync()` while
        /// gradients accumulate, which keeps every unit's *unsharded* gradient until the micro-batch
        /// that syncs. LoRA adapters get their own units (PEFT's `fsdp_auto_wrap_policy`, which the
        /// Trainer sets), so the frozen weights take no gradient.
        #[default]
        Fsdp1 => "fsdp1",
        /// The same FSDP1 with LoRA adapters inside each block's flat parameter (Lightning Fabric's
        /// `FSDPStrategy(auto_wrap_policy={Block})`, litgpt): the flat parameter requires grad, so
        /// every view of it does — the frozen weights get full-size gradients and their Linears keep
        /// their inputs ("gradient memory ... equivalent to not freezing", FSDP's docstring).
        #[serde(rename = "fsdp1-shared")]
        Fsdp1Shared => "fsdp1-shared",
        /// `fully_shard` (FSDP2) as torchtune runs it: parameters sharded one by one (frozen ones take
        /// no gradient), gradients reduce-scattered after every micro-batch.
        Fsdp2 => "fsdp2",
    }
    impl FromStr = Parse::named("--fsdp-impl");
}

impl FsdpImpl {
    /// What the settings line says.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Fsdp1 => "FSDP1 (FullyShardedDataParallel, use_orig_params)",
            Self::Fsdp1Shared => {
                "FSDP1 with LoRA adapters in each block's flat parameter (Lightning's FSDPStrategy)"
            }
            Self::Fsdp2 => "FSDP2 (fully_shard, gradients reduce-scattered every micro-batch)",
        }
    }

    /// Gradient accumulation keeps unsharded gradients (`no_sync`).
    pub const fn accumulates_unsharded(self) -> bool {
        !matches!(self, Self::Fsdp2)
    }
}

/// Who quantizes a bitsandbytes 4-bit base, and from which dtype: `quant_state.dtype`, the dtype
/// each 4-bit matmul dequantizes the weight to (`F.dequantize_4bit` allocates it) before casting
/// it to the input's dtype (`.to(A.dtype)` in `MatMul4Bit`'s forward and backward).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bnb {
    /// transformers with bitsandbytes 0.43 or later: every Linear but the LM head (transformers
    /// keeps the output embedding unquantized), quantized from the weight's own dtype.
    #[default]
    Current,
    /// bitsandbytes before 0.43: `Params4bit.cuda` quantizes `self.data.contiguous().half()`, so
    /// under a bf16 compute dtype every 4-bit matmul holds the fp16 weight and its bf16 cast.
    #[serde(rename = "before-0-43")]
    Before0_43,
    /// Lightning's `BitsandbytesPrecision` (litgpt's `--quantize bnb.*`): every `nn.Linear`, the
    /// LM head included, quantized from fp16 (`_quantize_weight`: `.to(dtype=torch.half)`),
    /// whatever the bitsandbytes release.
    Lightning,
}

impl Bnb {
    /// All, in menu order.
    pub const ALL: [Self; 3] = [Self::Current, Self::Before0_43, Self::Lightning];

    /// The 4-bit weights were quantized from fp16 (so they dequantize to fp16).
    pub const fn from_fp16(self) -> bool {
        !matches!(self, Self::Current)
    }

    /// The LM head is a 4-bit Linear too.
    pub const fn quantizes_head(self) -> bool {
        matches!(self, Self::Lightning)
    }

    /// `--bitsandbytes lightning`: Lightning's plugin, whatever the release.
    pub const LIGHTNING: &'static str = "lightning";

    /// `--bitsandbytes`: [`Self::LIGHTNING`], or a release `X.Y` applied to `self` (the
    /// framework's).
    pub fn with_flag(self, s: &str) -> Result<Self, String> {
        if s == Self::LIGHTNING {
            Ok(Self::Lightning)
        } else {
            Ok(self.with_release(bnb_release_before_0_43(s)?))
        }
    }

    /// Applies `--bitsandbytes X.Y`: the release matters only outside Lightning's plugin.
    pub fn with_release(self, before_0_43: bool) -> Self {
        match self {
            Self::Lightning => self,
            _ if before_0_43 => Self::Before0_43,
            _ => Self::Current,
        }
    }
}

/// `--bitsandbytes X.Y`: true for a release before 0.43.
pub fn bnb_release_before_0_43(s: &str) -> Result<bool, String> {
    let bad = || {
        format!(
            "--bitsandbytes \"{s}\": expected a bitsandbytes version such as 0.41 or 0.45, or {}",
            Bnb::LIGHTNING
        )
    };
    let (major, minor) = s.split_once('.').ok_or_else(bad)?;
    let minor = minor.split('.').next().unwrap_or(minor);
    let (major, minor) = (major.parse::<u32>().map_err(|_| bad())?, minor.parse::<u32>().map_err(|_| bad())?);
    if major > 9 {
        return Err(bad());
    }
    Ok((major, minor) < (0, 43))
}

crate::tokens::token_enum! {
    /// A training framework whose defaults set the stack choices.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Framework {
        /// transformers `Trainer` (5.x): transformers' loss, PEFT adapters in fp32.
        HfTrainer => "hf-trainer" | "hf",
        /// torchtune (0.6): `CEWithChunkedOutputLoss` with 8 chunks, adapters in the model dtype.
        Torchtune => "torchtune",
        /// litgpt (0.5): its own model code, `chunked_cross_entropy` over 128-position chunks of the
        /// logits Fabric returns in fp32, adapters in the model dtype.
        Litgpt => "litgpt",
        /// DeepSpeed with the HF model: transformers' loss, PEFT adapters.
        Deepspeed => "deepspeed",
        /// Megatron-LM: its own fused cross-entropy keeps no fp32 logits copy beyond the vocab-parallel
        /// logits (modelled as transformers' loss; the Megatron family has its own head rule).
        Megatron => "megatron",
        /// Axolotl (HF Trainer underneath): transformers' loss, PEFT adapters.
        Axolotl => "axolotl",
    }
    impl FromStr = Parse::named("--framework");
}

impl Framework {
    /// The stack this framework runs by default (its version is in the variant's doc).
    pub const fn stack(self) -> Stack {
        let mut s = Stack {
            loss: Loss::Hf,
            optimizer_in_backward: false,
            adapter_dtype: AdapterDtype::Fp32,
            bnb_compute_dtype: None,
            framework: Some(self),
            grad_accum: 0,
            keep_grads: false,
            compiled_loss: false,
            model_code: ModelCode::Hf,
            torch: Torch::Current,
            bnb: Bnb::Current,
            fsdp: FsdpImpl::Fsdp1,
            mixer: MixerImpl::Kernels,
        };
        match self {
            Self::Torchtune => {
                s.loss = Loss::Chunked { chunks: 8 };
                s.fsdp = FsdpImpl::Fsdp2;
                s.adapter_dtype = AdapterDtype::Model;
            }
            Self::Litgpt => {
                s.loss = Loss::ChunkedNative { positions: 128 };
                s.adapter_dtype = AdapterDtype::Model;
                s.model_code = ModelCode::Litgpt;
                s.bnb = Bnb::Lightning;
                s.fsdp = FsdpImpl::Fsdp1Shared;
            }
            Self::HfTrainer | Self::Deepspeed | Self::Megatron | Self::Axolotl => {}
        }
        s
    }
}

impl Framework {
    /// The recipe `--precision p` names under this framework, and the sentence that says so.
    /// litgpt passes its precision to Lightning Fabric, whose names (`_PRECISION_INPUT_STR` in
    /// `lightning/fabric/plugins/precision/utils.py`, the plugins chosen in
    /// `fabric/connector.py`) mean: `bf16-mixed` / `16-mixed` the `MixedPrecision` plugin —
    /// `torch.autocast` over fp32 weights, gradients and optimizer states (this tool's
    /// `bf16-amp` / `fp16-amp`), not half weights beside fp32 master copies (Megatron's and
    /// DeepSpeed's `bf16-mixed`); `bf16-true` / `16-true` the `HalfPrecision` plugin (pure
    /// bf16 / fp16); `32-true` fp32. The other frameworks keep this tool's names.
    pub fn reads_precision(self, p: Precision) -> (Precision, Option<String>) {
        if self != Self::Litgpt {
            return (p, None);
        }
        let lightning = |q: Precision| Self::Litgpt.precision_token(q);
        match p {
            Precision::Bf16Mixed => (
                Precision::Bf16Amp,
                Some(
                    "--framework litgpt: Lightning's bf16-mixed is torch.autocast over fp32 weights, gradients and optimizer states (its MixedPrecision plugin), estimated as --precision bf16-amp"
                        .into(),
                ),
            ),
            Precision::Bf16 => (
                p,
                Some(
                    "--framework litgpt: --precision bf16 is pure bf16, Lightning's bf16-true (Lightning itself reads \"bf16\" as bf16-mixed, autocast over fp32 weights: --precision bf16-mixed)"
                        .into(),
                ),
            ),
            Precision::Fp16Mixed => (
                p,
                Some(
                    "--framework litgpt: Lightning has no fp16 weights with fp32 master copies (fp16-mixed as estimated); its 16-mixed is autocast over fp32 weights"
                        .into(),
                ),
            ),
            Precision::Fp32 | Precision::Fp16 | Precision::Bf16Amp | Precision::Fp16Amp => {
                (p, Some(format!("--framework litgpt: --precision {} is Lightning's {}", p.name(), lightning(p))))
            }
            Precision::Fp8 | Precision::Int8 | Precision::Int4 => (p, None),
        }
    }

    /// How `--precision` writes `p` under this framework so that [`Self::reads_precision`] reads
    /// it back: Lightning's names under litgpt where it has one, this tool's otherwise.
    pub const fn precision_token(self, p: Precision) -> &'static str {
        match (self, p) {
            (Self::Litgpt, Precision::Bf16Amp) => "bf16-mixed",
            (Self::Litgpt, Precision::Bf16) => "bf16-true",
            (Self::Litgpt, Precision::Fp16Amp) => "16-mixed",
            (Self::Litgpt, Precision::Fp16) => "16-true",
            (Self::Litgpt, Precision::Fp32) => "32-true",
            _ => p.name(),
        }
    }
}

/// A precision as a menu shows it under `framework`: this tool's name, with the framework's own
/// beside it where it differs (`bf16-amp (bf16-mixed)` under litgpt).
pub fn precision_label(framework: Option<Framework>, p: Precision) -> String {
    match framework.map(|f| f.precision_token(p)) {
        Some(l) if l != p.name() => format!("{} ({l})", p.name()),
        _ => p.name().to_owned(),
    }
}

/// The stack choices of a training run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Stack {
    /// Loss computation.
    pub loss: Loss,
    /// The optimizer steps each parameter as soon as its gradient is accumulated and frees the
    /// gradient (torchtune / FSDP2 `optimizer_in_bwd`, a `register_post_accumulate_grad_hook`).
    pub optimizer_in_backward: bool,
    /// LoRA adapters' dtype.
    pub adapter_dtype: AdapterDtype,
    /// `bnb_4bit_compute_dtype` of a 4-bit base: the input of each 4-bit matmul is cast to it (and
    /// that copy is what `MatMul4Bit` keeps). `None`: the model's compute dtype, as recipes set it.
    pub bnb_compute_dtype: Option<DType>,
    /// The framework preset these came from, for display.
    pub framework: Option<Framework>,
    /// Micro-batches per optimizer step (gradient accumulation); 0 and 1 mean none. From the
    /// second micro-batch on, every gradient is alive through forward and backward, and each new
    /// one is summed into it (`AccumulateGrad`: `grad += new`, the new tensor freed after).
    pub grad_accum: u32,
    /// `zero_grad(set_to_none=False)` (`Module.zero_grad`'s default before PyTorch 2.0, which the
    /// HF Trainer called): gradients are zeroed in place and stay allocated between steps.
    pub keep_grads: bool,
    /// The loss runs under `torch.compile` (torchtune's `compile: True`): inductor fuses the fp32
    /// upcast, log-softmax and nll, and its partitioner saves the chunk's logits and one fp32
    /// logsumexp per row instead of the fp32 log-softmax, recomputing the rest in backward.
    pub compiled_loss: bool,
    /// Whose model code runs (transformers', litgpt's); scenario files name it only when it is
    /// not transformers'.
    #[serde(skip_serializing_if = "is_default")]
    pub model_code: ModelCode,
    /// The PyTorch release (where its autograd rules differ); named only when not current.
    #[serde(skip_serializing_if = "is_default")]
    pub torch: Torch,
    /// Who quantized a bitsandbytes 4-bit base (transformers, an old bitsandbytes, Lightning's
    /// plugin); named only when not the default.
    #[serde(skip_serializing_if = "is_default")]
    pub bnb: Bnb,
    /// Whose FSDP runs under `--fsdp`; named only when not the default.
    #[serde(skip_serializing_if = "is_default")]
    pub fsdp: FsdpImpl,
    /// Which code runs the state-space mixers; named only when not the default (the kernels).
    #[serde(default, skip_serializing_if = "is_default")]
    pub mixer: MixerImpl,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Stack {
    /// Gradients stay allocated through the forward (accumulation, or zero_grad without
    /// set_to_none); an optimizer in backward frees each one as it is made.
    pub const fn grads_persist(&self) -> bool {
        !self.optimizer_in_backward && (self.grad_accum > 1 || self.keep_grads)
    }

    /// Checks combinations the frameworks refuse, naming the flags.
    pub fn validate(&self) -> Result<(), String> {
        if self.optimizer_in_backward && self.grad_accum > 1 {
            // torchtune: "Gradient accumulation is not supported with optimizer in bwd"
            return Err("--grad-accum cannot be combined with --optimizer-in-backward (each gradient is stepped and freed as it is made; torchtune refuses it too)".into());
        }
        if self.optimizer_in_backward && self.keep_grads {
            return Err("--keep-grads cannot be combined with --optimizer-in-backward (its gradients are freed as they are made)".into());
        }
        if self.compiled_loss && self.loss == Loss::FusedLinearCe {
            return Err("--compile-loss applies to transformers' and the chunked losses; --loss fused-linear-ce is its own fused kernel".into());
        }
        if self.grad_accum > 1 << 20 {
            return Err(format!("--grad-accum {} is out of range (1 to 1048576)", self.grad_accum));
        }
        if self.bnb_compute_dtype.is_some_and(|d| !matches!(d, DType::F32 | DType::F16 | DType::Bf16)) {
            return Err("--bnb-compute-dtype must be fp32, fp16 or bf16".into());
        }
        Ok(())
    }

    /// "torchtune: chunked:8 loss, optimizer in backward", or "" for the defaults.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.loss != Loss::Hf {
            parts.push(format!("loss {}", self.loss));
        }
        if self.optimizer_in_backward {
            parts.push("optimizer in backward".into());
        }
        if self.adapter_dtype == AdapterDtype::Model {
            parts.push("adapters in the model dtype".into());
        }
        if let Some(d) = self.bnb_compute_dtype {
            parts.push(format!("4-bit compute {}", d.name()));
        }
        if self.grad_accum > 1 {
            parts.push(format!("gradient accumulation {}", self.grad_accum));
        }
        if self.keep_grads {
            parts.push("zero_grad keeps gradients".into());
        }
        if self.compiled_loss {
            parts.push("compiled loss".into());
        }
        if self.model_code != ModelCode::Hf {
            parts.push(format!("{}'s model code", self.model_code.name()));
        }
        if self.torch != Torch::Current {
            parts.push(self.torch.label().into());
        }
        if self.mixer != MixerImpl::Kernels {
            parts.push("state-space mixers in PyTorch ops".into());
        }
        match (self.framework, parts.is_empty()) {
            (Some(f), true) => f.name().to_string(),
            (Some(f), false) => format!("{}: {}", f.name(), parts.join(", ")),
            (None, _) => parts.join(", "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_versions_parse_to_their_class_and_print_back() {
        use Torch::*;
        for (v, class) in [
            ("1.9", Before1_11),
            ("1.10.2", Before1_11),
            ("1.11", Before2_0),
            ("1.13.1", Before2_0),
            ("2.0", Before2_2),
            ("2.1.0", Before2_2),
            ("2.2", Current),
            ("2.15", Current),
        ] {
            assert_eq!(v.parse::<Torch>(), Ok(class), "{v}");
        }
        for class in Torch::ALL {
            assert_eq!(class.to_string().parse::<Torch>(), Ok(class));
        }
        for bad in ["2", "x.y", "0.4", "10.1"] {
            assert!(bad.parse::<Torch>().is_err(), "{bad}");
        }
        // each class keeps the rules of every later change
        assert!(Before1_11.softmax_keeps_input() && Before1_11.mean_keeps_input());
        assert!(!Before2_0.softmax_keeps_input() && Before2_0.mean_keeps_input() && !Before2_0.has_sdpa());
        assert!(!Before2_2.softmax_keeps_input() && Before2_2.mean_keeps_input() && Before2_2.has_sdpa());
        assert!(!Before1_11.has_sdpa() && Current.has_sdpa());
        assert!(!Current.softmax_keeps_input() && !Current.mean_keeps_input());
    }

    #[test]
    fn loss_names_round_trip_and_bad_ones_are_refused() {
        for l in [
            Loss::Hf,
            Loss::Chunked { chunks: 8 },
            Loss::ChunkedNative { positions: 128 },
            Loss::FusedLinearCe,
            Loss::LinearCe { chunks: 8 },
        ] {
            assert_eq!(l.to_string().parse::<Loss>(), Ok(l));
        }
        assert!("chunked:0".parse::<Loss>().is_err());
        assert!("chunky".parse::<Loss>().is_err());
        assert!("chunked:x".parse::<Loss>().unwrap_err().contains("--loss"));
    }

    #[test]
    fn pieces_follow_each_implementation() {
        assert_eq!(Loss::Hf.pieces(2, 2048, 4096, 128_256), 1);
        assert_eq!(Loss::Chunked { chunks: 8 }.pieces(2, 2048, 4096, 128_256), 8);
        // litgpt: 2048 positions in chunks of 128
        assert_eq!(Loss::ChunkedNative { positions: 128 }.pieces(1, 2048, 4096, 32_000), 16);
        // Liger: v/h = 32 → chunk = next_pow2(4096 / 32) = 128 rows → 32 chunks
        assert_eq!(Loss::FusedLinearCe.pieces(2, 2048, 4096, 128_256), 32);
    }

    #[test]
    fn framework_presets() {
        assert_eq!(Framework::Torchtune.stack().loss, Loss::Chunked { chunks: 8 });
        assert_eq!(Framework::Litgpt.stack().adapter_dtype, AdapterDtype::Model);
        assert_eq!(Framework::HfTrainer.stack().loss, Loss::Hf);
        assert_eq!("litgpt".parse::<Framework>(), Ok(Framework::Litgpt));
        assert!("keras".parse::<Framework>().is_err());
        assert_eq!(
            Framework::Torchtune.stack().describe(),
            "torchtune: loss chunked:8, adapters in the model dtype"
        );
    }

    #[test]
    fn litgpt_menus_and_flags_name_lightning_s_precisions() {
        use crate::units::Precision;
        let lit = Some(Framework::Litgpt);
        assert_eq!(precision_label(lit, Precision::Bf16Amp), "bf16-amp (bf16-mixed)");
        assert_eq!(precision_label(lit, Precision::Bf16), "bf16 (bf16-true)");
        assert_eq!(precision_label(None, Precision::Bf16Amp), "bf16-amp");
        assert_eq!(precision_label(Some(Framework::Megatron), Precision::Bf16Mixed), "bf16-mixed");
        // what the flags write reads back as the same recipe under litgpt
        for p in Precision::ALL {
            let token = Framework::Litgpt.precision_token(p);
            let read: Precision = token.parse().unwrap();
            assert_eq!(
                Framework::Litgpt.reads_precision(read).0,
                if p == Precision::Bf16Mixed { Precision::Bf16Amp } else { p },
                "{token}"
            );
        }
    }
}
