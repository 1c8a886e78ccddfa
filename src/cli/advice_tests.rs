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
    let v = verdict(&i.sc, gpu.capacity()).unwrap_or_else(|e| panic!("{args:?}: {e}"));
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
                prop_assert_eq!(g.capacity(), s.capacity);
                let mb = vramscope::fit::max_batch(&parsed, g.capacity());
                prop_assert_eq!(mb, s.max_batch_after, "roadmap step {}", s.title);
            }
        }
        for p in vramscope::plan::search(&sc, &gpu, 4, 8, &speed).iter().take(6) {
            check_row(&model, "search row", &p.estimate_args, &p.scenario, p.total_bytes, true);
            prop_assert_eq!(p.micro_batch * p.grad_accum * p.parallel.dp, 8);
        }
    }
}

/// An MoE model's search tries expert parallelism, and its rows reproduce as `estimate` with
/// their `--ep`.
#[test]
fn an_moe_search_tries_expert_parallelism_and_its_rows_reproduce() {
    let args: Vec<String> =
        ["--gpu", "h100-80gb", "--seq", "4096", "--batch", "1"].iter().map(|s| (*s).to_owned()).collect();
    let Some((sc, gpu)) = scenario("mixtral-8x7b", &args) else { panic!("no scenario") };
    let plans = vramscope::plan::search(&sc, &gpu, 16, 64, &vramscope::plan::SpeedModel::default());
    assert!(plans.iter().any(|p| p.parallel.ep > 1), "no row with --ep");
    assert!(plans.iter().any(|p| p.parallel.ep == 1), "no row without");
    for p in plans.iter().filter(|p| p.parallel.ep > 1).take(4) {
        assert!(p.estimate_args.windows(2).any(|w| w[0] == "--ep" && w[1] == p.parallel.ep.to_string()));
        check_row("mixtral-8x7b", "search row with --ep", &p.estimate_args, &p.scenario, p.total_bytes, true);
    }
    // the same layout with more expert parallelism holds fewer experts per rank
    let at = |ep: u64| {
        let mut s = sc.clone();
        s.parallel.dp = 16;
        s.parallel.zero = 1;
        s.parallel.ep = ep;
        vramscope::estimate::estimate(&s).unwrap_or_else(|e| panic!("ep {ep}: {e}")).total
    };
    assert!(at(8) < at(1));
}

/// `vramscope serve --model MODEL ARGS…` as the CLI reads it.
fn re_serve(model: &str, args: &[String]) -> vramscope::serve::Serve {
    let words =
        ["vramscope", "serve", "--model", model].into_iter().map(str::to_owned).chain(args.iter().cloned());
    let cli =
        Cli::try_parse_from(words).unwrap_or_else(|e| panic!("the row's flags do not parse: {args:?}: {e}"));
    let Some(Command::Serve(a)) = cli.command else { panic!("not a serve") };
    let (s, _) = super::serve::setup(&a).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
    vramscope::serve::serve(&s.model, &s.gpu, &s.cfg, s.checkpoint_dtype.as_deref())
        .unwrap_or_else(|e| panic!("the row's flags are refused: {args:?}: {e}"))
}

/// The answer without its notes (an explicit flag words a default's note differently).
fn figures(s: &vramscope::serve::Serve) -> vramscope::serve::Serve {
    vramscope::serve::Serve { notes: Vec::new(), ..s.clone() }
}

fn arb_serve() -> impl Strategy<Value = (String, Vec<String>, Option<f64>)> {
    (
        prop::sample::select(vec![
            "llama-3.1-8b",
            "llama-3.1-70b",
            "mistral-7b",
            "qwen3-0.6b",
            "mixtral-8x7b",
        ]),
        prop::sample::select(vec!["t4", "rtx-4090", "a100-40gb", "h100-80gb", "l40s"]),
        prop::sample::select(vec![None, Some(4096u64), Some(32768)]),
        prop::option::of(prop::sample::select(vec![1024u64, 4096])),
        prop::option::of(prop::sample::select(vec![8.0f64, 64.0])),
        prop::sample::select(vec![0.8f64, 0.9]),
    )
        .prop_map(|(m, g, len, ctx, target, u)| {
            let mut v =
                vec!["--gpu".to_owned(), g.to_owned(), "--gpu-memory-utilization".to_owned(), u.to_string()];
            if let Some(l) = len {
                v.extend(["--max-model-len".to_owned(), l.to_string()]);
            }
            if let Some(c) = ctx {
                v.extend(["--context".to_owned(), c.to_string()]);
            }
            (m.to_owned(), v, target)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_serving_advice_number_is_what_serve_gives_for_the_flags_it_names((model, args, target) in arb_serve()) {
        let words = ["vramscope", "serve", "--model", &model].into_iter().map(str::to_owned).chain(args.iter().cloned());
        let Ok(Cli { command: Some(Command::Serve(a)), .. }) = Cli::try_parse_from(words) else { return Ok(()) };
        let Ok((setup, _)) = super::serve::setup(&a) else { return Ok(()) };
        let Ok(adv) = vramscope::serve::advice::advise(&setup, target) else { return Ok(()) };
        // the server's own flags give it back
        prop_assert_eq!(figures(&re_serve(&model, &adv.before.args())), figures(&adv.before));
        for st in adv.options.iter().chain(&adv.roadmap).chain(&adv.beside) {
            let r = re_serve(&model, &st.serve_args);
            prop_assert_eq!(figures(&r), figures(&st.serve), "{}: {:?}", st.title, st.serve_args);
            prop_assert_eq!(r.kv_tokens, st.kv_tokens);
            prop_assert_eq!(r.fits, st.starts);
            prop_assert_eq!(r.gpus(), st.gpus);
        }
        // the path only moves forward, and the headline is its last step's
        let mut prev = &adv.before;
        for st in &adv.roadmap {
            prop_assert!(vramscope::serve::advice::gains(prev, &st.serve), "{}", st.title);
            prev = &st.serve;
        }
        prop_assert_eq!(adv.meets_target_after, adv.roadmap.last().map_or(adv.before.fits && target.is_none_or(|t| adv.before.concurrency_at_context.unwrap_or(adv.before.max_concurrency) >= t), |s| s.meets_target));
    }
}

#[test]
fn the_fsdp_implementation_is_named_by_the_flags_and_given_back() {
    let base =
        ["--gpu", "a100-40gb", "--lora", "8:q,v", "--dp", "2", "--fsdp", "full_shard", "--grad-accum", "4"];
    let extras: [&[&str]; 5] = [
        &[],
        &["--fsdp-impl", "fsdp1-shared"],
        &["--framework", "litgpt"],
        &["--framework", "litgpt", "--fsdp-impl", "fsdp1"],
        &["--framework", "torchtune"],
    ];
    let mut seen = Vec::new();
    for extra in extras {
        let args: Vec<String> = base.iter().chain(extra).map(|s| (*s).to_owned()).collect();
        let (sc, gpu) = scenario("llama-2-7b", &args).unwrap_or_else(|| panic!("{args:?}"));
        let own = vramscope::flags::words(&vramscope::flags::flags(&sc, &gpu));
        let (back, ..) = re_estimate("llama-2-7b", &own);
        assert_eq!(back, sc, "{own:?}");
        seen.push(sc.stack.fsdp);
    }
    use vramscope::estimate::FsdpImpl::{Fsdp1, Fsdp1Shared, Fsdp2};
    assert_eq!(seen, [Fsdp1, Fsdp1Shared, Fsdp1Shared, Fsdp1, Fsdp2]);
}

/// The scenario with one knob moved, as `estimate` flags (the knob's own flag at `x`).
fn knob_args(
    sc: &vramscope::estimate::Scenario,
    gpu: &Gpu,
    knob: vramscope::fit::Knob,
    x: u64,
) -> Vec<String> {
    let mut s = sc.clone();
    knob.apply(&mut s, x);
    vramscope::flags::words(&vramscope::flags::flags(&s, gpu))
}

fn knob_by_name(name: &str) -> vramscope::fit::Knob {
    use vramscope::fit::Knob;
    match name {
        "batch" => Knob::Batch,
        "seq" => Knob::Seq,
        "segments" => Knob::Segments,
        _ => Knob::Gpus,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, failure_persistence: None, ..ProptestConfig::default() })]

    /// The what-if curves (the CSV export, the JSON report's `what_if`, the Markdown report's
    /// tables) and the longest sequence that fits are, point by point, what `estimate` prints with
    /// the knob's flag at that value: once they used a flat 5 % reserve where `estimate` replays
    /// the allocator (47.37 GiB in a table under a 48.65 GiB header).
    #[test]
    fn every_curve_and_export_number_is_what_estimate_gives((model, args) in arb_args(), pick in 0usize..64) {
        let Some((sc, gpu)) = scenario(&model, &args) else { return Ok(()) };
        let file = vramscope::export::ScenarioFile::new(sc.clone(), Some(&gpu), None);
        let csv = vramscope::export::curves_csv(&file);
        let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
        for knob in ["batch", "seq", "segments", "gpus"] {
            let mine: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == knob).collect();
            if mine.is_empty() {
                continue;
            }
            let row = mine[pick % mine.len()];
            let x: u64 = row[1].parse().unwrap_or_else(|e| panic!("CSV value {row:?}: {e}"));
            let (_, _, t, f) = re_estimate(&model, &knob_args(&sc, &gpu, knob_by_name(knob), x));
            let total: u64 = row[3].parse().unwrap_or_else(|e| panic!("CSV total {row:?}: {e}"));
            prop_assert_eq!(total, t, "CSV {} = {}", knob, x);
            prop_assert_eq!(row[4] == "true", f, "CSV fits at {} = {}", knob, x);
        }
        let e = vramscope::fit::verdict(&sc, gpu.capacity()).unwrap_or_else(|e| panic!("{e}")).estimate;
        let json = vramscope::export::report_json(&file, &e);
        let Some(curves) = json["what_if"].as_object() else { panic!("no what_if in the report") };
        for (knob, pts) in curves {
            let Some(pts) = pts.as_array() else { panic!("what_if.{knob} is not a list") };
            if pts.is_empty() {
                continue;
            }
            let p = &pts[pick % pts.len()];
            let Some(x) = p["x"].as_u64() else { panic!("what_if.{knob}: {p}") };
            let (_, _, t, f) = re_estimate(&model, &knob_args(&sc, &gpu, knob_by_name(knob), x));
            prop_assert_eq!(p["total_bytes"].as_u64(), Some(t), "report what_if {} = {}", knob, x);
            prop_assert_eq!(p["fits"].as_bool(), Some(f));
        }
        let md = vramscope::export::report_markdown(&file, &e);
        let gib = |b: u64| format!("{:.2} GiB", b as f64 / vramscope::units::GIB);
        for x in [1u64, 2, 4] {
            let (_, _, t, _) = re_estimate(&model, &knob_args(&sc, &gpu, vramscope::fit::Knob::Batch, x));
            let row_start = format!("| {x} | ");
            let row = md.lines().find(|l| l.starts_with(&row_start) && l.contains("GiB"));
            if let Some(row) = row {
                prop_assert!(row.contains(&gib(t)), "Markdown batch {}: {} vs estimate {}", x, row, gib(t));
            }
        }
        // the longest sequence that fits: `estimate` fits there and not one token later
        if let Some(n) = vramscope::fit::max_seq(&sc, gpu.capacity()) {
            let (_, _, _, f) = re_estimate(&model, &knob_args(&sc, &gpu, vramscope::fit::Knob::Seq, n));
            prop_assert!(f, "max_seq {} does not fit", n);
            if n < vramscope::fit::seq_limit(&sc) {
                let (_, _, _, f) = re_estimate(&model, &knob_args(&sc, &gpu, vramscope::fit::Knob::Seq, n + 1));
                prop_assert!(!f, "max_seq {} but {} fits", n, n + 1);
            }
        }
    }
}
