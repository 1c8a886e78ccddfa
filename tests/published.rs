//! Published real-GPU measurements (`tests/data/published.md`, rows as numbered there) against the
//! estimate with the settings each source states, printed as a table. Rows the tool cannot
//! reproduce yet are listed with the reason and checked only loosely; the others must stay
//! within their bound.
//!
//! Quantities: "nvml" rows compare the CUDA context measured in the same source (row 1) plus the
//! caching allocator's reserved bytes (the replay) with nvidia-smi's used memory; "alloc" rows
//! compare `peak_allocated` with `torch.cuda.max_memory_allocated()`.
//!
//! Each table is rendered as Markdown and checked against its section of `docs/accuracy.md`
//! (`UPDATE_DOCS=1` rewrites it).

mod common;
mod doc_sync;

use vramscope::estimate::{
    AttentionImpl, BaseQuant, Checkpointing, Framework, FsdpMode, Lora, Loss, Mode, ModelCode, Offload,
    Optimizer, Scenario, Torch, estimate_reserved,
};
use vramscope::model::preset;
use vramscope::units::Precision;

// each source's rows, in tests/published/
#[path = "published/sources.rs"]
mod sources;
use sources::{bert, load, rows};

const MIB: f64 = 1048576.0;
const GIB: f64 = 1073741824.0;

#[derive(Clone, Copy)]
enum Unit {
    /// nvidia-smi MiB: context + reserved.
    NvmlMib,
    /// max_memory_allocated in GB (1e9), as litgpt prints it.
    AllocGb,
    /// max_memory_allocated in GiB.
    AllocGib,
}

struct Row {
    id: &'static str,
    settings: String,
    published: f64,
    unit: Unit,
    sc: Scenario,
    /// Bound on |error| (fraction), and why a row is outside 10 % when it is.
    bound: f64,
    why: &'static str,
}

#[test]
fn published_real_gpu_rows_with_the_settings_their_sources_state() {
    let mut errors = Vec::new();
    let mut failures = Vec::new();
    let mut md = String::from(
        "| row | settings | published | predicted | error | why outside 10 % |\n|---|---|---:|---:|---:|---|\n",
    );
    for r in rows() {
        let (e, replay) = estimate_reserved(&r.sc, None).unwrap_or_else(|err| panic!("row {}: {err}", r.id));
        let (pred, unit) = match r.unit {
            Unit::NvmlMib => ((r.sc.overhead.cuda_context_bytes + replay.peak_reserved) as f64 / MIB, "MiB"),
            Unit::AllocGb => (e.peak_allocated as f64 / 1e9, "GB"),
            Unit::AllocGib => (e.peak_allocated as f64 / GIB, "GiB"),
        };
        let err = pred / r.published - 1.0;
        errors.push(err.abs());
        let note = if err.abs() > 0.10 { r.why } else { "" };
        // nvidia-smi's figures are whole MiB
        let decimals = if unit == "MiB" { 0 } else { 2 };
        md += &format!(
            "| {} | {} | {:.*} {unit} | {:.*} {unit} | {:+.1} % | {note} |\n",
            r.id,
            r.settings,
            decimals,
            r.published,
            decimals,
            pred,
            100.0 * err
        );
        if err.abs() > r.bound {
            failures.push(format!("row {}: {:+.1} % (bound {:.0} %)", r.id, 100.0 * err, 100.0 * r.bound));
        }
        if err.abs() > 0.10 {
            assert!(!r.why.is_empty(), "row {} is outside 10 % without a reason", r.id);
        }
    }
    errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2];
    let within = errors.iter().filter(|e| **e <= 0.10).count();
    md += &format!(
        "\n{} rows: median \\|error\\| {:.1} %, {within} within 10 %.\n",
        errors.len(),
        100.0 * median
    );
    println!("{md}");
    assert!(failures.is_empty(), "outside bounds:\n{}", failures.join("\n"));
    doc_sync::sync("docs/accuracy.md", Some("published"), &md, "published");
}

#[test]
fn the_weights_load_row_is_the_replayed_parameters() {
    // row 2: BERT-large (SeqCls) weights moved to the V100: 2631 MiB with the 1343 MiB context;
    // what the allocator reserves for them is the parameter tensors in their segments (small ones
    // share 2 MiB blocks, 1-10 MiB ones 20 MiB blocks)
    let sc = bert(Precision::Fp32, 1, false, Optimizer::AdamwLoop);
    let (_, replay) = estimate_reserved(&sc, None).unwrap_or_else(|err| panic!("{err}"));
    let nvml = 1343.0 + replay.after_load as f64 / MIB;
    println!("row 2: {nvml:.0} MiB predicted vs 2631 MiB published");
    assert!((nvml / 2631.0 - 1.0).abs() < 0.01, "{nvml:.0} MiB vs 2631");
    let md = format!(
        "Row 2, BERT-large's weights loaded on the V100: 2631 MiB published, {nvml:.0} MiB predicted ({:+.1} %).",
        100.0 * (nvml / 2631.0 - 1.0)
    );
    doc_sync::sync("docs/accuracy.md", Some("published-weights"), &md, "published");
}

/// Replays an exact allocation trace (`tests/data/truth/alloc_trace`) through the allocator model,
/// the cuBLAS workspace allocated at the first forward as the estimator's replay does; returns
/// (peak allocated, peak reserved).
fn replay_trace(path: &str, workspace: u64) -> (u64, u64) {
    use vramscope::alloc::{Allocator, Config};
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut a = Allocator::new(Config::default());
    let mut ws = workspace > 0;
    for (n, l) in text.lines().enumerate() {
        let mut it = l.split(' ').skip(1);
        let mut num = || -> u64 {
            it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{path}:{}: {l}", n + 1))
        };
        match l.as_bytes().first() {
            Some(b'a') => {
                let (id, bytes) = (num(), num());
                let _ = a.malloc(id as u32, bytes, 0);
            }
            Some(b'f') => a.free(num() as u32),
            Some(b'#') if ws && l.contains("forward") => {
                let _ = a.malloc(u32::MAX, workspace, 0);
                ws = false;
            }
            _ => {}
        }
    }
    let s = a.stats();
    (s.peak_allocated, s.peak_reserved)
}

#[test]
fn the_step_replay_stays_near_an_exact_allocation_trace_of_the_same_step() {
    // rows 3 and 5a: the estimator's replay (tensors by category, one allocation per op's saves)
    // against every storage of the real step, both through the same allocator model, under
    // today's PyTorch and under 1.10 (whose softmax keeps its input: `trace_bert.py ... torch1.10`)
    let mut md = String::from(
        "| trace | allocated | reserved | the estimator's replay: allocated / reserved | trace reserved + context | nvidia-smi | error |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (file, precision, torch, published) in [
        ("bert-large-seqcls-fp32-b4.trace", Precision::Fp32, Torch::Current, 14949.0),
        ("bert-large-seqcls-fp16amp-b4.trace", Precision::Fp16Amp, Torch::Current, 13939.0),
        ("bert-large-seqcls-fp32-b4-torch1.10.trace", Precision::Fp32, Torch::Before1_11, 14949.0),
        ("bert-large-seqcls-fp16amp-b4-torch1.10.trace", Precision::Fp16Amp, Torch::Before1_11, 13939.0),
    ] {
        let mut sc = bert(precision, 4, false, Optimizer::AdamwLoop);
        sc.stack.torch = torch;
        let (_, replay) = estimate_reserved(&sc, None).unwrap_or_else(|err| panic!("{err}"));
        let path = format!("tests/data/truth/alloc_trace/{file}");
        let (alloc, reserved) = replay_trace(&path, sc.overhead.workspace_bytes);
        let (ours, trace) = (replay.peak_reserved as f64 / MIB, reserved as f64 / MIB);
        let ctx = sc.overhead.cuda_context_bytes as f64 / MIB;
        let err = (trace + ctx) / published - 1.0;
        md += &format!(
            "| `{file}` | {:.0} MiB | {trace:.0} MiB | {:.0} / {ours:.0} MiB | {:.0} MiB | {published:.0} MiB | {:+.1} % |\n",
            alloc as f64 / MIB,
            replay.peak_allocated as f64 / MIB,
            trace + ctx,
            100.0 * err,
        );
        println!(
            "{file}: exact trace {:.0} MiB allocated, {trace:.0} MiB reserved; the estimator's replay {:.0} / {ours:.0} MiB; with the context {:.0} MiB vs nvidia-smi's {published:.0} MiB ({:+.1} %)",
            alloc as f64 / MIB,
            replay.peak_allocated as f64 / MIB,
            trace + ctx,
            100.0 * err,
        );
        // the peaks allocated agree (the walk is exact on this model's saves; under autocast its
        // replay is 1.0-1.3 % over the trace's peak); the category replay reserves a little more
        // than the exact stream, never less
        assert!((replay.peak_allocated as f64 / alloc as f64 - 1.0).abs() < 0.015, "{file}");
        assert!(ours >= trace && ours / trace - 1.0 < 0.06, "{file}: {ours:.0} vs {trace:.0} MiB");
        // today's step stays 9-12 % under what nvidia-smi showed; PyTorch 1.10's (the page's)
        // within 5 %
        if torch == Torch::Before1_11 {
            assert!(err.abs() < 0.05, "{file}: {:+.1} %", 100.0 * err);
        } else {
            assert!(err < -0.08, "{file}: {:+.1} %", 100.0 * err);
        }
    }
    doc_sync::sync("docs/accuracy.md", Some("published-bert-traces"), &md, "published");
}

/// Exact allocation traces of a transformers causal LM's training steps (`trace_causal.py`:
/// Llama-3.2-1B, seq 2048, AdamW foreach, three steps, every storage in order; transformers' loss
/// or torchtune's chunked one, the optimizer after or in backward) replayed through the allocator
/// model, against the estimator's replay of the same scenario: the peaks allocated agree (the
/// walk is exact), and the reserved peaks (what the cache keeps) within 8 % (10 % with the
/// optimizer in backward).
#[test]
fn the_llm_step_replay_stays_near_exact_traces_of_the_same_steps() {
    use Checkpointing::{Full, None as NoCkpt};
    let (hf, chunked) = (Loss::Hf, Loss::Chunked { chunks: 8 });
    let mut failed = Vec::new();
    let mut md = String::from(
        "| trace | allocated | reserved | the estimator's replay: allocated / reserved | reserved error |\n|---|---:|---:|---:|---:|\n",
    );
    for (file, precision, batch, ckpt, loss, in_backward) in [
        ("llama-3.2-1b-bf16-b1.trace", Precision::Bf16, 1, NoCkpt, hf, false),
        ("llama-3.2-1b-bf16-b2.trace", Precision::Bf16, 2, NoCkpt, hf, false),
        ("llama-3.2-1b-bf16-ckpt-b2.trace", Precision::Bf16, 2, Full, hf, false),
        ("llama-3.2-1b-bf16-ckpt-b5.trace", Precision::Bf16, 5, Full, hf, false),
        ("llama-3.2-1b-bf16-amp-ckpt-b2.trace", Precision::Bf16Amp, 2, Full, hf, false),
        ("llama-3.2-1b-bf16-amp-ckpt-b5.trace", Precision::Bf16Amp, 5, Full, hf, false),
        // torchtune's chunked loss and optimizer in backward
        ("llama-3.2-1b-bf16-b1-chunked8.trace", Precision::Bf16, 1, NoCkpt, chunked, false),
        ("llama-3.2-1b-bf16-b1-chunked8-inbwd.trace", Precision::Bf16, 1, NoCkpt, chunked, true),
        ("llama-3.2-1b-bf16-ckpt-b2-chunked8.trace", Precision::Bf16, 2, Full, chunked, false),
        ("llama-3.2-1b-bf16-ckpt-b2-chunked8-inbwd.trace", Precision::Bf16, 2, Full, chunked, true),
        ("llama-3.2-1b-bf16-ckpt-b2-inbwd.trace", Precision::Bf16, 2, Full, hf, true),
    ] {
        let mut sc = load("tests/data/truth/configs/llama3.2-1b.json");
        sc.seq = 2048;
        sc.batch = batch;
        sc.precision = precision;
        sc.checkpointing = ckpt;
        sc.stack.loss = loss;
        sc.stack.optimizer_in_backward = in_backward;
        let (_, replay) = estimate_reserved(&sc, None).unwrap_or_else(|err| panic!("{err}"));
        let path = format!("tests/data/truth/alloc_trace/{file}");
        let (alloc, reserved) = replay_trace(&path, sc.overhead.workspace_bytes);
        let (ours, trace) = (replay.peak_reserved as f64, reserved as f64);
        md += &format!(
            "| `{file}` | {:.2} GiB | {:.2} GiB | {:.2} / {:.2} GiB | {:+.1} % |\n",
            alloc as f64 / GIB,
            trace / GIB,
            replay.peak_allocated as f64 / GIB,
            ours / GIB,
            100.0 * (ours / trace - 1.0)
        );
        println!(
            "{file}: exact trace {:.2} GiB allocated, {:.2} GiB reserved; the estimator's replay {:.2} / {:.2} GiB ({:+.1} %)",
            alloc as f64 / GIB,
            trace / GIB,
            replay.peak_allocated as f64 / GIB,
            ours / GIB,
            100.0 * (ours / trace - 1.0)
        );
        if (replay.peak_allocated as f64 / alloc as f64 - 1.0).abs() >= 0.005 {
            failed.push(format!("{file}: allocated {} vs {alloc}", replay.peak_allocated));
        }
        // an optimizer in backward makes each parameter's states in the first backward, among
        // the activations; the replay spreads them over its backward events (whole tensors, the
        // last parameters first), which places them less exactly
        let bound = if in_backward { 0.10 } else { 0.08 };
        if (ours / trace - 1.0).abs() >= bound {
            failed.push(format!("{file}: reserved {:.2} vs {:.2} GiB", ours / GIB, trace / GIB));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
    doc_sync::sync("docs/accuracy.md", Some("published-llm-traces"), &md, "published");
}
