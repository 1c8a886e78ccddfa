//! Attention over windows with a learned relative position bias (Swin), as transformers runs it
//! through SDPA on a GPU: an additive mask sends SDPA to the memory-efficient kernel, whose
//! backward keeps q, k, v, the bias as the kernel received it, the output and an fp32
//! logsumexp; the front end pads a bias whose rows are not 8-element aligned first (CUDA's
//! `preprocess_mask`, a new storage), and the backward makes the bias's gradient at the full
//! broadcast size, its rows rounded up to 16 elements.

use super::Cat;
use super::net::{Net, Rows, T};

/// One window attention call.
#[derive(Clone, Copy, Debug)]
pub struct Windows {
    /// Windows a sample.
    pub count: u64,
    /// Tokens a window (`ws²` of the window it runs).
    pub tokens: u64,
    /// Heads.
    pub heads: u64,
    /// Shifted windows: the cyclic-shift mask ([`Net::shift_mask`]), added to the bias per window.
    pub mask: Option<T>,
    /// Bias vectors on q, k and v (`qkv_bias`).
    pub qkv_bias: bool,
    /// Tokens of the window the module was built for (its bias table and index buffer).
    pub built_tokens: u64,
    /// Rows of its bias table, `(2·ws − 1)²`.
    pub table: u64,
}

/// Columns of a bias row once CUDA's SDPA front end has aligned it: unchanged when its strides
/// are multiples of 8, else padded by `8 − n mod 8`.
fn padded_cols(n: u64) -> u64 {
    if n.is_multiple_of(8) { n } else { n + 8 - n % 8 }
}

impl Net {
    /// `SwinAttention` on `x`, the windows as `(b · windows · tokens, c)` rows: q, k and v
    /// projections, the relative position bias (plus the shift mask), memory-efficient SDPA and
    /// the output projection. Returns o_proj's output.
    pub fn window_attention(&mut self, m: &str, x: Rows, w: Windows) -> Rows {
        let (c, e) = (x.cols, self.ctx.map_or(2, |c| c.elem));
        let b = self.ctx.map_or(1, |c| c.batch);
        let (n, h) = (w.tokens, w.heads);
        let q = self.linear_bias(&format!("{m}.q_proj"), x, (c, w.qkv_bias), Cat::AttentionIo);
        let k = self.linear_bias(&format!("{m}.k_proj"), x, (c, w.qkv_bias), Cat::AttentionIo);
        let v = self.linear_bias(&format!("{m}.v_proj"), x, (c, w.qkv_bias), Cat::AttentionIo);
        let (bias, locals) = self.window_bias(m, w, e);
        // the bias's batch: one per window when shifted, else broadcast
        let rows = if w.mask.is_some() { b * w.count } else { 1 };
        let bias = if n.is_multiple_of(8) {
            bias
        } else {
            let t = self.tensor(rows * h * n * padded_cols(n) * e, false, Cat::AttentionScores);
            self.push(
                "constant_pad_nd",
                &format!("{m} (SDPA aligns the bias)"),
                vec![bias],
                t,
                vec![],
                vec![],
            );
            t
        };
        let out = self.act(w.count * n * c, Cat::AttentionIo);
        let lse = self.tensor(b * w.count * h * n.div_ceil(32) * 32 * 4, false, Cat::AttentionIo);
        let seed = self.tensor(8, false, Cat::AttentionIo);
        let offset = self.tensor(8, false, Cat::AttentionIo);
        let saved = vec![q.t, k.t, v.t, bias, out, lse, seed, offset];
        self.push("sdpa_mem_efficient", m, vec![q.t, k.t, v.t, bias], out, saved, vec![w.table * h]);
        let grad_bias = b * w.count * h * n * n.next_multiple_of(16) * e;
        // a shifted bias's padding is undone by a copy while that gradient is alive
        let unpad =
            if w.mask.is_some() { (rows * h * n * n * e).saturating_sub(self.get(out).bytes) } else { 0 };
        if let Some(node) = self.nodes.last_mut() {
            node.buffers = vec![8 * w.built_tokens * w.built_tokens];
            node.scratch = grad_bias + unpad;
        }
        self.set_macs(2 * b * w.count * h * n * n * (c / h.max(1)));
        let o = Rows { t: out, rows: x.rows, cols: c };
        let o = self.linear(&format!("{m}.o_proj"), o, c, Cat::AttentionIo);
        // the forward's locals (the bias, the mask per window, their sum) live until it returns
        for t in locals {
            self.hold(t);
        }
        o
    }

    /// `SwinLayer.get_attn_mask` for `count` windows of `n` tokens (one set for every sample):
    /// the regions' differences, then `masked_fill(d != 0, -100).masked_fill(d == 0, 0)`, the
    /// differences held by their variable until the second fill has run.
    pub fn shift_mask(&mut self, m: &str, count: u64, n: u64) -> T {
        let e = self.ctx.map_or(2, |c| c.elem);
        let bytes = count * n * n * e;
        let new = |net: &mut Self, op: &'static str, inputs: Vec<T>, bytes: u64| {
            let t = net.tensor(bytes, false, Cat::AttentionScores);
            net.push(op, &format!("{m} (shift mask)"), inputs, t, vec![], vec![]);
            t
        };
        let diff = new(self, "sub", vec![], bytes);
        let ne = new(self, "ne", vec![diff], count * n * n);
        let first = new(self, "masked_fill", vec![diff, ne], bytes);
        let eq = new(self, "eq", vec![diff], count * n * n);
        let mask = new(self, "masked_fill", vec![first, eq], bytes);
        self.hold(diff);
        mask
    }

    /// The additive bias SDPA gets: the table gathered by the index buffer and made contiguous as
    /// `(1, heads, n, n)`, plus, for shifted windows, the cyclic-shift mask (made per window,
    /// copied to every sample's windows by `reshape`), the sum one bias per window.
    fn window_bias(&mut self, m: &str, w: Windows, e: u64) -> (T, Vec<T>) {
        let (n, h) = (w.tokens, w.heads);
        let rel = format!("{m}.relative_position_bias");
        let gathered = self.tensor(n * n * h * e, false, Cat::AttentionScores);
        self.push("index", &rel, vec![], gathered, vec![], vec![]);
        let bias = self.tensor(h * n * n * e, false, Cat::AttentionScores);
        self.push("clone", &rel, vec![gathered], bias, vec![], vec![]);
        let Some(mask) = w.mask else {
            return (bias, vec![bias]);
        };
        let per_window = self.copy(
            "clone",
            &format!("{m} (shift mask per window)"),
            vec![mask],
            w.count * n * n,
            Cat::AttentionScores,
        );
        let sum = self.copy("add", m, vec![bias, per_window], w.count * h * n * n, Cat::AttentionScores);
        self.tensors[sum.0 as usize].rg = false;
        (sum, vec![bias, per_window, sum])
    }
}
