//! OPT: learned positions (offset by 2), LayerNorm before each sublayer (`do_layer_norm_before`;
//! after the residual sum when false, opt-350m), biased q/k/v/out projections, a plain ReLU MLP
//! (`fc1`, `fc2`), residual dropout, and `project_in`/`project_out` when the embeddings are
//! narrower than the blocks (`word_embed_proj_dim`).

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, act: Act::Relu, gated: false, ..LLAMA };

/// Meta OPT.
pub(super) struct Opt;

impl FamilyDef for Opt {
    fn id(&self) -> &'static str {
        "opt"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["opt"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "OPTDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l, e) = (m.hidden_size, m.num_layers, proj_dim(m));
        p.push(m.vocab_size, e, 1, ParamKind::Embedding, Scope::Input, true);
        p.push(m.max_position_embeddings + 2, h, 1, ParamKind::Embedding, Scope::Input, false);
        if e != h {
            p.push(h, e, 1, ParamKind::Linear(LinearRole::Dense), Scope::Input, false); // project_in
            p.push(e, h, 1, ParamKind::Linear(LinearRole::Dense), Scope::Output, false); // project_out
        }
        p.qkvo(m, true, true);
        mlp_params(p, h, m.intermediate_size, l, false, false, true);
        p.norms(h, 2, l, true);
        if m.post_norm_final {
            p.norms(h, 1, 1, true);
        }
        if !m.tie_word_embeddings {
            p.push(m.vocab_size, e, 1, ParamKind::Head, Scope::Output, true);
        }
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        if !m.post_layer_norm {
            return sequential_block(g, m, flags, x, &STYLE);
        }
        // opt-350m: `norm(x + f(x))` after each sublayer
        let ctx = g.ctx;
        let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
        let n = ts * h;
        let a = attention(g, m, flags, x, &STYLE);
        let a = g.dropout(a, n, m.hidden_dropout);
        let x2 = g.add(x, a, n, Cat::Residual);
        let x2 = g.norm(x2, ts, h, NormKind::Layer, "self_attn_layer_norm");
        let f = dense_mlp(g, x2, t, ts, h, m.intermediate_size, &STYLE);
        let f = g.dropout(f, n, m.hidden_dropout);
        let x3 = g.add(x2, f, n, Cat::Residual);
        g.norm(x3, ts, h, NormKind::Layer, "final_layer_norm")
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        let ctx = g.ctx;
        let (h, e) = (m.hidden_size, proj_dim(m));
        let mut x = g.embedding(e);
        if e != h {
            x = g.linear(x, ctx.rank_tokens, e, h, LinearRole::Dense, Cat::Embeddings, "project_in");
        }
        if ctx.full {
            g.keep_new(ctx.tokens * 8, Cat::Embeddings); // position ids (embed_positions)
        }
        x
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        let ctx = g.ctx;
        let (h, e) = (m.hidden_size, proj_dim(m));
        let mut x = x;
        if m.post_norm_final {
            x = g.norm(x, ctx.rank_tokens, h, NormKind::Layer, "final_layer_norm");
        }
        if e != h {
            x = g.linear(x, ctx.rank_tokens, h, e, LinearRole::Dense, Cat::HeadLoss, "project_out");
        }
        g.head_loss(x, ctx.rank_tokens, e, classes(m), false, m.head == Head::CausalLm)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "opt").then_some(
            r#"{"vocab_size":50272,"hidden_size":768,"num_hidden_layers":12,"ffn_dim":3072,
            "num_attention_heads":12,"max_position_embeddings":2048,"do_layer_norm_before":true,
            "_remove_final_layer_norm":false,"word_embed_proj_dim":768,"dropout":0.1,
            "attention_dropout":0.0,"enable_bias":true,"tie_word_embeddings":true}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let before = r.bool_or("do_layer_norm_before", true)?;
        d.spec.post_layer_norm = !before;
        d.spec.post_norm_final = before && !r.bool_or("_remove_final_layer_norm", false)?;
        d.spec.max_position_embeddings = r.u64_or("max_position_embeddings", 2048)?;
        d.spec.embed_dim =
            r.opt_u64("word_embed_proj_dim")?.filter(|&e| e != d.spec.hidden_size).unwrap_or(0);
        let bias = r.bool_or("enable_bias", true)?;
        (d.spec.qkv_bias, d.spec.o_bias, d.spec.mlp_bias) = (bias, bias, bias);
        d.spec.hidden_dropout = r.f64_or("dropout", 0.1)?;
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::None, ..STYLE.kinds() }
    }
}

/// The embeddings' width (`word_embed_proj_dim`), the hidden size unless it differs.
fn proj_dim(m: &TransformerSpec) -> u64 {
    if m.embed_dim > 0 { m.embed_dim } else { m.hidden_size }
}
