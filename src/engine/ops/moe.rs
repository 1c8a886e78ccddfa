//! A sparse mixture-of-experts layer as transformers 5 runs it (grouped-mm experts).

use super::*;

impl Graph<'_> {
    /// A sparse MoE layer as transformers 5 runs it (`experts_implementation="grouped_mm"`):
    /// the router Linear, softmax in fp32, top-k ids and normalised weights, the token
    /// permutation (int64 ids, sort order and inverse, int32 offsets), the gathered tokens and
    /// their fp32 weights, and per routed row the grouped gate_up output, the activation, the
    /// product and the down output.
    #[allow(clippy::too_many_arguments)]
    pub fn moe(
        &mut self,
        x: Tensor,
        width: u64,
        experts: u64,
        top_k: u64,
        inter: u64,
        router_fp32: bool,
        gpt_oss: bool,
    ) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        let (t, c) = (ctx.tokens, ctx.compute_elem);
        let tk = t * top_k;
        if ctx.full {
            if router_fp32 && self.elem(x) != 4 {
                // DeepSeek's router: `F.linear(x.float(), w.float())` keeps the fp32 copy of x
                self.keep_new(t * width * 4, Cat::Mlp);
            } else if ctx.amp {
                self.keep_new(t * width * c, Cat::InputCasts);
                self.keep_new(experts * width * c, Cat::WeightCasts);
            } else {
                self.keep(x);
            }
        }
        let active = self.rg(x) || ctx.full;
        if active {
            // before PyTorch 1.11 the router's softmax keeps its input too: the top-k values
            // (gpt-oss), else the logits (`softmax(logits, dtype=float32)`: fp16 logits as they
            // are, bf16 ones as the fp32 copy it converts them to)
            let old = ctx.torch.softmax_keeps_input();
            if gpt_oss {
                // top-k of the logits (int64 ids) then softmax over the k values (logits' dtype)
                self.keep_new(tk * 8 + tk * c + if old { tk * c } else { 0 }, Cat::Mlp);
            } else {
                // softmax over all experts (fp32), top-k ids, the k weights and their sum
                let logits = if router_fp32 { 4 } else { c };
                let input = if old { Softmax::fp32_input_bytes(logits, ctx.f16) } else { 0 };
                self.keep_new(t * experts * (4 + input) + tk * 8 + tk * 4 + t * 4, Cat::Mlp);
            }
            self.keep_new(3 * tk * 8 + experts * 4, Cat::Mlp);
            self.keep_new(tk * width * c + tk * 4, Cat::Mlp);
            // per routed row: the grouped gate_up output, then SiLU(gate)·up keeps the SiLU output
            // and the product; gpt-oss's clamped SwiGLU keeps the clamped gate, the sigmoid, up + 1,
            // the GLU and the product
            let glu = if gpt_oss { 5 } else { 2 };
            self.keep_new(tk * 2 * inter * c + glu * tk * inter * c + tk * width * c, Cat::Mlp);
            if ctx.amp {
                self.keep_new(experts * 3 * width * inter * c, Cat::WeightCasts);
            }
        }
        let out = self.tensor(t * width * c, c, active, Cat::Mlp);
        self.record("moe experts", before);
        out
    }
}
