//! ModernBERT (`ModernBertForMaskedLM`, the bare `ModernBertModel`), as transformers 5 runs it
//! (no unpadding outside flash-attention): token embeddings under a bias-free LayerNorm, pre-norm
//! blocks whose first has no attention norm (`nn.Identity`), a fused `Wqkv` without bias, rotary
//! with a table per layer type (global and local bases), bidirectional attention within a window
//! of `local_attention / 2` on every layer but each `global_attn_every_n_layers`-th, a GeGLU MLP
//! from one fused `Wi` (`act(input) * gate`), the final norm; the head (dense, GELU, LayerNorm)
//! and the decoder tied to the embeddings with a bias, its loss `ForMaskedLMLoss` on an fp32 copy
//! of the logits.

use super::prelude::*;

const STYLE: Style = Style {
    norm: NormKind::Layer,
    fused_qkv: true,
    fused_gate_up: true,
    act: Act::Gelu,
    local_rope: true,
    ..LLAMA
};

/// ModernBERT.
pub(super) struct ModernBert;

impl FamilyDef for ModernBert {
    fn id(&self) -> &'static str {
        "modernbert"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["modernbert"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "ModernBertEncoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "modernbert").then_some(
            r#"{"vocab_size":50368,"hidden_size":768,"intermediate_size":1152,"num_hidden_layers":22,
            "num_attention_heads":12,"max_position_embeddings":8192,"local_attention":128,
            "global_attn_every_n_layers":3,"tie_word_embeddings":true}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        d.sliding = match r.layer_types(l)? {
            Some(t) => t,
            None => {
                let every = r.u64_or("global_attn_every_n_layers", 3)?.max(1);
                (0..l).map(|j| !j.is_multiple_of(every)).collect()
            }
        };
        // `sliding_window` is `local_attention // 2` tokens on either side
        d.window = Some(r.u64_or("local_attention", 128)? / 2);
        // the head is read after this hook: the classifier's options count when `architectures`
        // names it
        let classifies = r.get("architectures").and_then(|v| v.as_array()).is_some_and(|a| {
            a.iter().any(|x| x.as_str().is_some_and(|s| s.ends_with("ForSequenceClassification")))
        });
        if classifies && r.str("classifier_pooling") == Some("mean") {
            d.spec.unmodelled = Some(
                "classifier_pooling \"mean\": the classifier is costed as on the first token (cls), the mean pooling's tensors are not modelled".into(),
            );
        }
        if classifies && r.bool_or("classifier_bias", false)? {
            d.spec.unmodelled = Some("classifier_bias: the head's dense bias is not counted".into());
        }
        Ok(())
    }

    fn default_head(&self) -> (Head, &'static str) {
        (Head::MaskedLm, "ModernBertForMaskedLM")
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        use LinearRole as R;
        use ParamKind as K;
        let (h, l, v, i) = (m.hidden_size, m.num_layers, m.vocab_size, m.intermediate_size);
        p.push(v, h, 1, K::Embedding, Scope::Input, true);
        p.push(h, 1, 1, K::Vector, Scope::Input, false); // embeddings.norm
        p.linear(3 * m.q_width(), h, l, R::Q, false);
        p.linear(h, m.q_width(), l, R::O, false);
        p.norms(h, 1, l.saturating_sub(1), false); // attn_norm, none on layer 0
        p.norms(h, 1, l, false); // mlp_norm
        p.linear(2 * i, h, l, R::Up, false);
        p.linear(h, i, l, R::Down, false);
        p.push(h, 1, 1, K::Vector, Scope::Output, false); // final_norm
        if m.head == Head::Base {
            return;
        }
        p.push(h, h, 1, K::Linear(R::Dense), Scope::Output, false); // head.dense
        p.push(h, 1, 1, K::Vector, Scope::Output, false); // head.norm
        match m.head {
            Head::SequenceClassification { num_labels } => {
                p.push(num_labels, h, 1, K::Head, Scope::Output, false); // classifier
                p.push(num_labels, 1, 1, K::Vector, Scope::Output, false);
            }
            _ => {
                if !m.tie_word_embeddings {
                    p.push(v, h, 1, K::Head, Scope::Output, true);
                }
                p.push(v, 1, 1, K::Vector, Scope::Output, true); // decoder bias
            }
        }
    }

    fn inference_validated(&self) -> bool {
        // the rotary's fp32 working set (q's rotated fp32 copy held while k's `float()`,
        // `rotate_half` and `cat` run) is not modelled: the tiny model's inference peak is 14 %
        // over the estimate, modernbert-base's 0.87 % (its logits dominate)
        false
    }

    fn first_block_differs(&self, _: &TransformerSpec) -> bool {
        true
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let (ts, h) = (g.ctx.rank_tokens, m.hidden_size);
        let n = ts * h;
        let a_in = if g.first_block { x } else { g.norm(x, ts, h, NormKind::Layer, "attn_norm") };
        let a = attention(g, m, flags, a_in, &STYLE);
        let x2 = g.add(x, a, n, Cat::Residual);
        let f_in = g.norm(x2, ts, h, NormKind::Layer, "mlp_norm");
        let f = mlp(g, m, flags, f_in, &STYLE);
        g.add(x2, f, n, Cat::Residual)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        let e = g.embedding(m.hidden_size);
        let n = g.norm(e, g.ctx.rank_tokens, m.hidden_size, NormKind::Layer, "embeddings.norm");
        g.dropout(n, g.ctx.tokens * m.hidden_size, m.embedding_dropout)
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        let ctx = g.ctx;
        let (ts, h) = (ctx.rank_tokens, m.hidden_size);
        let before = g.kept.total();
        let n = g.norm(x, ts, h, NormKind::Layer, "final_norm");
        match m.head {
            Head::Base => return g.kept.total() - before,
            Head::SequenceClassification { num_labels } => {
                classifier(g, m, n, num_labels);
                return g.kept.total() - before;
            }
            _ => {}
        }
        let d = g.linear(n, ts, h, h, LinearRole::Dense, Cat::HeadLoss, "head.dense");
        let a = g.act(d, ctx.tokens * h, Act::Gelu);
        let hn = g.norm(a, ts, h, NormKind::Layer, "head.norm");
        // the decoder and `ForMaskedLMLoss`: `logits.float()`, no shift
        g.head_loss(hn, ts, h, classes(m), false, false);
        g.kept.total() - before
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PeftModules {
            qkv: Some("Wqkv"),
            o: r"attn\.Wo",
            gate_up: Some("Wi"),
            down: r"mlp\.Wo",
            ..PeftModules::LLAMA
        })
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { kv: KvLayout::None, final_norm: NormKind::Layer, ..STYLE.kinds() }
    }
}

/// `ModernBertForSequenceClassification` with `classifier_pooling: "cls"`: the first token's
/// view keeps the final norm's whole output alive (head.dense saves it), then the head (dense,
/// GELU, LayerNorm) and the classifier on `(b, h)`, and the cross-entropy over `n` classes.
fn classifier(g: &mut Graph<'_>, m: &TransformerSpec, n: Tensor, classes: u64) {
    let ctx = g.ctx;
    let (b, h, c) = (ctx.batch, m.hidden_size, ctx.compute_elem);
    g.keep(n);
    // dense's output (GELU keeps it), GELU's (the LayerNorm keeps it, with its two fp32 stats),
    // the LayerNorm's (the classifier keeps it)
    g.keep_new(3 * b * h * c + 2 * b * 4, Cat::HeadLoss);
    g.cross_entropy(b, classes);
}

#[cfg(test)]
mod tests {
    /// `ModernBertForMaskedLM` from the config class's defaults (the harness's `modernbert-base`,
    /// transformers 5.25): 149,655,232 parameters, the first block without its attention norm.
    #[test]
    fn class_defaults_count_as_transformers_builds_them() {
        let text = r#"{"model_type":"modernbert","architectures":["ModernBertForMaskedLM"]}"#;
        let spec = crate::model::hf_config::parse("config.json", text).expect("config").spec;
        assert_eq!(spec.num_layers, 22);
        // every third layer global, from layer 0
        let sliding =
            (0..22).filter(|&i| spec.layer_flags.get(i).is_some_and(|f| f & super::layer::SLIDING != 0));
        assert_eq!(sliding.count(), 14);
        let m = crate::model::ModelSpec {
            name: "m".into(),
            arch: crate::model::Architecture::Transformer(Box::new(spec)),
        };
        assert_eq!(m.n_params(), 149_655_232);
        // the harness's tiny classifier: the head (dense, norm) and a biased 3-class classifier
        let text = r#"{"model_type":"modernbert","architectures":["ModernBertForSequenceClassification"],
            "vocab_size":1000,"hidden_size":256,"intermediate_size":384,"num_hidden_layers":4,
            "num_attention_heads":4,"num_labels":3}"#;
        let spec = crate::model::hf_config::parse("config.json", text).expect("config").spec;
        let m = crate::model::ModelSpec {
            name: "m".into(),
            arch: crate::model::Architecture::Transformer(Box::new(spec)),
        };
        assert_eq!(m.n_params(), 2_553_091);
    }

    /// A classifier the rules do not walk says so (the estimate is then flagged).
    #[test]
    fn mean_pooling_is_flagged() {
        let text = r#"{"model_type":"modernbert","architectures":["ModernBertForSequenceClassification"],
            "classifier_pooling":"mean"}"#;
        let spec = crate::model::hf_config::parse("config.json", text).expect("config").spec;
        assert!(spec.unmodelled.as_deref().is_some_and(|u| u.contains("mean")));
        let text = r#"{"model_type":"modernbert","architectures":["ModernBertForMaskedLM"],"classifier_pooling":"mean"}"#;
        let spec = crate::model::hf_config::parse("config.json", text).expect("config").spec;
        assert!(spec.unmodelled.is_none());
    }
}
