//! The Live tab: this machine's GPUs over a fake sampler against the estimate, and a cluster read
//! rank by rank against the plan, in both languages.

use super::*;

/// The Live tab monitoring a fake leaking run (20 GiB + 10 GiB per step, 200 MiB kept per step)
/// on an 80 GiB card, after its first 150 samples (bounded in time, not in frames, whose cost
/// varies with the machine); `live` and `start` are the tab's and the button's labels in the
/// state's language.
fn monitoring_a_leaking_run(state: AppState, live: &str, start: &str) -> Harness<'static, VramApp> {
    use vramscope::gui::live::Live;
    use vramscope::monitor::{FakeSampler, Sampler};
    let gib = 1u64 << 30;
    let curve: Vec<u64> = (0..200u64)
        .map(|i| 20 * gib + (i / 10) * (200 << 20) + 10 * gib * (i % 10).min(10 - i % 10) / 5)
        .collect();
    let mut app = VramApp::new(state);
    app.live = Live::with_factory(Box::new(move |_| {
        Ok(Box::new(FakeSampler::from_curve(80 * gib, &curve, 0.25)) as Box<dyn Sampler>)
    }));
    app.live.interval_ms = 1;
    let mut h = test_harness(egui::vec2(1280.0, 800.0), app);
    h.run();
    h.get_by_label(live).click();
    h.run();
    h.get_by_label(start).click();
    // the thread samples every 10 ms at the fastest
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while h.state().live.history.samples.len() < 150 && std::time::Instant::now() < deadline {
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h
}

#[test]
fn live_tab_overlays_measured_usage_and_reports_a_missing_driver() {
    use vramscope::gui::live::Live;
    use vramscope::monitor::MonitorError;
    let mut h = monitoring_a_leaking_run(AppState::default(), "Live GPU", "Start monitoring");
    assert!(
        h.state().live.history.samples.len() >= 150,
        "samples arrive from the thread: {} {:?} {:?}",
        h.state().live.history.samples.len(),
        h.state().live.problem,
        h.state().state.view.tab
    );
    h.run_steps(2);
    assert!(h.query_by_label_contains("measured").is_some(), "measured line on the bar");
    assert!(h.query_by_label_contains("memory leak").is_some(), "the curve is diagnosed");
    h.get_by_label("Pause").click();
    h.run_steps(2);
    assert!(h.state().live.paused);
    // the measured line can follow one process
    h.get_by_label("python (compute)").click();
    h.run_steps(2);
    assert_eq!(h.state().live.process, Some(4242));
    assert!(h.state().live.latest_used().is_some());
    // an OOM message gets explained, with fixes ranked for the current scenario
    h.state_mut().live.oom_text =
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
        capacity of 79.15 GiB of which 1.21 GiB is free."
            .into();
    h.run_steps(2);
    assert!(h.query_by_label_contains("each fix alone would save").is_some());
    assert!(h.query_by_label_contains("fused AdamW").is_some(), "the default scenario's step temporary");

    // no driver: a plain message, the app keeps running, retry is offered
    let mut app = VramApp::new(AppState::default());
    app.live = Live::with_factory(Box::new(|_| Err(MonitorError::NoLibrary)));
    let mut h = test_harness(egui::vec2(1280.0, 800.0), app);
    h.run();
    h.get_by_label("Live GPU").click();
    h.run();
    h.get_by_label("Start monitoring").click();
    h.run();
    assert!(h.query_all_by_label_contains("NVML unavailable").count() >= 1, "in the tab and the status bar");
    assert!(h.query_by_label("Start monitoring").is_some(), "retry is offered");
}

/// The Live tab in Chinese: the curve's diagnosis, the OOM explanation and the ranked fixes come
/// from the core in Chinese, and follow the language when it is switched.
#[test]
fn live_tab_in_chinese_shows_the_translated_diagnosis() {
    use vramscope::gui::lang::Lang;
    let mut state = AppState::default();
    state.view.lang = Some(Lang::ZhCn);
    let mut h = monitoring_a_leaking_run(state, "实时 GPU", "开始监控");
    assert!(h.state().live.history.samples.len() >= 150, "{:?}", h.state().live.problem);
    h.get_by_label("暂停").click();
    h.run_steps(2);
    assert!(h.query_all_by_label_contains("内存泄漏").next().is_some(), "the verdict in Chinese");
    assert!(h.query_all_by_label_contains("每次迭代增长约").next().is_some(), "the advice in Chinese");
    assert!(h.query_all_by_label_contains("memory leak").next().is_none());
    assert!(h.query_all_by_label_contains("Memory grows").next().is_none());
    // the OOM explainer and the fixes ranked for the scenario
    h.state_mut().live.oom_text =
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
        capacity of 79.15 GiB of which 1.21 GiB is free."
            .into();
    h.run_steps(2);
    assert!(
        h.query_all_by_label_contains("一次 2.00 GiB 的分配失败了").next().is_some(),
        "the explanation in Chinese"
    );
    assert!(h.query_all_by_label_contains("改用 fused AdamW").next().is_some(), "the ranked fix in Chinese");
    assert!(h.query_all_by_label_contains("节省").next().is_some());
    assert!(
        h.query_all_by_label_contains("saves").next().is_none()
            && h.query_all_by_label_contains("failed").next().is_none()
    );
    // not an OOM message: why, in Chinese
    h.state_mut().live.oom_text = "hello".into();
    h.run_steps(2);
    assert!(h.query_all_by_label_contains("未找到显存不足报错").next().is_some());
    // back to English: the cached diagnosis follows the language
    h.state_mut().set_lang(Lang::En);
    h.run_steps(2);
    assert!(h.query_all_by_label_contains("memory leak").next().is_some(), "the verdict in English again");
    assert!(h.query_all_by_label_contains("Memory grows by about").next().is_some());
    assert!(h.query_all_by_label_contains("内存泄漏").next().is_none());
}

/// A cluster of 8 GPUs on 2 hosts, as a Prometheus range gives it: a training loop on every GPU
/// (activations every other point), node-b's GPU 3 keeping 300 MiB more at each point.
fn cluster_snapshots(points: u64) -> Vec<vramscope::monitor::Snapshot> {
    use vramscope::monitor::{GpuSample, Snapshot};
    let mib = 1u64 << 20;
    (0..points)
        .map(|n| Snapshot {
            t_s: 1_764_000_000.0 + 15.0 * n as f64,
            gpus: ["node-a", "node-b"]
                .iter()
                .flat_map(|h| {
                    (0..4u32).map(move |g| {
                        let leak = if *h == "node-b" && g == 3 { 300 * n } else { 0 };
                        let used =
                            (30_000 + 1_000 * u64::from(g) + if n % 2 == 1 { 12_000 } else { 0 } + leak)
                                .min(81_021)
                                * mib;
                        GpuSample {
                            index: g,
                            name: "NVIDIA H100 80GB HBM3".into(),
                            total: 81_559 * mib,
                            used,
                            free: 81_021 * mib - used,
                            util_pct: None,
                            processes: Vec::new(),
                            host: Some((*h).to_owned()),
                        }
                    })
                })
                .collect(),
        })
        .collect()
}

/// The Live tab reading `cluster_snapshots(40)` from a fake Prometheus against the plan
/// Llama-3.1-8B over 2 pipeline stages of 4 data-parallel ranks, after "Load range" brought all
/// 40 points; `live` and `load` are the tab's and the button's labels in `lang`.
fn a_loaded_cluster(lang: vramscope::gui::lang::Lang, live: &str, load: &str) -> Harness<'static, VramApp> {
    use vramscope::gui::live::Live;
    use vramscope::gui::state::LiveSource;
    use vramscope::monitor::{FakeSampler, Sampler};
    let script = cluster_snapshots(40);
    let mut state = AppState::default();
    state.settings.dp = 4;
    state.settings.pp = 2;
    state.view.live.source = LiveSource::Prometheus;
    state.view.lang = Some(lang);
    let mut app = VramApp::new(state);
    app.live = Live::with_factory(Box::new(move |s| {
        assert_eq!(s.source, LiveSource::Prometheus, "the chosen source is asked for");
        let now = script.last().cloned().map(Ok).into_iter().collect();
        Ok(Box::new(FakeSampler::new(now).with_history(script.clone())) as Box<dyn Sampler>)
    }));
    app.live.settings = app.state.view.live.clone();
    let mut h = test_harness(egui::vec2(1280.0, 800.0), app);
    h.run();
    h.get_by_label(live).click();
    h.run();
    h.get_by_label(load).click();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while h.state().live.history.samples.len() < 40 && std::time::Instant::now() < deadline {
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(h.state().live.history.samples.len(), 40, "{:?}", h.state().live.problem);
    h
}

#[test]
fn a_cluster_from_prometheus_is_read_rank_by_rank_against_the_plan() {
    use vramscope::gui::lang::Lang;
    let mut h = a_loaded_cluster(Lang::En, "Live GPU", "Load range");
    assert!(h.query_by_label("URL").is_some() && h.query_by_label("Selector").is_some());
    h.run_steps(3);
    // node-b runs ranks 4-7 (the pipeline is outermost): stage 1; its GPU 3 leaks
    assert!(
        h.query_by_label_contains("Most loaded GPU: node-b GPU 3 (rank 7, stage 1)").is_some(),
        "the worst rank is named"
    );
    assert!(h.query_by_label_contains("Curves: 1 of 8 GPUs fail (node-b GPU 3).").is_some());
    // every GPU is against its stage's prediction: the numbers `estimate --stages` prints
    let (sc, cap) = {
        let c = h.state().derived.current.as_ref().unwrap().as_ref().unwrap();
        (c.scenario.clone(), c.capacity())
    };
    let stages = vramscope::estimate::per_stage(&sc, Some(cap)).unwrap();
    assert_eq!(stages.len(), 2);
    for e in &stages {
        let text = vramscope::gui::panels::gib(e.total);
        assert!(
            h.query_all_by_label(&text).count() >= 4,
            "stage {} predicted {text} on its 4 GPUs",
            e.stage.index
        );
    }
    let worst_stage = stages.iter().max_by_key(|e| e.total).unwrap().stage.index;
    assert!(
        h.query_by_label_contains(&format!("most loaded stage is stage {worst_stage}")).is_some()
            || h.query_by_label_contains(&format!("the same: stage {worst_stage}")).is_some()
    );
    // the nodes in another order: node-b is node 0 and runs stage 0; the order is persisted
    h.state_mut().live.settings.host_order = "node-b node-a".into();
    h.run_steps(3);
    assert!(h.query_by_label_contains("Most loaded GPU: node-b GPU 3 (rank 3, stage 0)").is_some());
    assert_eq!(h.state().state.view.live.host_order, "node-b node-a");
    // the plot shows the most loaded GPU once the range arrived
    assert_eq!((h.state().live.host.as_deref(), h.state().live.gpu), (Some("node-b"), 3));
    // named as on its host, with the rank that runs on it (node-b is node 0 now)
    assert!(h.query_by_label_contains("measured used node-b GPU 3 (rank 3)").is_some());
    // the bar's measured line is that GPU's peak, read against the per-rank prediction
    let peak = h.state_mut().live.curves().iter().find(|x| x.key == (Some("node-b".into()), 3)).unwrap().peak;
    assert_eq!(h.state_mut().live.bar_measure(), Some((peak, true)));
    // node-a's GPU 2 stops reporting for the last 10 samples (150 s): it keeps its row, named
    for snap in h.state_mut().live.history.samples.iter_mut().rev().take(10) {
        snap.gpus.retain(|g| !(g.host.as_deref() == Some("node-a") && g.index == 2));
    }
    h.state_mut().live.history.samples.back_mut().unwrap().t_s += 0.001;
    h.run_steps(3);
    assert!(
        h.query_by_label_contains("1 GPU(s) stopped reporting (node or DCGM exporter down?): node-a GPU 2.")
            .is_some()
    );
    assert!(h.query_by_label_contains("no sample for the last 150 s").is_some());
    assert_eq!(h.state_mut().live.curves().len(), 8, "no GPU dropped");
}

/// The cluster view in Chinese: each GPU's verdict and the lists of GPUs follow the language.
#[test]
fn a_cluster_in_chinese_names_each_verdict_in_chinese() {
    use vramscope::gui::lang::Lang;
    let mut h = a_loaded_cluster(Lang::ZhCn, "实时 GPU", "加载范围");
    h.run_steps(3);
    assert!(h.query_all_by_label_contains("曲线：8 块 GPU 中有 1 块异常（node-b GPU 3）").next().is_some());
    assert_eq!(h.query_all_by_label("内存泄漏").count(), 1, "node-b GPU 3's verdict");
    assert_eq!(h.query_all_by_label("正常").count(), 7, "the other GPUs'");
    assert!(h.query_all_by_label_contains("memory leak").next().is_none());
    assert!(h.query_all_by_label("healthy").next().is_none());
    // two GPUs stop reporting: listed the Chinese way
    for snap in h.state_mut().live.history.samples.iter_mut().rev().take(10) {
        snap.gpus.retain(|g| g.host.as_deref() != Some("node-a") || g.index > 1);
    }
    h.state_mut().live.history.samples.back_mut().unwrap().t_s += 0.001;
    h.run_steps(3);
    assert!(h.query_all_by_label_contains("node-a GPU 0、node-a GPU 1").next().is_some());
}

/// A GPU whose use sits near its card from the first sample on is named, not called healthy.
#[test]
fn a_cluster_gpu_near_capacity_all_along_is_flagged() {
    use vramscope::gui::lang::Lang;
    let mut h = a_loaded_cluster(Lang::En, "Live GPU", "Load range");
    for snap in h.state_mut().live.history.samples.iter_mut() {
        for g in snap.gpus.iter_mut().filter(|g| g.host.as_deref() == Some("node-a") && g.index == 1) {
            g.used = 72_000 << 20;
        }
    }
    h.state_mut().live.history.samples.back_mut().unwrap().t_s += 0.001;
    h.run_steps(3);
    assert!(
        h.query_by_label_contains("Near capacity all along: 1 of 8 GPUs (node-a GPU 1)").is_some(),
        "the near-capacity line"
    );
    assert!(h.query_by_label_contains("Curves: 1 of 8 GPUs fail (node-b GPU 3).").is_some());
    assert_eq!(
        h.query_all_by_label("near capacity all along (at the edge, or the allocator holds the card)")
            .count(),
        1
    );
}
