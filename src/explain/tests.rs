//! Explanations: a pipeline rank, FSDP's gradients and gathered parameters, and the Chinese texts
//! carrying the same numbers as the English.

use super::components::count_in;
use super::*;
use crate::estimate::{Checkpointing, Optimizer};

#[test]
fn a_pipeline_rank_is_explained_with_its_own_params_and_blocks() {
    let mut sc = Scenario::new(crate::model::preset::builtin("llama-3.1-8b").expect("preset"));
    sc.parallel.pp = 2;
    sc.checkpointing = Checkpointing::Full;
    let e = crate::estimate::estimate(&sc).expect("estimate");
    let x = explain(&sc, &e);
    let params = &x.iter().find(|x| x.component == Component::Parameters).expect("params").substituted;
    assert!(e.rank_params < e.n_params / 2 + e.n_params / 10, "{} of {}", e.rank_params, e.n_params);
    assert!(params.starts_with(&count_in(e.rank_params, Lang::En)), "{params}");
    assert!(params.contains(&format!("stage {} of 2", e.stage.index)), "{params}");
    assert!(params.contains(&format!("of the model's {}", count_in(e.n_params, Lang::En))), "{params}");
    let acts = &x.iter().find(|x| x.component == Component::Activations).expect("acts").substituted;
    assert!(acts.contains("16 checkpointed blocks (stage"), "{acts}");
    // unsplit: no rank wording
    sc.parallel.pp = 1;
    let e = crate::estimate::estimate(&sc).expect("estimate");
    let x = explain(&sc, &e);
    assert!(!x[0].substituted.contains("this rank"), "{}", x[0].substituted);
    assert!(x[3].substituted.contains("32 checkpointed blocks keep"), "{}", x[3].substituted);
}

#[test]
fn fsdp_runs_explain_their_own_gradients_and_gathered_parameters() {
    let mut sc = Scenario::new(crate::model::preset::builtin("llama-2-7b").expect("preset"));
    sc.lora = Some("8:q,v".parse().expect("lora"));
    sc.parallel.dp = 2;
    sc.parallel.fsdp = Some(crate::estimate::FsdpMode::FullShard);
    sc.stack = crate::estimate::Framework::Litgpt.stack();
    sc.stack.grad_accum = 4;
    let e = crate::estimate::estimate(&sc).expect("estimate");
    let x = explain(&sc, &e);
    let find = |c: Component| x.iter().find(|x| x.component == c).expect("component").substituted.clone();
    let grads = find(Component::Gradients);
    assert!(grads.contains("frozen weights get gradients") && grads.contains("no_sync"), "{grads}");
    assert!(grads.contains(&g(e.gradients)), "{grads}");
    let params = find(Component::Parameters);
    assert!(params.contains("/ 2 GPUs (FSDP full_shard)") && params.contains("root unit"), "{params}");
    let gathered = Component::Parameters.at_peak(&e) - e.parameters;
    assert!(params.contains(&g(gathered)), "{params}");
    // and in Chinese
    let zh = explain_in(&sc, &e, Lang::ZhCn);
    assert!(zh.iter().take(2).all(|x| cjk(&x.substituted) && x.substituted.contains("FSDP1")), "{zh:?}");
}

fn cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// Every "12.34 GiB" / "5.6 MiB" figure of a text.
fn sizes(s: &str) -> Vec<String> {
    let w: Vec<&str> = s.split(|c: char| c.is_whitespace() || "()（）：:，,=+×".contains(c)).collect();
    w.windows(2)
        .filter(|p| (p[1] == "GiB" || p[1] == "MiB") && p[0].contains('.') && p[0].parse::<f64>().is_ok())
        .map(|p| format!("{} {}", p[0], p[1]))
        .collect()
}

#[test]
fn chinese_explanations_carry_the_same_numbers() {
    use crate::estimate::{Lora, Loss};
    let llama = || Scenario::new(crate::model::preset::builtin("llama-3.1-8b").expect("preset"));
    let mut cases = vec![llama()];
    let mut s = llama();
    s.parallel.pp = 2;
    s.parallel.dp = 4;
    s.parallel.zero = 1;
    s.checkpointing = Checkpointing::Full;
    cases.push(s);
    let mut s = llama();
    s.lora = Some("16".parse::<Lora>().expect("lora"));
    s.base_quant = crate::estimate::BaseQuant::Nf4NoDq;
    s.stack.loss = Loss::Chunked { chunks: 8 };
    s.checkpointing = Checkpointing::Every(2);
    cases.push(s);
    let mut s = llama();
    s.mode = Mode::Infer;
    s.new_tokens = 128;
    cases.push(s);
    let mut s = llama();
    s.optimizer = Optimizer::Adam;
    s.parallel.dp = 2;
    cases.push(s);
    for (i, sc) in cases.iter().enumerate() {
        // the flat reserve and the replayed allocator word the overhead differently
        let flat = crate::estimate::estimate(sc).expect("estimate");
        let (replayed, _) = crate::estimate::estimate_reserved(sc, None).expect("estimate");
        for e in [flat, replayed] {
            let en = explain(sc, &e);
            assert_eq!(en, explain_in(sc, &e, Lang::En));
            let zh = explain_in(sc, &e, Lang::ZhCn);
            assert_eq!(en.len(), zh.len());
            for (a, b) in en.iter().zip(&zh) {
                assert_eq!((a.component, a.bytes), (b.component, b.bytes));
                assert!(cjk(&b.formula), "case {i}: {}", b.formula);
                // the substitutions with words (the others are numbers and symbols only)
                let worded = [
                    Component::Parameters,
                    Component::Gradients,
                    Component::Activations,
                    Component::Temporaries,
                ];
                if worded.contains(&b.component) {
                    assert!(cjk(&b.substituted), "case {i}: {}", b.substituted);
                }
                let want = sizes(&a.substituted);
                assert!(!want.is_empty(), "case {i}: {}", a.substituted);
                assert_eq!(want, sizes(&b.substituted), "case {i}: {} / {}", a.substituted, b.substituted);
            }
        }
    }
    for c in Cat::ALL {
        assert_eq!(category_help(c), category_help_in(c, Lang::En));
        assert!(cjk(category_help_in(c, Lang::ZhCn)), "{c:?}");
    }
}

#[test]
fn formulas_write_counts_and_bytes_apart_from_each_other() {
    let sc = Scenario::new(crate::model::preset::builtin("llama-3.1-8b").expect("preset"));
    let e = crate::estimate::estimate(&sc).expect("estimate");
    let en = &explain_in(&sc, &e, Lang::En)[0].substituted;
    assert!(en.starts_with("8.03 × 10⁹ params × 2 bytes (bfloat16) = "), "{en}");
    let zh = &explain_in(&sc, &e, Lang::ZhCn)[0].substituted;
    assert!(zh.starts_with("80.3 亿参数 × 2 字节"), "{zh}");
    for x in explain_in(&sc, &e, Lang::En).iter().chain(&explain_in(&sc, &e, Lang::ZhCn)) {
        // "B" is neither a billion nor a byte anywhere (GiB and MiB are sizes)
        let t = x.substituted.replace("GiB", "").replace("MiB", "");
        assert!(!t.contains(" B") && !t.contains("B "), "{:?}: {t}", x.component);
    }
    assert_eq!(count_in(124_400_000, Lang::ZhCn), "1.244 亿");
    assert_eq!(count_in(12_300_000, Lang::ZhCn), "1230 万");
    assert_eq!(count_in(124_400_000, Lang::En), "124.4 × 10⁶");
}

#[test]
fn a_traced_models_parameters_are_counted_in_the_dtypes_it_was_traced_in() {
    let sc = Scenario::new(crate::model::preset::builtin("sd1.5-unet-lora").expect("preset"));
    let e = crate::estimate::estimate(&sc).expect("estimate");
    let en = &explain_in(&sc, &e, Lang::En)[0].substituted;
    // the frozen base in bf16, the adapters in fp32, as the trace has them
    assert!(
        en.starts_with("859.5 × 10⁶ frozen params × 2 bytes + 797.2 × 10³ trained params × 4 bytes"),
        "{en}"
    );
    let t = sc.model.traced().expect("traced");
    assert_eq!(e.parameters, 2 * (t.n_params() - t.n_trainable()) + 4 * t.n_trainable());
}
