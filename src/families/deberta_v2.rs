//! DeBERTa-v2 and -v3 (`DebertaV2ForMaskedLM`, `…ForSequenceClassification`, the bare
//! `DebertaV2Model`; `model_type` `deberta-v2`). BERT's post-LayerNorm blocks around a
//! disentangled attention (its own code: eager, whatever `attn_implementation` says): q, k and v
//! copied head-major, the relative position embeddings (after their LayerNorm, made once a
//! forward) dropped out in every layer and projected by the content's query and key
//! projections (`share_att_key`) or by their own, repeated over the batch, and the
//! content-to-position and position-to-content scores gathered at each pair's relative
//! position. v3 has no absolute positions and no token types; v2 adds a convolution beside the
//! first layer (`conv_kernel_size`). The masked-LM head is BERT's (`legacy`), the classifier a
//! pooler on the first token.

use super::params::classic_head_params;
use super::prelude::*;
use crate::engine::ops::RelAttn;
use crate::model::Disentangled;

const PEFT: PeftModules = PeftModules {
    qkv: None,
    q: r"attention\.self\.query_proj",
    k: r"attention\.self\.key_proj",
    v: r"attention\.self\.value_proj",
    o: r"attention\.output\.dense",
    gate_up: None,
    gate: "",
    up: r"intermediate\.dense",
    down: r"layer\.\d+\.output\.dense",
};

/// DeBERTa-v2/v3.
pub(super) struct DebertaV2;

impl FamilyDef for DebertaV2 {
    fn id(&self) -> &'static str {
        "deberta_v2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["deberta-v2"]
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        // DebertaV2Config's defaults (deberta-v2-xlarge's widths, no relative attention)
        (model_type == "deberta-v2").then_some(
            r#"{"vocab_size":128100,"hidden_size":1536,"num_hidden_layers":24,"num_attention_heads":24,
            "intermediate_size":6144,"hidden_dropout_prob":0.1,"attention_probs_dropout_prob":0.1,
            "max_position_embeddings":512,"type_vocab_size":0,"relative_attention":false,
            "max_relative_positions":-1,"position_biased_input":true,"tie_word_embeddings":true}"#,
        )
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        Some(read(c.text))
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "DebertaV2Layer"
    }

    fn default_head(&self) -> (Head, &'static str) {
        (Head::MaskedLm, "DebertaV2ForMaskedLM")
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
        // the classifier's `ContextPooler` (the bare model has none)
        classic_head_params(p, m, m.head != Head::Base);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, _: u8, x: Tensor) -> Tensor {
        block(g, m, x)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        embed(g, m)
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        match m.head {
            Head::SequenceClassification { num_labels } => classifier(g, m, x, num_labels),
            _ => super::bert::head(g, m, x),
        }
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PEFT)
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        OpKinds {
            eager_only: true,
            own_attention: true,
            inference: InferKind::Disentangled,
            checkpoint_mask: CheckpointMask::Fp32,
            ..super::bert::Bert.ops(m)
        }
    }
}

/// The embeddings (word, absolute positions and token types where the config has them, their
/// LayerNorm), the relative position embeddings with their LayerNorm, the convolution beside
/// the first layer, and per layer BERT's tensors plus the position projections of v1-style
/// configs (`share_att_key: false`).
fn params(p: &mut Params, m: &TransformerSpec) {
    use LinearRole as R;
    use ParamKind as K;
    use Scope::{Block as B, Input as In};
    let (h, l, v, i, q) = (m.hidden_size, m.num_layers, m.vocab_size, m.intermediate_size, m.q_width());
    p.push(v, h, 1, K::Embedding, In, true);
    p.push(m.max_position_embeddings, h, 1, K::Embedding, In, false);
    p.push(m.type_vocab_size, h, 1, K::Embedding, In, false);
    p.push(h, 1, 2, K::Vector, In, false); // embeddings LayerNorm
    if let Some(d) = m.disentangled {
        p.push(d.rows(), h, 1, K::Embedding, In, false); // encoder.rel_embeddings
        if d.norm {
            p.push(h, 1, 2, K::Vector, In, false); // encoder.LayerNorm
        }
        if d.conv_kernel > 0 {
            p.push(h, h / d.conv_groups.max(1) * d.conv_kernel, 1, K::Vector, In, false); // conv
            p.push(h, 1, 3, K::Vector, In, false); // its bias and LayerNorm
        }
        let own = u64::from(!d.shared_keys) * (u64::from(d.c2p) + u64::from(d.p2c));
        p.push(q, h, own * l, K::Linear(R::Dense), B, false); // pos_key_proj, pos_query_proj
        p.push(q, 1, own * l, K::Vector, B, false);
    }
    p.push(q, h, l, K::Linear(R::Q), B, true);
    p.push(q, h, l, K::Linear(R::K), B, true);
    p.push(q, h, l, K::Linear(R::V), B, true);
    p.push(h, q, l, K::Linear(R::O), B, true);
    p.push(q, 1, 3 * l, K::Vector, B, true); // q, k, v biases
    p.push(h, 1, 3 * l, K::Vector, B, false); // o bias, attention.output.LayerNorm
    p.push(i, h, l, K::Linear(R::Up), B, true);
    p.push(i, 1, l, K::Vector, B, true);
    p.push(h, i, l, K::Linear(R::Down), B, true);
    p.push(h, 1, 3 * l, K::Vector, B, false); // output bias, output.LayerNorm
}

/// A projection to heads and its transpose-contiguous `(b·heads, s, d)` copy.
fn to_heads(
    g: &mut Graph<'_>,
    x: Tensor,
    rows: u64,
    h: u64,
    w: u64,
    role: LinearRole,
    name: &'static str,
) -> Tensor {
    let c = g.ctx.compute_elem;
    let p = g.linear(x, rows, h, w, role, Cat::AttentionIo, name);
    g.tensor(rows * w * c, c, g.rg(p), Cat::AttentionIo)
}

/// The relative position embeddings as a layer's attention reads them: dropped out, projected
/// by the query (p2c) and key (c2p) projections (the content's, or their own), made head-major
/// and repeated over the batch.
fn positions(g: &mut Graph<'_>, m: &TransformerSpec, d: Disentangled) -> (Option<Tensor>, Option<Tensor>) {
    let ctx = g.ctx;
    let (h, q, rows) = (m.hidden_size, m.q_width(), d.rows());
    let e = if d.norm && ctx.amp { 4 } else { ctx.compute_elem };
    // the LayerNorm's output, made once a forward: a table every layer reads (and keeps when the
    // dropout keeps nothing of its own)
    let table = g.shared_tensor(rows * h * e, e, ctx.full, Shared::RelPositions);
    let r = g.dropout(table, rows * h, m.hidden_dropout);
    let c = ctx.compute_elem;
    let mut project = |on: bool, role: LinearRole, own: &'static str, shared: &'static str| {
        on.then(|| {
            let (role, name) = if d.shared_keys { (role, shared) } else { (LinearRole::Dense, own) };
            let p = g.linear(r, rows, h, q, role, Cat::AttentionIo, name);
            g.tensor(ctx.batch * rows * q * c, c, g.rg(p), Cat::AttentionIo)
        })
    };
    let pos_k = project(d.c2p, LinearRole::K, "pos_key_proj", "key_proj (positions)");
    let pos_q = project(d.p2c, LinearRole::Q, "pos_query_proj", "query_proj (positions)");
    (pos_k, pos_q)
}

fn block(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> Tensor {
    let (ts, h, q) = (g.ctx.rank_tokens, m.hidden_size, m.q_width());
    let qh = to_heads(g, x, ts, h, q, LinearRole::Q, "query_proj");
    let kh = to_heads(g, x, ts, h, q, LinearRole::K, "key_proj");
    let vh = to_heads(g, x, ts, h, q, LinearRole::V, "value_proj");
    let pos = match m.disentangled {
        Some(d) => positions(g, m, d),
        None => (None, None),
    };
    let a = RelAttn {
        heads: m.num_heads,
        head_dim: m.head_dim,
        positions: m.disentangled.map_or(0, |d| d.rows()),
        dropout: m.attention_dropout,
    };
    let o = g.disentangled_attention((qh, kh, vh), pos, a);
    super::bert::post_ln_tail(g, m, x, o)
}

/// Word ids kept when the embeddings train (and the token types, gathered from zeros, where
/// there are some); the sum under the LayerNorm; `embeddings * mask` keeps the mask (the
/// attention mask cast to the stream's dtype); dropout. Then the relative embeddings' LayerNorm
/// (its input is the weight: only its statistics are activations) and the convolution beside
/// the first layer.
fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    let ctx = g.ctx;
    let (t, h) = (ctx.tokens, m.hidden_size);
    let e = g.embedding(h);
    if ctx.full && m.type_vocab_size > 0 {
        g.keep_new(t * 8, Cat::Embeddings);
    }
    let sum = g.tensor(t * h * ctx.residual_elem, ctx.residual_elem, g.rg(e), Cat::Embeddings);
    let n = g.norm(sum, ctx.rank_tokens, h, NormKind::Layer, "embeddings.LayerNorm");
    let mask = g.tensor(t * g.elem(n), g.elem(n), false, Cat::Embeddings);
    let masked = g.mul(n, mask, t * h);
    let out = g.dropout(masked, t * h, m.hidden_dropout);
    if let Some(d) = m.disentangled.filter(|d| d.norm) {
        // a parameter: no activation bytes of its own
        let weight = g.tensor(0, if ctx.amp { 4 } else { ctx.compute_elem }, false, Cat::Embeddings);
        let _ = g.norm(weight, d.rows(), h, NormKind::Layer, "encoder.LayerNorm (positions)");
    }
    if let Some(d) = m.disentangled.filter(|d| d.conv_kernel > 0) {
        conv(g, m, d, out);
    }
    out
}

/// `ConvLayer` beside the first layer (outside the checkpointed layers): `conv1d` on a
/// channels-first copy of the embeddings (kept when its weight trains), its padding positions
/// zeroed in place (`masked_fill_` keeps the `(b, s)` bool mask), dropout, the activation, the
/// sum with the first layer's output under a LayerNorm, and `* input_mask` (the mask kept): the
/// product is what the second layer reads (counted there).
fn conv(g: &mut Graph<'_>, m: &TransformerSpec, d: Disentangled, embeddings: Tensor) {
    let ctx = g.ctx;
    let (t, h, r) = (ctx.tokens, m.hidden_size, ctx.residual_elem);
    let n = t * h;
    let copy = g.tensor(n * g.elem(embeddings), g.elem(embeddings), g.rg(embeddings), Cat::Embeddings);
    if ctx.full {
        g.keep(copy);
    }
    let c = ctx.compute_elem;
    let out = g.tensor(n * c, c, ctx.full || g.rg(embeddings), Cat::Embeddings);
    if g.rg(out) {
        g.keep_new(t, Cat::DropoutMasks);
    }
    let dropped = g.dropout(out, n, m.hidden_dropout);
    let act = g.act(dropped, n, if d.conv_tanh { Act::Tanh } else { Act::Gelu });
    let layer0 = g.tensor(n * r, r, ctx.full || ctx.lora.is_some(), Cat::Residual);
    let sum = g.add(layer0, act, n, Cat::Residual);
    let normed = g.norm(sum, ctx.rank_tokens, h, NormKind::Layer, "encoder.conv.LayerNorm");
    let mask = g.tensor(t * g.elem(normed), g.elem(normed), false, Cat::Embeddings);
    let _ = g.mul(normed, mask, n);
}

/// `DebertaV2ForSequenceClassification`: the pooler's dense on the first token (a view of the
/// last hidden state, so the whole state is kept; under autocast its half copy), its GELU
/// (which keeps the dense output), dropout, the classifier and the cross-entropy over `n`
/// classes.
fn classifier(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor, n: u64) -> u64 {
    let ctx = g.ctx;
    let (b, h, c) = (ctx.batch, m.hidden_size, ctx.compute_elem);
    let before = g.kept.total();
    if ctx.amp {
        g.keep_new(b * h * c, Cat::HeadLoss);
    } else {
        g.keep(x);
    }
    // dense's output (kept by GELU), GELU's (dropped out: the mask and the output, which the
    // classifier keeps)
    g.keep_new(2 * b * h * c + if m.hidden_dropout > 0.0 { b * h } else { 0 }, Cat::HeadLoss);
    g.cross_entropy(b, n);
    g.kept.total() - before
}

/// DeBERTa-v2's own keys.
fn read(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let base = super::bert::read(r)?;
    if let Some(e) = r.opt_u64("embedding_size")?.filter(|&e| e != base.hidden_size) {
        return Err(r.invalid(
            "embedding_size",
            format!("{e} differs from hidden_size: its projection is not modelled"),
        ));
    }
    let absolute = r.bool_or("position_biased_input", true)?;
    let unmodelled = (r.f64_or("pooler_dropout", 0.0)? > 0.0).then(|| {
        "pooler_dropout: the classifier is costed as keeping the last hidden state, which a dropout before the pooler frees (an overestimate)".to_owned()
    });
    let relative = r.bool_or("relative_attention", false)?;
    let types = pos_att_types(r)?;
    let disentangled = if relative {
        // -1 (or absent) means "unset"
        let span = match (r.opt_f64("position_buckets")?, r.opt_f64("max_relative_positions")?) {
            (Some(b), _) if b >= 1.0 => b as u64,
            (_, Some(p)) if p >= 1.0 => p as u64,
            _ => base.max_position_embeddings,
        };
        let conv_kernel = r.opt_u64("conv_kernel_size")?.unwrap_or(0);
        let norm = r
            .str("norm_rel_ebd")
            .is_some_and(|s| s.to_lowercase().split('|').any(|x| x.trim() == "layer_norm"));
        Some(Disentangled {
            span,
            c2p: types.0,
            p2c: types.1,
            shared_keys: r.bool_or("share_att_key", false)?,
            norm,
            conv_kernel,
            conv_groups: if conv_kernel > 0 { r.u64_or("conv_groups", 1)?.max(1) } else { 0 },
            conv_tanh: r.str("conv_act").unwrap_or("tanh") == "tanh",
            absolute,
        })
    } else {
        None
    };
    Ok(TransformerSpec {
        family: super::by_id("deberta_v2").unwrap_or_default(),
        // without absolute positions there is no position table: the relative buckets reach any
        // length, and `max_position_embeddings` is only the length the model was trained at
        max_position_embeddings: if absolute { base.max_position_embeddings } else { 0 },
        context_length: base.max_position_embeddings,
        type_vocab_size: r.opt_u64("type_vocab_size")?.unwrap_or(0),
        disentangled,
        unmodelled,
        ..base
    })
}

/// `pos_att_type`: a `|`-separated string or a list of `"c2p"` / `"p2c"` (content-to-position,
/// position-to-content).
fn pos_att_types(r: &Reader<'_>) -> Result<(bool, bool), ConfigError> {
    let names: Vec<String> = match r.get("pos_att_type") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::String(s)) => {
            s.to_lowercase().split('|').map(|x| x.trim().to_string()).collect()
        }
        Some(serde_json::Value::Array(a)) => {
            a.iter().filter_map(|x| x.as_str()).map(|x| x.trim().to_lowercase()).collect()
        }
        Some(_) => return Err(r.invalid("pos_att_type", "expected \"p2c|c2p\" or a list of them")),
    };
    if let Some(bad) = names.iter().find(|x| !x.is_empty() && *x != "c2p" && *x != "p2c") {
        return Err(r.invalid("pos_att_type", format!("unknown type \"{bad}\" (expected c2p, p2c)")));
    }
    Ok((names.iter().any(|x| x == "c2p"), names.iter().any(|x| x == "p2c")))
}

#[cfg(test)]
mod tests {
    use crate::model::hf_config::parse;

    fn n_params(text: &str) -> u64 {
        let spec = parse("config.json", text).expect("config").spec;
        crate::model::ModelSpec {
            name: "m".into(),
            arch: crate::model::Architecture::Transformer(Box::new(spec)),
        }
        .n_params()
    }

    /// Counted on the meta device with transformers 5.25: `DebertaV2Config()`'s defaults (no
    /// relative attention, absolute positions), and deberta-v2-xlarge's layout (relative
    /// attention with buckets, the convolution beside the first layer).
    #[test]
    fn configs_count_as_transformers_builds_them() {
        let defaults = [("DebertaV2ForMaskedLM", 879_999_588), ("DebertaV2Model", 877_507_584)];
        for (arch, n) in defaults {
            assert_eq!(
                n_params(&format!(r#"{{"model_type":"deberta-v2","architectures":["{arch}"]}}"#)),
                n,
                "{arch}"
            );
        }
        let xlarge = r#"{"model_type":"deberta-v2","relative_attention":true,"position_buckets":256,
            "norm_rel_ebd":"layer_norm","share_att_key":true,"pos_att_type":["p2c","c2p"],
            "position_biased_input":false,"conv_kernel_size":3,"conv_act":"gelu","attention_head_size":64}"#;
        assert_eq!(n_params(xlarge), 887_085_156);
    }

    /// The relative span follows `position_buckets`, else `max_relative_positions`, else the
    /// learned positions; unknown score types and a projected embedding are refused by key.
    #[test]
    fn relative_attention_reads_its_keys() {
        let spec = |extra: &str| {
            parse(
                "config.json",
                &format!(r#"{{"model_type":"deberta-v2","relative_attention":true{extra}}}"#),
            )
            .map(|p| p.spec)
        };
        let d = |extra: &str| spec(extra).expect("config").disentangled.expect("relative");
        assert_eq!(d(r#","position_buckets":256"#).rows(), 512);
        assert_eq!(d(r#","max_relative_positions":64"#).rows(), 128);
        assert_eq!(d(r#","max_relative_positions":-1"#).rows(), 1024);
        let both = d(r#","pos_att_type":"p2c|c2p""#);
        assert!(both.c2p && both.p2c && !both.shared_keys);
        let err = spec(r#","pos_att_type":"p2p""#).expect_err("unknown type").to_string();
        assert!(err.contains("pos_att_type") && err.contains("p2p"), "{err}");
        let err = spec(r#","embedding_size":128"#).expect_err("projected embeddings").to_string();
        assert!(err.contains("embedding_size"), "{err}");
        // v3: no absolute positions, so no position table and no limit from it
        let v3 = spec(r#","position_biased_input":false"#).expect("config");
        assert_eq!((v3.max_position_embeddings, v3.context_length), (0, 512));
    }
}
