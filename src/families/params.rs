//! Parameter tensors: the [`Params`] collector and the helpers families share (projections,
//! norms, gated MLPs, experts, the vision towers of multimodal checkpoints), and the model's
//! whole list ([`TransformerSpec::param_groups`], [`ModelSpec::n_params`]).

use super::def;
use crate::model::{
    Architecture, Head, LinearRole, ModelSpec, ParamGroup, ParamKind, Scope, TransformerSpec, VisionTower,
    layer,
};

/// Collects parameter groups (empty shapes skipped).
pub struct Params(pub Vec<ParamGroup>);

impl Params {
    /// `count` tensors of `rows × cols` (nothing when a dimension is 0).
    pub fn push(&mut self, rows: u64, cols: u64, count: u64, kind: ParamKind, scope: Scope, tp_split: bool) {
        if rows > 0 && cols > 0 && count > 0 {
            self.0.push(ParamGroup { rows, cols, count, kind, scope, tp_split });
        }
    }
    /// A projection weight per layer (+ its bias when `bias`).
    pub fn linear(&mut self, out_f: u64, in_f: u64, layers: u64, role: LinearRole, bias: bool) {
        self.push(out_f, in_f, layers, ParamKind::Linear(role), Scope::Block, true);
        if bias {
            let split = !matches!(role, LinearRole::O | LinearRole::Down);
            self.push(out_f, 1, layers, ParamKind::Vector, Scope::Block, split);
        }
    }
    /// Separate q, k, v and o projections of every layer (biases as given).
    pub fn qkvo(&mut self, m: &TransformerSpec, qkv_bias: bool, o_bias: bool) {
        self.qkvo_on(m, m.num_layers, qkv_bias, o_bias);
    }
    /// [`Params::qkvo`] on `l` layers (a hybrid's attention layers).
    pub fn qkvo_on(&mut self, m: &TransformerSpec, l: u64, qkv_bias: bool, o_bias: bool) {
        use LinearRole as R;
        let h = m.hidden_size;
        let (q, kv) = (m.q_width(), m.kv_width());
        self.linear(q, h, l, R::Q, qkv_bias);
        self.linear(kv, h, l, R::K, qkv_bias);
        self.linear(kv, h, l, R::V, qkv_bias);
        self.linear(h, q, l, R::O, o_bias);
    }
    /// `count` norm vectors of `width` per layer (weight, and bias for LayerNorm).
    pub fn norms(&mut self, width: u64, per_layer: u64, layers: u64, bias: bool) {
        self.push(
            width,
            1,
            per_layer * layers * if bias { 2 } else { 1 },
            ParamKind::Vector,
            Scope::Block,
            false,
        );
    }
    /// Token embedding, final norm and LM head (untied unless `tied`).
    pub fn ends(&mut self, m: &TransformerSpec, final_norm_bias: bool) {
        self.push(m.vocab_size, m.hidden_size, 1, ParamKind::Embedding, Scope::Input, true);
        self.push(
            m.hidden_size,
            1,
            if final_norm_bias { 2 } else { 1 },
            ParamKind::Vector,
            Scope::Output,
            false,
        );
        head_params(self, m);
    }
}

fn head_params(p: &mut Params, m: &TransformerSpec) {
    match m.head {
        Head::CausalLm | Head::MaskedLm => {
            if !m.tie_word_embeddings {
                p.push(m.vocab_size, m.hidden_size, 1, ParamKind::Head, Scope::Output, true);
            }
        }
        Head::SequenceClassification { num_labels } => {
            p.push(num_labels, m.hidden_size, 1, ParamKind::Head, Scope::Output, false);
        }
        Head::Base => {}
    }
}

/// Gated (or plain) MLP weights of one kind of layer.
pub fn mlp_params(p: &mut Params, h: u64, i: u64, layers: u64, gated: bool, fused: bool, bias: bool) {
    use LinearRole as R;
    if gated && fused {
        p.linear(2 * i, h, layers, R::Gate, bias);
    } else if gated {
        p.linear(i, h, layers, R::Gate, bias);
        p.linear(i, h, layers, R::Up, bias);
    } else {
        p.linear(i, h, layers, R::Up, bias);
    }
    p.linear(h, i, layers, R::Down, bias);
}

/// Routed experts (transformers 5 keeps them as fused 3-D tensors: `gate_up_proj` (E, 2I, h) and
/// `down_proj` (E, h, I)), the router (a row for each routed and each identity expert, and its
/// bias when it has one), and shared experts.
pub fn moe_params(p: &mut Params, m: &TransformerSpec, layers: u64, expert_bias: bool) {
    let Some(moe) = m.moe else { return };
    let (h, i, e) = (m.hidden_size, m.intermediate_size, moe.experts);
    let scored = e + moe.zero_experts;
    p.push(scored, h, layers, ParamKind::Router, Scope::Block, false);
    if moe.router_bias {
        p.push(scored, 1, layers, ParamKind::Vector, Scope::Block, false);
    }
    p.push(e * 2 * i, h, layers, ParamKind::Experts(LinearRole::Gate), Scope::Block, true);
    p.push(e * h, i, layers, ParamKind::Experts(LinearRole::Down), Scope::Block, true);
    if expert_bias {
        p.push(e * 2 * i, 1, layers, ParamKind::Vector, Scope::Block, true);
        p.push(e * h, 1, layers, ParamKind::Vector, Scope::Block, false);
    }
    if moe.shared_intermediate_size > 0 {
        mlp_params(p, h, moe.shared_intermediate_size, layers, true, false, false);
        if moe.router == crate::model::Router::SoftmaxSharedGate {
            p.push(1, h, layers, ParamKind::Router, Scope::Block, false);
        }
    }
}

/// [`moe_params`] with the router kept in fp32 whatever the model's dtype (transformers'
/// `_keep_in_fp32_modules_strict`: DeepSeek, GLM-4.5, ERNIE-4.5).
pub fn moe_params_fp32_router(p: &mut Params, m: &TransformerSpec, layers: u64) {
    let first = p.0.len();
    moe_params(p, m, layers, false);
    for g in &mut p.0[first..] {
        if g.kind == ParamKind::Router {
            g.kind = ParamKind::RouterFp32;
        }
    }
}

/// Layers of an MoE model that are dense / sparse.
pub fn dense_and_sparse_layers(m: &TransformerSpec) -> (u64, u64) {
    if m.moe.is_none() {
        return (m.num_layers, 0);
    }
    let dense = (0..m.num_layers)
        .filter(|&i| m.layer_flags.get(i as usize).is_some_and(|f| f & layer::DENSE != 0))
        .count() as u64;
    (dense, m.num_layers - dense)
}

impl TransformerSpec {
    /// Every parameter tensor, grouped by shape, in the order the model creates them. Tied
    /// embeddings are listed once.
    pub fn param_groups(&self) -> Vec<ParamGroup> {
        let mut p = Params(Vec::with_capacity(24));
        def(self.family).params(&mut p, self);
        if let Some(v) = self.vision {
            vision_params(&mut p, &v);
        }
        p.push(self.extra_params, 1, 1, ParamKind::Vector, Scope::Input, false);
        // tensors the checkpoint does not hold (a header checked against the list)
        for &[rows, cols, n] in &self.absent_tensors {
            let mut left = n;
            for g in p.0.iter_mut().filter(|g| g.rows == rows && g.cols == cols) {
                let k = left.min(g.count);
                g.count -= k;
                left -= k;
            }
        }
        p.0.retain(|g| g.count > 0);
        p.0
    }
}

impl ParamGroup {
    /// One tensor of `elems` elements known by its size alone (a layer table's layer, a
    /// convolutional network's weight): a vector in the blocks, not split by tensor parallelism.
    fn flat(elems: u64) -> Self {
        ParamGroup {
            rows: elems,
            cols: 1,
            count: 1,
            kind: ParamKind::Vector,
            scope: Scope::Block,
            tp_split: false,
        }
    }
}

impl ModelSpec {
    /// Every parameter tensor, grouped by shape.
    pub fn param_groups(&self) -> Vec<ParamGroup> {
        match &self.arch {
            Architecture::Transformer(t) => t.param_groups(),
            Architecture::Table(t) => {
                // A layer table knows only per-layer totals: one group per layer, plus the count
                // of tensors for rounding.
                t.layers.iter().filter(|l| l.params > 0).map(|l| ParamGroup::flat(l.params)).collect()
            }
            Architecture::Traced(t) => t
                .params
                .iter()
                .map(|p| {
                    // as traced: an fp32 tensor stays fp32, a 2-byte frozen one is in the
                    // compute dtype (under autocast the LoRA base is)
                    let mut g = ParamGroup::flat(p.numel);
                    g.kind = match (p.trainable, p.elem) {
                        (true, 4) => ParamKind::VectorFp32,
                        (true, _) => ParamKind::Vector,
                        (false, 4) => ParamKind::FrozenFp32,
                        (false, 2) => ParamKind::FrozenCompute,
                        (false, _) => ParamKind::Frozen,
                    };
                    g
                })
                .collect(),
            Architecture::Net(n) => {
                // every tensor as the ops own it (the image does not change them)
                let ctx = crate::engine::ops::net::NetCtx { batch: 1, elem: 2 };
                let net = super::build_net(n, ctx, n.image);
                net.param_tensors().map(ParamGroup::flat).collect()
            }
        }
    }

    /// Exact number of distinct parameters.
    pub fn n_params(&self) -> u64 {
        self.param_groups().iter().map(|g| g.rows * g.cols * g.count).sum()
    }
}

/// The heads of the eager-era models (GPT-2, BERT, Megatron): an LM head when untied, BERT's MLM
/// transform and decoder bias, a classifier (behind BERT's pooler when `pooler`), or the bare
/// model (BERT's pooler alone).
pub(crate) fn classic_head_params(p: &mut Params, m: &TransformerSpec, pooler: bool) {
    use LinearRole as R;
    use ParamKind as K;
    use Scope::Output as Out;
    let (h, v) = (m.hidden_size, m.vocab_size);
    match m.head {
        Head::CausalLm => {
            if !m.tie_word_embeddings {
                p.push(v, h, 1, K::Head, Out, true);
            }
        }
        Head::MaskedLm => {
            p.push(h, h, 1, K::Linear(R::Dense), Out, false);
            p.push(h, 1, 3, K::Vector, Out, false); // transform bias + LayerNorm
            if !m.tie_word_embeddings {
                p.push(v, h, 1, K::Head, Out, true);
            }
            p.push(v, 1, 1, K::Vector, Out, true); // decoder bias
        }
        Head::SequenceClassification { num_labels } => {
            if pooler {
                p.push(h, h, 1, K::Linear(R::Dense), Out, false); // pooler
                p.push(h, 1, 1, K::Vector, Out, false);
                p.push(num_labels, h, 1, K::Head, Out, false);
                p.push(num_labels, 1, 1, K::Vector, Out, false);
            } else {
                p.push(num_labels, h, 1, K::Head, Out, false); // `score`, no bias
            }
        }
        Head::Base => {
            if pooler {
                p.push(h, h, 1, K::Linear(R::Dense), Out, false); // pooler
                p.push(h, 1, 1, K::Vector, Out, false);
            }
        }
    }
}

/// `l` vision encoder layers of width `h` and MLP width `i` (SigLIP's, Llama 4's): two LayerNorms
/// (weight and bias), q/k/v/o with biases, fc1 and fc2 with biases; frozen.
fn biased_encoder_layers(p: &mut Params, h: u64, i: u64, l: u64) {
    let (k, s) = (ParamKind::Frozen, Scope::Input);
    p.push(h, 1, 4 * l, k, s, false);
    p.push(h, h, 4 * l, k, s, false);
    p.push(h, 1, 4 * l, k, s, false);
    p.push(i, h, l, k, s, false);
    p.push(i, 1, l, k, s, false);
    p.push(h, i, l, k, s, false);
    p.push(h, 1, l, k, s, false);
}

/// A vision tower's and projector's parameters.
fn vision_params(p: &mut Params, v: &VisionTower) {
    use crate::model::VisionKind;
    let (h, i, l) = (v.hidden_size, v.intermediate_size, v.num_layers);
    let patches = (v.image_size / v.patch_size.max(1)).pow(2);
    let s = Scope::Input;
    let k = ParamKind::Frozen;
    match v.kind {
        VisionKind::Siglip => {
            p.push(h, v.num_channels * v.patch_size * v.patch_size, 1, k, s, false); // patch conv
            p.push(h, 1, 1, k, s, false);
            p.push(patches, h, 1, k, s, false); // position embedding
            biased_encoder_layers(p, h, i, l);
            p.push(h, 1, 2, k, s, false); // post_layernorm
        }
        VisionKind::Pixtral => {
            p.push(h, v.num_channels * v.patch_size * v.patch_size, 1, k, s, false); // patch conv, no bias
            p.push(h, 1, 1, k, s, false); // ln_pre
            p.push(h, 1, 2 * l, k, s, false); // attention_norm, ffn_norm
            p.push(h, h, 4 * l, k, s, false);
            p.push(i, h, 2 * l, k, s, false);
            p.push(h, i, l, k, s, false);
        }
        VisionKind::Llama4 => {
            p.push(h, v.num_channels * v.patch_size * v.patch_size, 1, k, s, false); // unfolded patch Linear
            p.push(patches + 1, h, 1, k, s, false); // class token's and patches' positions
            p.push(h, 1, 5, k, s, false); // class token, layernorm_pre and _post
            biased_encoder_layers(p, h, i, l);
        }
        VisionKind::Qwen25Vl | VisionKind::Qwen3Vl => {
            let qwen3 = v.kind == VisionKind::Qwen3Vl;
            let kernel = v.num_channels * v.temporal_patch * v.patch_size * v.patch_size;
            p.push(h, kernel, 1, k, s, false); // Conv3d (biased in Qwen3-VL)
            p.push(h, 1, if qwen3 { 4 * l + 1 } else { 2 * l }, k, s, false); // norms (+ conv bias)
            p.push(3 * h, h, l, k, s, false); // fused qkv and its bias
            p.push(3 * h, 1, l, k, s, false);
            p.push(h, h, l, k, s, false); // proj
            p.push(h, 1, 2 * l, k, s, false); // proj's and the MLP output's bias
            let up = if qwen3 { 1 } else { 2 }; // gate and up, or fc1
            p.push(i, h, up * l, k, s, false);
            p.push(i, 1, up * l, k, s, false);
            p.push(h, i, l, k, s, false);
        }
        VisionKind::Clip => {
            p.push(h, 1, 1, k, s, false); // class embedding
            p.push(h, v.num_channels * v.patch_size * v.patch_size, 1, k, s, false); // patch conv, no bias
            p.push(patches + 1, h, 1, k, s, false); // positions
            p.push(h, 1, 4, k, s, false); // pre- and post-LayerNorm
            biased_encoder_layers(p, h, i, l);
        }
    }
    p.push(v.projector_params, 1, 1, k, s, false);
}

/// A Mamba2 mixer's tensors on `layers` layers of hidden size `h`: `in_proj`, the depthwise
/// convolution's `(conv_dim, 1, taps)` weight and bias, `dt_bias`, `A_log`, `D`, the gated
/// norm's weight and `out_proj`.
pub fn ssm_params(p: &mut Params, s: &crate::model::Ssm, h: u64, layers: u64) {
    ssm_params_out_bias(p, s, h, layers, s.proj_bias);
}

/// [`ssm_params`] with `out_proj`'s bias given apart (Falcon-H1's `projectors_bias`).
pub fn ssm_params_out_bias(p: &mut Params, s: &crate::model::Ssm, h: u64, layers: u64, out_bias: bool) {
    p.linear(s.proj(), h, layers, LinearRole::Q, s.proj_bias);
    // the convolution is not a Linear (never quantized)
    p.push(s.conv_dim(), s.conv_kernel, layers, ParamKind::Vector, Scope::Block, true);
    if s.conv_bias {
        p.push(s.conv_dim(), 1, layers, ParamKind::Vector, Scope::Block, true);
    }
    p.push(s.heads, 1, 3 * layers, ParamKind::Vector, Scope::Block, true);
    if s.gated_norm {
        p.push(s.inner(), 1, layers, ParamKind::Vector, Scope::Block, true);
    }
    p.linear(h, s.inner(), layers, LinearRole::O, out_bias);
}
