//! Speed targets: one full estimate under 2 µs, a 2,000-point batch sweep under 4 ms (so the GUI
//! can recompute every frame while a slider moves).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use vramscope::estimate::{AttentionImpl, Checkpointing, Scenario, estimate};
use vramscope::fit::{Knob, max_batch, sweep_flat};
use vramscope::model::preset::builtin;

fn scenario() -> Scenario {
    let mut sc = Scenario::new(builtin("llama-3.1-8b").expect("preset"));
    sc.batch = 4;
    sc.seq = 4096;
    sc.attention = AttentionImpl::Sdpa;
    sc.checkpointing = Checkpointing::Full;
    sc
}

/// A 100-block hybrid: Nemotron-H's pattern (Mamba2, ReLU² MLP, attention every 10th and experts
/// every 5th block) at Nemotron-H-8B's widths.
fn hybrid() -> Scenario {
    let pattern: String = (0..100)
        .map(|i| match i % 10 {
            9 => '*',
            4 => 'E',
            i if i % 2 == 0 => 'M',
            _ => '-',
        })
        .collect();
    let text = format!(
        r#"{{"model_type":"nemotron_h","hybrid_override_pattern":"{pattern}","num_hidden_layers":100,
        "hidden_size":4096,"intermediate_size":21504,"num_attention_heads":32,"num_key_value_heads":8,
        "head_dim":128,"mamba_num_heads":128,"mamba_head_dim":64,"ssm_state_size":128,"n_groups":8,
        "chunk_size":128,"n_routed_experts":64,"num_experts_per_tok":6,"moe_intermediate_size":1856,
        "moe_shared_expert_intermediate_size":3712,"vocab_size":131072}}"#
    );
    let spec = vramscope::model::hf_config::parse("hybrid.json", &text).expect("config").spec;
    let model = vramscope::model::ModelSpec {
        name: "hybrid-100".into(),
        arch: vramscope::model::Architecture::Transformer(Box::new(spec)),
    };
    let mut sc = Scenario::new(model);
    (sc.batch, sc.seq, sc.checkpointing) = (1, 8192, Checkpointing::Full);
    sc
}

fn benches(c: &mut Criterion) {
    let sc = scenario();
    let hy = hybrid();
    c.bench_function("estimate a 100-block hybrid (Mamba2, attention, MLP and MoE blocks)", |b| {
        b.iter(|| estimate(black_box(&hy)))
    });
    c.bench_function("estimate llama-3.1-8b (one full estimate)", |b| b.iter(|| estimate(black_box(&sc))));
    let mix = Scenario { model: builtin("mixtral-8x7b").expect("preset"), ..scenario() };
    c.bench_function("estimate mixtral-8x7b", |b| b.iter(|| estimate(black_box(&mix))));
    c.bench_function("sweep batch 1..=2000 (flat reserve)", |b| {
        b.iter(|| sweep_flat(black_box(&sc), Knob::Batch, 1..=2000))
    });
    c.bench_function("max_batch on 80 GiB", |b| b.iter(|| max_batch(black_box(&sc), 80 << 30)));
    let mut big = Scenario::new(builtin("llama-2-70b").expect("preset"));
    big.seq = 4096;
    big.precision = vramscope::units::Precision::Bf16Mixed;
    let gpu = vramscope::gpu::find("h100-80gb").expect("catalog");
    let speed = vramscope::plan::SpeedModel::default();
    c.bench_function("plan search: 70B on 64 x H100, global batch 512", |b| {
        b.iter(|| vramscope::plan::search(black_box(&big), &gpu, 64, 512, &speed))
    });
    let mut tp = scenario();
    tp.parallel = vramscope::estimate::Parallel {
        tp: 8,
        pp: 4,
        dp: 2,
        zero: 1,
        micro_batches: 8,
        ..Default::default()
    };
    c.bench_function("estimate with TP 8 x PP 4 x DP 2 (per-stage)", |b| b.iter(|| estimate(black_box(&tp))));
    // serving capacity: target under 1 ms, so the GUI's concurrency curve follows a slider
    let serve_cfg = vramscope::serve::ServeConfig::default();
    let m70 = builtin("llama-3.1-70b").expect("preset");
    c.bench_function("serve llama-3.1-70b on an H100 (one answer)", |b| {
        b.iter(|| vramscope::serve::serve(black_box(&m70), &gpu, &serve_cfg, None))
    });
    // the Serve mode recomputes its options and roadmap on every change of a control
    let setup = vramscope::serve::advice::Setup {
        model: m70,
        gpu: gpu.clone(),
        cfg: vramscope::serve::ServeConfig { max_model_len: Some(8192), ..Default::default() },
        checkpoint_dtype: None,
    };
    c.bench_function("serve advice llama-3.1-70b on an H100 (options + roadmap)", |b| {
        b.iter(|| vramscope::serve::advice::advise(black_box(&setup), Some(32.0)))
    });
}

/// The Timeline tab recomputes the step's events while a slider moves: 80 blocks, op by op.
fn timeline_bench(c: &mut Criterion) {
    let mut sc = Scenario::new(builtin("llama-3.1-70b").expect("preset"));
    sc.seq = 4096;
    sc.checkpointing = Checkpointing::Full;
    c.bench_function("timeline llama-3.1-70b (80 blocks, per-op events)", |b| {
        b.iter(|| vramscope::estimate::timeline(black_box(&sc)))
    });
    sc.checkpointing = Checkpointing::None;
    c.bench_function("timeline llama-3.1-70b, no checkpointing", |b| {
        b.iter(|| vramscope::estimate::timeline(black_box(&sc)))
    });
    // what `vramscope estimate` and the app compute on every change: the step's events replayed
    // through the caching allocator (three steps, recomputes op by op)
    sc.checkpointing = Checkpointing::Full;
    c.bench_function("estimate_reserved llama-3.1-70b (the step replayed, checkpointed)", |b| {
        b.iter(|| vramscope::estimate::estimate_reserved(black_box(&sc), Some(80 << 30)))
    });
    // FSDP1 on 8 GPUs: flat gradients per unit, unsharded under no_sync
    sc.parallel.dp = 8;
    sc.parallel.fsdp = Some(vramscope::estimate::FsdpMode::FullShard);
    sc.stack.grad_accum = 4;
    c.bench_function("estimate_reserved llama-3.1-70b, 8 x FSDP1, accumulation", |b| {
        b.iter(|| vramscope::estimate::estimate_reserved(black_box(&sc), Some(80 << 30)))
    });
}

criterion_group!(group, benches, timeline_bench);
criterion_main!(group);
