//! What a flag's values mean, for `--help`'s list of them: each note keyed by the value's form
//! as the core writes it (its `name()` or `form()`), so the help follows the one token list.

use super::choice::Notes;
use vramscope::estimate::context::ModuleLoading;
use vramscope::estimate::scenario::CheckpointKeyword;
use vramscope::estimate::stack::LossKeyword;
use vramscope::estimate::{AdapterDtype, BaseQuant, FsdpImpl, ModelCode, Offload};
use vramscope::gui::state::Tab;
use vramscope::i18n::Lang;
use vramscope::probe::Device;
use vramscope::serve::{KvDtype, Quantization, SamplerPath};

/// `--checkpoint`.
pub const CHECKPOINT: Notes = &[
    (CheckpointKeyword::None.form(), "keep every activation"),
    (CheckpointKeyword::Full.form(), "every transformer block (HF gradient_checkpointing_enable)"),
    (CheckpointKeyword::Every.form(), "every K-th block (blocks 0, K, 2K, ...)"),
    (CheckpointKeyword::Segments.form(), "checkpoint_sequential(blocks, N)"),
    (CheckpointKeyword::Selective.form(), "recompute only the attention core (Korthikanti et al. 2022)"),
];

/// `--base-quant`.
pub const BASE_QUANT: Notes = &[
    (BaseQuant::None.name(), "the weights in the precision's dtype"),
    (BaseQuant::Nf4.name(), "NF4, double-quantized"),
    (BaseQuant::Nf4NoDq.name(), "NF4 without double quantization"),
    (BaseQuant::Int8.name(), "LLM.int8()"),
];

/// `--loss`.
pub const LOSS: Notes = &[
    (LossKeyword::Hf.form(), "transformers"),
    (LossKeyword::Chunked.form(), "torchtune's CEWithChunkedOutputLoss"),
    (LossKeyword::ChunkedNative.form(), "litgpt"),
    (LossKeyword::LinearCe.form(), "torchtune's LinearCrossEntropyLoss"),
    (LossKeyword::FusedLinearCe.form(), "Liger / Cut Cross-Entropy"),
];

/// `--adapter-dtype`.
pub const ADAPTER_DTYPE: Notes =
    &[(AdapterDtype::Fp32.name(), "PEFT"), (AdapterDtype::Model.name(), "litgpt, torchtune")];

/// `--model-code`.
pub const MODEL_CODE: Notes = &[
    (ModelCode::Hf.name(), "transformers, torchtune"),
    (ModelCode::Litgpt.name(), "its fused qkv and LoRAQKVLinear"),
    (ModelCode::Litgpt2023.name(), "litgpt before Oct 2023: RMSNorm in the input dtype"),
];

/// `--fsdp-impl`.
pub const FSDP_IMPL: Notes = &[
    (
        FsdpImpl::Fsdp1.name(),
        "FullyShardedDataParallel as accelerate / the HF Trainer run it: no_sync keeps unsharded gradients while accumulating",
    ),
    (
        FsdpImpl::Fsdp1Shared.name(),
        "LoRA adapters inside each block's flat parameter, Lightning/litgpt: frozen weights get gradients",
    ),
    (FsdpImpl::Fsdp2.name(), "fully_shard, torchtune"),
];

/// `--module-loading`.
pub const MODULE_LOADING: Notes = &[
    (ModuleLoading::Lazy.name(), "PyTorch's default with CUDA >= 11.7"),
    (ModuleLoading::Eager.name(), "every kernel image loaded with the context, about 0.9 GiB more"),
];

/// `--offload`.
pub const OFFLOAD: Notes = &[
    (Offload::None.name(), "everything on the GPU"),
    (Offload::Optimizer.name(), "ZeRO-Offload"),
    (
        Offload::Params.name(),
        "ZeRO-Infinity, NVMe; under --fsdp, FSDP's CPUOffload: parameter shards, gradients and the optimizer step in host RAM",
    ),
];

/// `--tab`.
pub const TAB: Notes = &[(Tab::Concurrency.name(), "with --serve")];

/// `--lang`: each language's name in itself.
pub const LANG: Notes =
    &[(Lang::En.name(), Lang::En.native_name()), (Lang::ZhCn.name(), Lang::ZhCn.native_name())];

/// `probe --device`.
pub const DEVICE: Notes = &[
    (Device::Cuda.name(), "the measurement"),
    (Device::Cpu.name(), "same steps, no memory statistics: to test the script"),
];

/// `serve --kv-dtype`.
pub const KV_DTYPE: Notes = &[
    (KvDtype::Auto.name(), "the model's dtype"),
    (KvDtype::Fp8.name(), "fp8 e4m3 (also written fp8_e4m3)"),
    (KvDtype::Fp8E5m2.name(), "fp8 e5m2"),
];

/// `serve --quantization`.
pub const QUANTIZATION: Notes = &[
    (Quantization::Auto.name(), "the checkpoint's quantization_config"),
    (Quantization::Fp8.name(), "online"),
];

/// `serve --sampler`.
pub const SAMPLER: Notes = &[
    (
        SamplerPath::FlashInfer.name(),
        "the default to 0.11 and from 0.21; VLLM_USE_FLASHINFER_SAMPLER=1 between",
    ),
    (SamplerPath::Triton.name(), "the default from 0.17 to 0.20 (8 rows or more)"),
    (
        SamplerPath::Sort.name(),
        "the default from 0.12 to 0.16; VLLM_USE_FLASHINFER_SAMPLER=0, or no FlashInfer",
    ),
];
