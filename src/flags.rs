//! A scenario as the `vramscope estimate` flags that rebuild it.
//!
//! The advice (plan, options, roadmap) names every setting a row relies on by these flags, so a
//! reader can paste them after `vramscope estimate --model M` and get the row's total. The
//! command line's parser is the inverse: a property test in the CLI checks, over generated
//! scenarios and every row the advice produces, that parsing these flags gives back the same
//! scenario and the same total.

use crate::estimate::context::ModuleLoading;
use crate::estimate::stack::LossKeyword;
use crate::estimate::{
    AdapterDtype, AttentionImpl, BaseQuant, FsdpMode, Loss, Mode, ModelCode, Offload, Scenario, Torch,
};
use crate::gpu::Gpu;

/// One flag: its name and its value (`None` for a switch).
pub type Flag = (&'static str, Option<String>);

/// The `--fsdp` name of a sharding strategy ([`FsdpMode::name`]).
pub fn fsdp_name(m: FsdpMode) -> &'static str {
    m.name()
}

/// Every setting of `sc` on `gpu` as flags, in the order `estimate --help` lists them, without
/// `--model` (the caller names the model as the user gave it). Settings at the command line's
/// defaults are left out, except the ones a reader looks for: mode, batch, sequence, precision,
/// optimizer, checkpointing and the GPU.
pub fn flags(sc: &Scenario, gpu: &Gpu) -> Vec<Flag> {
    let mut v: Vec<Flag> = Vec::new();
    scenario_flags(&mut v, sc);
    stack_flags(&mut v, sc);
    if let Some(d) = sc.kv_cache_dtype {
        v.push(("--kv-dtype", Some(d.name().into())));
    }
    v.push(("--gpu", Some(gpu.id.clone())));
    overhead_flags(&mut v, sc, gpu);
    parallel_flags(&mut v, sc);
    // the switches, last
    let (p, st) = (sc.parallel, sc.stack);
    if p.sp {
        v.push(("--sp", None));
    }
    if st.optimizer_in_backward {
        v.push(("--optimizer-in-backward", None));
    }
    if st.keep_grads {
        v.push(("--keep-grads", None));
    }
    if st.compiled_loss {
        v.push(("--compile-loss", None));
    }
    v
}

/// The run's own settings: mode, batch, sequence, precision, optimizer, attention,
/// checkpointing, LoRA and a quantized base.
fn scenario_flags(v: &mut Vec<Flag>, sc: &Scenario) {
    let mut put = |k: &'static str, val: String| v.push((k, Some(val)));
    let train = sc.mode == Mode::Train;
    put("--mode", sc.mode.name().into());
    put("--batch", sc.batch.to_string());
    match sc.image {
        // a traced model's image is its height and width dims; it has no sequence
        _ if sc.model.traced().is_some() => {
            if let Some(i) = sc.image {
                put("--image-size", format!("{}x{}", i.height, i.width));
            }
            for (k, val) in &sc.dims {
                put("--dim", format!("{k}={val}"));
            }
        }
        // a vision model's sequence is its image's tokens
        Some(i) if sc.model.patches().is_some() => {
            put("--image-size", format!("{}x{}", i.height, i.width));
        }
        // a vision-language model's --seq is its text; the images' tokens are added
        _ if let Some(im) = sc.vlm_images() => {
            put("--seq", sc.text_tokens().to_string());
            put("--images", im.count.to_string());
            put("--image-size", format!("{}x{}", im.size.height, im.size.width));
        }
        // a convolutional network's sample is its image: no sequence
        None if sc.model.net().is_some() => {}
        _ => put("--seq", sc.seq.to_string()),
    }
    if sc.new_tokens > 0 {
        put("--new-tokens", sc.new_tokens.to_string());
    }
    // under litgpt, Lightning's names (its bf16-mixed is this tool's bf16-amp)
    let precision = sc.stack.framework.map_or(sc.precision.name(), |f| f.precision_token(sc.precision));
    put("--precision", precision.into());
    if train {
        put("--optimizer", sc.optimizer.name().into());
    }
    if sc.attention != AttentionImpl::Sdpa {
        put("--attention", sc.attention.name().into());
    }
    if train {
        put("--checkpoint", sc.checkpointing.to_string());
    }
    if let Some(l) = sc.lora {
        put("--lora", format!("{}:{}", l.rank, l.targets.names()));
        if l.dropout != 0.0 {
            put("--lora-dropout", l.dropout.to_string());
        }
    }
    if sc.base_quant != BaseQuant::None {
        put("--base-quant", sc.base_quant.name().into());
    }
}

/// The training stack's settings that differ from its framework's (or the defaults).
fn stack_flags(v: &mut Vec<Flag>, sc: &Scenario) {
    let mut put = |k: &'static str, val: String| v.push((k, Some(val)));
    let st = sc.stack;
    if let Some(f) = st.framework {
        put("--framework", f.name().into());
    }
    if st.framework.is_some() || st.loss != Loss::Hf {
        put("--loss", st.loss.to_string());
    }
    if st.framework.is_some() || st.adapter_dtype != AdapterDtype::Fp32 {
        put("--adapter-dtype", st.adapter_dtype.name().into());
    }
    if let Some(d) = st.bnb_compute_dtype {
        put("--bnb-compute-dtype", d.name().into());
    }
    let preset_code = st.framework.map_or(ModelCode::Hf, |f| f.stack().model_code);
    if st.model_code != preset_code {
        put("--model-code", st.model_code.name().into());
    }
    if st.torch != Torch::Current {
        put("--torch", st.torch.to_string());
    }
    if st.mixer != crate::estimate::MixerImpl::Kernels {
        put("--mixer-impl", st.mixer.name().into());
    }
    // the FSDP implementation matters (and is named) only under --fsdp
    let preset_fsdp = st.framework.map_or(crate::estimate::FsdpImpl::default(), |f| f.stack().fsdp);
    if sc.parallel.fsdp.is_some() && st.fsdp != preset_fsdp {
        put("--fsdp-impl", st.fsdp.name().into());
    }
    // who quantized a 4-bit base, where the framework does not say it
    let preset_bnb = st.framework.map_or(crate::estimate::Bnb::default(), |f| f.stack().bnb);
    match st.bnb {
        b if b == preset_bnb => {}
        crate::estimate::Bnb::Lightning => put("--bitsandbytes", crate::estimate::Bnb::LIGHTNING.into()),
        crate::estimate::Bnb::Before0_43 => put("--bitsandbytes", "0.42".into()),
        crate::estimate::Bnb::Current => {}
    }
    if st.grad_accum > 1 {
        put("--grad-accum", st.grad_accum.to_string());
    }
}

/// The CUDA context, workspace, reserve and allocator settings that differ from the card's.
fn overhead_flags(v: &mut Vec<Flag>, sc: &Scenario, gpu: &Gpu) {
    let mut put = |k: &'static str, val: String| v.push((k, Some(val)));
    let (o, d) = (sc.overhead, gpu.overhead());
    if o.cuda_context_bytes != d.cuda_context_bytes {
        put("--context-mib", (o.cuda_context_bytes >> 20).to_string());
    } else if o.module_loading != ModuleLoading::Lazy {
        put("--module-loading", o.module_loading.name().into());
    }
    if o.workspace_bytes != d.workspace_bytes {
        put("--workspace-mib", (o.workspace_bytes >> 20).to_string());
    }
    if o.flat_reserve {
        put("--reserve-frac", o.allocator_reserve_fraction.to_string());
    }
    if o.allocator != crate::estimate::scenario::AllocConf::default() {
        put("--alloc-conf", o.allocator.to_string());
    }
}

/// The parallel layout's settings away from one GPU's.
fn parallel_flags(v: &mut Vec<Flag>, sc: &Scenario) {
    let mut put = |k: &'static str, val: String| v.push((k, Some(val)));
    let p = sc.parallel;
    for (k, val) in [("--dp", p.dp), ("--tp", p.tp), ("--pp", p.pp), ("--cp", p.cp), ("--ep", p.ep)] {
        if val != 1 {
            put(k, val.to_string());
        }
    }
    if p.zero != 0 {
        put("--zero", p.zero.to_string());
    }
    if let Some(f) = p.fsdp {
        put("--fsdp", f.name().into());
    }
    if p.offload != Offload::None {
        put("--offload", p.offload.name().into());
    }
    if p.micro_batches != 0 {
        put("--micro-batches", p.micro_batches.to_string());
    }
    if p.virtual_stages != 1 {
        put("--virtual-stages", p.virtual_stages.to_string());
    }
    if p.node_size() != 8 {
        put("--gpus-per-node", p.node_size().to_string());
    }
    if let Some(n) = p.nccl_bytes {
        put("--nccl-mib", (n >> 20).to_string());
    }
}

/// The `--model` value for a model: its preset name, or `<name>` for the user's own config
/// (which the reader names by its path).
pub fn model_arg(m: &crate::model::ModelSpec) -> String {
    crate::model::preset::preset_name(m).map_or_else(|| format!("<{}>", m.name), str::to_owned)
}

/// The flags as command-line words.
pub fn words(flags: &[Flag]) -> Vec<String> {
    let mut out = Vec::with_capacity(flags.len() * 2);
    for (k, v) in flags {
        out.push((*k).to_owned());
        if let Some(v) = v {
            out.push(v.clone());
        }
    }
    out
}

/// The flags as one line (`--batch 4 --zero 3`), values quoted where a shell would split them.
pub fn line(flags: &[Flag]) -> String {
    words(flags)
        .into_iter()
        .map(|w| if w.contains([' ', '{', '}', '"', '\'']) { format!("'{w}'") } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The flags of `to` that differ from `from`'s (changed or added; a flag `to` drops is set back
/// to its command-line default), for a row that says what it changes.
pub fn changed(from: &[Flag], to: &[Flag]) -> Vec<Flag> {
    let mut out: Vec<Flag> = to.iter().filter(|f| !from.contains(f)).cloned().collect();
    for (k, _) in from {
        if to.iter().any(|(k2, _)| k2 == k) {
            continue;
        }
        let back = match *k {
            "--dp" | "--tp" | "--pp" | "--cp" | "--ep" | "--virtual-stages" => Some("1"),
            "--zero" | "--micro-batches" => Some("0"),
            "--offload" => Some(Offload::None.name()),
            "--loss" => Some(LossKeyword::Hf.name()),
            "--adapter-dtype" => Some(AdapterDtype::Fp32.name()),
            "--grad-accum" => Some("1"),
            "--base-quant" => Some(BaseQuant::None.name()),
            "--attention" => Some(AttentionImpl::Sdpa.name()),
            "--gpus-per-node" => Some("8"),
            "--context-mib" | "--workspace-mib" => Some("(the card's default)"),
            _ => None,
        };
        // a switch turned off, or a setting with no default to name: say it is dropped
        out.push((k, Some(back.unwrap_or("(dropped)").to_owned())));
    }
    out
}
