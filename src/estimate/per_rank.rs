//! One rank's estimate: its model states (sharded, offloaded), its blocks' and the embedding's
//! and head's saves, the inference terms, and the step walk whose peak it reports.

use super::*;

pub(super) fn estimate_rank(sc: &Scenario, stage: &Stage, sink: Option<&mut step::All>) -> Estimate {
    let p = sc.parallel;
    // context parallelism: each rank holds a 1/cp slice of the sequence
    let local;
    let sc_local = if p.cp > 1 {
        let mut s = sc.clone();
        s.seq = sc.seq.div_ceil(p.cp);
        local = s;
        &local
    } else {
        sc
    };
    let spec = sc.model.transformer().map(|t| shard_spec(t, &p));
    let net = match &sc.model.arch {
        Architecture::Net(n) => Some(net_parts(sc, n)),
        Architecture::Traced(t) => Some(traced_parts(sc, t)),
        _ => None,
    };
    let groups = match &spec {
        Some(t) => stage_groups(t, stage),
        None => sc.model.param_groups(),
    };
    let RankStates { mut st, cpu_bytes, nvme_bytes } = rank_states(sc, stage, &groups);
    if let Some(n) = &net {
        // a BatchNorm's running statistics and batch count sit beside its parameters
        st.param_alloc += n.net.buffer_tensors().map(crate::units::round_alloc).sum::<u64>();
    }
    let (am, layers) = match (&sc.model.arch, &spec) {
        (Architecture::Transformer(_), Some(t)) => (activations::transformer(sc_local, t), stage.blocks),
        (Architecture::Table(t), _) => table_model(sc, t),
        (Architecture::Net(_) | Architecture::Traced(_), _) => {
            let top = net.as_ref().map(|n| n.run.saved).unwrap_or_default();
            (ActivationModel { top, ..ActivationModel::default() }, 0)
        }
        (Architecture::Transformer(t), None) => (activations::transformer(sc_local, t), t.num_layers),
    };
    let train = sc.mode == Mode::Train;
    let (layer_saved, recompute) = compose_layers(sc_local, &am, layers, stage.first());
    let saved = RankSaves::of(&am, stage, layer_saved);
    let activations_bytes = if train { saved.breakdown.total() } else { 0 };
    let (generation, kv_cache) = inference_terms(sc, sc_local, stage, spec.as_ref());
    let parts = step::Parts {
        sc: sc_local,
        spec: spec.as_ref(),
        stage: *stage,
        st,
        am,
        layers,
        recompute,
        activations: activations_bytes,
        top_input: saved.top_input,
        blocks_total: saved.blocks.total(),
        kv_cache,
        generate: generation,
        net: net.as_ref(),
    };
    let (peak, moments, phase_peaks) = match sink {
        Some(all) => {
            step::walk(&parts, all);
            let mut peak = step::Peak::default();
            step::walk(&parts, &mut peak);
            peak.finish()
        }
        None => {
            let mut peak = step::Peak::default();
            step::walk(&parts, &mut peak);
            peak.finish()
        }
    };
    let peak_allocated = peak.alive.total();
    let o = sc.overhead;
    let overhead = context::outside(sc).total()
        + o.workspace_bytes
        + (peak_allocated as f64 * o.allocator_reserve_fraction).round() as u64;
    let sharded = p.tp > 1 || p.pp > 1 || p.ep > 1;
    Estimate {
        // the model's parameter count (the rank's own share shows in `parameters`)
        n_params: if sharded { sc.model.n_params() } else { st.n_params },
        rank_params: st.n_params,
        trainable_params: st.trainable_params,
        parameters: st.param_bytes,
        gradients: st.grad_bytes,
        optimizer_states: st.optimizer_bytes,
        activations: activations_bytes,
        activation_breakdown: if train { saved.breakdown } else { Saved::default() },
        kv_cache,
        zero_buckets: st.zero_buckets_step + st.zero_buckets_backward,
        peak_allocated,
        peak,
        moments,
        phase_peaks,
        overhead,
        reserved: None,
        paged_optimizer_states: st.paged_bytes,
        total: peak_allocated + overhead,
        stage: *stage,
        cpu_bytes,
        nvme_bytes,
        generate: generation,
    }
}

/// A rank's model states and what it offloads.
struct RankStates {
    st: States,
    /// Bytes offloaded to host memory.
    cpu_bytes: u64,
    /// Bytes offloaded to NVMe.
    nvme_bytes: u64,
}

/// The rank's parameters, gradients and optimizer states: sharded by ZeRO / FSDP, offloaded.
fn rank_states(sc: &Scenario, stage: &Stage, groups: &[crate::model::ParamGroup]) -> RankStates {
    let p = sc.parallel;
    let mut st: States = states::states(sc, groups);
    let mut cpu_bytes = 0;
    let mut nvme_bytes = 0;
    let gathered = gathered_bytes(sc, stage, groups);
    if p.dp > 1 || p.effective_zero() > 0 {
        let unsharded = st;
        states::shard(&mut st, &p, gathered);
        if p.ep > 1 {
            let experts: Vec<_> = groups
                .iter()
                .filter(|g| matches!(g.kind, crate::model::ParamKind::Experts(_)))
                .copied()
                .collect();
            states::reshard_experts(&mut st, &states::states(sc, &experts), &p);
        }
        fsdp::apply(&mut st, &unsharded, sc, groups);
    }
    match p.offload {
        Offload::None => {}
        Offload::Optimizer => {
            // ZeRO-Offload: moments (and fp32 master) live and step on the CPU, and the gradient
            // partitions are copied down (fp32) as backward produces them
            cpu_bytes = st.optimizer_bytes + 4 * st.trainable_params.div_ceil(p.shard_degree().max(1));
            st.optimizer_bytes = 0;
            st.optimizer_alloc = 0;
            st.optimizer_step_temp = 0;
        }
        Offload::Params => {
            // ZeRO-Infinity: parameters, gradients and states on NVMe; the GPU holds the block in
            // use and the prefetched next one. FSDP's `CPUOffload(offload_params=True)` the same
            // with the CPU for the NVMe, except what FSDP1 keeps on the GPU all the same: its root
            // unit, all-gathered through the step, and under `no_sync` the unsharded gradients
            // it accumulates (offloading moves only the reduce-scattered shard)
            let offloaded = st.param_bytes + st.optimizer_bytes + 4 * st.trainable_params;
            if p.fsdp.is_some() {
                cpu_bytes = offloaded;
            } else {
                nvme_bytes = offloaded;
                cpu_bytes = 4 * gathered;
            }
            st.param_bytes = 0;
            st.param_alloc = 2 * gathered + fsdp::root_unit(sc, groups);
            st.optimizer_bytes = 0;
            st.optimizer_alloc = 0;
            st.optimizer_step_temp = 0;
        }
    }
    // either offload moves the gradients off the GPU, except the unsharded ones FSDP1 keeps
    // there while `no_sync` accumulates them
    if p.offload != Offload::None && !fsdp::accumulates_unsharded(sc) {
        st.grad_bytes = 0;
        st.grad_alloc = 0;
    }
    (st.zero_bucket, st.zero_buckets_step, st.zero_buckets_backward) = super::deepspeed::buckets(sc);
    RankStates { st, cpu_bytes, nvme_bytes }
}

/// A convolutional backbone's ops for the scenario's batch, dtype and image, and their walk.
fn net_parts(sc: &Scenario, n: &crate::model::net::NetSpec) -> step::net::NetParts {
    let ctx =
        crate::engine::ops::net::NetCtx { batch: sc.batch, elem: sc.precision.compute_dtype().bytes(1) };
    let net = crate::families::build_net(n, ctx, sc.image.unwrap_or(n.image));
    let run = crate::engine::walk::net::run(&net);
    step::net::NetParts { net, run }
}

/// A traced model's step replayed at the scenario's dims.
fn traced_parts(sc: &Scenario, t: &crate::trace::TracedModel) -> step::net::NetParts {
    // a validated scenario's dims resolve; an unvalidated one replays at the traced ones
    let ckpt = sc.checkpointing == Checkpointing::Full && sc.mode == Mode::Train;
    let (net, run) = match t.resolve_sizes(|d| sc.dim(d)) {
        Ok((_, bytes)) => crate::trace::replay::run_with(t, &bytes, ckpt),
        Err(_) => {
            let x: Vec<u64> = t.dims.iter().map(crate::trace::TraceDim::first).collect();
            crate::trace::replay::run(t, &x, ckpt)
        }
    };
    step::net::NetParts { net, run }
}

/// Parameters ZeRO-3 / FSDP gather at once: one block (a layer table's largest layer), in the
/// compute dtype (FSDP's `param_dtype`), or as stored for a quantized LoRA base.
fn gathered_bytes(sc: &Scenario, stage: &Stage, groups: &[crate::model::ParamGroup]) -> u64 {
    // parameters ZeRO-3 / FSDP gather at once: one block (a layer table's largest layer), in
    // the compute dtype (FSDP's `param_dtype`), or as stored for a quantized LoRA base: NF4 and
    // int8 shards are all-gathered quantized (torchao's `NF4Tensor.fsdp_pre_all_gather`,
    // bitsandbytes' `bnb_4bit_quant_storage`) and dequantized per Linear as it runs
    let block_linear = |g: &&crate::model::ParamGroup| {
        matches!(
            g.kind,
            crate::model::ParamKind::Linear(_)
                | crate::model::ParamKind::Experts(_)
                | crate::model::ParamKind::Router
        )
    };
    match &sc.model.arch {
        Architecture::Net(_) | Architecture::Traced(_) => {
            sc.precision.compute_dtype().bytes(groups.iter().map(|g| g.rows * g.cols).max().unwrap_or(0))
        }
        Architecture::Table(t) => {
            sc.precision.compute_dtype().bytes(t.layers.iter().map(|l| l.params).max().unwrap_or(0))
        }
        Architecture::Transformer(_) if sc.lora.is_some() && sc.base_quant != BaseQuant::None => {
            groups
                .iter()
                .filter(block_linear)
                .map(|g| {
                    states::quantized_bytes(g.rows * g.cols, g.rows, sc.precision, sc.base_quant) * g.count
                })
                .sum::<u64>()
                / stage.blocks.max(1)
        }
        Architecture::Transformer(_) => sc.precision.compute_dtype().bytes(
            groups.iter().filter(block_linear).map(|g| g.rows * g.cols * g.count).sum::<u64>()
                / stage.blocks.max(1),
        ),
    }
}

/// What a rank keeps through the forward: its blocks' saves (the in-flight micro-batches
/// scaled in), the embedding part on the first stage, the head part on the last.
struct RankSaves {
    blocks: Saved,
    breakdown: Saved,
    /// The first stage's embedding part.
    top_input: u64,
}

impl RankSaves {
    fn of(am: &activations::ActivationModel, stage: &Stage, layer_saved: Saved) -> Self {
        let mut blocks = layer_saved;
        if stage.in_flight > 1.0 {
            let mut scaled = Saved::default();
            for (dst, src) in scaled.0.iter_mut().zip(blocks.0.iter()) {
                *dst = (*src as f64 * stage.in_flight).round() as u64;
            }
            blocks = scaled;
        }
        let mut breakdown = blocks;
        let top_output = {
            let mut o = am.top;
            for (a, b) in o.0.iter_mut().zip(am.top_input.0.iter()) {
                *a -= *b;
            }
            o
        };
        let mut top_input = 0;
        if stage.first() {
            for (dst, src) in breakdown.0.iter_mut().zip(am.top_input.0.iter()) {
                let v = (*src as f64 * stage.in_flight).round() as u64;
                *dst += v;
                top_input += v;
            }
        }
        if stage.last() {
            breakdown.add_all(&top_output);
        }
        Self { blocks, breakdown, top_input }
    }
}

/// HF `generate`'s terms and the KV cache of the stage's blocks (their tensor-parallel share of
/// the KV heads) in inference.
fn inference_terms(
    sc: &Scenario,
    sc_local: &Scenario,
    stage: &Stage,
    spec: Option<&crate::model::TransformerSpec>,
) -> (Option<generate::Terms>, u64) {
    let kv_dtype = sc.kv_cache_dtype.unwrap_or(sc.precision.compute_dtype());
    // the stage's blocks (their tensor-parallel share of the KV heads)
    let stage_spec = spec.map(|t| crate::model::TransformerSpec { num_layers: stage.blocks, ..t.clone() });
    let generation = match &stage_spec {
        Some(t) if sc.mode == Mode::Infer && sc.new_tokens > 0 => {
            let ctx = activations::Ctx::new(sc_local);
            Some(generate::terms(
                t,
                sc_local.batch,
                sc_local.seq,
                sc.new_tokens,
                (ctx.compute_elem, ctx.residual_elem),
                kv_dtype,
                crate::families::kernel_of(&ctx, t),
                (stage.first(), stage.last()),
            ))
        }
        _ => None,
    };
    let kv_cache = match (&stage_spec, sc.mode, generation) {
        (_, _, Some(g)) => g.kv_final,
        (Some(t), Mode::Infer, None) => {
            activations::kv_cache_bytes(t, sc_local.batch, sc_local.seq, kv_dtype)
        }
        _ => 0,
    };
    (generation, kv_cache)
}
