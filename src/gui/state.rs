//! What the explorer remembers: the scenario inputs (`Settings`), pinned scenarios and view
//! settings. Serialized with eframe storage under [`APP_KEY`]; runtime caches live elsewhere.

use crate::estimate::{AttentionImpl, Checkpointing, Lora, Mode, Optimizer, Parallel, Scenario, Targets};
use crate::model::{self, ModelSpec, preset};
use crate::units::Precision;
use serde::{Deserialize, Serialize};

/// Storage key of [`AppState`].
pub const APP_KEY: &str = "vramscope-state-v1";

/// Where the model comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModelChoice {
    /// A built-in preset by name.
    Preset(String),
    /// A Llama-shaped model of this many billion parameters.
    Generic(f64),
    /// A model loaded from a file, or fetched from the Hugging Face Hub.
    Custom {
        /// The file it came from, or `ORG/NAME@COMMIT` for a model fetched from the Hub (what
        /// `--model` takes to give the same answer on the command line).
        path: String,
        /// The model.
        model: Box<ModelSpec>,
        /// The checkpoint's `torch_dtype`, when its config names one (Serve mode's "auto").
        #[serde(default)]
        dtype: Option<String>,
        /// Where each fact about the model came from (config.json, class default, the
        /// safetensors header, …), shown in the Why panel.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        facts: Vec<crate::model::header_check::Fact>,
    },
}

/// The inputs of one scenario, as the controls edit them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub model: ModelChoice,
    pub mode: Mode,
    pub batch: u64,
    pub seq: u64,
    /// A vision model's input image (`None`: the config's `image_size`); its tokens are the
    /// sequence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::model::pixels::ImageSize>,
    /// A vision-language model's images per sample (of `image`'s size); `seq` is then its text.
    #[serde(skip_serializing_if = "is_zero")]
    pub images: u64,
    /// Inference: HF `generate`'s new tokens after a `seq`-token prompt (0: one scoring forward).
    pub new_tokens: u64,
    /// A traced model's named dims beside batch and image (`--dim NAME=VALUE`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dims: std::collections::BTreeMap<String, u64>,
    pub precision: Precision,
    pub optimizer: Optimizer,
    pub attention: AttentionImpl,
    pub checkpointing: Checkpointing,
    pub lora_enabled: bool,
    pub lora_rank: u64,
    /// The adapted projections (every one unless a scenario file named fewer: the app has no
    /// control for them, but keeps them).
    pub lora_targets: Targets,
    /// LoRA dropout, kept from a scenario file.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub lora_dropout: f64,
    /// bitsandbytes weights quantized at load: a LoRA run's frozen base (QLoRA), or the weights of
    /// an inference run.
    pub base_quant: crate::estimate::BaseQuant,
    pub gpu_id: String,
    pub dp: u64,
    pub zero: u8,
    /// PyTorch FSDP instead of DeepSpeed ZeRO (its code is `stack.fsdp`).
    pub fsdp: Option<crate::estimate::FsdpMode>,
    pub tp: u64,
    pub pp: u64,
    pub sp: bool,
    /// Loss, optimizer placement and adapter dtype (a framework's defaults).
    pub stack: crate::estimate::Stack,
    /// Serving mode: the window shows a vLLM-style server's KV budget instead of a step.
    pub serving: bool,
    /// The server's settings (with the model, `gpu_id`, `tp` and `pp`).
    pub serve: ServeControls,
}

/// What the Serve mode's controls set: vLLM's flags (0 for "vLLM's default").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServeControls {
    /// `--gpu-memory-utilization`.
    pub utilisation: f64,
    /// `--max-model-len` (0: the model's context length).
    pub max_model_len: u64,
    /// `--max-num-batched-tokens` (0: the card's default).
    pub max_num_batched_tokens: u64,
    /// `--max-num-seqs` (0: the card's default).
    pub max_num_seqs: u64,
    /// `--kv-cache-dtype fp8`.
    pub kv_fp8: bool,
    /// The weights: as the checkpoint stores them, online fp8, or a 4-bit AWQ export.
    pub weights: ServeWeights,
    /// `--dtype float16` (else the checkpoint's, bf16).
    pub fp16: bool,
    /// `--enforce-eager`.
    pub enforce_eager: bool,
    /// The mean context the concurrency is also given at (tokens; 0: none).
    pub context: u64,
    /// Concurrent requests the roadmap aims for (0: only "starts").
    pub target_concurrency: f64,
}

impl Default for ServeControls {
    fn default() -> Self {
        Self {
            utilisation: 0.9,
            max_model_len: 8192,
            max_num_batched_tokens: 0,
            max_num_seqs: 0,
            kv_fp8: false,
            weights: ServeWeights::Checkpoint,
            fp16: false,
            enforce_eager: false,
            context: 2048,
            target_concurrency: 0.0,
        }
    }
}

/// How the served weights are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServeWeights {
    /// As the checkpoint stores them.
    #[default]
    Checkpoint,
    /// `--quantization fp8`.
    Fp8,
    /// A 4-bit AWQ export (`--checkpoint-format awq-int4`).
    Awq4,
}

impl Default for Settings {
    /// The built-in default scenario: Llama-3.1-8B full fine-tune in bf16 with AdamW and
    /// per-block checkpointing on one H100 80 GB.
    fn default() -> Self {
        Self {
            model: ModelChoice::Preset("llama-3.1-8b".into()),
            mode: Mode::Train,
            batch: 1,
            seq: 2048,
            image: None,
            images: 0,
            new_tokens: 0,
            dims: Default::default(),
            precision: Precision::Bf16,
            optimizer: Optimizer::Adamw,
            attention: AttentionImpl::Sdpa,
            checkpointing: Checkpointing::Full,
            lora_enabled: false,
            lora_rank: 16,
            lora_targets: Targets::ALL,
            lora_dropout: 0.0,
            base_quant: crate::estimate::BaseQuant::None,
            gpu_id: "h100-80gb".into(),
            dp: 1,
            zero: 0,
            fsdp: None,
            tp: 1,
            pp: 1,
            sp: false,
            stack: crate::estimate::Stack::default(),
            serving: false,
            serve: ServeControls::default(),
        }
    }
}

impl Settings {
    /// The model these settings point at.
    pub fn model_spec(&self) -> Result<ModelSpec, String> {
        match &self.model {
            ModelChoice::Preset(name) => {
                preset::builtin(name).ok_or_else(|| format!("unknown preset \"{name}\""))
            }
            ModelChoice::Generic(b) => {
                model::generic(*b).ok_or_else(|| format!("{b} B parameters is out of range"))
            }
            ModelChoice::Custom { model, .. } => Ok((**model).clone()),
        }
    }

    /// Short model name for titles.
    pub fn model_name(&self) -> String {
        self.model_spec().map(|m| m.name).unwrap_or_else(|e| e)
    }

    /// Settings from a saved scenario file, with what the app cannot show (it keeps the current
    /// GPU when the file names none). Returns the settings and the parts that were dropped.
    pub fn from_scenario_file(
        f: &crate::export::ScenarioFile,
        path: &str,
        current_gpu: &str,
    ) -> (Self, Vec<&'static str>) {
        let sc = &f.scenario;
        let preset = preset::preset_name(&sc.model);
        let model = match preset {
            Some(n) => ModelChoice::Preset(n.to_owned()),
            None => ModelChoice::Custom {
                path: path.to_owned(),
                model: Box::new(sc.model.clone()),
                dtype: None,
                facts: Vec::new(),
            },
        };
        let p = &sc.parallel;
        let mut dropped = Vec::new();
        let checks: [(bool, &'static str); 5] = [
            (p.cp > 1, "context parallelism"),
            (p.ep > 1, "expert parallelism"),
            (p.offload != crate::estimate::Offload::None, "offload"),
            (sc.kv_cache_dtype.is_some(), "KV-cache dtype"),
            (p.virtual_stages > 1, "virtual pipeline stages"),
        ];
        for (lost, what) in checks {
            if lost {
                dropped.push(what);
            }
        }
        let s = Self {
            model,
            mode: sc.mode,
            batch: sc.batch,
            seq: sc.text_tokens(),
            image: sc.image,
            images: sc.images,
            new_tokens: sc.new_tokens,
            dims: sc.dims.clone(),
            precision: sc.precision,
            optimizer: sc.optimizer,
            attention: sc.attention,
            checkpointing: sc.checkpointing,
            lora_enabled: sc.lora.is_some(),
            lora_rank: sc.lora.map_or(16, |l| l.rank),
            lora_targets: sc.lora.map_or(Targets::ALL, |l| l.targets),
            lora_dropout: sc.lora.map_or(0.0, |l| l.dropout),
            base_quant: sc.base_quant,
            gpu_id: f.gpu.clone().unwrap_or_else(|| current_gpu.to_owned()),
            dp: p.dp,
            zero: p.zero,
            fsdp: p.fsdp,
            tp: p.tp,
            pp: p.pp,
            sp: p.sp,
            stack: sc.stack,
            serving: false,
            serve: ServeControls::default(),
        };
        (s, dropped)
    }

    /// The server these settings describe (Serve mode): `vramscope serve` with
    /// [`crate::serve::Serve::args`] gives the same answer.
    pub fn to_serve_setup(&self) -> Result<crate::serve::advice::Setup, String> {
        use crate::serve::{CheckpointFormat, KvDtype, Quantization, ServeConfig};
        let model = self.model_spec()?;
        let gpu = crate::gpu::find(&self.gpu_id)?;
        let v = &self.serve;
        let nonzero = |x: u64| (x > 0).then_some(x);
        let max_pos = model.transformer().map_or(0, crate::model::TransformerSpec::max_context);
        let cfg = ServeConfig {
            tp: self.tp.max(1),
            pp: self.pp.max(1),
            gpu_memory_utilization: v.utilisation,
            // a length above the model's positions is capped, as the slider's range is
            max_model_len: nonzero(v.max_model_len).map(|l| if max_pos > 0 { l.min(max_pos) } else { l }),
            max_num_batched_tokens: nonzero(v.max_num_batched_tokens),
            max_num_seqs: nonzero(v.max_num_seqs),
            kv_dtype: if v.kv_fp8 { KvDtype::Fp8 } else { KvDtype::Auto },
            dtype: v.fp16.then_some(crate::units::DType::F16),
            quantization: if v.weights == ServeWeights::Fp8 { Quantization::Fp8 } else { Quantization::Auto },
            checkpoint_format: (v.weights == ServeWeights::Awq4).then_some(CheckpointFormat::AwqInt4),
            enforce_eager: v.enforce_eager,
            context: nonzero(v.context),
            ..ServeConfig::default()
        };
        let checkpoint_dtype = match &self.model {
            ModelChoice::Preset(n) => crate::model::preset::builtin_dtype(n),
            ModelChoice::Custom { dtype, .. } => dtype.clone(),
            ModelChoice::Generic(_) => None,
        };
        Ok(crate::serve::advice::Setup { model, gpu, cfg, checkpoint_dtype })
    }

    /// The base-weights menu applies: a LoRA run (its frozen base) or inference, on a precision
    /// that is not itself a quantized format.
    pub fn base_applies(&self) -> bool {
        (self.lora_enabled || self.mode == Mode::Infer) && !self.precision.is_quantized()
    }

    /// Builds and validates the scenario.
    pub fn to_scenario(&self) -> Result<Scenario, String> {
        let mut sc = Scenario::new(self.model_spec()?);
        sc.mode = self.mode;
        sc.batch = self.batch;
        sc.seq = self.seq;
        if let Some(image) = self.image.or_else(|| sc.image_size()) {
            // a vision model: its sequence is the image's tokens; a text model ignores it
            let _ = sc.set_image(image);
        }
        if let Some(rule) = sc.image_rule()
            && self.images > 0
        {
            // a vision-language model: `seq` is the text, the images' tokens are added
            sc.set_images(self.images, self.image.unwrap_or_else(|| vlm_default_image(rule)))
                .map_err(|e| e.to_string())?;
        }
        sc.new_tokens = if self.mode == Mode::Infer { self.new_tokens } else { 0 };
        sc.dims = self.dims.clone();
        sc.precision = self.precision;
        sc.optimizer = self.optimizer;
        sc.attention = self.attention;
        sc.settle_attention();
        // the app hides the attention menu for a network built op by op: Swin runs SDPA
        if sc.model.net().is_some() {
            sc.attention = AttentionImpl::Sdpa;
        }
        sc.checkpointing = self.checkpointing;
        sc.stack = self.stack;
        sc.stack.bnb_compute_dtype = None;
        if let Ok(g) = crate::gpu::find(&self.gpu_id) {
            sc.overhead = g.overhead();
        }
        if self.lora_enabled {
            sc.lora =
                Some(Lora { rank: self.lora_rank, targets: self.lora_targets, dropout: self.lora_dropout });
        }
        if self.base_applies() {
            sc.base_quant = self.base_quant;
        }
        sc.parallel = Parallel {
            dp: self.dp,
            zero: self.zero,
            fsdp: self.fsdp,
            tp: self.tp.max(1),
            pp: self.pp.max(1),
            sp: self.sp,
            // enough micro-batches to keep the pipeline full
            micro_batches: if self.pp > 1 { 2 * self.pp } else { 0 },
            ..Parallel::default()
        };
        sc.validate().map_err(|e| e.to_string())?;
        Ok(sc)
    }
}

crate::tokens::token_enum! {
    /// Which view the lower half shows; the tokens are `--tab`'s, in the order of the tab row.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Tab {
        /// Serve mode: concurrent requests against context length.
        Concurrency => "concurrency",
        #[default]
        Batch => "batch",
        Seq => "seq",
        Segments => "segments",
        Timeline => "timeline",
        Gpus => "gpus",
        Compare => "compare",
        Live => "live",
        Options => "options",
    }
}

impl std::str::FromStr for Tab {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::from_token(s).ok_or_else(|| format!("unknown tab {s:?} (one of {})", Self::TOKENS.join(", ")))
    }
}

/// View settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct View {
    pub dark: bool,
    pub presentation: bool,
    pub tab: Tab,
    /// Tokens of the run priced in the Options tab, billions.
    pub run_tokens_b: f64,
    /// Model FLOPs utilisation assumed for run costs.
    pub mfu: f64,
    /// Where the Live tab reads GPU memory from.
    pub live: LiveSettings,
    /// The interface language chosen (View → Language or `--lang`); `None`: the system's.
    pub lang: Option<super::lang::Lang>,
    /// The controls folded into a slim strip (the presentation layout folds them on entry).
    pub controls_collapsed: bool,
    /// The Learn view's lesson and the user's own scenario to go back to (`None`: not learning).
    pub learn: Option<super::learn::LearnState>,
    /// The user's zoom (View → Zoom, Ctrl+= / Ctrl+− / Ctrl+0), multiplied with the
    /// presentation layout's; 1.0 in a state saved before it existed.
    pub zoom: f32,
    /// The Hub ids fetched lately (the controls' Hub field), newest first, at most
    /// [`MAX_RECENT_HUB`]; empty in a state saved before it existed.
    pub hub_recent: Vec<String>,
}

/// How many recent Hub ids the view keeps.
pub const MAX_RECENT_HUB: usize = 8;

/// The zoom steps Ctrl+= and Ctrl+− move between.
pub const ZOOM_STEPS: [f32; 13] = [0.5, 0.67, 0.75, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0];

/// A change of the user's zoom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoomStep {
    In,
    Out,
    Reset,
}

impl ZoomStep {
    /// The zoom after this step from `z` (a saved zoom off the steps moves to the next one).
    pub fn apply(self, z: f32) -> f32 {
        let z = if z.is_finite() { z } else { 1.0 };
        match self {
            Self::In => ZOOM_STEPS.into_iter().find(|s| *s > z + 0.001).unwrap_or(ZOOM_STEPS[12]),
            Self::Out => ZOOM_STEPS.into_iter().rev().find(|s| *s < z - 0.001).unwrap_or(ZOOM_STEPS[0]),
            Self::Reset => 1.0,
        }
    }
}

impl View {
    /// Puts `id` first among the recent Hub ids (once), keeping the newest [`MAX_RECENT_HUB`].
    pub fn remember_hub(&mut self, id: &str) {
        self.hub_recent.retain(|r| r != id);
        self.hub_recent.insert(0, id.to_owned());
        self.hub_recent.truncate(MAX_RECENT_HUB);
    }

    /// The user's zoom, within the steps' range (a hand-edited state cannot make the window
    /// unusable).
    pub fn user_zoom(&self) -> f32 {
        if self.zoom.is_finite() { self.zoom.clamp(ZOOM_STEPS[0], ZOOM_STEPS[12]) } else { 1.0 }
    }
}

impl Default for View {
    fn default() -> Self {
        Self {
            dark: true,
            presentation: false,
            tab: Tab::Batch,
            run_tokens_b: 1.0,
            mfu: 0.4,
            live: LiveSettings::default(),
            lang: None,
            controls_collapsed: false,
            learn: None,
            zoom: 1.0,
            hub_recent: Vec::new(),
        }
    }
}

/// Where the Live tab's GPU memory comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LiveSource {
    /// This machine's GPUs through the NVIDIA driver.
    #[default]
    Nvml,
    /// A cluster's GPUs from the Prometheus server that scrapes NVIDIA's DCGM exporter.
    Prometheus,
}

/// The Live tab's source and how a cluster is read against the plan (persisted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LiveSettings {
    pub source: LiveSource,
    /// The Prometheus server's URL.
    pub prometheus_url: String,
    /// A PromQL label selector for the DCGM series (`{job="train-42"}`), or empty.
    pub selector: String,
    /// Hosts in node-rank order (node 0 first), commas or spaces between; empty: by name.
    pub host_order: String,
    /// The range "Load range" reads back (15m, 1h, 6h, 1d).
    pub range: String,
}

impl Default for LiveSettings {
    fn default() -> Self {
        Self {
            source: LiveSource::Nvml,
            prometheus_url: "http://localhost:9090".into(),
            selector: String::new(),
            host_order: String::new(),
            range: "1h".into(),
        }
    }
}

/// A pinned scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pinned {
    /// "A", "B", …
    pub label: String,
    /// Its inputs.
    pub settings: Settings,
}

/// Everything persisted between runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AppState {
    pub settings: Settings,
    pub pinned: Vec<Pinned>,
    pub view: View,
}

impl AppState {
    /// Parses stored state; `None` when it is missing, `Some(Err)` when it is unreadable.
    pub fn from_stored(text: Option<&str>) -> Option<Result<Self, String>> {
        let text = text?;
        Some(ron::from_str::<Self>(text).map_err(|e| e.to_string()).and_then(|s| {
            // an old state may point at a preset that no longer exists
            s.settings.to_scenario().map(|_| s)
        }))
    }

    /// Serialises for storage.
    pub fn to_stored(&self) -> String {
        ron::to_string(self).unwrap_or_default()
    }
}

/// The image size a vision-language model's images get until one is chosen: a fixed-size
/// tower's own, else 448×448.
pub fn vlm_default_image(rule: crate::model::image_tokens::ImageTokens) -> crate::model::pixels::ImageSize {
    match rule {
        crate::model::image_tokens::ImageTokens::Fixed { side, .. } => {
            crate::model::pixels::ImageSize::square(side)
        }
        crate::model::image_tokens::ImageTokens::Resized { .. }
        | crate::model::image_tokens::ImageTokens::Rows { .. } => {
            crate::model::pixels::ImageSize::square(448)
        }
        // LLaVA-NeXT: a 2×2 grid of tiles
        crate::model::image_tokens::ImageTokens::Anyres { side, .. } => {
            crate::model::pixels::ImageSize::square(2 * side)
        }
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}
