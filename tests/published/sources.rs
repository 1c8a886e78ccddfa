//! The published rows: each source's table (the transformers docs' BERT page, litgpt's resource
//! tables, torchtune's recipes) as rows of scenarios built with the settings the source states.

use super::*;

/// Why litgpt's multi-GPU rows with a larger micro-batch read below the estimate.
const LONGEST_FIRST: &str = "the longest sample runs only in the first micro-batch, before any gradient exists; from the second on the unsharded gradients are alive with the shorter random samples, while the estimate runs every micro-batch at the longest length (its upper bound); phi-1.5's 51k-vocabulary fp32 logits make that difference its largest share";

/// stabilityai/stablelm-base-alpha-3b as litgpt builds it (GPT-NeoX, vocabulary padded to 50688).
const STABLELM: &str = "tests/data/published/stablelm-base-alpha-3b/config.json";

pub(super) fn load(m: &str) -> Scenario {
    let l = preset::load(m).unwrap_or_else(|e| panic!("{m}: {e}"));
    Scenario::new(l.model)
}

/// BERT-large for sequence classification (2 labels), HF Trainer, seq 512, eager attention, the
/// Trainer's optimizer of the time (transformers' own per-tensor AdamW, `adamw_hf`), dropout on.
/// The page was measured before PyTorch 2.0 (its 1.3 GB context predates lazy module loading),
/// when the Trainer's `model.zero_grad()` zeroed gradients in place (`set_to_none=False`), so they
/// stay allocated between steps; "1+GA4" rows accumulate over 4 micro-batches.
pub(super) fn bert(precision: Precision, batch: u64, gc: bool, optimizer: Optimizer) -> Scenario {
    let mut sc = load("tests/data/published/bert-large-uncased-seqcls/config.json");
    sc.seq = 512;
    sc.batch = batch;
    sc.precision = precision;
    sc.optimizer = optimizer;
    sc.attention = AttentionImpl::Eager;
    sc.checkpointing = if gc { Checkpointing::Full } else { Checkpointing::None };
    // row 1: the context measured on that V100; the pre-Hopper cuBLAS workspace (8 MiB)
    sc.overhead.cuda_context_bytes = 1343 << 20;
    sc.overhead.workspace_bytes = 8 << 20;
    sc.stack = Framework::HfTrainer.stack();
    sc.stack.keep_grads = true;
    // the page does not name its PyTorch; its figures date from its first version (early 2022,
    // unchanged since), before PyTorch 1.11 (March 2022): softmax's node keeps its input too
    sc.stack.torch = Torch::Before1_11;
    if batch == 1 {
        sc.stack.grad_accum = 4;
    }
    sc
}

/// litgpt `finetune/lora.py` defaults at commit 8641822 (the resource tables' version, PyTorch
/// 2.1.0): r 8 on q and v, dropout 0.05, bf16-true, the longest Alpaca sample (1304 tokens for
/// Llama 2) sets the peak.
fn litgpt(model: &str, batch: u64, nf4: bool) -> Scenario {
    litgpt_seq(model, 1304, batch, if nf4 { Some(BaseQuant::Nf4NoDq) } else { None })
}

/// The same recipe for any model and base format, `seq` the model's longest Alpaca sample (the
/// table's page: phi-1.5 1044 tokens, Llama 2 1304).
fn litgpt_seq(model: &str, seq: u64, batch: u64, quant: Option<BaseQuant>) -> Scenario {
    let mut sc = load(model);
    sc.seq = seq;
    sc.batch = batch;
    sc.precision = Precision::Bf16;
    let mut l: Lora = "8:q,v".parse().unwrap_or_else(|e| panic!("{e}"));
    l.dropout = 0.05;
    sc.lora = Some(l);
    sc.stack = Framework::Litgpt.stack();
    // litgpt 8641822 (its RMSNorm in the input dtype) under PyTorch 2.1.0
    sc.stack.model_code = ModelCode::Litgpt2023;
    sc.stack.torch = Torch::Before2_2;
    if let Some(q) = quant {
        sc.base_quant = q;
    }
    sc
}

/// The same recipe on `devices` A100s: Lightning Fabric's `FSDPStrategy(auto_wrap_policy={Block},
/// activation_checkpointing_policy={Block}, limit_all_gathers=True)` (FSDP1, `use_orig_params`,
/// the adapters inside each block's flat parameter), `no_backward_sync` over the
/// 128 / micro-batch accumulated micro-batches.
fn litgpt_fsdp(model: &str, seq: u64, batch: u64, devices: u64) -> Scenario {
    let mut sc = litgpt_seq(model, seq, batch, None);
    sc.checkpointing = Checkpointing::Full;
    sc.parallel.dp = devices;
    sc.parallel.fsdp = Some(FsdpMode::FullShard);
    sc.stack.grad_accum = (128 / batch) as u32;
    sc
}

/// litgpt `generate/base.py` defaults: the prompt "Hello, my name is" (6 Llama tokens), 50 new
/// tokens, bf16-true weights.
fn litgpt_generate(model: &str) -> Scenario {
    let mut sc = load(model);
    sc.mode = Mode::Infer;
    sc.seq = 6;
    sc.new_tokens = 50;
    sc.precision = Precision::Bf16;
    sc
}

/// litgpt `generate/base.py --quantize bnb.nf4|bnb.nf4-dq`: Lightning's bitsandbytes plugin
/// quantizes every `nn.Linear`, the LM head included, from fp16; the prompt's forward dequantizes
/// each weight (to fp16, then cast to bf16), the one-token decode steps run `gemv_4bit`.
fn litgpt_generate_nf4(model: &str, quant: BaseQuant) -> Scenario {
    let mut sc = litgpt_generate(model);
    sc.stack = Framework::Litgpt.stack();
    sc.base_quant = quant;
    sc
}

/// litgpt `generate/base.py` on a GPT-2-BPE model (phi-1.5, StableLM-Alpha; litgpt's own model
/// code): "Hello, my name is" is 5 tokens (no BOS), 50 new tokens.
fn litgpt_generate_bpe(model: &str, quant: Option<BaseQuant>) -> Scenario {
    let mut sc = litgpt_generate(model);
    sc.seq = 5;
    sc.stack = Framework::Litgpt.stack();
    if let Some(q) = quant {
        sc.base_quant = q;
    }
    sc
}

/// torchtune's Llama-3.1 distributed recipes (0.3, the README of Sep 2024) on 8 A100s: FSDP2 full
/// shard, batch as the config says, 2048 packed, activation checkpointing, compiled.
fn torchtune_8x(model: &str, batch: u64) -> Scenario {
    let mut sc = load(model);
    sc.seq = 2048;
    sc.batch = batch;
    sc.precision = Precision::Bf16;
    sc.checkpointing = Checkpointing::Full;
    sc.optimizer = Optimizer::AdamwFused;
    sc.stack = Framework::Torchtune.stack();
    sc.stack.compiled_loss = true;
    sc.parallel.dp = 8;
    sc.parallel.fsdp = Some(FsdpMode::FullShard);
    sc
}

pub(super) fn rows() -> Vec<Row> {
    [bert_rows(), litgpt_rows(), litgpt_more_rows(), litgpt_fsdp_rows(), torchtune_rows()]
        .into_iter()
        .flatten()
        .collect()
}

/// A row of the transformers docs' BERT page (nvidia-smi MiB).
fn bert_row(
    id: &'static str,
    settings: &str,
    published: f64,
    sc: Scenario,
    bound: f64,
    why: &'static str,
) -> Row {
    Row { id, settings: settings.into(), published, unit: Unit::NvmlMib, sc, bound, why }
}

/// A row of litgpt's tables (max_memory_allocated in GB), within 10 %.
fn lit(id: &'static str, settings: &str, published: f64, sc: Scenario) -> Row {
    Row { id, settings: settings.into(), published, unit: Unit::AllocGb, sc, bound: 0.10, why: "" }
}

/// Rows 3-7: the transformers docs' BERT-large page.
fn bert_rows() -> Vec<Row> {
    use Optimizer::{Adafactor, Adamw8bit, AdamwLoop};
    use Precision::{Fp16Amp, Fp32};
    vec![
        bert_row("3", "fp32 AdamW b4", 14949.0, bert(Fp32, 4, false, AdamwLoop), 0.10, ""),
        bert_row("4a", "fp32 AdamW b1 (GA 4)", 8681.0, bert(Fp32, 1, false, AdamwLoop), 0.10, ""),
        bert_row("4b", "fp32 AdamW b1 (GA 4) + GC", 6775.0, bert(Fp32, 1, true, AdamwLoop), 0.10, ""),
        bert_row("5a", "fp16 AMP AdamW b4", 13939.0, bert(Fp16Amp, 4, false, AdamwLoop), 0.10, ""),
        bert_row(
            "5b",
            "fp16 AMP AdamW b1 (GA 4) + GC",
            7275.0,
            bert(Fp16Amp, 1, true, AdamwLoop),
            0.10,
            "autocast's fp16 weight copies and GradScaler's unscale are replayed as one block each",
        ),
        bert_row("6a", "fp32 Adafactor b4", 12295.0, bert(Fp32, 4, false, Adafactor), 0.10, ""),
        bert_row(
            "6b",
            "fp16 AMP Adafactor b1 (GA 4) + GC",
            4847.0,
            bert(Fp16Amp, 1, true, Adafactor),
            0.10,
            "Adafactor's update temporaries are modelled per tensor, not measured",
        ),
        bert_row("7a", "fp32 Adam8bit b4", 13085.0, bert(Fp32, 4, false, Adamw8bit), 0.10, ""),
        bert_row(
            "7b",
            "fp16 AMP Adam8bit b1 (GA 4) + GC",
            5363.0,
            bert(Fp16Amp, 1, true, Adamw8bit),
            0.10,
            "bitsandbytes' 8-bit step (its quantile maps and per-block buffers) is not modelled beyond the states",
        ),
    ]
}

/// Rows 19-22: litgpt's LoRA / QLoRA and generate tables for Llama 2, Falcon and CodeLlama.
fn litgpt_rows() -> Vec<Row> {
    vec![
        Row {
            id: "19a",
            settings: "Llama-2-7B LoRA r8 q,v, litgpt, mb1 × 1304".into(),
            published: 21.30,
            unit: Unit::AllocGb,
            sc: litgpt("llama-2-7b", 1, false),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "19b",
            settings: "Llama-2-7B QLoRA NF4, litgpt, mb1 × 1304".into(),
            published: 14.14,
            unit: Unit::AllocGb,
            sc: litgpt("llama-2-7b", 1, true),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "19c",
            settings: "Llama-2-7B LoRA r8 q,v, litgpt, mb2 × 1304".into(),
            published: 29.07,
            unit: Unit::AllocGb,
            sc: litgpt("llama-2-7b", 2, false),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "20a",
            settings: "Llama-2-13B LoRA r8 q,v, litgpt, mb1 × 1304".into(),
            published: 38.12,
            unit: Unit::AllocGb,
            sc: litgpt("llama-2-13b", 1, false),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "20b",
            settings: "Llama-2-13B QLoRA NF4, litgpt, mb1 × 1304".into(),
            published: 23.14,
            unit: Unit::AllocGb,
            sc: litgpt("llama-2-13b", 1, true),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "21a",
            settings: "Llama-2-7B inference bf16, litgpt generate (6-token prompt, 50 new)".into(),
            published: 13.52,
            unit: Unit::AllocGb,
            sc: litgpt_generate("llama-2-7b"),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "21b",
            settings: "Llama-2-13B inference bf16, litgpt generate (6-token prompt, 50 new)".into(),
            published: 26.21,
            unit: Unit::AllocGb,
            sc: litgpt_generate("llama-2-13b"),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "21c",
            settings: "Llama-2-7B inference bnb.nf4, litgpt generate (6-token prompt, 50 new)".into(),
            published: 4.57,
            unit: Unit::AllocGb,
            sc: litgpt_generate_nf4("llama-2-7b", BaseQuant::Nf4NoDq),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "21d",
            settings: "Llama-2-13B inference bnb.nf4, litgpt generate (6-token prompt, 50 new)".into(),
            published: 8.32,
            unit: Unit::AllocGb,
            sc: litgpt_generate_nf4("llama-2-13b", BaseQuant::Nf4NoDq),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "22a",
            settings: "Llama-2-70B inference bnb.nf4-dq, litgpt generate (6-token prompt, 50 new)".into(),
            published: 37.21,
            unit: Unit::AllocGb,
            sc: litgpt_generate_nf4("llama-2-70b", BaseQuant::Nf4),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "22b",
            settings: "Falcon-40B inference bnb.nf4, litgpt generate (6-token prompt, 50 new)".into(),
            published: 26.55,
            unit: Unit::AllocGb,
            sc: litgpt_generate_nf4("tests/data/published/falcon-40b-litgpt/config.json", BaseQuant::Nf4NoDq),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "22c",
            settings: "CodeLlama-34B inference bnb.nf4, litgpt generate (6-token prompt, 50 new)".into(),
            published: 20.52,
            unit: Unit::AllocGb,
            sc: litgpt_generate_nf4("tests/data/published/codellama-34b/config.json", BaseQuant::Nf4NoDq),
            bound: 0.10,
            why: "",
        },
    ]
}

/// litgpt's resource tables (the rest of them): phi-1.5 and StableLM-Alpha, NF4-dq, generate.
fn litgpt_more_rows() -> Vec<Row> {
    vec![
        // litgpt's resource tables (commit 8641822, A100-40GB): the rest of the same tables
        lit("18a", "phi-1.5 LoRA r8 q,v, litgpt, mb1 × 1044", 4.82, litgpt_seq("phi-1.5", 1044, 1, None)),
        lit(
            "18b",
            "phi-1.5 QLoRA NF4, litgpt, mb1 × 1044",
            3.78,
            litgpt_seq("phi-1.5", 1044, 1, Some(BaseQuant::Nf4NoDq)),
        ),
        lit(
            "18c",
            "phi-1.5 QLoRA NF4-dq, litgpt, mb1 × 1044",
            3.72,
            litgpt_seq("phi-1.5", 1044, 1, Some(BaseQuant::Nf4)),
        ),
        lit("18d", "phi-1.5 LoRA r8 q,v, litgpt, mb2 × 1044", 6.76, litgpt_seq("phi-1.5", 1044, 2, None)),
        lit("18e", "phi-1.5 LoRA r8 q,v, litgpt, mb4 × 1044", 10.68, litgpt_seq("phi-1.5", 1044, 4, None)),
        lit(
            "18f",
            "StableLM-Alpha-3B LoRA r8 q,v, litgpt, mb1 × 1034",
            9.69,
            litgpt_seq(STABLELM, 1034, 1, None),
        ),
        lit(
            "18g",
            "StableLM-Alpha-3B QLoRA NF4, litgpt, mb1 × 1034",
            6.35,
            litgpt_seq(STABLELM, 1034, 1, Some(BaseQuant::Nf4NoDq)),
        ),
        lit(
            "18h",
            "StableLM-Alpha-3B QLoRA NF4-dq, litgpt, mb1 × 1034",
            6.19,
            litgpt_seq(STABLELM, 1034, 1, Some(BaseQuant::Nf4)),
        ),
        lit(
            "18i",
            "StableLM-Alpha-3B LoRA r8 q,v, litgpt, mb2 × 1034",
            12.10,
            litgpt_seq(STABLELM, 1034, 2, None),
        ),
        lit(
            "18j",
            "StableLM-Alpha-3B LoRA r8 q,v, litgpt, mb4 × 1034",
            16.92,
            litgpt_seq(STABLELM, 1034, 4, None),
        ),
        lit(
            "21j",
            "StableLM-Alpha-3B inference bf16, litgpt generate",
            7.30,
            litgpt_generate_bpe(STABLELM, None),
        ),
        lit(
            "21k",
            "StableLM-Alpha-3B inference bnb.nf4, litgpt generate",
            3.20,
            litgpt_generate_bpe(STABLELM, Some(BaseQuant::Nf4NoDq)),
        ),
        lit(
            "21l",
            "StableLM-Alpha-3B inference bnb.nf4-dq, litgpt generate",
            3.04,
            litgpt_generate_bpe(STABLELM, Some(BaseQuant::Nf4)),
        ),
        lit(
            "19d",
            "Llama-2-7B QLoRA NF4-dq, litgpt, mb1 × 1304",
            13.84,
            litgpt_seq("llama-2-7b", 1304, 1, Some(BaseQuant::Nf4)),
        ),
        lit(
            "20c",
            "Llama-2-13B QLoRA NF4-dq, litgpt, mb1 × 1304",
            22.55,
            litgpt_seq("llama-2-13b", 1304, 1, Some(BaseQuant::Nf4)),
        ),
        lit(
            "21e",
            "Llama-2-7B inference bnb.nf4-dq, litgpt generate",
            4.26,
            litgpt_generate_nf4("llama-2-7b", BaseQuant::Nf4),
        ),
        lit(
            "21f",
            "Llama-2-13B inference bnb.nf4-dq, litgpt generate",
            7.72,
            litgpt_generate_nf4("llama-2-13b", BaseQuant::Nf4),
        ),
        lit(
            "22d",
            "CodeLlama-34B inference bnb.nf4-dq, litgpt generate",
            18.95,
            litgpt_generate_nf4("tests/data/published/codellama-34b/config.json", BaseQuant::Nf4),
        ),
        lit(
            "22e",
            "Falcon-40B inference bnb.nf4-dq, litgpt generate",
            24.63,
            litgpt_generate_nf4("tests/data/published/falcon-40b-litgpt/config.json", BaseQuant::Nf4),
        ),
        lit("21g", "phi-1.5 inference bf16, litgpt generate", 2.86, litgpt_generate_bpe("phi-1.5", None)),
        lit(
            "21h",
            "phi-1.5 inference bnb.nf4, litgpt generate",
            1.39,
            litgpt_generate_bpe("phi-1.5", Some(BaseQuant::Nf4NoDq)),
        ),
        lit(
            "21i",
            "phi-1.5 inference bnb.nf4-dq, litgpt generate",
            1.33,
            litgpt_generate_bpe("phi-1.5", Some(BaseQuant::Nf4)),
        ),
    ]
}

/// litgpt's multi-GPU rows: FSDP on 2 and 4 A100s.
fn litgpt_fsdp_rows() -> Vec<Row> {
    vec![
        lit(
            "18k",
            "phi-1.5 LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb1 × 1044",
            4.86,
            litgpt_fsdp("phi-1.5", 1044, 1, 2),
        ),
        Row {
            bound: 0.16,
            why: LONGEST_FIRST,
            ..lit(
                "18l",
                "phi-1.5 LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb2 × 1044",
                5.05,
                litgpt_fsdp("phi-1.5", 1044, 2, 2),
            )
        },
        Row {
            bound: 0.22,
            why: LONGEST_FIRST,
            ..lit(
                "18m",
                "phi-1.5 LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb4 × 1044",
                5.88,
                litgpt_fsdp("phi-1.5", 1044, 4, 2),
            )
        },
        lit(
            "18n",
            "StableLM-Alpha-3B LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb1 × 1034",
            12.75,
            litgpt_fsdp(STABLELM, 1034, 1, 2),
        ),
        lit(
            "18o",
            "StableLM-Alpha-3B LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb2 × 1034",
            12.94,
            litgpt_fsdp(STABLELM, 1034, 2, 2),
        ),
        lit(
            "18p",
            "StableLM-Alpha-3B LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb4 × 1034",
            13.45,
            litgpt_fsdp(STABLELM, 1034, 4, 2),
        ),
        lit(
            "19e",
            "Llama-2-7B LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb1 × 1304",
            22.18,
            litgpt_fsdp("llama-2-7b", 1304, 1, 2),
        ),
        lit(
            "19f",
            "Llama-2-7B LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb2 × 1304",
            22.47,
            litgpt_fsdp("llama-2-7b", 1304, 2, 2),
        ),
        lit(
            "19g",
            "Llama-2-7B LoRA r8 q,v, litgpt, 2 × A100 FSDP, mb4 × 1304",
            23.39,
            litgpt_fsdp("llama-2-7b", 1304, 4, 2),
        ),
        lit(
            "20d",
            "Llama-2-13B LoRA r8 q,v, litgpt, 4 × A100 FSDP, mb1 × 1304",
            35.57,
            litgpt_fsdp("llama-2-13b", 1304, 1, 4),
        ),
    ]
}

/// Rows 26-27: torchtune's Llama-3.1 recipes.
fn torchtune_rows() -> Vec<Row> {
    vec![
        Row {
            id: "26a",
            settings: "Llama-3.1-8B full FT, torchtune, paged AdamW8bit in backward".into(),
            published: 18.9,
            unit: Unit::AllocGib,
            sc: common::torchtune_8b(false, false),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "26b",
            settings: "Llama-3.1-8B LoRA, torchtune".into(),
            published: 16.2,
            unit: Unit::AllocGib,
            sc: common::torchtune_8b(true, false),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "26c",
            settings: "Llama-3.1-8B QLoRA (torchao NF4), torchtune".into(),
            published: 7.4,
            unit: Unit::AllocGib,
            sc: common::torchtune_8b(true, true),
            bound: 0.10,
            why: "",
        },
        Row {
            id: "27b",
            settings: "Llama-3.1-70B full FT, torchtune, 8 × A100, FSDP CPU offload, fused AdamW".into(),
            published: 13.9,
            unit: Unit::AllocGib,
            sc: {
                // `fsdp_cpu_offload: True`: parameters, gradients and the optimizer on the CPU
                let mut sc = torchtune_8x("llama-3.1-70b", 2);
                sc.parallel.offload = Offload::Params;
                sc
            },
            bound: 0.10,
            why: "",
        },
        Row {
            id: "27c",
            settings: "Llama-3.1-70B LoRA r16 q,k,v, torchtune, 8 × A100".into(),
            published: 27.6,
            unit: Unit::AllocGib,
            sc: {
                let mut sc = torchtune_8x("llama-3.1-70b", 2);
                sc.lora = Some("16:q,k,v".parse().unwrap_or_else(|e| panic!("{e}")));
                sc
            },
            bound: 0.10,
            why: "",
        },
        Row {
            id: "27d",
            settings: "Llama-3.1-405B QLoRA r16 all linears, torchtune, 8 × A100, GA 16".into(),
            published: 44.8e9 / GIB,
            unit: Unit::AllocGib,
            sc: {
                // batch 1, `torch.nn.CrossEntropyLoss` on the fp32 logits (transformers' path),
                // 16 micro-batches accumulated
                let mut sc = torchtune_8x("llama-3.1-405b", 1);
                sc.lora = Some("16:q,k,v,o,gate,up,down".parse().unwrap_or_else(|e| panic!("{e}")));
                sc.base_quant = BaseQuant::Nf4;
                sc.stack.loss = Loss::Hf;
                sc.stack.grad_accum = 16;
                sc
            },
            bound: 0.10,
            why: "",
        },
    ]
}
