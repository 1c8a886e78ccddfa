//! Framework settings that match a plan: DeepSpeed JSON, Hugging Face `TrainingArguments`,
//! a PyTorch FSDP wrap and Megatron-LM flags.

use super::{ScenarioFile, python};
use crate::estimate::{Checkpointing, Offload, Optimizer};
use crate::model::ModelSpec;
use crate::units::Precision;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// The half-precision type a training recipe runs in (pure, autocast or with fp32 master
/// weights); `None` for fp32 and the inference-only quantized formats.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Half {
    Bf16,
    Fp16,
}

fn training_half(p: Precision) -> Option<Half> {
    match p {
        Precision::Bf16 | Precision::Bf16Amp | Precision::Bf16Mixed => Some(Half::Bf16),
        Precision::Fp16 | Precision::Fp16Amp | Precision::Fp16Mixed => Some(Half::Fp16),
        Precision::Fp32 | Precision::Fp8 | Precision::Int8 | Precision::Int4 => None,
    }
}

/// DeepSpeed's documented top-level configuration keys that the exporter may write.
pub const DEEPSPEED_KEYS: &[&str] = &[
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "optimizer",
    "fp16",
    "bf16",
    "zero_optimization",
    "gradient_clipping",
    "activation_checkpointing",
    "steps_per_print",
    "wall_clock_breakdown",
    "zero_allow_untested_optimizer",
];

/// DeepSpeed's documented `zero_optimization` keys that the exporter may write.
pub const DEEPSPEED_ZERO_KEYS: &[&str] = &[
    "stage",
    "offload_optimizer",
    "offload_param",
    "overlap_comm",
    "contiguous_gradients",
    "reduce_bucket_size",
    "allgather_bucket_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
    "stage3_gather_16bit_weights_on_model_save",
];

/// A DeepSpeed config for the plan. `train_batch_size` = micro-batch x accumulation x data
/// parallel, as DeepSpeed checks at start-up.
pub fn deepspeed_config(f: &ScenarioFile) -> Value {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let accum = f.grad_accum();
    let mut v = serde_json::Map::new();
    v.insert("train_batch_size".into(), json!(sc.batch * accum * p.dp));
    v.insert("train_micro_batch_size_per_gpu".into(), json!(sc.batch));
    v.insert("gradient_accumulation_steps".into(), json!(accum));
    // autocast recipes keep fp32 weights: no DeepSpeed half-precision section (see recipe.rs)
    match training_half(sc.precision).filter(|_| !sc.precision.is_amp()) {
        Some(Half::Bf16) => {
            v.insert("bf16".into(), json!({"enabled": true}));
        }
        Some(Half::Fp16) => {
            v.insert(
                "fp16".into(),
                json!({"enabled": true, "loss_scale": 0, "initial_scale_power": 16, "loss_scale_window": 1000, "hysteresis": 2, "min_loss_scale": 1}),
            );
        }
        None => {}
    }
    let opt = match sc.optimizer {
        Optimizer::Adamw | Optimizer::AdamwFused | Optimizer::AdamwLoop => Some("AdamW"),
        Optimizer::Adam => Some("Adam"),
        _ => None,
    };
    if let Some(t) = opt {
        v.insert(
            "optimizer".into(),
            json!({"type": t, "params": {"lr": 1e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}}),
        );
    } else if sc.optimizer != Optimizer::None {
        // the client's optimizer (bitsandbytes, Adafactor, SGD) passed to deepspeed.initialize
        v.insert("zero_allow_untested_optimizer".into(), json!(true));
    }
    let stage = if p.fsdp.is_some() { 3 } else { p.zero };
    let mut z = serde_json::Map::new();
    z.insert("stage".into(), json!(stage));
    // the sizes the estimate's ZeRO buckets assume (estimate::deepspeed: DeepSpeed's defaults,
    // or the HF Trainer's "auto" values for this model), written out so the job is the estimate's
    let c = crate::estimate::deepspeed::zero_config(sc, stage);
    if stage >= 1 {
        z.insert("overlap_comm".into(), json!(c.overlap_comm));
        z.insert("contiguous_gradients".into(), json!(c.contiguous_gradients));
        z.insert("reduce_bucket_size".into(), json!(c.reduce_bucket_size));
    }
    if (1..3).contains(&stage) {
        z.insert("allgather_bucket_size".into(), json!(c.allgather_bucket_size));
    }
    if stage == 3 {
        z.insert("stage3_prefetch_bucket_size".into(), json!(c.prefetch_bucket_size));
        z.insert("stage3_param_persistence_threshold".into(), json!(c.param_persistence_threshold));
        z.insert("stage3_max_live_parameters".into(), json!(c.max_live_parameters));
        z.insert("stage3_max_reuse_distance".into(), json!(c.max_reuse_distance));
        z.insert("stage3_gather_16bit_weights_on_model_save".into(), json!(true));
    }
    match p.offload {
        Offload::None => {}
        Offload::Optimizer => {
            z.insert("offload_optimizer".into(), json!({"device": "cpu", "pin_memory": true}));
        }
        Offload::Params => {
            z.insert(
                "offload_optimizer".into(),
                json!({"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true}),
            );
            z.insert(
                "offload_param".into(),
                json!({"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true}),
            );
        }
    }
    v.insert("zero_optimization".into(), Value::Object(z));
    v.insert("gradient_clipping".into(), json!(1.0));
    if sc.checkpointing != Checkpointing::None {
        v.insert(
            "activation_checkpointing".into(),
            json!({"partition_activations": p.tp > 1, "contiguous_memory_optimization": false, "cpu_checkpointing": false}),
        );
    }
    v.insert("steps_per_print".into(), json!(100));
    v.insert("wall_clock_breakdown".into(), json!(false));
    Value::Object(v)
}

/// DeepSpeed-Inference's documented `init_inference` config keys that the exporter may write.
pub const DEEPSPEED_INFERENCE_KEYS: &[&str] =
    &["dtype", "tensor_parallel", "replace_with_kernel_inject", "enable_cuda_graph"];

/// A `deepspeed.init_inference` config for an inference scenario: the compute dtype and
/// automatic tensor parallelism over the scenario's tp degree, without kernel injection (so the
/// forward is the Hugging Face model's, as estimated).
pub fn deepspeed_inference_config(f: &ScenarioFile) -> Value {
    let sc = &f.scenario;
    let dtype = match sc.precision.compute_dtype() {
        crate::units::DType::F32 => "fp32",
        crate::units::DType::F16 => "fp16",
        _ => "bf16",
    };
    json!({
        "dtype": dtype,
        "tensor_parallel": {"tp_size": sc.parallel.tp},
        "replace_with_kernel_inject": false,
        "enable_cuda_graph": false,
    })
}

/// The `torchrun` launch for a layout: the GPUs of one node, and the node count when it spans
/// several (each node runs the same command with its `--node_rank`).
fn torchrun(p: &crate::estimate::Parallel) -> String {
    let world = p.world().max(1);
    let node = p.node_size().max(1);
    if world <= node {
        format!("torchrun --nproc_per_node {world}")
    } else {
        format!(
            "torchrun --nnodes {} --nproc_per_node {node} --node_rank $NODE_RANK --rdzv_endpoint $MASTER_ADDR:29500",
            world.div_ceil(node)
        )
    }
}

fn hf_optim(o: Optimizer) -> &'static str {
    match o {
        Optimizer::Adamw | Optimizer::Adam => "adamw_torch",
        Optimizer::AdamwFused => "adamw_torch_fused",
        Optimizer::AdamwLoop => "adamw_hf",
        Optimizer::Adamw8bit => "adamw_bnb_8bit",
        Optimizer::PagedAdamw8bit => "paged_adamw_8bit",
        Optimizer::PagedAdamw32bit => "paged_adamw_32bit",
        Optimizer::Adafactor => "adafactor",
        Optimizer::Sgd | Optimizer::SgdMomentum | Optimizer::None => "sgd",
    }
}

/// Hugging Face `TrainingArguments` for the plan (with the DeepSpeed / FSDP hook-up): the model
/// loaded as the scenario holds it (dtype, attention, a bitsandbytes base), its PEFT adapters,
/// the batch, accumulation, precision, checkpointing and optimizer, and a line naming what the
/// Trainer cannot express.
pub fn hf_training_args(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let mut s = format!("# vramscope plan for {}: {} x {} per GPU\n", sc.model.name, sc.batch, sc.seq);
    // FSDP and ZeRO-3 shard flat tensors of one dtype: the 4-bit weights stored in the load dtype
    let sharded = p.fsdp.is_some() || p.zero >= 3;
    let bnb = python::bnb_config(sc, sharded.then(|| python::load_dtype(sc.precision)));
    let quant = if bnb.is_some() { ", BitsAndBytesConfig" } else { "" };
    let _ = writeln!(
        s,
        "import os\nimport torch\nfrom transformers import AutoModelForCausalLM{quant}, TrainingArguments"
    );
    if sc.lora.is_some() {
        s += "from peft import LoraConfig, get_peft_model\n";
    }
    s += "\n";
    s += &python::alloc_conf(sc);
    let _ = writeln!(
        s,
        "MAX_SEQ_LEN = {}  # tokenize / pack every example to this length (TrainingArguments has no sequence length)",
        sc.seq
    );
    if let Some(b) = &bnb {
        s += b;
    }
    s += &python::from_pretrained(
        sc,
        "AutoModelForCausalLM",
        python::load_dtype(sc.precision),
        bnb.is_some(),
        None,
    );
    s += &python::peft(sc);
    let _ = writeln!(s, "\nargs = TrainingArguments(\n    output_dir=\"out\",");
    let _ = writeln!(s, "    per_device_train_batch_size={},", sc.batch);
    let _ = writeln!(s, "    gradient_accumulation_steps={},", f.grad_accum());
    // pure fp16 weights: the Trainer's GradScaler refuses fp16 gradients, so no fp16=True
    match training_half(sc.precision) {
        Some(Half::Bf16) => {
            let _ = writeln!(s, "    bf16=True,");
        }
        Some(Half::Fp16) if sc.precision != Precision::Fp16 => {
            let _ = writeln!(s, "    fp16=True,");
        }
        Some(Half::Fp16) | None => {}
    }
    if sc.checkpointing != Checkpointing::None {
        let _ = writeln!(s, "    gradient_checkpointing=True,");
        let _ = writeln!(s, "    gradient_checkpointing_kwargs={{\"use_reentrant\": False}},");
    }
    let _ = writeln!(s, "    optim=\"{}\",", hf_optim(sc.optimizer));
    if let Some(m) = p.fsdp {
        let strategy = match m {
            crate::estimate::FsdpMode::FullShard => "full_shard",
            crate::estimate::FsdpMode::ShardGradOp => "shard_grad_op",
            crate::estimate::FsdpMode::HybridShard => "hybrid_shard",
        };
        let off = if p.offload != Offload::None { " offload" } else { "" };
        let _ = writeln!(s, "    fsdp=\"{strategy} auto_wrap{off}\",");
    } else if p.zero > 0 || p.offload != Offload::None {
        let _ = writeln!(s, "    deepspeed=\"ds_config.json\",  # vramscope export --format deepspeed");
    }
    let _ = writeln!(s, ")");
    let mut missing = python::not_expressed(f, true);
    if sc.optimizer == Optimizer::SgdMomentum {
        missing.push("--optimizer sgd-momentum (optim=\"sgd\" has no momentum)".into());
    }
    s += &python::not_expressed_line(&missing);
    let _ = writeln!(s, "# launch on {}: {} train.py", crate::units::count(p.world(), "GPU"), torchrun(p));
    s
}

pub(super) fn attn_implementation(a: crate::estimate::AttentionImpl) -> &'static str {
    match a {
        crate::estimate::AttentionImpl::Eager => "eager",
        crate::estimate::AttentionImpl::Sdpa => "sdpa",
        crate::estimate::AttentionImpl::Flash => "flash_attention_2",
    }
}

/// The inference forward the estimate describes, as Hugging Face code: the model in the compute
/// dtype, one forward over `batch x seq` tokens under `torch.inference_mode()` that keeps the
/// full logits and fills the KV cache; tensor parallelism by transformers' `tp_plan="auto"`,
/// pipeline stages as `device_map="auto"` layer placement.
pub fn hf_inference(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let dtype = python::torch_name(sc.precision.compute_dtype());
    let auto = if sc.model.transformer().is_some_and(|t| t.family.id() == "bert") {
        "AutoModel"
    } else {
        "AutoModelForCausalLM"
    };
    let mut s = format!(
        "# vramscope plan for {}: inference, {} x {} tokens
",
        sc.model.name, sc.batch, sc.seq
    );
    let bnb = python::bnb_config(sc, None);
    let quant = if bnb.is_some() { ", BitsAndBytesConfig" } else { "" };
    let _ = writeln!(s, "import torch\nfrom transformers import {auto}{quant}");
    if sc.lora.is_some() {
        s += "from peft import LoraConfig, get_peft_model\n";
    }
    s += "\n";
    if sc.precision.is_quantized() {
        let _ = writeln!(
            s,
            "# {} weights: load a checkpoint quantized to it (its quantization_config), compute in {dtype}",
            sc.precision
        );
    }
    let place = if p.tp > 1 {
        "tp_plan=\"auto\"".to_owned()
    } else if p.pp > 1 {
        "device_map=\"auto\"".to_owned()
    } else {
        "device_map=\"cuda\"".to_owned()
    };
    if let Some(b) = &bnb {
        s += b;
    }
    s += &python::from_pretrained(sc, auto, sc.precision.compute_dtype(), bnb.is_some(), Some(&place));
    // unmerged adapters, as estimated (merge_and_unload would add nothing)
    s += &python::peft(sc);
    let _ = writeln!(s, "model.eval()");
    let _ = writeln!(
        s,
        "input_ids = torch.randint(0, model.config.vocab_size, ({}, {}), device=model.device)",
        sc.batch, sc.seq
    );
    let _ = writeln!(s, "with torch.inference_mode():");
    let _ = writeln!(
        s,
        "    out = model(input_ids)  # full logits, {} x {} x vocab, as estimated",
        sc.batch, sc.seq
    );
    if p.tp > 1 {
        let _ = writeln!(s, "# launch: torchrun --nproc_per_node {} infer.py", p.tp);
    }
    s
}

fn torch_optimizer(o: Optimizer) -> Option<String> {
    let p = "model.parameters(), lr=1e-5";
    Some(match o {
        Optimizer::Adamw => format!("torch.optim.AdamW({p})  # foreach, the CUDA default"),
        Optimizer::Adam => format!("torch.optim.Adam({p})"),
        Optimizer::AdamwFused => format!("torch.optim.AdamW({p}, fused=True)"),
        Optimizer::AdamwLoop => format!("torch.optim.AdamW({p}, foreach=False)"),
        Optimizer::Adamw8bit => format!("bnb.optim.AdamW8bit({p})  # import bitsandbytes as bnb"),
        Optimizer::PagedAdamw8bit => format!("bnb.optim.PagedAdamW8bit({p})  # import bitsandbytes as bnb"),
        Optimizer::PagedAdamw32bit => format!("bnb.optim.PagedAdamW32bit({p})  # import bitsandbytes as bnb"),
        Optimizer::Adafactor => "transformers.optimization.Adafactor(model.parameters())".into(),
        Optimizer::Sgd => format!("torch.optim.SGD({p})"),
        Optimizer::SgdMomentum => format!("torch.optim.SGD({p}, momentum=0.9)"),
        Optimizer::None => return None,
    })
}

fn block_class(m: &ModelSpec) -> &'static str {
    match m.transformer() {
        Some(t) => crate::families::block_class(t, &m.name),
        None => "Block  # your model's repeated block class",
    }
}

/// The FSDP sharding strategy of a layout (ZeRO stages as their FSDP equivalents).
fn fsdp_strategy(p: &crate::estimate::Parallel) -> &'static str {
    match (p.fsdp, p.zero) {
        (Some(crate::estimate::FsdpMode::ShardGradOp), _) => "SHARD_GRAD_OP",
        (Some(crate::estimate::FsdpMode::HybridShard), _) => "HYBRID_SHARD",
        (Some(crate::estimate::FsdpMode::FullShard), _) | (None, 3) => "FULL_SHARD",
        (None, 1 | 2) => "SHARD_GRAD_OP",
        (None, _) => "NO_SHARD",
    }
}

/// A PyTorch FSDP script for the plan: the model loaded as the scenario holds it (a 4-bit base
/// with `bnb_4bit_quant_storage` in the unit's dtype, as FSDP's flat parameters need), its PEFT
/// adapters, the wrap, mixed precision, offload, optimizer and checkpointing, and a line naming
/// what it cannot express.
pub fn fsdp_snippet(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let strategy = fsdp_strategy(p);
    let half = training_half(sc.precision).map(|h| match h {
        Half::Bf16 => "torch.bfloat16",
        Half::Fp16 => "torch.float16",
    });
    let mut s = format!(
        "# vramscope plan for {}: FSDP {strategy} over {}, micro-batch {}, accumulation {}\n",
        sc.model.name,
        crate::units::count(p.dp, "GPU"),
        sc.batch,
        f.grad_accum()
    );
    let load = python::load_dtype(sc.precision);
    let bnb = python::bnb_config(sc, Some(load));
    s += "import functools\nimport os\nimport torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n";
    s += "from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload\n";
    s += "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n";
    let _ = writeln!(
        s,
        "from transformers import AutoModelForCausalLM{}",
        if bnb.is_some() { ", BitsAndBytesConfig" } else { "" }
    );
    if sc.lora.is_some() {
        s += "from peft import LoraConfig, get_peft_model\n";
    }
    if matches!(sc.optimizer, Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit | Optimizer::PagedAdamw32bit) {
        s += "import bitsandbytes as bnb\n";
    }
    if sc.optimizer == Optimizer::Adafactor {
        s += "import transformers\n";
    }
    s += "\n";
    s += &python::alloc_conf(sc);
    let _ = writeln!(
        s,
        "MAX_SEQ_LEN = {}  # every micro-batch: {} of this many tokens; accumulation {}",
        sc.seq,
        crate::units::count(sc.batch, "sequence"),
        f.grad_accum()
    );
    if let Some(b) = &bnb {
        s += b;
    }
    s += &python::from_pretrained(sc, "AutoModelForCausalLM", load, bnb.is_some(), None);
    s += &python::peft(sc);
    let cls = block_class(&sc.model);
    let name = cls.split(' ').next().unwrap_or(cls);
    let _ = writeln!(
        s,
        "wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={{{name}}})"
    );
    s += "model = FSDP(\n    model,\n    auto_wrap_policy=wrap,\n";
    let _ = writeln!(s, "    sharding_strategy=ShardingStrategy.{strategy},");
    if let Some(h) = half {
        let _ = writeln!(
            s,
            "    mixed_precision=MixedPrecision(param_dtype={h}, reduce_dtype={h}, buffer_dtype={h}),"
        );
    }
    let _ = writeln!(
        s,
        "    cpu_offload=CPUOffload(offload_params={}),",
        if p.offload != Offload::None { "True" } else { "False" }
    );
    s += "    device_id=torch.cuda.current_device(),\n    use_orig_params=True,\n)\n";
    if let Some(o) = torch_optimizer(sc.optimizer) {
        let _ = writeln!(s, "optimizer = {o}");
    }
    if sc.checkpointing != Checkpointing::None {
        s += "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n";
        let _ =
            writeln!(s, "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, {name}))");
    }
    s += &python::not_expressed_line(&python::not_expressed(f, true));
    let _ = writeln!(s, "# launch on {}: {} train.py", crate::units::count(p.world(), "GPU"), torchrun(p));
    s
}

/// The rotary flags of a model (Megatron-LM `arguments.py`: `--rotary-base` (an int, default
/// 10000), `--rotary-percent`, `--use-rope-scaling` with `--rope-scaling-factor` (Llama 3's rule,
/// `RotaryEmbedding._apply_scaling` with low / high frequency factors 1 and 4 over 8192
/// original positions), `--rotary-seq-len-interpolation-factor` (linear scaling, an int)); a
/// scaling Megatron has no flag for is left as a comment line the export carries.
fn megatron_rope(t: &crate::model::TransformerSpec) -> Vec<String> {
    let mut a = Vec::new();
    if t.rope_dim != 0 && t.rope_dim != t.head_dim {
        a.push(format!("--rotary-percent {}", t.rope_dim as f64 / t.head_dim.max(1) as f64));
    }
    let Some(r) = &t.rope else { return a };
    a.push(format!("--rotary-base {}", r.theta.round() as u64));
    match &r.scaling {
        None => {}
        Some(s)
            if s.rope_type == "llama3"
                && s.low_freq_factor.unwrap_or(1.0) == 1.0
                && s.high_freq_factor.unwrap_or(4.0) == 4.0
                && s.original_max_position_embeddings.unwrap_or(8192) == 8192 =>
        {
            a.push("--use-rope-scaling".into());
            a.push(format!("--rope-scaling-factor {}", s.factor));
        }
        Some(s) if s.rope_type == "linear" && s.factor.fract() == 0.0 => {
            a.push(format!("--rotary-seq-len-interpolation-factor {}", s.factor as u64));
        }
        Some(s) => a.push(format!(
            "# not expressed: rope_scaling {} (factor {}) has no Megatron-LM flag",
            s.rope_type, s.factor
        )),
    }
    a
}

/// What the Megatron-LM flags cannot express of the scenario.
fn megatron_missing(f: &ScenarioFile) -> Vec<String> {
    let sc = &f.scenario;
    let mut out = Vec::new();
    if let Some(l) = sc.lora {
        out.push(format!("--lora {}:{} (pretrain_gpt.py trains every weight)", l.rank, l.targets.names()));
    }
    if sc.base_quant != crate::estimate::BaseQuant::None {
        out.push(format!("--base-quant {} (no bitsandbytes base)", sc.base_quant.name()));
    }
    if !matches!(
        sc.optimizer,
        Optimizer::Adamw
            | Optimizer::Adam
            | Optimizer::AdamwFused
            | Optimizer::AdamwLoop
            | Optimizer::Sgd
            | Optimizer::SgdMomentum
    ) {
        out.push(format!("--optimizer {} (Megatron's are adam and sgd)", sc.optimizer.name()));
    }
    if sc.parallel.offload != Offload::None {
        out.push(format!("--offload {} (no ZeRO offload)", sc.parallel.offload.name()));
    }
    if sc.attention == crate::estimate::AttentionImpl::Eager {
        out.push("--attention eager (Megatron's core attention is its own)".into());
    }
    if sc.stack.optimizer_in_backward {
        out.push("--optimizer-in-backward".into());
    }
    out
}

/// Megatron-LM `pretrain_gpt.py` flags for the plan.
pub fn megatron_args(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let mut a: Vec<String> = vec![
        format!("--tensor-model-parallel-size {}", p.tp),
        format!("--pipeline-model-parallel-size {}", p.pp),
    ];
    if p.sp && p.tp > 1 {
        a.push("--sequence-parallel".into());
    }
    if p.cp > 1 {
        a.push(format!("--context-parallel-size {}", p.cp));
    }
    if p.ep > 1 {
        a.push(format!("--expert-model-parallel-size {}", p.ep));
    }
    if let Some(t) = sc.model.transformer() {
        if p.virtual_stages > 1 && p.pp > 1 {
            a.push(format!(
                "--num-layers-per-virtual-pipeline-stage {}",
                (t.num_layers / (p.pp * p.virtual_stages)).max(1)
            ));
        }
        a.push(format!("--num-layers {}", t.num_layers));
        a.push(format!("--hidden-size {}", t.hidden_size));
        a.push(format!("--ffn-hidden-size {}", t.intermediate_size));
        a.push(format!("--num-attention-heads {}", t.num_heads));
        if t.num_kv_heads != t.num_heads {
            a.push("--group-query-attention".into());
            a.push(format!("--num-query-groups {}", t.num_kv_heads));
        }
        a.push(format!("--max-position-embeddings {}", t.max_position_embeddings.max(sc.seq)));
        // Megatron's defaults are 0.1 each: name the model's own so the masks are the estimate's
        a.push(format!("--attention-dropout {}", t.attention_dropout));
        a.push(format!("--hidden-dropout {}", t.hidden_dropout));
        if t.family.id() == "llama" {
            a.extend(
                [
                    "--swiglu",
                    "--normalization RMSNorm",
                    "--position-embedding-type rope",
                    "--disable-bias-linear",
                ]
                .map(String::from),
            );
            if !t.tie_word_embeddings {
                a.push("--untie-embeddings-and-output-weights".into());
            }
            a.extend(megatron_rope(t));
        }
    }
    a.push(format!("--seq-length {}", sc.seq));
    a.push(format!("--micro-batch-size {}", sc.batch));
    a.push(format!("--global-batch-size {}", f.global_batch()));
    match (training_half(sc.precision), sc.precision) {
        (Some(Half::Bf16), _) => a.push("--bf16".into()),
        (Some(Half::Fp16), _) => a.push("--fp16".into()),
        (None, Precision::Fp8) => a.extend(["--bf16", "--fp8-format hybrid"].map(String::from)),
        (None, _) => {}
    }
    a.push(
        match sc.optimizer {
            Optimizer::Sgd | Optimizer::SgdMomentum => "--optimizer sgd",
            _ => "--optimizer adam",
        }
        .into(),
    );
    if p.zero >= 1 || p.fsdp.is_some() {
        a.push("--use-distributed-optimizer".into());
    }
    match sc.checkpointing {
        Checkpointing::None => {}
        Checkpointing::Selective => a.push("--recompute-granularity selective".into()),
        Checkpointing::Full => {
            a.extend(
                ["--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1"]
                    .map(String::from),
            );
        }
        Checkpointing::Every(k) => a.extend([
            "--recompute-granularity full".into(),
            "--recompute-method uniform".into(),
            format!("--recompute-num-layers {k}"),
        ]),
        Checkpointing::Segments(n) => {
            let l = sc.model.transformer().map_or(1, |t| t.num_layers);
            a.extend([
                "--recompute-granularity full".into(),
                "--recompute-method uniform".into(),
                format!("--recompute-num-layers {}", l.div_ceil(n.max(1))),
            ]);
        }
    }
    if sc.attention == crate::estimate::AttentionImpl::Flash {
        a.push("--use-flash-attn".into());
    }
    let mut s = format!(
        "# vramscope plan for {}: {} = dp {} x tp {} x pp {} x cp {}\nMEGATRON_ARGS=(\n",
        sc.model.name,
        crate::units::count(p.world(), "GPU"),
        p.dp,
        p.tp,
        p.pp,
        p.cp
    );
    for x in a {
        let _ = writeln!(s, "    {x}");
    }
    s += ")\n";
    s += &python::not_expressed_line(&megatron_missing(f));
    s += &format!("{} pretrain_gpt.py \"${{MEGATRON_ARGS[@]}}\"\n", torchrun(p));
    s
}
