//! Data types, precision modes and byte arithmetic shared by the whole core.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Bytes in a GiB.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Bytes in a MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

/// The CUDA caching allocator hands out blocks in multiples of 512 bytes.
pub const ALLOC_GRANULE_BYTES: u64 = 512;

/// Rounds `bytes` up to the allocator granule.
#[inline]
pub fn round_alloc(bytes: u64) -> u64 {
    bytes.div_ceil(ALLOC_GRANULE_BYTES) * ALLOC_GRANULE_BYTES
}

/// Formats bytes as GiB with two decimals.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / GIB)
}

crate::tokens::token_enum! {
    /// Element type of a tensor. Sizes are in bits so that 4-bit types are exact.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum DType {
        /// 32-bit float.
        F32 => "fp32" | "f32" | "float32",
        /// IEEE half.
        F16 => "fp16" | "f16" | "float16" | "half",
        /// bfloat16.
        Bf16 => "bf16" | "bfloat16",
        /// 8-bit float (e4m3 / e5m2).
        F8 => "fp8" | "f8" | "float8",
        /// 8-bit integer.
        I8 => "int8" | "i8",
        /// 4-bit integer.
        I4 => "int4" | "i4",
    }
}

impl DType {
    /// Bits per element.
    pub const fn bits(self) -> u64 {
        match self {
            Self::F32 => 32,
            Self::F16 | Self::Bf16 => 16,
            Self::F8 | Self::I8 => 8,
            Self::I4 => 4,
        }
    }

    /// Bytes for `n` elements (rounded up for sub-byte types).
    #[inline]
    pub const fn bytes(self, n: u64) -> u64 {
        (n * self.bits()).div_ceil(8)
    }

    /// Name as PyTorch prints it.
    pub const fn torch_name(self) -> &'static str {
        match self {
            Self::F32 => "float32",
            Self::F16 => "float16",
            Self::Bf16 => "bfloat16",
            Self::F8 => "float8_e4m3fn",
            Self::I8 => "int8",
            Self::I4 => "int4",
        }
    }
}

impl FromStr for DType {
    type Err = String;
    /// A token or an alias in any case (`BF16`, `float32`); the error shows it in lower case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        Self::from_token(&lower)
            .ok_or_else(|| format!("unknown dtype \"{lower}\" ({})", Self::TOKENS.join(", ")))
    }
}

crate::tokens::token_enum! {
    /// Training / inference precision recipe.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Precision {
        /// Everything in fp32 (Lightning's `32-true`).
        Fp32 => "fp32" | "32-true",
        /// Pure bf16: weights, gradients, optimizer states and activations in bf16 (Lightning's
        /// `bf16-true`).
        Bf16 => "bf16" | "bf16-true",
        /// Pure fp16 (Lightning's `16-true`).
        Fp16 => "fp16" | "16-true",
        /// Autocast bf16: fp32 master weights, grads and states; bf16 matmuls with saved cast copies
        /// (Lightning's `bf16-mixed`: under `--framework litgpt` that name means this).
        Bf16Amp => "bf16-amp",
        /// Autocast fp16 (with a gradient scaler), otherwise as `Bf16Amp` (Lightning's `16-mixed`).
        Fp16Amp => "fp16-amp" | "16-mixed",
        /// Megatron / DeepSpeed mixed precision: bf16 weights, gradients and activations; the
        /// optimizer keeps an fp32 master copy next to fp32 moments (the ZeRO paper's K = 12).
        Bf16Mixed => "bf16-mixed",
        /// As `Bf16Mixed` with fp16 (and a loss scaler).
        Fp16Mixed => "fp16-mixed",
        /// fp8 weights, bf16 compute (inference).
        Fp8 => "fp8",
        /// int8 weights, bf16 compute (inference).
        Int8 => "int8",
        /// int4 weights, bf16 compute (inference).
        Int4 => "int4",
    }
    impl FromStr = crate::tokens::Parse::named("precision").any_case();
    impl Display;
}

impl Precision {
    /// Storage type of the weights held on the GPU.
    pub const fn weight_dtype(self) -> DType {
        match self {
            Self::Fp32 | Self::Bf16Amp | Self::Fp16Amp => DType::F32,
            Self::Bf16 | Self::Bf16Mixed => DType::Bf16,
            Self::Fp16 | Self::Fp16Mixed => DType::F16,
            Self::Fp8 => DType::F8,
            Self::Int8 => DType::I8,
            Self::Int4 => DType::I4,
        }
    }

    /// Type matmuls run in and activations are stored in.
    pub const fn compute_dtype(self) -> DType {
        match self {
            Self::Fp32 => DType::F32,
            Self::Fp16 | Self::Fp16Amp | Self::Fp16Mixed => DType::F16,
            Self::Bf16 | Self::Bf16Amp | Self::Bf16Mixed | Self::Fp8 | Self::Int8 | Self::Int4 => DType::Bf16,
        }
    }

    /// Autocast mixed precision (fp32 master weights).
    pub const fn is_amp(self) -> bool {
        matches!(self, Self::Bf16Amp | Self::Fp16Amp)
    }

    /// The optimizer keeps fp32 master weights beside half-precision model weights.
    pub const fn has_master_weights(self) -> bool {
        matches!(self, Self::Bf16Mixed | Self::Fp16Mixed)
    }

    /// Weight-only quantized (inference-only) modes.
    pub const fn is_quantized(self) -> bool {
        matches!(self, Self::Fp8 | Self::Int8 | Self::Int4)
    }
}

/// "1 GPU", "8 GPUs": a count with its noun, plural when it is not one.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A whole number with thousands separators: "1,206,016".
pub fn digits(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number with `decimals` places and thousands separators: "12,876.0" (the one format of the
/// window's large numbers).
pub fn grouped(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let s = format!("{:.*}", decimals, x.abs());
    let (whole, frac) = s.split_once('.').map_or((s.as_str(), None), |(w, f)| (w, Some(f)));
    let mut out = String::with_capacity(s.len() + 4);
    // "-0.0" stays "0.0"
    if x < 0.0 && s.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    out += &whole.parse::<u64>().map_or_else(|_| whole.to_owned(), digits);
    if let Some(f) = frac {
        out.push('.');
        out += f;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_numbers_are_grouped() {
        assert_eq!(grouped(12876.04, 1), "12,876.0");
        assert_eq!(grouped(999.95, 1), "1,000.0");
        assert_eq!(grouped(80.0, 0), "80");
        assert_eq!(grouped(-1234.5, 1), "-1,234.5");
        assert_eq!(grouped(-0.01, 1), "0.0");
        assert_eq!(grouped(1_234_567.0, 2), "1,234,567.00");
    }

    #[test]
    fn digits_are_grouped() {
        assert_eq!(digits(0), "0");
        assert_eq!(digits(999), "999");
        assert_eq!(digits(1000), "1,000");
        assert_eq!(digits(1_206_016), "1,206,016");
    }

    #[test]
    fn rounding_and_sizes() {
        assert_eq!(round_alloc(0), 0);
        assert_eq!(round_alloc(1), 512);
        assert_eq!(round_alloc(512), 512);
        assert_eq!(round_alloc(513), 1024);
        assert_eq!(DType::I4.bytes(3), 2);
        assert_eq!(DType::Bf16.bytes(10), 20);
    }

    #[test]
    fn precision_names_round_trip() {
        for p in Precision::ALL {
            assert_eq!(p.name().parse::<Precision>(), Ok(p));
        }
        assert!("fp64".parse::<Precision>().is_err());
    }
}
