//! `vramscope export`.

use super::choice::choice;
use super::{EstimateArgs, bounds, inputs, notes};
use anyhow::{Context, Result};
use clap::Args;
use vramscope::export::{self, Format, ScenarioFile};
use vramscope::i18n::Lang;

/// Flags of `export`.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// The scenario (same flags as `estimate`, or --scenario FILE).
    #[command(flatten)]
    pub estimate: EstimateArgs,
    /// Sequences per optimizer step over the whole job (default: the file's, else micro-batch x
    /// data-parallel); sets gradient accumulation in the framework settings.
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_TOKENS))]
    pub global_batch: Option<u64>,
    /// What to write (png is GUI-only).
    #[arg(long, value_parser = choice::<Format>())]
    pub format: Format,
    /// Output file; without it the export is printed.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
    /// The language of the Markdown report (--format md). The other formats are the same in every
    /// language.
    #[arg(long, value_name = "en|zh-CN", default_value = Lang::En.name())]
    #[arg(value_parser = choice::<Lang>().notes(notes::LANG))]
    pub lang: Lang,
}

/// Runs `export`: renders, then writes atomically (or prints).
pub fn run_export(a: &ExportArgs) -> Result<String> {
    let i = inputs(&a.estimate)?;
    let f = ScenarioFile::new(i.sc, i.gpu.as_ref(), a.global_batch.or(i.global_batch));
    let text = export::render_in(&f, a.format, a.lang)?;
    // the recipe a framework export implies; the Python and shell exports carry it as comments
    let notes = export::notes(&f, a.format)?;
    match &a.output {
        None => {
            if a.format == Format::Deepspeed {
                for n in &notes {
                    eprintln!("note: {n}");
                }
            }
            Ok(text)
        }
        Some(path) => {
            export::write_atomic(path, text.as_bytes(), a.force)
                .with_context(|| format!("writing the {} export", a.format.name()))?;
            let mut out = format!("wrote {} ({} bytes)\n", path.display(), text.len());
            for n in &notes {
                out += &format!("note: {n}\n");
            }
            Ok(out)
        }
    }
}
