//! Speed targets: one full estimate under 2 µs, a 2,000-point batch sweep under 4 ms (so the GUI
//! can recompute every frame while a slider moves).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use vramscope::estimate::{AttentionImpl, Checkpointing, Scenario, estimate};
use vramscope::fit::{Knob, max_batch, sweep};
use vramscope::model::preset::builtin;

fn scenario() -> Scenario {
    let mut sc = Scenario::new(builtin("llama-3.1-8b").expect("preset"));
    sc.batch = 4;
    sc.seq = 4096;
    sc.attention = AttentionImpl::Sdpa;
    sc.checkpointing = Checkpointing::Full;
    sc
}

fn benches(c: &mut Criterion) {
    let sc = scenario();
    c.bench_function("estimate llama-3.1-8b (one full estimate)", |b| b.iter(|| estimate(black_box(&sc))));
    let mix = Scenario { model: builtin("mixtral-8x7b").expect("preset"), ..scenario() };
    c.bench_function("estimate mixtral-8x7b", |b| b.iter(|| estimate(black_box(&mix))));
    c.bench_function("sweep batch 1..=2000", |b| b.iter(|| sweep(black_box(&sc), Knob::Batch, 1..=2000)));
    c.bench_function("max_batch on 80 GiB", |b| b.iter(|| max_batch(black_box(&sc), 80 << 30)));
}

criterion_group!(group, benches);
criterion_main!(group);
