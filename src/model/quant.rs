//! Weight formats of quantized checkpoints (`quantization_config` in `config.json`): the bytes a
//! quantized Linear weight occupies, scales and zero points included.

use serde::{Deserialize, Serialize};

/// A checkpoint's weight format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightFormat {
    /// bitsandbytes 4-bit (NF4 or FP4): 4-bit codes, one absmax per 64 weights — 8-bit with a
    /// second-level fp32 scale per 256 blocks when double-quantized, else fp32.
    Bnb4 {
        /// `bnb_4bit_use_double_quant`.
        double_quant: bool,
    },
    /// bitsandbytes LLM.int8(): int8 weights and one fp32 scale per output row.
    Bnb8,
    /// GPTQ: `bits`-bit packed weights (int32 `qweight`), per group of `group_size` input
    /// features an fp16 scale and a packed zero point (`qzeros`), plus `g_idx` (int32 per input
    /// feature).
    Gptq {
        /// Bits per weight.
        bits: u64,
        /// Input features per group (`-1` in the config: the whole row).
        group_size: u64,
    },
    /// AWQ (GEMM packing): packed `bits`-bit weights, fp16 scales and packed zeros per group.
    Awq {
        /// Bits per weight.
        bits: u64,
        /// Input features per group.
        group_size: u64,
    },
    /// FP8 (e4m3) weights with fp32 scales: one per `block × block` tile, or one per tensor
    /// when `block` is 0.
    Fp8 {
        /// Tile side of the block-wise scales (DeepSeek: 128).
        block: u64,
    },
    /// MXFP4 (gpt-oss): 4-bit e2m1 codes with one 8-bit shared exponent per 32 weights; applies
    /// to the MoE experts only.
    Mxfp4,
}

impl WeightFormat {
    /// Bytes of one `out_f × in_f` weight in this format.
    pub fn weight_bytes(&self, out_f: u64, in_f: u64) -> u64 {
        let n = out_f * in_f;
        match *self {
            Self::Bnb4 { double_quant: true } => n.div_ceil(2) + n.div_ceil(64) + 4 * n.div_ceil(64 * 256),
            Self::Bnb4 { double_quant: false } => n.div_ceil(2) + 4 * n.div_ceil(64),
            Self::Bnb8 => n + 4 * out_f,
            Self::Gptq { bits, group_size } => {
                let groups = in_f.div_ceil(group_size.max(1));
                // qweight: in_f·bits/32 int32 rows × out_f; qzeros: groups × out_f·bits/32 int32;
                // scales: groups × out_f fp16; g_idx: in_f int32
                (in_f * bits).div_ceil(32) * out_f * 4
                    + groups * (out_f * bits).div_ceil(32) * 4
                    + groups * out_f * 2
                    + in_f * 4
            }
            Self::Awq { bits, group_size } => {
                let groups = in_f.div_ceil(group_size.max(1));
                // qweight: in_f × out_f·bits/32 int32; qzeros: groups × out_f·bits/32; scales fp16
                in_f * (out_f * bits).div_ceil(32) * 4
                    + groups * (out_f * bits).div_ceil(32) * 4
                    + groups * out_f * 2
            }
            Self::Fp8 { block } if block > 0 => n + 4 * out_f.div_ceil(block) * in_f.div_ceil(block),
            Self::Fp8 { .. } => n + 4,
            Self::Mxfp4 => n.div_ceil(2) + n.div_ceil(32),
        }
    }

    /// Does the format quantize the dense projections (all but MXFP4, which covers experts only)?
    pub fn covers_dense(&self) -> bool {
        !matches!(self, Self::Mxfp4)
    }

    /// Short name for display.
    pub fn label(&self) -> String {
        match *self {
            Self::Bnb4 { double_quant } => {
                format!("bitsandbytes 4-bit{}", if double_quant { " (double quant)" } else { "" })
            }
            Self::Bnb8 => "bitsandbytes int8".into(),
            Self::Gptq { bits, group_size } => format!("GPTQ {bits}-bit, {}", group(group_size)),
            Self::Awq { bits, group_size } => format!("AWQ {bits}-bit, {}", group(group_size)),
            Self::Fp8 { block } if block > 0 => format!("FP8 e4m3, {block}×{block} block scales"),
            Self::Fp8 { .. } => "FP8 e4m3, per-tensor scale".into(),
            Self::Mxfp4 => "MXFP4 (experts)".into(),
        }
    }
}

/// "group 128", or "per channel" for a whole-row group (`group_size: -1`).
fn group(g: u64) -> String {
    if g >= 1 << 31 { "per channel".into() } else { format!("group {g}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gptq_4bit_llama_projection_bytes() {
        // a 4096 × 4096 projection, group 128: qweight 512 × 4096 int32, qzeros 32 × 512 int32,
        // scales 32 × 4096 fp16, g_idx 4096 int32
        let f = WeightFormat::Gptq { bits: 4, group_size: 128 };
        assert_eq!(f.weight_bytes(4096, 4096), 512 * 4096 * 4 + 32 * 512 * 4 + 32 * 4096 * 2 + 4096 * 4);
        // about a quarter of bf16 plus scales
        let bf16 = 2 * 4096 * 4096;
        let r = f.weight_bytes(4096, 4096) as f64 / bf16 as f64;
        assert!((0.26..0.27).contains(&r), "{r}");
    }

    #[test]
    fn fp8_block_scales_and_mxfp4() {
        assert_eq!(WeightFormat::Fp8 { block: 128 }.weight_bytes(256, 384), 256 * 384 + 4 * 2 * 3);
        assert_eq!(WeightFormat::Mxfp4.weight_bytes(64, 32), 64 * 16 + 64);
    }
}
