use super::*;
use crate::model::preset::builtin;

fn gpu(id: &str) -> Gpu {
    crate::gpu::find(id).unwrap()
}

#[test]
fn the_kv_page_is_vllm_s() {
    // Llama-3.1-8B: 32 layers, 8 KV heads of 128, bf16: 16 tokens x 8 x 256 x 2 B per layer
    let m = builtin("llama-3.1-8b").unwrap();
    let t = m.transformer().unwrap();
    let l = kv::Layout::of(t, 1, 1, 16, 2);
    assert_eq!(l.page_bytes, 16 * 8 * 256 * 2);
    assert_eq!(l.bytes_per_token(), 32 * 8 * 256 * 2);
    // TP 2 halves the heads; TP 16 replicates one head per rank
    assert_eq!(kv::Layout::of(t, 2, 1, 16, 2).page_bytes, 16 * 4 * 256 * 2);
    assert_eq!(kv::Layout::of(t, 16, 1, 16, 2).page_bytes, 16 * 256 * 2);
    // 10 GiB of pool: blocks, tokens, concurrency and the longest context
    let c = kv::Capacity::of(&l, 10 << 30, 8192, 8192);
    let block = l.page_bytes * 32;
    assert_eq!(c.blocks, (10u64 << 30) / block);
    assert_eq!(c.tokens, c.blocks * 16);
    assert!((c.max_concurrency - c.blocks as f64 / 512.0).abs() < 1e-9);
    assert_eq!(c.max_model_len_that_fits, 8192, "capped at the asked length");
    let c = kv::Capacity::of(&l, 10 << 30, 1 << 20, 8192);
    assert_eq!(c.max_model_len_that_fits, c.blocks * 16, "every block for one request");
}

#[test]
fn sliding_windows_keep_window_plus_batch() {
    // Mistral-7B v0.1: every layer slides over 4096 tokens
    let m = builtin("mistral-7b").unwrap();
    let t = m.transformer().unwrap();
    let l = kv::Layout::of(t, 1, 1, 16, 2);
    assert!(l.has_sliding && l.full_layers == 0);
    let c = kv::Capacity::of(&l, 20 << 30, 32768, 2048);
    // (4095 + 2048) / 16 rounded up, plus one block
    let per = (4095u64 + 2048).div_ceil(16) + 1;
    assert!((c.max_concurrency - c.blocks as f64 / per as f64).abs() < 1e-9);
    assert_eq!(c.max_model_len_that_fits, 32768, "a window fits any length");
}

#[test]
fn llama_3_8b_on_an_h100_as_vllm_logged_it() {
    // vLLM PR #10511 (published.md row 31): total 79.22 GiB, utilisation 0.9, weights 14.96 GiB
    let m = builtin("llama-3.1-8b").unwrap();
    let s =
        serve(&m, &gpu("h100-80gb"), &ServeConfig { max_model_len: Some(8192), ..Default::default() }, None)
            .unwrap();
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    assert!((gib(s.bytes.cuda_total) - 79.22).abs() < 0.005);
    assert!((gib(s.bytes.weights) - 14.96).abs() / 14.96 < 0.01, "{}", gib(s.bytes.weights));
    assert_eq!(
        s.bytes.kv_cache,
        s.bytes.budget - s.bytes.weights - s.bytes.activation_peak - s.bytes.non_torch
    );
    assert_eq!(s.kv_tokens, s.kv_blocks * 16);
    assert!(s.fits);
    assert_eq!(s.settings.max_num_batched_tokens, 8192);
}

#[test]
fn bad_settings_are_refused() {
    let m = builtin("llama-3.1-8b").unwrap();
    let g = gpu("h100-80gb");
    let run = |c: ServeConfig| serve(&m, &g, &c, None).map(|_| ()).unwrap_err().to_string();
    assert!(run(ServeConfig { gpu_memory_utilization: 1.2, ..Default::default() }).contains("(0, 1]"));
    assert!(run(ServeConfig { gpu_memory_utilization: 0.0, ..Default::default() }).contains("(0, 1]"));
    assert!(run(ServeConfig { block_size: 24, ..Default::default() }).contains("power of two"));
    assert!(run(ServeConfig { tp: 3, ..Default::default() }).contains("--tp 3"));
    assert!(run(ServeConfig { max_model_len: Some(200_000), ..Default::default() }).contains("allow-long"));
    let ok = serve(
        &m,
        &g,
        &ServeConfig { max_model_len: Some(200_000), allow_long_max_model_len: true, ..Default::default() },
        None,
    );
    assert!(ok.is_ok());
}

#[test]
fn more_kv_with_tp_fp8_and_a_shorter_context() {
    let m = builtin("llama-3.1-8b").unwrap();
    let g = gpu("h100-80gb");
    let base = serve(&m, &g, &ServeConfig::default(), None).unwrap();
    let tp2 = serve(&m, &g, &ServeConfig { tp: 2, ..Default::default() }, None).unwrap();
    let fp8 = serve(&m, &g, &ServeConfig { kv_dtype: KvDtype::Fp8, ..Default::default() }, None).unwrap();
    assert!(tp2.kv_tokens > 2 * base.kv_tokens, "half the weights and half the heads per rank");
    assert!(fp8.kv_tokens >= 2 * base.kv_tokens - 16);
    assert_eq!(base.settings.max_model_len, 131072, "the config's context by default");
    let short = serve(&m, &g, &ServeConfig { context: Some(8192), ..Default::default() }, None).unwrap();
    assert!(short.concurrency_at_context.unwrap() > 15.0 * short.max_concurrency);
    // a card too small for the weights: no KV cache, the server does not start
    let big = builtin("llama-3.1-70b").unwrap();
    let s = serve(&big, &g, &ServeConfig::default(), None).unwrap();
    assert!(!s.fits && s.kv_cache_is_empty());
}

#[test]
fn each_release_class_profiles_its_own_sampler() {
    // the classes as each release's topk_topp_sampler.py / envs.py default them
    let of = |v: &str| VllmRelease::of_version(v).unwrap();
    assert_eq!(of("0.11.0"), VllmRelease::Upto0_11);
    assert_eq!(of("v0.8.5"), VllmRelease::Upto0_11);
    assert_eq!(of("0.12.0"), VllmRelease::From0_12);
    assert_eq!(of("0.16"), VllmRelease::From0_12);
    assert_eq!(of("0.19.1"), VllmRelease::From0_17);
    assert_eq!(of("0.20.2"), VllmRelease::From0_17);
    assert_eq!(of("0.21.0"), VllmRelease::From0_21);
    assert_eq!(of("1.0"), VllmRelease::From0_21);
    assert!(VllmRelease::of_version("0.6.3").unwrap_err().contains("V0 engine"));
    assert!(VllmRelease::of_version("latest").unwrap_err().contains("not a version"));
    assert_eq!(VllmRelease::Upto0_11.sampler(1024), SamplerPath::FlashInfer);
    assert_eq!(VllmRelease::From0_12.sampler(1024), SamplerPath::Sort);
    assert_eq!(VllmRelease::From0_17.sampler(1024), SamplerPath::Triton);
    // the Triton kernel runs from 8 rows (`logits.shape[0] >= 8`): below, the sort
    assert_eq!(VllmRelease::From0_17.sampler(7), SamplerPath::Sort);
    assert_eq!(VllmRelease::From0_21.sampler(1024), SamplerPath::FlashInfer);
    assert!(VllmRelease::From0_21.subtracts_cudagraphs() && !VllmRelease::From0_17.subtracts_cudagraphs());
}

#[test]
fn the_sort_sampler_holds_38_bytes_an_entry() {
    use crate::units::DType;
    // bf16 logits 2 + fp32 copy 4 + sorted values 4 + int64 indices 8 + segmented_sort_pairs'
    // int64 indices 8 + CUB's alternate fp32 keys 4 and int64 values 8
    assert_eq!(profile::sampler_bytes_per_entry(SamplerPath::Sort, DType::Bf16), 38);
    // an fp32 model: `logits.to(torch.float32)` is the same tensor
    assert_eq!(profile::sampler_bytes_per_entry(SamplerPath::Sort, DType::F32), 36);
    assert_eq!(profile::sampler_bytes_per_entry(SamplerPath::Triton, DType::Bf16), 14);
    assert_eq!(profile::sampler_bytes_per_entry(SamplerPath::FlashInfer, DType::Bf16), 14);
    // Llama-3.1-8B at 16,000 tokens on an H100 with 0.12-0.16's sort sampler: 4.76 GiB printed
    // (llm-d-planner docs/empirical-vllm-memory-results.md); 0.19's Triton path: 1.89 GiB
    let m = builtin("llama-3.1-8b").unwrap();
    let run = |release| {
        let cfg = ServeConfig { max_model_len: Some(16000), release, ..Default::default() };
        serve(&m, &gpu("h100-80gb"), &cfg, None).unwrap()
    };
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let old = run(VllmRelease::From0_12);
    assert!((gib(old.bytes.activation_peak) / 4.76 - 1.0).abs() < 0.02, "{}", gib(old.bytes.activation_peak));
    assert_eq!(old.settings.sampler, SamplerPath::Sort);
    assert!(old.settings.args().windows(2).any(|w| w == ["--vllm-version", "0.12"]));
    let new = run(VllmRelease::From0_17);
    assert!((gib(new.bytes.activation_peak) / 1.89 - 1.0).abs() < 0.07, "{}", gib(new.bytes.activation_peak));
    assert!(!new.settings.args().iter().any(|a| a == "--vllm-version" || a == "--sampler"));
}

#[test]
fn a_server_that_does_not_start_says_why_on_one_line() {
    let m = builtin("llama-3.1-70b").unwrap();
    let s = serve(&m, &gpu("rtx-4090"), &ServeConfig::default(), None).unwrap();
    let r = s.refusal().unwrap();
    assert!(r.contains("nothing is left for the KV cache") && !r.contains('\n'), "{r}");
    let m = builtin("llama-3.1-8b").unwrap();
    let s = serve(&m, &gpu("rtx-4090"), &ServeConfig::default(), None).unwrap();
    let r = s.refusal().unwrap();
    assert!(r.contains("one 131,072-token request") && r.contains("--max-model-len "), "{r}");
    let s = serve(&m, &gpu("h100-80gb"), &ServeConfig::default(), None).unwrap();
    assert_eq!(s.refusal(), None);
}
