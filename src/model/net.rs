//! Vision backbones whose stages differ in width and size, as their HF configs describe them
//! (ResNet, ConvNeXt, Swin): the stages' widths and depths, the stem and the head. The ops they
//! run are built from this by their family files (`families::resnet`, `families::convnext`,
//! `families::swin`) for a given image and batch.

use super::pixels::ImageSize;
use serde::{Deserialize, Serialize};

/// A vision backbone (convolutional, or Swin's windowed attention) read from a `config.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetSpec {
    /// The network's layout.
    pub kind: NetKind,
    /// Width of each stage (`hidden_sizes`).
    pub hidden_sizes: Vec<u64>,
    /// Blocks of each stage (`depths`).
    pub depths: Vec<u64>,
    /// Input channels (`num_channels`).
    pub channels: u64,
    /// Classifier outputs (`num_labels`; 0: the bare backbone, no classifier and no loss).
    pub num_labels: u64,
    /// The image a run feeds it unless told otherwise (`image_size`, else 224).
    pub image: ImageSize,
    /// The block's activation (`hidden_act`).
    pub act: NetAct,
    /// `model_type` as written.
    pub hf_model_type: String,
}

/// The layouts vramscope builds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetKind {
    /// transformers' `ResNetForImageClassification`.
    Resnet {
        /// Stem width (`embedding_size`).
        embedding_size: u64,
        /// Bottleneck blocks (1×1, 3×3, 1×1) rather than basic ones (3×3, 3×3).
        bottleneck: bool,
        /// The first stage's first block downsamples (`downsample_in_first_stage`).
        downsample_first_stage: bool,
        /// A bottleneck's stride sits in its first 1×1 (`downsample_in_bottleneck`, v1) rather
        /// than its 3×3 (v1.5).
        downsample_in_bottleneck: bool,
    },
    /// transformers' `ConvNextForImageClassification` (v1).
    Convnext {
        /// The stem's patch (`patch_size`, a stride-`patch` convolution).
        patch: u64,
        /// `layer_scale_init_value > 0`: a trained per-channel scale after each block's MLP.
        layer_scale: bool,
        /// `drop_path_rate > 0`: stochastic depth in training.
        drop_path: bool,
    },
    /// transformers' `SwinForImageClassification` (v1): windowed attention, patch merging.
    Swin(Box<SwinLayout>),
}

/// Swin's layout beyond the stages' widths (`embed_dim · 2^i`) and depths.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwinLayout {
    /// The stem's patch (`patch_size`).
    pub patch: u64,
    /// The attention window's side in patches (`window_size`).
    pub window: u64,
    /// Heads of each stage (`num_heads`).
    pub heads: Vec<u64>,
    /// The MLP's width over the stage's (`mlp_ratio`).
    pub mlp_ratio: f64,
    /// Bias vectors on q, k and v (`qkv_bias`).
    pub qkv_bias: bool,
    /// Absolute position embeddings added to the patch grid (`use_absolute_embeddings`).
    pub abs_pos: bool,
    /// `drop_path_rate`: stochastic depth on the attention branch of every block but the first
    /// (its rate grows linearly from 0).
    pub drop_path: f64,
}

/// The activations these configs name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetAct {
    /// `relu`: keeps its output.
    Relu,
    /// `gelu`: keeps its input.
    Gelu,
}

impl NetSpec {
    /// The family's name, for the report ("resnet", "convnext").
    pub fn family_id(&self) -> &'static str {
        match self.kind {
            NetKind::Resnet { .. } => "resnet",
            NetKind::Convnext { .. } => "convnext",
            NetKind::Swin(_) => "swin",
        }
    }

    /// How much the network shrinks an image side by its last stage (32 for the published ones).
    pub fn total_stride(&self) -> u64 {
        let stages = self.hidden_sizes.len().max(1) as u64;
        match self.kind {
            NetKind::Resnet { downsample_first_stage, .. } => {
                // stem 2, max-pool 2, each later stage 2 (the first only when it downsamples)
                4 << (stages - 1 + u64::from(downsample_first_stage))
            }
            NetKind::Convnext { patch, .. } => patch << (stages - 1),
            NetKind::Swin(ref l) => l.patch << (stages - 1),
        }
    }

    /// The smallest image side the network takes: every stride leaves at least one pixel.
    pub fn min_side(&self) -> u64 {
        match self.kind {
            NetKind::Resnet { .. } => 1,
            // the stem's patch, then a 2×2 stride-2 convolution per later stage
            NetKind::Convnext { patch, .. } => self.total_stride().max(patch),
            // the last stage's grid, `ceil(side / stride)`, at least the window
            NetKind::Swin(ref l) => (l.window.max(1) - 1) * self.total_stride() + 1,
        }
    }
}
