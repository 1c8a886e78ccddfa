//! The scenario from `estimate`'s flags (or a scenario file), read and checked once: the model's
//! notes, the precision, the training stack, the overhead and the layout, each from its flags.

use super::{EstimateArgs, probe};
use anyhow::{Context, Result, bail};
use vramscope::estimate::{
    AttentionImpl, BaseQuant, Checkpointing, Lora, Mode, Optimizer, Overhead, Scenario, Stack,
};
use vramscope::export::ScenarioFile;
use vramscope::gpu;
use vramscope::model::preset;
use vramscope::units::Precision;

/// What the scenario flags (or a scenario file) give, read and checked once.
pub struct Inputs {
    /// The checked scenario.
    pub sc: Scenario,
    /// Notes from loading the model.
    pub notes: Vec<String>,
    /// The GPU: --gpu, else the scenario file's.
    pub gpu: Option<gpu::Gpu>,
    /// The scenario file's global batch, if any.
    pub global_batch: Option<u64>,
    /// Where a model named by its Hub id came from.
    pub source: Option<vramscope::hub::Source>,
    /// Where each fact about the model came from, and its header's check (`model.facts`,
    /// `model.header_check` in the JSON).
    pub provenance:
        (Vec<vramscope::model::header_check::Fact>, Option<vramscope::model::header_check::HeaderCheck>),
}

pub(super) fn find_gpu(id: &str) -> Result<gpu::Gpu> {
    gpu::find(id).map_err(anyhow::Error::msg)
}

/// Builds and checks the scenario from the flags, or reads it from --scenario.
pub fn inputs(a: &EstimateArgs) -> Result<Inputs> {
    if let Some(path) = &a.scenario {
        let f = ScenarioFile::load(path)?;
        let id = a.gpu.as_deref().or(f.gpu.as_deref());
        let gpu = id.map(find_gpu).transpose()?;
        let notes = id.and_then(gpu::default_note).into_iter().collect();
        let mut i = Inputs {
            sc: f.scenario,
            notes,
            gpu,
            global_batch: f.global_batch,
            source: None,
            provenance: Default::default(),
        };
        if a.calibrated {
            calibrate_overhead(a, &mut i)?;
        }
        return Ok(i);
    }
    let model = a.model.as_deref().context("--model or --scenario is required")?;
    let m = super::hub::load_model(model, &a.hub)?;
    let mut i = inputs_with(a, m.loaded)?;
    i.source = m.source;
    Ok(i)
}

/// Takes the --gpu's calibration profile for the overhead (explicit --context-mib / --reserve-frac
/// stay) and says so in the notes.
fn calibrate_overhead(a: &EstimateArgs, i: &mut Inputs) -> Result<()> {
    let g = i.gpu.as_ref().context("--calibrated needs --gpu")?;
    let profile = probe::load_profile(a.profile_dir.as_deref(), &g.id)?;
    let mut o = vramscope::calibrate::apply(i.sc.overhead, &profile);
    if let Some(m) = a.context_mib {
        o.cuda_context_bytes = m << 20;
    }
    if let Some(f) = a.reserve_frac {
        o.allocator_reserve_fraction = f;
        o.flat_reserve = true;
    }
    i.sc.overhead = o;
    i.notes.push(vramscope::calibrate::note(&profile));
    Ok(())
}

/// A vision-language model's `--images` and `--image-size`: `--seq` is the text, the images'
/// tokens are added.
fn vlm_images(a: &EstimateArgs, sc: &mut Scenario) -> Result<()> {
    let count = match (a.images, a.image_size) {
        (None, None) => return Ok(()),
        (Some(n), Some(_)) => n,
        (None, Some(_)) => 1,
        (Some(n), None) => match sc.image_rule() {
            Some(vramscope::model::image_tokens::ImageTokens::Fixed { .. }) => n,
            _ => bail!(
                "--images needs --image-size HxW: {} sizes its image tokens by the image",
                sc.model.name
            ),
        },
    };
    let size = match (a.image_size, sc.image_rule()) {
        (Some(s), _) => s,
        (None, Some(vramscope::model::image_tokens::ImageTokens::Fixed { side, .. })) => {
            vramscope::model::pixels::ImageSize::square(side)
        }
        (None, _) => vramscope::model::pixels::ImageSize::square(1),
    };
    sc.set_images(count, size).map_err(|e| anyhow::anyhow!("--images {count} --image-size {size}: {e}"))
}

/// Builds and checks the scenario from the flags and an already loaded model.
pub fn inputs_with(a: &EstimateArgs, loaded: preset::Loaded) -> Result<Inputs> {
    let provenance = (loaded.facts, loaded.header);
    let mut sc = Scenario::new(loaded.model);
    sc.mode = a.mode;
    sc.batch = a.batch;
    if sc.model.traced().is_some() {
        if a.seq.is_some() {
            bail!(
                "--seq: {} is a traced model; its dims are --batch, --image-size and --dim NAME=VALUE",
                sc.model.name
            );
        }
        sc.dims = a.dim.iter().cloned().collect();
    } else if let Some((name, _)) = a.dim.first() {
        bail!("--dim {name}: only a traced model (--model FILE.vstrace.json) has named dims");
    }
    if let Some(s) = a.seq {
        sc.seq = s;
    }
    if sc.image_rule().is_some() {
        vlm_images(a, &mut sc)?;
    } else if a.images.is_some() {
        bail!(
            "--images applies to a vision-language model whose image tokens are modelled (Qwen2.5-VL, Qwen3-VL, LLaVA, Gemma 3, Mistral 3); {} {}",
            sc.model.name,
            if sc.image_size().is_some() {
                "takes one image a sample (--image-size)"
            } else if sc.model.transformer().is_some_and(|t| t.vision.is_some()) {
                "has a vision tower whose image tokens are not modelled yet (it is counted, frozen)"
            } else {
                "reads text only"
            }
        );
    } else if let Some(image) = a.image_size {
        sc.set_image(image).map_err(|e| anyhow::anyhow!("--image-size {image}: {e}"))?;
        if a.seq.is_some_and(|s| s != sc.seq) {
            bail!(
                "--seq and --image-size disagree: a {image} image is {} tokens for {}; drop --seq",
                sc.seq,
                sc.model.name
            );
        }
    }
    let mut notes = loaded.notes;
    if let (Some(p), Some(image)) = (sc.model.patches(), sc.image_size()) {
        notes.push(format!("image {}", p.describe(image)));
    }
    if let Some(v) = sc.vlm_images() {
        notes.push(format!(
            "{} text + {} image tokens = sequence {}: {}",
            sc.text_tokens(),
            v.tokens(),
            sc.seq,
            v.describe()
        ));
    }
    sc.new_tokens = a.new_tokens.unwrap_or(0);
    if a.new_tokens == Some(0) {
        bail!("--new-tokens must be at least 1");
    }
    // a traced model's precision is the one it was traced in unless --precision says otherwise
    if a.precision.is_some() || sc.model.traced().is_none() {
        sc.precision = precision(a, loaded.dtype.as_deref(), &mut notes);
    }
    run_notes(a, &sc, &mut notes);
    sc.optimizer = a.optimizer;
    sc.attention = a.attention;
    sc.settle_attention();
    sc.checkpointing = a.checkpoint;
    sc.lora = a.lora.map(|l| Lora { dropout: a.lora_dropout, ..l });
    if a.lora.is_none() && a.lora_dropout != 0.0 {
        bail!("--lora-dropout needs --lora");
    }
    sc.base_quant = a.base_quant;
    if a.base_quant != BaseQuant::None && a.lora.is_none() && a.mode == Mode::Train {
        bail!(
            "--base-quant applies to the frozen base of a LoRA run (add --lora R:TARGETS) or to inference (--mode infer)"
        );
    }
    sc.kv_cache_dtype = a.kv_dtype;
    sc.stack = stack(a)?;
    if sc.attention == AttentionImpl::Sdpa && !sc.stack.torch.has_sdpa() {
        // the scenario says what is estimated (its exports, reports and probe script too)
        sc.attention = AttentionImpl::Eager;
        notes.push(format!(
            "--torch {}: PyTorch before 2.0 has no scaled_dot_product_attention, so the attention is eager (--attention eager)",
            sc.stack.torch
        ));
    }
    // the overhead defaults of the chosen card, else the generic ones
    let gpu = a.gpu.as_deref().map(find_gpu).transpose()?;
    notes.extend(a.gpu.as_deref().and_then(gpu::default_note));
    sc.overhead = overhead(a, gpu.as_ref())?;
    sc.parallel = a.parallel.to_parallel();
    if a.fsdp_impl.is_some() && sc.parallel.fsdp.is_none() {
        bail!("--fsdp-impl names the code under --fsdp (add --fsdp full_shard|shard_grad_op|hybrid_shard)");
    }
    if a.parallel.gpus_per_node == 0 {
        bail!("--gpus-per-node must be at least 1");
    }
    if let Some(g) = &gpu {
        fits_the_card(&sc, g)?;
    }
    sc.validate()?;
    layout_notes(&sc, &mut notes);
    let mut i = Inputs { sc, notes, gpu, global_batch: None, source: None, provenance };
    if a.calibrated {
        calibrate_overhead(a, &mut i)?;
    }
    Ok(i)
}

/// The precision: --precision, else the config's dtype (said in a note when not bf16).
fn precision(a: &EstimateArgs, dtype: Option<&str>, notes: &mut Vec<String>) -> Precision {
    match (a.precision, dtype) {
        (Some(p), _) => match a.framework.map(|f| f.reads_precision(p)) {
            // a framework's own names mean what it does (litgpt's are Lightning's)
            Some((q, note)) => {
                notes.extend(note);
                q
            }
            None => p,
        },
        (None, Some(d)) => {
            let p = match d {
                "float32" => Precision::Fp32,
                "float16" => Precision::Fp16,
                _ => Precision::Bf16,
            };
            if p != Precision::Bf16 {
                notes.push(format!("precision {p} from the config's dtype \"{d}\" (--precision changes it)"));
            }
            p
        }
        (None, None) => Precision::Bf16,
    }
}

/// Notes on what the flags mean for this model: attention kernels, the KV cache after prefill,
/// what inference runs, a quantized checkpoint under full fine-tuning.
fn run_notes(a: &EstimateArgs, sc: &Scenario, notes: &mut Vec<String>) {
    if let Some(t) = sc.model.transformer() {
        let k = vramscope::families::ops(t);
        if k.own_attention && a.attention != AttentionImpl::Eager {
            notes.push(
                "this family's attention is its own eager code (BLOOM's ALiBi, DeBERTa's disentangled attention), whatever --attention asks: eager attention is estimated"
                    .into(),
            );
        } else if a.attention == AttentionImpl::Sdpa && k.eager_only {
            notes.push(
                "transformers 5 has no SDPA path for this family (soft-capping / attention sinks): eager attention is estimated (--attention flash for a FlashAttention kernel)"
                    .into(),
            );
        }
    }
    if a.mode == Mode::Infer
        && sc.new_tokens == 0
        && let Some(t) = sc.model.transformer()
        && let Some(w) = t.sliding_window
        && sc.seq > w
        && (t.layer_flags.is_empty()
            || t.layer_flags.iter().any(|f| f & vramscope::model::layer::SLIDING != 0))
    {
        // Llama 4's window is its attention chunk
        let kind = if t.family.id() == "llama4" { "chunked-attention" } else { "sliding-window" };
        notes.push(format!(
            "KV cache as transformers 5's DynamicCache holds it after prefill: {kind} layers keep a view of the last {} positions but the full-length storage stays allocated",
            w.saturating_sub(1)
        ));
    }
    if a.attention == AttentionImpl::Flash && sc.precision == Precision::Fp32 {
        notes.push("FlashAttention kernels take fp16/bf16 only: with fp32 PyTorch would run SDPA's memory-efficient kernel; flash is estimated as asked".into());
    }
    if a.mode == Mode::Infer && (a.checkpoint != Checkpointing::None || a.optimizer != Optimizer::Adamw) {
        notes.push("inference: --checkpoint and --optimizer do not apply".into());
    }
    if a.mode == Mode::Infer
        && sc.new_tokens > 0
        && sc.model.transformer().is_some_and(|t| t.head == vramscope::model::Head::CausalLm)
    {
        notes.push(format!(
            "inference is Hugging Face generate with a DynamicCache: the {}-token prompt's forward keeps only the last token's logits, then {} new tokens (the cache ends with {} tokens; every row of the batch decodes to the end, no padding); a serving engine's KV budget and concurrency: `vramscope serve`",
            sc.seq,
            sc.new_tokens,
            sc.seq + sc.new_tokens - 1
        ));
    } else if a.mode == Mode::Infer
        && sc.model.transformer().is_some_and(|t| t.head == vramscope::model::Head::CausalLm)
    {
        notes.push("inference is one Hugging Face forward over --seq tokens that keeps the full logits (a scoring pass); generation: --new-tokens N (HF generate); a serving engine's KV budget and concurrency: `vramscope serve`".into());
    }
    if let Some(q) = sc.model.transformer().and_then(|t| t.quant)
        && a.mode == Mode::Train
        && a.lora.is_none()
    {
        notes.push(format!(
            "the checkpoint is {}: full fine-tuning dequantizes it to {}; add --lora R:TARGETS to train adapters on the quantized base",
            q.label(),
            sc.precision
        ));
    }
}

/// The training stack: the --framework's, changed by the stack flags.
fn stack(a: &EstimateArgs) -> Result<Stack> {
    let mut stack = a.framework.map(vramscope::estimate::Framework::stack).unwrap_or_default();
    if let Some(l) = a.loss {
        stack.loss = l;
    }
    stack.optimizer_in_backward |= a.optimizer_in_backward;
    if let Some(d) = a.adapter_dtype {
        stack.adapter_dtype = d;
    }
    stack.bnb_compute_dtype = a.bnb_compute_dtype;
    if let Some(n) = a.grad_accum {
        if n == 0 {
            bail!("--grad-accum must be at least 1");
        }
        stack.grad_accum = n;
    }
    stack.keep_grads |= a.keep_grads;
    stack.compiled_loss |= a.compile_loss;
    if let Some(c) = a.model_code {
        stack.model_code = c;
    }
    if let Some(t) = a.torch {
        stack.torch = t;
    }
    if let Some(m) = a.mixer_impl {
        stack.mixer = m;
    }
    if let Some(f) = a.fsdp_impl {
        stack.fsdp = f;
    }
    if let Some(v) = a.bitsandbytes.as_deref() {
        stack.bnb = stack.bnb.with_flag(v).map_err(|e| anyhow::anyhow!(e))?;
    }
    Ok(stack)
}

/// The overhead: the card's defaults (else the generic ones), changed by the flags.
fn overhead(a: &EstimateArgs, gpu: Option<&gpu::Gpu>) -> Result<Overhead> {
    let d = gpu.map_or_else(Overhead::default, gpu::Gpu::overhead);
    let overhead = Overhead {
        cuda_context_bytes: a.context_mib.map_or(d.cuda_context_bytes, |m| m << 20),
        workspace_bytes: a.workspace_mib.map_or(d.workspace_bytes, |m| m << 20),
        allocator_reserve_fraction: a.reserve_frac.unwrap_or(d.allocator_reserve_fraction),
        allocator: a.alloc_conf.unwrap_or_default(),
        module_loading: a.module_loading.unwrap_or_default(),
        flat_reserve: a.reserve_frac.is_some(),
    };
    if a.context_mib.is_some() && a.module_loading.is_some() {
        bail!(
            "--context-mib is the whole measured context; --module-loading models the card's default context instead: pass one of them"
        );
    }
    Ok(overhead)
}

/// The context and workspace leave room on the card.
fn fits_the_card(sc: &Scenario, g: &gpu::Gpu) -> Result<()> {
    let o = sc.overhead;
    if o.cuda_context_bytes + o.workspace_bytes >= g.capacity() {
        bail!(
            "--context-mib {} + --workspace-mib {} is the whole {} ({} MiB) or more",
            o.cuda_context_bytes >> 20,
            o.workspace_bytes >> 20,
            g.name,
            g.memory_mib
        );
    }
    Ok(())
}

/// Notes on the layout: TP beyond the KV heads, unmerged LoRA adapters at inference.
fn layout_notes(sc: &Scenario, notes: &mut Vec<String>) {
    if let Some(t) = sc.model.transformer()
        && sc.parallel.tp > t.num_kv_heads.max(1)
    {
        notes.push(format!(
            "--tp {} is more than the {} KV heads: each rank holds one KV head, replicated {} times (as Megatron and vLLM do)",
            sc.parallel.tp,
            t.num_kv_heads,
            sc.parallel.tp / t.num_kv_heads.max(1)
        ));
    }
    if sc.mode == Mode::Infer
        && let Some(l) = sc.lora
    {
        notes.push(format!(
            "inference with unmerged LoRA adapters (rank {} on {}): their weights are counted; merged adapters (merge_and_unload) add nothing",
            l.rank,
            l.targets.names()
        ));
    }
}
