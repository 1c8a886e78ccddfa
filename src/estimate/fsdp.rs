//! What PyTorch FSDP keeps on top of the ZeRO stage its sharding strategy maps to, as each
//! implementation ([`FsdpImpl`]) runs it.
//!
//! * FSDP1's root unit (the embeddings, final norm and head, left over by a per-block wrap
//!   policy) is not resharded after its forward (`_post_forward_reshard` skips the root): its
//!   unsharded parameters are alive from the forward's start to the backward's end, beside its
//!   shard. Under FSDP2 as torchtune runs it the measured rows (27c, 27d) leave no room for such
//!   a term, and none is counted.
//! * FSDP1 under `no_sync()` (Lightning Fabric's `no_backward_sync`, accelerate's `accumulate`
//!   while a micro-batch does not sync) skips the reduce-scatter and accumulates each unit's
//!   gradient unsharded; the unit's parameters are still resharded (FULL_SHARD), its gradient
//!   is not, so from the second micro-batch every unit's full gradient is alive.
//! * FSDP1 with `use_orig_params=True` and LoRA adapters inside a block's flat parameter: the
//!   flat parameter requires grad, so do all of its views, frozen weights included — each
//!   block's whole gradient exists (unsharded in backward, sharded after the reduce-scatter)
//!   and its Linears keep their inputs for the weight gradient.

use super::scenario::{BaseQuant, Mode, Scenario};
use super::stack::FsdpImpl;
use super::states::States;
use crate::model::{ParamGroup, Scope};
use crate::units::round_alloc;

/// Do the block weights of this run take gradients although LoRA freezes them?
pub fn block_weights_grad(sc: &Scenario) -> bool {
    sc.mode == Mode::Train
        && sc.parallel.fsdp.is_some()
        && sc.lora.is_some()
        && sc.base_quant == BaseQuant::None
        && sc.stack.fsdp == FsdpImpl::Fsdp1Shared
}

/// Does FSDP1 (`FullyShardedDataParallel`, either wrap) run this job?
pub fn fsdp1(sc: &Scenario) -> bool {
    sc.parallel.fsdp.is_some() && sc.stack.fsdp != FsdpImpl::Fsdp2
}

/// Does this run accumulate FSDP1's unsharded gradients (`no_sync` over `--grad-accum` > 1)?
pub fn accumulates_unsharded(sc: &Scenario) -> bool {
    sc.mode == Mode::Train
        && sc.parallel.fsdp.is_some()
        && sc.stack.fsdp.accumulates_unsharded()
        && sc.stack.grad_accum > 1
        && !sc.stack.optimizer_in_backward
}

/// FSDP1's root unit (everything outside the wrapped blocks) as all-gathered in the compute
/// dtype for the whole step, in allocator bytes; 0 where FSDP1 does not run or in inference.
pub fn root_unit(sc: &Scenario, groups: &[ParamGroup]) -> u64 {
    if !fsdp1(sc) || sc.mode != Mode::Train {
        return 0;
    }
    let dt = sc.precision.compute_dtype();
    let root: u64 = groups
        .iter()
        .filter(|g| g.scope != Scope::Block && !g.kind.is_frozen())
        .map(|g| dt.bytes(g.rows * g.cols) * g.count)
        .sum();
    round_alloc(root)
}

/// Applies FSDP's terms to states already divided by [`super::states::shard`]; `unsharded`: the
/// same states before the division, `groups`: this rank's parameter groups.
pub fn apply(st: &mut States, unsharded: &States, sc: &Scenario, groups: &[ParamGroup]) {
    if sc.parallel.fsdp.is_none() || sc.mode != Mode::Train {
        return;
    }
    let dp = sc.parallel.shard_degree().max(1);
    let weight_dt = sc.precision.weight_dtype();
    // FSDP1's root unit: everything outside the wrapped blocks, all-gathered in the compute
    // dtype. Not for FSDP2 as torchtune runs it: its rows (27c, 27d) hold no root all-gather at
    // the backward's peak, 3.9 and 7.8 GiB that the measurements leave no room for
    st.param_alloc += root_unit(sc, groups);
    // gradients of every block's flat parameter, frozen weights included, when adapters share it
    let frozen: u64 = if block_weights_grad(sc) {
        groups
            .iter()
            .filter(|g| g.scope == Scope::Block && !g.kind.is_frozen())
            .map(|g| weight_dt.bytes(g.rows * g.cols) * g.count)
            .sum()
    } else {
        0
    };
    let (full, full_exact) = (unsharded.grad_alloc + frozen, unsharded.grad_bytes + frozen);
    if accumulates_unsharded(sc) {
        st.grad_alloc = full;
        st.grad_bytes = full_exact;
    } else if sc.parallel.effective_zero() >= 2 {
        st.grad_alloc = full.div_ceil(dp);
        st.grad_bytes = full_exact.div_ceil(dp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{FsdpMode, Lora, estimate};
    use crate::model::preset;
    use crate::units::Precision;

    fn litgpt_lora(fsdp: FsdpImpl, accum: u32) -> Scenario {
        let mut sc = Scenario::new(preset::load("llama-2-7b").unwrap().model);
        sc.seq = 1024;
        sc.precision = Precision::Bf16;
        sc.lora = Some("8:q,v".parse::<Lora>().unwrap());
        sc.parallel.dp = 2;
        sc.parallel.fsdp = Some(FsdpMode::FullShard);
        sc.stack.fsdp = fsdp;
        sc.stack.grad_accum = accum;
        sc
    }

    #[test]
    fn shared_units_give_frozen_weights_gradients_and_no_sync_keeps_them_whole() {
        let own = estimate(&litgpt_lora(FsdpImpl::Fsdp1, 1)).unwrap();
        let shared = estimate(&litgpt_lora(FsdpImpl::Fsdp1Shared, 1)).unwrap();
        let accum = estimate(&litgpt_lora(FsdpImpl::Fsdp1Shared, 4)).unwrap();
        // adapters in their own units: only the adapters' (sharded) gradients
        assert!(own.gradients < 20 << 20, "{}", own.gradients);
        // sharing the block's flat parameter: every block weight's gradient, sharded over 2
        let block_params = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096) as u64;
        let g = shared.gradients as f64 / (block_params as f64);
        assert!((0.99..1.01).contains(&g), "{g}");
        // no_sync: the whole unsharded gradient, twice the shard
        let r = accum.gradients as f64 / shared.gradients as f64;
        assert!((1.99..2.01).contains(&r), "{r}");
        // the frozen Linears keep their inputs for those gradients
        assert!(shared.activations > own.activations);
        // FSDP2 accumulates sharded gradients
        let two = estimate(&litgpt_lora(FsdpImpl::Fsdp2, 4)).unwrap();
        assert_eq!(two.gradients, own.gradients);
    }

    #[test]
    fn the_root_unit_stays_unsharded_through_the_step() {
        let sc = litgpt_lora(FsdpImpl::Fsdp1, 1);
        let mut zero3 = sc.clone();
        zero3.parallel.fsdp = None;
        zero3.parallel.zero = 3;
        let (f, z) = (estimate(&sc).unwrap(), estimate(&zero3).unwrap());
        // embedding + untied head in bf16: 2 x 32000 x 4096 x 2 bytes, the final norm 8 KiB
        let root = 2 * 32000 * 4096 * 2 + 4096 * 2;
        assert_eq!(f.peak.alive.parameters - z.peak.alive.parameters, round_alloc(root));
    }
}
