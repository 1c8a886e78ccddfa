//! The Python the Hugging Face and FSDP exports share: loading the model as the scenario holds it
//! (dtype, attention, a bitsandbytes base through `BitsAndBytesConfig`), the PEFT adapters
//! (`LoraConfig` + `get_peft_model`), the allocator settings, and the line that names what the
//! settings cannot express.
//!
//! Argument names are the libraries' own: transformers' `BitsAndBytesConfig.__init__`
//! (`utils/quantization_config.py`: `load_in_4bit`, `load_in_8bit`, `bnb_4bit_quant_type`,
//! `bnb_4bit_use_double_quant`, `bnb_4bit_compute_dtype`, `bnb_4bit_quant_storage`),
//! `PreTrainedModel.from_pretrained` (`quantization_config`, `torch_dtype`,
//! `attn_implementation`), PEFT's `LoraConfig` fields (`tuners/lora/config.py`: `r`,
//! `lora_alpha`, `lora_dropout`, `target_modules`, `task_type`) and `get_peft_model`'s
//! `autocast_adapter_dtype` (`mapping_func.py`). `tests/data/schema/python_kwargs.json` lists them
//! with their sources, and `tests/export.rs` checks every call of every export against it.

use super::ScenarioFile;
use crate::estimate::{AdapterDtype, BaseQuant, Checkpointing, Loss, Mode, Scenario};
use crate::units::{DType, Precision};
use std::fmt::Write as _;

/// `torch.bfloat16`, … for a dtype.
pub(super) fn torch_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "torch.float32",
        DType::F16 => "torch.float16",
        _ => "torch.bfloat16",
    }
}

/// The dtype a training export loads the model in: the weights' dtype of a pure recipe, fp32
/// for autocast (and for the master-weight recipes, which the Trainer and FSDP run as autocast).
pub(super) fn load_dtype(p: Precision) -> DType {
    match p {
        Precision::Bf16 => DType::Bf16,
        Precision::Fp16 => DType::F16,
        _ => DType::F32,
    }
}

/// The `BitsAndBytesConfig(...)` of a scenario's quantized base (`None` without one).
/// `quant_storage`: FSDP flattens every parameter of a unit into one tensor, so the 4-bit
/// weights are stored in the other parameters' dtype (`bnb_4bit_quant_storage`).
pub(super) fn bnb_config(sc: &Scenario, quant_storage: Option<DType>) -> Option<String> {
    let quantized_base = sc.lora.is_some() || sc.mode == Mode::Infer;
    if !quantized_base {
        return None;
    }
    let compute = sc.stack.bnb_compute_dtype.unwrap_or_else(|| sc.precision.compute_dtype());
    let four_bit = |double: bool| {
        let mut s = String::from("bnb_config = BitsAndBytesConfig(\n    load_in_4bit=True,\n");
        s += "    bnb_4bit_quant_type=\"nf4\",\n";
        let _ = writeln!(s, "    bnb_4bit_use_double_quant={},", if double { "True" } else { "False" });
        let _ = writeln!(s, "    bnb_4bit_compute_dtype={},", torch_name(compute));
        if let Some(d) = quant_storage {
            let _ = writeln!(
                s,
                "    bnb_4bit_quant_storage={},  # sharded: stored in the other parameters' dtype",
                torch_name(d)
            );
        }
        s + ")\n"
    };
    match sc.base_quant {
        BaseQuant::None => None,
        BaseQuant::Nf4 => Some(four_bit(true)),
        BaseQuant::Nf4NoDq => Some(four_bit(false)),
        BaseQuant::Int8 => Some("bnb_config = BitsAndBytesConfig(load_in_8bit=True)\n".into()),
    }
}

/// `model = AutoModelForCausalLM.from_pretrained(...)` in `dtype`, with the quantized base.
pub(super) fn from_pretrained(
    sc: &Scenario,
    auto: &str,
    dtype: DType,
    bnb: bool,
    place: Option<&str>,
) -> String {
    let mut s = format!("model = {auto}.from_pretrained(\n    MODEL_ID,\n");
    if bnb {
        s += "    quantization_config=bnb_config,\n";
    }
    let _ = writeln!(s, "    torch_dtype={},", torch_name(dtype));
    let _ =
        writeln!(s, "    attn_implementation=\"{}\",", super::frameworks::attn_implementation(sc.attention));
    if let Some(p) = place {
        let _ = writeln!(s, "    {p},");
    }
    s + ")\n"
}

/// PEFT's `target_modules` for the scenario's LoRA targets (a full-match regex over the family's
/// module names), or `"all-linear"` when every projection is a target and no name is known.
fn target_modules(sc: &Scenario) -> String {
    let Some((t, l)) = sc.model.transformer().zip(sc.lora) else { return "\"all-linear\"".into() };
    match crate::probe::lora_target_regex(t.family, l.targets) {
        Ok(re) => format!("r\"{re}\""),
        Err(_) => "\"all-linear\"".into(),
    }
}

/// The PEFT lines of a LoRA scenario (empty without LoRA).
pub(super) fn peft(sc: &Scenario) -> String {
    let Some(l) = sc.lora else { return String::new() };
    let mut s = String::new();
    if sc.base_quant != BaseQuant::None && sc.mode == Mode::Train {
        s += "# no prepare_model_for_kbit_training: it casts the unquantized embeddings, norms and head to fp32,\n";
        s += "# which this estimate does not hold (the gradient checkpointing below is set without it)\n";
    }
    let _ = writeln!(
        s,
        "lora_config = LoraConfig(\n    r={},\n    lora_alpha={},  # the update's scale: no memory of its own\n    lora_dropout={:?},\n    target_modules={},\n    task_type=\"CAUSAL_LM\",\n)",
        l.rank,
        2 * l.rank,
        l.dropout,
        target_modules(sc)
    );
    // PEFT keeps adapters in fp32 (autocast_adapter_dtype=True); the model's dtype without it
    let cast = match sc.stack.adapter_dtype {
        AdapterDtype::Fp32 => "",
        AdapterDtype::Model => ", autocast_adapter_dtype=False",
    };
    let _ = writeln!(s, "model = get_peft_model(model, lora_config{cast})");
    s
}

/// `PYTORCH_CUDA_ALLOC_CONF` when the scenario sets the allocator (before torch allocates).
pub(super) fn alloc_conf(sc: &Scenario) -> String {
    let c = sc.overhead.allocator;
    let v = c.to_string();
    if v.is_empty() { String::new() } else { format!("os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"{v}\"\n") }
}

/// The settings of the scenario that a data-parallel PyTorch script (the Trainer, an FSDP wrap)
/// cannot express, one phrase each.
pub(super) fn not_expressed(f: &ScenarioFile, every_block_only: bool) -> Vec<String> {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let mut out = Vec::new();
    for (deg, flag) in [(p.tp, "--tp"), (p.pp, "--pp"), (p.cp, "--cp"), (p.ep, "--ep")] {
        if deg > 1 {
            out.push(format!("{flag} {deg} (no tensor, pipeline, context or expert parallelism here)"));
        }
    }
    if p.sp {
        out.push("--sp (sequence parallelism)".into());
    }
    if every_block_only && !matches!(sc.checkpointing, Checkpointing::None | Checkpointing::Full) {
        out.push(format!(
            "--checkpoint {} (gradient_checkpointing checkpoints every block)",
            sc.checkpointing
        ));
    }
    if sc.stack.optimizer_in_backward {
        out.push("--optimizer-in-backward (the step runs after the backward)".into());
    }
    if sc.stack.loss != Loss::Hf && sc.mode == Mode::Train {
        out.push(format!("--loss {} (the model's own forward computes the loss)", sc.stack.loss));
    }
    if sc.stack.compiled_loss {
        out.push("--compile-loss".into());
    }
    if sc.stack.keep_grads {
        out.push("--keep-grads (zero_grad sets gradients to None)".into());
    }
    out
}

/// "# not expressed here: …" (nothing when everything is expressed).
pub(super) fn not_expressed_line(items: &[String]) -> String {
    if items.is_empty() {
        "# every setting of the scenario is expressed above\n".into()
    } else {
        format!("# not expressed here (set them elsewhere or expect a different job): {}\n", items.join("; "))
    }
}
