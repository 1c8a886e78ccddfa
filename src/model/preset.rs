//! Model presets (`presets/*.ron`, versioned schema) and loading a model from a name or a file.
//!
//! The shipped presets are compiled into the binary, so `--model llama-2-7b` works from any
//! directory; a path to a `.ron`, `config.json`, `.safetensors` or `model.safetensors.index.json`
//! loads that file instead.

use super::{Architecture, ModelSpec, hf_config, safetensors};
use serde::{Deserialize, Serialize};
use std::path::Path;
use thiserror::Error;

/// Current preset schema version.
pub const SCHEMA: u32 = 1;

/// A preset file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PresetFile {
    /// Schema version (1).
    pub schema: u32,
    /// Display name.
    pub name: String,
    /// Where the numbers come from.
    #[serde(default)]
    pub source: String,
    /// The architecture.
    pub arch: Architecture,
}

/// Built-in presets: (file stem, RON text).
pub const BUILTIN: &[(&str, &str)] = &[
    ("bert-base-uncased", include_str!("../../presets/bert-base-uncased.ron")),
    ("bert-large-uncased", include_str!("../../presets/bert-large-uncased.ron")),
    ("gpt2", include_str!("../../presets/gpt2.ron")),
    ("gpt2-xl", include_str!("../../presets/gpt2-xl.ron")),
    ("gpt3-175b-megatron", include_str!("../../presets/gpt3-175b-megatron.ron")),
    ("llama-2-7b", include_str!("../../presets/llama-2-7b.ron")),
    ("llama-2-13b", include_str!("../../presets/llama-2-13b.ron")),
    ("llama-2-70b", include_str!("../../presets/llama-2-70b.ron")),
    ("llama-3.1-8b", include_str!("../../presets/llama-3.1-8b.ron")),
    ("llama-3.1-70b", include_str!("../../presets/llama-3.1-70b.ron")),
    ("mistral-7b", include_str!("../../presets/mistral-7b.ron")),
    ("mixtral-8x7b", include_str!("../../presets/mixtral-8x7b.ron")),
    ("qwen2.5-7b", include_str!("../../presets/qwen2.5-7b.ron")),
];

/// Built-in presets kept as the model's own `config.json` (read by [`hf_config`]): (file stem,
/// Hub id, JSON text).
pub const BUILTIN_HF: &[(&str, &str, &str)] = &[
    ("apertus-8b", "swiss-ai/Apertus-8B-2509", include_str!("../../presets/hf/apertus-8b.json")),
    (
        "deepseek-v2-lite",
        "deepseek-ai/DeepSeek-V2-Lite",
        include_str!("../../presets/hf/deepseek-v2-lite.json"),
    ),
    ("deepseek-v3", "deepseek-ai/DeepSeek-V3", include_str!("../../presets/hf/deepseek-v3.json")),
    ("deepseek-v3.2", "deepseek-ai/DeepSeek-V3.2-Exp", include_str!("../../presets/hf/deepseek-v3.2.json")),
    (
        "ernie-4.5-21b-a3b",
        "baidu/ERNIE-4.5-21B-A3B-PT",
        include_str!("../../presets/hf/ernie-4.5-21b-a3b.json"),
    ),
    ("dinov2-large", "facebook/dinov2-large", include_str!("../../presets/hf/dinov2-large.json")),
    ("falcon-7b", "tiiuae/falcon-7b", include_str!("../../presets/hf/falcon-7b.json")),
    ("falcon-h1-7b", "tiiuae/Falcon-H1-7B-Instruct", include_str!("../../presets/hf/falcon-h1-7b.json")),
    ("gemma-2-27b", "google/gemma-2-27b", include_str!("../../presets/hf/gemma-2-27b.json")),
    ("gemma-2-2b", "google/gemma-2-2b", include_str!("../../presets/hf/gemma-2-2b.json")),
    ("gemma-2-9b", "google/gemma-2-9b", include_str!("../../presets/hf/gemma-2-9b.json")),
    ("gemma-3-12b", "google/gemma-3-12b-it", include_str!("../../presets/hf/gemma-3-12b.json")),
    ("gemma-3-1b", "google/gemma-3-1b-it", include_str!("../../presets/hf/gemma-3-1b.json")),
    ("gemma-3-27b", "google/gemma-3-27b-it", include_str!("../../presets/hf/gemma-3-27b.json")),
    ("gemma-3-4b", "google/gemma-3-4b-it", include_str!("../../presets/hf/gemma-3-4b.json")),
    ("glm-4.5", "zai-org/GLM-4.5", include_str!("../../presets/hf/glm-4.5.json")),
    ("glm-4.5-air", "zai-org/GLM-4.5-Air", include_str!("../../presets/hf/glm-4.5-air.json")),
    ("gpt-oss-120b", "openai/gpt-oss-120b", include_str!("../../presets/hf/gpt-oss-120b.json")),
    ("gpt-oss-20b", "openai/gpt-oss-20b", include_str!("../../presets/hf/gpt-oss-20b.json")),
    (
        "granite-3-8b",
        "ibm-granite/granite-3.1-8b-instruct",
        include_str!("../../presets/hf/granite-3-8b.json"),
    ),
    (
        "granite-4.0-h-small",
        "ibm-granite/granite-4.0-h-small",
        include_str!("../../presets/hf/granite-4.0-h-small.json"),
    ),
    ("jamba-mini", "ai21labs/AI21-Jamba-Mini-1.6", include_str!("../../presets/hf/jamba-mini.json")),
    ("kimi-k2", "moonshotai/Kimi-K2-Instruct", include_str!("../../presets/hf/kimi-k2.json")),
    ("llama-3.1-405b", "meta-llama/Llama-3.1-405B", include_str!("../../presets/hf/llama-3.1-405b.json")),
    ("llama-3.2-1b", "meta-llama/Llama-3.2-1B", include_str!("../../presets/hf/llama-3.2-1b.json")),
    ("llama-3.2-3b", "meta-llama/Llama-3.2-3B", include_str!("../../presets/hf/llama-3.2-3b.json")),
    (
        "llama-4-maverick",
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        include_str!("../../presets/hf/llama-4-maverick.json"),
    ),
    (
        "llama-4-scout",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        include_str!("../../presets/hf/llama-4-scout.json"),
    ),
    ("mamba2-2.7b", "state-spaces/mamba2-2.7b", include_str!("../../presets/hf/mamba2-2.7b.json")),
    ("minimax-m2", "MiniMaxAI/MiniMax-M2", include_str!("../../presets/hf/minimax-m2.json")),
    ("llava-1.5-7b", "llava-hf/llava-1.5-7b-hf", include_str!("../../presets/hf/llava-1.5-7b.json")),
    ("modernbert-base", "answerdotai/ModernBERT-base", include_str!("../../presets/hf/modernbert-base.json")),
    ("deberta-v3-base", "microsoft/deberta-v3-base", include_str!("../../presets/hf/deberta-v3-base.json")),
    ("resnet-50", "microsoft/resnet-50", include_str!("../../presets/hf/resnet-50.json")),
    (
        "convnext-base-224",
        "facebook/convnext-base-224",
        include_str!("../../presets/hf/convnext-base-224.json"),
    ),
    (
        "llava-v1.6-mistral-7b",
        "llava-hf/llava-v1.6-mistral-7b-hf",
        include_str!("../../presets/hf/llava-v1.6-mistral-7b.json"),
    ),
    (
        "swin-base-224",
        "microsoft/swin-base-patch4-window7-224",
        include_str!("../../presets/hf/swin-base-224.json"),
    ),
    (
        "deberta-v3-large",
        "microsoft/deberta-v3-large",
        include_str!("../../presets/hf/deberta-v3-large.json"),
    ),
    (
        "modernbert-large",
        "answerdotai/ModernBERT-large",
        include_str!("../../presets/hf/modernbert-large.json"),
    ),
    ("nemotron-h-8b", "nvidia/Nemotron-H-8B-Base-8K", include_str!("../../presets/hf/nemotron-h-8b.json")),
    ("olmo-2-7b", "allenai/OLMo-2-1124-7B", include_str!("../../presets/hf/olmo-2-7b.json")),
    (
        "kimi-linear-48b-a3b",
        "moonshotai/Kimi-Linear-48B-A3B-Instruct",
        include_str!("../../presets/hf/kimi-linear-48b-a3b.json"),
    ),
    (
        "longcat-flash-chat",
        "meituan-longcat/LongCat-Flash-Chat",
        include_str!("../../presets/hf/longcat-flash-chat.json"),
    ),
    ("olmoe-1b-7b", "allenai/OLMoE-1B-7B-0924", include_str!("../../presets/hf/olmoe-1b-7b.json")),
    ("phi-1.5", "microsoft/phi-1_5", include_str!("../../presets/hf/phi-1.5.json")),
    ("phi-2", "microsoft/phi-2", include_str!("../../presets/hf/phi-2.json")),
    ("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", include_str!("../../presets/hf/phi-3-mini.json")),
    ("pythia-1.4b", "EleutherAI/pythia-1.4b", include_str!("../../presets/hf/pythia-1.4b.json")),
    (
        "vit-base-patch16-224",
        "google/vit-base-patch16-224",
        include_str!("../../presets/hf/vit-base-patch16-224.json"),
    ),
    ("qwen2-moe", "Qwen/Qwen1.5-MoE-A2.7B", include_str!("../../presets/hf/qwen2-moe.json")),
    ("qwen2.5-vl-7b", "Qwen/Qwen2.5-VL-7B-Instruct", include_str!("../../presets/hf/qwen2.5-vl-7b.json")),
    ("qwen3-vl-8b", "Qwen/Qwen3-VL-8B-Instruct", include_str!("../../presets/hf/qwen3-vl-8b.json")),
    ("qwen3-0.6b", "Qwen/Qwen3-0.6B", include_str!("../../presets/hf/qwen3-0.6b.json")),
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", include_str!("../../presets/hf/qwen3-30b-a3b.json")),
    ("qwen3-32b", "Qwen/Qwen3-32B", include_str!("../../presets/hf/qwen3-32b.json")),
    ("qwen3-8b", "Qwen/Qwen3-8B", include_str!("../../presets/hf/qwen3-8b.json")),
    (
        "qwen3-next-80b-a3b",
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        include_str!("../../presets/hf/qwen3-next-80b-a3b.json"),
    ),
    (
        "seed-oss-36b",
        "ByteDance-Seed/Seed-OSS-36B-Instruct",
        include_str!("../../presets/hf/seed-oss-36b.json"),
    ),
    (
        "siglip-so400m",
        "google/siglip-so400m-patch14-384",
        include_str!("../../presets/hf/siglip-so400m.json"),
    ),
    ("smollm3-3b", "HuggingFaceTB/SmolLM3-3B", include_str!("../../presets/hf/smollm3-3b.json")),
    ("starcoder2-7b", "bigcode/starcoder2-7b", include_str!("../../presets/hf/starcoder2-7b.json")),
];

/// Hub ids of the RON presets (the models their numbers come from).
pub const HUB_IDS: &[(&str, &str)] = &[
    ("bert-base-uncased", "google-bert/bert-base-uncased"),
    ("bert-large-uncased", "google-bert/bert-large-uncased"),
    ("gpt2", "openai-community/gpt2"),
    ("gpt2-xl", "openai-community/gpt2-xl"),
    ("llama-2-7b", "meta-llama/Llama-2-7b-hf"),
    ("llama-2-13b", "meta-llama/Llama-2-13b-hf"),
    ("llama-2-70b", "meta-llama/Llama-2-70b-hf"),
    ("llama-3.1-8b", "meta-llama/Llama-3.1-8B"),
    ("llama-3.1-70b", "meta-llama/Llama-3.1-70B"),
    ("mistral-7b", "mistralai/Mistral-7B-v0.1"),
    ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"),
    ("qwen2.5-7b", "Qwen/Qwen2.5-7B"),
];

/// Every built-in preset, parsed once: (name, Hub id, model, checkpoint dtype).
type Preset = (&'static str, &'static str, ModelSpec, Option<String>);

static PRESETS: std::sync::LazyLock<Vec<Preset>> = std::sync::LazyLock::new(|| {
    let mut out = Vec::with_capacity(BUILTIN.len() + BUILTIN_HF.len());
    for (name, text) in BUILTIN {
        if let Ok(m) = parse_preset(&format!("presets/{name}.ron"), text) {
            let hub = HUB_IDS.iter().find(|(n, _)| n == name).map_or("", |(_, h)| *h);
            out.push((*name, hub, m, None));
        }
    }
    for (name, hub, text) in BUILTIN_HF {
        if let Ok(p) = hf_config::parse_model(&format!("presets/hf/{name}.json"), text) {
            let shown = hub.rsplit('/').next().unwrap_or(name).to_owned();
            let model = ModelSpec { name: shown, arch: p.arch };
            out.push((*name, *hub, model, p.dtype));
        }
    }
    out
});

/// Why a model could not be loaded.
#[derive(Debug, Error)]
pub enum LoadError {
    /// RON syntax or schema error.
    #[error("{path}:{line}:{col}: {msg}")]
    Ron {
        /// File.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// Message.
        msg: String,
    },
    /// Unsupported schema version.
    #[error("{path}: schema {found} is not supported (this build reads schema {SCHEMA})")]
    Schema {
        /// File.
        path: String,
        /// Version found.
        found: u32,
    },
    /// config.json problems.
    #[error(transparent)]
    Config(#[from] hf_config::ConfigError),
    /// safetensors problems.
    #[error(transparent)]
    Safetensors(#[from] safetensors::SafetensorsError),
    /// A trace file's problems.
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    /// I/O.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Neither a preset name, a Hub id of a preset, nor an existing file or folder.
    #[error("\"{0}\" is neither a preset nor a file or model folder{hint}", hint = suggestion(.0))]
    NotFound(String),
    /// A path (it has a folder in it, or a model file's extension) that does not exist.
    #[error("no such file: {0}")]
    NoSuchFile(String),
    /// `org/name`: no such folder here, and not the Hub id of a built-in preset.
    #[error(
        "no such folder \"{0}\", and not the Hub id of a built-in preset (a Hub id is ORG/NAME of letters, digits, '-', '_' and '.', and is read from the Hub by the commands that take --model){hint}",
        hint = nearest_preset(.0).map_or(String::new(), |n| format!("; did you mean {n}?"))
    )]
    NotAHubPreset(String),
    /// A folder without a model in it.
    #[error("{0}: no config.json (nor model.safetensors) in this folder")]
    EmptyFolder(String),
    /// File type not recognised.
    #[error(
        "{0}: expected a .ron preset, a config.json, a .safetensors file or a model.safetensors.index.json"
    )]
    UnknownKind(String),
}

mod traced;

/// Names of the built-in presets (the traced ones last).
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _, _, _)| *n).chain(traced::TRACED.iter().map(|t| t.0)).collect()
}

/// A preset's name as a picker shows it: its model's name, or what a traced one is (without
/// parsing it).
pub fn display_name(name: &str) -> String {
    match traced::describe(name) {
        Some(d) => d.to_owned(),
        None => builtin(name).map_or(name.to_owned(), |m| m.name),
    }
}

/// The Hub id a preset's numbers come from ("" when none).
pub fn hub_id(name: &str) -> &'static str {
    PRESETS.iter().find(|(n, _, _, _)| *n == name).map_or("", |(_, h, _, _)| *h)
}

/// A name reduced for matching: lower case, letters and digits only, common suffixes dropped
/// (`Llama-3.1-8B-Instruct` → `llama318b`).
fn normalise(s: &str) -> String {
    let mut n: String = s.to_lowercase().chars().filter(char::is_ascii_alphanumeric).collect();
    for suffix in ["instruct", "chat", "base", "hf", "it"] {
        if n.len() > suffix.len() + 3 && n.ends_with(suffix) {
            n.truncate(n.len() - suffix.len());
        }
    }
    n
}

/// Levenshtein distance of the normalised names, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (normalise(a).chars().collect(), normalise(b).chars().collect());
    crate::tokens::edit_distance(&a, &b)
}

/// The nearest preset name (by name or Hub id), if one is close.
pub fn nearest_preset(query: &str) -> Option<&'static str> {
    let q = query.rsplit('/').next().unwrap_or(query);
    let qn = normalise(q);
    PRESETS
        .iter()
        .map(|(n, h, _, _)| (*n, *h))
        .chain(traced::TRACED.iter().map(|t| (t.0, "")))
        .map(|(n, h)| {
            let hub_tail = h.rsplit('/').next().unwrap_or(h);
            let d = distance(q, n).min(if h.is_empty() { usize::MAX } else { distance(q, hub_tail) });
            // a query that starts a name ("gpt-oss") is close to it
            let prefix = normalise(n).starts_with(&qn) || normalise(hub_tail).starts_with(&qn);
            (if prefix && qn.len() >= 4 { d.min(1) } else { d }, n)
        })
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= (qn.len() / 3).max(2))
        .map(|(_, n)| n)
}

fn suggestion(query: &str) -> String {
    match nearest_preset(query) {
        Some(n) => format!("; did you mean {n}? (`vramscope presets` lists them all)"),
        None => "; `vramscope presets` lists the presets".into(),
    }
}

/// Parses preset text. `path` is used in messages.
pub fn parse_preset(path: &str, text: &str) -> Result<ModelSpec, LoadError> {
    let file: PresetFile = ron::from_str(text).map_err(|e| LoadError::Ron {
        path: path.to_owned(),
        line: e.span.start.line,
        col: e.span.start.col,
        msg: e.code.to_string(),
    })?;
    if file.schema != SCHEMA {
        return Err(LoadError::Schema { path: path.to_owned(), found: file.schema });
    }
    Ok(ModelSpec { name: file.name, arch: file.arch })
}

/// Serialises a model as a preset file.
pub fn to_preset_text(model: &ModelSpec, source: &str) -> String {
    let file = PresetFile {
        schema: SCHEMA,
        name: model.name.clone(),
        source: source.to_owned(),
        arch: model.arch.clone(),
    };
    let cfg = ron::ser::PrettyConfig::new().depth_limit(4);
    ron::ser::to_string_pretty(&file, cfg).unwrap_or_default()
}

/// A loaded model plus notes for the user (assumptions made while reading it).
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The model.
    pub model: ModelSpec,
    /// Notes (e.g. "no architectures key: assuming …").
    pub notes: Vec<String>,
    /// The checkpoint's `torch_dtype` / `dtype`, when a config.json names one.
    pub dtype: Option<String>,
    /// Where each fact came from (empty for a built-in preset or a `.ron`).
    pub facts: Vec<super::header_check::Fact>,
    /// The safetensors header checked against the family's parameter list, when one was read.
    pub header: Option<super::header_check::HeaderCheck>,
}

impl Loaded {
    /// A model with no notes, facts or header.
    pub fn plain(model: ModelSpec, dtype: Option<String>) -> Self {
        Self { model, notes: Vec::new(), dtype, facts: Vec::new(), header: None }
    }

    /// A traced model (a file or a built-in trace), with what was traced and what does not
    /// extrapolate as notes.
    fn traced(model: ModelSpec) -> Self {
        let mut loaded = Self::plain(model, None);
        if let Some(t) = loaded.model.traced() {
            loaded.notes.push(t.describe());
            loaded.notes.extend(t.misfits.iter().cloned());
            let unchecked: Vec<&str> =
                t.dims.iter().filter(|d| d.values.len() == 2).map(|d| d.name.as_str()).collect();
            if !unchecked.is_empty() {
                loaded.notes.push(format!(
                    "traced at two values of {}: the fit is exact there, not checked at a third",
                    unchecked.join(", ")
                ));
            }
        }
        loaded
    }
}

/// Loads a built-in preset by name or by the Hub id it comes from (`Qwen/Qwen3-8B`).
pub fn builtin(name: &str) -> Option<ModelSpec> {
    traced::get(name.trim()).or_else(|| find_builtin(name).map(|p| p.2.clone()))
}

/// The checkpoint dtype of a built-in preset (its config's `torch_dtype`), by name or Hub id.
pub fn builtin_dtype(name: &str) -> Option<String> {
    find_builtin(name).and_then(|p| p.3.clone())
}

/// The preset name a model was built from, if it is a built-in preset unchanged.
pub fn preset_name(m: &ModelSpec) -> Option<&'static str> {
    traced::name_of(m).or_else(|| PRESETS.iter().find(|(_, _, p, _)| p == m).map(|(n, _, _, _)| *n))
}

fn find_builtin(name: &str) -> Option<&'static Preset> {
    let lower = name.trim().to_ascii_lowercase();
    PRESETS.iter().find(|(n, h, _, _)| *n == lower || (!h.is_empty() && h.to_ascii_lowercase() == lower))
}

/// The `config.json` text of a built-in HF preset, by name or Hub id (the probe embeds it).
pub fn builtin_hf_config(name: &str) -> Option<&'static str> {
    let lower = name.trim().to_ascii_lowercase();
    BUILTIN_HF.iter().find(|(n, h, _)| *n == lower || h.to_ascii_lowercase() == lower).map(|(_, _, t)| *t)
}

/// Loads `--model`: a preset name or a path.
pub fn load(spec: &str) -> Result<Loaded, LoadError> {
    if let Some(model) = traced::get(spec.trim()) {
        return Ok(Loaded::traced(model));
    }
    if let Some((_, _, model, dtype)) = find_builtin(spec) {
        return Ok(Loaded::plain(model.clone(), dtype.clone()));
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(match path_shape(spec) {
            PathShape::Path => LoadError::NoSuchFile(spec.to_owned()),
            PathShape::HubId => LoadError::NotAHubPreset(spec.to_owned()),
            PathShape::Name => LoadError::NotFound(spec.to_owned()),
        });
    }
    load_path(path)
}

/// What a `--model` argument that names nothing looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PathShape {
    /// A file path: a model file's extension, a leading `/`, `./`, `../` or `~`, a `\\`, or two
    /// or more `/`.
    Path,
    /// `org/name`, as the Hub writes a repository (also a relative folder path of two parts).
    HubId,
    /// A bare word: a misspelled preset, most likely.
    Name,
}

fn path_shape(spec: &str) -> PathShape {
    let lower = spec.to_ascii_lowercase();
    let model_file =
        [".json", ".safetensors", ".ron", ".bin", ".pt", ".pth", ".gguf"].iter().any(|e| lower.ends_with(e));
    let rooted = ["/", "./", "../", "~"].iter().any(|p| spec.starts_with(p)) || spec.contains('\\');
    let slashes = spec.matches('/').count();
    if model_file || rooted || slashes >= 2 {
        PathShape::Path
    } else if slashes == 1 && !spec.ends_with('/') {
        PathShape::HubId
    } else if slashes == 1 {
        PathShape::Path
    } else {
        PathShape::Name
    }
}

fn read(path: &Path) -> Result<String, LoadError> {
    let meta =
        std::fs::metadata(path).map_err(|e| LoadError::Io { path: path.display().to_string(), source: e })?;
    if meta.len() > 16 << 20 {
        return Err(LoadError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other("file is larger than 16 MiB; not a config or preset"),
        });
    }
    std::fs::read_to_string(path).map_err(|e| LoadError::Io { path: path.display().to_string(), source: e })
}

/// Loads a model folder: its `config.json` for the structure, and the parameters of the
/// `model.safetensors` (or its shard index) beside it, checked against the family's parameter
/// list ([`super::header_check::reconcile`]); a folder with weights but no config becomes a layer
/// table.
fn load_dir(dir: &Path) -> Result<Loaded, LoadError> {
    let cfg = dir.join("config.json");
    let index = dir.join("model.safetensors.index.json");
    let single = dir.join("model.safetensors");
    let weights = if index.exists() {
        Some(index)
    } else if single.exists() {
        Some(single)
    } else {
        None
    };
    if !cfg.exists() {
        return match weights {
            Some(w) => safetensors::load_model(&w).map_err(LoadError::from),
            None => Err(LoadError::EmptyFolder(dir.display().to_string())),
        };
    }
    let text = read(&cfg)?;
    let mut loaded = load_config(&cfg, &text)?;
    let generation = dir.join("generation_config.json");
    if let Ok(text) = std::fs::read_to_string(&generation) {
        let (facts, notes) = super::generation::read("generation_config.json", &text);
        loaded.facts.extend(facts);
        loaded.notes.extend(notes);
    }
    let Some(w) = weights else { return Ok(loaded) };
    let tensors = if w.to_string_lossy().ends_with(".index.json") {
        safetensors::read_index(&w)?
    } else {
        safetensors::read_header(&w)?
    };
    loaded.facts.retain(|f| f.fact != "parameters");
    // what only the header's structure needs (a token's experts, their renormalisation)
    let config = serde_json::from_str(&super::config::python_json(&text)).ok();
    super::header_check::reconcile(&mut loaded, &w.display().to_string(), &tensors, config.as_ref());
    Ok(loaded)
}

/// A model from a HF `config.json` (or another `.json` config) at `path` whose text is `text`.
fn load_config(path: &Path, text: &str) -> Result<Loaded, LoadError> {
    let shown = path.display().to_string();
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let parsed = hf_config::parse_model(&shown, text)?;
    let model_name = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().to_string())
        .filter(|n| !n.is_empty() && name == "config.json")
        .unwrap_or_else(|| name.trim_end_matches(".json").to_owned());
    let mut facts = parsed.facts;
    facts.push(super::header_check::Fact::new("parameters", super::header_check::FROM_FAMILY));
    Ok(Loaded {
        model: ModelSpec { name: model_name, arch: parsed.arch },
        notes: parsed.notes,
        dtype: parsed.dtype,
        facts,
        header: None,
    })
}

/// Loads a model from a file or a model folder, choosing the reader by name.
pub fn load_path(path: &Path) -> Result<Loaded, LoadError> {
    if path.is_dir() {
        return load_dir(path);
    }
    let shown = path.display().to_string();
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    if name.ends_with(".ron") {
        let model = parse_preset(&shown, &read(path)?)?;
        return Ok(Loaded::plain(model, None));
    }
    if name.ends_with(".vstrace.json") {
        let t = crate::trace::read(path)?;
        let stem = name.trim_end_matches(".vstrace.json").to_owned();
        return Ok(Loaded::traced(ModelSpec {
            name: stem,
            arch: super::Architecture::Traced(std::sync::Arc::new(t)),
        }));
    }
    if name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json") {
        return safetensors::load_model(path).map_err(LoadError::from);
    }
    if name.ends_with(".json") {
        return load_config(path, &read(path)?);
    }
    Err(LoadError::UnknownKind(shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_reads_no_such_file_and_a_hub_id_says_it_is_not_fetched() {
        for p in [
            "./no/such.json",
            "/tmp/vramscope-nowhere/config.json",
            "models/x/config.json",
            "weights.safetensors",
            "llama.ron",
        ] {
            let e = load(p).err().unwrap().to_string();
            assert_eq!(e, format!("no such file: {p}"));
        }
        // org/name looks like a path and like a Hub id: say both, and nothing untrue
        let e = load("some-org/some-model").err().unwrap().to_string();
        assert!(
            e.starts_with("no such folder \"some-org/some-model\", and not the Hub id of a built-in preset"),
            "{e}"
        );
        assert!(e.contains("read from the Hub by the commands that take --model"), "{e}");
        let e = load("meta-llama/Llama-3.1-8C").err().unwrap().to_string();
        assert!(e.contains("did you mean llama-3.1-8b"), "{e}");
        // a bare word is a misspelled preset
        let e = load("lama-3.1-8b").err().unwrap().to_string();
        assert!(e.contains("neither a preset nor a file") && e.contains("did you mean llama-3.1-8b?"), "{e}");
    }

    #[test]
    fn every_builtin_preset_loads() {
        for (name, text) in BUILTIN {
            let m = parse_preset(name, text).unwrap_or_else(|e| panic!("preset {name}: {e}"));
            assert!(m.n_params() > 1_000_000, "{name}");
        }
    }

    #[test]
    fn preset_round_trips() {
        for (name, text) in BUILTIN {
            let m = parse_preset(name, text).unwrap();
            let again = parse_preset(name, &to_preset_text(&m, "test")).unwrap();
            assert_eq!(m, again, "round trip of {name}");
        }
    }

    #[test]
    fn bad_ron_names_line() {
        let e = parse_preset("x.ron", "(\n schema: 1,\n name: 5,\n)").unwrap_err().to_string();
        assert!(e.starts_with("x.ron:3:"), "{e}");
        let e =
            parse_preset("y.ron", "(schema: 9, name: \"a\", arch: Table((layers: [], param_tensors: 0)))")
                .unwrap_err()
                .to_string();
        assert!(e.contains("schema 9"), "{e}");
    }
}
