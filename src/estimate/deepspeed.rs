//! DeepSpeed ZeRO's own GPU buffers: the gradient-reduction buckets it allocates beside the
//! model states, sized by its config (`zero_optimization`) as DeepSpeed's code sizes them.
//!
//! * ZeRO stage 1 and 2 (`deepspeed/runtime/zero/stage_1_and_2.py`, `setup_buckets`): at the
//!   start of each backward, with `contiguous_gradients` (the default), one buffer of
//!   `reduce_bucket_size` elements in the dtype of the optimizer's parameters
//!   (`self.dtype = optimizer.param_groups[0]['params'][0].dtype`: bf16 / fp16 with DeepSpeed's
//!   half-precision section, fp32 without), and with `overlap_comm` a second one ("double buffers
//!   to avoid data access conflict"); `_release_ipg_buffers` frees them at the backward's epilogue,
//!   before the optimizer step. `allgather_bucket_size` makes no buffer where NCCL has
//!   `all_gather_into_tensor` (`runtime/utils.py`, `all_gather_dp_groups` gathers into the flat
//!   parameters).
//! * ZeRO stage 3 (`stage3.py`, after the optimizer states): one buffer of `reduce_bucket_size`
//!   elements in the communication dtype (the half dtype with a half section), allocated once and
//!   kept. Its gathered parameters are the estimate's gathered block (see `states::shard`), not
//!   counted here.
//!
//! Sizes: DeepSpeed's defaults (`runtime/zero/config.py`: `reduce_bucket_size` 5e8,
//! `allgather_bucket_size` 5e8, `stage3_prefetch_bucket_size` 5e7,
//! `stage3_param_persistence_threshold` 1e5, `stage3_max_live_parameters` 1e9,
//! `stage3_max_reuse_distance` 1e9), or under the HF Trainer (and Axolotl, which runs it) what
//! its `"auto"` values become (`integrations/deepspeed.py`, `trainer_config_finalize`:
//! `reduce_bucket_size` = hidden², `stage3_prefetch_bucket_size` = 0.9 hidden²,
//! `stage3_param_persistence_threshold` = 10 hidden). The DeepSpeed export writes these values.

use super::scenario::{Mode, Scenario};
use super::stack::Framework;
use crate::units::round_alloc;

/// The `zero_optimization` sizes a DeepSpeed run uses, in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroConfig {
    /// ZeRO stage (1, 2 or 3).
    pub stage: u8,
    /// `overlap_comm` (the export writes `true`).
    pub overlap_comm: bool,
    /// `contiguous_gradients` (DeepSpeed's default, `true`).
    pub contiguous_gradients: bool,
    /// `reduce_bucket_size`.
    pub reduce_bucket_size: u64,
    /// `allgather_bucket_size`.
    pub allgather_bucket_size: u64,
    /// `stage3_prefetch_bucket_size`.
    pub prefetch_bucket_size: u64,
    /// `stage3_param_persistence_threshold`.
    pub param_persistence_threshold: u64,
    /// `stage3_max_live_parameters`.
    pub max_live_parameters: u64,
    /// `stage3_max_reuse_distance`.
    pub max_reuse_distance: u64,
    /// The sizes are the HF Trainer's `"auto"` values for this model.
    pub hf_auto: bool,
}

/// DeepSpeed's default bucket size (`reduce_bucket_size`, `allgather_bucket_size`), elements.
pub const DEFAULT_BUCKET: u64 = 500_000_000;

/// The ZeRO config of a training run that DeepSpeed runs (a ZeRO stage without FSDP, under a
/// framework that uses DeepSpeed: none named, DeepSpeed, the HF Trainer, Axolotl); `None` for
/// the others (Megatron's distributed optimizer, torchtune, litgpt, inference).
pub fn config(sc: &Scenario) -> Option<ZeroConfig> {
    let p = &sc.parallel;
    let deepspeed =
        !matches!(sc.stack.framework, Some(Framework::Megatron | Framework::Torchtune | Framework::Litgpt));
    if sc.mode != Mode::Train || p.fsdp.is_some() || p.zero == 0 || !deepspeed {
        return None;
    }
    Some(zero_config(sc, p.zero))
}

/// The `zero_optimization` sizes DeepSpeed would run `sc` with at ZeRO `stage` (what the
/// DeepSpeed export writes, whatever the scenario's own layout).
pub fn zero_config(sc: &Scenario, stage: u8) -> ZeroConfig {
    let hf_auto = matches!(sc.stack.framework, Some(Framework::HfTrainer | Framework::Axolotl));
    let h = sc.model.transformer().map(|t| t.hidden_size).filter(|_| hf_auto);
    ZeroConfig {
        stage: stage.min(3),
        overlap_comm: true,
        contiguous_gradients: true,
        reduce_bucket_size: h.map_or(DEFAULT_BUCKET, |h| h * h),
        allgather_bucket_size: DEFAULT_BUCKET,
        prefetch_bucket_size: h.map_or(50_000_000, |h| h * h * 9 / 10),
        param_persistence_threshold: h.map_or(100_000, |h| 10 * h),
        max_live_parameters: 1_000_000_000,
        max_reuse_distance: 1_000_000_000,
        hf_auto: h.is_some(),
    }
}

/// The buckets' bytes on a rank: (one buffer, buffers alive through the whole step, buffers
/// alive during the backward only); zeros where DeepSpeed does not run.
pub fn buckets(sc: &Scenario) -> (u64, u64, u64) {
    let Some(c) = config(sc).filter(|c| c.contiguous_gradients) else { return (0, 0, 0) };
    // the optimizer's parameter dtype: the half type under DeepSpeed's bf16 / fp16 section,
    // fp32 otherwise (autocast recipes keep fp32 weights)
    let one = round_alloc(sc.precision.weight_dtype().bytes(c.reduce_bucket_size));
    if c.stage >= 3 { (one, one, 0) } else { (one, 0, if c.overlap_comm { 2 * one } else { one }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset::builtin;
    use crate::units::Precision;

    fn ds(zero: u8, framework: Option<Framework>) -> Scenario {
        let mut sc = Scenario::new(builtin("llama-3.1-8b").unwrap());
        sc.precision = Precision::Bf16Mixed;
        sc.parallel.dp = 8;
        sc.parallel.zero = zero;
        sc.stack.framework = framework;
        sc
    }

    #[test]
    fn zero_buckets_are_sized_as_deepspeed_sizes_them() {
        // stage 2, DeepSpeed's defaults: two bf16 buffers of 5e8 elements during backward
        assert_eq!(buckets(&ds(2, None)), (1_000_000_000, 0, 2_000_000_000));
        // stage 3: one buffer for the whole run
        assert_eq!(buckets(&ds(3, Some(Framework::Deepspeed))), (1_000_000_000, 1_000_000_000, 0));
        // the HF Trainer's "auto": hidden² elements
        let h = 4096u64 * 4096 * 2;
        assert_eq!(buckets(&ds(2, Some(Framework::HfTrainer))), (h, 0, 2 * h));
        let c = config(&ds(3, Some(Framework::HfTrainer))).unwrap();
        assert_eq!((c.prefetch_bucket_size, c.param_persistence_threshold), (4096 * 4096 * 9 / 10, 40960));
        // autocast keeps fp32 weights: fp32 buffers
        let mut amp = ds(2, None);
        amp.precision = Precision::Bf16Amp;
        assert_eq!(buckets(&amp).0, 2_000_000_000);
        // no DeepSpeed: DDP, FSDP, Megatron's distributed optimizer
        assert_eq!(buckets(&ds(0, None)), (0, 0, 0));
        let mut fsdp = ds(3, None);
        fsdp.parallel.fsdp = Some(crate::estimate::FsdpMode::FullShard);
        assert_eq!(buckets(&fsdp), (0, 0, 0));
        assert_eq!(buckets(&ds(1, Some(Framework::Megatron))), (0, 0, 0));
    }
}
