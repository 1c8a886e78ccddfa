//! Synthetic allocator op streams, shared by the tests and the `alloc` benchmark.

use super::Op;

/// A synthetic op stream shaped like one training step of a 70B-class transformer with `layers`
/// layers (80 for Llama-2-70B): resident bf16 weights, a forward pass (about 20 activations per
/// layer, a third freed right away, plus short-lived temporaries), a backward pass in reverse
/// (activation-gradient temporaries, saved activations freed, weight gradients kept) and an
/// optimizer step (per-gradient temporaries). Handles are dense and recycled after a free.
/// About 50,500 ops for 80 layers, a few dozen distinct sizes.
pub fn step_ops(layers: u32) -> Vec<Op> {
    const K: u64 = 1 << 10;
    const M: u64 = 1 << 20;
    struct Gen {
        ops: Vec<Op>,
        spare: Vec<u32>,
        next: u32,
    }
    impl Gen {
        fn alloc(&mut self, bytes: u64) -> u32 {
            let id = self.spare.pop().unwrap_or_else(|| {
                self.next += 1;
                self.next
            });
            self.ops.push(Op::Alloc { id, bytes, stream: 0 });
            id
        }
        fn free(&mut self, id: u32) {
            self.ops.push(Op::Free { id });
            self.spare.push(id);
        }
        fn temporaries(&mut self, n: usize) {
            for &b in [4 * K, 64 * K, M, 3 * M, 32 * M].iter().cycle().take(n) {
                let t = self.alloc(b);
                self.free(t);
            }
        }
    }
    // q, k, v, o, gate, up, down projections and two norms of a hidden-8192, ffn-28672 layer
    let weights = [128 * M, 16 * M, 16 * M, 128 * M, 448 * M, 448 * M, 448 * M, 16 * K, 16 * K];
    let acts = [32 * M, 96 * M, 224 * M, 32 * M, 64 * M, 96 * M, 224 * M, 8 * K, 2 * M, 512 * K];
    let mut g = Gen { ops: Vec::with_capacity(50_000), spare: Vec::new(), next: 0 };
    let params: Vec<u32> = (0..layers).flat_map(|_| weights).map(|b| g.alloc(b)).collect();
    let mut saved = Vec::new();
    for _ in 0..layers {
        let mut layer = Vec::new();
        for (j, &b) in acts.iter().cycle().take(20).enumerate() {
            let id = g.alloc(b + 512 * (j as u64 % 3));
            if j % 3 == 2 {
                g.free(id)
            } else {
                layer.push(id)
            }
            g.temporaries(6);
        }
        saved.push(layer);
    }
    let mut grads = Vec::new();
    while let Some(layer) = saved.pop() {
        for id in layer.into_iter().rev() {
            let t = g.alloc(96 * M);
            g.free(id);
            g.temporaries(9);
            g.free(t);
        }
        grads.extend(weights.iter().map(|&b| (g.alloc(b), b)));
    }
    for (grad, b) in grads {
        let (m, v) = (g.alloc(b), g.alloc(b));
        g.free(m);
        g.free(v);
        g.free(grad);
    }
    for p in params {
        g.free(p);
    }
    g.ops
}
