//! Speed targets of traced models (#41): a trace of a 1,000-op step loads (parsed, every shape
//! fitted over its grid and checked at the held-out points) in ≤ 50 ms, and re-evaluates at new
//! sizes (every size, then the replay the step walk reads) in ≤ 100 µs, so sliders stay live.
//!
//! The trace is synthetic, shaped as a convolutional network's: 1,000 ops in the forward
//! (feature maps `[b, c, h, w]` at four strides, a third freed at once, the rest saved), 1,000 in
//! the backward, 300 in inference, over a 3 × 3 × 3 grid of batch, height and width.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use vramscope::trace::{TracedModel, replay};

fn synthetic() -> String {
    // the events, the same at every point
    let mut ev = vec![r#"["a",0,2,1,0,"input"]"#.to_owned()];
    let mut kinds = Vec::new(); // the stride of each storage made
    let mut sid = 1;
    for (phase, n, op, module) in [("train", 1000u64, 2, 3), ("backward", 1000, 4, 0), ("infer", 300, 2, 3)] {
        for i in 0..n {
            ev.push(format!(r#"["a",{sid},2,{op},{module},"{phase}"]"#));
            kinds.push(1u64 << (i % 4));
            if phase != "train" || i % 3 == 0 {
                ev.push(format!(r#"["f",{sid},0,0,0,"{phase}"]"#));
            }
            sid += 1;
        }
    }
    let mut points = Vec::new();
    for b in [2u64, 3, 4] {
        for h in [64u64, 96, 128] {
            for w in [64u64, 96, 128] {
                let mut shapes = vec![format!("[{b},3,{h},{w}]")];
                shapes.extend(kinds.iter().map(|s| format!("[{b},{},{},{}]", 64 * s, h / s, w / s)));
                points.push(format!(r#"{{"dims":[{b},{h},{w}],"shapes":[{}]}}"#, shapes.join(",")));
            }
        }
    }
    let saved: Vec<String> = (1..=1000u64).filter(|i| (i - 1) % 3 != 0).map(|i| i.to_string()).collect();
    format!(
        r#"{{"format":"vramscope-trace","version":1,"torch":"2.15","model_file":"synthetic.py","precision":"bf16","trainable":"all","dims":[{{"name":"batch","values":[2,3,4]}},{{"name":"height","values":[64,96,128]}},{{"name":"width","values":[64,96,128]}}],"params":[{{"name":"w","shape":[1000,1000],"dtype":"bfloat16","trainable":true}}],"strings":["","input","convolution","stage","convolution_backward"],"events":[{}],"saved":[{}],"grads":[],"points":[{}]}}"#,
        ev.join(","),
        saved.join(","),
        points.join(",")
    )
}

fn benches(c: &mut Criterion) {
    let text = synthetic();
    let t = TracedModel::parse("synthetic", &text).expect("parses");
    eprintln!("synthetic trace: {} bytes, {} events, 27 points", text.len(), t.events.len());
    c.bench_function("trace load: parse + fit 1,000-op step over 27 points", |b| {
        b.iter(|| TracedModel::parse("synthetic", black_box(&text)))
    });
    // a slider moving: each evaluation at another batch (the last point's sizes are
    // remembered, so the same point twice would skip them)
    let mut batch = 16;
    c.bench_function("trace re-evaluate at new sizes (resolve + replay)", |b| {
        b.iter(|| {
            batch = if batch == 16 { 17 } else { 16 };
            let pick = |d: &str| if d == "batch" { Some(batch) } else { Some(512) };
            let (_, bytes) = t.resolve_sizes(pick).expect("whole");
            replay::run_with(black_box(&t), &bytes, false)
        })
    });
}

criterion_group!(g, benches);
criterion_main!(g);
