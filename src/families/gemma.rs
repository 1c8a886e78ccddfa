//! Gemma, Gemma 2 and Gemma 3 (text): `(1 + w)` RMSNorm in fp32, GeGLU with tanh GELU, the
//! embedding scaled by `sqrt(h)` (a 0-dim tensor). Gemma 2 and 3 put a norm before and after
//! attention and MLP; Gemma 2 soft-caps attention (eager: transformers has no SDPA path for it)
//! and the final logits; Gemma 3 adds a per-head q/k norm and keeps two rotary tables (local and
//! global layers).

use super::prelude::*;

const GEMMA: Style = Style { norm: NormKind::RmsOffset, act: Act::Gelu, ..LLAMA };
const GEMMA2: Style = Style { placement: Placement::Sandwich, ..GEMMA };
const GEMMA3: Style = Style { qk_norm: QkNorm::PerHead, local_rope: true, ..GEMMA2 };

/// Gemma's embedding: the token embedding times a 0-dim `sqrt(h)` buffer (which the multiply
/// keeps, a buffer and not an activation).
fn scaled_embedding(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    let e = g.embedding(m.hidden_size);
    let n = g.ctx.tokens * m.hidden_size;
    g.scale_by_tensor(e, n)
}

/// Attention and final logit soft-capping (Gemma 2; Gemma 3's configs carry the keys, unset).
fn softcaps(r: &Reader<'_>, d: &mut Draft) -> Result<(), ConfigError> {
    d.spec.attn_softcap = r.opt_f64("attn_logit_softcapping")?.filter(|x| *x > 0.0);
    d.spec.final_softcap = r.opt_f64("final_logit_softcapping")?.filter(|x| *x > 0.0);
    Ok(())
}

/// Gemma's tensors; `norms` a block (2, or 4 with sandwich norms), per-head q/k norms (Gemma 3).
fn params(p: &mut Params, m: &TransformerSpec, norms: u64, qk_norm: bool) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.qkvo(m, m.qkv_bias, m.qkv_bias);
    if qk_norm {
        p.norms(m.head_dim, 2, l, false);
    }
    mlp_params(p, h, m.intermediate_size, l, true, false, false);
    p.norms(h, norms, l, false);
}

/// Gemma (1).
pub(super) struct Gemma;

impl FamilyDef for Gemma {
    fn id(&self) -> &'static str {
        "gemma"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gemma"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GemmaDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, 2, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &GEMMA)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        scaled_embedding(g, m)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "gemma" => Some(
                r#"{"vocab_size":256000,"hidden_size":3072,"intermediate_size":24576,"num_hidden_layers":28,
                "num_attention_heads":16,"num_key_value_heads":16,"head_dim":256,"tie_word_embeddings":true,
                "attention_bias":false}"#,
            ),
            _ => None,
        }
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        GEMMA.kinds()
    }
}

/// Gemma 2.
pub(super) struct Gemma2;

impl FamilyDef for Gemma2 {
    fn id(&self) -> &'static str {
        "gemma2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gemma2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Gemma2DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, 4, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &GEMMA2)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        scaled_embedding(g, m)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "gemma2" => Some(
                r#"{"vocab_size":256000,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
                "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"tie_word_embeddings":true,
                "attention_bias":false,"sliding_window":4096,"final_logit_softcapping":30.0,
                "attn_logit_softcapping":50.0}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let n = d.spec.num_layers as usize;
        d.sliding =
            r.layer_types(d.spec.num_layers)?.unwrap_or_else(|| (0..n).map(|j| (j + 1) % 2 != 0).collect());
        softcaps(r, d)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { eager_only: true, ..GEMMA2.kinds() }
    }
}

/// Gemma 3 (the text part of multimodal checkpoints too).
pub(super) struct Gemma3;

impl FamilyDef for Gemma3 {
    fn id(&self) -> &'static str {
        "gemma3"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gemma3_text", "gemma3"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Gemma3DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, 4, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &GEMMA3)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        scaled_embedding(g, m)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "gemma3_text" => Some(
                r#"{"vocab_size":262208,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
                "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"tie_word_embeddings":true,
                "attention_bias":false,"sliding_window":4096,"sliding_window_pattern":6}"#,
            ),
            "gemma3" => Some(r#"{"tie_word_embeddings":true}"#),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        let p = r.any_u64(&["sliding_window_pattern", "_sliding_window_pattern"])?.unwrap_or(6).max(1);
        d.sliding = r.layer_types(l)?.unwrap_or_else(|| (0..l).map(|j| !(j + 1).is_multiple_of(p)).collect());
        softcaps(r, d)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { images_masked: true, ..GEMMA3.kinds() }
    }
}
