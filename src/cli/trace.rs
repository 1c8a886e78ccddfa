//! `vramscope trace`: writes the tracer script, or says what a trace file holds.

use anyhow::{Result, bail};
use clap::Args;

/// Flags of `trace`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "A model file defines model() and inputs(DIM, ...) (and optionally loss(output, inputs)); \
then: python vramscope_trace.py my_model.py --dim batch=2,3,4 --dim height=256,384,512 --dim width=256,384,512 \
--precision bf16 --out my_model.vstrace.json, and vramscope estimate --model my_model.vstrace.json --batch 8 --image-size 768x768."
)]
pub struct TraceArgs {
    /// Print the tracer (a Python script that needs only torch) to stdout, or to -o FILE.
    #[arg(long, conflicts_with = "info")]
    pub emit_script: bool,
    /// With --emit-script: the file to write.
    #[arg(short, long, value_name = "FILE", requires = "emit_script")]
    pub output: Option<std::path::PathBuf>,
    /// Say what a trace holds: what was traced, its dims, its parameters, what extrapolates,
    /// what checkpointing wraps (a file, or a traced preset's name).
    #[arg(long, value_name = "FILE.vstrace.json|PRESET")]
    pub info: Option<std::path::PathBuf>,
}

/// Runs `trace`.
pub fn run_trace(a: &TraceArgs) -> Result<String> {
    if a.emit_script {
        return match &a.output {
            Some(p) => {
                std::fs::write(p, vramscope::trace::SCRIPT)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
                Ok(format!("tracer written to {}\n", p.display()))
            }
            None => Ok(vramscope::trace::SCRIPT.to_owned()),
        };
    }
    let Some(path) = &a.info else { bail!("trace: give --emit-script or --info FILE.vstrace.json") };
    // a built-in traced preset by its name, else a file
    let preset = path.to_str().filter(|_| !path.exists()).and_then(vramscope::model::preset::builtin);
    let t = match preset.as_ref().and_then(|m| m.traced()) {
        Some(t) => t.clone(),
        None => vramscope::trace::read(path)?,
    };
    let mut s = format!("{}\n", t.describe());
    s += &format!(
        "  parameters {} ({} trainable) in {} tensors; {} events ({} storages made)\n",
        t.n_params(),
        t.n_trainable(),
        t.params.len(),
        t.events.len(),
        t.events.iter().filter(|e| e.made.is_some()).count()
    );
    for d in &t.dims {
        let how = if d.traced_only {
            "traced values only (some tensor is not multilinear in it)"
        } else if d.values.len() == 1 {
            "fixed"
        } else if d.checked() {
            "any value (fitted on the first two, checked at the rest)"
        } else {
            "any value (fitted on two values, not checked at a third)"
        };
        let v: Vec<String> = d.values.iter().map(u64::to_string).collect();
        s += &format!("  dim {}: traced at {}; answers {how}\n", d.name, v.join(", "));
    }
    for m in &t.misfits {
        s += &format!("  not multilinear: {m}\n");
    }
    s += &if t.checkpoint.available() {
        format!(
            "  --checkpoint full: {} calls of {} checkpointed (non-reentrant, as diffusers and transformers wrap them)\n",
            t.checkpoint.regions.len(),
            t.checkpoint.blocks.join(", ")
        )
    } else {
        "  --checkpoint full: not answered (no block classes recorded; trace with --blocks CLASS,CLASS)\n"
            .to_owned()
    };
    Ok(s)
}
