//! "Why this much?": each component of an estimate with its formula and the current numbers
//! substituted, for the GUI's hover texts, the "Why" panel and reports. `components` writes
//! each component's explanation (one function each); this module holds the components, the
//! order they are explained in and the activation categories' one-line help.

mod components;
mod traced;
pub(crate) use components::count_in;
#[cfg(test)]
mod tests;

use crate::estimate::{Cat, Estimate, Mode, Scenario};
use crate::i18n::Lang;
use crate::units::{GIB, MIB};
use components::Subject;

/// A component of the per-GPU memory, in the order the stacked bar draws them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// Model weights.
    Parameters,
    /// Gradients.
    Gradients,
    /// Optimizer states.
    OptimizerStates,
    /// Saved activations.
    Activations,
    /// KV cache.
    KvCache,
    /// Short-lived tensors at the peak.
    Temporaries,
    /// DeepSpeed ZeRO's gradient-reduction buckets.
    ZeroBuckets,
    /// CUDA context, workspaces, allocator reserve.
    Overhead,
}

impl Component {
    /// All components, bottom of the bar first.
    pub const ALL: [Self; 8] = [
        Self::Parameters,
        Self::Gradients,
        Self::OptimizerStates,
        Self::Activations,
        Self::KvCache,
        Self::Temporaries,
        Self::ZeroBuckets,
        Self::Overhead,
    ];

    /// Stable key.
    pub const fn key(self) -> &'static str {
        match self {
            Self::Parameters => "parameters",
            Self::Gradients => "gradients",
            Self::OptimizerStates => "optimizer_states",
            Self::Activations => "activations",
            Self::KvCache => "kv_cache",
            Self::Temporaries => "temporaries",
            Self::ZeroBuckets => "zero_buckets",
            Self::Overhead => "overhead",
        }
    }

    /// The component's name in `lang`, as the reports' tables write it.
    pub fn name_in(self, lang: Lang) -> &'static str {
        match self {
            Self::Parameters => lang.pick("parameters", "参数"),
            Self::Gradients => lang.pick("gradients", "梯度"),
            Self::OptimizerStates => lang.pick("optimizer states", "优化器状态"),
            Self::Activations => lang.pick("activations (saved)", "激活值（为反向保存）"),
            Self::KvCache => lang.pick("KV cache", "KV 缓存"),
            Self::Temporaries => lang.pick("temporaries at the peak", "峰值时的临时张量"),
            Self::ZeroBuckets => lang.pick("ZeRO buckets (DeepSpeed)", "ZeRO 通信桶（DeepSpeed）"),
            Self::Overhead => lang.pick("CUDA context + allocator", "CUDA 上下文 + 分配器"),
        }
    }

    /// Bytes of this component alive at the peak (what the stacked bar shows).
    pub fn at_peak(self, e: &Estimate) -> u64 {
        let a = &e.peak.alive;
        match self {
            Self::Parameters => a.parameters,
            Self::Gradients => a.gradients,
            Self::OptimizerStates => a.optimizer_states,
            Self::Activations => a.activations,
            Self::KvCache => a.kv_cache,
            Self::Temporaries => a.temporaries,
            Self::ZeroBuckets => a.zero_buckets,
            Self::Overhead => e.overhead,
        }
    }
}

/// One explained component.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// Which component.
    pub component: Component,
    /// The rule in symbols.
    pub formula: String,
    /// The rule with this scenario's numbers.
    pub substituted: String,
    /// Bytes at the peak.
    pub bytes: u64,
}

fn g(b: u64) -> String {
    if b as f64 >= GIB / 10.0 {
        format!("{:.2} GiB", b as f64 / GIB)
    } else {
        format!("{:.1} MiB", b as f64 / MIB)
    }
}

/// Explains every component of `e` (in English: [`explain_in`] with [`Lang::En`]).
pub fn explain(sc: &Scenario, e: &Estimate) -> Vec<Explanation> {
    explain_in(sc, e, Lang::En)
}

/// Explains every component of `e`, the formulas and their substitutions written in `lang`
/// (numbers, units, symbols, dtype, optimizer and code names as they are).
pub fn explain_in(sc: &Scenario, e: &Estimate, lang: Lang) -> Vec<Explanation> {
    let x = Subject { sc, e, lang };
    let mut out = Vec::with_capacity(8);
    out.push(x.parameters());
    if sc.mode == Mode::Train {
        out.push(x.gradients());
        out.push(x.optimizer_states());
        out.push(x.activations());
    }
    out.extend(x.kv_cache());
    out.push(x.temporaries());
    out.extend(x.zero_buckets());
    out.push(x.overhead());
    out
}

/// One-sentence description of an activation category, for hover texts (in English:
/// [`category_help_in`] with [`Lang::En`]).
pub fn category_help(c: Cat) -> &'static str {
    category_help_in(c, Lang::En)
}

/// One-sentence description of an activation category in `lang`.
pub fn category_help_in(c: Cat, lang: Lang) -> &'static str {
    match c {
        Cat::AttentionScores => lang.pick(
            "eager attention keeps b·a·s² scores: the softmax output (fp32 in Llama), its half cast, dropout",
            "eager 注意力保留 b·a·s² 的分数：softmax 输出（Llama 中为 fp32）、其半精度副本、dropout",
        ),
        Cat::AttentionIo => lang.pick(
            "q, k, v copies and the attention output the kernels keep for backward",
            "内核为反向保留的 q、k、v 副本和注意力输出",
        ),
        Cat::Mlp => lang.pick(
            "MLP intermediates b·s·I: activation inputs/outputs, gate × up products, MoE routing",
            "MLP 中间结果 b·s·I：激活函数的输入/输出、gate × up 乘积、MoE 路由",
        ),
        Cat::Norms => lang.pick(
            "norm outputs kept by the next Linear, mean/rstd, RMSNorm's fp32 upcast",
            "下一个 Linear 保留的归一化输出、mean/rstd、RMSNorm 的 fp32 上转换",
        ),
        Cat::Residual => {
            lang.pick("residual-stream sums kept by the following norm", "后续归一化层保留的残差流之和")
        }
        Cat::DropoutMasks => {
            lang.pick("one byte per element for every dropout", "每个 dropout 每个元素 1 字节")
        }
        Cat::InputCasts => lang.pick(
            "autocast: each matmul keeps its own half copy of its input",
            "autocast：每次矩阵乘法各自保留其输入的半精度副本",
        ),
        Cat::WeightCasts => lang.pick(
            "autocast: each matmul keeps a half copy of its weight",
            "autocast：每次矩阵乘法保留其权重的半精度副本",
        ),
        Cat::Embeddings => {
            lang.pick("token/position ids and rotary tables", "token/位置 id 与旋转位置编码（rotary）表")
        }
        Cat::HeadLoss => lang.pick(
            "LM-head input, log-softmax over the vocabulary (fp32), labels",
            "LM head 的输入、词表上的 log-softmax（fp32）、标签",
        ),
        Cat::CheckpointInputs => {
            lang.pick("checkpointed blocks keep only their input", "设了检查点的块只保留其输入")
        }
        Cat::Adapters => lang
            .pick("LoRA adapters' fp32 input copies and A outputs", "LoRA 适配器的 fp32 输入副本和 A 的输出"),
        Cat::FeatureMaps => lang.pick(
            "the images and the feature maps convolutions, BatchNorms and ReLUs keep; max-pool indices",
            "输入图像以及卷积、BatchNorm、ReLU 保留的特征图；最大池化的索引",
        ),
    }
}
