//! The serving changes the advice tries, as a catalogue: when each can be done, its kind,
//! effort and trade-off, whether it applies to a server, what it changes and its title.

use super::Setup;
use crate::i18n::Lang;
use crate::options::{generation, product_line, product_line_in};
use crate::roadmap::{Horizon, StepKind};
use crate::serve::{CheckpointFormat, KvDtype, Quantization, Serve};

/// A change of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Change {
    Utilisation,
    FewerSeqs,
    Eager,
    KvFp8,
    WeightsFp8,
    Checkpoint4Bit,
    Tp(u64),
    Card,
}

impl Change {
    pub(super) fn horizon(self) -> Horizon {
        match self {
            Self::Utilisation | Self::FewerSeqs | Self::Eager => Horizon::Short,
            Self::KvFp8 | Self::WeightsFp8 | Self::Checkpoint4Bit | Self::Tp(_) => Horizon::Mid,
            Self::Card => Horizon::Long,
        }
    }

    pub(super) fn kind(self) -> StepKind {
        match self {
            Self::Tp(_) | Self::Card => StepKind::Hardware,
            _ => StepKind::Setting,
        }
    }

    pub(super) fn effort(self) -> &'static str {
        match self {
            Self::Utilisation | Self::FewerSeqs | Self::Eager | Self::KvFp8 => "low",
            Self::WeightsFp8 | Self::Checkpoint4Bit | Self::Tp(_) => "medium",
            Self::Card => "high",
        }
    }

    pub(super) fn trade_off(self, lang: Lang) -> &'static str {
        match self {
            Self::Utilisation => lang.pick(
                "nothing else may use the card (another process, a second server)",
                "这张卡不能再给别的程序用（其他进程、第二个服务器）",
            ),
            Self::FewerSeqs => lang.pick(
                "fewer sequences decode per step: lower throughput under heavy load",
                "每步解码的序列更少：高负载下吞吐量降低",
            ),
            Self::Eager => lang.pick(
                "no CUDA graphs: slower decoding, most at small batches",
                "不用 CUDA graph：解码变慢，小批次时最明显",
            ),
            Self::KvFp8 => lang.pick(
                "fp8 keys and values: check the model's quality on your prompts",
                "键和值以 fp8 存储：请用自己的 prompt 检查模型质量",
            ),
            Self::WeightsFp8 => lang.pick(
                "fp8 weights (W8A8 on Ada / Hopper and newer, weight-only on Ampere): check quality",
                "fp8 权重（Ada / Hopper 及更新的卡上为 W8A8，Ampere 上仅量化权重）：需检查质量",
            ),
            Self::Checkpoint4Bit => lang.pick(
                "4-bit weights: a larger quality loss than fp8; needs the exported checkpoint",
                "4 位权重：质量损失比 fp8 大；需要导出好的检查点",
            ),
            Self::Tp(_) => lang.pick(
                "more GPUs, and an all-reduce per layer over their link",
                "需要更多 GPU，且每层都要在 GPU 间互联上做一次 all-reduce",
            ),
            Self::Card => lang.pick("another card to rent or buy", "需要租用或购买另一张卡"),
        }
    }
}

/// Whether `c` applies to `s` (running as `now`): the card's and the model's facts a change needs.
pub(super) fn applicable(c: Change, s: &Setup, now: &Serve) -> bool {
    let g = generation(&s.gpu).map_or(0, |(n, _)| n);
    let quantized = s.model.transformer().is_some_and(|t| t.quant.is_some());
    let cfg = &s.cfg;
    match c {
        Change::Utilisation => cfg.gpu_memory_utilization < 0.95,
        Change::FewerSeqs => now.settings.max_num_seqs > 256,
        Change::Eager => !cfg.enforce_eager && now.bytes.cudagraph > 0,
        Change::KvFp8 => cfg.kv_dtype == KvDtype::Auto && g >= 2,
        Change::WeightsFp8 => {
            cfg.quantization == Quantization::Auto && cfg.checkpoint_format.is_none() && !quantized && g >= 2
        }
        Change::Checkpoint4Bit => cfg.checkpoint_format.is_none() && !quantized,
        Change::Tp(n) => n > cfg.tp,
        Change::Card => true,
    }
}

/// `s` with the change applied (for `Tp` and `Card` the value is chosen by the caller).
pub(super) fn apply(c: Change, s: &Setup, now: &Serve) -> Setup {
    let mut n = s.clone();
    match c {
        Change::Utilisation => n.cfg.gpu_memory_utilization = 0.95,
        Change::FewerSeqs => n.cfg.max_num_seqs = Some(256),
        Change::Eager => n.cfg.enforce_eager = true,
        Change::KvFp8 => n.cfg.kv_dtype = KvDtype::Fp8,
        Change::WeightsFp8 => n.cfg.quantization = Quantization::Fp8,
        Change::Checkpoint4Bit => {
            n.cfg.quantization = Quantization::Auto;
            n.cfg.checkpoint_format = Some(CheckpointFormat::AwqInt4);
        }
        Change::Tp(t) => n.cfg.tp = t,
        Change::Card => {}
    }
    // the batching the server used stays (a card's defaults would change it silently)
    n.cfg.max_num_batched_tokens = Some(now.settings.max_num_batched_tokens);
    if c != Change::FewerSeqs {
        n.cfg.max_num_seqs = Some(now.settings.max_num_seqs);
    }
    n.cfg.max_model_len = Some(now.settings.max_model_len);
    n
}

/// What to do, in `lang`: `c` as applied in `s`, on the server `before`.
pub(super) fn title(c: Change, s: &Setup, before: &Setup, lang: Lang) -> String {
    match c {
        Change::Utilisation => lang
            .pick("--gpu-memory-utilization 0.95", "--gpu-memory-utilization 0.95（提高显存利用率）")
            .into(),
        Change::FewerSeqs => lang
            .pick(
                "--max-num-seqs 256 (a smaller profiling sampler)",
                "--max-num-seqs 256（更小的剖析采样器）",
            )
            .into(),
        Change::Eager => lang
            .pick("--enforce-eager (no CUDA-graph memory)", "--enforce-eager（不占用 CUDA graph 显存）")
            .into(),
        Change::KvFp8 => lang
            .pick(
                "--kv-cache-dtype fp8 (half the bytes per token)",
                "--kv-cache-dtype fp8（每个 token 的字节数减半）",
            )
            .into(),
        Change::WeightsFp8 => {
            lang.pick("--quantization fp8 (online fp8 weights)", "--quantization fp8（在线 fp8 权重）").into()
        }
        Change::Checkpoint4Bit => {
            if before.cfg.quantization == Quantization::Fp8 {
                lang.pick(
                    "a 4-bit AWQ checkpoint of the model instead of fp8 weights",
                    "改用该模型的 4 位 AWQ 权重文件，代替 fp8 权重",
                )
                .into()
            } else {
                lang.pick("a 4-bit AWQ checkpoint of the model", "改用该模型的 4 位 AWQ 权重文件").into()
            }
        }
        Change::Tp(t) => crate::text!(
            lang,
            "{t} GPUs with tensor parallelism (--tensor-parallel-size {t})",
            "{t} 张 GPU 做张量并行（--tensor-parallel-size {t}）"
        ),
        Change::Card => {
            let line = if product_line(&s.gpu) == product_line(&before.gpu) {
                String::new()
            } else {
                let l = product_line_in(&s.gpu, lang);
                crate::text!(lang, ", {l}", "，{l}")
            };
            let name = &s.gpu.name;
            crate::text!(lang, "a card with more memory: {name}{line}", "换显存更大的卡：{name}{line}")
        }
    }
}
