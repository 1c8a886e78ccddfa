//! `vramscope plan`.

use super::{EstimateArgs, bounds, inputs};
use anyhow::{Context, Result, bail};
use clap::Args;
use vramscope::estimate::scenario::CheckpointKeyword;
use vramscope::estimate::{Estimate, Scenario};
use vramscope::fit;
use vramscope::gpu::Gpu;
use vramscope::i18n::Lang;
use vramscope::report::{self, FitInfo};

/// Flags of `plan`.
#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// The scenario (same flags as `estimate`; --gpu is required).
    #[command(flatten)]
    pub estimate: EstimateArgs,
    /// GPUs in the job (default: the product of the parallel degrees).
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_GPUS))]
    pub gpus: Option<u64>,
    /// Sequences per optimizer step over the whole job (default: micro-batch x data-parallel).
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_TOKENS))]
    pub global_batch: Option<u64>,
    /// Search layouts (TP, PP, ZeRO, checkpointing, offload) of --gpus GPUs and rank them.
    #[arg(long)]
    pub search: bool,
    /// Model FLOPs utilisation assumed for step times.
    #[arg(long, default_value_t = 0.4, value_parser = bounds::fraction())]
    pub mfu: f64,
    /// Show this many plans with --search.
    #[arg(long, default_value_t = 15, value_parser = bounds::count(1, 1000))]
    pub top: usize,
    /// Print a short / mid / long-term roadmap (Markdown, or JSON with --json) of the changes
    /// that make the scenario fit, each measured by the estimator.
    #[arg(long, conflicts_with = "search")]
    pub roadmap: bool,
    /// With --roadmap: the share of the card kept free for "fits" (e.g. 0.1).
    #[arg(long, default_value_t = 0.0, requires = "roadmap")]
    #[arg(value_parser = bounds::real(0.0, bounds::End::Closed, 0.9, bounds::End::Open))]
    pub headroom: f64,
    /// With --roadmap: the language of its text (titles, headline, headings, prose); the figures,
    /// flags and commands are the same in every language, as in `export --format roadmap`.
    #[arg(long, value_name = "en|zh-CN", default_value = Lang::En.name(), requires = "roadmap")]
    #[arg(value_parser = super::choice::choice::<Lang>().notes(super::notes::LANG))]
    pub lang: Lang,
    /// Print the hardware paths: a bigger card of the same generation, a newer generation, and
    /// the fewest GPUs of this card that some layout fits, with speed-up and price.
    #[arg(long, conflicts_with_all = ["search", "roadmap"])]
    pub options: bool,
    /// Tokens of the whole run (e.g. 2e12): adds GPU-hours and cost on every catalog instance
    /// (6 x active params x tokens FLOPs to train, 2 x for inference, at --mfu).
    #[arg(long, value_name = "N", value_parser = bounds::real(1.0, bounds::End::Closed, 1e18, bounds::End::Closed))]
    pub tokens: Option<f64>,
    /// Spot / preemptible discount on on-demand prices.
    #[arg(long, default_value_t = 0.70, value_parser = bounds::share())]
    pub spot_discount: f64,
    /// Committed-use / savings-plan discount on on-demand prices.
    #[arg(long, default_value_t = 0.40, value_parser = bounds::share())]
    pub committed_discount: f64,
}

fn costs(
    a: &PlanArgs,
    sc: &vramscope::estimate::Scenario,
    e: &vramscope::estimate::Estimate,
) -> Result<Option<(f64, Vec<vramscope::cost::RunOption>)>> {
    use vramscope::cost;
    let Some(tokens) = a.tokens else { return Ok(None) };
    if !(tokens.is_finite() && (1.0..=1e18).contains(&tokens)) {
        bail!("--tokens {tokens} is out of range (1 to 1e18; the largest published runs are under 1e14)");
    }
    for (name, d) in [("--spot-discount", a.spot_discount), ("--committed-discount", a.committed_discount)] {
        if !(0.0..1.0).contains(&d) {
            bail!("{name} {d} is outside [0, 1)");
        }
    }
    let train = sc.mode == vramscope::estimate::Mode::Train;
    let flops = cost::run_flops(vramscope::plan::active_params(sc, e.n_params), tokens, train);
    let d = cost::Discounts { spot: a.spot_discount, committed: a.committed_discount };
    Ok(Some((
        flops,
        cost::run_options(
            |g| fit::verdict(sc, g.capacity()).ok().map(|v| (v.fits, v.estimate.total)),
            sc.parallel.world(),
            flops,
            a.mfu,
            &d,
        ),
    )))
}

/// Runs `plan`.
pub fn run_plan(a: &PlanArgs) -> Result<String> {
    use vramscope::plan;
    let super::Inputs { mut sc, notes, gpu, global_batch: file_global, .. } = inputs(&a.estimate)?;
    let gpu = gpu.context("plan needs --gpu")?;
    if !(0.01..=1.0).contains(&a.mfu) {
        bail!("--mfu {} is outside (0, 1]", a.mfu);
    }
    let speed = plan::SpeedModel { mfu: a.mfu, ..Default::default() };
    let global_arg = a.global_batch.or(file_global);
    if a.search {
        // the search picks every degree: --gpus is the world, the global batch defaults to one
        // micro-batch on every GPU
        let gpus = a.gpus.unwrap_or_else(|| sc.parallel.world());
        if gpus == 0 {
            bail!("--gpus must be at least 1");
        }
        let global = global_arg.unwrap_or(sc.batch.saturating_mul(gpus));
        if global == 0 {
            bail!("--global-batch must be at least 1");
        }
        return search(a, &sc, &gpu, gpus, global, global_arg.is_none(), &speed);
    }
    let global = plan::resolve_job(&mut sc, a.gpus, a.estimate.parallel.dp.is_some(), global_arg)
        .map_err(anyhow::Error::msg)?;
    if a.roadmap {
        return roadmap(a, &sc, &gpu);
    }
    if a.options {
        return hardware_options(a, &sc, &gpu, global, &speed);
    }
    // the verdict `estimate --gpu` gives (the allocator replayed on the card)
    let cap = gpu.capacity();
    let v = fit::verdict(&sc, cap)?;
    let fits = v.fits;
    let e = v.estimate;
    let step = plan::step_time(&sc, &e, &gpu, global, &speed);
    let rule = plan::rule_of_thumb_speedup(sc.parallel.dp);
    let aware = plan::comm_aware_speedup(&sc, &gpu, sc.parallel.dp, global, &speed);
    let min = plan::min_gpus(&sc, &gpu, global);
    let figures = Figures { e, fits, cap, global, step, rule, aware, min };
    if a.estimate.json {
        return layout_json(a, &sc, gpu, &notes, figures);
    }
    layout_text(a, &sc, gpu, &notes, figures)
}

/// `plan --roadmap`: Markdown, or JSON with --json.
fn roadmap(a: &PlanArgs, sc: &Scenario, gpu: &Gpu) -> Result<String> {
    let r = vramscope::roadmap::roadmap_in(sc, gpu, a.headroom, a.lang)
        .context("the scenario cannot be estimated")?;
    if a.estimate.json {
        return Ok(serde_json::to_string_pretty(&r)? + "\n");
    }
    Ok(vramscope::roadmap::to_markdown_in(sc, &r, Some(&model_arg(a)), a.lang))
}

/// `plan --options`: the hardware paths, each with what it changes and its `estimate` command.
fn hardware_options(
    a: &PlanArgs,
    sc: &Scenario,
    gpu: &Gpu,
    global: u64,
    speed: &vramscope::plan::SpeedModel,
) -> Result<String> {
    let paths = vramscope::options::hardware_paths(sc, gpu, global, speed);
    if a.estimate.json {
        return Ok(serde_json::to_string_pretty(
            &serde_json::json!({"schema": 1, "global_batch": global, "paths": paths}),
        )? + "\n");
    }
    let mut s = format!(
        "{} on {}, global batch {global}: hardware paths (under each row, what it changes and the `vramscope estimate` command that gives its total)\n\n",
        sc.model.name, gpu.name,
    );
    s += "  path                                       GPU                             GPUs  layout                                          mb  accum   GiB/GPU  capacity  fits   speed-up      $/h  $/M tokens\n";
    for p in &paths {
        let q = &p.parallel;
        let offload = match q.offload {
            vramscope::estimate::Offload::None => String::new(),
            o => format!(" offload {}", o.name()),
        };
        s += &format!(
            "  {:<42} {:<31} {:>4}  {:<46} {:>3} {:>6} {:>9.1} {:>9.1}  {:<5} {:>8.2}x {:>8} {:>11}\n",
            if p.global_batch == global {
                p.kind.clone()
            } else {
                format!("{} (global batch {})", p.kind, p.global_batch)
            },
            p.gpu_name,
            p.gpus,
            format!("dp{} tp{} pp{} ZeRO-{} ckpt {}{offload}", q.dp, q.tp, q.pp, q.zero, p.checkpoint),
            p.micro_batch,
            p.grad_accum,
            p.total_bytes as f64 / vramscope::units::GIB,
            p.capacity as f64 / vramscope::units::GIB,
            if p.fits { "yes" } else { "no" },
            p.speedup,
            p.usd_per_hour.map_or("-".into(), |x| format!("{x:.2}")),
            p.usd_per_m_tokens.map_or("-".into(), |x| format!("{x:.2}")),
        );
        if !p.changes.is_empty() {
            s += &format!("      changes: {}\n", p.changes.join(" "));
        }
        s +=
            &format!("      as: vramscope estimate --model {} {}\n", model_arg(a), p.estimate_args.join(" "));
    }
    Ok(s)
}

/// A layout's figures on its card, as `plan` prints them.
struct Figures {
    /// The most loaded rank's estimate, as `estimate --gpu` gives it (the allocator replayed).
    e: Estimate,
    fits: bool,
    /// The card's memory.
    cap: u64,
    global: u64,
    step: vramscope::plan::StepTime,
    /// Speed-ups over one GPU: the rule of thumb and the communication-aware one.
    rule: f64,
    aware: Option<f64>,
    /// The fewest data-parallel GPUs that fit.
    min: Option<u64>,
}

/// `plan --json`: the estimate's JSON with the layout, step time, speed-ups and run costs.
fn layout_json(a: &PlanArgs, sc: &Scenario, gpu: Gpu, notes: &[String], figures: Figures) -> Result<String> {
    let Figures { e, fits, cap, global, step, rule, aware, min } = figures;
    let fit = FitInfo { fits, max_batch: fit::max_batch(sc, cap), max_seq: fit::max_seq(sc, cap), gpu };
    let mut v = report::to_json(sc, &e, Some(&fit), notes);
    if let Some(o) = v.as_object_mut() {
        if let Some(b) = o.get_mut("bytes").and_then(|b| b.as_object_mut()) {
            b.insert("cpu_bytes".into(), serde_json::json!(e.cpu_bytes));
            b.insert("nvme_bytes".into(), serde_json::json!(e.nvme_bytes));
        }
        o.insert("parallel".into(), serde_json::json!(sc.parallel));
        o.insert("world".into(), serde_json::json!(sc.parallel.world()));
        o.insert("stage".into(), serde_json::json!(e.stage));
        o.insert("global_batch".into(), serde_json::json!(global));
        o.insert("step_time".into(), serde_json::json!(step));
        o.insert(
            "speedup".into(),
            serde_json::json!({"rule_of_thumb": rule, "comm_aware": aware, "gpus": sc.parallel.dp}),
        );
        o.insert("min_gpus_for_global_batch".into(), serde_json::json!(min));
        if let Some((flops, opts)) = costs(a, sc, &e)? {
            o.insert(
                "run".into(),
                serde_json::json!({"tokens": a.tokens, "flops": flops, "mfu": a.mfu, "options": opts}),
            );
        }
    }
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// `plan`'s table: the estimate, the layout, the step time and speed-ups, and run costs.
fn layout_text(a: &PlanArgs, sc: &Scenario, gpu: Gpu, notes: &[String], figures: Figures) -> Result<String> {
    let Figures { e, fits, cap, global, step, rule, aware, min } = figures;
    let fit = FitInfo { fits, max_batch: fit::max_batch(sc, cap), max_seq: fit::max_seq(sc, cap), gpu };
    let mut s = report::to_text(sc, &e, Some(&fit), notes);
    let p = &sc.parallel;
    s += &format!(
        "\n  layout: {} = dp {} x tp {} x pp {} x cp {}{}; ZeRO-{}{}; most loaded rank: pipeline stage {} of {} ({} blocks, {:.1} micro-batches in flight)\n",
        vramscope::units::count(p.world(), "GPU"),
        p.dp,
        p.tp,
        p.pp,
        p.cp,
        if p.sp { " + SP" } else { "" },
        p.effective_zero(),
        p.fsdp.map(|f| format!(" (FSDP {f:?})")).unwrap_or_default(),
        e.stage.index + 1,
        e.stage.stages,
        e.stage.blocks,
        e.stage.in_flight,
    );
    let per_step = sc.micro_batches_per_step();
    s += &format!(
        "  global batch {global} = micro-batch {} x {} x dp {}\n",
        sc.batch,
        if p.pp > 1 {
            vramscope::units::count(per_step, "pipeline micro-batch")
        } else {
            vramscope::units::count(per_step, "accumulation step")
        },
        p.dp
    );
    if e.cpu_bytes + e.nvme_bytes > 0 {
        s += &format!(
            "  offload: {:.1} GiB host RAM, {:.1} GiB NVMe per GPU\n",
            e.cpu_bytes as f64 / vramscope::units::GIB,
            e.nvme_bytes as f64 / vramscope::units::GIB
        );
    }
    s += &format!(
        "  step (global batch {global}): {:.2} s = compute {:.2} + bubble {:.2} + exposed comm {:.2}; {:.0} tokens/s (MFU {:.0} %)\n",
        step.step_s,
        step.compute_s,
        step.bubble_s,
        step.exposed_comm_s,
        step.tokens_per_s,
        100.0 * a.mfu
    );
    s += &format!(
        "  speed-up on {}: rule of thumb n/(1+0.5(n-1)) = {rule:.2}x; communication-aware = {}\n",
        vramscope::units::count(p.dp, "data-parallel GPU"),
        aware.map_or("n/a".into(), |x| format!("{x:.2}x"))
    );
    if let Some(m) = min {
        s += &format!("  fewest data-parallel GPUs that fit (this layout): {m}\n");
    }
    run_costs_text(&mut s, a, sc, &e)?;
    Ok(s)
}

/// With --tokens: the run's FLOPs and its cost on every catalog instance.
fn run_costs_text(s: &mut String, a: &PlanArgs, sc: &Scenario, e: &Estimate) -> Result<()> {
    let p = &sc.parallel;
    if let Some((flops, opts)) = costs(a, sc, e)? {
        *s += &format!(
            "\n  run of {:.3e} tokens = {flops:.3e} FLOPs at MFU {:.0} %, on whole instances with at least the layout's {} GPUs, extra GPUs data-parallel (prices: presets/clouds.ron)\n",
            a.tokens.unwrap_or(0.0),
            100.0 * a.mfu,
            p.world()
        );
        *s += "  option                              GPU         fits  headroom  inst   wall h    GPU-h    on-demand         spot    committed\n";
        for o in &opts {
            let Some(c) = &o.cost else { continue };
            *s += &format!(
                "  {:<35} {:<11} {:<5} {:>+8.1} {:>5} {:>8.1} {:>8.0} {:>12} {:>12} {:>12}\n",
                format!("{} {}", o.instance.provider, o.instance.name),
                o.instance.gpu,
                if o.fits { "yes" } else { "no" },
                o.headroom as f64 / vramscope::units::GIB,
                c.instances,
                c.wall_hours,
                c.gpu_hours,
                vramscope::cost::usd(c.on_demand),
                if o.instance.purchase.is_some() { "-".into() } else { vramscope::cost::usd(c.spot) },
                if o.instance.purchase.is_some() { "-".into() } else { vramscope::cost::usd(c.committed) },
            );
            if let Some((slices, gib, per_gpu)) = o.mig {
                *s += &format!(
                    "      MIG: a {slices}g slice ({gib:.0} GB) holds this job: {per_gpu} such jobs share one GPU\n"
                );
            }
        }
        *s += "  spot: interruptions cost the time since the last checkpoint plus a restart; checkpoint often.\n";
    }
    Ok(())
}

fn search(
    a: &PlanArgs,
    sc: &vramscope::estimate::Scenario,
    gpu: &vramscope::gpu::Gpu,
    gpus: u64,
    global: u64,
    default_global: bool,
    speed: &vramscope::plan::SpeedModel,
) -> Result<String> {
    use vramscope::plan;
    let t0 = std::time::Instant::now();
    let plans = plan::search(sc, gpu, gpus, global, speed);
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if a.estimate.json {
        let v = serde_json::json!({"schema": 1, "model": sc.model.name, "gpu": gpu.id, "gpus": gpus,
            "global_batch": global, "search_ms": ms, "plans": plans.iter().take(a.top).collect::<Vec<_>>()});
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    let mut s = format!(
        "{} on {} x {} ({:.1} GiB), global batch {global}{} x {}: {} feasible layouts (searched in {ms:.0} ms)\n",
        sc.model.name,
        gpus,
        gpu.name,
        gpu.memory_mib as f64 / 1024.0,
        if default_global { " (one micro-batch per GPU; --global-batch sets it)" } else { "" },
        vramscope::report::shape_text(sc),
        plans.len()
    );
    s += "  every row: micro-batch x accumulation (pipeline: micro-batches per step) x dp = the global batch; GiB/GPU is `vramscope estimate` of its most loaded rank\n\n";
    // an MoE model's rows differ by their expert-parallel degree too
    let moe = sc.model.transformer().is_some_and(|t| t.moe.is_some());
    s += if moe {
        "  rank  dp  ep  tp  pp  zero  ckpt  offload    mb  accum   GiB/GPU  headroom   step s   tokens/s\n"
    } else {
        "  rank  dp  tp  pp  zero  ckpt  offload    mb  accum   GiB/GPU  headroom   step s   tokens/s\n"
    };
    for (i, p) in plans.iter().take(a.top).enumerate() {
        let q = &p.parallel;
        let ep = if moe { format!(" {:>3}", q.ep) } else { String::new() };
        s += &format!(
            "  {:>4} {:>3}{ep} {:>3} {:>3} {:>5}  {:<5} {:<9} {:>3} {:>6} {:>9.1} {:>9.1} {:>8.2} {:>10.0}\n",
            i + 1,
            q.dp,
            q.tp,
            q.pp,
            q.zero,
            if p.checkpoint == CheckpointKeyword::None.name() { "no" } else { "full" },
            q.offload.name(),
            p.micro_batch,
            p.grad_accum,
            p.total_bytes as f64 / vramscope::units::GIB,
            p.headroom_bytes as f64 / vramscope::units::GIB,
            p.step.step_s,
            p.step.tokens_per_s
        );
    }
    match plans.first() {
        Some(p) => {
            s += &format!(
                "\n  row 1 as an estimate: vramscope estimate --model {} {}\n",
                model_arg(a),
                vramscope::flags::line(&vramscope::flags::flags(&p.scenario, gpu))
            );
        }
        None => s += "  nothing fits: more GPUs, a larger card, LoRA/QLoRA or offload to NVMe\n",
    }
    Ok(s)
}

/// The model as the user named it (a preset, a path), or the scenario file's model name.
pub(super) fn model_arg(a: &PlanArgs) -> String {
    a.estimate.model.clone().unwrap_or_else(|| {
        a.estimate.scenario.as_ref().map_or_else(String::new, |p| format!("<the model of {}>", p.display()))
    })
}
