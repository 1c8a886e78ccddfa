//! Exports of a plan: the scenario file (`.ron`, versioned), the plan report (Markdown / JSON),
//! the what-if curves (CSV), the roadmap, and framework settings that match the plan (DeepSpeed
//! JSON, Hugging Face `TrainingArguments`, PyTorch FSDP, Megatron-LM flags). Files are written
//! atomically and never overwrite an existing file unless asked to.

//!
//! Split by what a file is for: this module has the scenario file, the formats and the atomic
//! write; [`report`] the plan report, curves and hardware options; [`frameworks`] the DeepSpeed,
//! Hugging Face, FSDP and Megatron-LM settings.

mod compare;
mod frameworks;
mod python;
mod recipe;
mod report;

pub use compare::{Compared, compare_markdown_in};
pub use frameworks::{
    DEEPSPEED_INFERENCE_KEYS, DEEPSPEED_KEYS, DEEPSPEED_ZERO_KEYS, deepspeed_config,
    deepspeed_inference_config, fsdp_snippet, hf_inference, hf_training_args, megatron_args,
};
pub use recipe::{Recipe, recipe};
pub use report::{
    HwOption, curves_csv, options, report_json, report_markdown, report_markdown_in, with_chart_link,
};

use crate::estimate::Scenario;
use crate::gpu::{self, Gpu};
use crate::roadmap;
use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Schema version of scenario files.
pub const SCENARIO_SCHEMA: u32 = 1;

/// A saved scenario: what `--scenario FILE` and the app's File > Open read back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioFile {
    /// [`SCENARIO_SCHEMA`].
    pub schema: u32,
    /// GPU catalog id the plan targets.
    #[serde(default)]
    pub gpu: Option<String>,
    /// Sequences per optimizer step over the whole job (default: micro-batch x data-parallel).
    #[serde(default)]
    pub global_batch: Option<u64>,
    /// The scenario, model included (a file opens without the preset it came from).
    pub scenario: Scenario,
}

/// What went wrong reading or writing an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A scenario file that does not parse.
    #[error("{path}:{line}:{col}: {msg}")]
    Parse {
        /// File.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// Parser message.
        msg: String,
    },
    /// A scenario file of another schema.
    #[error("{path}: scenario schema {found} is not supported (this build reads schema {SCENARIO_SCHEMA})")]
    Schema {
        /// File.
        path: String,
        /// Its schema.
        found: u32,
    },
    /// A scenario the estimator rejects, or a GPU not in the catalog.
    #[error("{path}: {msg}")]
    Invalid {
        /// File.
        path: String,
        /// Why.
        msg: String,
    },
    /// The target exists and overwriting was not asked for.
    #[error("{0}: already exists (use --force to overwrite)")]
    Exists(PathBuf),
    /// The target is a folder.
    #[error("{0}: is a folder; give a file name inside it (e.g. {0}/plan.md)")]
    Folder(PathBuf),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Serialising failed.
    #[error("serialising: {0}")]
    Serialise(String),
}

impl ScenarioFile {
    /// Wraps a scenario.
    pub fn new(scenario: Scenario, gpu: Option<&Gpu>, global_batch: Option<u64>) -> Self {
        Self { schema: SCENARIO_SCHEMA, gpu: gpu.map(|g| g.id.clone()), global_batch, scenario }
    }

    /// The file's text.
    pub fn to_ron(&self) -> Result<String, ExportError> {
        let cfg = ron::ser::PrettyConfig::new().depth_limit(5);
        ron::ser::to_string_pretty(self, cfg)
            .map(|s| s + "\n")
            .map_err(|e| ExportError::Serialise(e.to_string()))
    }

    /// Parses and checks a scenario file; `path` is used in messages.
    pub fn from_ron(path: &str, text: &str) -> Result<Self, ExportError> {
        let f: Self = ron::from_str(text).map_err(|e| ExportError::Parse {
            path: path.to_owned(),
            line: e.span.start.line,
            col: e.span.start.col,
            msg: e.code.to_string(),
        })?;
        if f.schema != SCENARIO_SCHEMA {
            return Err(ExportError::Schema { path: path.to_owned(), found: f.schema });
        }
        f.scenario
            .validate()
            .map_err(|e| ExportError::Invalid { path: path.to_owned(), msg: e.to_string() })?;
        if let Some(id) = &f.gpu {
            gpu::find(id).map_err(|msg| ExportError::Invalid { path: path.to_owned(), msg })?;
        }
        Ok(f)
    }

    /// Reads a scenario file.
    pub fn load(path: &Path) -> Result<Self, ExportError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ExportError::Io { path: path.to_owned(), source })?;
        Self::from_ron(&path.display().to_string(), &text)
    }

    /// The GPU, if the file names one.
    pub fn gpu(&self) -> Option<Gpu> {
        self.gpu.as_deref().and_then(|id| gpu::find(id).ok())
    }

    /// The global batch: the file's, else micro-batch x data-parallel x pipeline micro-batches x
    /// gradient accumulation (so an export's accumulation is the one the estimate assumed).
    pub fn global_batch(&self) -> u64 {
        let p = &self.scenario.parallel;
        let accum = u64::from(self.scenario.stack.grad_accum.max(1));
        self.global_batch.unwrap_or(self.scenario.batch * p.dp * p.micro_batches().max(1) * accum)
    }

    /// Micro-batches per optimizer step on each data-parallel rank, pipeline micro-batches
    /// included (DeepSpeed's `gradient_accumulation_steps`, at least 1).
    pub fn grad_accum(&self) -> u64 {
        let per_step = self.scenario.batch * self.scenario.parallel.dp;
        self.global_batch().div_ceil(per_step.max(1)).max(1)
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, synced, then moved
/// into place. Without `force` an existing file is an error and is left untouched (the move is a
/// hard link, which refuses an existing target, so there is no window for a race). On any failure
/// the temporary file is removed and nothing half-written is left.
pub fn write_atomic(path: &Path, bytes: &[u8], force: bool) -> Result<(), ExportError> {
    let io = |source| ExportError::Io { path: path.to_owned(), source };
    if path.is_dir() {
        return Err(ExportError::Folder(path.to_owned()));
    }
    if !force && path.exists() {
        return Err(ExportError::Exists(path.to_owned()));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        if force {
            std::fs::rename(&tmp, path)
        } else {
            std::fs::hard_link(&tmp, path).and_then(|()| std::fs::remove_file(&tmp))
        }
    })();
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            if e.kind() == std::io::ErrorKind::AlreadyExists && !force {
                Err(ExportError::Exists(path.to_owned()))
            } else {
                Err(io(e))
            }
        }
    }
}

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The scenario file.
    Ron,
    /// Plan report, Markdown.
    Markdown,
    /// Plan report, JSON.
    Json,
    /// What-if curves, CSV.
    Csv,
    /// Roadmap, Markdown.
    Roadmap,
    /// Roadmap, JSON.
    RoadmapJson,
    /// DeepSpeed config JSON.
    Deepspeed,
    /// Hugging Face `TrainingArguments`.
    Hf,
    /// PyTorch FSDP snippet.
    Fsdp,
    /// Megatron-LM flags.
    Megatron,
}

impl Format {
    /// All formats with their names: the one list of `--format`'s tokens (a table of pairs, which
    /// callers iterate, rather than a [`token_enum!`](crate::tokens)).
    pub const ALL: [(Self, &'static str); 10] = [
        (Self::Ron, "ron"),
        (Self::Markdown, "md"),
        (Self::Json, "json"),
        (Self::Csv, "csv"),
        (Self::Roadmap, "roadmap"),
        (Self::RoadmapJson, "roadmap-json"),
        (Self::Deepspeed, "deepspeed"),
        (Self::Hf, "hf"),
        (Self::Fsdp, "fsdp"),
        (Self::Megatron, "megatron"),
    ];

    /// The names on the command line, in [`Self::ALL`]'s order.
    pub const TOKENS: [&'static str; 10] = {
        let mut names = [""; 10];
        let mut i = 0;
        while i < names.len() {
            names[i] = Self::ALL[i].1;
            i += 1;
        }
        names
    };

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(f, _)| *f == self).map_or("?", |(_, n)| n)
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Ron => "ron",
            Self::Markdown | Self::Roadmap => "md",
            Self::Json | Self::RoadmapJson | Self::Deepspeed => "json",
            Self::Csv => "csv",
            Self::Hf | Self::Fsdp => "py",
            Self::Megatron => "sh",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("png") {
            return Err("png is GUI-only: use File > Export chart/window as PNG in the app, or \
                        `vramscope --screenshot PATH.png` for the window"
                .into());
        }
        Self::ALL
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(s))
            .map(|(f, _)| *f)
            .ok_or_else(|| format!("unknown format \"{s}\" ({})", Self::TOKENS.join(", ")))
    }
}

impl crate::tokens::Forms for Format {
    fn forms() -> &'static [&'static str] {
        &Self::TOKENS
    }
}

/// The estimate `vramscope estimate` prints for `sc`: with a card, the allocator replayed on it
/// (`fit::verdict`), else the card-free estimate.
pub(crate) fn estimate_on(
    sc: &Scenario,
    gpu: Option<&Gpu>,
) -> Result<crate::estimate::Estimate, ExportError> {
    // on the card the verdict; without one the allocator replayed over the step, unless a flat
    // reserve stands for it: `fit::printed`, which the curves use too
    crate::fit::printed(sc, gpu.map(Gpu::capacity))
        .map(|(e, _)| e)
        .map_err(|e| ExportError::Invalid { path: "scenario".into(), msg: e.to_string() })
}

/// Renders one format (in English: [`render_in`] with [`Lang::En`](crate::i18n::Lang::En)).
pub fn render(f: &ScenarioFile, format: Format) -> Result<String, ExportError> {
    render_in(f, format, crate::i18n::Lang::En)
}

/// Renders one format, the Markdown plan report in `lang`; the other formats (machine-read files,
/// framework settings, the roadmap's JSON) are the same in every language; the Markdown roadmap
/// follows it too.
pub fn render_in(f: &ScenarioFile, format: Format, lang: crate::i18n::Lang) -> Result<String, ExportError> {
    let ser = |e: serde_json::Error| ExportError::Serialise(e.to_string());
    // the estimate `vramscope estimate` prints: with the file's card, the allocator replayed on it
    let est = || estimate_on(&f.scenario, f.gpu().as_ref());
    Ok(match format {
        Format::Ron => f.to_ron()?,
        Format::Markdown => report_markdown_in(f, &est()?, lang),
        Format::Json => serde_json::to_string_pretty(&report_json(f, &est()?)).map_err(ser)? + "\n",
        Format::Csv => curves_csv(f),
        Format::Roadmap | Format::RoadmapJson => {
            let g = f.gpu().ok_or_else(|| ExportError::Invalid {
                path: "scenario".into(),
                msg: "a roadmap needs a GPU (--gpu)".into(),
            })?;
            // the Markdown roadmap in the language asked for; its JSON stays English
            let lang = if format == Format::Roadmap { lang } else { crate::i18n::Lang::En };
            let r = roadmap::roadmap_in(&f.scenario, &g, 0.0, lang).ok_or_else(|| ExportError::Invalid {
                path: "scenario".into(),
                msg: "the scenario cannot be estimated".into(),
            })?;
            if format == Format::Roadmap {
                roadmap::to_markdown_in(&f.scenario, &r, None, lang)
            } else {
                serde_json::to_string_pretty(&r).map_err(ser)? + "\n"
            }
        }
        Format::Deepspeed | Format::Hf | Format::Fsdp | Format::Megatron => {
            // the framework files are a transformer's (causal-LM trainer, block wrap policy,
            // Megatron's GPT): a convolutional network's would be a different script
            if f.scenario.model.net().is_some() || f.scenario.model.traced().is_some() {
                let whose = if f.scenario.model.traced().is_some() {
                    "a traced model's training code is your own"
                } else {
                    "ResNet, ConvNeXt and Swin have none yet"
                };
                return Err(ExportError::Invalid {
                    path: "scenario".into(),
                    msg: format!(
                        "{}: the framework exports (deepspeed, hf, fsdp, megatron) write a language model's training code; {whose} (md, json, csv, ron and the roadmap apply)",
                        f.scenario.model.name
                    ),
                });
            }
            // the recipe refuses the formats a mode has no export for, before anything renders
            let r = recipe(f, format)?;
            let infer = f.scenario.mode == crate::estimate::Mode::Infer;
            let body = match format {
                Format::Deepspeed if infer => {
                    serde_json::to_string_pretty(&deepspeed_inference_config(f)).map_err(ser)? + "\n"
                }
                Format::Deepspeed => serde_json::to_string_pretty(&deepspeed_config(f)).map_err(ser)? + "\n",
                Format::Hf if infer => hf_inference(f),
                Format::Hf => hf_training_args(f),
                Format::Fsdp => fsdp_snippet(f),
                _ => megatron_args(f),
            };
            if format == Format::Deepspeed {
                // JSON has no comments: the recipe is printed beside it (see `notes`)
                body
            } else {
                // after the title line: what the settings below run, and whether it is the scenario
                let (title, rest) = body.split_once('\n').unwrap_or((&body, ""));
                let said: String = r.iter().flat_map(Recipe::lines).map(|l| format!("# {l}\n")).collect();
                format!("{title}\n{said}{rest}")
            }
        }
    })
}

/// What a framework export's recipe says (the precision and optimizer it implies, and whether
/// that is the scenario's), for the formats that cannot carry comments; empty for the others.
pub fn notes(f: &ScenarioFile, format: Format) -> Result<Vec<String>, ExportError> {
    Ok(recipe(f, format)?.map(|r| r.lines()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Checkpointing;
    use crate::model::preset::builtin;

    fn plan() -> ScenarioFile {
        let mut sc = Scenario::new(builtin("llama-2-7b").unwrap());
        sc.seq = 4096;
        sc.batch = 2;
        sc.checkpointing = Checkpointing::Full;
        sc.parallel.dp = 8;
        sc.parallel.zero = 3;
        ScenarioFile::new(sc, Some(&gpu::find("a100-80gb").unwrap()), Some(64))
    }

    #[test]
    fn scenario_file_round_trips() {
        let f = plan();
        let text = f.to_ron().unwrap();
        assert_eq!(ScenarioFile::from_ron("plan.ron", &text).unwrap(), f);
    }

    #[test]
    fn scenario_file_errors_name_the_line() {
        let text = plan().to_ron().unwrap().replacen("batch: 2", "batch: two", 1);
        let e = ScenarioFile::from_ron("plan.ron", &text).unwrap_err().to_string();
        assert!(
            e.starts_with("plan.ron:") && e.split(':').nth(1).unwrap().parse::<usize>().unwrap() > 1,
            "{e}"
        );
        let text = plan().to_ron().unwrap().replacen("schema: 1", "schema: 9", 1);
        assert!(ScenarioFile::from_ron("plan.ron", &text).unwrap_err().to_string().contains("schema 9"));
        let text = plan().to_ron().unwrap().replacen("batch: 2", "batch: 0", 1);
        assert!(ScenarioFile::from_ron("p.ron", &text).is_err());
    }

    #[test]
    fn deepspeed_batch_arithmetic_and_documented_keys() {
        let f = plan();
        let v = deepspeed_config(&f);
        let o = v.as_object().unwrap();
        for k in o.keys() {
            assert!(DEEPSPEED_KEYS.contains(&k.as_str()), "undocumented key {k}");
        }
        for k in v["zero_optimization"].as_object().unwrap().keys() {
            assert!(DEEPSPEED_ZERO_KEYS.contains(&k.as_str()), "undocumented zero key {k}");
        }
        // DeepSpeed asserts train_batch_size == micro x accumulation x world/mp
        assert_eq!(v["train_batch_size"], 64);
        assert_eq!(v["train_micro_batch_size_per_gpu"], 2);
        assert_eq!(v["gradient_accumulation_steps"], 4);
        assert_eq!(v["zero_optimization"]["stage"], 3);
        assert_eq!(v["bf16"]["enabled"], true);
    }

    #[test]
    fn the_chart_link_goes_under_the_breakdown_heading() {
        let f = plan();
        let md = report_markdown(&f, &crate::estimate::estimate(&f.scenario).unwrap());
        let linked = with_chart_link(&md, "plan.chart.png");
        let i = linked.find("## Per-GPU memory").unwrap();
        let j = linked.find("![per-GPU memory breakdown](plan.chart.png)").unwrap();
        let k = linked.find("| component |").unwrap();
        assert!(i < j && j < k, "link between the heading and the table");
        assert_eq!(linked.replace("\n![per-GPU memory breakdown](plan.chart.png)\n", ""), md);
    }

    #[test]
    fn atomic_writes_refuse_to_overwrite_and_leave_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("vramscope-export-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.txt");
        write_atomic(&p, b"one", false).unwrap();
        assert!(matches!(write_atomic(&p, b"two", false), Err(ExportError::Exists(_))));
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_atomic(&p, b"three", true).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"three");
        let e = write_atomic(&dir.join("missing/b.txt"), b"x", false).unwrap_err();
        assert!(matches!(e, ExportError::Io { .. }), "{e}");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.txt")], "no temporary files left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
