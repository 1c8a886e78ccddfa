//! GPT-2 (`GPT2LMHeadModel`): learned positions, pre-LayerNorm, a fused `c_attn` Conv1D (q, k, v
//! are views of one storage), eager softmax in the scores' dtype, `gelu_new` written out in ops,
//! dropout on embeddings, attention probabilities and both residual branches.

use super::params::classic_head_params;
use super::prelude::*;

/// GPT-2.
pub(super) struct Gpt2;

impl FamilyDef for Gpt2 {
    fn id(&self) -> &'static str {
        "gpt2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gpt2"]
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        Some(read(c.text))
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GPT2Block"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        gpt_params(p, m);
        classic_head_params(p, m, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        block(g, m, flags, x)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        // GPT-2's embd_pdrop is read as its resid_pdrop (both 0.1 in its checkpoints)
        positions_embed(g, m, m.hidden_dropout)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&GPT2_PEFT)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds {
            rope: Rope::None,
            gated: false,
            mlp_backward: MlpBackward::GeluNewFp32,
            softmax: Softmax::Native,
            inference: InferKind::Classic { positions: true, mlp_widths: 4, mlp_inputs: 3 },
            checkpoint_mask: CheckpointMask::Eager,
            qkv_one_adapter: true,
            final_norm: NormKind::Layer,
            ..OpKinds::DECODER
        }
    }
}

/// The GPT-2 layout's tensors (GPT-2 and Megatron's GPT): token and learned position
/// embeddings, per block two LayerNorms, the fused `c_attn` Conv1D, `c_proj`, `c_fc`,
/// `mlp.c_proj` with their biases, and the final LayerNorm.
pub(super) fn gpt_params(p: &mut Params, m: &TransformerSpec) {
    use LinearRole as R;
    use ParamKind as K;
    use Scope::{Block as B, Input as In, Output as Out};
    let (h, l, v, i, q) = (m.hidden_size, m.num_layers, m.vocab_size, m.intermediate_size, m.q_width());
    p.push(v, h, 1, K::Embedding, In, true);
    p.push(m.max_position_embeddings, h, 1, K::Embedding, In, false);
    p.push(h, 1, 4 * l, K::Vector, B, false); // ln_1, ln_2 weight + bias
    // Conv1D weights are stored (in, out); rows/cols only matter for Adafactor.
    p.push(h, 3 * q, l, K::Linear(R::Q), B, true);
    p.push(3 * q, 1, l, K::Vector, B, true);
    p.push(q, h, l, K::Linear(R::O), B, true);
    p.push(h, 1, l, K::Vector, B, false);
    p.push(h, i, l, K::Linear(R::Up), B, true);
    p.push(i, 1, l, K::Vector, B, true);
    p.push(i, h, l, K::Linear(R::Down), B, true);
    p.push(h, 1, l, K::Vector, B, false);
    p.push(h, 1, 2, K::Vector, Out, false); // ln_f
}

/// The module names of GPT-2's layout (`c_attn`, `c_proj`, `c_fc`), GPT-BigCode's too.
pub(super) const GPT2_PEFT: PeftModules = PeftModules {
    qkv: Some(r"attn\.c_attn"),
    o: r"attn\.c_proj",
    up: r"mlp\.c_fc",
    down: r"mlp\.c_proj",
    ..PeftModules::LLAMA
};

/// GPT-2's block as transformers runs it.
const GPT2: GptLayout = GptLayout {
    norm: NormKind::Layer,
    act: Act::GeluNew,
    adapter_any_qkv: true,
    names: ["ln_1", "c_attn", "attn.c_proj", "ln_2", "c_fc", "mlp.c_proj"],
};

fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    gpt_block(g, m, flags, x, &GPT2)
}

/// How a GPT-2-layout block runs: GPT-2's transformers code, or Megatron's fused kernels.
pub(super) struct GptLayout {
    /// Both norms.
    pub norm: NormKind,
    /// The MLP's activation.
    pub act: Act,
    /// LoRA on any of q, k, v puts its one adapter on the fused projection (else only q's does).
    pub adapter_any_qkv: bool,
    /// The ops' names: first norm, fused qkv, output projection, second norm, MLP up, MLP down.
    pub names: [&'static str; 6],
}

/// `x + dropout(proj(attn(qkv(norm1(x)))))`, then `+ dropout(down(act(up(norm2(·)))))`: one
/// fused q/k/v projection (q, k, v views of one storage), learned positions outside the block.
pub(super) fn gpt_block(
    g: &mut Graph<'_>,
    m: &TransformerSpec,
    flags: u8,
    x: Tensor,
    k: &GptLayout,
) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    let (n, q, i) = (ts * h, m.q_width(), m.intermediate_size);
    let [norm1, qkv_name, proj, norm2, up_name, down] = k.names;
    let a_in = g.norm(x, ts, h, k.norm, norm1);
    let role = if k.adapter_any_qkv {
        [LinearRole::Q, LinearRole::K, LinearRole::V]
            .into_iter()
            .find(|r| ctx.adapted(*r))
            .unwrap_or(LinearRole::Q)
    } else {
        LinearRole::Q
    };
    // q, k and v from one projection (multi-query: one K/V head, GPT-BigCode)
    let qkv = g.linear(a_in, ts, h, q + 2 * m.kv_width(), role, Cat::AttentionIo, qkv_name);
    let o = g.attention(qkv, qkv, qkv, attn_of(ctx, m, flags));
    let a = g.linear(o, t, q, h, LinearRole::O, Cat::AttentionIo, proj);
    let a = g.dropout(a, n, m.hidden_dropout);
    let x2 = g.add(x, a, n, Cat::Residual);
    let f_in = g.norm(x2, ts, h, k.norm, norm2);
    let up = g.linear(f_in, ts, h, i, LinearRole::Up, Cat::Mlp, up_name);
    let act = g.act(up, t * i, k.act);
    let f = g.linear(act, t, i, h, LinearRole::Down, Cat::Mlp, down);
    let f = g.dropout(f, n, m.hidden_dropout);
    g.add(x2, f, n, Cat::Residual)
}

/// Token and learned position embeddings (ids and position ids kept when they train), then
/// dropout with probability `p`.
pub(super) fn positions_embed(g: &mut Graph<'_>, m: &TransformerSpec, p: f64) -> Tensor {
    let ctx = g.ctx;
    let e = g.embedding(m.hidden_size);
    if ctx.full {
        g.keep_new(ctx.seq * 8, Cat::Embeddings); // position ids (wpe)
    }
    g.dropout(e, ctx.rank_tokens * m.hidden_size, p)
}

/// GPT-2's own keys.
fn read(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("n_embd")?;
    let a = r.positive("n_head")?;
    super::config::check_divides(r, "n_head", h, a)?;
    Ok(TransformerSpec {
        family: super::by_id("gpt2").unwrap_or_default(),
        head: Head::CausalLm,
        hidden_size: h,
        num_layers: r.positive("n_layer")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: r.opt_u64("n_inner")?.unwrap_or(4 * h),
        vocab_size: r.positive("vocab_size")?,
        max_position_embeddings: r.positive("n_positions")?,
        tie_word_embeddings: r.bool_or("tie_word_embeddings", true)?,
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attn_pdrop", 0.1)?,
        hidden_dropout: r.f64_or("resid_pdrop", 0.1)?,
        ..TransformerSpec::default()
    })
}
