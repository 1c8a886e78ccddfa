//! Bytes autograd saves for backward, broken down by what they are.
//!
//! [`Saved`] is a fixed-size vector of byte counts indexed by [`Cat`], so a whole per-layer or
//! top-level tally costs no allocation; the estimator adds these up several hundred thousand times
//! a second while a slider moves.

use serde::Serialize;

/// Category of a saved tensor (one colour in the GUI, one row in the CLI table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cat {
    /// Attention scores / probabilities (`b·a·s²` terms: softmax output, its casts, dropout output).
    AttentionScores,
    /// Inputs and outputs of the attention kernel (q, k, v copies, output, logsumexp).
    AttentionIo,
    /// MLP intermediates (`b·s·I` terms), expert routing buffers for MoE.
    Mlp,
    /// Norm outputs and statistics (LayerNorm mean/rstd, RMSNorm fp32 upcasts).
    Norms,
    /// Residual-stream tensors saved by the following norm (layer inputs and mid-layer sums).
    Residual,
    /// One-byte dropout masks.
    DropoutMasks,
    /// Autocast copies of layer inputs cast to half precision before each matmul.
    InputCasts,
    /// Autocast half-precision copies of the weights, saved by each matmul for backward.
    WeightCasts,
    /// Token ids, position ids, rotary tables, embedding outputs.
    Embeddings,
    /// Logits upcast, log-softmax output, labels and the loss.
    HeadLoss,
    /// Inputs of checkpointed blocks (everything else inside them is recomputed).
    CheckpointInputs,
    /// LoRA adapter intermediates (A outputs, adapter dropout).
    Adapters,
    /// A convolutional network's feature maps: the images, convolution and BatchNorm inputs,
    /// ReLU outputs, max-pool indices.
    FeatureMaps,
}

impl Cat {
    /// Number of categories.
    pub const COUNT: usize = 13;

    /// All categories in display order.
    pub const ALL: [Self; Self::COUNT] = [
        Self::AttentionScores,
        Self::AttentionIo,
        Self::Mlp,
        Self::Norms,
        Self::Residual,
        Self::DropoutMasks,
        Self::InputCasts,
        Self::WeightCasts,
        Self::Embeddings,
        Self::HeadLoss,
        Self::CheckpointInputs,
        Self::Adapters,
        Self::FeatureMaps,
    ];

    /// Human-readable label.
    pub const fn label(self) -> &'static str {
        match self {
            Self::AttentionScores => "attention scores",
            Self::AttentionIo => "attention q/k/v/out",
            Self::Mlp => "MLP intermediates",
            Self::Norms => "norm outputs and stats",
            Self::Residual => "residual stream",
            Self::DropoutMasks => "dropout masks",
            Self::InputCasts => "autocast input copies",
            Self::WeightCasts => "autocast weight copies",
            Self::Embeddings => "embeddings and ids",
            Self::HeadLoss => "LM head and loss",
            Self::CheckpointInputs => "checkpoint inputs",
            Self::Adapters => "LoRA adapters",
            Self::FeatureMaps => "feature maps",
        }
    }

    /// [`Self::label`] in `lang`.
    pub const fn label_in(self, lang: crate::i18n::Lang) -> &'static str {
        match lang {
            crate::i18n::Lang::En => self.label(),
            crate::i18n::Lang::ZhCn => match self {
                Self::AttentionScores => "注意力分数",
                Self::AttentionIo => "注意力 q/k/v/输出",
                Self::Mlp => "MLP 中间结果",
                Self::Norms => "归一化输出与统计量",
                Self::Residual => "残差流",
                Self::DropoutMasks => "dropout 掩码",
                Self::InputCasts => "autocast 输入副本",
                Self::WeightCasts => "autocast 权重副本",
                Self::Embeddings => "嵌入与 id",
                Self::HeadLoss => "LM head 与损失",
                Self::CheckpointInputs => "检查点输入",
                Self::Adapters => "LoRA 适配器",
                Self::FeatureMaps => "特征图",
            },
        }
    }

    /// Snake-case key used in JSON.
    pub const fn key(self) -> &'static str {
        match self {
            Self::AttentionScores => "attention_scores",
            Self::AttentionIo => "attention_io",
            Self::Mlp => "mlp",
            Self::Norms => "norms",
            Self::Residual => "residual",
            Self::DropoutMasks => "dropout_masks",
            Self::InputCasts => "input_casts",
            Self::WeightCasts => "weight_casts",
            Self::Embeddings => "embeddings",
            Self::HeadLoss => "head_loss",
            Self::CheckpointInputs => "checkpoint_inputs",
            Self::Adapters => "adapters",
            Self::FeatureMaps => "feature_maps",
        }
    }
}

/// Byte counts per [`Cat`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Saved(pub [u64; Cat::COUNT]);

impl Saved {
    /// Adds `bytes` to `cat`.
    #[inline]
    pub fn add(&mut self, cat: Cat, bytes: u64) {
        self.0[cat as usize] += bytes;
    }

    /// Bytes in one category.
    #[inline]
    pub fn get(&self, cat: Cat) -> u64 {
        self.0[cat as usize]
    }

    /// Sum over all categories.
    #[inline]
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `self * n`, category by category.
    #[inline]
    pub fn times(&self, n: u64) -> Self {
        let mut out = *self;
        for v in &mut out.0 {
            *v *= n;
        }
        out
    }

    /// Adds another tally into this one.
    #[inline]
    pub fn add_all(&mut self, other: &Self) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += *b;
        }
    }

    /// Non-zero categories with their bytes, in display order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Cat, u64)> + '_ {
        Cat::ALL.into_iter().map(|c| (c, self.get(c))).filter(|(_, b)| *b > 0)
    }
}

impl Serialize for Saved {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = ser.serialize_map(None)?;
        for (cat, bytes) in self.nonzero() {
            map.serialize_entry(cat.key(), &bytes)?;
        }
        map.end()
    }
}
