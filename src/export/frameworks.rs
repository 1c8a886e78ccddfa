//! Framework settings that match a plan: DeepSpeed JSON, Hugging Face `TrainingArguments`,
//! a PyTorch FSDP wrap and Megatron-LM flags.

use super::ScenarioFile;
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
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
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
    if stage >= 1 {
        z.insert("overlap_comm".into(), json!(true));
        z.insert("contiguous_gradients".into(), json!(true));
        z.insert("reduce_bucket_size".into(), json!(500_000_000u64));
    }
    if stage == 3 {
        z.insert("stage3_prefetch_bucket_size".into(), json!(50_000_000u64));
        z.insert("stage3_param_persistence_threshold".into(), json!(100_000u64));
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

fn torch_dtype(p: Precision) -> &'static str {
    match p {
        Precision::Bf16 => "torch.bfloat16",
        Precision::Fp16 => "torch.float16",
        _ => "torch.float32",
    }
}

/// Hugging Face `TrainingArguments` for the plan (with the DeepSpeed / FSDP hook-up).
pub fn hf_training_args(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let mut s = format!("# vramscope plan for {}: {} x {} per GPU\n", sc.model.name, sc.batch, sc.seq);
    let _ = writeln!(s, "import torch\nfrom transformers import AutoModelForCausalLM, TrainingArguments\n");
    let _ = writeln!(
        s,
        "model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype={})",
        torch_dtype(sc.precision)
    );
    if let Some(l) = sc.lora {
        let _ = writeln!(
            s,
            "from peft import LoraConfig, get_peft_model\nmodel = get_peft_model(model, LoraConfig(r={}, lora_dropout={}, target_modules=\"all-linear\"))",
            l.rank, l.dropout
        );
    }
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
    let _ = writeln!(s, "# launch on {}: {} train.py", crate::units::count(p.world(), "GPU"), torchrun(p));
    s
}

fn attn_implementation(a: crate::estimate::AttentionImpl) -> &'static str {
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
    let dtype = match sc.precision.compute_dtype() {
        crate::units::DType::F32 => "torch.float32",
        crate::units::DType::F16 => "torch.float16",
        _ => "torch.bfloat16",
    };
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
    let _ = writeln!(s, "import torch\nfrom transformers import {auto}\n");
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
    let _ = writeln!(
        s,
        "model = {auto}.from_pretrained(MODEL_ID, torch_dtype={dtype}, attn_implementation=\"{}\", {place})",
        attn_implementation(sc.attention)
    );
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

/// A PyTorch FSDP wrapping snippet for the plan.
pub fn fsdp_snippet(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let strategy = match (p.fsdp, p.zero) {
        (Some(crate::estimate::FsdpMode::ShardGradOp), _) => "SHARD_GRAD_OP",
        (Some(crate::estimate::FsdpMode::HybridShard), _) => "HYBRID_SHARD",
        (Some(crate::estimate::FsdpMode::FullShard), _) | (None, 3) => "FULL_SHARD",
        (None, 1 | 2) => "SHARD_GRAD_OP",
        (None, _) => "NO_SHARD",
    };
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
    s += "import functools\nimport torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n";
    s += "from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload\n";
    s += "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n\n";
    let load = match sc.precision {
        Precision::Bf16 => "torch.bfloat16",
        Precision::Fp16 => "torch.float16",
        _ => "torch.float32",
    };
    let _ = writeln!(s, "# model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype={load})");
    let cls = block_class(&sc.model);
    let _ = writeln!(
        s,
        "wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={{{cls}}})"
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
        let _ = writeln!(
            s,
            "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, {}))",
            cls.split(' ').next().unwrap_or(cls)
        );
    }
    s
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
    s += &format!(")\n{} pretrain_gpt.py \"${{MEGATRON_ARGS[@]}}\"\n", torchrun(p));
    s
}
