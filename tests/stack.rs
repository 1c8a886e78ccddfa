//! The training-stack rules (loss, optimizer in backward, paged optimizers, bitsandbytes' 4-bit
//! matmul, adapter dtype) and the caching-allocator replay, each against what the rule says.

mod common;

use vramscope::estimate::scenario::AllocConf;
use vramscope::estimate::{
    BaseQuant, Bnb, Checkpointing, Framework, Loss, Optimizer, Scenario, estimate, estimate_reserved,
    timeline,
};
use vramscope::model::preset::builtin;
use vramscope::units::Precision;

const GIB: f64 = 1073741824.0;

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
    // litgpt's chunked cross-entropy runs on the fp32 logits Fabric returns, which the training
    // loop holds through backward: the fp32 log-softmax and the fp32 logits
    let mut native = hf.clone();
    native.stack.loss = Loss::ChunkedNative { positions: 128 };
    let n = estimate(&native).unwrap();
    assert!(
        n.activations.abs_diff(h.activations + logits * 4) < 64 * 1024,
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
fn a_chunked_head_sums_one_weight_gradient_per_chunk_before_any_reaches_grad() {
    // Llama-3.2-1B (tied embeddings), bf16, full fine-tuning, optimizer in backward
    let mut sc = llama("llama-3.2-1b");
    sc.seq = 512;
    sc.stack.loss = Loss::Chunked { chunks: 8 };
    sc.stack.optimizer_in_backward = true;
    let t = sc.model.transformer().unwrap();
    let (v, h) = (t.vocab_size, t.hidden_size);
    let chunk = sc.batch * sc.seq / 8;
    let what = "LM head backward: a chunk's weight gradient summed";
    let tl = timeline(&sc).unwrap();
    let sum = tl.events.iter().find(|e| e.op == what).unwrap_or_else(|| panic!("no {what:?}"));
    // the first chunk's gradient, the second's and their sum; six chunks' logits gradients wait,
    // two chunks' input gradients wait for the split's backward; nothing is in `.grad`
    assert_eq!(sum.alive.temporaries, 3 * v * h * 2 + 6 * chunk * v * 2 + 2 * chunk * h * 2);
    assert_eq!(sum.alive.gradients, 0);
    // at this size it is the step's peak, the same moment without an optimizer in backward
    assert_eq!(tl.estimate.peak.what, what);
    sc.stack.optimizer_in_backward = false;
    let plain = timeline(&sc).unwrap();
    let same = plain.events.iter().find(|e| e.op == what).map(|e| e.alive);
    assert_eq!(same, Some(sum.alive));
    // transformers' loss runs the head once; a frozen head (LoRA) makes no weight gradient
    let mut hf = sc.clone();
    hf.stack.loss = Loss::Hf;
    let mut lora = sc.clone();
    lora.lora = Some("8".parse().unwrap_or_else(|e| panic!("{e}")));
    for other in [&hf, &lora] {
        assert!(!timeline(other).unwrap().events.iter().any(|e| e.op == what));
    }
}

#[test]
fn paged_optimizer_states_leave_the_allocator_and_the_total_the_card_must_hold() {
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
    assert_eq!(paged.total, paged.peak_allocated + paged.overhead);
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
        assert_eq!(e.total, e.peak_allocated + e.overhead);
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

#[test]
fn accumulated_gradients_are_alive_from_the_start_and_each_new_one_is_a_transient() {
    let mut sc = llama("llama-3.2-1b");
    sc.checkpointing = Checkpointing::None;
    let one = estimate(&sc).unwrap();
    let tl1 = timeline(&sc).unwrap();
    for ga in [2, 8] {
        let mut acc = sc.clone();
        acc.stack.grad_accum = ga;
        let e = estimate(&acc).unwrap();
        let tl = timeline(&acc).unwrap();
        // the same bytes of every category, but every gradient is alive at the start of forward
        assert_eq!(
            (e.parameters, e.gradients, e.activations),
            (one.parameters, one.gradients, one.activations)
        );
        let first = tl.events[0].alive;
        assert!(first.gradients >= e.gradients, "{} < {}", first.gradients, e.gradients);
        assert_eq!(tl1.events[0].alive.gradients, 0);
        assert_eq!(tl.persistent_gradients, first.gradients);
        // backward never grows them: the maximum of gradients is reached at the first event
        assert!(tl.events.iter().all(|ev| ev.alive.gradients <= first.gradients));
        // so the peak holds all of them next to the saved activations: more than without
        // accumulation, by less than all the gradients (backward had made some there)
        assert!(e.peak_allocated > one.peak_allocated);
        assert!(e.peak_allocated <= one.peak_allocated + e.gradients + e.gradients / 4);
        // set_to_none after the last micro-batch frees them
        assert_eq!(tl.events.last().unwrap().alive.gradients, 0);
        assert!(acc.stack.describe().contains(&format!("gradient accumulation {ga}")));
    }
    // zero_grad(set_to_none=False) keeps them between steps: the same peak as accumulating
    let mut keep = sc.clone();
    keep.stack.keep_grads = true;
    let mut acc = sc.clone();
    acc.stack.grad_accum = 4;
    assert_eq!(estimate(&keep).unwrap().peak_allocated, estimate(&acc).unwrap().peak_allocated);
    let tl = timeline(&keep).unwrap();
    assert_eq!(tl.events.last().unwrap().alive.gradients, tl.events[0].alive.gradients);
    // the replay makes them in the first backward, then keeps them: it reserves at least the peak
    let (e, r) = estimate_reserved(&keep, None).unwrap();
    assert!(r.peak_reserved >= e.peak_allocated);
    assert_eq!(r.ooms, 0);
}

#[test]
fn accumulation_with_an_optimizer_in_backward_is_refused() {
    let mut sc = llama("llama-3.2-1b");
    sc.stack.optimizer_in_backward = true;
    sc.stack.grad_accum = 4;
    let err = estimate(&sc).unwrap_err().to_string();
    assert!(err.contains("--grad-accum") && err.contains("--optimizer-in-backward"), "{err}");
    // optimizer in backward frees each gradient: keeping them is refused too
    sc.stack.grad_accum = 1;
    sc.stack.keep_grads = true;
    assert!(estimate(&sc).unwrap_err().to_string().contains("--keep-grads"));
    // and a compiled loss is no option of Liger's fused kernel
    let mut f = llama("llama-3.2-1b");
    f.stack.loss = Loss::FusedLinearCe;
    f.stack.compiled_loss = true;
    assert!(estimate(&f).unwrap_err().to_string().contains("--compile-loss"));
}

#[test]
fn a_compiled_chunked_loss_keeps_the_logits_not_the_fp32_log_softmax() {
    let mut sc = llama("llama-3.2-1b");
    sc.checkpointing = Checkpointing::Full;
    sc.lora = Some("8".parse().unwrap_or_else(|e| panic!("{e}")));
    sc.stack = Framework::Torchtune.stack();
    let eager = estimate(&sc).unwrap();
    sc.stack.compiled_loss = true;
    let compiled = estimate(&sc).unwrap();
    let t = sc.model.transformer().unwrap();
    let tokens = sc.batch * sc.seq;
    let (v, kept) = (t.vocab_size, |e: &vramscope::estimate::Estimate| {
        e.activation_breakdown.get(vramscope::estimate::saved::Cat::HeadLoss)
    });
    // fp32 log-softmax (4 B a logit) becomes the bf16 logits (2 B) and two fp32 numbers a row
    assert_eq!(kept(&eager) - kept(&compiled), tokens * v * 4 - tokens * v * 2 - 2 * tokens * 4);
    assert!(compiled.peak_allocated < eager.peak_allocated);
    assert!(sc.stack.describe().contains("compiled loss"));
}

/// The temporaries of the step's event `what`.
fn temp(sc: &Scenario, what: &str) -> u64 {
    let tl = timeline(sc).unwrap();
    tl.events.iter().find(|e| e.op == what).map(|e| e.alive.temporaries).unwrap()
}

#[test]
fn matmul4bit_dequantizes_a_weight_for_each_backward_matmul() {
    let mut lora = llama("llama-3.2-1b");
    lora.lora = Some("8:q,v".parse().unwrap_or_else(|e| panic!("{e}")));
    let mut q = lora.clone();
    q.base_quant = BaseQuant::Nf4;
    let t = lora.model.transformer().unwrap();
    // one MLP projection's weight (inter × hidden, bf16) besides the gradients of the MLP
    let mlp = "last block MLP backward";
    assert_eq!(temp(&q, mlp), temp(&lora, mlp) + t.intermediate_size * t.hidden_size * 2);
    // the attention's widest projection (q or o: heads·head_dim × hidden)
    let attn = "last block attention backward";
    assert_eq!(temp(&q, attn), temp(&lora, attn) + t.q_width() * t.hidden_size * 2);
    // torchao's linear_nf4 (torchtune) dequantizes the same way (`weight.to(input.dtype)`)
    let (mut tl, mut tq) = (lora.clone(), q.clone());
    tl.stack.framework = Some(Framework::Torchtune);
    tq.stack.framework = Some(Framework::Torchtune);
    assert_eq!(temp(&tq, mlp), temp(&tl, mlp) + t.intermediate_size * t.hidden_size * 2);
}

#[test]
fn weights_quantized_from_fp16_dequantize_to_fp16_and_cast_to_bf16() {
    // bitsandbytes before 0.43 (`Params4bit.cuda`: `.half()`) and Lightning's plugin quantize from
    // fp16: `dequantize_4bit` returns the fp16 weight and `.to(A.dtype)` makes its bf16 copy
    let mut lora = llama("llama-3.2-1b");
    lora.lora = Some("8:q,v".parse().unwrap_or_else(|e| panic!("{e}")));
    let mut q = lora.clone();
    q.base_quant = BaseQuant::Nf4;
    let mut old = q.clone();
    old.stack.bnb = Bnb::Current.with_release(true);
    assert_eq!(old.stack.bnb, Bnb::Before0_43);
    let t = lora.model.transformer().unwrap();
    let mlp = "last block MLP backward";
    let w = t.intermediate_size * t.hidden_size;
    assert_eq!(temp(&old, mlp), temp(&q, mlp) + 2 * w);
    // under fp16 compute the cast is a no-op: one copy, as from the model's own dtype
    let (mut q16, mut old16) = (q.clone(), old.clone());
    q16.precision = Precision::Fp16;
    old16.precision = Precision::Fp16;
    assert_eq!(temp(&old16, mlp), temp(&q16, mlp));
    // Lightning's plugin keeps the fp16 rule whatever release is named
    assert_eq!(Bnb::Lightning.with_release(false), Bnb::Lightning);
    assert!(vramscope::estimate::bnb_release_before_0_43("0.41.3").unwrap());
    assert!(!vramscope::estimate::bnb_release_before_0_43("0.45").unwrap());
    assert!(vramscope::estimate::bnb_release_before_0_43("new").unwrap_err().contains("--bitsandbytes"));
}

#[test]
fn lightnings_plugin_quantizes_the_lm_head_and_its_matmul_keeps_the_input() {
    let mut hf = llama("llama-2-7b");
    hf.seq = 512;
    hf.batch = 1;
    hf.lora = Some("8:q,v".parse().unwrap_or_else(|e| panic!("{e}")));
    hf.base_quant = BaseQuant::Nf4NoDq;
    let mut lit = hf.clone();
    lit.stack.bnb = Bnb::Lightning;
    let t = hf.model.transformer().unwrap();
    let head = t.vocab_size * t.hidden_size;
    let (e_hf, e_lit) = (estimate(&hf).unwrap(), estimate(&lit).unwrap());
    // the head in NF4 without double quantization (4 bits + an fp32 absmax per 64) for bf16
    assert_eq!(e_hf.parameters - e_lit.parameters, 2 * head - (head / 2 + 4 * head / 64));
    // MatMul4Bit keeps the final norm's output (its input requires grad)
    assert_eq!(e_lit.activations - e_hf.activations, hf.seq * t.hidden_size * 2);
    // the head's forward dequantizes its weight: fp16, then its bf16 cast
    let tl = timeline(&lit).unwrap();
    let at_head = tl.events.iter().find(|e| e.op == "final norm, LM head and loss").unwrap();
    assert!(at_head.alive.temporaries >= 2 * head * 2, "{}", at_head.alive.temporaries);
}

#[test]
fn bitsandbytes_inference_dequantizes_over_the_prompt_but_not_one_token_decodes() {
    // litgpt generate --quantize bnb.nf4: every Linear quantized at load, the head included
    let mut sc = llama("llama-2-7b");
    sc.mode = vramscope::estimate::Mode::Infer;
    sc.seq = 6;
    sc.batch = 1;
    sc.new_tokens = 50;
    sc.stack = Framework::Litgpt.stack();
    sc.base_quant = BaseQuant::Nf4NoDq;
    sc.validate().unwrap_or_else(|e| panic!("{e}"));
    let t = sc.model.transformer().unwrap().clone();
    let head = t.vocab_size * t.hidden_size;
    let tl = timeline(&sc).unwrap();
    let prefill = tl.events.iter().find(|e| e.op.starts_with("prefill: the 4-bit LM head")).unwrap();
    assert!(prefill.alive.temporaries >= 4 * head, "{}", prefill.alive.temporaries);
    let decode = tl.events.iter().find(|e| e.op.starts_with("decode (last step): logits")).unwrap();
    assert!(decode.alive.temporaries < head, "one row takes gemv_4bit: {}", decode.alive.temporaries);
    // two rows dequantize in every decode step too
    let mut two = sc.clone();
    two.batch = 2;
    let tl = timeline(&two).unwrap();
    let decode = tl.events.iter().find(|e| e.op.starts_with("decode (last step): logits")).unwrap();
    assert!(decode.alive.temporaries >= 4 * head);
    // the peak is the prompt's head: weights + the fp16 head and its bf16 cast
    let e = estimate(&sc).unwrap();
    assert_eq!(tl.estimate.parameters, e.parameters);
    assert!(e.peak_allocated >= e.parameters + 4 * head);
    // transformers (bitsandbytes 0.43+) keeps the head in bf16 and dequantizes to bf16 only
    let mut hf = sc.clone();
    hf.stack = Default::default();
    let e_hf = estimate(&hf).unwrap();
    assert!(e_hf.parameters > e.parameters);
    assert!(e_hf.peak_allocated - e_hf.parameters < 4 * head);
    // a one-token scoring pass is one row: gemv_4bit, nothing dequantized
    let mut one = sc.clone();
    one.seq = 1;
    one.new_tokens = 0;
    let e1 = estimate(&one).unwrap();
    assert!(e1.peak_allocated - e1.parameters < head, "{}", e1.peak_allocated - e1.parameters);
    // in training, a base format needs a LoRA run
    let mut full = sc.clone();
    full.mode = vramscope::estimate::Mode::Train;
    assert!(full.validate().is_err());
}

#[test]
fn autocast_caches_the_casts_of_trained_weights_only() {
    // full checkpointing under autocast: the half copies of the weights cast in the checkpointed
    // forwards stay in autocast's cache until the forward ends — for weights that require grad
    let at_end = |lora: bool| {
        let mut sc = llama("llama-3.2-1b");
        sc.precision = Precision::Bf16Amp;
        sc.checkpointing = Checkpointing::Full;
        if lora {
            sc.lora = Some("8:q,v".parse().unwrap_or_else(|e| panic!("{e}")));
        }
        let tl = timeline(&sc).unwrap();
        let find = |op: &str| {
            tl.events
                .iter()
                .find(|e| e.op == op)
                .map(|e| e.alive.activations)
                .unwrap_or_else(|| panic!("{op}"))
        };
        find("end of forward (autocast weight cache)") as i64 - tl.estimate.activations as i64
    };
    // full fine-tuning: about one bf16 copy of every block weight (16 blocks x 60.8 M params)
    let cached = at_end(false) as f64 / (16.0 * 60_821_504.0 * 2.0);
    assert!((0.95..1.05).contains(&cached), "{cached}");
    // LoRA: the frozen base weights are no leaves requiring grad, so nothing is cached
    assert!(at_end(true) <= 0, "{}", at_end(true));
}

/// litgpt's LoRA on 2 GPUs (Lightning's FSDP1 with the adapters in each block's flat parameter,
/// `no_backward_sync` over 16 micro-batches): every block's flat gradient is one tensor that
/// stays through the accumulation.
fn litgpt_fsdp_lora(batch: u64) -> Scenario {
    let mut sc = llama("llama-2-7b");
    sc.seq = 512;
    sc.batch = batch;
    sc.lora = Some("8:q,v".parse().unwrap());
    sc.checkpointing = Checkpointing::Full;
    sc.stack = Framework::Litgpt.stack();
    sc.stack.grad_accum = 16;
    sc.parallel.dp = 2;
    sc.parallel.fsdp = Some(vramscope::estimate::FsdpMode::FullShard);
    sc
}

#[test]
fn fsdp1_flat_gradients_leave_the_cache_no_larger_for_a_smaller_micro_batch() {
    let card = 24 * (1u64 << 30);
    let mut last = 0;
    for batch in 1..=6 {
        let (e, r) = estimate_reserved(&litgpt_fsdp_lora(batch), Some(card)).unwrap();
        let over = r.peak_reserved - r.peak_allocated;
        println!(
            "mb {batch}: allocated {:.2} GiB, reserved {:.2} GiB (+{:.2}), {} segments",
            r.peak_allocated as f64 / GIB,
            r.peak_reserved as f64 / GIB,
            over as f64 / GIB,
            r.segments
        );
        // 13 GB of flat gradients, one 405 MB tensor a block, split no recompute's blocks: what
        // the cache holds over the peak is of the order of the loss's logits (whose free block
        // the first flat gradients take in the first micro-batch), not the 3.5 GB it was
        assert!(over < e.peak_allocated / 10, "mb {batch}: {over} reserved over {}", e.peak_allocated);
        assert!(r.peak_reserved >= last, "mb {batch}: reserved {} after {last}", r.peak_reserved);
        last = r.peak_reserved;
    }
}

/// torchtune's full fine-tune of Llama-3.1-8B ran on a 24 GB RTX 4090 (published row 26a: 18.9 GiB
/// peak allocated) with 15 GiB of paged 8-bit AdamW states: unified memory the driver pages to
/// host memory, so the states never stop the step from fitting; without paging it does not fit.
#[test]
fn a_paged_optimizer_fits_where_its_states_would_not() {
    let mut sc = common::torchtune_8b(false, false);
    assert_eq!((sc.optimizer, sc.stack.optimizer_in_backward), (Optimizer::PagedAdamw8bit, true));
    let card = vramscope::gpu::find("rtx-4090").unwrap().capacity();
    let v = vramscope::fit::verdict(&sc, card).unwrap();
    assert!(v.fits, "{} of {card}", v.estimate.total);
    assert!(v.estimate.total + v.estimate.paged_optimizer_states > card);
    assert_eq!(v.headroom(), card as i64 - v.estimate.total as i64);
    // the "Why" row says where the states are, in both languages
    for (lang, words) in
        [(vramscope::i18n::Lang::En, "unified memory"), (vramscope::i18n::Lang::ZhCn, "统一内存")]
    {
        let rows = vramscope::explain::explain_in(&sc, &v.estimate, lang);
        let row = rows.iter().find(|r| r.component == vramscope::explain::Component::OptimizerStates);
        assert!(row.is_some_and(|r| r.substituted.contains(words)), "{lang:?}");
    }
    sc.optimizer = Optimizer::Adamw8bit;
    assert!(!vramscope::fit::fits(&sc, card));
}

#[test]
fn the_hf_trainer_keeps_embedding_states_of_an_8bit_optimizer_in_32_bit() {
    // transformers' Trainer registers bitsandbytes' `optim_bits: 32` override for every
    // nn.Embedding when it builds an 8-bit bitsandbytes optimizer; torchtune and a plain
    // bnb.optim.AdamW8bit do not
    let mut sc = llama("llama-3.1-8b");
    sc.optimizer = Optimizer::Adamw8bit;
    let plain = estimate(&sc).unwrap();
    let t = sc.model.transformer().unwrap();
    let n = t.vocab_size * t.hidden_size;
    let eight_bit = 2 * (n + 4 * n.div_ceil(2048));
    for (f, more) in [(Framework::HfTrainer, true), (Framework::Axolotl, true), (Framework::Torchtune, false)]
    {
        let mut s = sc.clone();
        s.stack.framework = Some(f);
        let e = estimate(&s).unwrap();
        let want = if more { 8 * n - eight_bit } else { 0 };
        assert_eq!(e.optimizer_states - plain.optimizer_states, want, "{f:?}");
    }
    // about +2.9 GiB on Llama-3.1-8B (128256 x 4096 embedding, untied head stays 8-bit)
    let extra = (8 * n - eight_bit) as f64 / GIB;
    assert!((2.8..3.0).contains(&extra), "{extra}");
    // the paged variant: the fp32 states are paged too
    sc.optimizer = Optimizer::PagedAdamw8bit;
    sc.stack.framework = Some(Framework::HfTrainer);
    let paged = estimate(&sc).unwrap();
    assert_eq!(paged.paged_optimizer_states, paged.optimizer_states);
    assert_eq!(paged.optimizer_states - plain.optimizer_states, 8 * n - eight_bit);
    // "hf" names the Trainer
    assert_eq!("hf".parse::<Framework>().unwrap(), Framework::HfTrainer);
}

#[test]
fn deepspeed_zero_buckets_are_their_own_component_when_deepspeed_allocates_them() {
    // ZeRO-2 (stage_1_and_2.py): two reduce_bucket_size buffers in the parameters' dtype from the
    // start of each backward to its end; ZeRO-3 (stage3.py): one, for the whole run
    let mut sc = llama("llama-3.1-8b");
    sc.precision = Precision::Bf16Mixed;
    sc.optimizer = Optimizer::AdamwFused;
    sc.parallel.dp = 8;
    sc.parallel.zero = 2;
    let z2 = timeline(&sc).unwrap();
    let bucket = 500_000_000u64 * 2;
    assert_eq!(z2.estimate.zero_buckets, 2 * bucket);
    for e in &z2.events {
        let want = if e.phase == vramscope::estimate::Phase::Backward { 2 * bucket } else { 0 };
        assert_eq!(e.alive.zero_buckets, want, "{} {}", e.phase.label(), e.op);
    }
    // the backward peak carries them
    assert_eq!(z2.estimate.peak.alive.zero_buckets, 2 * bucket, "{}", z2.estimate.peak.what);
    sc.parallel.zero = 3;
    let z3 = timeline(&sc).unwrap();
    assert!(z3.events.iter().all(|e| e.alive.zero_buckets == bucket));
    // the replay allocates them: its reserved bytes cover the peak with them
    let (e, _) = estimate_reserved(&sc, None).unwrap();
    assert!(e.reserved.unwrap() >= e.peak_allocated && e.peak.alive.zero_buckets == bucket);
    // FSDP and Megatron's distributed optimizer have no such buckets
    sc.parallel.fsdp = Some(vramscope::estimate::FsdpMode::FullShard);
    assert_eq!(estimate(&sc).unwrap().zero_buckets, 0);
    sc.parallel.fsdp = None;
    sc.parallel.zero = 1;
    sc.stack.framework = Some(Framework::Megatron);
    assert_eq!(estimate(&sc).unwrap().zero_buckets, 0);
}
