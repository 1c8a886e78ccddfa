//! Convolutional backbones as their HF configs describe them (ResNet, ConvNeXt): the stages'
//! widths and depths, the stem and the head. The ops they run are built from this by their
//! family files (`families::resnet`, `families::convnext`) for a given image and batch.

use super::pixels::ImageSize;
use serde::{Deserialize, Serialize};

/// A convolutional image classifier read from a `config.json`.
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
        }
    }

    /// How much the network shrinks an image side by its last stage (32 for both layouts).
    pub fn total_stride(&self) -> u64 {
        let stages = self.hidden_sizes.len().max(1) as u64;
        match self.kind {
            NetKind::Resnet { downsample_first_stage, .. } => {
                // stem 2, max-pool 2, each later stage 2 (the first only when it downsamples)
                4 << (stages - 1 + u64::from(downsample_first_stage))
            }
            NetKind::Convnext { patch, .. } => patch << (stages - 1),
        }
    }

    /// The smallest image side the network takes: every stride leaves at least one pixel.
    pub fn min_side(&self) -> u64 {
        match self.kind {
            NetKind::Resnet { .. } => 1,
            // the stem's patch, then a 2×2 stride-2 convolution per later stage
            NetKind::Convnext { patch, .. } => self.total_stride().max(patch),
        }
    }
}
