//! Each framework export's implied recipe: what differs from the scenario, both totals, and the
//! settings the export writes.

use super::*;
use crate::estimate::estimate;
use crate::export::{DEEPSPEED_INFERENCE_KEYS, deepspeed_config, deepspeed_inference_config, render};
use crate::model::preset::builtin;

fn file(model: &str, gpu: &str, f: impl FnOnce(&mut Scenario)) -> ScenarioFile {
    let mut sc = Scenario::new(builtin(model).unwrap());
    f(&mut sc);
    ScenarioFile::new(sc, Some(&gpu::find(gpu).unwrap()), None)
}

fn zero3_13b(p: Precision, o: Optimizer) -> ScenarioFile {
    file("llama-2-13b", "a100-80gb", |sc| {
        sc.seq = 2048;
        sc.precision = p;
        sc.optimizer = o;
        sc.parallel.dp = 8;
        sc.parallel.zero = 3;
    })
}

#[test]
fn deepspeed_bf16_is_the_mixed_recipe_and_says_so_with_both_totals() {
    let f = zero3_13b(Precision::Bf16, Optimizer::Adamw);
    let r = recipe(&f, Format::Deepspeed).unwrap().unwrap();
    assert_eq!(r.implied.precision, Precision::Bf16Mixed);
    assert_eq!(r.implied.optimizer, Optimizer::AdamwFused);
    assert!(r.differs.contains(&("--precision", Some("bf16-mixed".into()))), "{:?}", r.differs);
    assert!(r.differs.contains(&("--optimizer", Some("adamw-fused".into()))), "{:?}", r.differs);
    // both totals are the estimator's verdicts, and fp32 master weights + moments cost more
    let cap = f.gpu().unwrap().capacity();
    assert_eq!(r.scenario_total, crate::fit::verdict(&f.scenario, cap).unwrap().estimate.total);
    assert_eq!(r.implied_total, crate::fit::verdict(&r.implied, cap).unwrap().estimate.total);
    assert!(r.implied_total > r.scenario_total + (8 << 30), "{} vs {}", r.implied_total, r.scenario_total);
    let last = r.lines().pop().unwrap();
    assert!(last.starts_with("differs from the scenario in --precision bf16-mixed"), "{last}");
    assert!(last.contains(&gib(r.implied_total)) && last.contains(&gib(r.scenario_total)), "{last}");
    assert_eq!(deepspeed_config(&f)["bf16"]["enabled"], true);
}

#[test]
fn deepspeed_matches_a_mixed_scenario_with_a_fused_adam() {
    let f = zero3_13b(Precision::Bf16Mixed, Optimizer::AdamwFused);
    let r = recipe(&f, Format::Deepspeed).unwrap().unwrap();
    assert!(r.matches(), "{:?}", r.differs);
    assert_eq!(r.implied, f.scenario);
    assert!(r.lines().pop().unwrap().starts_with("matches the scenario"));
}

#[test]
fn an_autocast_scenario_gets_no_half_section_in_deepspeed() {
    let f = zero3_13b(Precision::Bf16Amp, Optimizer::AdamwFused);
    let v = deepspeed_config(&f);
    assert!(v.get("bf16").is_none() && v.get("fp16").is_none(), "{v}");
    let r = recipe(&f, Format::Deepspeed).unwrap().unwrap();
    assert!(r.matches(), "{:?}", r.differs);
    assert!(r.says.iter().any(|s| s.contains("torch.autocast")), "{:?}", r.says);
}

#[test]
fn the_foreach_step_temporary_is_named_when_deepspeed_fuses_it() {
    let f = zero3_13b(Precision::Bf16Mixed, Optimizer::Adamw);
    let r = recipe(&f, Format::Deepspeed).unwrap().unwrap();
    assert_eq!(r.differs, vec![("--optimizer", Some("adamw-fused".into()))]);
    assert!(r.implied_total < r.scenario_total, "the fused step has no foreach temporary");
}

#[test]
fn inference_exports_are_inference_or_refused() {
    let f = file("llama-3.1-8b", "h100-80gb", |sc| {
        sc.mode = Mode::Infer;
        sc.parallel.tp = 2;
    });
    let v = deepspeed_inference_config(&f);
    for k in v.as_object().unwrap().keys() {
        assert!(DEEPSPEED_INFERENCE_KEYS.contains(&k.as_str()), "undocumented key {k}");
    }
    assert_eq!(v["tensor_parallel"]["tp_size"], 2);
    let text = render(&f, Format::Deepspeed).unwrap();
    assert!(!text.contains("train_batch_size") && !text.contains("optimizer"), "{text}");
    assert!(recipe(&f, Format::Deepspeed).unwrap().unwrap().matches());
    let hf = render(&f, Format::Hf).unwrap();
    assert!(hf.contains("torch.inference_mode()") && !hf.contains("TrainingArguments"), "{hf}");
    for format in [Format::Fsdp, Format::Megatron] {
        let e = render(&f, format).unwrap_err().to_string();
        assert!(e.contains("training setup"), "{e}");
    }
}

#[test]
fn megatron_names_the_model_s_dropout_and_drops_lora_saying_so() {
    let f = file("gpt2", "a100-80gb", |sc| sc.precision = Precision::Bf16Mixed);
    let text = render(&f, Format::Megatron).unwrap();
    assert!(text.contains("--attention-dropout 0.1") && text.contains("--hidden-dropout 0.1"), "{text}");
    let r = recipe(&f, Format::Megatron).unwrap().unwrap();
    assert_eq!(r.implied.optimizer, Optimizer::AdamwFused);
    let f = file("llama-2-7b", "a100-80gb", |sc| {
        sc.precision = Precision::Bf16Mixed;
        sc.optimizer = Optimizer::AdamwFused;
        sc.lora = Some("16".parse().unwrap());
    });
    let r = recipe(&f, Format::Megatron).unwrap().unwrap();
    assert!(r.implied.lora.is_none() && !r.matches());
    assert!(r.says.iter().any(|s| s.contains("no LoRA")), "{:?}", r.says);
    assert!(r.implied_total > r.scenario_total);
}

#[test]
fn hugging_face_pure_fp16_is_not_given_the_grad_scaler() {
    let f = file("gpt2", "a100-80gb", |sc| sc.precision = Precision::Fp16);
    let text = render(&f, Format::Hf).unwrap();
    assert!(!text.contains("    fp16=True,") && text.contains("torch_dtype=torch.float16"), "{text}");
    assert!(recipe(&f, Format::Hf).unwrap().unwrap().matches());
    let f = file("gpt2", "a100-80gb", |sc| sc.precision = Precision::Bf16Mixed);
    let r = recipe(&f, Format::Hf).unwrap().unwrap();
    assert_eq!(r.implied.precision, Precision::Bf16Amp);
    assert!(r.lines().pop().unwrap().starts_with("differs"));
    assert!(render(&f, Format::Hf).unwrap().lines().nth(1).unwrap().starts_with("# Hugging Face Trainer: "));
}

#[test]
fn the_fsdp_snippet_runs_lora_with_the_adapters_in_the_blocks_flat_parameters() {
    let f = file("llama-2-7b", "a100-80gb", |sc| {
        sc.parallel.dp = 8;
        sc.parallel.fsdp = Some(FsdpMode::FullShard);
        sc.lora = Some("8:q,v".parse().unwrap());
        sc.stack = crate::estimate::Framework::HfTrainer.stack();
    });
    let r = recipe(&f, Format::Fsdp).unwrap().unwrap();
    assert!(!r.matches(), "the block-wise wrap gives the frozen weights gradients");
    let says = r.says.join("\n");
    assert!(says.contains("--fsdp-impl fsdp1-shared"), "{says}");
}

#[test]
fn the_fsdp_snippet_builds_the_scenario_s_optimizer() {
    let f = file("llama-2-7b", "a100-80gb", |sc| {
        sc.parallel.dp = 8;
        sc.parallel.fsdp = Some(FsdpMode::FullShard);
        sc.optimizer = Optimizer::AdamwFused;
    });
    let text = render(&f, Format::Fsdp).unwrap();
    assert!(text.contains("torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)"), "{text}");
    assert!(text.contains("torch_dtype=torch.bfloat16"), "{text}");
    assert!(recipe(&f, Format::Fsdp).unwrap().unwrap().matches());
}

#[test]
fn other_formats_have_no_recipe() {
    let f = zero3_13b(Precision::Bf16, Optimizer::Adamw);
    for format in [Format::Ron, Format::Markdown, Format::Json, Format::Csv] {
        assert!(recipe(&f, format).unwrap().is_none());
    }
}

#[test]
fn the_trainer_s_8bit_optimizer_keeps_the_embeddings_states_in_32_bit() {
    let f = file("llama-3.1-8b", "h100-80gb", |sc| sc.optimizer = Optimizer::Adamw8bit);
    let r = recipe(&f, Format::Hf).unwrap().unwrap();
    assert_eq!(r.implied.stack.framework, Some(crate::estimate::Framework::HfTrainer));
    assert!(r.says.iter().any(|s| s.contains("optim_bits=32")), "{:?}", r.says);
    let (a, b) = (estimate(&f.scenario).unwrap(), estimate(&r.implied).unwrap());
    let extra = (b.optimizer_states - a.optimizer_states) as f64 / (1u64 << 30) as f64;
    assert!((2.8..3.0).contains(&extra), "{extra} GiB");
    assert!(render(&f, Format::Hf).unwrap().contains("optim=\"adamw_bnb_8bit\""));
}
