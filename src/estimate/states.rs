//! Model states: parameters, gradients and optimizer states, exact and as the allocator rounds them.

use super::scenario::{BaseQuant, Lora, Mode, Optimizer, Parallel, Scenario};
use crate::model::{LinearRole, ParamGroup, ParamKind, TransformerSpec};
use crate::units::{DType, Precision, round_alloc};

/// Sizes of the model states of one scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct States {
    /// Distinct parameters of the base model (tied embeddings once).
    pub n_params: u64,
    /// Parameters that receive gradients (all, or the LoRA adapters).
    pub trainable_params: u64,
    /// Bytes of all parameters (base and adapters) on the GPU.
    pub param_bytes: u64,
    /// Bytes of gradients after backward.
    pub grad_bytes: u64,
    /// Bytes of optimizer states (moments; not the per-tensor `step` scalars, which live on the CPU).
    pub optimizer_bytes: u64,
    /// `param_bytes` with every tensor rounded to the allocator's 512-byte blocks.
    pub param_alloc: u64,
    /// `grad_bytes`, rounded per tensor.
    pub grad_alloc: u64,
    /// `optimizer_bytes`, rounded per tensor.
    pub optimizer_alloc: u64,
    /// Temporary the optimizer step allocates on top of its states.
    pub optimizer_step_temp: u64,
    /// fp32 master-gradient bytes of the step (mixed precision with master weights), exact.
    pub master_grad_bytes: u64,
    /// PyTorch DDP's flat gradient buckets (`gradient_as_bucket_view=False`, the default): allocated
    /// once, alive all the time.
    pub ddp_bucket_alloc: u64,
    /// Gradients already allocated when backward reaches the last block (LM head / tied embedding,
    /// final norm).
    pub head_grad_alloc: u64,
    /// Gradients of one block's MLP and attention-output weights (allocated before the block's
    /// attention core runs backward).
    pub grads_before_attention: u64,
    /// Gradient of an untied token embedding (allocated at the very end of backward).
    pub embed_grad_alloc: u64,
    /// Optimizer states in CUDA unified memory (bitsandbytes' paged optimizers): counted in
    /// `optimizer_bytes`, not in `optimizer_alloc` (PyTorch's allocator never sees them).
    pub paged_bytes: u64,
    /// The largest trainable tensor's gradient, rounded (what optimizer-in-backward holds at once).
    pub largest_grad_alloc: u64,
    /// The optimizer step's temporary for the largest trainable tensor alone (a per-parameter
    /// step, as optimizer-in-backward runs it).
    pub largest_step_temp: u64,
    /// One DeepSpeed ZeRO gradient-reduction bucket, rounded (`estimate::deepspeed`).
    pub zero_bucket: u64,
    /// ZeRO buckets alive through the whole step (stage 3's).
    pub zero_buckets_step: u64,
    /// ZeRO buckets alive during the backward only (stage 1 and 2's).
    pub zero_buckets_backward: u64,
}

/// Does LoRA put an adapter on this parameter group?
pub(crate) fn adapted(lora: &Lora, m: &TransformerSpec, kind: ParamKind) -> bool {
    match kind {
        ParamKind::Linear(LinearRole::Q) if crate::families::ops(m).qkv_one_adapter => {
            // GPT-2's fused c_attn takes q, k and v adapters as one
            lora.targets.has(LinearRole::Q)
                || lora.targets.has(LinearRole::K)
                || lora.targets.has(LinearRole::V)
        }
        ParamKind::Linear(role) => lora.targets.has(role),
        _ => false,
    }
}

/// The dtype LoRA adapters are kept in: fp32 (PEFT) or the model's weight dtype.
pub(crate) fn adapter_dtype(sc: &Scenario) -> DType {
    match sc.stack.adapter_dtype {
        super::stack::AdapterDtype::Fp32 => DType::F32,
        super::stack::AdapterDtype::Model if sc.precision.is_quantized() => sc.precision.compute_dtype(),
        super::stack::AdapterDtype::Model => sc.precision.weight_dtype(),
    }
}

/// Bytes of one quantized weight tensor of `n` elements and `rows` output rows.
pub(crate) fn quantized_bytes(n: u64, rows: u64, precision: Precision, base_quant: BaseQuant) -> u64 {
    match (base_quant, precision) {
        // NF4: 4 bits + one 8-bit absmax per 64 weights + one fp32 scale per 256 absmax blocks
        (BaseQuant::Nf4, _) => n.div_ceil(2) + n.div_ceil(64) + 4 * n.div_ceil(64 * 256),
        // NF4 without double quantization: one fp32 absmax per 64 weights
        (BaseQuant::Nf4NoDq, _) => n.div_ceil(2) + 4 * n.div_ceil(64),
        // LLM.int8(): int8 weights + one fp32 scale per output row
        (BaseQuant::Int8, _) | (BaseQuant::None, Precision::Int8) => n + 4 * rows,
        // GPTQ/AWQ-style int4, group size 128: 4-bit weights, fp16 scale and 4-bit zero per group
        (BaseQuant::None, Precision::Int4) => {
            n.div_ceil(2) + n.div_ceil(128) * 2 + n.div_ceil(128).div_ceil(2)
        }
        // fp8 (e4m3) weights with one fp32 scale per tensor
        (BaseQuant::None, Precision::Fp8) => n + 4,
        (BaseQuant::None, p) => p.weight_dtype().bytes(n),
    }
}

/// Per-tensor optimizer state bytes for one tensor of `rows x cols` in `dt`.
fn opt_tensor_bytes(opt: Optimizer, rows: u64, cols: u64, dt: DType) -> (u64, u64) {
    let n = rows * cols;
    // returns (exact, allocator-rounded)
    match opt {
        Optimizer::Adamw | Optimizer::Adam | Optimizer::AdamwFused | Optimizer::AdamwLoop => {
            let one = dt.bytes(n);
            (2 * one, 2 * round_alloc(one))
        }
        // bitsandbytes' 32-bit optimizers keep fp32 states whatever the parameter dtype
        Optimizer::PagedAdamw32bit => {
            let one = 4 * n;
            (2 * one, 2 * round_alloc(one))
        }
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => {
            if n >= 4096 {
                let one = n + 4 * n.div_ceil(2048);
                (2 * one, 2 * (round_alloc(n) + round_alloc(4 * n.div_ceil(2048))))
            } else {
                (2 * 4 * n, 2 * round_alloc(4 * n))
            }
        }
        Optimizer::Adafactor => {
            if rows > 1 && cols > 1 {
                let (r, c) = (dt.bytes(rows), dt.bytes(cols));
                (r + c, round_alloc(r) + round_alloc(c))
            } else {
                let one = dt.bytes(n);
                (one, round_alloc(one))
            }
        }
        Optimizer::SgdMomentum => {
            let one = dt.bytes(n);
            (one, round_alloc(one))
        }
        Optimizer::Sgd | Optimizer::None => (0, 0),
    }
}

/// Bytes of one tensor of group `g` as the scenario stores it: a base format asked for (a LoRA
/// run's frozen base, weights quantized at load), a quantized precision, fp32-kept routers, the
/// checkpoint's own format, else the weight dtype.
fn stored_bytes(sc: &Scenario, g: &ParamGroup) -> u64 {
    let (p, train) = (sc.precision, sc.mode == Mode::Train);
    let ckpt_format = sc.model.transformer().and_then(|t| t.quant);
    let n = g.rows * g.cols;
    let quantizable = matches!(g.kind, ParamKind::Linear(_) | ParamKind::Experts(_) | ParamKind::Router);
    let fp32_kept = g.kind.fp32_kept();
    // the checkpoint's own format (GPTQ, AWQ, fp8, MXFP4 experts…) applies to its projections
    // when no other weight format is asked for
    let from_ckpt = ckpt_format.filter(|f| {
        // full fine-tuning dequantizes the checkpoint; inference and a LoRA base keep it
        (!train || sc.lora.is_some())
            && !p.is_quantized()
            && sc.base_quant == BaseQuant::None
            && match g.kind {
                ParamKind::Experts(_) => true,
                ParamKind::Linear(_) => f.covers_dense(),
                _ => false,
            }
    });
    // a base format asked for: a LoRA run's frozen base, or inference weights quantized at
    // load (bitsandbytes through transformers or Lightning); Lightning's plugin converts the
    // LM head as well
    let base = sc.base_quant != BaseQuant::None && (sc.lora.is_some() || !train);
    let head_too = g.kind == ParamKind::Head
        && sc.stack.bnb.quantizes_head()
        && matches!(sc.base_quant, BaseQuant::Nf4 | BaseQuant::Nf4NoDq);
    if base && (quantizable || head_too) {
        quantized_bytes(n, g.rows, p, sc.base_quant)
    } else if p.is_quantized() && quantizable {
        quantized_bytes(n, g.rows, p, BaseQuant::None)
    } else if p.is_quantized() {
        p.compute_dtype().bytes(n)
    } else if fp32_kept {
        DType::F32.bytes(n)
    } else if g.kind == ParamKind::FrozenCompute {
        p.compute_dtype().bytes(n)
    } else if let Some(f) = from_ckpt {
        f.weight_bytes(g.rows, g.cols)
    } else {
        p.weight_dtype().bytes(n)
    }
}

/// The gradients a full fine-tune's backward allocates in its order: the LM head's (or the tied
/// embedding's) and the final norm's first, the untied embedding's last, a block's MLP before its
/// attention runs backward.
fn backward_grads(sc: &Scenario, st: &mut States, state_dt: DType) {
    // the tensor-parallel rank's share: its heads, MLP width and vocabulary rows
    let Some(t) = sc.model.transformer().map(|t| super::rank::shard_spec(t, &sc.parallel)) else { return };
    let t = &t;
    let gb = |n: u64| round_alloc(state_dt.bytes(n));
    // LM head (or tied embedding) gradient + final norm weight, allocated first in backward
    let head = match t.head {
        crate::model::Head::CausalLm | crate::model::Head::MaskedLm => gb(t.vocab_size * t.hidden_size),
        _ => 0,
    };
    st.head_grad_alloc = head + 2 * gb(t.hidden_size);
    if !t.tie_word_embeddings && matches!(t.head, crate::model::Head::CausalLm | crate::model::Head::MaskedLm)
    {
        st.embed_grad_alloc = gb(t.vocab_size * t.hidden_size);
    }
    let experts = t.moe.map_or(1, |m| m.experts);
    let mats = if crate::families::gated(t) { 3 } else { 2 };
    st.grads_before_attention = mats * experts * gb(t.hidden_size * t.intermediate_size)
        + gb(t.hidden_size * t.q_width())
        + gb(t.hidden_size);
}

/// Does the optimizer keep the token embeddings' states in 32 bit? transformers' `Trainer`
/// (`create_optimizer`: `"bitsandbytes" in str(optimizer_cls) and optim_bits == 8`) registers
/// `GlobalOptimManager.register_module_override(module, "weight", {"optim_bits": 32})` for every
/// `nn.Embedding` when it builds a bitsandbytes 8-bit optimizer (`adamw_bnb_8bit`, `adamw_8bit`,
/// `paged_adamw_8bit`), so bitsandbytes gives those weights fp32 states; Axolotl builds these
/// optimizers through the Trainer's `create_optimizer`. torchtune, litgpt, Megatron and a plain
/// `bnb.optim.AdamW8bit` register no override.
pub fn embeddings_in_32bit(sc: &Scenario) -> bool {
    use super::stack::Framework;
    matches!(sc.optimizer, Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit)
        && matches!(sc.stack.framework, Some(Framework::HfTrainer | Framework::Axolotl))
}

/// Computes the model states of a scenario from its parameter groups.
pub fn states(sc: &Scenario, groups: &[ParamGroup]) -> States {
    let p = sc.precision;
    let train = sc.mode == Mode::Train;
    let family = sc.model.transformer();
    let mut st = States::default();
    let weight_dt = p.weight_dtype();
    // fp32 master weights under autocast; the optimizer works in the parameter dtype
    let state_dt = weight_dt;
    let mut largest_trainable = 0u64;
    let fp32_embeddings = embeddings_in_32bit(sc);
    let mut add_trainable = |st: &mut States, rows: u64, cols: u64, count: u64, dt: DType, opt: Optimizer| {
        let n = rows * cols;
        if !train {
            return;
        }
        st.trainable_params += n * count;
        st.grad_bytes += dt.bytes(n) * count;
        st.grad_alloc += round_alloc(dt.bytes(n)) * count;
        // mixed precision with master weights: the optimizer works on an fp32 copy
        let master = p.has_master_weights() && dt != DType::F32 && sc.optimizer != Optimizer::None;
        let opt_dt = if master { DType::F32 } else { dt };
        let (exact, alloc) = opt_tensor_bytes(opt, rows, cols, opt_dt);
        st.optimizer_bytes += exact * count;
        if sc.optimizer.paged() {
            st.paged_bytes += exact * count;
        } else {
            st.optimizer_alloc += alloc * count;
        }
        if master {
            st.optimizer_bytes += 4 * n * count;
            st.optimizer_alloc += round_alloc(4 * n) * count;
            // the step works on an fp32 copy of the gradient (DeepSpeed's fp32 partition grads,
            // Megatron's main_grad), alive while the optimizer runs
            st.optimizer_step_temp += round_alloc(4 * n) * count;
            st.master_grad_bytes += 4 * n * count;
        }
        let mut temp_one = if master { round_alloc(4 * n) } else { 0 };
        if matches!(sc.optimizer, Optimizer::Adamw | Optimizer::Adam) {
            // foreach step: torch._foreach_sqrt(exp_avg_sqs) makes one parameter-sized list
            st.optimizer_step_temp += round_alloc(opt_dt.bytes(n)) * count;
            temp_one += round_alloc(opt_dt.bytes(n));
        }
        if n >= largest_trainable {
            st.largest_grad_alloc = st.largest_grad_alloc.max(round_alloc(dt.bytes(n)));
            st.largest_step_temp = st.largest_step_temp.max(temp_one);
        }
        largest_trainable = largest_trainable.max(n);
    };
    for g in groups {
        let n = g.rows * g.cols;
        st.n_params += n * g.count;
        let one = stored_bytes(sc, g);
        let fp32_kept = g.kind.fp32_kept();
        st.param_bytes += one * g.count;
        st.param_alloc += round_alloc(one) * g.count;
        match (&sc.lora, family) {
            (_, _) if g.kind.is_frozen() => {}
            (None, _) if fp32_kept => {
                add_trainable(&mut st, g.rows, g.cols, g.count, DType::F32, sc.optimizer)
            }
            // the Trainer's override: bitsandbytes' 32-bit states (fp32, as its 32-bit optimizers)
            (None, _) if fp32_embeddings && g.kind == ParamKind::Embedding => {
                add_trainable(&mut st, g.rows, g.cols, g.count, state_dt, Optimizer::PagedAdamw32bit);
            }
            (None, _) => add_trainable(&mut st, g.rows, g.cols, g.count, state_dt, sc.optimizer),
            (Some(l), Some(fam)) if adapted(l, fam, g.kind) => {
                // A: r x in, B: out x r, fp32 (PEFT keeps adapters in fp32) or the model's dtype
                let (out_f, in_f) = (g.rows, g.cols);
                let ad = adapter_dtype(sc);
                for (r, c) in [(l.rank, in_f), (out_f, l.rank)] {
                    let bytes = ad.bytes(r * c);
                    st.param_bytes += bytes * g.count;
                    st.param_alloc += round_alloc(bytes) * g.count;
                    add_trainable(&mut st, r, c, g.count, ad, sc.optimizer);
                }
            }
            _ => {}
        }
    }
    if train && sc.optimizer == Optimizer::Adafactor {
        // per-tensor update: fp32 copy of the gradient, its square and the update
        st.optimizer_step_temp = 3 * round_alloc(4 * largest_trainable);
        st.largest_step_temp = st.optimizer_step_temp;
    }
    if train && sc.optimizer == Optimizer::AdamwLoop {
        // one tensor at a time: `exp_avg_sq.sqrt()` of the largest (fp32 with master weights)
        let dt = if p.has_master_weights() { DType::F32 } else { state_dt };
        let one = round_alloc(dt.bytes(largest_trainable));
        st.optimizer_step_temp += one;
        st.largest_step_temp += one;
    }
    if train && sc.lora.is_none() {
        backward_grads(sc, &mut st, state_dt);
    }
    st
}

/// Expert parallelism lives inside the data-parallel group (Megatron-LM, DeepSpeed-MoE): the
/// experts a rank holds (already 1/ep of them) are sharded by ZeRO over the expert-data-parallel
/// group of dp/ep ranks, not over all dp. Moves the experts' share (`experts`: their unsharded
/// states on this rank) from 1/dp to 1/(dp/ep) after [`shard`].
pub fn reshard_experts(st: &mut States, experts: &States, p: &Parallel) {
    let dp = p.shard_degree().max(1);
    let edp = (dp / p.ep.max(1)).max(1);
    let zero = p.effective_zero();
    if p.ep <= 1 || dp == edp || zero == 0 {
        return;
    }
    let fix = |v: &mut u64, e: u64| *v = v.saturating_sub(e.div_ceil(dp)) + e.div_ceil(edp);
    fix(&mut st.optimizer_bytes, experts.optimizer_bytes);
    fix(&mut st.optimizer_alloc, experts.optimizer_alloc);
    fix(&mut st.optimizer_step_temp, experts.optimizer_step_temp);
    if zero >= 2 {
        fix(&mut st.grad_bytes, experts.grad_bytes);
        fix(&mut st.grad_alloc, experts.grad_alloc);
    }
    if zero >= 3 {
        fix(&mut st.param_bytes, experts.param_bytes);
        fix(&mut st.param_alloc, experts.param_alloc);
    }
}

/// Divides model states across data-parallel ranks as DeepSpeed ZeRO does, and adds what the
/// stage needs on top (the most loaded rank is reported; shards are rounded up).
///
/// * stage 0 (PyTorch DDP): full replicas plus DDP's flat gradient buckets, one more gradient-sized
///   buffer (`gradient_as_bucket_view=False`, the default);
/// * stage 1: optimizer states (and the step temporary) / dp;
/// * stage 2: + gradients / dp;
/// * stage 3: + parameters / dp, plus the all-gathered parameters of the running block and the
///   prefetched next one (`gathered_block_bytes` each).
pub fn shard(st: &mut States, p: &Parallel, gathered_block_bytes: u64) {
    let dp = p.shard_degree().max(1);
    let zero = p.effective_zero();
    if p.dp == 1 && zero < 3 {
        return;
    }
    let div = |v: &mut u64| *v = v.div_ceil(dp);
    if zero == 0 {
        // PyTorch DDP's flat buckets: a second gradient-sized buffer for the whole run
        st.ddp_bucket_alloc = st.grad_alloc;
        return;
    }
    div(&mut st.optimizer_bytes);
    div(&mut st.optimizer_alloc);
    div(&mut st.optimizer_step_temp);
    if zero >= 2 {
        div(&mut st.grad_bytes);
        div(&mut st.grad_alloc);
    }
    if zero >= 3 {
        div(&mut st.param_bytes);
        div(&mut st.param_alloc);
        st.param_alloc += 2 * gathered_block_bytes;
    }
}
