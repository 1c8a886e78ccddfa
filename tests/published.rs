//! Published real-GPU measurements (`tests/data/published.md`, rows as numbered there) against the
//! estimate with the settings each source states, printed as a table. Rows the tool cannot
//! reproduce yet are listed with the reason and checked only loosely; the others must stay
//! within their bound.
//!
//! Quantities: "nvml" rows compare the CUDA context measured in the same source (row 1) plus the
//! caching allocator's reserved bytes (the replay) with nvidia-smi's used memory; "alloc" rows
//! compare `peak_allocated` with `torch.cuda.max_memory_allocated()`.

mod common;

use vramscope::estimate::{
    AttentionImpl, BaseQuant, Checkpointing, Framework, FsdpMode, Lora, Loss, Mode, ModelCode, Offload,
    Optimizer, Scenario, Torch, estimate_reserved,
};
use vramscope::model::preset;
use vramscope::units::Precision;

const MIB: f64 = 1048576.0;
const GIB: f64 = 1073741824.0;

#[derive(Clone, Copy)]
enum Unit {
    /// nvidia-smi MiB: context + reserved.
    NvmlMib,
    /// max_memory_allocated in GB (1e9), as litgpt prints it.
    AllocGb,
    /// max_memory_allocated in GiB.
    AllocGib,
}

struct Row {
    id: &'static str,
    settings: String,
    published: f64,
    unit: Unit,
    sc: Scenario,
    /// Bound on |error| (fraction), and why a row is outside 10 % when it is.
    bound: f64,
    why: &'static str,
}

fn load(m: &str) -> Scenario {
    let l = preset::load(m).unwrap_or_else(|e| panic!("{m}: {e}"));
    Scenario::new(l.model)
}

/// BERT-large for sequence classification (2 labels), HF Trainer, seq 512, eager attention, the
/// Trainer's optimizer of the time (transformers' own per-tensor AdamW, `adamw_hf`), dropout on.
/// The page was measured before PyTorch 2.0 (its 1.3 GB context predates lazy module loading),
/// when the Trainer's `model.zero_grad()` zeroed gradients in place (`set_to_none=False`), so they
/// stay allocated between steps; "1+GA4" rows accumulate over 4 micro-batches.
fn bert(precision: Precision, batch: u64, gc: bool, optimizer: Optimizer) -> Scenario {
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

/// stabilityai/stablelm-base-alpha-3b as litgpt builds it (GPT-NeoX, vocabulary padded to 50688).
/// Why litgpt's multi-GPU rows with a larger micro-batch read below the estimate.
const LONGEST_FIRST: &str = "the longest sample runs only in the first micro-batch, before any gradient exists; from the second on the unsharded gradients are alive with the shorter random samples, while the estimate runs every micro-batch at the longest length (its upper bound); phi-1.5's 51k-vocabulary fp32 logits make that difference its largest share";

const STABLELM: &str = "tests/data/published/stablelm-base-alpha-3b/config.json";

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

fn rows() -> Vec<Row> {
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

#[test]
fn published_real_gpu_rows_with_the_settings_their_sources_state() {
    let mut errors = Vec::new();
    let mut failures = Vec::new();
    println!("\n| row | settings | published | predicted | error | note |\n|---|---|---|---|---|---|");
    for r in rows() {
        let (e, replay) = estimate_reserved(&r.sc, None).unwrap_or_else(|err| panic!("row {}: {err}", r.id));
        let (pred, unit) = match r.unit {
            Unit::NvmlMib => ((r.sc.overhead.cuda_context_bytes + replay.peak_reserved) as f64 / MIB, "MiB"),
            Unit::AllocGb => (e.peak_allocated as f64 / 1e9, "GB"),
            Unit::AllocGib => (e.peak_allocated as f64 / GIB, "GiB"),
        };
        let err = pred / r.published - 1.0;
        errors.push(err.abs());
        let note = if err.abs() > 0.10 { r.why } else { "" };
        println!(
            "| {} | {} | {:.2} {unit} | {:.2} {unit} | {:+.1} % | {note} |",
            r.id,
            r.settings,
            r.published,
            pred,
            100.0 * err
        );
        if err.abs() > r.bound {
            failures.push(format!("row {}: {:+.1} % (bound {:.0} %)", r.id, 100.0 * err, 100.0 * r.bound));
        }
        if err.abs() > 0.10 {
            assert!(!r.why.is_empty(), "row {} is outside 10 % without a reason", r.id);
        }
    }
    errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2];
    let within = errors.iter().filter(|e| **e <= 0.10).count();
    println!("\n{} rows: median |error| {:.1} %, {within} within 10 %", errors.len(), 100.0 * median);
    assert!(failures.is_empty(), "outside bounds:\n{}", failures.join("\n"));
}

#[test]
fn the_weights_load_row_is_the_replayed_parameters() {
    // row 2: BERT-large (SeqCls) weights moved to the V100: 2631 MiB with the 1343 MiB context;
    // what the allocator reserves for them is the parameter tensors in their segments (small ones
    // share 2 MiB blocks, 1-10 MiB ones 20 MiB blocks)
    let sc = bert(Precision::Fp32, 1, false, Optimizer::AdamwLoop);
    let (_, replay) = estimate_reserved(&sc, None).unwrap_or_else(|err| panic!("{err}"));
    let nvml = 1343.0 + replay.after_load as f64 / MIB;
    println!("row 2: {nvml:.0} MiB predicted vs 2631 MiB published");
    assert!((nvml / 2631.0 - 1.0).abs() < 0.01, "{nvml:.0} MiB vs 2631");
}

/// Replays an exact allocation trace (`tests/data/truth/alloc_trace`) through the allocator model,
/// the cuBLAS workspace allocated at the first forward as the estimator's replay does; returns
/// (peak allocated, peak reserved).
fn replay_trace(path: &str, workspace: u64) -> (u64, u64) {
    use vramscope::alloc::{Allocator, Config};
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut a = Allocator::new(Config::default());
    let mut ws = workspace > 0;
    for (n, l) in text.lines().enumerate() {
        let mut it = l.split(' ').skip(1);
        let mut num = || -> u64 {
            it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{path}:{}: {l}", n + 1))
        };
        match l.as_bytes().first() {
            Some(b'a') => {
                let (id, bytes) = (num(), num());
                let _ = a.malloc(id as u32, bytes, 0);
            }
            Some(b'f') => a.free(num() as u32),
            Some(b'#') if ws && l.contains("forward") => {
                let _ = a.malloc(u32::MAX, workspace, 0);
                ws = false;
            }
            _ => {}
        }
    }
    let s = a.stats();
    (s.peak_allocated, s.peak_reserved)
}

#[test]
fn the_step_replay_stays_near_an_exact_allocation_trace_of_the_same_step() {
    // rows 3 and 5a: the estimator's replay (tensors by category, one allocation per op's saves)
    // against every storage of the real step, both through the same allocator model, under
    // today's PyTorch and under 1.10 (whose softmax keeps its input: `trace_bert.py ... torch1.10`)
    for (file, precision, torch, published) in [
        ("bert-large-seqcls-fp32-b4.trace", Precision::Fp32, Torch::Current, 14949.0),
        ("bert-large-seqcls-fp16amp-b4.trace", Precision::Fp16Amp, Torch::Current, 13939.0),
        ("bert-large-seqcls-fp32-b4-torch1.10.trace", Precision::Fp32, Torch::Before1_11, 14949.0),
        ("bert-large-seqcls-fp16amp-b4-torch1.10.trace", Precision::Fp16Amp, Torch::Before1_11, 13939.0),
    ] {
        let mut sc = bert(precision, 4, false, Optimizer::AdamwLoop);
        sc.stack.torch = torch;
        let (_, replay) = estimate_reserved(&sc, None).unwrap_or_else(|err| panic!("{err}"));
        let path = format!("tests/data/truth/alloc_trace/{file}");
        let (alloc, reserved) = replay_trace(&path, sc.overhead.workspace_bytes);
        let (ours, trace) = (replay.peak_reserved as f64 / MIB, reserved as f64 / MIB);
        let ctx = sc.overhead.cuda_context_bytes as f64 / MIB;
        let err = (trace + ctx) / published - 1.0;
        println!(
            "{file}: exact trace {:.0} MiB allocated, {trace:.0} MiB reserved; the estimator's replay {:.0} / {ours:.0} MiB; with the context {:.0} MiB vs nvidia-smi's {published:.0} MiB ({:+.1} %)",
            alloc as f64 / MIB,
            replay.peak_allocated as f64 / MIB,
            trace + ctx,
            100.0 * err,
        );
        // the peaks allocated agree (the walk is exact on this model's saves; under autocast its
        // replay is 1.0-1.3 % over the trace's peak); the category replay reserves a little more
        // than the exact stream, never less
        assert!((replay.peak_allocated as f64 / alloc as f64 - 1.0).abs() < 0.015, "{file}");
        assert!(ours >= trace && ours / trace - 1.0 < 0.06, "{file}: {ours:.0} vs {trace:.0} MiB");
        // today's step stays 9-12 % under what nvidia-smi showed; PyTorch 1.10's (the page's)
        // within 5 %
        if torch == Torch::Before1_11 {
            assert!(err.abs() < 0.05, "{file}: {:+.1} %", 100.0 * err);
        } else {
            assert!(err < -0.08, "{file}: {:+.1} %", 100.0 * err);
        }
    }
}

/// Exact allocation traces of a transformers causal LM's training steps (`trace_causal.py`:
/// Llama-3.2-1B, seq 2048, AdamW foreach, three steps, every storage in order; transformers' loss
/// or torchtune's chunked one, the optimizer after or in backward) replayed through the allocator
/// model, against the estimator's replay of the same scenario: the peaks allocated agree (the
/// walk is exact), and the reserved peaks (what the cache keeps) within 8 % (10 % with the
/// optimizer in backward).
#[test]
fn the_llm_step_replay_stays_near_exact_traces_of_the_same_steps() {
    use Checkpointing::{Full, None as NoCkpt};
    let (hf, chunked) = (Loss::Hf, Loss::Chunked { chunks: 8 });
    let mut failed = Vec::new();
    for (file, precision, batch, ckpt, loss, in_backward) in [
        ("llama-3.2-1b-bf16-b1.trace", Precision::Bf16, 1, NoCkpt, hf, false),
        ("llama-3.2-1b-bf16-b2.trace", Precision::Bf16, 2, NoCkpt, hf, false),
        ("llama-3.2-1b-bf16-ckpt-b2.trace", Precision::Bf16, 2, Full, hf, false),
        ("llama-3.2-1b-bf16-ckpt-b5.trace", Precision::Bf16, 5, Full, hf, false),
        ("llama-3.2-1b-bf16-amp-ckpt-b2.trace", Precision::Bf16Amp, 2, Full, hf, false),
        ("llama-3.2-1b-bf16-amp-ckpt-b5.trace", Precision::Bf16Amp, 5, Full, hf, false),
        // torchtune's chunked loss and optimizer in backward
        ("llama-3.2-1b-bf16-b1-chunked8.trace", Precision::Bf16, 1, NoCkpt, chunked, false),
        ("llama-3.2-1b-bf16-b1-chunked8-inbwd.trace", Precision::Bf16, 1, NoCkpt, chunked, true),
        ("llama-3.2-1b-bf16-ckpt-b2-chunked8.trace", Precision::Bf16, 2, Full, chunked, false),
        ("llama-3.2-1b-bf16-ckpt-b2-chunked8-inbwd.trace", Precision::Bf16, 2, Full, chunked, true),
        ("llama-3.2-1b-bf16-ckpt-b2-inbwd.trace", Precision::Bf16, 2, Full, hf, true),
    ] {
        let mut sc = load("tests/data/truth/configs/llama3.2-1b.json");
        sc.seq = 2048;
        sc.batch = batch;
        sc.precision = precision;
        sc.checkpointing = ckpt;
        sc.stack.loss = loss;
        sc.stack.optimizer_in_backward = in_backward;
        let (_, replay) = estimate_reserved(&sc, None).unwrap_or_else(|err| panic!("{err}"));
        let path = format!("tests/data/truth/alloc_trace/{file}");
        let (alloc, reserved) = replay_trace(&path, sc.overhead.workspace_bytes);
        let (ours, trace) = (replay.peak_reserved as f64, reserved as f64);
        println!(
            "{file}: exact trace {:.2} GiB allocated, {:.2} GiB reserved; the estimator's replay {:.2} / {:.2} GiB ({:+.1} %)",
            alloc as f64 / GIB,
            trace / GIB,
            replay.peak_allocated as f64 / GIB,
            ours / GIB,
            100.0 * (ours / trace - 1.0)
        );
        if (replay.peak_allocated as f64 / alloc as f64 - 1.0).abs() >= 0.005 {
            failed.push(format!("{file}: allocated {} vs {alloc}", replay.peak_allocated));
        }
        // an optimizer in backward makes each parameter's states in the first backward, among
        // the activations; the replay spreads them over its backward events (whole tensors, the
        // last parameters first), which places them less exactly
        let bound = if in_backward { 0.10 } else { 0.08 };
        if (ours / trace - 1.0).abs() >= bound {
            failed.push(format!("{file}: reserved {:.2} vs {:.2} GiB", ours / GIB, trace / GIB));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
