//! RoBERTa and XLM-RoBERTa (`RobertaForMaskedLM`, `XLMRobertaForMaskedLM`,
//! `…ForSequenceClassification`, the bare `…Model`). transformers' modular RoBERTa builds on BERT's
//! classes (`RobertaLayer(BertLayer)`, `RobertaModel(BertModel)`; XLM-R's are RoBERTa's), so the
//! blocks, the parameters and the masked-LM head are BERT's. Two things differ:
//! - the embeddings count positions from the padding id (`create_position_ids_from_input_ids`): a
//!   `(b, s)` int64 tensor per batch, and the token types gathered with it (`torch.gather` of the
//!   buffer), another `(b, s)` int64; both embeddings' backward keep their indices (BERT slices
//!   one `(1, s)` buffer);
//! - the classifier has no pooler: the first token goes through dropout, `dense`, tanh, dropout
//!   and `out_proj` (`RobertaClassificationHead`).

use super::params::classic_head_params;
use super::prelude::*;

/// RoBERTa, XLM-R.
pub(super) struct Roberta;

impl FamilyDef for Roberta {
    fn id(&self) -> &'static str {
        "roberta"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["roberta", "xlm-roberta"]
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        let pad = match c.text.opt_u64("pad_token_id") {
            Ok(p) => p.unwrap_or(1),
            Err(e) => return Some(Err(e)),
        };
        Some(super::bert::read(c.text).map(|m| TransformerSpec {
            family: super::by_id("roberta").unwrap_or_default(),
            position_offset: pad + 1,
            ..m
        }))
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        // RobertaConfig's and XLMRobertaConfig's defaults (they differ in the vocabulary only)
        match model_type {
            "roberta" => Some(
                r#"{"vocab_size":50265,"hidden_size":768,"num_hidden_layers":12,"num_attention_heads":12,
                "intermediate_size":3072,"max_position_embeddings":512,"type_vocab_size":2,
                "hidden_dropout_prob":0.1,"attention_probs_dropout_prob":0.1}"#,
            ),
            "xlm-roberta" => Some(
                r#"{"vocab_size":30522,"hidden_size":768,"num_hidden_layers":12,"num_attention_heads":12,
                "intermediate_size":3072,"max_position_embeddings":512,"type_vocab_size":2,
                "hidden_dropout_prob":0.1,"attention_probs_dropout_prob":0.1}"#,
            ),
            _ => None,
        }
    }

    fn block_class(&self, m: &TransformerSpec, model_type: &str) -> &'static str {
        let _ = m;
        if model_type == "xlm-roberta" { "XLMRobertaLayer" } else { "RobertaLayer" }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::bert::params(p, m);
        // the classifier's dense + out_proj count as BERT's pooler + classifier
        classic_head_params(p, m, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        super::bert::block(g, m, flags, x)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        embed(g, m)
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        match m.head {
            Head::SequenceClassification { num_labels } => classifier(g, m, num_labels),
            _ => super::bert::head(g, m, x),
        }
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&super::bert::PEFT)
    }

    fn default_head(&self) -> (Head, &'static str) {
        (Head::MaskedLm, "RobertaForMaskedLM")
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        super::bert::Bert.ops(m)
    }
}

/// Word ids, the `(b, s)` positions counted from the padding id and the token types gathered
/// with them (kept when the embeddings train); the sum kept by the embedding LayerNorm; dropout.
fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    let ctx = g.ctx;
    let (t, h) = (ctx.tokens, m.hidden_size);
    let e = g.embedding(h);
    if ctx.full {
        g.keep_new(2 * t * 8, Cat::Embeddings);
    }
    let sum = g.tensor(t * h * ctx.residual_elem, ctx.residual_elem, g.rg(e), Cat::Embeddings);
    let n = g.norm(sum, ctx.rank_tokens, h, NormKind::Layer, "embeddings.LayerNorm");
    g.dropout(n, t * h, m.hidden_dropout)
}

/// `RobertaClassificationHead` on the first token: dropout, dense, tanh, dropout, out_proj, and
/// the cross-entropy over `n` classes.
fn classifier(g: &mut Graph<'_>, m: &TransformerSpec, n: u64) -> u64 {
    let ctx = g.ctx;
    let (b, h, c) = (ctx.batch, m.hidden_size, ctx.compute_elem);
    let before = g.kept.total();
    // dense's input (the dropped-out first token), tanh's output, out_proj's input
    g.keep_new(3 * b * h * c, Cat::HeadLoss);
    if m.hidden_dropout > 0.0 {
        // the two dropouts' masks
        g.keep_new(2 * b * h, Cat::HeadLoss);
    }
    g.cross_entropy(b, n);
    g.kept.total() - before
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

    /// The config classes' defaults, counted on the meta device with transformers 5.25
    /// (`AutoModelForMaskedLM`, `AutoModel`, `AutoModelForSequenceClassification` with 5 labels).
    #[test]
    fn class_defaults_count_as_transformers_builds_them() {
        let cases = [
            ("roberta", "RobertaForMaskedLM", 124_696_665),
            ("roberta", "RobertaModel", 124_644_864),
            ("roberta", "RobertaForSequenceClassification", 124_648_709),
            ("xlm-roberta", "XLMRobertaForMaskedLM", 109_514_298),
            ("xlm-roberta", "XLMRobertaModel", 109_482_240),
        ];
        for (mt, arch, n) in cases {
            let text = format!(r#"{{"model_type":"{mt}","architectures":["{arch}"],"num_labels":5}}"#);
            assert_eq!(n_params(&text), n, "{mt} {arch}");
        }
    }

    /// Positions start after the padding id: roberta-base's 514 learned positions take 512 tokens.
    #[test]
    fn positions_start_after_the_padding_id() {
        let text = r#"{"model_type":"roberta","max_position_embeddings":514,"pad_token_id":1}"#;
        let spec = parse("config.json", text).expect("config").spec;
        assert_eq!((spec.usable_positions(), spec.max_context()), (512, 512));
        let model = crate::model::ModelSpec {
            name: "m".into(),
            arch: crate::model::Architecture::Transformer(Box::new(spec)),
        };
        let mut sc = crate::estimate::Scenario::new(model);
        sc.seq = 512;
        assert!(crate::estimate::estimate(&sc).is_ok());
        sc.seq = 513;
        let err = crate::estimate::estimate(&sc).expect_err("past the usable positions").to_string();
        assert!(err.contains("512 usable positions (514 learned"), "{err}");
    }
}
