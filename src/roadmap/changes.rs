//! The changes the roadmap tries: each a setting, hardware, a change of method or a step that is
//! not a memory change, with what it does to a scenario and its card.

use super::Horizon::{Long, Mid, Short};
use super::StepKind::{Hardware, NotMemory, Setting};
use super::{Horizon, StepKind};
use crate::estimate::{
    Checkpointing, Framework, FsdpMode, Lora, Mode, Offload, Optimizer, Parallel, Scenario,
};
use crate::fit::verdict;
use crate::gpu::{self, Gpu};
use crate::options::{on_card, product_line};
use crate::units::Precision;

/// What a change does to a scenario and its card; `false` when it does not apply.
pub(super) type Apply = Box<dyn Fn(&mut Scenario, &mut Gpu) -> bool>;

/// A change the roadmap may make.
pub(super) struct Change {
    pub(super) horizon: Horizon,
    pub(super) kind: StepKind,
    /// The title in English (also the change's name for [`super::titled`]).
    pub(super) title: &'static str,
    /// The title in Simplified Chinese.
    pub(super) zh: &'static str,
    pub(super) effort: &'static str,
    pub(super) how: Vec<String>,
    pub(super) apply: Apply,
}

impl Change {
    pub(super) fn new(
        horizon: Horizon,
        kind: StepKind,
        (title, zh): (&'static str, &'static str),
        effort: &'static str,
        how: &[&str],
        apply: impl Fn(&mut Scenario, &mut Gpu) -> bool + 'static,
    ) -> Self {
        Self {
            horizon,
            kind,
            title,
            zh,
            effort,
            how: how.iter().map(|s| (*s).to_owned()).collect(),
            apply: Box::new(apply),
        }
    }
}

/// litgpt and torchtune run their own model code and shard it with their own FSDP: no
/// DeepSpeed, and no library that patches transformers' modules.
fn own_model_code(sc: &Scenario) -> bool {
    matches!(sc.stack.framework, Some(Framework::Litgpt | Framework::Torchtune))
}

/// `p` over `n` times its data-parallel GPUs with the model states fully sharded: by the
/// framework's own FSDP where it has no DeepSpeed ([`own_model_code`]), else by ZeRO-3.
fn fully_sharded(sc: &Scenario, n: u64) -> Parallel {
    let p = sc.parallel;
    let dp = p.dp.max(1) * n;
    if own_model_code(sc) {
        Parallel { dp, zero: 0, fsdp: Some(FsdpMode::FullShard), ..p }
    } else {
        Parallel { dp, zero: 3, fsdp: None, ..p }
    }
}

/// The fewest GPUs of the card (2 to `max`, powers of two) over which full sharding fits, else
/// `max`.
fn zero3_gpus(sc: &Scenario, g: &Gpu, limit: u64, max: u64) -> u64 {
    let mut n = 2;
    while n < max {
        let mut s = sc.clone();
        s.parallel = fully_sharded(sc, n);
        if verdict(&s, g.capacity()).is_ok_and(|v| v.fits && v.estimate.total <= limit) {
            return n;
        }
        n *= 2;
    }
    max
}

/// The changes the roadmap tries, in order of horizon and effort.
pub(super) fn changes(sc: &Scenario, headroom: f64) -> Vec<Change> {
    let train = sc.mode == Mode::Train;
    let mut v = Vec::new();
    if train {
        v.extend([
            mixed_precision(),
            checkpointing(sc),
            fused_linear_ce(sc),
            micro_batch(headroom),
            adamw_8bit(),
            paged_optimizer(sc),
            optimizer_in_backward(sc),
        ]);
    }
    v.push(expandable_segments());
    v.push(measure_it());
    if train {
        v.push(shard_states(sc, headroom));
        v.push(if sc.parallel.fsdp.is_none() { zero_offload() } else { fsdp_cpu_offload() });
    }
    v.push(larger_card(headroom));
    if train {
        v.push(more_nodes(headroom));
    }
    v.push(custom_allocator());
    v
}

/// The memory a card may use with `headroom` left free.
fn limit(headroom: f64) -> impl Fn(&Gpu) -> u64 + Copy {
    move |g: &Gpu| (g.capacity() as f64 * (1.0 - headroom)) as u64
}

/// Mixed precision: bf16 autocast over fp32 weights.
fn mixed_precision() -> Change {
    Change::new(
        Short,
        Setting,
        ("Mixed precision: bf16 autocast over fp32 weights", "混合精度：在 fp32 权重上用 bf16 autocast"),
        "low",
        &[
            "PyTorch: with torch.autocast(\"cuda\", dtype=torch.bfloat16): ...",
            "HF Trainer: TrainingArguments(bf16=True)",
        ],
        |s, _| {
            let was = s.precision;
            if was == Precision::Fp32 {
                s.precision = Precision::Bf16Amp;
            }
            was == Precision::Fp32
        },
    )
}

/// Gradient checkpointing on every block, as the framework turns it on.
fn checkpointing(sc: &Scenario) -> Change {
    Change::new(
        Short,
        Setting,
        ("Gradient checkpointing on every block", "每个块都开启梯度检查点"),
        "low",
        match sc.stack.framework {
            // litgpt checkpoints blocks only under its FSDP strategy
            Some(Framework::Litgpt) => &[
                "litgpt: FSDPStrategy(activation_checkpointing_policy={Block}) with --devices > 1; on one GPU its scripts have no switch: wrap Block in torch.utils.checkpoint",
            ],
            Some(Framework::Torchtune) => &["torchtune: enable_activation_checkpointing: True"],
            _ => &[
                "HF: model.gradient_checkpointing_enable()  or  TrainingArguments(gradient_checkpointing=True)",
            ],
        },
        |s, _| {
            let apply = s.checkpointing != Checkpointing::Full;
            s.checkpointing = Checkpointing::Full;
            apply
        },
    )
}

/// Liger's fused linear cross-entropy: no full logits.
fn fused_linear_ce(sc: &Scenario) -> Change {
    // Liger patches transformers' modules, not litgpt's or torchtune's (torchtune has its own
    // chunked losses)
    let hf_model = !own_model_code(sc);
    Change::new(
        Short,
        Setting,
        (
            "Fused linear cross-entropy (Liger kernel): no full logits",
            "融合线性层与交叉熵（Liger kernel）：不生成完整的 logits",
        ),
        "low",
        &[
            "pip install liger-kernel; from liger_kernel.transformers import apply_liger_kernel_to_llama; apply_liger_kernel_to_llama()",
        ],
        move |s, _| {
            let apply = s.stack.loss != crate::estimate::Loss::FusedLinearCe
                && !s.stack.compiled_loss
                && s.model.transformer().is_some()
                && hf_model;
            if apply {
                s.stack.loss = crate::estimate::Loss::FusedLinearCe;
            }
            apply
        },
    )
}

/// The largest micro-batch that fits, with gradient accumulation keeping the global batch.
fn micro_batch(headroom: f64) -> Change {
    let limit = limit(headroom);
    Change::new(
        Short,
        Setting,
        (
            "Micro-batch with gradient accumulation (same global batch)",
            "减小微批次，配合梯度累积（全局批次不变）",
        ),
        "low",
        &[
            "HF Trainer: per_device_train_batch_size=MB, gradient_accumulation_steps=N (MB x N = the batch before)",
        ],
        move |s, g| {
            if s.batch <= 1 || s.stack.optimizer_in_backward || s.parallel.pp > 1 {
                return false;
            }
            let b = s.batch;
            let accum = u64::from(s.stack.grad_accum.max(1));
            // the largest micro-batch dividing the batch that fits, else 1
            let cap = limit(g);
            let mb = (1..b)
                .rev()
                .filter(|d| b.is_multiple_of(*d))
                .find(|&d| {
                    let mut t = s.clone();
                    t.batch = d;
                    t.stack.grad_accum = u32::try_from(accum * (b / d)).unwrap_or(u32::MAX);
                    verdict(&t, g.capacity()).is_ok_and(|v| v.fits && v.estimate.total <= cap)
                })
                .unwrap_or(1);
            s.batch = mb;
            s.stack.grad_accum = u32::try_from(accum * (b / mb)).unwrap_or(u32::MAX);
            true
        },
    )
}

/// bitsandbytes' 8-bit AdamW.
fn adamw_8bit() -> Change {
    Change::new(
        Short,
        Setting,
        (
            "8-bit AdamW (bitsandbytes): optimizer states in 8 bits",
            "8-bit AdamW（bitsandbytes）：优化器状态以 8 位存储",
        ),
        "low",
        &["pip install bitsandbytes; TrainingArguments(optim=\"adamw_bnb_8bit\")"],
        |s, _| {
            let apply = matches!(
                s.optimizer,
                Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwFused | Optimizer::AdamwLoop
            );
            if apply {
                s.optimizer = Optimizer::Adamw8bit;
            }
            apply
        },
    )
}

/// bitsandbytes' paged 8-bit AdamW: the states in CUDA unified memory, paged to host memory
/// when the card runs short.
fn paged_optimizer(sc: &Scenario) -> Change {
    Change::new(
        Short,
        Setting,
        (
            "Paged 8-bit AdamW (bitsandbytes): optimizer states in unified memory, paged to the host when the card is full",
            "分页 8-bit AdamW（bitsandbytes）：优化器状态放在统一内存中，显存不足时换页到主机内存",
        ),
        "low",
        match sc.stack.framework {
            Some(Framework::Torchtune) => {
                &["torchtune: optimizer: _component_: bitsandbytes.optim.PagedAdamW8bit"]
            }
            Some(Framework::Litgpt) => &["litgpt: --optimizer bitsandbytes.optim.PagedAdamW8bit"],
            _ => &["pip install bitsandbytes; TrainingArguments(optim=\"paged_adamw_8bit\")"],
        },
        |s, _| {
            let apply = matches!(s.optimizer, Optimizer::Adamw8bit);
            if apply {
                s.optimizer = Optimizer::PagedAdamw8bit;
            }
            apply
        },
    )
}

/// The optimizer step fused into the backward pass: each gradient is stepped and freed as it is
/// made, so no gradient of the whole model is ever held.
fn optimizer_in_backward(sc: &Scenario) -> Change {
    Change::new(
        Short,
        Setting,
        (
            "Optimizer step in the backward pass: each gradient is applied and freed as it is made",
            "把优化器更新融合进反向传播：每个梯度一产生就更新并释放",
        ),
        "low",
        match sc.stack.framework {
            Some(Framework::Torchtune) => {
                &["torchtune: optimizer_in_bwd: True (no gradient accumulation with it)"]
            }
            _ => &[
                "PyTorch: one optimizer per parameter, stepped by p.register_post_accumulate_grad_hook(hook) (PyTorch tutorial \"How to save memory by fusing the optimizer step into the backward pass\")",
                "torchtune's full_finetune_single_device recipe has it as optimizer_in_bwd: True; HF Trainer and litgpt have no switch for it",
            ],
        },
        |s, _| {
            // no gradient accumulation with it: a micro-batch above 1 is left to the smaller
            // micro-batch with accumulation (the global batch kept), which it would rule out
            let apply = s.mode == Mode::Train
                && !s.stack.optimizer_in_backward
                && s.batch == 1
                && s.stack.grad_accum <= 1
                && !s.stack.keep_grads
                && s.optimizer != Optimizer::None
                && s.parallel.world() == 1
                && s.stack.framework != Some(Framework::Litgpt);
            s.stack.optimizer_in_backward = true;
            apply
        },
    )
}

/// The allocator's expandable segments.
fn expandable_segments() -> Change {
    Change::new(
        Short,
        Setting,
        (
            "Allocator: expandable segments (less fragmentation)",
            "分配器：启用 expandable segments（减少碎片）",
        ),
        "low",
        &["export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"],
        |s, _| {
            let apply = !s.overhead.allocator.expandable_segments && !s.overhead.flat_reserve;
            s.overhead.allocator.expandable_segments = true;
            apply
        },
    )
}

/// Monitoring the job: not a memory change.
fn measure_it() -> Change {
    Change::new(
        Short,
        NotMemory,
        (
            "Measure it: memory monitoring in the job (not a memory change)",
            "先测量：在任务中监控显存（不改变显存占用）",
        ),
        "low",
        &[
            "vramscope monitor --interval-ms 250 --count 100000 --json > trace.jsonl",
            "torch.cuda.memory._record_memory_history(); ...; torch.cuda.memory._dump_snapshot(\"snap.pickle\")",
        ],
        |_, _| false,
    )
}

/// Full sharding of the model states over the fewest GPUs of this card that fit (ZeRO-3, or the framework's FSDP).
fn shard_states(sc: &Scenario, headroom: f64) -> Change {
    let limit = limit(headroom);
    let node = sc.parallel.node_size();
    Change::new(
        Mid,
        Hardware,
        // named with its GPU count once applied ([`titled`])
        (
            "Shard model states over GPUs of this card (ZeRO-3 / FSDP full_shard)",
            "在多张同型号 GPU 上切分模型状态（ZeRO-3 / FSDP full_shard）",
        ),
        "medium",
        match sc.stack.framework {
            Some(Framework::Litgpt) => &["litgpt: --devices N (Lightning's FSDPStrategy, a unit per block)"],
            Some(Framework::Torchtune) => {
                &["torchtune: the recipe's *_distributed variant (FSDP2 fully_shard)"]
            }
            _ => &[
                "DeepSpeed: \"zero_optimization\": {\"stage\": 3}",
                "accelerate: fsdp_sharding_strategy: FULL_SHARD",
            ],
        },
        move |s, g| {
            if s.parallel.effective_zero() >= 3 || s.parallel.pp > 1 {
                return false;
            }
            let n = zero3_gpus(s, g, limit(g), node);
            s.parallel = fully_sharded(s, n);
            true
        },
    )
}

/// ZeRO-Offload: the optimizer states and step on the CPU.
fn zero_offload() -> Change {
    Change::new(
        Mid,
        Hardware,
        (
            "ZeRO-Offload: optimizer states and step on the CPU",
            "ZeRO-Offload：优化器状态和优化器更新步放到 CPU 上",
        ),
        "medium",
        &["DeepSpeed: \"offload_optimizer\": {\"device\": \"cpu\"}"],
        |s, _| {
            if s.parallel.offload != Offload::None || s.parallel.pp > 1 || s.parallel.fsdp.is_some() {
                return false;
            }
            s.parallel = Parallel { zero: s.parallel.zero.max(2), offload: Offload::Optimizer, ..s.parallel };
            true
        },
    )
}

/// FSDP's CPU offload: parameter shards, gradients and the optimizer step on the CPU.
fn fsdp_cpu_offload() -> Change {
    // FSDP has no optimizer-only offload: `CPUOffload(offload_params=True)` keeps the
    // parameter shards, their gradients and the optimizer step on the CPU
    Change::new(
        Mid,
        Hardware,
        (
            "FSDP CPU offload: parameter shards, gradients and the optimizer step on the CPU",
            "FSDP CPU 卸载：参数分片、梯度和优化器更新步放到 CPU 上",
        ),
        "medium",
        &[
            "FSDP: FullyShardedDataParallel(..., cpu_offload=CPUOffload(offload_params=True))",
            "accelerate: fsdp_offload_params: true; Lightning: FSDPStrategy(cpu_offload=True); torchtune: fsdp_cpu_offload: True",
            "FSDP1 keeps on the GPU its all-gathered root unit and, while gradients accumulate under no_sync, the unsharded gradients",
        ],
        |s, _| {
            if s.parallel.offload != Offload::None || s.parallel.pp > 1 || s.parallel.fsdp.is_none() {
                return false;
            }
            s.parallel.offload = Offload::Params;
            true
        },
    )
}

/// A larger card: the smallest that fits, in this product line first.
fn larger_card(headroom: f64) -> Change {
    let limit = limit(headroom);
    // a larger card: the smallest that fits, in this product line first
    Change::new(Mid, Hardware, ("A larger card", "换显存更大的卡"), "medium", &[], move |s, g| {
        let line = product_line(g);
        let mut cards: Vec<&Gpu> = gpu::catalog().iter().filter(|c| c.capacity() > g.capacity()).collect();
        cards.sort_by_key(|c| (product_line(c) != line, c.memory_mib));
        let fitting = cards.into_iter().find(|c| {
            verdict(&on_card(s, g, c), c.capacity()).is_ok_and(|v| v.fits && v.estimate.total <= limit(c))
        });
        let Some(c) = fitting else { return false };
        *s = on_card(s, g, c);
        *g = c.clone();
        true
    })
}

/// More nodes: the fastest layout the plan search finds on the fewest GPUs that fit.
fn more_nodes(headroom: f64) -> Change {
    let limit = limit(headroom);
    // more nodes: the fastest layout the plan search finds on the fewest GPUs that fit
    Change::new(
        Long,
        Hardware,
        (
            "More nodes: a layout with tensor / pipeline parallelism",
            "更多节点：采用张量并行 / 流水线并行的布局",
        ),
        "high",
        &[
            "Megatron-LM / DeepSpeed: the layout's --tensor-model-parallel-size and --pipeline-model-parallel-size",
        ],
        move |s, g| {
            let world = s.parallel.world().max(1);
            // the job's global batch (pipeline micro-batches or accumulation, whichever it uses)
            let job = s.batch * s.micro_batches_per_step() * s.parallel.dp.max(1);
            for n in (4..=10).map(|i| 1u64 << i).filter(|&n| n > world) {
                let global = job.max(n);
                let speed = crate::plan::SpeedModel::default();
                if let Some(best) = crate::plan::search(s, g, n, global, &speed)
                    .into_iter()
                    .find(|p| p.total_bytes <= limit(g))
                {
                    *s = best.scenario;
                    return true;
                }
            }
            false
        },
    )
}

/// A custom allocator: not a memory change the estimator measures.
fn custom_allocator() -> Change {
    Change::new(
        Long,
        NotMemory,
        (
            "A custom allocator for this workload (not a memory change the estimator measures)",
            "为该负载定制显存分配器（不是估算器能衡量的显存变化）",
        ),
        "high",
        &["torch.cuda.memory.change_current_allocator(torch.cuda.memory.CUDAPluggableAllocator(...))"],
        |_, _| false,
    )
}

/// How each framework turns QLoRA on.
fn qlora_how(sc: &Scenario) -> &'static [&'static str] {
    match sc.stack.framework {
        Some(Framework::Litgpt) => &[
            "litgpt finetune_lora <model> --quantize bnb.nf4-dq (one GPU: litgpt refuses --quantize with devices > 1)",
        ],
        Some(Framework::Torchtune) => {
            &["torchtune: model: _component_: torchtune.models.<family>.qlora_<model> (torchao NF4)"]
        }
        _ => &[
            "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True)",
        ],
    }
}

/// The changes of method beside the path, as `sc`'s framework runs them.
pub(super) fn method_changes(sc: &Scenario) -> Vec<Change> {
    use Horizon::Mid;
    use StepKind::Method;
    let all: Lora = Lora { rank: 16, targets: crate::estimate::Targets::ALL, dropout: 0.0 };
    vec![
        Change::new(
            Mid,
            Method,
            (
                "Change of method: LoRA (rank 16 on every projection) instead of full fine-tuning",
                "更换方法：用 LoRA（所有投影层 rank 16）代替全量微调",
            ),
            "medium",
            &["PEFT: get_peft_model(model, LoraConfig(r=16, target_modules=\"all-linear\"))"],
            move |s, _| {
                if s.lora.is_some() || s.mode != Mode::Train {
                    return false;
                }
                s.lora = Some(all);
                true
            },
        ),
        Change::new(
            Mid,
            Method,
            (
                "Change of method: QLoRA (LoRA on a 4-bit NF4 base)",
                "更换方法：QLoRA（在 4 位 NF4 基座模型上做 LoRA）",
            ),
            "medium",
            qlora_how(sc),
            move |s, _| {
                // litgpt's finetune scripts raise NotImplementedError for --quantize on more
                // than one device (Lightning's FSDP and its bitsandbytes plugin do not combine)
                let litgpt_multi = s.stack.framework == Some(Framework::Litgpt) && s.parallel.world() > 1;
                if s.base_quant != crate::estimate::BaseQuant::None
                    || s.mode != Mode::Train
                    || s.precision.is_quantized()
                    || litgpt_multi
                {
                    return false;
                }
                if s.lora.is_none() {
                    s.lora = Some(all);
                }
                s.base_quant = crate::estimate::BaseQuant::Nf4;
                true
            },
        ),
    ]
}
