//! Memory outside PyTorch's allocator, term by term: the CUDA context with the kernels it loads,
//! and NCCL's buffers (the cuBLAS workspace and the allocator's cache are inside the allocator).
//!
//! The context is the card's figure with lazy module loading (`presets/gpus.ron`, the driver's
//! primary context plus the kernels a training step loads on first use). Without lazy loading
//! every kernel image of PyTorch and its CUDA libraries is loaded when the context is created:
//! that happens with a CUDA runtime before 11.7 (lazy loading does not exist), or with
//! `CUDA_MODULE_LOADING=EAGER` (PyTorch sets `LAZY` itself since 1.13 unless the variable is set).
//! A calibration profile (`vramscope calibrate`) replaces the context with the one measured on the
//! user's card.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

crate::tokens::token_enum! {
    /// `CUDA_MODULE_LOADING`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum ModuleLoading {
        /// Kernels loaded on first use (CUDA ≥ 11.7; PyTorch's default since 1.13).
        #[default]
        Lazy => "lazy",
        /// Every kernel image loaded with the context.
        Eager => "eager",
    }
    impl Display;
}

impl ModuleLoading {
    /// What a CUDA runtime `major.minor` gives with PyTorch's defaults.
    pub const fn for_cuda(major: u32, minor: u32) -> Self {
        if major > 11 || (major == 11 && minor >= 7) { Self::Lazy } else { Self::Eager }
    }
}

impl FromStr for ModuleLoading {
    type Err = String;
    /// `lazy`, `eager`, or a CUDA runtime version (`11.3`, `12.4`) to take its default.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = s.trim().to_ascii_lowercase();
        match Self::from_token(&v) {
            Some(m) => Ok(m),
            None => {
                let bad = || {
                    let tokens = Self::TOKENS.join(", ");
                    format!("\"{s}\" is not {tokens} or a CUDA version like 11.3 (--module-loading)")
                };
                let (maj, min) = v.split_once('.').unwrap_or((&v, "0"));
                let maj: u32 = maj.parse().map_err(|_| bad())?;
                let min: u32 = min.split('.').next().unwrap_or("0").parse().map_err(|_| bad())?;
                if !(9..=20).contains(&maj) {
                    return Err(bad());
                }
                Ok(Self::for_cuda(maj, min))
            }
        }
    }
}

/// Kernel images eager loading adds to the context on top of what lazy loading leaves resident
/// for a training step. Source: the transformers docs (`perf_train_gpu_one`, "model memory
/// anatomy"), where a V100 with a pre-11.7 CUDA runtime shows 1343 MB once the context exists,
/// against about 400 MiB with lazy loading on the same card class; PyTorch's CUDA 11.7 notes give
/// the same order. It depends on how many architectures the wheel was built for, so it is a
/// default to override (`--context-mib`) or calibrate, not a rule.
pub const EAGER_KERNELS_BYTES: u64 = 943 << 20;

/// The terms outside the allocator, each on its own line of the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OutsideTerms {
    /// The context with lazy loading (the card's default, a `--context-mib` or a profile).
    pub cuda_context: u64,
    /// Kernel images eager module loading adds (0 with lazy loading).
    pub eager_kernels: u64,
    /// NCCL's communicator buffers when more than one GPU takes part.
    pub nccl: u64,
}

impl OutsideTerms {
    /// Everything outside the allocator.
    pub const fn total(&self) -> u64 {
        self.cuda_context + self.eager_kernels + self.nccl
    }
}

/// The terms of a scenario.
pub fn outside(sc: &super::Scenario) -> OutsideTerms {
    let o = &sc.overhead;
    OutsideTerms {
        cuda_context: o.cuda_context_bytes,
        eager_kernels: if o.module_loading == ModuleLoading::Eager { EAGER_KERNELS_BYTES } else { 0 },
        nccl: sc.parallel.nccl(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_before_11_7_load_eagerly() {
        assert_eq!("11.3".parse::<ModuleLoading>(), Ok(ModuleLoading::Eager));
        assert_eq!("11.7".parse::<ModuleLoading>(), Ok(ModuleLoading::Lazy));
        assert_eq!("12.4.1".parse::<ModuleLoading>(), Ok(ModuleLoading::Lazy));
        assert_eq!("EAGER".parse::<ModuleLoading>(), Ok(ModuleLoading::Eager));
        assert_eq!("10".parse::<ModuleLoading>(), Ok(ModuleLoading::Eager));
        for bad in ["fast", "x.1", "1.0", "11.y"] {
            assert!(bad.parse::<ModuleLoading>().unwrap_err().contains("--module-loading"), "{bad}");
        }
    }
}
