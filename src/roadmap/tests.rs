//! The roadmap's tests: paths on real cards, the Chinese texts, framework-aware changes.

use super::*;
use crate::estimate::Checkpointing;
use crate::gpu;
use crate::model::preset::builtin;
use crate::units::Precision;

/// Llama-2-13B full fine-tuning in fp32, batch 4 × 2048, no checkpointing, on an RTX 4090.
fn fp32_13b_on_a_4090() -> (Scenario, gpu::Gpu) {
    let mut sc = Scenario::new(builtin("llama-2-13b").unwrap());
    sc.seq = 2048;
    sc.batch = 4;
    sc.precision = Precision::Fp32;
    sc.checkpointing = Checkpointing::None;
    (sc, gpu::find("rtx-4090").unwrap())
}

/// The case: a 13B full fine-tune in fp32 does not fit one 24 GB card. The path takes
/// the seed's steps in order (mixed precision, checkpointing, sharding), each cumulative and
/// measured, stops once it fits, and the headline is what the path delivers.
#[test]
fn a_13b_full_fine_tune_on_24_gb_becomes_a_fitting_plan() {
    let (sc, gpu) = fp32_13b_on_a_4090();
    let r = roadmap(&sc, &gpu).unwrap();
    assert!(r.total_before > gpu.capacity());
    assert_eq!(r.max_batch_before, None);
    let titles: Vec<&str> = r.steps.iter().map(|s| s.title.as_str()).collect();
    for want in ["Mixed precision", "Gradient checkpointing", "Shard model states"] {
        assert!(titles.iter().any(|t| t.starts_with(want)), "{want} missing: {titles:?}");
    }
    assert!(r.fits_after && r.steps.iter().rev().find(|s| s.kind != StepKind::NotMemory).unwrap().fits);
    // it stops at the first step that fits: every memory step before it does not fit
    let memory: Vec<&Step> = r.steps.iter().filter(|s| s.kind != StepKind::NotMemory).collect();
    assert!(memory[..memory.len() - 1].iter().all(|s| !s.fits));
    // cumulative: each step's saving is the total before it less the total after it
    let mut before = r.total_before;
    for s in &memory {
        let after = s.total_after.unwrap();
        if let Some(saved) = s.saves {
            assert_eq!(saved, before - after, "{}", s.title);
            assert!(saved > 0, "no step saves nothing: {}", s.title);
        }
        before = after;
    }
    // not-memory steps say so and carry no saving
    assert!(r.steps.iter().filter(|s| s.kind == StepKind::NotMemory).all(|s| s.saves.is_none()));
    // the headline is the last step's: its GPUs and micro-batch
    let last = memory.last().unwrap();
    assert_eq!(r.max_batch_after, last.max_batch_after);
    assert!(r.headline.contains(&format!("{} x", last.gpus)), "{}", r.headline);
    assert!(r.headline.contains(&format!("{}", r.max_batch_after.unwrap())), "{}", r.headline);
    // the changes of method are beside the path, marked as such
    assert!(r.method.iter().all(|s| s.kind == StepKind::Method) && !r.method.is_empty());
    let md = to_markdown(&sc, &r, Some("llama-2-13b"));
    assert!(md.contains("| short term |") && md.contains("not a memory change"), "{md}");
    assert!(!md.contains("0.0 GiB (0 %)"), "{md}");
}

fn cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// The roadmap in Chinese is the English one's figures with every text translated: the same
/// steps, totals, fits and flags, each title and the headline in Chinese, the Markdown's
/// frame too; English stays the default.
#[test]
fn the_roadmap_in_chinese_has_the_same_figures_and_chinese_texts() {
    let (sc, gpu) = fp32_13b_on_a_4090();
    let en = roadmap(&sc, &gpu).unwrap();
    assert_eq!(roadmap_in(&sc, &gpu, 0.0, Lang::En).unwrap(), en);
    let zh = roadmap_in(&sc, &gpu, 0.0, Lang::ZhCn).unwrap();
    assert_eq!(
        (zh.total_before, zh.max_batch_after, zh.fits_after),
        (en.total_before, en.max_batch_after, en.fits_after)
    );
    let all = |r: &Roadmap| -> Vec<Step> {
        r.steps.iter().chain(&r.raise_batch).chain(&r.method).cloned().collect()
    };
    let (e, z) = (all(&en), all(&zh));
    assert_eq!(e.len(), z.len());
    assert!(!z.is_empty());
    for (e, z) in e.iter().zip(&z) {
        assert!(cjk(&z.title), "{}", z.title);
        assert_ne!(e.title, z.title);
        assert_eq!(
            (e.horizon, e.kind, e.total_after, e.saves, e.fits),
            (z.horizon, z.kind, z.total_after, z.saves, z.fits)
        );
        assert_eq!((&e.estimate_args, &e.changes, &e.how), (&z.estimate_args, &z.changes, &z.how));
        // the peak's moment in the step's language, the same moment
        assert_eq!(e.peak_at.is_empty(), z.peak_at.is_empty());
        assert!(z.peak_at.is_empty() || cjk(&z.peak_at), "{}", z.peak_at);
        assert!(["低", "中", "高"].contains(&z.effort), "{}", z.effort);
        assert_eq!(effort_in(e.effort, Lang::ZhCn), z.effort);
    }
    // the headline names the same job and micro-batch
    assert!(cjk(&zh.headline), "{}", zh.headline);
    let last = en.steps.iter().rev().find(|s| s.kind != StepKind::NotMemory).unwrap();
    assert!(zh.headline.contains(&format!("{} x", last.gpus)), "{}", zh.headline);
    assert!(zh.headline.contains(&en.max_batch_after.unwrap().to_string()), "{}", zh.headline);
    // the Markdown: English is unchanged, Chinese has no English frame left
    let md_en = to_markdown(&sc, &en, Some("llama-2-13b"));
    assert_eq!(to_markdown_in(&sc, &en, Some("llama-2-13b"), Lang::En), md_en);
    let md = to_markdown_in(&sc, &zh, Some("llama-2-13b"), Lang::ZhCn);
    assert!(md.contains("# 显存路线图：") && md.contains("| 短期 |") && md.contains("不改变显存"), "{md}");
    assert!(
        md.contains("## 做法") && md.contains("执行之后：vramscope estimate --model llama-2-13b"),
        "{md}"
    );
    for english in [
        "horizon",
        "not a memory change",
        "per GPU-hour",
        "## How",
        "after it:",
        "| yes |",
        "| no |",
        "capacity ",
    ] {
        assert!(!md.contains(english), "{english} left in: {md}");
    }
    // the same rows and the same flags
    let rows = |m: &str| m.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| #")).count();
    assert_eq!(rows(&md), rows(&md_en));
    let flags = |m: &str| {
        m.lines()
            .filter(|l| l.contains("vramscope estimate --model"))
            .map(|l| l.split_once("vramscope").unwrap().1.to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(flags(&md), flags(&md_en));
    assert_eq!(Horizon::Long.label_in(Lang::ZhCn), "长期");
    assert_eq!(Horizon::Long.label(), "long term");
}

/// "More nodes" keeps the job's global batch, pipeline micro-batches included: a 2-stage
/// pipeline with 64 micro-batches of 1 is a global batch of 64, and the layout the step picks
/// runs 64 sequences per step too.
#[test]
fn more_nodes_keeps_a_pipeline_job_s_global_batch() {
    let mut sc = Scenario::new(builtin("llama-2-13b").unwrap());
    sc.seq = 2048;
    sc.precision = Precision::Bf16Mixed;
    sc.checkpointing = Checkpointing::Full;
    sc.parallel.pp = 2;
    sc.parallel.micro_batches = 64;
    let mut g = gpu::find("rtx-4090").unwrap();
    let c = changes::changes(&sc, 0.0).into_iter().find(|c| c.title.starts_with("More nodes")).unwrap();
    let mut s = sc.clone();
    assert!((c.apply)(&mut s, &mut g), "a layout on more GPUs fits");
    let global = |s: &Scenario| s.batch * s.micro_batches_per_step() * s.parallel.dp;
    assert!(s.parallel.world() > sc.parallel.world());
    assert_eq!(global(&sc), 64);
    // the search plans the job's global batch, or one sequence per GPU when that is more
    assert!(s.parallel.world() < 64, "{:?}", s.parallel);
    assert_eq!(global(&s), 64, "{:?}", s.parallel);
}

/// A litgpt LoRA job on 2 GPUs (Lightning's FSDP1, adapters in the blocks' flat parameters,
/// `no_backward_sync`): litgpt refuses `--quantize` on more than one device, so no QLoRA row;
/// the offload offered is FSDP's own (parameters, gradients, step on the CPU), which leaves
/// the unsharded gradients `no_sync` accumulates on the GPU; and the roadmap's headline
/// is the estimate's.
#[test]
fn a_litgpt_fsdp_job_gets_what_litgpt_and_fsdp_can_run() {
    use crate::estimate::{Framework, FsdpMode, Offload, estimate_reserved};
    let mut sc = Scenario::new(builtin("llama-2-7b").unwrap());
    sc.seq = 512;
    sc.precision = Precision::Bf16;
    sc.checkpointing = Checkpointing::Full;
    sc.lora = Some("8:q,v".parse().unwrap());
    sc.stack = Framework::Litgpt.stack();
    sc.stack.grad_accum = 16;
    sc.parallel.dp = 2;
    sc.parallel.fsdp = Some(FsdpMode::FullShard);
    let g = gpu::find("rtx-4090").unwrap();
    let r = roadmap(&sc, &g).unwrap();
    assert!(r.method.iter().all(|m| !m.title.contains("QLoRA")), "{:?}", r.method);
    let all: Vec<_> = r.steps.iter().chain(&r.raise_batch).collect();
    assert!(all.iter().all(|s| !s.title.contains("ZeRO-Offload")));
    let offload = all.iter().find(|s| s.title.starts_with("FSDP CPU offload")).expect("FSDP's offload");
    assert_eq!(offload.changes, ["--offload", "params"]);
    let mut off = sc.clone();
    off.parallel.offload = Offload::Params;
    let (with, _) = estimate_reserved(&off, Some(g.capacity())).unwrap();
    // Llama-2-7B's block weights in bf16: 32 x 202,383,360 x 2 bytes, unsharded
    assert!(with.gradients > 12_900_000_000, "{}", with.gradients);
    // on one GPU the same framework is offered QLoRA, as litgpt runs it, and sharding by
    // litgpt's FSDP (not DeepSpeed's ZeRO-3)
    let mut one = Scenario::new(builtin("llama-2-13b").unwrap());
    one.seq = 1024;
    one.precision = Precision::Bf16;
    one.lora = sc.lora;
    one.stack = Framework::Litgpt.stack();
    let r1 = roadmap(&one, &g).unwrap();
    let q = r1.method.iter().find(|m| m.title.contains("QLoRA")).expect("QLoRA on one GPU");
    assert!(q.how.iter().any(|h| h.contains("--quantize bnb.nf4-dq")), "{:?}", q.how);
    let shard = r1.steps.iter().find(|s| s.title.starts_with("Shard model states")).expect("sharding");
    assert!(shard.changes.windows(2).any(|w| w == ["--fsdp", "full_shard"]), "{:?}", shard.changes);
}

/// Llama-3.1-8B fully fine-tuned on an RTX 4090: the settings the estimator models (8-bit paged
/// AdamW, the optimizer step in backward) fit it on the one card, so the roadmap proposes that
/// before any hardware (it once said "fits on 4 x RTX 4090"), and each step's flags give its
/// total back through the command line's own scenario.
#[test]
fn a_full_8b_fine_tune_on_a_4090_fits_the_one_card_first() {
    let sc = Scenario::new(builtin("llama-3.1-8b").unwrap());
    let gpu = gpu::find("rtx-4090").unwrap();
    let r = roadmap(&sc, &gpu).unwrap();
    assert!(r.fits_after, "{}", r.headline);
    let memory: Vec<&Step> = r.steps.iter().filter(|s| s.kind != StepKind::NotMemory).collect();
    assert!(
        memory.iter().all(|s| s.kind == StepKind::Setting && s.gpus == 1),
        "{:?}",
        memory.iter().map(|s| &s.title).collect::<Vec<_>>()
    );
    assert!(r.headline.contains("1 x NVIDIA GeForce RTX 4090"), "{}", r.headline);
    let last = memory.last().unwrap();
    assert!(last.estimate_args.iter().any(|a| a == "--optimizer-in-backward"), "{:?}", last.estimate_args);
    assert!(last.estimate_args.iter().any(|a| a == "paged-adamw-8bit"), "{:?}", last.estimate_args);
}

/// The path holds only what the fit needs: dropping any memory step of it leaves the job not
/// fitting or on other hardware (the greedy search takes cheap changes that save little, such
/// as checkpointing under an optimizer-step peak, before the one that makes it fit).
#[test]
fn the_path_holds_only_the_steps_the_fit_needs() {
    let sc = Scenario::new(builtin("llama-3.1-8b").unwrap());
    let gpu = gpu::find("rtx-4090").unwrap();
    let r = roadmap(&sc, &gpu).unwrap();
    let titles: Vec<&str> = r.steps.iter().map(|s| s.title.as_str()).collect();
    assert!(!titles.iter().any(|t| t.starts_with("Fused linear")), "{titles:?}");
    assert!(!titles.iter().any(|t| t.starts_with("Gradient checkpointing")), "{titles:?}");
    // what it left out still raises the batch on the job that fits
    assert!(r.raise_batch.iter().any(|s| s.title.starts_with("Gradient checkpointing")));
}
