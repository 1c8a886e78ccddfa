//! The training-stack rules (loss, optimizer in backward, paged optimizers, bitsandbytes' 4-bit
//! matmul, adapter dtype) and the caching-allocator replay, each against what the rule says.

use vramscope::estimate::scenario::AllocConf;
use vramscope::estimate::{
    BaseQuant, Checkpointing, Framework, Loss, Optimizer, Scenario, estimate, estimate_reserved, timeline,
};
use vramscope::model::preset::builtin;
use vramscope::units::Precision;

fn llama(name: &str) -> Scenario {
    let mut sc = Scenario::new(builtin(name).unwrap_or_else(|| panic!("{name}")));
    sc.precision = Precision::Bf16;
    sc.seq = 1024;
    sc.batch = 2;
    sc
}

#[test]
fn matmul4bit_keeps_its_input_and_torchao_nf4_does_not() {
    let mut lora = llama("llama-3.2-1b");
    lora.lora = Some("8:q,v".parse().unwrap_or_else(|e| panic!("{e}")));
    lora.stack.adapter_dtype = vramscope::estimate::AdapterDtype::Model;
    let mut qlora = lora.clone();
    qlora.base_quant = BaseQuant::Nf4;
    let (a, q) = (estimate(&lora).unwrap(), estimate(&qlora).unwrap());
    let t = lora.model.transformer().unwrap();
    let tokens = lora.batch * lora.seq;
    // every 4-bit projection's input is kept: at least the attention input (shared by q, k, v),
    // the attention output (o_proj), the MLP input (gate, up) and the product (down) per block
    let per_block = tokens * (2 * t.hidden_size + t.q_width() + t.intermediate_size) * 2;
    assert!(
        q.activations >= a.activations + t.num_layers * per_block / 2,
        "QLoRA {} vs LoRA {} (+{} expected at least)",
        q.activations,
        a.activations,
        t.num_layers * per_block / 2
    );
    // torchtune's QLoRA (torchao NF4, `linear_nf4`) keeps only the weight
    let mut tt = qlora.clone();
    tt.stack = Framework::Torchtune.stack();
    let mut tt_lora = lora.clone();
    tt_lora.stack = Framework::Torchtune.stack();
    assert_eq!(estimate(&tt).unwrap().activations, estimate(&tt_lora).unwrap().activations);
    // NF4 without double quantization is larger: an fp32 absmax per 64 weights, not 8-bit
    let mut nodq = qlora.clone();
    nodq.base_quant = BaseQuant::Nf4NoDq;
    assert!(estimate(&nodq).unwrap().parameters > q.parameters);
}

#[test]
fn a_bnb_compute_dtype_of_fp32_keeps_fp32_copies() {
    let mut sc = llama("llama-3.2-1b");
    sc.lora = Some("8".parse().unwrap_or_else(|e| panic!("{e}")));
    sc.base_quant = BaseQuant::Nf4;
    let bf16 = estimate(&sc).unwrap().activations;
    sc.stack.bnb_compute_dtype = Some(vramscope::units::DType::F32);
    assert!(estimate(&sc).unwrap().activations > bf16);
    sc.base_quant = BaseQuant::None;
    assert!(sc.validate().is_err(), "a compute dtype without a 4-bit base is refused");
}

#[test]
fn chunked_losses_lower_the_peak_and_keep_what_their_backward_needs() {
    // LoRA, so that the loss (not the optimizer step) sets the peak
    let mut hf = llama("llama-3.1-8b");
    hf.checkpointing = Checkpointing::Full;
    hf.lora = Some("8".parse().unwrap_or_else(|e| panic!("{e}")));
    let mut chunked = hf.clone();
    chunked.stack.loss = Loss::Chunked { chunks: 8 };
    let (h, c) = (estimate(&hf).unwrap(), estimate(&chunked).unwrap());
    let t = hf.model.transformer().unwrap();
    let logits = hf.batch * hf.seq * t.vocab_size;
    // both keep the fp32 log-softmax output; the chunked loss has one total_weight a chunk and
    // unshifted labels
    assert!(c.activations.abs_diff(h.activations) < 64 * 1024, "{} vs {}", c.activations, h.activations);
    // transformers' loss backward holds two fp32 logits-sized gradients; torchtune's one chunk's
    assert!(c.peak_allocated + logits * 4 < h.peak_allocated, "{} vs {}", c.peak_allocated, h.peak_allocated);
    // litgpt's chunked cross-entropy keeps the log-softmax in bf16: half the fp32 bytes
    let mut native = hf.clone();
    native.stack.loss = Loss::ChunkedNative { positions: 128 };
    let n = estimate(&native).unwrap();
    assert!(
        n.activations + logits * 2 - 64 * 1024 <= h.activations,
        "{} vs {}",
        n.activations,
        h.activations
    );
    // a fused linear cross-entropy keeps no logits at all, only the input's gradient it computed
    let mut fused = hf.clone();
    fused.stack.loss = Loss::FusedLinearCe;
    let grad_input = hf.batch * hf.seq * t.hidden_size * 2;
    assert!(estimate(&fused).unwrap().activations + logits * 4 <= h.activations + grad_input);
    // the timeline still peaks where the estimate does
    for sc in [&chunked, &native, &fused] {
        let tl = timeline(sc).unwrap();
        assert_eq!(tl.peak().map(|e| e.alive.total()), Some(tl.estimate.peak_allocated));
    }
}

#[test]
fn optimizer_in_backward_never_holds_more_than_one_gradient() {
    let mut sc = llama("llama-3.2-1b");
    sc.checkpointing = Checkpointing::Full;
    let plain = estimate(&sc).unwrap();
    sc.stack.optimizer_in_backward = true;
    let tl = timeline(&sc).unwrap();
    for e in &tl.events {
        assert_eq!(e.alive.gradients, 0, "{} holds gradients", e.label());
    }
    assert_eq!(tl.peak().map(|e| e.alive.total()), Some(tl.estimate.peak_allocated));
    assert!(tl.estimate.peak_allocated < plain.peak_allocated);
    assert!(!tl.events.iter().any(|e| e.op == "optimizer step"));
}

#[test]
fn paged_optimizer_states_leave_the_allocator_but_not_nvidia_smi() {
    let mut sc = llama("llama-3.2-1b");
    sc.optimizer = Optimizer::Adamw8bit;
    let resident = estimate(&sc).unwrap();
    sc.optimizer = Optimizer::PagedAdamw8bit;
    let paged = estimate(&sc).unwrap();
    assert_eq!(paged.optimizer_states, resident.optimizer_states);
    assert_eq!(paged.paged_optimizer_states, paged.optimizer_states);
    assert_eq!(paged.peak.alive.optimizer_states, 0);
    assert!(
        paged.peak_allocated + paged.optimizer_states / 2
            < resident.peak_allocated + resident.optimizer_states
    );
    assert_eq!(paged.total, paged.peak_allocated + paged.overhead + paged.paged_optimizer_states);
}

#[test]
fn the_replay_allocates_what_the_timeline_holds_and_reserves_at_least_that() {
    for (name, ck) in [
        ("llama-3.2-1b", Checkpointing::None),
        ("llama-3.2-1b", Checkpointing::Full),
        ("qwen3-0.6b", Checkpointing::None),
    ] {
        let mut sc = llama(name);
        sc.checkpointing = ck;
        sc.overhead.workspace_bytes = 8 << 20;
        let (e, r) = estimate_reserved(&sc, None).unwrap();
        let expected = e.peak_allocated + (8 << 20);
        let err = r.peak_allocated.abs_diff(expected) as f64 / expected as f64;
        assert!(err < 0.005, "{name} {ck}: replay allocated {} vs {}", r.peak_allocated, expected);
        assert!(r.peak_reserved >= r.peak_allocated);
        assert_eq!(e.reserved, Some(r.peak_reserved));
        assert_eq!(e.total, e.peak_allocated + e.overhead + e.paged_optimizer_states);
        assert_eq!(r.ooms, 0);
        assert_eq!(r.per_event.len(), timeline(&sc).unwrap().events.len());
    }
}

#[test]
fn a_card_too_small_makes_the_replay_run_out_and_expandable_segments_reserve_less() {
    let mut sc = llama("llama-3.2-1b");
    sc.checkpointing = Checkpointing::None;
    let (e, _) = estimate_reserved(&sc, None).unwrap();
    let (_, small) = estimate_reserved(&sc, Some(e.peak_allocated / 2)).unwrap();
    assert!(small.ooms > 0);
    let (_, default) = estimate_reserved(&sc, None).unwrap();
    sc.overhead.allocator = AllocConf { expandable_segments: true, ..AllocConf::default() };
    let (_, expandable) = estimate_reserved(&sc, None).unwrap();
    assert!(
        expandable.peak_reserved <= default.peak_reserved,
        "{} vs {}",
        expandable.peak_reserved,
        default.peak_reserved
    );
}

#[test]
fn alloc_conf_parses_pytorch_syntax_and_refuses_the_rest() {
    let c: AllocConf = "expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8"
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(c.expandable_segments);
    assert_eq!(c.max_split_size_mib, Some(128));
    assert_eq!(c.garbage_collection_threshold, Some(0.8));
    for bad in
        ["expandable_segments", "max_split_size_mb:10", "garbage_collection_threshold:2", "pinned:True"]
    {
        assert!(bad.parse::<AllocConf>().is_err(), "{bad}");
    }
}
