//! Renderings of an estimate: the stable JSON object of `vramscope estimate --json`, and a readable
//! text table.

use crate::estimate::{Estimate, Mode, Scenario};
use crate::gpu::Gpu;
use crate::i18n::Lang;
use crate::text;
use crate::units::{GIB, MIB};
use serde_json::{Map, Value, json};

/// JSON schema version of the CLI output.
pub const JSON_SCHEMA: u64 = 1;

/// Fit of an estimate on a GPU.
#[derive(Clone, Debug)]
pub struct FitInfo {
    /// The GPU.
    pub gpu: Gpu,
    /// Does `total` fit?
    pub fits: bool,
    /// Largest micro-batch that fits (`None`: not even batch 1).
    pub max_batch: Option<u64>,
    /// Longest sequence that fits at the scenario's micro-batch, up to the model's context
    /// length (`None`: not even one token).
    pub max_seq: Option<u64>,
}

/// The `--json` object. Keys are stable; new keys may be added.
pub fn to_json(sc: &Scenario, e: &Estimate, fit: Option<&FitInfo>, notes: &[String]) -> Value {
    let mut acts = Map::new();
    for (cat, bytes) in e.activation_breakdown.nonzero() {
        acts.insert(cat.key().to_owned(), json!(bytes));
    }
    let moments: Vec<Value> = e
        .moments
        .iter()
        .map(|m| {
            json!({
                "phase": m.phase,
                "what": m.what,
                "block": m.block,
                "bytes": m.alive.total(),
                "alive": m.alive,
            })
        })
        .collect();
    let mut v = json!({
        "schema": JSON_SCHEMA,
        "model": {
            "name": sc.model.name,
            "n_params": e.n_params,
            "rank_params": e.rank_params,
            "trainable_params": e.trainable_params,
            "family": family_key(sc),
            "validated": validated(sc),
            "model_type": sc.model.transformer().and_then(|t| t.hf_model_type.clone().or_else(|| t.unvalidated_type.clone()))
                .or_else(|| sc.model.net().map(|n| n.hf_model_type.clone())),
            "weight_format": sc.model.transformer().and_then(|t| t.quant).map(|q| q.label()),
        },
        "scenario": {
            "mode": sc.mode,
            "batch": sc.batch,
            "seq": sc.seq,
            "image": image_json(sc),
            "images": images_json(sc),
            "precision": sc.precision.name(),
            "optimizer": sc.optimizer.name(),
            "attention": sc.attention,
            "checkpoint": sc.checkpointing.to_string(),
            "lora": sc.lora.map(|l| json!({"rank": l.rank, "targets": l.targets.names(), "dropout": l.dropout})),
            "base_quant": sc.base_quant,
            "stack": {
                "framework": sc.stack.framework.map(|f| f.name()),
                "loss": sc.stack.loss.to_string(),
                "optimizer_in_backward": sc.stack.optimizer_in_backward,
                "adapter_dtype": sc.stack.adapter_dtype,
                "bnb_compute_dtype": sc.stack.bnb_compute_dtype.map(|d| d.name()),
                "grad_accum": sc.stack.grad_accum.max(1),
                "keep_grads": sc.stack.keep_grads,
                "compiled_loss": sc.stack.compiled_loss,
                "model_code": sc.stack.model_code.name(),
                "torch": sc.stack.torch.to_string(),
                "bitsandbytes": sc.stack.bnb,
                "fsdp_impl": sc.stack.fsdp.name(),
            },
            // the layout the per-GPU figures are for (degrees, ZeRO / FSDP, offload, NCCL)
            "parallel": sc.parallel,
            "module_loading": sc.overhead.module_loading,
        },
        "bytes": {
            "parameters": e.parameters,
            "gradients": e.gradients,
            "optimizer_states": e.optimizer_states,
            "activations": e.activations,
            "kv_cache": e.kv_cache,
            // DeepSpeed ZeRO's gradient-reduction buckets (estimate::deepspeed)
            "zero_buckets": e.zero_buckets,
            "temporaries_at_peak": e.peak.alive.temporaries,
            "peak_allocated": e.peak_allocated,
            "reserved": e.reserved,
            "overhead": e.overhead,
            "overhead_terms": overhead_terms(sc, e),
            "paged_optimizer_states": e.paged_optimizer_states,
            "total": e.total,
            // nvidia-smi with every paged state resident (the card permitting)
            "total_with_paged_states": e.total + e.paged_optimizer_states,
        },
        "activations_by_kind": acts,
        // the process groups whose NCCL communicators the default NCCL term counts
        "nccl_communicators": sc.parallel.communicators(),
        "peak_phase": e.peak.phase,
        "peak_moment": e.peak.what,
        "peak_block": e.peak.block,
        "peak_by_phase": e.phase_peaks,
        "at_peak": e.peak.alive,
        "moments": moments,
        "notes": notes.iter().cloned().chain(caveats(sc)).collect::<Vec<_>>(),
    });
    if let (Some(g), Some(obj)) = (e.generate, v.as_object_mut()) {
        if let Some(scn) = obj.get_mut("scenario").and_then(|x| x.as_object_mut()) {
            scn.insert("new_tokens".into(), json!(sc.new_tokens));
        }
        obj.insert(
            "generate".into(),
            json!({
                "engine": "hf-generate",
                "new_tokens": g.new_tokens,
                "cached_tokens": g.cached_tokens,
                "kv_cache_after_prompt": g.kv_prefill,
                "kv_cache_at_end": g.kv_final,
                "last_token_logits": g.logits,
                "last_token_logits_fp32": g.logits_fp32,
                "cache_cat_transient": g.cat_transient,
                "decode_attention_transient": g.decode_attention,
            }),
        );
    }
    if let (Some(f), Some(obj)) = (fit, v.as_object_mut()) {
        obj.insert(
            "gpu".into(),
            json!({"id": f.gpu.id, "name": f.gpu.name, "memory_bytes": f.gpu.memory_bytes(), "cuda_total_bytes": f.gpu.capacity(), "cuda_total_published": f.gpu.cuda_total().1,
                "capacity_bytes": f.gpu.capacity()}),
        );
        obj.insert("fits".into(), json!(f.fits));
        obj.insert("max_batch".into(), json!(f.max_batch));
        insert_max_seq(obj, sc, f);
    }
    if let (Some(t), Some(model)) = (sc.model.traced(), v.get_mut("model").and_then(|m| m.as_object_mut())) {
        model.insert("trace".into(), trace_json(sc, t));
    }
    v
}

/// What a traced model's trace says: where it came from, its dims (the values traced, the
/// value used, whether it is traced there), and what does not extrapolate.
fn trace_json(sc: &Scenario, t: &crate::trace::TracedModel) -> Value {
    let dims: Vec<Value> = t
        .dims
        .iter()
        .map(|d| {
            let v = sc.dim(&d.name).unwrap_or(d.first());
            json!({"name": d.name, "value": v, "traced": d.values, "at_traced_value": d.values.contains(&v),
                   "checked_at_held_out_values": d.checked(), "traced_values_only": d.traced_only})
        })
        .collect();
    json!({
        "model_file": t.model_file,
        "torch": t.torch,
        "precision": t.precision,
        "trainable": t.trainable,
        "dims": dims,
        "extrapolated": traced_point(sc) == Some(false),
        "not_multilinear": t.misfits,
        "checkpoint_blocks": t.checkpoint.blocks,
        "checkpointed_calls": t.checkpoint.regions.len(),
        "kept_by_module": crate::estimate::traced_modules(sc),
    })
}

/// The longest sequence that fits and the limit searched; a vision model's knob is its image
/// side: the tokens of that square image, and the side (`max_image_side`).
fn insert_max_seq(obj: &mut serde_json::Map<String, Value>, sc: &Scenario, f: &FitInfo) {
    match sc.model.patches() {
        // a vision model's knob is its image side: the tokens of that square image, and the side
        Some(p) => {
            let tokens = |side: u64| p.tokens(crate::model::pixels::ImageSize::square(side));
            obj.insert("max_seq".into(), json!(f.max_seq.map(tokens)));
            obj.insert("max_image_side".into(), json!(f.max_seq));
            obj.insert("seq_limit".into(), json!(tokens(crate::fit::seq_limit(sc))));
        }
        None => {
            obj.insert("max_seq".into(), json!(f.max_seq));
            obj.insert("seq_limit".into(), json!(crate::fit::seq_limit(sc)));
        }
    }
}

/// A vision model's image: its size, its tokens and how they are made (`null` for text).
fn image_json(sc: &Scenario) -> Value {
    let (Some(p), Some(i)) = (sc.model.patches(), sc.image_size()) else {
        return Value::Null;
    };
    json!({
        "height": i.height,
        "width": i.width,
        "patch": p.patch,
        "patches": p.patches(i),
        "prefix_tokens": p.prefix,
        "tokens": p.tokens(i),
        "positions_interpolated": p.interpolates(i),
        "describe": p.describe(i),
    })
}

/// A vision-language model's images: how many a sample, their size, the tokens each makes and
/// how, the text tokens beside them (`null` without images).
fn images_json(sc: &Scenario) -> Value {
    let Some(v) = sc.vlm_images() else {
        return Value::Null;
    };
    let r = v.rule.resized(v.size);
    json!({
        "count": v.count,
        "height": v.size.height,
        "width": v.size.width,
        "resized_height": r.height,
        "resized_width": r.width,
        "tokens_per_image": v.per_image(),
        "image_tokens": v.tokens(),
        "text_tokens": sc.text_tokens(),
        "pixel_values_bytes": sc.pixel_values_bytes(),
        "describe": v.describe(),
    })
}

fn g(bytes: u64) -> String {
    if bytes as f64 >= GIB / 10.0 {
        format!("{:>9.2} GiB", bytes as f64 / GIB)
    } else if bytes as f64 >= MIB / 10.0 || bytes == 0 {
        format!("{:>9.1} MiB", bytes as f64 / MIB)
    } else {
        // ids and small tables: "0.0 MiB" would read as nothing at all
        format!("{:>9.1} KiB", bytes as f64 / 1024.0)
    }
}

/// The family the activation model follows (`"layer_table"` for a layer table).
pub fn family_key(sc: &Scenario) -> String {
    if sc.model.traced().is_some() {
        return "traced".into();
    }
    if let Some(n) = sc.model.net() {
        return n.family_id().into();
    }
    match sc.model.transformer() {
        Some(t) => serde_json::to_value(t.family)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        None => "layer_table".into(),
    }
}

/// `model_type`s that map onto a validated family's rules but were not measured themselves.
const UNMEASURED_TYPES: &[&str] = &["qwen2_moe", "granitemoeshared"];

/// Does the model have recurrent mixers whose inference working set is not measured (Mamba,
/// Mamba2, gated DeltaNet; LFM2's short convolutions and Kimi's KDA are measured)?
fn stateful(t: &crate::model::TransformerSpec) -> bool {
    let kda = t.delta.is_some_and(|d| d.kda);
    (t.ssm_layers_among(t.num_layers) > 0 && !kda)
        || t.layers_with(crate::model::layer::MAMBA, t.num_layers) > 0
}

/// Has this architecture's activation model been checked against measured PyTorch runs?
pub fn validated(sc: &Scenario) -> bool {
    if let Some(at) = traced_point(sc) {
        // the recorded step itself where every dim was traced; fitted shapes elsewhere
        return at;
    }
    if let crate::model::Architecture::Table(t) = &sc.model.arch {
        // a table read from safetensors alone gives parameters, not activations
        return !activations_missing(t);
    }
    if sc.mode == crate::estimate::Mode::Infer
        && sc.model.transformer().is_some_and(|t| !crate::families::inference_validated(t.family))
    {
        // ModernBERT's rotary in fp32 (copies of q and k, `rotate_half`'s halves and `cat`) is
        // not in the inference working set: measured 14 % over it on a tiny model
        return false;
    }
    if sc.mode == crate::estimate::Mode::Infer && sc.model.transformer().is_some_and(stateful) {
        // the recurrent families' training and cached states are measured; their inference
        // working set is not (LFM2's short convolution is: its inference rows agree)
        return false;
    }
    if vlm_checkpointed(sc) {
        return false;
    }
    sc.model.transformer().is_none_or(|t| {
        crate::families::validated(t.family)
            && t.unvalidated_type.is_none()
            // a part the family's rules do not walk (Nemotron-H's latent experts)
            && t.unmodelled.is_none()
            && !t.hf_model_type.as_deref().is_some_and(|m| UNMEASURED_TYPES.contains(&m))
    })
}

/// A vision-language step with images under checkpointing: transformers'
/// `enable_input_require_grads` hooks the frozen tower's patch embedding too (Qwen2.5-VL's,
/// LLaVA's CLIP; not Qwen3-VL's, which has none), so the tower builds a graph and keeps
/// activations: measured, not modelled.
fn vlm_checkpointed(sc: &Scenario) -> bool {
    sc.mode == crate::estimate::Mode::Train
        && !matches!(
            sc.checkpointing,
            crate::estimate::Checkpointing::None | crate::estimate::Checkpointing::Selective
        )
        && sc.vlm_images().is_some()
        && sc
            .model
            .transformer()
            .and_then(|t| t.vision)
            .is_some_and(|v| v.kind != crate::model::VisionKind::Qwen3Vl)
}

/// A layer table none of whose layers keeps or outputs anything (a safetensors header read
/// without its config.json).
fn activations_missing(t: &crate::model::LayerTable) -> bool {
    !t.layers.is_empty()
        && t.layers.iter().all(|l| {
            l.saved_elems_per_sample == 0 && l.output_elems_per_sample == 0 && l.fixed_bytes_per_sample == 0
        })
}

/// What the scenario relies on that has not been measured (said next to the numbers).
pub fn caveats(sc: &Scenario) -> Vec<String> {
    use crate::estimate::{BaseQuant, Optimizer};
    use crate::model::LinearRole;
    let mut out = Vec::new();
    let train = sc.mode == crate::estimate::Mode::Train;
    if let Some(m) = sc
        .model
        .transformer()
        .and_then(|t| t.hf_model_type.as_deref())
        .filter(|m| UNMEASURED_TYPES.contains(m))
    {
        out.push(format!("model_type \"{m}\" follows its family's rules but has not been measured itself"));
    }
    if let Some(u) = sc.model.transformer().and_then(|t| t.unmodelled.as_ref()) {
        out.push(u.clone());
    }
    if let Some(l) = &sc.lora
        && sc.model.transformer().is_some_and(|t| t.moe.is_some())
        && [LinearRole::Gate, LinearRole::Up, LinearRole::Down].iter().any(|r| l.targets.has(*r))
    {
        out.push("the routed experts are fused 3-D parameters in transformers 5, which PEFT does not wrap: the MLP adapters sit on the dense and shared-expert MLPs only".into());
    }
    if train && sc.lora.is_some() && sc.base_quant != BaseQuant::None {
        out.push(
            "not validated against measurement: the QLoRA base (bitsandbytes needs a GPU to measure)".into(),
        );
    }
    if !train && sc.base_quant == BaseQuant::Int8 {
        out.push("not modelled: LLM.int8()'s own inference transients (its int8 matmul's casts and outlier columns); the weights are counted".into());
    }
    if sc.stack.model_code.litgpt()
        && sc.model.transformer().is_some_and(|t| !crate::families::litgpt_walks(t.family))
    {
        out.push(format!(
            "--model-code {}: litgpt's own code is walked for Llama-like, Phi and GPT-NeoX models only; this family is walked as transformers runs it",
            sc.stack.model_code.name()
        ));
    }
    if train
        && sc.lora.is_some()
        && matches!(sc.base_quant, crate::estimate::BaseQuant::Nf4 | crate::estimate::BaseQuant::Nf4NoDq)
        && matches!(
            sc.stack.framework,
            Some(crate::estimate::Framework::HfTrainer | crate::estimate::Framework::Axolotl)
        )
        && !sc.precision.is_amp()
        && sc.precision != crate::units::Precision::Fp32
    {
        out.push("PEFT's prepare_model_for_kbit_training (which TRL's SFTTrainer calls for a 4-bit model) casts every non-quantized parameter — embeddings, norms, LM head — to fp32: with it a Trainer run with bf16=True is --precision bf16-amp, one without autocast --precision fp32 --bnb-compute-dtype bf16".into());
    }
    if crate::estimate::fsdp::accumulates_unsharded(sc) {
        out.push("FSDP1 under no_sync while gradients accumulate: every unit's gradient is kept unsharded until the micro-batch that syncs (accelerate's sync_each_batch=True, or FSDP2 as torchtune runs it, --fsdp-impl fsdp2, keeps only the shard)".into());
    }
    if crate::estimate::fsdp::block_weights_grad(sc) {
        out.push("FSDP1 with the LoRA adapters inside each block's flat parameter (use_orig_params=True): the frozen weights take gradients too, and their Linears keep their inputs; PEFT's fsdp_auto_wrap_policy (--fsdp-impl fsdp1) wraps the adapters apart".into());
    }
    if train && sc.stack.loss == crate::estimate::Loss::FusedLinearCe {
        out.push("not validated against measurement: the fused linear cross-entropy (Liger's grad_input kept from the forward; its early weight gradient is counted at the head's backward)".into());
    }
    if train && sc.optimizer.paged() {
        out.push("paged optimizer: its states live in CUDA unified memory, outside PyTorch's allocator (max_memory_allocated) and outside the total the card must hold; nvidia-smi adds the part that is resident, up to the card, and the driver pages the rest to host memory (slower optimizer steps, not an OOM)".into());
    }
    if train
        && matches!(
            sc.optimizer,
            Optimizer::Adafactor
                | Optimizer::Adamw8bit
                | Optimizer::PagedAdamw8bit
                | Optimizer::PagedAdamw32bit
        )
    {
        out.push(format!("not validated against measurement: the {} optimizer step", sc.optimizer.name()));
    }
    if train && sc.precision.is_amp() && sc.model.transformer().is_some_and(|t| t.moe.is_some()) {
        out.push("not validated against measurement: MoE layers under autocast".into());
    }
    if sc.vlm_images().is_some() && !train {
        out.push(format!(
            "not in the estimate: the batch's pixel values ({:.1} MiB in fp32) and the vision tower's forward over them, which runs before the decoder (its working set can be the inference peak on small text)",
            sc.pixel_values_bytes() as f64 / 1_048_576.0
        ));
    }
    if sc.model.transformer().is_some_and(|t| t.vision.is_some()) && train {
        out.push(match (sc.vlm_images(), sc.image_rule()) {
            (Some(_), _) => format!(
                "the vision tower and projector are frozen: counted, no gradient, {}; not in the estimate: the batch's pixel values ({:.1} MiB in fp32) and the tower's forward over them",
                if vlm_checkpointed(sc) {
                    "but under checkpointing the tower builds a graph and keeps activations (not modelled: see the UNVALIDATED line)"
                } else {
                    "nothing kept for backward"
                },
                sc.pixel_values_bytes() as f64 / 1_048_576.0
            ),
            (None, Some(_)) => "a text-only step: the vision tower and projector are counted but get no gradient (--images N --image-size HxW adds images)".into(),
            (None, None) => "the vision tower and projector are counted but get no gradient in a text-only step (this model's image tokens are not modelled)".into(),
        });
    }
    out
}

/// One line naming the family and whether it is validated (CLI text, reports, the GUI headline).
pub fn validation_line(sc: &Scenario) -> String {
    if let Some(t) = sc.model.traced() {
        let checked = t.dims.iter().filter(|d| d.values.len() >= 2).all(|d| d.checked());
        return match traced_point(sc) {
            Some(true) => {
                format!("traced model at a traced point: the recorded step replayed ({})", t.describe())
            }
            _ => format!(
                "traced model, EXTRAPOLATED: every tensor's shape fitted over the traced grid{} and evaluated here ({})",
                if checked {
                    " and checked at its held-out points"
                } else {
                    " (two values of a dim: not checked at a third)"
                },
                t.describe()
            ),
        };
    }
    if let Some(n) = sc.model.net() {
        return format!(
            "{} family (vision backbone; its ops walked op by op from the config, validated against measured PyTorch runs)",
            n.family_id()
        );
    }
    match sc.model.transformer() {
        None if !validated(sc) => {
            "layer table from a safetensors header alone: parameters, gradients and optimizer states exact, activations NOT modelled (no config.json)".into()
        }
        None => "layer table (parameters and activations as given)".into(),
        // SigLIP's two towers: the image side walked, the text tower counted
        Some(t) if t.unvalidated_type.is_some() && t.patches.is_some() => format!(
            "UNVALIDATED architecture (model_type \"{}\"): the vision tower follows the {} family's rules, the text tower's parameters are counted but its activations are not modelled",
            t.unvalidated_type.as_deref().unwrap_or_default(),
            family_key(sc)
        ),
        // a multimodal wrapper whose text model has a family (Llama 4): the text part follows it
        Some(t) if t.unvalidated_type.is_some() && t.family != crate::families::generic() => format!(
            "UNVALIDATED architecture (model_type \"{}\"): the text model follows the {} family's rules, the rest (images) is not modelled; parameters follow the config",
            t.unvalidated_type.as_deref().unwrap_or_default(),
            family_key(sc)
        ),
        Some(t) if t.unvalidated_type.is_some() => format!(
            "UNVALIDATED architecture (model_type \"{}\"): estimated as the generic Llama-style decoder; parameters follow the config (the weights' header where one was read), activations are an approximation",
            t.unvalidated_type.as_deref().unwrap_or_default()
        ),
        Some(_) if vlm_checkpointed(sc) => format!(
            "UNVALIDATED under checkpointing with images: transformers' enable_input_require_grads hooks the frozen vision tower's patch embedding, so the tower builds a graph and keeps activations (measured, not modelled); the {} family's decoder over text and image tokens is measured",
            family_key(sc)
        ),
        Some(t) if !validated(sc) && sc.mode == crate::estimate::Mode::Infer && stateful(t) => format!(
            "UNVALIDATED in inference: the {} family's training is measured, its inference (the recurrent mixers' state and working set) is not",
            family_key(sc)
        ),
        Some(t) if !validated(sc)
            && sc.mode == crate::estimate::Mode::Infer
            && !crate::families::inference_validated(t.family) =>
        {
            format!(
                "UNVALIDATED in inference: the {} family's training is measured, its inference working set (the rotary's fp32 copies) is not",
                family_key(sc)
            )
        }
        Some(t) if !validated(sc) => format!(
            "UNVALIDATED model_type \"{}\": estimated with the {} family's rules, not measured itself",
            t.hf_model_type.as_deref().unwrap_or_default(),
            family_key(sc)
        ),
        Some(_) => {
            format!("family {} (activation rules validated against measured PyTorch runs)", family_key(sc))
        }
    }
}

/// The model type the GUI flags as unvalidated, if any.
pub fn unvalidated_kind(sc: &Scenario, lang: crate::i18n::Lang) -> Option<String> {
    if traced_point(sc) == Some(false) {
        return Some(
            lang.pick("traced model: sizes extrapolated from the trace", "追踪模型：尺寸由追踪外推").into(),
        );
    }
    let t = sc.model.transformer()?;
    if validated(sc) {
        return None;
    }
    let kind = t.unvalidated_type.clone().or_else(|| t.hf_model_type.clone()).unwrap_or_default();
    if vlm_checkpointed(sc) {
        let why = lang.pick("the frozen vision tower under checkpointing", "梯度检查点下冻结的视觉塔");
        return Some(format!("{kind}: {why}"));
    }
    Some(kind)
}

/// The scenario's settings the first line does not name: LoRA and its base, the KV-cache dtype,
/// the layout (HSDP with its shard and replicate groups), the allocator.
pub fn settings_line(sc: &Scenario) -> String {
    let mut parts = Vec::new();
    // the method by its one phrase ("QLoRA r=16, NF4 base (double quant)"), then the adapters
    if sc.lora.is_some() || sc.base_quant != crate::estimate::BaseQuant::None {
        parts.push(sc.method_name_in(crate::i18n::Lang::En));
    }
    if let Some(l) = sc.lora {
        let drop = if l.dropout > 0.0 { format!(", dropout {}", l.dropout) } else { String::new() };
        parts.push(format!("adapters on {}{drop}", l.targets.names()));
    }
    // who quantizes a 4-bit base, where it is not bitsandbytes' current code
    if matches!(sc.base_quant, crate::estimate::BaseQuant::Nf4 | crate::estimate::BaseQuant::Nf4NoDq) {
        match sc.stack.bnb {
            crate::estimate::Bnb::Lightning => parts.push(
                "by Lightning's bitsandbytes plugin (every Linear, the LM head included, from fp16)".into(),
            ),
            crate::estimate::Bnb::Before0_43 => parts.push("by bitsandbytes before 0.43 (from fp16)".into()),
            crate::estimate::Bnb::Current => {}
        }
    }
    if let (Mode::Infer, Some(d)) = (sc.mode, sc.kv_cache_dtype) {
        parts.push(format!("KV cache in {}", d.name()));
    }
    let p = sc.parallel;
    if p.world() > 1 || p.offload != crate::estimate::Offload::None {
        let mut l = format!("dp {} x tp {} x pp {} x cp {}", p.dp, p.tp, p.pp, p.cp);
        if p.ep > 1 {
            l += &format!(" (ep {})", p.ep);
        }
        if p.sp {
            l += " + SP";
        }
        l += &format!(", ZeRO-{}", p.effective_zero());
        if let Some(m) = p.fsdp {
            l += &format!(" (FSDP {}, {})", crate::flags::fsdp_name(m), sc.stack.fsdp.describe());
            if m == crate::estimate::FsdpMode::HybridShard {
                // HSDP shards within a node and replicates across: the states divide by the shard group
                l += &format!(
                    ", sharded over {} GPUs and replicated {} times",
                    p.shard_degree(),
                    p.dp.div_ceil(p.shard_degree().max(1))
                );
            }
        }
        if p.offload != crate::estimate::Offload::None {
            l += &format!(
                ", offload {}",
                match (p.offload, p.fsdp) {
                    (crate::estimate::Offload::Optimizer, _) => "optimizer",
                    (_, Some(_)) => "params (FSDP CPU offload)",
                    _ => "params (NVMe)",
                }
            );
        }
        parts.push(l);
    }
    let a = sc.overhead.allocator;
    if a != crate::estimate::scenario::AllocConf::default() {
        parts.push(format!("PYTORCH_CUDA_ALLOC_CONF={a}"));
    }
    parts.join("; ")
}

/// The trainable count beside the model's: under TP / PP / EP a rank holds and trains only its
/// slice, so the count says whose it is.
fn trainable_text(e: &Estimate) -> String {
    if e.rank_params == e.n_params {
        format!("{} trainable", human_count(e.trainable_params))
    } else {
        format!(
            "{} on this GPU's rank, {} of them trainable",
            human_count(e.rank_params),
            human_count(e.trainable_params)
        )
    }
}

/// Readable table for a terminal.
pub fn to_text(sc: &Scenario, e: &Estimate, fit: Option<&FitInfo>, notes: &[String]) -> String {
    let mut s = String::new();
    text_header(&mut s, sc, e);
    text_components(&mut s, e);
    text_modules(&mut s, sc);
    text_peak(&mut s, e);
    text_overhead(&mut s, sc, e);
    if let Some(f) = fit {
        text_fit(&mut s, sc, e, f);
    }
    let all: Vec<String> = notes.iter().cloned().chain(caveats(sc)).collect();
    for n in &all {
        s += &format!("\n  note: {n}");
    }
    if !all.is_empty() {
        s.push('\n');
    }
    s
}

/// "seq 2048", "prompt 512", or a vision model's "384×384 image (577 tokens)".
pub fn shape_text(sc: &Scenario) -> String {
    if let Some(v) = sc.vlm_images() {
        let what = if sc.new_tokens > 0 { "prompt" } else { "seq" };
        return format!(
            "{what} {} ({} text + {} × {} image{} of {} tokens)",
            sc.seq,
            sc.text_tokens(),
            v.count,
            v.size,
            if v.count == 1 { "" } else { "s" },
            v.per_image()
        );
    }
    if let Some(t) = sc.model.traced() {
        return traced_dims_text(sc, t);
    }
    match sc.image_size() {
        Some(i) if sc.model.net().is_some() => format!("{i} image"),
        Some(i) => format!("{i} image ({} tokens)", sc.seq),
        None if sc.new_tokens > 0 => format!("prompt {}", sc.seq),
        None => format!("seq {}", sc.seq),
    }
}

/// A traced model's dims other than its batch: "height 512, width 512" ("no dims").
fn traced_dims_text(sc: &Scenario, t: &crate::trace::TracedModel) -> String {
    let v: Vec<String> = t
        .dims
        .iter()
        .filter(|d| d.name != "batch")
        .map(|d| format!("{} {}", d.name, sc.dim(&d.name).unwrap_or(d.first())))
        .collect();
    if v.is_empty() { "its traced inputs".into() } else { v.join(", ") }
}

/// The checkpointing, with a traced model's blocks: "full (BasicTransformerBlock, ResnetBlock2D)".
fn checkpoint_text(sc: &Scenario) -> String {
    match sc.model.traced() {
        Some(t) if sc.checkpointing == crate::estimate::Checkpointing::Full => {
            format!("{} ({})", sc.checkpointing, t.checkpoint.blocks.join(", "))
        }
        _ => sc.checkpointing.to_string(),
    }
}

/// Is every dim of a traced scenario one of the values traced (the step replays what was
/// recorded there, no size extrapolated)?
pub fn traced_point(sc: &Scenario) -> Option<bool> {
    let t = sc.model.traced()?;
    Some(t.dims.iter().all(|d| sc.dim(&d.name).is_none_or(|v| d.values.contains(&v))))
}

/// The table's head: the scenario in a line, its validation, generate's terms, the stack, the
/// checkpoint's weights and the settings.
fn text_header(s: &mut String, sc: &Scenario, e: &Estimate) {
    let what = sc.mode_label();
    // a convolutional network has no attention to name
    let attention = if sc.model.net().is_some() || sc.model.traced().is_some() {
        String::new()
    } else {
        format!(", attention {}", sc.attention.name())
    };
    *s += &match sc.mode {
        Mode::Train => format!(
            "{} — {} params ({}), {what}, batch {} x {}, {}, {}{attention}, checkpoint {}\n",
            sc.model.name,
            human_count(e.n_params),
            trainable_text(e),
            sc.batch,
            shape_text(sc),
            sc.precision,
            sc.optimizer.name(),
            checkpoint_text(sc),
        ),
        Mode::Infer => format!(
            "{} — {} params, {what}, batch {} x {}, {}{attention}\n",
            sc.model.name,
            human_count(e.n_params),
            sc.batch,
            shape_text(sc),
            sc.precision,
        ),
    };
    *s += &format!("  {}\n", validation_line(sc));
    if let Some(t) = e.generate {
        *s += &format!(
            "  generate: {} new tokens after the {}-token prompt; KV cache {} after the prompt, {} at the end ({} tokens); last-token logits {} (+ fp32 copies {} each)\n",
            t.new_tokens,
            sc.seq,
            g(t.kv_prefill).trim(),
            g(t.kv_final).trim(),
            t.cached_tokens,
            g(t.logits).trim(),
            g(t.logits_fp32).trim(),
        );
    }
    if sc.mode == Mode::Train && !sc.stack.describe().is_empty() {
        *s += &format!("  stack: {}\n", sc.stack.describe());
    }
    if let Some(q) = sc.model.transformer().and_then(|t| t.quant) {
        *s += &format!("  checkpoint weights: {}\n", q.label());
    }
    let set = settings_line(sc);
    if !set.is_empty() {
        *s += &format!("  settings: {set}\n");
    }
}

/// The components per GPU and the saved activations by category.
fn text_components(s: &mut String, e: &Estimate) {
    *s += "\n  component                     per GPU\n";
    let rows = [
        ("parameters", e.parameters),
        ("gradients", e.gradients),
        ("optimizer states", e.optimizer_states),
        ("activations (saved)", e.activations),
        ("KV cache", e.kv_cache),
    ];
    for (name, b) in rows {
        if b > 0 {
            *s += &format!("  {name:<26}{}\n", g(b));
        }
    }
    for (cat, b) in e.activation_breakdown.nonzero() {
        *s += &format!("    · {:<22}{}\n", cat.label(), g(b));
    }
    if e.zero_buckets > 0 {
        // DeepSpeed's gradient-reduction buckets (estimate::deepspeed)
        *s += &format!("  {:<26}{}   (DeepSpeed's reduce buckets)\n", "ZeRO buckets", g(e.zero_buckets));
    }
}

/// A traced model's saves by module, the largest five.
fn text_modules(s: &mut String, sc: &Scenario) {
    let kept = crate::estimate::traced_modules(sc);
    if kept.is_empty() {
        return;
    }
    let more =
        if kept.len() > 5 { format!(" (5 of {}; --json lists all)", kept.len()) } else { String::new() };
    *s += &format!("  kept by module{more}\n");
    let labels: Vec<String> = kept.iter().take(5).map(|k| module_label(k, Lang::En)).collect();
    let w = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0).clamp(22, 60);
    for (k, label) in kept.iter().zip(&labels) {
        *s += &format!("    · {label:<w$}{:>10}\n", g(k.bytes));
    }
}

/// "up_blocks.3", "transformer_blocks.0-18 (19 blocks)", "(outside any module: inputs, loss)".
pub fn module_label(k: &crate::trace::modules::ModuleKept, lang: Lang) -> String {
    match (k.module.as_str(), k.blocks) {
        ("", _) => lang.pick("(outside any module: inputs, loss)", "（不在任何模块内：输入、损失）").into(),
        (m, 1) => m.into(),
        (m, n) => text!(lang, "{m} ({n} blocks)", "{m}（{n} 个块）"),
    }
}

/// The peak allocated and what is alive then.
fn text_peak(s: &mut String, e: &Estimate) {
    let when = e.peak.describe();
    *s += &format!("  {:<26}{}   (at {when}; what is alive then:)\n", "peak allocated", g(e.peak_allocated));
    let a = e.peak.alive;
    for (name, b) in [
        ("parameters", a.parameters),
        ("gradients", a.gradients),
        ("optimizer states", a.optimizer_states),
        ("activations alive", a.activations),
        ("KV cache", a.kv_cache),
        ("temporaries", a.temporaries),
        ("ZeRO buckets", a.zero_buckets),
    ] {
        if b > 0 {
            *s += &format!("    · {name:<22}{}\n", g(b));
        }
    }
}

/// Reserved memory, the CUDA context, NCCL and allocator terms, the total and paged states.
fn text_overhead(s: &mut String, sc: &Scenario, e: &Estimate) {
    if let Some(r) = e.reserved {
        // on a card the step does not fit, the replay stops at the card: its reserved bytes are
        // what the card held when it ran out, not what the step would reserve
        let why = if r < e.peak_allocated {
            "(the card ran out in the allocator replay, before the peak)"
        } else {
            "(the caching allocator replayed over the step)"
        };
        *s += &format!("  {:<26}{}   {why}\n", "reserved (max)", g(r));
    }
    *s += &format!("  {:<26}{}\n", "CUDA ctx + allocator", g(e.overhead));
    let x = crate::estimate::context::outside(sc);
    // the default NCCL term says how it is made up
    let nccl_note = match (sc.parallel.nccl_bytes, sc.parallel.communicators()) {
        (None, n) if n > 0 => format!(
            "   ({} × {} MiB, --nccl-mib for a measured total)",
            crate::units::count(n, "communicator"),
            crate::estimate::parallel::NCCL_PER_COMMUNICATOR >> 20
        ),
        _ => String::new(),
    };
    let terms = [
        (
            format!("CUDA context ({})", sc.overhead.module_loading),
            x.cuda_context + x.eager_kernels,
            String::new(),
        ),
        ("NCCL buffers".to_owned(), x.nccl, nccl_note),
        (
            if e.reserved.is_some() { "allocator cache" } else { "workspace + reserve" }.to_owned(),
            e.overhead.saturating_sub(x.total()),
            String::new(),
        ),
    ];
    for (name, b, note) in terms.iter().filter(|t| t.1 > 0) {
        *s += &format!("    · {name:<22}{}{note}\n", g(*b));
    }
    *s += &format!("  {:<26}{}\n", "total (nvidia-smi)", g(e.total));
    if e.paged_optimizer_states > 0 {
        *s += &format!(
            "  {:<26}{}   (unified memory: nvidia-smi adds what is resident, up to the card; the rest is paged to host memory)\n",
            "+ paged optimizer states",
            g(e.paged_optimizer_states)
        );
    }
}

/// Whether it fits the card, and the largest micro-batch that does.
fn text_fit(s: &mut String, sc: &Scenario, e: &Estimate, f: &FitInfo) {
    let cap = f.gpu.capacity();
    let verdict = if f.fits {
        format!("fits, {} free", g(cap.saturating_sub(e.total)).trim())
    } else if e.total > cap {
        format!("does NOT fit, {} short", g(e.total - cap).trim())
    } else {
        // the total is below the card, yet the replay found no block for one request: the
        // cache is fragmented at that moment (PyTorch would raise its OOM there)
        format!(
            "does NOT fit: {} below the card in total, but the caching allocator's replay finds no free block for one of the step's requests (fragmentation; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True may let it fit)",
            g(cap - e.total).trim()
        )
    };
    let source = if f.gpu.cuda_total().1 {
        "published"
    } else {
        "no published figure: 1 % below nvidia-smi's, the rule"
    };
    *s += &format!(
        "\n  {}: {} usable by CUDA ({source}; nvidia-smi total {}) → {verdict}\n",
        f.gpu.name,
        g(cap).trim(),
        g(f.gpu.memory_bytes()).trim()
    );
    match f.max_batch {
        // this batch fits, but a smaller one runs out of blocks in the replay (fragmentation)
        Some(b) if f.fits && sc.batch > b => {
            *s += &format!(
                "  largest micro-batch that fits: {b} (with every smaller one: micro-batch {} finds no free block in the allocator replay, this one does)\n",
                b + 1
            );
        }
        Some(b) => *s += &format!("  largest micro-batch that fits: {b}\n"),
        None => *s += "  even micro-batch 1 does not fit\n",
    }
    let (batch, limit) = (sc.batch, crate::fit::seq_limit(sc));
    if sc.image_size().is_some() {
        match f.max_seq {
            Some(n) => *s += &format!("  largest square image that fits at micro-batch {batch}: {n}×{n}\n"),
            None => *s += &format!("  not even the smallest image fits at micro-batch {batch}\n"),
        }
        return;
    }
    if let Some(v) = sc.vlm_images() {
        let with = format!("beside {} image tokens at micro-batch {batch}", v.tokens());
        match f.max_seq {
            Some(n) if n >= limit => {
                *s += &format!("  most text tokens that fit {with}: {n} (the model's context length)\n")
            }
            Some(n) => *s += &format!("  most text tokens that fit {with}: {n}\n"),
            None => *s += &format!("  not even 1 text token fits {with}\n"),
        }
        return;
    }
    match f.max_seq {
        Some(n) if n >= limit => {
            *s += &format!(
                "  longest sequence that fits at micro-batch {batch}: {n} (the model's context length)\n"
            );
        }
        Some(n) => *s += &format!("  longest sequence that fits at micro-batch {batch}: {n}\n"),
        None => *s += &format!("  not even a 1-token sequence fits at micro-batch {batch}\n"),
    }
}

/// 6.74 B, 124.4 M, …
pub fn human_count(n: u64) -> String {
    let f = n as f64;
    if f >= 1e9 {
        format!("{:.2} B", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.1} M", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.1} K", f / 1e3)
    } else {
        n.to_string()
    }
}

/// The overhead's terms in bytes: the context (with the kernels eager loading adds), NCCL's
/// buffers and what the allocator holds beyond the peak (the replayed cache, or the cuBLAS
/// workspace and the flat reserve).
fn overhead_terms(sc: &Scenario, e: &Estimate) -> Value {
    let x = crate::estimate::context::outside(sc);
    json!({
        "cuda_context": x.cuda_context,
        "eager_kernels": x.eager_kernels,
        "nccl": x.nccl,
        "allocator": e.overhead.saturating_sub(x.total()),
    })
}
