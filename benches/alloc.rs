//! Speed target: replaying one training step of a 70B-class model (about 50,000 allocator ops,
//! 80 layers, a few dozen distinct sizes) through the caching-allocator simulation in well under
//! 5 ms, so the GUI can redraw reserved memory over the step while a slider moves.
//!
//! The op stream is synthetic (`vramscope::alloc::synth::step_ops`): resident bf16 weights, a forward pass with ~20
//! activations per layer (32/96/224 MiB and small ones, a third freed right away) and short-lived
//! temporaries, a backward pass freeing activations in reverse while weight gradients accumulate,
//! and an optimizer step with per-gradient temporaries.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use vramscope::alloc::synth::step_ops;
use vramscope::alloc::{Config, replay, replay_with};

fn benches(c: &mut Criterion) {
    let ops = step_ops(80);
    let s = replay(Config::default(), &ops);
    eprintln!(
        "synthetic step: {} ops, peak allocated {:.1} GiB, peak reserved {:.1} GiB, {} cudaMallocs",
        ops.len(),
        s.peak_allocated as f64 / (1u64 << 30) as f64,
        s.peak_reserved as f64 / (1u64 << 30) as f64,
        s.cuda_mallocs
    );
    c.bench_function("alloc replay 50k ops (70B step shape)", |b| {
        b.iter(|| replay(Config::default(), black_box(&ops)))
    });
    let expandable = Config { expandable_segments: true, ..Config::default() };
    c.bench_function("alloc replay 50k ops (70B step shape), expandable segments", |b| {
        b.iter(|| replay(expandable, black_box(&ops)))
    });
    // the timeline the GUI draws: reserved bytes after every op
    let mut timeline = Vec::with_capacity(ops.len());
    c.bench_function("alloc replay 50k ops (70B step shape), reserved timeline", |b| {
        b.iter(|| {
            timeline.clear();
            replay_with(Config::default(), black_box(&ops), |_, s| timeline.push(s.reserved))
        })
    });
}

criterion_group!(alloc, benches);
criterion_main!(alloc);
