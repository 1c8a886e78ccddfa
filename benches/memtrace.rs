//! Speed target: a PyTorch memory-snapshot trace of a million entries parsed, replayed and
//! decimated for drawing in well under a second, so `diagnose --snapshot` and the GUI can take
//! the 1-GiB pickles `_record_memory_history(max_entries=…)` produces.
//!
//! The input is synthetic (`memtrace::synth::training_trace`): 2,000 training steps of a 100-layer
//! model, 1,004,002 entries laid out as CPython's pickle writes them.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use vramscope::diagnose::memtrace::{decimate, read_trace, synth::training_trace};

fn benches(c: &mut Criterion) {
    let bytes = training_trace(2000, 100);
    let t = read_trace(&bytes).expect("synthetic trace");
    eprintln!(
        "synthetic trace: {} entries, {} events, {:.1} MiB of pickle",
        t.entries,
        t.len(),
        bytes.len() as f64 / (1 << 20) as f64
    );
    let mut g = c.benchmark_group("memtrace");
    g.sample_size(10);
    g.bench_function("parse + replay, 1M trace entries", |b| b.iter(|| read_trace(black_box(&bytes))));
    g.bench_function("decimate 804k events to 2,000 columns", |b| {
        b.iter(|| decimate(black_box(&t.allocated), 2000))
    });
    g.bench_function("parse + replay + decimate", |b| {
        b.iter(|| {
            let t = read_trace(black_box(&bytes)).expect("synthetic trace");
            (decimate(&t.allocated, 2000), decimate(&t.reserved, 2000))
        })
    });
    // the owned-tree reader (BTreeMap per dict), for comparison
    g.bench_function("unpickle into the owned tree (old reader), 1M entries", |b| {
        b.iter(|| vramscope::diagnose::snapshot::unpickle(black_box(&bytes)).map(|_| ()))
    });
    g.finish();
}

criterion_group!(memtrace, benches);
criterion_main!(memtrace);
