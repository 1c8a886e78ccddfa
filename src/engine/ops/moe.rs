//! A sparse mixture-of-experts layer as transformers 5 runs it (grouped-mm experts).

use super::*;

/// How a layer's router scores the experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Softmax (or sigmoid) over every expert in fp32, then the top k (Mixtral, Qwen-MoE,
    /// DeepSeek, OLMoE, GLM-4.5, MiniMax-M2, ERNIE-4.5), their weights divided by their sum when
    /// `renormalise` (`norm_topk_prob`; OLMoE's class default leaves them as they are).
    /// With `groups` > 0 the choice is group-limited (DeepSeek-V3, GLM-4.5: the top two scores
    /// of each of the `groups`, the best `topk_group` groups, the others masked out).
    Scores { renorm: Renorm, groups: u64, topk_group: u64 },
    /// The top k of the logits, then a softmax over those k in `elem` bytes (gpt-oss: the
    /// logits' dtype; Granite-MoE: fp32, `F.linear(x, w).float()`).
    TopkFirst { elem: u64 },
    /// PhiMoE's sparsemixer, two rounds: the bool mask `masked_fill` keeps, the softmax output
    /// (logits' dtype), the drawn expert's int64 id (kept by `gather`, `scatter` and the
    /// multiplier's Function) and its gathered weight; with `input_jitter` the two uniform draws
    /// the tokens are multiplied by in place, each kept by its `mul`.
    SparseMixer { input_jitter: bool },
}

/// How the top-k weights are renormalised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renorm {
    /// Left as they are (`norm_topk_prob: false`).
    None,
    /// Divided by their sum: the division keeps both (the k weights and the sum).
    Sum,
    /// Divided by their sum clamped from below (ERNIE-4.5): the clamp keeps the sum as well.
    ClampedSum,
}

/// One MoE layer's shape and the facts its rules read.
#[derive(Clone, Copy, Debug)]
pub struct MoeOp {
    /// Routed experts.
    pub experts: u64,
    /// Experts a token is routed to.
    pub top_k: u64,
    /// One expert's MLP width.
    pub inter: u64,
    /// How the router scores.
    pub routing: Routing,
    /// The router works on an fp32 copy of the tokens (`F.linear(x.float(), w.float())`).
    pub router_fp32: bool,
    /// ... and on an fp32 copy of its weight, stored in the model's dtype (LongCat-Flash).
    pub router_weight_cast: bool,
    /// The routing weights reach the experts in fp32 (else cast to the stream's dtype).
    pub weights_fp32: bool,
    /// gpt-oss's clamped SwiGLU in the experts.
    pub clamped_swiglu: bool,
    /// The experts are gated (`gate_up_proj`); else one `up_proj` and the activation
    /// (Nemotron-H's ReLU² experts, `has_gate=False`).
    pub gated: bool,
    /// The experts' activation (read when they are not gated).
    pub act: Act,
    /// Identity experts scored beside the routed ones (LongCat-Flash): the router scores
    /// `experts + zero_experts`, and a token routed to one is re-routed to a real expert with
    /// weight 0 while it keeps itself times the weight.
    pub zero_experts: u64,
}

impl Graph<'_> {
    /// A sparse MoE layer as transformers 5 runs it (`experts_implementation="grouped_mm"`):
    /// the router Linear, its scores, top-k ids and normalised weights, the token permutation
    /// (int64 ids, sort order and inverse, int32 offsets), the gathered tokens and their fp32
    /// weights, and per routed row the grouped gate_up output, the activation, the product and
    /// the down output.
    pub fn moe(&mut self, x: Tensor, width: u64, op: MoeOp) -> Tensor {
        let MoeOp {
            experts,
            top_k,
            inter,
            routing,
            router_fp32,
            router_weight_cast,
            weights_fp32,
            clamped_swiglu,
            gated,
            act,
            zero_experts,
        } = op;
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
        // `w.float()` copies a weight stored narrower than fp32 (not under autocast's fp32 masters)
        if active && router_fp32 && router_weight_cast && !ctx.amp && c < 4 {
            self.keep_new((experts + zero_experts) * width * 4, Cat::Mlp);
        }
        if active {
            // before PyTorch 1.11 the router's softmax keeps its input too: the top-k values
            // (gpt-oss), else the logits (`softmax(logits, dtype=float32)`: fp16 logits as they
            // are, bf16 ones as the fp32 copy it converts them to)
            let old = ctx.torch.softmax_keeps_input();
            if let Routing::TopkFirst { elem } = routing {
                // top-k of the logits (int64 ids) then softmax over the k values
                self.keep_new(tk * 8 + tk * elem + if old { tk * elem } else { 0 }, Cat::Mlp);
            } else if let Routing::SparseMixer { input_jitter } = routing {
                let rounds = 2;
                let jitter = if input_jitter { 2 * t * width * c } else { 0 };
                self.keep_new(rounds * (t * experts * (1 + c) + t * 8 + t * c) + jitter, Cat::Mlp);
            } else {
                // softmax over all experts (fp32), top-k ids, and when renormalised the k weights
                // and their sum (the division keeps both)
                let logits = if router_fp32 { 4 } else { c };
                let input = if old { Softmax::fp32_input_bytes(logits, ctx.f16) } else { 0 };
                let (norm, grouped) = match routing {
                    Routing::Scores { renorm, groups, topk_group } => (
                        match renorm {
                            Renorm::None => 0,
                            Renorm::Sum => tk * 4 + t * 4,
                            Renorm::ClampedSum => tk * 4 + 2 * t * 4,
                        },
                        // each top-k's int64 ids, and the bool mask `masked_fill` keeps
                        if groups > 0 { t * groups * 2 * 8 + t * topk_group * 8 + t * experts } else { 0 },
                    ),
                    Routing::TopkFirst { .. } | Routing::SparseMixer { .. } => (0, 0),
                };
                let scored = experts + zero_experts;
                self.keep_new(t * scored * (4 + input) + tk * 8 + norm + grouped, Cat::Mlp);
            }
            if zero_experts > 0 {
                // the identity experts: the two bool masks `masked_fill` keeps (to the identity
                // weights and away from them), the identity weights' sum (fp32), kept with the
                // tokens by `x * weights`
                self.keep_new(2 * tk + t * 4, Cat::Mlp);
                self.keep(x);
            }
            self.keep_new(3 * tk * 8 + experts * 4, Cat::Mlp);
            // the gathered tokens and their weights (the product with the down output keeps both)
            self.keep_new(tk * width * c + tk * if weights_fp32 { 4 } else { c }, Cat::Mlp);
            // per routed row: the grouped gate_up output, then SiLU(gate)·up keeps the SiLU output
            // and the product; gpt-oss's clamped SwiGLU keeps the clamped gate, the sigmoid, up + 1,
            // the GLU and the product
            let glu = if clamped_swiglu { 5 } else { 2 };
            let widths = if gated {
                2 + glu
            } else {
                // one `up` output: ReLU keeps its output (the down matmul's input too), ReLU² its
                // output and the square, another activation its input and output
                match act {
                    Act::Relu | Act::Tanh => 1,
                    _ => 2,
                }
            };
            self.keep_new(widths * tk * inter * c + tk * width * c, Cat::Mlp);
            if ctx.amp {
                self.keep_new(experts * 3 * width * inter * c, Cat::WeightCasts);
            }
        }
        let out = self.tensor(t * width * c, c, active, Cat::Mlp);
        self.record("moe experts", before);
        out
    }
}

impl Graph<'_> {
    /// Llama 4's MoE layer (`Llama4TextMoe`): every token goes through every expert, weighted by
    /// its router score (zero outside its top k). The router Linear keeps its input; top-k of
    /// the logits keeps its ids; the scores scattered into a full `(t, E)` tensor go through an
    /// fp32 sigmoid (kept), back to the stream's dtype and, transposed to one column, are kept by
    /// the product with the input repeated once per expert (kept too). The batched experts
    /// (`bmm`) keep that product, their `gate_up` output (gate and up are views of it), the
    /// activation and the gated product. The routed output is summed over the experts.
    pub fn moe_all_experts(&mut self, x: Tensor, width: u64, op: MoeOp) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        let (t, c) = (ctx.tokens, ctx.compute_elem);
        let (e, i) = (op.experts, op.inter);
        let rows = e * t;
        let active = self.rg(x) || ctx.full;
        if ctx.full {
            self.keep(x);
        }
        if active {
            // top-k ids, the fp32 sigmoid of the scattered scores, the transposed score column
            self.keep_new(t * op.top_k * 8 + t * e * 4 + rows * c, Cat::Mlp);
            // the repeated input and its weighted copy (the batched gate_up's input)
            self.keep_new(2 * rows * width * c, Cat::Mlp);
            // gate_up's output, SiLU(gate) and SiLU(gate)·up (the batched down's input)
            self.keep_new(rows * 2 * i * c + 2 * rows * i * c, Cat::Mlp);
            if ctx.amp {
                self.keep_new(e * 3 * width * i * c, Cat::WeightCasts);
            }
        }
        let out = self.tensor(t * width * c, c, active, Cat::Mlp);
        self.record("moe (every expert)", before);
        out
    }
}
