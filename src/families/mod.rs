//! One file a family: what it reads from `config.json`, its parameter tensors, the ops of its
//! block, embedding and head, its KV layout and which op kinds it uses — a [`FamilyDef`]. This
//! module keeps the seam (the trait), the registry and the pieces families share: the Llama-like
//! block ([`blocks`]), the parameter helpers ([`params`]) and the facts the walk reads through
//! [`def`].
//!
//! Adding a family is one file implementing [`FamilyDef`] and one line in [`REGISTRY`]. What an
//! op keeps for backward is never written here: it is the op's rule in [`crate::engine::ops`].

mod apertus;
mod arcee;
mod bamba;
mod bert;
mod blocks;
mod bloom;
mod cohere;
mod config;
mod convnext;
mod deberta_v2;
mod deepseek;
mod dinov2;
mod ernie4_5;
mod exaone4;
mod falcon;
mod falcon_h1;
mod gemma;
mod generic;
mod glm4;
mod gpt2;
mod gpt_bigcode;
mod gpt_neox;
mod gpt_oss;
mod granite;
mod granitemoehybrid;
mod jamba;
mod kimi_linear;
mod kinds;
mod lfm2;
mod litgpt;
mod llama;
mod llama4;
mod longcat_flash;
mod mamba;
mod mamba2;
mod megatron;
mod minimax_m2;
mod modernbert;
pub(crate) mod moe;
mod nemotron_h;
mod olmo2;
mod olmoe;
mod opt;
mod params;
mod phi;
mod phi3;
mod phimoe;
mod qwen3;
mod qwen3_next;
mod resnet;
mod roberta;
mod seed_oss;
pub(crate) mod siglip;
mod smollm3;
mod ssm;
mod starcoder2;
pub mod swin;
#[cfg(test)]
mod toy;
mod vit;
mod zamba2;

pub(crate) use blocks::{
    LLAMA, Placement, QkNorm, Style, attention, dense_mlp, mixer_block, mlp, sequential_block,
};
pub(crate) use config::compact_flags;
pub use config::{ConfigSource, Draft};
pub use kinds::{CheckpointMask, KvLayout, Litgpt, OpKinds, PeftModules, Rope};
pub use params::Params;
pub(crate) use params::{
    dense_and_sparse_layers, mlp_params, moe_params, moe_params_fp32_router, ssm_params, ssm_params_out_bias,
};

/// What a family file uses: the seam, the shared pieces, the op kinds and the model types.
mod prelude {
    pub(super) use super::config::{ConfigSource, Draft, check_top_k, qwen_sliding, sliding_or_every};
    pub(super) use super::moe::read as read_moe;
    pub(super) use super::{
        CheckpointMask, FamilyDef, KvLayout, LLAMA, Litgpt, OpKinds, Params, PeftModules, Placement, QkNorm,
        Rope, Style, attention, attn_of, classes, dense_and_sparse_layers, dense_mlp, dense_width,
        mixer_block, mlp, mlp_params, moe_params, moe_params_fp32_router, rope_dim, sequential_block,
        ssm_params, ssm_params_out_bias,
    };
    pub(super) use crate::engine::inputs::saved::Cat;
    pub(super) use crate::engine::ops::{
        Act, Graph, InferKind, LossKind, MlpBackward, MoeOp, NormKind, Routing, Shared, Softmax, Tensor,
    };
    pub(super) use crate::model::config::{ConfigError, Reader};
    pub(super) use crate::model::pixels::{Patches, PositionInterpolation};
    pub(super) use crate::model::{
        Delta, Head, LinearRole, Mamba, Moe, ParamKind, Router, Scope, TransformerSpec, layer,
    };
}

use crate::engine::inputs::{Ctx, Kernel};
use crate::engine::ops::{Attn, Graph, Tensor};
use crate::model::config::{ConfigError, Reader};
use crate::model::{Family, Head, TransformerSpec, layer};

/// Everything about one family. Most methods have the Llama-like answer as their default, so a
/// Llama-like family writes its id, its config types, its block class, its parameters, its
/// block and its op kinds.
pub trait FamilyDef: Sync {
    /// The id presets, scenario files and the JSON name it by (`"llama"`).
    fn id(&self) -> &'static str;

    /// The HF `model_type`s whose `config.json` this family reads.
    fn model_types(&self) -> &'static [&'static str] {
        &[]
    }

    /// transformers' config-class defaults (JSON) of the keys read, for one of its `model_types`.
    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        let _ = model_type;
        None
    }

    /// Reads a `config.json` unlike a decoder's (GPT-2's, BERT's, ViT's keys); `None`: the keys
    /// every Llama-shaped decoder shares, then [`FamilyDef::config`]'s ([`read_config`]).
    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        let _ = c;
        None
    }

    /// The family's own keys (experts, biases, dropouts, sliding layers, …) on a decoder read so
    /// far. Without sliding layers the window is dropped.
    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let _ = (r, model_type, d);
        Ok(())
    }

    /// Attention heads (`num_attention_heads` and its aliases).
    fn config_heads(&self, r: &Reader<'_>) -> Result<u64, ConfigError> {
        r.positive_any(&["num_attention_heads", "n_head", "num_heads", "encoder_attention_heads"])
    }

    /// The number of blocks (`num_hidden_layers` and its aliases).
    fn config_layers(&self, r: &Reader<'_>) -> Result<u64, ConfigError> {
        r.positive_any(&["num_hidden_layers", "n_layer", "num_layers", "encoder_layers"])
    }

    /// Key/value heads (`num_key_value_heads` and its aliases, else every head attends alone).
    fn config_kv_heads(&self, r: &Reader<'_>, heads: u64) -> Result<u64, ConfigError> {
        Ok(r.any_u64(&["num_key_value_heads", "num_kv_heads", "n_head_kv"])?.unwrap_or(heads))
    }

    /// A `head_dim` key sets the head width (else the hidden size over the heads).
    fn config_head_dim_key(&self) -> bool {
        true
    }

    /// The MLP width.
    fn config_intermediate(&self, r: &Reader<'_>, hidden: u64) -> Result<u64, ConfigError> {
        config::intermediate(r, hidden)
    }

    /// The head a config without `architectures` gets, and its class name for the note.
    fn default_head(&self) -> (Head, &'static str) {
        (Head::CausalLm, "ForCausalLM")
    }

    /// Have its rules been checked against measured PyTorch runs?
    fn validated(&self) -> bool {
        true
    }

    /// Has its inference working set been checked against measured runs (its training has,
    /// where [`Self::validated`])?
    fn inference_validated(&self) -> bool {
        true
    }

    /// The decoder-layer class (FSDP auto-wrap policies); `model_type` is the config's own (else
    /// the model's name, lower case).
    fn block_class(&self, m: &TransformerSpec, model_type: &str) -> &'static str;

    /// Every parameter tensor of the model, grouped by shape (vision towers and the counted
    /// extras are added by [`params`]).
    fn params(&self, p: &mut Params, m: &TransformerSpec);

    /// Walks one block on `g`; `x` is the block input. Returns the block output.
    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor;

    /// Walks the embedding part; returns block 0's input.
    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        let e = g.embedding(m.hidden_size);
        g.dropout(e, g.ctx.tokens * m.hidden_size, m.embedding_dropout)
    }

    /// Walks the final norm, head and loss on the last block's output; returns the bytes the head
    /// and the loss keep (released before the last block's backward).
    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        let ctx = g.ctx;
        let norm = match self.litgpt() {
            Some(Litgpt::Llama) if litgpt::runs(ctx, self.litgpt()) => litgpt::norm(ctx),
            _ => self.ops(m).final_norm,
        };
        let n = g.norm(x, ctx.rank_tokens, m.hidden_size, norm, "final norm");
        let softcap = m.final_softcap.is_some();
        g.head_loss(n, ctx.rank_tokens, m.hidden_size, classes(m), softcap, m.head == Head::CausalLm)
    }

    /// The op kinds its blocks, embedding and head use: the facts the walk's rules read.
    fn ops(&self, m: &TransformerSpec) -> OpKinds;

    /// The module names PEFT's `target_modules` matches for each LoRA target (regex pieces, as
    /// the probe writes them); `None` where the probe has none yet.
    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PeftModules::LLAMA)
    }

    /// Its first block is built unlike the others (ModernBERT's has no attention norm): the walk
    /// walks it on its own, with [`Graph::first_block`] set.
    fn first_block_differs(&self, m: &TransformerSpec) -> bool {
        let _ = m;
        false
    }

    /// Its input is an image (pixels), not tokens.
    fn takes_pixels(&self) -> bool {
        false
    }

    /// litgpt's own model code covers this family (`--model-code litgpt`), with this block shape.
    fn litgpt(&self) -> Option<Litgpt> {
        None
    }
}

/// Every family, by id. The first entry is the default family ([`Family::default`]: Llama).
static REGISTRY: &[&dyn FamilyDef] = &[
    &llama::Llama,
    &gpt2::Gpt2,
    &bert::Bert,
    &roberta::Roberta,
    &deberta_v2::DebertaV2,
    &modernbert::ModernBert,
    &qwen3::Qwen3,
    &gemma::Gemma,
    &gemma::Gemma2,
    &gemma::Gemma3,
    &phi3::Phi3,
    &phimoe::Phimoe,
    &cohere::Cohere,
    &lfm2::Lfm2,
    &mamba2::Mamba2,
    &bamba::Bamba,
    &granitemoehybrid::GraniteMoeHybrid,
    &nemotron_h::NemotronH,
    &falcon_h1::FalconH1,
    &mamba::MambaFamily,
    &jamba::Jamba,
    &qwen3_next::Qwen3Next,
    &kimi_linear::KimiLinear,
    &longcat_flash::LongcatFlash,
    &phi::Phi,
    &olmo2::Olmo2,
    &olmoe::Olmoe,
    &minimax_m2::MinimaxM2,
    &glm4::Glm4,
    &ernie4_5::Ernie45,
    &seed_oss::SeedOss,
    &exaone4::Exaone4,
    &arcee::Arcee,
    &apertus::Apertus,
    &llama4::Llama4,
    &gpt_bigcode::GptBigcode,
    &opt::Opt,
    &gpt_neox::GptNeox,
    &bloom::Bloom,
    &zamba2::Zamba2,
    &falcon::Falcon,
    &starcoder2::Starcoder2,
    &granite::Granite,
    &smollm3::Smollm3,
    &deepseek::Deepseek,
    &gpt_oss::GptOss,
    &vit::Vit,
    &dinov2::Dinov2,
    &dinov2::Dinov2Swiglu,
    &siglip::Siglip,
    &generic::Generic,
    &megatron::Megatron,
    #[cfg(test)]
    &toy::Toy,
];

/// The family a handle names.
pub fn def(f: Family) -> &'static dyn FamilyDef {
    // a handle is only made from the registry (`by_id`, `for_model_type`, deserialization)
    REGISTRY.get(usize::from(f.0)).copied().unwrap_or(REGISTRY[0])
}

/// The family registered under `id`.
pub fn by_id(id: &str) -> Option<Family> {
    REGISTRY.iter().position(|d| d.id() == id).map(|i| Family(i as u8))
}

/// The family that reads configs of this HF `model_type`, if one does.
pub fn for_model_type(model_type: &str) -> Option<Family> {
    REGISTRY.iter().position(|d| d.model_types().contains(&model_type)).map(|i| Family(i as u8))
}

/// The family an architecture without one of its own is estimated as (flagged unvalidated).
pub fn generic() -> Family {
    by_id(generic::Generic.id()).unwrap_or_default()
}

/// Every registered id, in registry order.
pub fn ids() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|d| d.id())
}

impl Family {
    /// The id it is named by.
    pub fn id(self) -> &'static str {
        def(self).id()
    }
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

// A family is written as the unit variant of an enum named `Family` (RON: `family: llama`, JSON:
// `"family": "llama"`), as the closed enum it replaced was.
impl serde::Serialize for Family {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit_variant("Family", u32::from(self.0), self.id())
    }
}

impl<'de> serde::Deserialize<'de> for Family {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_enum("Family", &[], FamilyVisitor)
    }
}

struct FamilyVisitor;

impl FamilyVisitor {
    fn find<E: serde::de::Error>(id: &str) -> Result<Family, E> {
        by_id(id).ok_or_else(|| {
            let known = ids().collect::<Vec<_>>().join(", ");
            E::custom(format!("unknown family \"{id}\" (known: {known})"))
        })
    }
}

impl<'de> serde::de::Visitor<'de> for FamilyVisitor {
    type Value = Family;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a family id such as llama")
    }

    fn visit_str<E: serde::de::Error>(self, id: &str) -> Result<Family, E> {
        Self::find(id)
    }

    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<Family, A::Error> {
        use serde::de::VariantAccess;
        let (id, variant): (Id, _) = data.variant()?;
        variant.unit_variant()?;
        Self::find(&id.0)
    }
}

/// A variant name, read as an identifier (RON writes it bare).
struct Id(String);

impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a family id")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id(v.to_owned()))
            }
        }
        d.deserialize_identifier(V)
    }
}

// ---- the walk's entry points: litgpt's code where it runs, else the family's ---------------

// ---- convolutional backbones: a spec read from the config, ops built per image ---------------

/// The `model_type`s read as a convolutional backbone ([`crate::model::net::NetSpec`]).
pub fn is_net_type(model_type: &str) -> bool {
    matches!(model_type, "resnet" | "convnext" | "swin")
}

/// Reads a convolutional backbone's `config.json` (its `model_type` is [`is_net_type`]).
pub fn read_net(r: &crate::model::config::Reader<'_>) -> Result<crate::model::net::NetSpec, ConfigError> {
    match r.model_type.as_str() {
        "convnext" => convnext::read(r),
        "swin" => swin::read(r),
        _ => resnet::read(r),
    }
}

/// A convolutional backbone's ops for one batch and image.
pub fn build_net(
    s: &crate::model::net::NetSpec,
    ctx: crate::engine::ops::net::NetCtx,
    image: crate::model::pixels::ImageSize,
) -> crate::engine::ops::net::Net {
    match s.kind {
        crate::model::net::NetKind::Resnet { .. } => resnet::build(s, ctx, image),
        crate::model::net::NetKind::Convnext { .. } => convnext::build(s, ctx, image),
        crate::model::net::NetKind::Swin(_) => swin::build(s, ctx, image),
    }
}

/// Reads a `config.json` as `family` does.
pub fn read_config(family: Family, c: &ConfigSource<'_>) -> Result<TransformerSpec, ConfigError> {
    let d = def(family);
    d.read_own_config(c).unwrap_or_else(|| config::decoder(d, c))
}

/// The config-class defaults (JSON) of a `model_type` some family reads.
pub fn class_defaults(model_type: &str) -> Option<&'static str> {
    REGISTRY.iter().find_map(|d| d.class_defaults(model_type))
}

/// Walks one block of the model on `g`.
pub(crate) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    let d = def(m.family);
    match d.litgpt() {
        Some(shape) if litgpt::runs(g.ctx, Some(shape)) => litgpt::block(g, m, flags, x, shape),
        _ => d.block(g, m, flags, x),
    }
}

/// Walks the embedding part; returns block 0's input.
pub(crate) fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    def(m.family).embed(g, m)
}

/// Walks the final norm, head and loss; returns the bytes they keep.
pub(crate) fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
    def(m.family).head(g, m, x)
}

/// Is the model's first block built unlike the others ([`FamilyDef::first_block_differs`])?
pub(crate) fn first_block_differs(m: &TransformerSpec) -> bool {
    def(m.family).first_block_differs(m)
}

// ---- facts of a model --------------------------------------------------------------------------

/// The op kinds of a model's family.
pub fn ops(m: &TransformerSpec) -> OpKinds {
    def(m.family).ops(m)
}

/// Whether the family's activation rules have been checked against measured PyTorch runs.
pub fn validated(f: Family) -> bool {
    def(f).validated()
}

/// Whether the family's inference working set has been checked against measured runs.
pub fn inference_validated(f: Family) -> bool {
    def(f).inference_validated()
}

/// HF decoder-layer class name (FSDP auto-wrap policies), by family and model name.
pub fn block_class(m: &TransformerSpec, name: &str) -> &'static str {
    // the config's own model_type when known, else the display name
    let n = m.hf_model_type.clone().unwrap_or_else(|| name.to_ascii_lowercase());
    def(m.family).block_class(m, &n)
}

/// Flags of every layer when the spec lists none.
pub fn default_flags(m: &TransformerSpec) -> u8 {
    if m.sliding_window.is_some() { layer::SLIDING } else { 0 }
}

/// Does layer `flags` attend within a window shorter than the sequence?
pub(crate) fn windowed(ctx: &Ctx, m: &TransformerSpec, flags: u8) -> bool {
    flags & layer::SLIDING != 0 && m.sliding_window.is_some_and(|w| ctx.seq > w)
}

/// Does litgpt's model code run this model (`--model-code litgpt`)?
pub(crate) fn litgpt_runs(ctx: &Ctx, m: &TransformerSpec) -> bool {
    litgpt::runs(ctx, def(m.family).litgpt())
}

/// Is `family` one that litgpt's own model code is walked for?
pub fn litgpt_walks(family: Family) -> bool {
    def(family).litgpt().is_some()
}

/// Rotary dimensions per head.
pub fn rope_dim(m: &TransformerSpec) -> u64 {
    match m.mla {
        Some(mla) => mla.qk_rope_head_dim,
        None if m.rope_dim > 0 => m.rope_dim.min(m.head_dim),
        None => m.head_dim,
    }
}

/// Columns of the rotary cos/sin tables (gpt-oss rotates two halves with `d/2`-wide tables).
pub fn rope_table_dim(m: &TransformerSpec) -> u64 {
    rope_cols(&ops(m), m)
}

/// [`rope_table_dim`] for a model whose op kinds are known.
pub(crate) fn rope_cols(k: &OpKinds, m: &TransformerSpec) -> u64 {
    if matches!(k.rope, Rope::Halves | Rope::Complex) { rope_dim(m) / 2 } else { rope_dim(m) }
}

/// Does the family use rotary embeddings at all?
pub fn has_rope(m: &TransformerSpec) -> bool {
    ops(m).rope != Rope::None
}

/// Width of the widest MLP tensor per token (routed experts × top-k for MoE).
pub fn mlp_width(m: &TransformerSpec) -> u64 {
    match m.moe {
        Some(x) => (x.top_k * m.intermediate_size).max(m.dense_intermediate_size),
        None => m.intermediate_size,
    }
}

/// MLP width of the dense layers (an MoE model's `dense_intermediate_size` when it has one).
pub fn dense_width(m: &TransformerSpec) -> u64 {
    if m.moe.is_some() && m.dense_intermediate_size > 0 {
        m.dense_intermediate_size
    } else {
        m.intermediate_size
    }
}

/// Gated MLP?
pub fn gated(m: &TransformerSpec) -> bool {
    ops(m).gated
}

/// Does the model keep a KV cache when it generates (decoders do, encoders do not)?
pub fn has_kv_cache(m: &TransformerSpec) -> bool {
    ops(m).kv != KvLayout::None
}

/// Logit columns of the head (0 for a bare model).
pub fn classes(m: &TransformerSpec) -> u64 {
    match m.head {
        Head::CausalLm | Head::MaskedLm => m.vocab_size,
        Head::SequenceClassification { num_labels } => num_labels,
        Head::Base => 0,
    }
}

/// The attention kernel of a full-attention layer of this model.
pub(crate) fn kernel_of(ctx: &Ctx, m: &TransformerSpec) -> Kernel {
    crate::engine::ops::kernel(ctx, attn_of(ctx, m, default_flags(m) & !layer::SLIDING))
}

/// The attention call of a layer.
pub(crate) fn attn_of(ctx: &Ctx, m: &TransformerSpec, flags: u8) -> Attn {
    attn_with(&ops(m), ctx, m, flags)
}

/// [`attn_of`] for a model whose op kinds are known.
pub(crate) fn attn_with(k: &OpKinds, ctx: &Ctx, m: &TransformerSpec, flags: u8) -> Attn {
    let (qk_dim, v_dim) = match m.mla {
        Some(x) => (x.qk_head_dim(), x.v_head_dim),
        None => (m.head_dim, m.head_dim),
    };
    Attn {
        heads: m.num_heads,
        kv_heads: if m.mla.is_some() { m.num_heads } else { m.num_kv_heads },
        qk_dim,
        v_dim,
        masked: windowed(ctx, m, flags) || k.always_masked || (k.images_masked && ctx.image_mask),
        q_head_major: k.rope != Rope::None
            && (rope_dim(m) < m.head_dim || matches!(k.rope, Rope::Halves | Rope::Cat)),
        gqa_native: k.always_masked,
        softcap: m.attn_softcap.is_some(),
        sinks: k.sinks,
        dropout: m.attention_dropout,
        softmax: k.softmax,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_names_each_family_once_and_llama_first() {
        let ids: Vec<_> = ids().collect();
        assert_eq!(ids[0], "llama", "Family::default() is the first entry");
        for (i, id) in ids.iter().enumerate() {
            assert!(!ids[..i].contains(id), "{id} registered twice");
            assert_eq!(by_id(id).map(|f| f.id()), Some(*id));
        }
        for (i, d) in REGISTRY.iter().enumerate() {
            for t in d.model_types() {
                let other = REGISTRY[..i].iter().find(|e| e.model_types().contains(t));
                assert!(
                    other.is_none(),
                    "model_type {t} read by {} and {}",
                    d.id(),
                    other.map_or("", |e| e.id())
                );
            }
        }
    }

    #[test]
    fn a_family_round_trips_through_its_id() {
        let f = by_id("gpt_oss").unwrap_or_else(|| panic!("gpt_oss registered"));
        let json = serde_json::to_string(&f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json, "\"gpt_oss\"");
        let back: Family = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, f);
        let err = serde_json::from_str::<Family>("\"gpt5\"").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown family \"gpt5\"") && err.contains("llama"), "{err}");
        // RON writes it as the unit variant it was
        let ron = ron::to_string(&f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ron, "gpt_oss");
        assert_eq!(ron::from_str::<Family>(&ron).unwrap_or_else(|e| panic!("{e}")), f);
        let err = ron::from_str::<Family>("gpt5").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown family \"gpt5\"") && err.contains("llama"), "{err}");
    }
}
