//! What a framework export runs, as a scenario, beside the scenario it was exported from.
//!
//! A framework's switches do not map one to one onto vramscope's settings: DeepSpeed's
//! `bf16: {enabled: true}` keeps fp32 master weights and fp32 Adam moments (`bf16-mixed`), not
//! the pure bf16 of the default recipe; DeepSpeed's and Megatron's Adam are fused kernels with no
//! foreach temporary; Megatron-LM has no LoRA and shards optimizer states only. Each export
//! states the recipe its settings imply as the scenario the framework will actually run
//! ([`Recipe::implied`]), names the flags in which it differs from the exported scenario, and
//! gives both totals as `vramscope estimate` computes them, so that a reader knows which number
//! their job will show.

use super::{ExportError, Format, ScenarioFile};
use crate::estimate::{Checkpointing, FsdpImpl, FsdpMode, Mode, Offload, Optimizer, Scenario};
use crate::flags::{self, Flag};
use crate::gpu::{self, Gpu};
use crate::units::{Precision, gib};

/// A framework export's recipe: what the framework runs, and how it compares with the scenario.
#[derive(Clone, Debug)]
pub struct Recipe {
    /// The framework (`DeepSpeed`, `Hugging Face Trainer`, `PyTorch FSDP`, `Megatron-LM`).
    pub framework: &'static str,
    /// How the framework runs the settings the export writes, one sentence each.
    pub says: Vec<String>,
    /// The scenario the framework runs.
    pub implied: Scenario,
    /// The `estimate` flags in which [`Recipe::implied`] differs from the exported scenario
    /// (empty when the export runs the scenario as estimated).
    pub differs: Vec<Flag>,
    /// Every flag of the implied scenario (`vramscope estimate --model M` + these), when the
    /// export names a card (without one the totals are the card-free estimate's).
    pub implied_args: Option<Vec<Flag>>,
    /// Per-GPU total of the exported scenario, bytes (`vramscope estimate`'s).
    pub scenario_total: u64,
    /// Per-GPU total of the implied scenario, bytes.
    pub implied_total: u64,
    /// Does the implied scenario fit the file's card (`None` without a card)?
    pub implied_fits: Option<bool>,
    /// Memory the framework holds that the implied scenario does not model, bytes, and what it is.
    pub unmodelled: Option<(u64, &'static str)>,
}

impl Recipe {
    /// Does the export run the scenario as estimated?
    pub fn matches(&self) -> bool {
        self.differs.is_empty()
    }

    /// The statement an export carries (as comments, or printed beside a JSON file).
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.says.iter().map(|s| format!("{}: {s}", self.framework)).collect();
        let cmd = match &self.implied_args {
            Some(a) => format!(
                "vramscope estimate --model {} {}",
                flags::model_arg(&self.implied.model),
                flags::line(a)
            ),
            None => "no card named: add --gpu for the card's verdict".into(),
        };
        let verdict = match self.implied_fits {
            Some(false) => ", which does NOT fit the card",
            _ => "",
        };
        if self.matches() {
            out.push(format!("matches the scenario: {} per GPU{verdict} ({cmd})", gib(self.scenario_total)));
        } else if self.implied_total == self.scenario_total {
            out.push(format!(
                "differs from the scenario in {} (the same {} per GPU{verdict}: {cmd})",
                flags::line(&self.differs),
                gib(self.implied_total)
            ));
        } else {
            out.push(format!(
                "differs from the scenario in {}: the framework's job is {} per GPU{verdict} ({cmd}), the scenario's {}",
                flags::line(&self.differs),
                gib(self.implied_total),
                gib(self.scenario_total)
            ));
        }
        if let Some((b, what)) = self.unmodelled {
            out.push(format!("not in that total: {what}, about {} more per GPU", gib(b)));
        }
        out
    }
}

fn deepspeed_precision(p: Precision, says: &mut Vec<String>) -> Precision {
    match p {
        Precision::Bf16 | Precision::Bf16Mixed => {
            says.push(
                "`bf16: {enabled: true}` keeps bf16 weights and gradients, with fp32 master weights and \
                 fp32 Adam moments in the optimizer (the bf16-mixed recipe)"
                    .into(),
            );
            Precision::Bf16Mixed
        }
        Precision::Fp16 | Precision::Fp16Mixed => {
            says.push(
                "`fp16: {enabled: true}` keeps fp16 weights and gradients, with fp32 master weights and \
                 fp32 moments and a dynamic loss scale (the fp16-mixed recipe)"
                    .into(),
            );
            Precision::Fp16Mixed
        }
        Precision::Bf16Amp | Precision::Fp16Amp => {
            let t = if p == Precision::Bf16Amp { "bfloat16" } else { "float16" };
            says.push(format!(
                "no bf16/fp16 section: fp32 weights, gradients and moments; wrap the forward in \
                 `torch.autocast(\"cuda\", dtype=torch.{t})` for the scenario's {p} recipe"
            ));
            p
        }
        _ => {
            says.push("fp32 weights, gradients and optimizer states".into());
            p
        }
    }
}

fn deepspeed_optimizer(sc: &Scenario, says: &mut Vec<String>) -> Optimizer {
    match sc.optimizer {
        Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwLoop | Optimizer::AdamwFused => {
            if sc.parallel.offload == Offload::None {
                says.push(
                    "Adam/AdamW runs as DeepSpeed's FusedAdam, a multi-tensor kernel with no foreach temporary \
                     (as `--optimizer adamw-fused`)"
                        .into(),
                );
            } else {
                says.push(
                    "the offloaded step runs on the CPU (DeepSpeedCPUAdam): no GPU step temporary".into(),
                );
            }
            Optimizer::AdamwFused
        }
        o => {
            says.push(format!(
                "the {o} optimizer is the client's, passed to `deepspeed.initialize` \
                 (`zero_allow_untested_optimizer`)",
                o = o.name()
            ));
            o
        }
    }
}

/// What the DeepSpeed training config runs.
fn deepspeed(sc: &Scenario, says: &mut Vec<String>) -> Scenario {
    let mut s = sc.clone();
    s.precision = deepspeed_precision(sc.precision, says);
    s.optimizer = deepspeed_optimizer(sc, says);
    // what a DeepSpeed config has no key for: the model side of the job
    let mut model_side = Vec::new();
    if let Some(l) = sc.lora {
        model_side.push(format!(
            "LoRA r={} on {} (PEFT's get_peft_model before deepspeed.initialize)",
            l.rank,
            l.targets.names()
        ));
    }
    if sc.base_quant != crate::estimate::BaseQuant::None {
        model_side.push(format!(
            "the {} base (BitsAndBytesConfig at from_pretrained: vramscope export --format hf writes it)",
            sc.base_quant.name()
        ));
    }
    model_side.push(format!("sequence length {} (the data)", sc.seq));
    model_side.push(format!("attention {} (attn_implementation at load)", sc.attention.name()));
    if sc.checkpointing != Checkpointing::None {
        model_side.push(format!(
            "--checkpoint {} (the model's gradient_checkpointing_enable; activation_checkpointing here configures deepspeed.checkpointing only)",
            sc.checkpointing
        ));
    }
    says.push(format!("not expressed in the config (set on the model): {}", model_side.join("; ")));
    let stage = if sc.parallel.fsdp.is_some() { 3 } else { sc.parallel.zero };
    if stage >= 1 {
        let c = crate::estimate::deepspeed::zero_config(sc, stage);
        let dt = s.precision.weight_dtype();
        let one = dt.bytes(c.reduce_bucket_size);
        let dt = dt.name();
        let whose = if c.hf_auto { "the HF Trainer's \"auto\" (hidden²)" } else { "DeepSpeed's default" };
        says.push(if stage >= 3 {
            format!(
                "ZeRO-3 keeps one reduce bucket of reduce_bucket_size {} {dt} elements ({whose}) all run: {} (\"ZeRO buckets\")",
                crate::units::digits(c.reduce_bucket_size),
                gib(one)
            )
        } else {
            format!(
                "ZeRO-{stage} allocates {} reduce bucket(s) of reduce_bucket_size {} {dt} elements ({whose}; two with overlap_comm) for each backward: {} (\"ZeRO buckets\"); allgather_bucket_size makes no buffer with NCCL's all_gather_into_tensor",
                if c.overlap_comm { 2 } else { 1 },
                crate::units::digits(c.reduce_bucket_size),
                gib(if c.overlap_comm { 2 * one } else { one })
            )
        });
    }
    if let Some(m) = sc.parallel.fsdp {
        says.push(format!(
            "FSDP {} is written as ZeRO stage 3",
            match m {
                FsdpMode::FullShard => "full_shard",
                FsdpMode::ShardGradOp => "shard_grad_op",
                FsdpMode::HybridShard => "hybrid_shard",
            }
        ));
        s.parallel.fsdp = None;
        s.parallel.zero = 3;
    }
    s
}

/// What DeepSpeed-Inference (`init_inference`) runs: the model in the compute dtype, sharded by
/// automatic tensor parallelism; no pipeline stages.
fn deepspeed_infer(sc: &Scenario, says: &mut Vec<String>) -> Scenario {
    let mut s = sc.clone();
    let tp = if sc.parallel.tp > 1 {
        format!("automatic tensor parallelism over {}", crate::units::count(sc.parallel.tp, "GPU"))
    } else {
        "one GPU, no tensor parallelism".into()
    };
    says.push(format!(
        "`deepspeed.init_inference(model, config=...)` with this config: {tp}, no kernel injection \
         (the Hugging Face model's own forward)"
    ));
    if sc.parallel.pp > 1 {
        says.push("DeepSpeed-Inference has no pipeline stages: every rank holds all layers".into());
        s.parallel.pp = 1;
    }
    s
}

/// What the Hugging Face Trainer arguments run.
fn hf(sc: &Scenario, says: &mut Vec<String>) -> Scenario {
    let p = &sc.parallel;
    if p.fsdp.is_none() && (p.zero > 0 || p.offload != Offload::None) {
        says.push("the Trainer hands precision and optimizer to the DeepSpeed config it names".into());
        return deepspeed(sc, says);
    }
    let mut s = sc.clone();
    s.precision = match sc.precision {
        Precision::Bf16 => {
            says.push("the weights load in bfloat16: pure bf16 weights, gradients and AdamW moments".into());
            Precision::Bf16
        }
        Precision::Fp16 => {
            says.push(
                "the weights load in float16 without `fp16=True` (its GradScaler refuses fp16 gradients): \
                 pure fp16, no loss scaling"
                    .into(),
            );
            Precision::Fp16
        }
        Precision::Bf16Mixed | Precision::Fp16Mixed => {
            let amp =
                if sc.precision == Precision::Bf16Mixed { Precision::Bf16Amp } else { Precision::Fp16Amp };
            says.push(format!(
                "the Trainer has no half-precision-weights-with-fp32-master recipe outside DeepSpeed; \
                 fp32 weights with autocast is {amp}"
            ));
            amp
        }
        Precision::Bf16Amp | Precision::Fp16Amp => {
            says.push(format!(
                "fp32 weights, gradients and moments; autocast computes in half precision ({})",
                sc.precision
            ));
            sc.precision
        }
        other => {
            says.push("fp32 weights, gradients and optimizer states".into());
            other
        }
    };
    if sc.optimizer == Optimizer::SgdMomentum {
        says.push("`optim=\"sgd\"` is torch SGD without momentum (no momentum buffer)".into());
        s.optimizer = Optimizer::Sgd;
    }
    if p.fsdp.is_some() {
        says.push("FSDP's MixedPrecision keeps the sharded weights in the dtype they load in".into());
    }
    // the Trainer's create_optimizer keeps the embeddings' 8-bit states in 32 bit
    let mut trainer = s.clone();
    trainer.stack.framework = Some(crate::estimate::Framework::HfTrainer);
    if s.stack.framework.is_none()
        && crate::estimate::states::embeddings_in_32bit(&trainer)
        && s.lora.is_none()
    {
        says.push(format!(
            "`optim=\"{}\"`: the Trainer registers bitsandbytes' optim_bits=32 override for every nn.Embedding, so the embeddings' optimizer states are fp32 (--framework hf-trainer)",
            if s.optimizer.paged() { "paged_adamw_8bit" } else { "adamw_bnb_8bit" }
        ));
        s.stack.framework = Some(crate::estimate::Framework::HfTrainer);
    }
    s
}

/// What the FSDP snippet runs.
fn fsdp(sc: &Scenario, says: &mut Vec<String>) -> Scenario {
    let mut s = sc.clone();
    s.precision = match sc.precision {
        Precision::Bf16 | Precision::Fp16 => {
            says.push(format!(
                "load the model in {} before wrapping: pure {} weights, gradients and moments \
                 (MixedPrecision is then a no-op)",
                if sc.precision == Precision::Bf16 { "torch.bfloat16" } else { "torch.float16" },
                sc.precision
            ));
            sc.precision
        }
        Precision::Bf16Mixed | Precision::Fp16Mixed | Precision::Bf16Amp | Precision::Fp16Amp => {
            let amp = if matches!(sc.precision, Precision::Bf16Mixed | Precision::Bf16Amp) {
                Precision::Bf16Amp
            } else {
                Precision::Fp16Amp
            };
            says.push(format!(
                "load the model in fp32: MixedPrecision keeps fp32 sharded weights, gradients and moments \
                 and computes in half precision ({amp})"
            ));
            amp
        }
        other => {
            says.push("fp32 weights, gradients and optimizer states".into());
            other
        }
    };
    if sc.parallel.fsdp.is_none() {
        says.push(format!("ZeRO stage {} is written as its FSDP sharding strategy", sc.parallel.zero));
    }
    // the snippet is FSDP1 (FullyShardedDataParallel, use_orig_params=True) wrapping each block:
    // a LoRA model's adapters sit inside their block's flat parameter
    let code = if sc.lora.is_some() { FsdpImpl::Fsdp1Shared } else { FsdpImpl::Fsdp1 };
    if sc.parallel.fsdp.is_some() && sc.stack.fsdp != code {
        s.stack.fsdp = code;
        says.push(if sc.lora.is_some() {
            "the block-wise wrap puts the LoRA adapters inside each block's flat parameter (use_orig_params=True), \
             so the frozen weights take gradients too (--fsdp-impl fsdp1-shared); PEFT's fsdp_auto_wrap_policy \
             keeps the adapters apart"
                .to_owned()
        } else {
            "FullyShardedDataParallel is FSDP1 (--fsdp-impl fsdp1): its root unit stays gathered through the step".to_owned()
        });
    }
    s
}

/// What the Megatron-LM flags run.
fn megatron(sc: &Scenario, says: &mut Vec<String>) -> Scenario {
    let mut s = sc.clone();
    s.precision = match sc.precision {
        Precision::Fp32 => {
            says.push("fp32 weights, gradients and optimizer states".into());
            Precision::Fp32
        }
        Precision::Fp16 | Precision::Fp16Mixed | Precision::Fp16Amp => {
            says.push(
                "`--fp16` keeps fp16 weights with fp32 main weights and moments in the optimizer and a \
                 loss scale (fp16-mixed)"
                    .into(),
            );
            Precision::Fp16Mixed
        }
        _ => {
            says.push(
                "`--bf16` keeps bf16 weights with fp32 main weights and moments in the optimizer \
                 (bf16-mixed); Megatron also accumulates gradients in an fp32 buffer \
                 (accumulate_allreduce_grads_in_fp32 is forced with bf16), which bf16-mixed holds \
                 only during the step"
                    .into(),
            );
            Precision::Bf16Mixed
        }
    };
    s.optimizer = match sc.optimizer {
        Optimizer::Sgd | Optimizer::SgdMomentum => {
            says.push("`--optimizer sgd` has momentum 0.9 (`--sgd-momentum`)".into());
            Optimizer::SgdMomentum
        }
        o => {
            if !matches!(o, Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwFused | Optimizer::AdamwLoop)
            {
                says.push(format!("Megatron-LM has no {} optimizer; the flags use its Adam", o.name()));
            }
            says.push("`--optimizer adam` is a fused AdamW kernel with no foreach temporary".into());
            Optimizer::AdamwFused
        }
    };
    if sc.lora.is_some() || sc.base_quant != crate::estimate::BaseQuant::None {
        says.push("Megatron-LM has no LoRA or quantized base: these flags train every weight".into());
        s.lora = None;
        s.base_quant = crate::estimate::BaseQuant::None;
    }
    let p = &sc.parallel;
    if p.zero >= 1 || p.fsdp.is_some() {
        says.push(
            "`--use-distributed-optimizer` shards the fp32 main weights and moments over data parallel \
             (ZeRO stage 1)"
                .into(),
        );
        s.parallel.zero = 1;
        s.parallel.fsdp = None;
        // Megatron's own distributed optimizer: no DeepSpeed reduce buckets
        if s.stack.framework.is_none() {
            s.stack.framework = Some(crate::estimate::Framework::Megatron);
        }
    }
    if p.offload != Offload::None {
        says.push("these flags do not offload to the CPU".into());
        s.parallel.offload = Offload::None;
    }
    if let Some(t) = sc.model.transformer() {
        says.push(format!(
            "dropout as the model's config: --attention-dropout {} --hidden-dropout {} (Megatron's default is 0.1)",
            t.attention_dropout, t.hidden_dropout
        ));
    }
    if sc.checkpointing == Checkpointing::Selective {
        says.push("selective recomputation recomputes the attention core".into());
    }
    s
}

/// The card the flags name: the file's, else the first catalog card (the flags compared are the
/// same on any card; the totals are per GPU either way).
fn card(f: &ScenarioFile) -> Option<Gpu> {
    f.gpu().or_else(|| gpu::catalog().first().cloned())
}

fn total(sc: &Scenario, g: Option<&Gpu>) -> Result<u64, ExportError> {
    super::estimate_on(sc, g).map(|e| e.total)
}

/// The recipe of a framework export, `None` for the other formats.
pub fn recipe(f: &ScenarioFile, format: Format) -> Result<Option<Recipe>, ExportError> {
    // the job the export writes: the global batch's accumulation (or pipeline micro-batches), as
    // the framework settings state it
    let mut job = f.scenario.clone();
    let accum = f.grad_accum();
    if job.mode == Mode::Train && accum > 1 && !job.stack.optimizer_in_backward {
        if job.parallel.pp > 1 {
            job.parallel.micro_batches = accum;
        } else {
            job.stack.grad_accum = u32::try_from(accum).unwrap_or(u32::MAX);
        }
    }
    let sc = &job;
    if sc.vlm_images().is_some()
        && matches!(format, Format::Deepspeed | Format::Hf | Format::Fsdp | Format::Megatron)
    {
        // the settings and scripts load the text model's class and pack token ids
        return Err(ExportError::Invalid {
            path: "scenario".into(),
            msg: format!(
                "the {} export does not write a vision-language run yet (its processor, pixel values and frozen tower); the estimate's own numbers stand (vramscope estimate)",
                format.name()
            ),
        });
    }
    let mut says = Vec::new();
    let infer = sc.mode == Mode::Infer;
    let (framework, implied) = match format {
        Format::Deepspeed if infer => ("DeepSpeed-Inference", deepspeed_infer(sc, &mut says)),
        Format::Deepspeed => ("DeepSpeed", deepspeed(sc, &mut says)),
        Format::Hf if infer => {
            says.push(
                "a forward under `torch.inference_mode()`: weights and the KV cache, no gradients".into(),
            );
            ("Hugging Face", sc.clone())
        }
        Format::Hf => {
            let p = &sc.parallel;
            let ds = p.fsdp.is_none() && (p.zero > 0 || p.offload != Offload::None);
            (if ds { "Hugging Face Trainer + DeepSpeed" } else { "Hugging Face Trainer" }, hf(sc, &mut says))
        }
        Format::Fsdp | Format::Megatron if infer => {
            return Err(ExportError::Invalid {
                path: "scenario".into(),
                msg: format!(
                    "the {} export is a training setup; for inference use --format hf or --format deepspeed",
                    format.name()
                ),
            });
        }
        Format::Fsdp => ("PyTorch FSDP", fsdp(sc, &mut says)),
        Format::Megatron => ("Megatron-LM", megatron(sc, &mut says)),
        _ => return Ok(None),
    };
    implied
        .validate()
        .map_err(|e| ExportError::Invalid { path: "scenario".into(), msg: format!("{framework}: {e}") })?;
    let gpu = f.gpu();
    let implied_fits = gpu.as_ref().map(|g| crate::fit::fits(&implied, g.capacity()));
    // Megatron's fp32 gradient buffer (accumulate_allreduce_grads_in_fp32) against bf16-mixed's
    // half-precision gradients: 2 more bytes per trainable parameter while the backward runs
    let unmodelled = if format == Format::Megatron && implied.precision == Precision::Bf16Mixed {
        crate::estimate::estimate(&implied).ok().map(|e| {
            (
                e.gradients,
                "Megatron's fp32 gradient buffer during the backward (bf16-mixed counts bf16 gradients)",
            )
        })
    } else {
        None
    };
    let (differs, implied_args) = match card(f) {
        Some(g) => {
            let a = flags::flags(sc, &g);
            let b = flags::flags(&implied, &g);
            (flags::changed(&a, &b), gpu.is_some().then_some(b))
        }
        None => (Vec::new(), None),
    };
    let scenario_total = total(sc, gpu.as_ref())?;
    let implied_total = if differs.is_empty() { scenario_total } else { total(&implied, gpu.as_ref())? };
    Ok(Some(Recipe {
        framework,
        says,
        implied,
        differs,
        implied_args,
        scenario_total,
        implied_total,
        implied_fits,
        unmodelled,
    }))
}

#[cfg(test)]
mod tests;
