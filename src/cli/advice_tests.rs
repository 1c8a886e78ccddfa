//! Every number the advice shows is what `vramscope estimate` gives for the flags it names.
//!
//! Over generated scenarios, each row of `plan --options`, each step of the roadmap (its path,
//! what raises the batch, the changes of method) and each `plan --search` row carries the
//! `estimate` flags of its settings. They are parsed here by the command line itself, the scenario
//! they give must be the row's, and its verdict (total and fit) must be the row's.

use super::{Cli, Command, inputs};
use clap::Parser;
use proptest::prelude::*;
use vramscope::fit::verdict;
use vramscope::gpu::Gpu;

/// `vramscope estimate --model MODEL ARGS…` as the CLI reads it: the scenario, its card and the
/// verdict it prints.
fn re_estimate(model: &str, args: &[String]) -> (vramscope::estimate::Scenario, Gpu, u64, bool) {
    let words = ["vramscope", "estimate", "--model", model]
        .into_iter()
        .map(str::to_owned)
        .chain(args.iter().cloned());
    let cli = match Cli::try_parse_from(words) {
        Ok(c) => c,
        Err(e) => panic!("the row's flags do not parse: {args:?}: {e}"),
    };
    let Some(Command::Estimate(a)) = cli.command else { panic!("not an estimate") };
    let i = match inputs(&a) {
        Ok(i) => i,
        Err(e) => panic!("the row's flags are refused: {args:?}: {e:#}"),
    };
    let gpu = i.gpu.unwrap_or_else(|| panic!("the row names no --gpu: {args:?}"));
    let v = verdict(&i.sc, gpu.memory_bytes()).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    (i.sc, gpu, v.estimate.total, v.fits)
}

fn scenario(model: &str, args: &[String]) -> Option<(vramscope::estimate::Scenario, Gpu)> {
    let words = ["vramscope", "estimate", "--model", model]
        .into_iter()
        .map(str::to_owned)
        .chain(args.iter().cloned());
    let Ok(Cli { command: Some(Command::Estimate(a)), .. }) = Cli::try_parse_from(words) else { return None };
    let i = inputs(&a).ok()?;
    Some((i.sc, i.gpu?))
}

fn check_row(
    model: &str,
    what: &str,
    args: &[String],
    sc: &vramscope::estimate::Scenario,
    total: u64,
    fits: bool,
) {
    let (parsed, _, t, f) = re_estimate(model, args);
    assert_eq!(&parsed, sc, "{what}: the flags {args:?} describe another scenario");
    assert_eq!(t, total, "{what}: `estimate {}` gives {t} B, the row shows {total} B", args.join(" "));
    assert_eq!(f, fits, "{what}: fits");
}

fn arb_args() -> impl Strategy<Value = (String, Vec<String>)> {
    (
        prop::sample::select(vec!["llama-3.2-1b", "qwen3-0.6b", "gpt2", "llama-2-7b", "mistral-7b"]),
        prop::sample::select(vec!["t4", "rtx-4090", "a100-40gb", "l4"]),
        1u64..=8,
        prop::sample::select(vec![256u64, 512, 1024, 2048]),
        prop::sample::select(vec!["bf16", "bf16-mixed", "fp32", "fp16-amp"]),
        prop::sample::select(vec!["adamw", "adamw-8bit", "sgd"]),
        prop::sample::select(vec!["none", "full", "selective"]),
        prop::option::of(prop::sample::select(vec!["8:q,v", "16:q,k,v,o,gate,up,down"])),
        any::<bool>(),
    )
        .prop_map(|(m, g, b, s, p, o, c, lora, gc)| {
            let mut v: Vec<String> = [
                "--gpu",
                g,
                "--batch",
                &b.to_string(),
                "--seq",
                &s.to_string(),
                "--precision",
                p,
                "--optimizer",
                o,
                "--checkpoint",
                c,
            ]
            .into_iter()
            .map(str::to_owned)
            .collect();
            if let Some(l) = lora {
                v.extend(["--lora".to_owned(), l.to_owned()]);
            }
            if gc {
                v.extend(["--alloc-conf".to_owned(), "expandable_segments:True".to_owned()]);
            }
            (m.to_owned(), v)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_advice_number_is_what_estimate_gives_for_the_flags_it_names((model, args) in arb_args()) {
        let Some((sc, gpu)) = scenario(&model, &args) else { return Ok(()) };
        // the flags of a scenario give back the scenario
        let own = vramscope::flags::words(&vramscope::flags::flags(&sc, &gpu));
        let (back, ..) = re_estimate(&model, &own);
        prop_assert_eq!(&back, &sc);
        let speed = vramscope::plan::SpeedModel::default();
        let global = sc.batch;
        for p in vramscope::options::hardware_paths(&sc, &gpu, global, &speed) {
            check_row(&model, &format!("options row {}", p.kind), &p.estimate_args, &p.scenario, p.total_bytes, p.fits);
        }
        if let Some(r) = vramscope::roadmap::roadmap(&sc, &gpu) {
            for s in r.steps.iter().chain(&r.raise_batch).chain(&r.method) {
                if s.kind == vramscope::roadmap::StepKind::NotMemory {
                    continue;
                }
                let (parsed, g, t, f) = re_estimate(&model, &s.estimate_args);
                prop_assert_eq!(Some(t), s.total_after, "roadmap step {}: {:?}", s.title, s.estimate_args);
                prop_assert_eq!(f, s.fits, "roadmap step {}", s.title);
                prop_assert_eq!(g.memory_bytes(), s.capacity);
                let mb = vramscope::fit::max_batch(&parsed, g.memory_bytes());
                prop_assert_eq!(mb, s.max_batch_after, "roadmap step {}", s.title);
            }
        }
        for p in vramscope::plan::search(&sc, &gpu, 4, 8, &speed).iter().take(6) {
            check_row(&model, "search row", &p.estimate_args, &p.scenario, p.total_bytes, true);
            prop_assert_eq!(p.micro_batch * p.grad_accum * p.parallel.dp, 8);
        }
    }
}
