//! `vramscope probe`: a self-contained PyTorch script that runs a scenario on a real GPU (or on the
//! CPU, to test the script) and records what the CUDA caching allocator and NVML saw, next to the
//! estimate for the same scenario (`calibrate` compares the two).
//!
//! Pure: the CLI reads the files and writes the script; this module decides what the scenario
//! means in PyTorch / HF transformers terms (or refuses it) and fills the template
//! (`probe.py`, compiled in).

pub mod hf;

use crate::estimate::{AttentionImpl, BaseQuant, Checkpointing, Mode, Optimizer, Scenario};
use crate::model::{Family, Head, LinearRole};
use crate::units::Precision;
use serde_json::{Value, json};

/// The Python template; `__VRAMSCOPE_SPEC__` becomes the spec dict, `__VRAMSCOPE_COMMAND__` the
/// command line (in a comment).
pub const TEMPLATE: &str = include_str!("probe.py");

/// Schema of the spec embedded in the script and of the JSON it writes.
pub const SCHEMA: u64 = 1;

/// A scenario the probe cannot run faithfully.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProbeError {
    /// Refused, with the reason.
    #[error("probe: {0}")]
    Unsupported(String),
}

fn refuse(msg: impl Into<String>) -> ProbeError {
    ProbeError::Unsupported(msg.into())
}

crate::tokens::token_enum! {
    /// Where the script runs (the token is PyTorch's device name).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Device {
        /// A CUDA GPU (the measurement).
        Cuda => "cuda" | "gpu",
        /// The CPU: same steps, no CUDA memory statistics (to test the script).
        Cpu => "cpu",
    }
    impl FromStr = crate::tokens::Parse::named("device");
}

/// What the script does besides the scenario.
#[derive(Clone, Debug)]
pub struct Options {
    /// Device.
    pub device: Device,
    /// Measured steps (training) or forward passes (inference).
    pub steps: u32,
    /// Unmeasured steps first (the optimizer states get allocated, kernels get loaded).
    pub warmup: u32,
    /// `_record_memory_history(max_entries=…)`; 0 writes no snapshot.
    pub snapshot_entries: u64,
}

/// The model's HF config and where it came from.
#[derive(Clone, Debug)]
pub struct Config {
    /// The config dict.
    pub config: Value,
    /// The model's own `config.json` (true), or generated from a RON preset (false).
    pub verbatim: bool,
}

/// Checks that the scenario is one the probe can run as asked.
pub fn check(sc: &Scenario) -> Result<(), ProbeError> {
    let p = sc.parallel;
    if p.dp > 1 || p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1 || p.fsdp.is_some() || p.sp {
        return Err(refuse(
            "the probe measures one GPU in one process: drop the parallel flags (--dp/--tp/--pp/--cp/--ep/--sp/--fsdp)",
        ));
    }
    if p.offload != crate::estimate::Offload::None {
        return Err(refuse("--offload needs DeepSpeed; the probe runs plain PyTorch"));
    }
    if sc.vlm_images().is_some() {
        return Err(refuse(
            "the probe feeds token ids to the text model's class; a vision-language run's images (pixel values, grids) are not fed yet",
        ));
    }
    match sc.precision {
        Precision::Bf16Mixed | Precision::Fp16Mixed => {
            return Err(refuse(format!(
                "precision {} is Megatron/DeepSpeed's fp32-master recipe, which plain PyTorch has not; probe bf16-amp or bf16",
                sc.precision
            )));
        }
        Precision::Fp8 | Precision::Int8 | Precision::Int4 => {
            return Err(refuse(format!(
                "precision {}: random weights built with from_config cannot be quantized like a checkpoint; probe bf16",
                sc.precision
            )));
        }
        _ => {}
    }
    if sc.base_quant != BaseQuant::None {
        return Err(refuse(
            "--base-quant (QLoRA) needs a quantized checkpoint; the probe builds random weights",
        ));
    }
    if let Some(d) = sc.kv_cache_dtype
        && d != sc.precision.compute_dtype()
    {
        return Err(refuse(
            "--kv-dtype: transformers' DynamicCache keeps the compute dtype; drop --kv-dtype",
        ));
    }
    if sc.mode == Mode::Train
        && matches!(sc.checkpointing, Checkpointing::Segments(_) | Checkpointing::Selective)
    {
        return Err(refuse(format!(
            "--checkpoint {}: HF transformers checkpoints whole blocks only; probe full or every:K",
            sc.checkpointing
        )));
    }
    if let Some(t) = sc.model.transformer()
        && let Some(q) = t.quant
        && (sc.mode == Mode::Infer || sc.lora.is_some())
    {
        return Err(refuse(format!(
            "the checkpoint is {}: random weights cannot reproduce that format (full fine-tuning, which dequantizes, can be probed)",
            q.label()
        )));
    }
    Ok(())
}

/// PEFT `target_modules` (a full-match regex) for the LoRA targets of a family; vision towers
/// excluded (they train no adapters in the estimate).
pub fn lora_target_regex(family: Family, targets: crate::estimate::Targets) -> Result<String, ProbeError> {
    use LinearRole::{Down, Gate, K, O, Q, Up, V};
    let has = |r| targets.has(r);
    let qkv = has(Q) || has(K) || has(V);
    let mut names: Vec<&str> = Vec::new();
    let mut push = |on: bool, name: &'static str| {
        if on {
            names.push(name);
        }
    };
    let Some(n) = crate::families::def(family).peft_modules() else {
        return Err(refuse(format!("--lora: no PEFT module names for family {family:?} yet")));
    };
    match n.qkv {
        Some(fused) => push(qkv, fused),
        None => {
            push(has(Q), n.q);
            push(has(K), n.k);
            push(has(V), n.v);
        }
    }
    push(has(O), n.o);
    match n.gate_up {
        Some(fused) => push(has(Gate) || has(Up), fused),
        None => {
            push(has(Gate), n.gate);
            push(has(Up), n.up);
        }
    }
    push(has(Down), n.down);
    if names.is_empty() {
        return Err(refuse(format!("--lora targets {} name no module of this family", targets.names())));
    }
    // not the vision tower's modules (`vision_tower.*`, Qwen-VL's `visual.*` with the same names)
    Ok(format!(r"(?!.*visi(?:on|ual)).*\.(?:{})", names.join("|")))
}

/// The HF Auto class for the model, and the input kind.
fn auto_class(family: Family, head: Head) -> (&'static str, &'static str) {
    if crate::families::def(family).takes_pixels() {
        return ("AutoModelForImageClassification", "pixels");
    }
    match head {
        Head::CausalLm => ("AutoModelForCausalLM", "tokens"),
        Head::MaskedLm => ("AutoModelForMaskedLM", "tokens"),
        Head::SequenceClassification { .. } => ("AutoModelForSequenceClassification", "tokens"),
        Head::Base => ("AutoModel", "tokens"),
    }
}

/// What the script runs: the PyTorch / transformers reading of the scenario.
fn run_spec(sc: &Scenario, opts: &Options) -> Result<Value, ProbeError> {
    let t = sc.model.transformer().ok_or_else(|| {
        refuse(if sc.model.net().is_some() {
            "a vision backbone built op by op (ResNet, ConvNeXt, Swin) is not probed yet (probe builds transformers)"
        } else {
            if sc.model.traced().is_some() {
                "a traced model cannot be probed yet (its training code is your own; measure it there with torch.cuda.max_memory_allocated)"
            } else {
                "a layer table cannot be probed"
            }
        })
    })?;
    let (auto, input) = auto_class(t.family, t.head);
    let dtype = |d: crate::units::DType| match d {
        crate::units::DType::F32 => "float32",
        crate::units::DType::F16 => "float16",
        _ => "bfloat16",
    };
    let autocast = sc.precision.is_amp().then(|| dtype(sc.precision.compute_dtype()));
    let train = sc.mode == Mode::Train;
    let checkpoint = match (train, sc.checkpointing) {
        (false, _) | (_, Checkpointing::None) => json!("none"),
        (true, Checkpointing::Full) => json!("full"),
        (true, Checkpointing::Every(k)) => json!({ "every": k }),
        (true, other) => return Err(refuse(format!("--checkpoint {other} cannot be probed"))),
    };
    let lora = match sc.lora {
        Some(l) if train || sc.mode == Mode::Infer => Some(json!({
            "r": l.rank,
            "alpha": 2 * l.rank,
            "dropout": l.dropout,
            "target_modules": lora_target_regex(t.family, l.targets)?,
        })),
        _ => None,
    };
    Ok(json!({
        "mode": sc.mode.name(),
        "batch": sc.batch,
        "seq": sc.seq,
        "image": sc.image_size().map(|i| [i.height, i.width]),
        // ViT refuses another image size unless the forward is asked to interpolate
        "interpolate_pos_encoding": t.patches.zip(sc.image_size()).is_some_and(|(p, i)| {
            p.interpolates(i) && p.interpolation == crate::model::pixels::PositionInterpolation::OnRequest
        }),
        "new_tokens": sc.new_tokens,
        "vocab_size": t.vocab_size,
        "auto_class": auto,
        "input": input,
        "causal_lm": t.head == Head::CausalLm && !crate::families::def(t.family).takes_pixels(),
        "dtype": dtype(sc.precision.weight_dtype()),
        "autocast": autocast,
        "grad_scaler": sc.precision == Precision::Fp16Amp,
        // transformers' `attn_implementation` names, not the command line's tokens
        "attn_implementation": match sc.attention {
            AttentionImpl::Eager => "eager",
            AttentionImpl::Sdpa => "sdpa",
            AttentionImpl::Flash => "flash_attention_2",
        },
        "checkpoint": checkpoint,
        "lora": lora,
        "optimizer": if train { sc.optimizer.name() } else { Optimizer::None.name() },
        "device": opts.device.name(),
        "steps": opts.steps,
        "warmup": opts.warmup,
        "snapshot_entries": opts.snapshot_entries,
    }))
}

/// JSON text as a Python expression (the template aliases `true`, `false` and `null`): JSON string
/// escapes are Python ones, and serde_json never writes `NaN` or `\/`.
fn python_literal(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into())
}

/// The script for a checked scenario. `args` is the scenario as `vramscope estimate` flags (the
/// echo `calibrate` re-runs); `predicted` the estimate JSON.
pub fn script(
    sc: &Scenario,
    config: &Config,
    args: &[String],
    predicted: &Value,
    opts: &Options,
) -> Result<String, ProbeError> {
    check(sc)?;
    if opts.steps == 0 {
        return Err(refuse("--steps must be at least 1"));
    }
    let mut cfg = config.config.clone();
    if let Some(o) = cfg.as_object_mut() {
        // the estimate dequantizes a quantized checkpoint for full fine-tuning; so does the probe
        o.remove("quantization_config");
    }
    let spec = json!({
        "schema": SCHEMA,
        "vramscope_version": env!("CARGO_PKG_VERSION"),
        "args": args,
        "scenario": predicted.get("scenario").cloned().unwrap_or(Value::Null),
        "model": {"name": sc.model.name, "config_verbatim": config.verbatim},
        "config": cfg,
        "run": run_spec(sc, opts)?,
        "predicted": predicted,
    });
    let command: String = std::iter::once("vramscope probe")
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    Ok(TEMPLATE.replacen("__VRAMSCOPE_COMMAND__", &command, 1).replacen(
        "__VRAMSCOPE_SPEC__",
        &python_literal(&spec),
        1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Lora, Targets};

    #[test]
    fn probe_template_has_each_placeholder_once() {
        assert_eq!(TEMPLATE.matches("__VRAMSCOPE_SPEC__").count(), 1);
        assert_eq!(TEMPLATE.matches("__VRAMSCOPE_COMMAND__").count(), 1);
    }

    #[test]
    fn probe_lora_targets_per_family() {
        let l: Lora = "8:q,v".parse().unwrap();
        assert_eq!(
            lora_target_regex(crate::families::by_id("llama").unwrap(), l.targets).unwrap(),
            r"(?!.*visi(?:on|ual)).*\.(?:q_proj|v_proj)"
        );
        assert_eq!(
            lora_target_regex(crate::families::by_id("gpt2").unwrap(), l.targets).unwrap(),
            r"(?!.*visi(?:on|ual)).*\.(?:attn\.c_attn)"
        );
        assert!(lora_target_regex(crate::families::by_id("deepseek").unwrap(), Targets::ALL).is_err());
    }

    #[test]
    fn probe_refuses_multi_gpu_and_quantized_runs() {
        let mut sc = Scenario::new(crate::model::preset::builtin("gpt2").unwrap());
        assert!(check(&sc).is_ok());
        sc.parallel.tp = 2;
        assert!(check(&sc).unwrap_err().to_string().contains("one GPU"));
        sc.parallel.tp = 1;
        sc.precision = Precision::Bf16Mixed;
        assert!(check(&sc).is_err());
        sc.precision = Precision::Bf16;
        sc.checkpointing = Checkpointing::Selective;
        assert!(check(&sc).unwrap_err().to_string().contains("whole blocks"));
    }
}
