//! The vision tower of a multimodal checkpoint: which encoder, its size, its projector, and how
//! its processor turns an image into the language model's tokens.

use serde::{Deserialize, Serialize};

/// Which vision encoder a multimodal checkpoint carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VisionKind {
    /// SigLIP (Gemma 3): learned positions, LayerNorm, biased projections, GELU MLP, post norm.
    Siglip,
    /// Pixtral (Mistral 3): RMSNorm, gated SiLU MLP, no biases, 2-D rotary.
    Pixtral,
    /// Llama 4's encoder: an unfolded patch Linear, a class token and learned positions,
    /// LayerNorms, biased projections, a GELU MLP; a pixel-shuffle MLP adapter.
    Llama4,
    /// Qwen2.5-VL's encoder: a Conv3d over `temporal × patch × patch`, RMSNorms, a fused
    /// biased qkv, a gated SiLU MLP with biases, window attention but in a few layers; the
    /// patch merger (RMSNorm, two Linears over `merge²` patches) into the text width.
    Qwen25Vl,
    /// Qwen3-VL's encoder: a biased Conv3d, learned positions (interpolated) beside 2-D
    /// rotary, LayerNorms, biased qkv and GELU MLP; the merger and the deepstack mergers
    /// (their features added to the first decoder layers' image tokens).
    Qwen3Vl,
    /// CLIP's vision model (LLaVA): class token, learned positions, pre- and post-LayerNorm,
    /// biased projections, a quick-GELU MLP; a two-Linear GELU projector.
    Clip,
}

/// A vision tower and its projector into the language model (parameters only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisionTower {
    /// Encoder kind.
    pub kind: VisionKind,
    /// Encoder width.
    pub hidden_size: u64,
    /// Encoder MLP width.
    pub intermediate_size: u64,
    /// Encoder blocks.
    pub num_layers: u64,
    /// Patch size in pixels.
    pub patch_size: u64,
    /// Image side in pixels.
    pub image_size: u64,
    /// Input channels.
    pub num_channels: u64,
    /// Projector parameters (the language-model side), counted as given.
    pub projector_params: u64,
    /// Frames per patch (Qwen-VL's Conv3d: an image is repeated to fill them); 1 elsewhere.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub temporal_patch: u64,
    /// How the processor turns one image into tokens of the decoder's sequence; `None`: not
    /// modelled for this encoder (images are refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tokens: Option<super::image_tokens::ImageTokens>,
}

const fn one() -> u64 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
const fn is_one(n: &u64) -> bool {
    *n == 1
}

impl VisionTower {
    /// The language model's rotary follows the images (Qwen-VL's multimodal rotary): position
    /// ids are one row a sequence, `(3, b, s)`, even in a text-only batch.
    pub const fn per_sequence_rope(&self) -> bool {
        matches!(self.kind, VisionKind::Qwen25Vl | VisionKind::Qwen3Vl)
    }
}
