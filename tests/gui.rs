//! GUI interaction tests (egui_kittest through AccessKit, no GPU): controls are found by label,
//! acted on, and the app's state and the shown numbers are checked.

use eframe::egui::{self, Key, Modifiers, accesskit::Role};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vramscope::gui::app::{StatusKind, VramApp};
use vramscope::gui::state::{AppState, ModelChoice, Settings, Tab};

/// The one harness every GUI test uses: same size and theme.
fn test_harness(size: egui::Vec2, app: VramApp) -> Harness<'static, VramApp> {
    Harness::builder()
        .with_size(size)
        .with_theme(egui::Theme::Dark)
        .build_ui_state(|ui, app: &mut VramApp| app.show(ui), app)
}

fn harness() -> Harness<'static, VramApp> {
    let mut h = test_harness(egui::vec2(1280.0, 800.0), VramApp::new(AppState::default()));
    h.run();
    h
}

/// The estimate the window shows.
fn shown(h: &Harness<'_, VramApp>) -> vramscope::estimate::Estimate {
    match &h.state().derived.current {
        Some(Ok(c)) => c.estimate.clone(),
        other => panic!("no estimate: {other:?}", other = other.as_ref().map(|r| r.as_ref().err())),
    }
}

fn total(h: &Harness<'_, VramApp>) -> u64 {
    shown(h).total
}

#[test]
fn moving_the_batch_slider_changes_the_total_and_the_bar() {
    let mut h = harness();
    let before = total(&h);
    let headline_before = format!("{:.1} GiB of", before as f64 / (1u64 << 30) as f64);
    assert!(h.query_by_label_contains(&headline_before).is_some(), "headline shows {headline_before}");
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(16.0);
    h.run();
    assert_eq!(h.state().state.settings.batch, 16);
    let after = total(&h);
    assert!(after > before, "total {before} -> {after}");
    let headline_after = format!("{:.1} GiB of", after as f64 / (1u64 << 30) as f64);
    assert!(h.query_by_label_contains(&headline_after).is_some(), "headline updated to {headline_after}");
    assert!(
        h.query_by_label_contains("does NOT fit").is_some(),
        "batch 16 of an 8B full fine-tune does not fit 80 GiB"
    );
}

#[test]
fn picking_a_preset_switches_the_model() {
    let mut h = harness();
    h.get_by_role_and_label(Role::ComboBox, "Model").click();
    h.run();
    h.get_by_label("Mistral-7B (v0.1)").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.model, ModelChoice::Preset("mistral-7b".into()));
    match &h.state().derived.current {
        Some(Ok(c)) => assert_eq!(c.estimate.n_params, 7_241_732_096),
        _ => panic!("no estimate"),
    }
}

#[test]
fn pin_then_compare_side_by_side() {
    let mut h = harness();
    h.get_by_label("Compare").click();
    h.run();
    assert_eq!(h.state().state.view.tab, Tab::Compare);
    h.get_by_label("Pin as A").click();
    h.run();
    assert_eq!(h.state().state.pinned.len(), 1);
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(4.0);
    h.run();
    assert!(h.query_by_label("current − A").is_some(), "difference column");
    // a second pin
    h.get_by_label("Pin as B").click();
    h.run();
    assert_eq!(h.state().state.pinned.len(), 2);
    assert_eq!(h.state().derived.pinned.len(), 2);
}

#[test]
fn undo_and_redo_with_the_keyboard() {
    let mut h = harness();
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(4.0);
    h.run();
    assert_eq!(h.state().state.settings.batch, 4);
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert_eq!(h.state().state.settings.batch, 1, "undone");
    h.key_press_modifiers(Modifiers::COMMAND | Modifiers::SHIFT, Key::Z);
    h.run();
    assert_eq!(h.state().state.settings.batch, 4, "redone");
    h.get_by_label("Undo").click();
    h.run();
    assert_eq!(h.state().state.settings.batch, 1, "undo button");
}

#[test]
fn a_malformed_config_shows_an_error_and_keeps_the_scenario() {
    let dir = std::env::temp_dir().join(format!("vramscope-gui-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("config.json");
    std::fs::write(&bad, "{\"model_type\": \"llama\",\n \"hidden_size\": }").unwrap();
    let mut h = harness();
    let before = h.state().state.settings.clone();
    h.state_mut().path_input = bad.display().to_string();
    h.run();
    h.get_by_label("Load").click();
    h.run();
    let (kind, msg) = h.state().status.clone();
    assert_eq!(kind, StatusKind::Error);
    assert!(msg.contains("config.json") && msg.contains("line 2"), "{msg}");
    assert_eq!(h.state().state.settings, before, "scenario unchanged");
    assert!(h.query_by_label_contains("not valid JSON").is_some(), "error shown in the status bar");
    // a good file loads
    let good = dir.join("good.json");
    std::fs::write(&good, include_str!("data/truth/configs/mistral-7b.json")).unwrap();
    h.state_mut().path_input = good.display().to_string();
    h.run();
    h.get_by_label("Load").click();
    h.run();
    assert!(matches!(h.state().state.settings.model, ModelChoice::Custom { .. }));
}

#[test]
fn idle_frames_do_not_recompute() {
    let mut h = harness();
    let n = h.state().derived.recomputations;
    h.run_steps(10);
    assert_eq!(h.state().derived.recomputations, n, "nothing changed, nothing recomputed");
    h.get_by_role_and_label(Role::Slider, "Sequence length").set_value_accesskit(4096.0);
    h.run();
    assert_eq!(h.state().derived.recomputations, n + 1);
}

/// A stand-in for eframe's storage.
#[derive(Default)]
struct MemStorage(std::collections::HashMap<String, String>);

impl eframe::Storage for MemStorage {
    fn get_string(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }
    fn set_string(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
    fn remove_string(&mut self, key: &str) {
        self.0.remove(key);
    }
    fn flush(&mut self) {}
}

#[test]
fn state_survives_a_restart_and_corrupt_state_falls_back() {
    use eframe::App as _;
    use eframe::Storage as _;
    let mut app = VramApp::new(AppState::default());
    app.state.settings = Settings { batch: 7, seq: 1024, ..Settings::default() };
    app.state.view.dark = false;
    app.state.pinned.push(vramscope::gui::state::Pinned { label: "A".into(), settings: Settings::default() });
    let mut storage = MemStorage::default();
    app.save(&mut storage);
    let again = VramApp::from_storage(Some(&storage));
    assert_eq!(again.state, app.state, "round trip through storage");
    let mut corrupt = MemStorage::default();
    corrupt.set_string(vramscope::gui::state::APP_KEY, "(settings: (batch: \"lots\"".into());
    let fallback = VramApp::from_storage(Some(&corrupt));
    assert_eq!(fallback.state, AppState::default());
    assert_eq!(fallback.status.0, StatusKind::Error);
    let mut old = MemStorage::default();
    old.set_string(vramscope::gui::state::APP_KEY, "(settings: (model: Preset(\"gpt-9\")))".into());
    assert_eq!(VramApp::from_storage(Some(&old)).state, AppState::default(), "unknown preset falls back");
}

/// A 1280x800 dark window rendered through wgpu, for image snapshots.
#[cfg(feature = "snapshots")]
fn wgpu_harness(app: VramApp) -> Harness<'static, VramApp> {
    Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .with_theme(egui::Theme::Dark)
        .wgpu()
        .build_ui_state(|ui, app: &mut VramApp| app.show(ui), app)
}

/// Settles the window (no cursor, hover gone) and compares it with `name`'s snapshot.
#[cfg(feature = "snapshots")]
fn shoot(h: &mut Harness<'static, VramApp>, name: &str) {
    h.run();
    h.remove_cursor();
    h.run();
    h.snapshot(name);
}

#[cfg(feature = "snapshots")]
#[test]
fn snapshots_of_the_main_view_and_curves() {
    let mut h = wgpu_harness(VramApp::new(AppState::default()));
    shoot(&mut h, "main_view");
    // a scenario where activations dominate, so the segment curve shows its U
    h.state_mut().state.settings.batch = 8;
    h.state_mut().state.settings.optimizer = vramscope::estimate::Optimizer::AdamwFused;
    h.get_by_label("vs checkpoint segments").click();
    shoot(&mut h, "curves_segments");
    h.get_by_label("Options & cost").click();
    shoot(&mut h, "options_tab");
    h.state_mut().state.settings.batch = 4;
    h.get_by_label("Timeline").click();
    shoot(&mut h, "timeline_tab");
    // Serve mode: the KV pool against the budget, the concurrency curve, the serving options
    h.get_by_label("Serve").click();
    h.run();
    h.get_by_label("Concurrency vs context").click();
    shoot(&mut h, "serve_concurrency");
    h.get_by_label("Options & cost").click();
    shoot(&mut h, "serve_options");
}

/// The presentation layout as a projector shows it: 1280x720, 1280x800 and 1920x1080, in English
/// and Chinese, dark and light.
#[cfg(feature = "snapshots")]
#[test]
fn snapshots_of_the_presentation_layout() {
    use vramscope::gui::lang::Lang;
    // one result for the twelve harnesses, so that every snapshot is written (or checked)
    let mut results = egui_kittest::SnapshotResults::default();
    for (w, h) in [(1280.0, 720.0), (1280.0, 800.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::ZhCn] {
            for (theme, name) in [(egui::Theme::Dark, "dark"), (egui::Theme::Light, "light")] {
                let mut state = AppState::default();
                state.view.lang = Some(lang);
                state.view.presentation = true;
                state.view.controls_collapsed = true;
                state.view.dark = theme == egui::Theme::Dark;
                let mut hs = Harness::builder()
                    .with_size(egui::vec2(w, h))
                    .with_theme(theme)
                    .wgpu()
                    .build_ui_state(|ui, app: &mut VramApp| app.show(ui), VramApp::new(state));
                shoot(&mut hs, &format!("presentation_{w}x{h}_{}_{name}", lang.code()));
                results.extend(hs.take_snapshot_results());
            }
        }
    }
}

/// A lesson of the Learn view on a projector, in Chinese: its scenario, highlighted segments and
/// text with the numbers.
#[cfg(feature = "snapshots")]
#[test]
fn snapshots_of_a_lesson() {
    use vramscope::gui::learn::LearnStep;
    let mut state = AppState::default();
    state.view.lang = Some(vramscope::gui::lang::Lang::ZhCn);
    state.view.presentation = true;
    state.view.controls_collapsed = true;
    let mut h = Harness::builder()
        .with_size(egui::vec2(1280.0, 720.0))
        .with_theme(egui::Theme::Dark)
        .wgpu()
        .build_ui_state(|ui, app: &mut VramApp| app.show(ui), VramApp::new(state));
    h.run();
    for step in [LearnStep::Start, LearnStep::Next, LearnStep::Next, LearnStep::Next, LearnStep::Next] {
        let ctx = h.ctx.clone();
        h.state_mut().apply(&ctx, vramscope::gui::intent::Intent::Learn(step));
    }
    shoot(&mut h, "lesson_5_zh");
}

/// The main view, the Options tab and the Timeline tab in Chinese (the workshop's language).
#[cfg(feature = "snapshots")]
#[test]
fn snapshots_in_chinese() {
    let mut state = AppState::default();
    state.view.lang = Some(vramscope::gui::lang::Lang::ZhCn);
    let mut h = wgpu_harness(VramApp::new(state));
    shoot(&mut h, "main_view_zh");
    h.get_by_label("方案与成本").click();
    shoot(&mut h, "options_tab_zh");
    h.state_mut().state.settings.batch = 4;
    h.get_by_label("时间线").click();
    shoot(&mut h, "timeline_tab_zh");
}

#[test]
fn the_language_switches_at_run_time_and_is_kept() {
    use vramscope::gui::lang::Lang;
    let mut state = AppState::default();
    state.view.lang = Some(Lang::ZhCn);
    let mut h = test_harness(egui::vec2(1280.0, 800.0), VramApp::new(state));
    h.run();
    for zh in ["文件", "视图", "帮助", "模型", "精度", "优化器", "微批次", "梯度检查点", "数据并行"]
    {
        assert!(h.query_all_by_label_contains(zh).next().is_some(), "{zh} shown");
    }
    assert!(h.query_by_label("File").is_none() && h.query_by_label("Micro-batch").is_none());
    // View -> 语言 -> English: every panel answers in English from the next frame, and the
    // choice is in the saved view
    h.get_by_label("视图").click();
    h.run();
    h.get_by_label("语言").hover();
    h.run();
    h.get_by_label("English").click();
    h.run();
    h.run();
    assert_eq!(h.state().state.view.lang, Some(Lang::En));
    assert!(h.query_by_label("File").is_some() && h.query_by_label("文件").is_none());
    let saved = ron::to_string(&h.state().state).unwrap();
    let back: AppState = ron::from_str(&saved).unwrap();
    assert_eq!(back.view.lang, Some(Lang::En));
    assert_eq!(Lang::parse("zh-CN"), Ok(Lang::ZhCn));
}

#[test]
fn every_character_of_the_translation_has_a_glyph_in_the_shipped_fonts() {
    let ctx = egui::Context::default();
    ctx.set_fonts(vramscope::gui::fonts::definitions());
    // the font atlas' first upload is not painted here: drop it on purpose
    ctx.run_ui(egui::RawInput::default(), |_| {}).textures_delta.clear();
    // every translated text: the zh-CN tables of the GUI and the core's texts, which are written
    // in both languages in the sources (every character of every source file)
    fn sources(dir: &std::path::Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                *out += &std::fs::read_to_string(&p).unwrap();
            }
        }
    }
    let mut text = String::new();
    sources(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut text);
    let chars: std::collections::BTreeSet<char> = text.chars().filter(|c| !c.is_control()).collect();
    assert!(chars.iter().filter(|c| !c.is_ascii()).count() > 400, "the tables hold the translation");
    let font = egui::FontId::proportional(14.0);
    let missing: Vec<char> =
        ctx.fonts_mut(|f| chars.iter().copied().filter(|c| !f.has_glyph(&font, *c)).collect());
    assert!(missing.is_empty(), "no glyph for {missing:?}");
    // and the subset is the CJK face, not egui's own fonts answering
    let without = egui::Context::default();
    without.run_ui(egui::RawInput::default(), |_| {}).textures_delta.clear();
    assert!(!without.fonts_mut(|f| f.has_glyph(&font, '显')), "egui's default fonts have no CJK");
    assert!(ctx.fonts_mut(|f| f.has_glyph(&font, '显')));
}

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

#[cfg(feature = "snapshots")]
#[test]
fn snapshots_of_a_recorded_cluster() {
    // the 2-host cluster a real Prometheus recorded (tests/prometheus.rs) over its plan
    // relative to the package (the working directory of tests), so the picture is the same anywhere
    let dir = "tests/data/prometheus";
    let mut app = VramApp::new(AppState::default());
    app.pending_open = Some(format!("{dir}/cluster-plan.ron"));
    app.open_recording(std::path::Path::new(&format!("{dir}/cluster-recording.json")));
    app.state.view.tab = Tab::Live;
    let mut h = wgpu_harness(app);
    h.run();
    h.remove_cursor();
    h.run();
    assert_eq!(h.state().state.settings.pp, 2, "the plan opened");
    assert!(h.query_by_label_contains("Most loaded GPU: node-b GPU 3").is_some());
    h.snapshot("live_cluster");
}

#[test]
fn the_chart_labels_never_meet_at_any_scenario_or_window() {
    use vramscope::gui::panels::breakdown::{Labels, labels_id};
    let tiny = Settings { model: ModelChoice::Preset("gpt2".into()), seq: 128, ..Default::default() };
    let huge =
        Settings { model: ModelChoice::Preset("llama-3.1-70b".into()), batch: 16, ..Default::default() };
    let zero3 = Settings {
        model: ModelChoice::Preset("llama-3.1-70b".into()),
        dp: 1024,
        zero: 3,
        ..Default::default()
    };
    // the total a hair under the card: the "79.0 GiB" label beside the capacity and the top tick
    let full = {
        let mut s = Settings::default();
        let c = vramscope::gui::derived::Computed::new(&s).unwrap();
        s.batch = c.max_batch.unwrap();
        s
    };
    for (name, settings) in
        [("tiny", tiny), ("above capacity", huge), ("ZeRO-3 x 1024", zero3), ("full", full)]
    {
        // the presentation zoom (1.5) of 1280x720, 1280x800 and 1920x1080 screens, in points (the
        // test harness draws at one pixel per point), and the screens themselves
        let sizes = [(853.0, 480.0), (853.0, 533.0), (1280.0, 720.0), (1280.0, 800.0), (1920.0, 1080.0)];
        for (w, h) in sizes {
            for presentation in [false, true] {
                let mut state = AppState { settings: settings.clone(), ..Default::default() };
                state.view.presentation = presentation;
                let mut harness = test_harness(egui::vec2(w, h), VramApp::new(state));
                harness.run_steps(3);
                let what = format!("{name} at {w}x{h}, presentation {presentation}");
                let (rect, labels): (egui::Rect, Labels) = harness
                    .ctx
                    .data(|d| d.get_temp(labels_id()))
                    .unwrap_or_else(|| panic!("{what}: no chart"));
                let all = labels.all();
                for (i, a) in all.iter().enumerate() {
                    assert!(rect.contains_rect(*a), "{what}: {a:?} leaves the chart {rect:?}");
                    for b in &all[i + 1..] {
                        assert!(!a.intersects(*b), "{what}: {a:?} meets {b:?}\n{labels:#?}");
                    }
                }
                let kept = labels.ticks.iter().filter(|t| t.label.is_some()).count();
                assert!(kept >= 3, "{what}: only {kept} tick labels\n{labels:#?}");
            }
        }
    }
}

/// The presentation layout holds on a projector: at 1280x720, 1280x800 and 1920x1080 in both
/// languages the type grows with the screen (the layout is about 560 points high), the controls
/// are a strip, the Why column is wide enough for a phrase a line, the chart's labels never meet,
/// and nothing of the chart leaves the window.
#[test]
fn the_presentation_layout_holds_on_a_projector() {
    use vramscope::gui::lang::Lang;
    use vramscope::gui::panels::breakdown::{Labels, labels_id};
    for (w, h) in [(1280.0, 720.0), (1280.0, 800.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::ZhCn] {
            let mut state = AppState::default();
            state.view.lang = Some(lang);
            let mut harness = test_harness(egui::vec2(w, h), VramApp::new(state));
            harness.run();
            let ctx = harness.ctx.clone();
            harness.state_mut().apply(&ctx, vramscope::gui::intent::Intent::SetPresentation(true));
            harness.run_steps(4);
            let what = format!("{w}x{h} {}", lang.code());
            let zoom = harness.ctx.zoom_factor();
            assert!((zoom - h / 560.0).abs() < 0.01, "{what}: zoom {zoom}");
            assert!(harness.state().state.view.controls_collapsed, "{what}: the controls fold into a strip");
            let screen = harness.ctx.content_rect();
            // where a panel says it was drawn
            let drawn = |id: egui::Id, name: &str| -> egui::Rect {
                harness.ctx.data(|d| d.get_temp(id)).unwrap_or_else(|| panic!("{what}: no {name}"))
            };
            let why = drawn(vramscope::gui::panels::why::column_id(), "Why column");
            assert!(why.width() >= 300.0, "{what}: the Why column is {} points wide", why.width());
            assert!(screen.contains_rect(why.shrink(1.0)), "{what}: {why:?} leaves {screen:?}");
            let (rect, labels): (egui::Rect, Labels) =
                harness.ctx.data(|d| d.get_temp(labels_id())).unwrap_or_else(|| panic!("{what}: no chart"));
            assert!(rect.width() >= 380.0 && rect.height() >= 200.0, "{what}: chart {rect:?}");
            // the what-if curve under it keeps room for its axis labels and legend
            let plot = drawn(vramscope::gui::panels::curves::plot_id(), "what-if plot");
            assert!(plot.height() >= 100.0, "{what}: the what-if plot is {} points high", plot.height());
            assert!(screen.contains_rect(plot.shrink(1.0)), "{what}: {plot:?} leaves {screen:?}");
            let all = labels.all();
            for (i, a) in all.iter().enumerate() {
                assert!(rect.contains_rect(*a), "{what}: {a:?} leaves the chart {rect:?}");
                for b in &all[i + 1..] {
                    assert!(!a.intersects(*b), "{what}: {a:?} meets {b:?}");
                }
            }
            // the strip brings the controls back
            harness.get_by_label("»").click();
            harness.run_steps(2);
            assert!(!harness.state().state.view.controls_collapsed, "{what}");
        }
    }
}

/// The Learn view: eight lessons stepped with the arrow keys, each setting its scenario and tab;
/// leaving with Escape brings back the user's own scenario and tab.
#[test]
fn lessons_step_with_the_keys_and_leaving_restores_the_user_s_scenario() {
    use vramscope::gui::learn::Lesson;
    let mut h = harness();
    h.state_mut().state.settings.batch = 3;
    h.state_mut().state.view.tab = Tab::Compare;
    h.run();
    let mine = h.state().state.settings.clone();
    h.get_by_label("Learn").click();
    h.run_steps(2);
    assert!(h.query_by_label_contains("Lesson 1 of 8").is_some());
    assert_eq!(h.state().state.settings, Lesson::ALL[0].settings());
    for (i, lesson) in Lesson::ALL.iter().enumerate().skip(1) {
        h.key_press(egui::Key::ArrowRight);
        h.run_steps(2);
        assert_eq!(h.state().state.settings, lesson.settings(), "lesson {}", i + 1);
        assert_eq!(h.state().state.view.tab, lesson.tab(), "lesson {}", i + 1);
        assert!(h.query_by_label_contains(&format!("Lesson {} of 8", i + 1)).is_some());
    }
    h.key_press(egui::Key::ArrowLeft);
    h.run_steps(2);
    assert_eq!(h.state().state.settings, Lesson::ALL[6].settings());
    h.key_press(egui::Key::Escape);
    h.run_steps(2);
    assert_eq!(h.state().state.settings, mine, "the user's scenario is back");
    assert_eq!(h.state().state.view.tab, Tab::Compare);
    assert!(h.state().state.view.learn.is_none());
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
    assert!(h.query_by_label_contains("measured used node-b GPU 3").is_some());
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

#[test]
fn the_file_menu_offers_every_export() {
    let mut h = harness();
    h.get_by_label("File").click();
    h.run();
    h.get_by_label("Export").hover();
    h.run();
    for (f, _) in vramscope::export::Format::ALL {
        let label = vramscope::gui::strings::export_label(f);
        assert!(h.query_by_label(label).is_some(), "menu has {label}");
    }
    assert!(h.query_by_label("Window as PNG…").is_some());
    assert!(h.query_by_label("Breakdown chart as PNG…").is_some());
}

#[test]
fn a_saved_scenario_opens_in_the_app_and_a_broken_one_is_refused() {
    use vramscope::export::ScenarioFile;
    let dir = std::env::temp_dir().join(format!("vramscope-gui-scn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut wanted =
        Settings { batch: 6, seq: 1024, dp: 4, zero: 2, gpu_id: "a100-40gb".into(), ..Settings::default() };
    wanted.model = ModelChoice::Preset("mistral-7b".into());
    let sc = wanted.to_scenario().unwrap();
    let file = ScenarioFile::new(sc, vramscope::gpu::find("a100-40gb").ok().as_ref(), None);
    let path = dir.join("plan.ron");
    std::fs::write(&path, file.to_ron().unwrap()).unwrap();
    let mut h = harness();
    h.state_mut().path_input = path.display().to_string();
    h.run();
    h.get_by_label("Load").click();
    h.run();
    assert_eq!(h.state().status.0, StatusKind::Info, "{}", h.state().status.1);
    assert_eq!(h.state().state.settings, wanted, "every setting comes back, the preset recognised");
    // a broken file: error with file and line, settings unchanged
    let broken = dir.join("broken.ron");
    std::fs::write(&broken, file.to_ron().unwrap().replacen("batch: 6", "batch: \"six\"", 1)).unwrap();
    h.state_mut().path_input = broken.display().to_string();
    h.run();
    h.get_by_label("Load").click();
    h.run();
    let (kind, msg) = h.state().status.clone();
    assert_eq!(kind, StatusKind::Error);
    assert!(msg.contains("broken.ron:"), "{msg}");
    assert_eq!(h.state().state.settings, wanted);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_options_tab_lists_hardware_paths_with_prices() {
    let mut h = harness();
    // the default 8B fine-tune at micro-batch 16 does not fit one H100
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(16.0);
    h.run();
    h.get_by_label("Options & cost").click();
    h.run();
    assert_eq!(h.state().state.view.tab, Tab::Options);
    for kind in ["current", "newer generation", "more GPUs"] {
        assert!(h.query_by_label(kind).is_some(), "row {kind}");
    }
    let paths = h.state().derived.options.as_ref().map(|(_, p)| p.clone()).unwrap();
    assert!(!paths[0].fits);
    assert!(paths.iter().any(|p| p.kind == "more GPUs" && p.fits));
    assert!(h.query_by_label_contains("Roadmap:").is_some(), "the roadmap is shown");
    assert!(h.query_by_label_contains("Cost of a run").is_some(), "the run cost is shown");
    assert!(h.query_by_label("AWS p5.48xlarge").is_some(), "priced on the catalog's instances");
    // computed once, not every frame
    let before = h.state().derived.options.as_ref().map(|(s, _)| s.clone());
    h.run_steps(3);
    assert_eq!(h.state().derived.options.as_ref().map(|(s, _)| s.clone()), before);
}

#[test]
fn a_model_folder_of_an_unknown_architecture_is_flagged_unvalidated() {
    let mut h = harness();
    assert!(h.query_by_label_contains("UNVALIDATED").is_none(), "the default model is validated");
    // a model folder (not the file): t5 has no family of its own
    h.state_mut().path_input = format!("{}/tests/data/hub/t5-base", env!("CARGO_MANIFEST_DIR"));
    h.run();
    h.get_by_label("Load").click();
    h.run();
    assert!(matches!(h.state().state.settings.model, ModelChoice::Custom { .. }));
    assert!(h.query_by_label_contains("UNVALIDATED architecture (t5)").is_some(), "headline flags it");
    match &h.state().derived.current {
        Some(Ok(c)) => assert_eq!(c.estimate.n_params, 222_903_552),
        _ => panic!("no estimate"),
    }
    // a validated family from a folder: no flag
    h.state_mut().path_input = format!("{}/tests/data/hub/qwen3-8b", env!("CARGO_MANIFEST_DIR"));
    h.run();
    h.get_by_label("Load").click();
    h.run();
    assert!(h.query_by_label_contains("UNVALIDATED").is_none());
}

#[test]
fn the_timeline_tab_marks_the_peak_and_a_click_explains_that_moment() {
    let mut h = harness();
    h.get_by_label("Timeline").click();
    h.run();
    assert_eq!(h.state().state.view.tab, Tab::Timeline);
    let (peak, n) = match &h.state().derived.current {
        Some(Ok(c)) => {
            let t = c.timeline.as_ref().expect("a timeline");
            (t.peak().map(|p| p.alive.total()), t.events.len())
        }
        _ => panic!("no estimate"),
    };
    assert_eq!(
        peak,
        Some(match &h.state().derived.current {
            Some(Ok(c)) => c.estimate.peak_allocated,
            _ => 0,
        })
    );
    assert!(n > 100, "forward op by op and backward block by block: {n} events");
    assert!(h.query_all_by_label_contains("peak 74.").next().is_some(), "the peak is labelled");
    // a click in the plot selects the event under the pointer; "Why this much?" follows it
    let pos = egui::pos2(700.0, 700.0);
    h.hover_at(pos);
    h.run();
    h.event(egui::Event::PointerButton {
        pos,
        button: egui::PointerButton::Primary,
        pressed: true,
        modifiers: Modifiers::NONE,
    });
    h.event(egui::Event::PointerButton {
        pos,
        button: egui::PointerButton::Primary,
        pressed: false,
        modifiers: Modifiers::NONE,
    });
    h.run();
    h.run();
    let sel = h.state().selected_event.map(|(_, i)| i);
    assert!(sel.is_some_and(|i| i < n), "a click selects an event: {sel:?}");
    assert!(h.query_by_label_contains("At #").is_some(), "the Why panel shows the selected moment");
    h.get_by_label("Back to the peak").click();
    h.run();
    assert!(h.state().selected_event.is_none());
    // a change of settings drops the selection's meaning: the panel is back on the peak
    assert!(h.query_by_label_contains("At #").is_none());
}

#[test]
fn a_measured_snapshot_is_read_off_the_ui_thread_and_laid_over_the_timeline() {
    use vramscope::gui::intent::Intent;
    let mut h = harness();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/snapshot/");
    // a .pickle dropped on the window (or opened from the File menu) goes to the timeline
    {
        let ctx = h.ctx.clone();
        h.state_mut().apply(&ctx, Intent::LoadPath(format!("{dir}trace_train.pickle")));
    }
    assert_eq!(h.state().state.view.tab, Tab::Timeline);
    for _ in 0..200 {
        h.step();
        if !h.state().snapshots.loaded.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(h.state().snapshots.loaded.len(), 1, "{:?}", h.state().snapshots.problem);
    {
        let ctx = h.ctx.clone();
        h.state_mut().apply(&ctx, Intent::ClearSnapshots);
    }
    for (i, f) in ["trace_train.pickle", "trace_train_ckpt.pickle"].into_iter().enumerate() {
        {
            let ctx = h.ctx.clone();
            h.state_mut().apply(&ctx, Intent::OpenSnapshot(format!("{dir}{f}")));
        }
        // the reader thread finishes within a bounded number of frames
        for _ in 0..200 {
            h.step();
            if h.state().snapshots.loaded.len() > i {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(h.state().snapshots.loaded.len(), i + 1, "{f}: {:?}", h.state().snapshots.problem);
        assert!(
            h.query_all_by_label_contains(&format!("{f}: measured step peak")).next().is_some(),
            "{f}: measured vs predicted is shown"
        );
    }
    // a broken file is reported, the overlays stay
    {
        let ctx = h.ctx.clone();
        h.state_mut().apply(&ctx, Intent::OpenSnapshot(format!("{dir}README.md")));
    }
    for _ in 0..200 {
        h.step();
        if h.state().snapshots.problem.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(h.state().snapshots.problem.is_some());
    assert_eq!(h.state().snapshots.loaded.len(), 2);
    {
        let ctx = h.ctx.clone();
        h.state_mut().apply(&ctx, Intent::ClearSnapshots);
    }
    h.run();
    assert!(h.state().snapshots.loaded.is_empty());
}

/// Every figure shown twice agrees: the batch curve's largest fitting point is the headline's
/// largest micro-batch (the 80 vs 73), and each curve passes through the bar's total at
/// the current value.
#[test]
fn the_curves_hold_the_figures_the_headline_and_the_bar_show() {
    use vramscope::fit::Knob;
    use vramscope::gui::derived::Computed;
    for (mode, batch) in [(vramscope::estimate::Mode::Infer, 1), (vramscope::estimate::Mode::Train, 2)] {
        let s = Settings { mode, batch, ..Settings::default() };
        let c = Computed::new(&s).unwrap();
        let cap = c.capacity();
        let curve = c.curve(Knob::Batch);
        let largest = curve.iter().filter(|p| p.total <= cap).map(|p| p.x).max();
        assert_eq!(largest, c.max_batch, "{mode:?}: the curve's largest fitting batch is the headline's");
        let mb = c.max_batch.unwrap();
        assert!(curve.iter().any(|p| p.x == mb) && curve.iter().any(|p| p.x == mb + 1));
        for k in [Knob::Batch, Knob::Seq, Knob::Gpus] {
            let x = match k {
                Knob::Batch => c.scenario.batch,
                Knob::Seq => c.scenario.seq,
                _ => c.scenario.parallel.dp,
            };
            let p = c.curve(k).iter().find(|p| p.x == x).unwrap();
            assert_eq!(
                p.total, c.estimate.total,
                "{mode:?} {k:?}: the curve at the current value is the bar"
            );
        }
        // monotone in the batch (the anchoring keeps the flat curve's shape), up to what the
        // allocator replay at the exact points may differ by (1 %: a larger batch can leave the
        // cache less fragmented), and near the card (within 5 %) the release-and-retry path: the
        // allocator frees its cache and retries instead of growing it
        let near_card = |t: u64| t + cap / 20 >= cap;
        assert!(
            curve.windows(2).all(|w| {
                w[1].total + (w[0].total / 100).max(64 << 20) >= w[0].total || near_card(w[0].total)
            }),
            "{mode:?}: {:?}",
            curve.iter().map(|p| (p.x, p.total >> 20)).collect::<Vec<_>>()
        );
    }
}

/// The Serve mode's answer, as the CLI prints it for the command the window names.
fn serve_of(h: &Harness<'_, VramApp>) -> vramscope::gui::derived::ServeComputed {
    match &h.state().derived.serve {
        Some(Ok(s)) => s.clone(),
        other => panic!("no server: {:?}", other.as_ref().map(|r| r.as_ref().err())),
    }
}

#[test]
fn serve_mode_answers_as_the_cli_does_and_applies_an_option() {
    let mut h = harness();
    h.get_by_label("Serve").click();
    h.run();
    assert!(h.state().state.settings.serving);
    let sv = serve_of(&h);
    // the one-line answer, with the figures `vramscope serve` gives for the command shown
    let cmd = sv.command();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(&words[1..])
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["kv_tokens"].as_u64(), Some(sv.serve.kv_tokens), "{cmd}");
    assert_eq!(j["bytes"]["kv_cache"].as_u64(), Some(sv.serve.bytes.kv_cache));
    assert_eq!(j["fits"].as_bool(), Some(sv.serve.fits));
    let tokens = vramscope::units::digits(sv.serve.kv_tokens);
    assert!(
        h.query_by_label_contains(&format!("{tokens} tokens of KV cache")).is_some(),
        "headline shows {tokens}"
    );
    assert!(h.query_by_label_contains(&cmd).is_some(), "the window names its command");
    // the export is what `serve --roadmap --json` prints for that command
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(&words[1..])
        .args(["--roadmap", "--json"])
        .output()
        .unwrap();
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let exported: serde_json::Value =
        serde_json::from_str(&h.state().serve_export_text(true).unwrap()).unwrap();
    assert_eq!(exported["roadmap"], cli["roadmap"]);
    assert_eq!(exported["options"], cli["options"]);
    assert_eq!(exported["headline"], cli["headline"]);
    assert!(h.state().serve_export_text(false).unwrap().contains(&format!("{tokens} tokens of KV cache")));
    // the utilisation slider moves the pool
    h.get_by_role_and_label(Role::Slider, "GPU memory utilisation").set_value_accesskit(0.8);
    h.run();
    let lower = serve_of(&h);
    assert!(lower.serve.bytes.kv_cache < sv.serve.bytes.kv_cache);
    // an option applied gives the figures its row showed
    h.get_by_label("Options & cost").click();
    h.run();
    let adv = lower.advice.clone().unwrap();
    let kv = adv.options.iter().position(|o| o.title.contains("kv-cache-dtype")).unwrap();
    let row = adv.options[kv].clone();
    h.get_all_by_label("apply").nth(kv).unwrap().click();
    h.run();
    let applied = serve_of(&h);
    assert!(h.state().state.settings.serve.kv_fp8);
    assert_eq!(applied.serve.kv_tokens, row.kv_tokens, "{}", row.title);
    // undo brings the server back
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert!(!h.state().state.settings.serve.kv_fp8);
    // a server that does not start says so, in the headline and the bar
    h.state_mut().state.settings.model = ModelChoice::Preset("llama-3.1-70b".into());
    h.run();
    assert!(!serve_of(&h).serve.fits);
    assert!(h.query_by_label_contains("does not start").is_some());
    // leaving Serve mode brings the training view back
    h.get_by_label("Train").click();
    h.run();
    assert!(!h.state().state.settings.serving);
    assert!(h.state().derived.serve.is_none());
}

#[test]
fn inference_can_be_hf_generate_and_the_command_gives_its_numbers() {
    let mut h = harness();
    h.get_by_label("Infer").click();
    h.run();
    assert_eq!(h.state().state.settings.new_tokens, 0);
    h.get_by_label("Generate (HF generate)").click();
    h.run();
    assert!(h.state().state.settings.new_tokens > 0);
    h.get_by_role_and_label(Role::Slider, "New tokens").set_value_accesskit(1000.0);
    h.run();
    let s = h.state().state.settings.clone();
    assert_eq!(s.new_tokens, 1000);
    let sc = s.to_scenario().unwrap();
    let e = match &h.state().derived.current {
        Some(Ok(c)) => c.estimate.clone(),
        _ => panic!("no estimate"),
    };
    let g = e.generate.expect("the app estimates HF generate");
    assert_eq!(g.cached_tokens, s.seq + 999);
    // the flags the window names give the same numbers on the command line
    let gpu = vramscope::gpu::find(&s.gpu_id).unwrap();
    let mut args = vec!["estimate".to_owned(), "--model".into(), "llama-3.1-8b".into()];
    for (k, v) in vramscope::flags::flags(&sc, &gpu) {
        args.push(k.to_owned());
        args.extend(v);
    }
    args.push("--json".into());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramscope")).args(&args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["bytes"]["kv_cache"].as_u64(), Some(e.kv_cache), "{args:?}");
    assert_eq!(j["bytes"]["total"].as_u64(), Some(e.total), "{args:?}");
    // back to training: the new tokens do not leak into the training scenario
    h.get_by_label("Train").click();
    h.run();
    assert_eq!(h.state().state.settings.to_scenario().unwrap().new_tokens, 0);
}

#[test]
fn litgpt_shows_its_model_code_and_the_pytorch_release() {
    use vramscope::estimate::{ModelCode, Torch};
    let mut h = harness();
    assert!(h.query_by_label("PyTorch release").is_none(), "hidden under transformers' defaults");
    h.get_by_role_and_label(Role::ComboBox, "Framework").click();
    h.run();
    h.get_by_label("litgpt").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.stack.model_code, ModelCode::Litgpt);
    let acts = |h: &Harness<'_, VramApp>| shown(h).activations;
    let before = acts(&h);
    let pick = |h: &mut Harness<'_, VramApp>, item: &str| {
        // (the menu may still be open from the last pick)
        if h.query_by_label(item).is_none() {
            h.get_by_role_and_label(Role::ComboBox, "PyTorch release").click_accesskit();
            h.run();
        }
        h.get_by_label(item).click_accesskit();
        h.run();
    };
    pick(&mut h, "PyTorch 2.0 - 2.1");
    assert_eq!(h.state().state.settings.stack.torch, Torch::Before2_2);
    // the final norm's mean keeps its squared input too
    let mean = acts(&h);
    assert!(mean > before, "{before} -> {mean}");
    // before 1.11 every softmax keeps its input as well (tests/accuracy.rs measures it); PyTorch
    // 1.10 has no SDPA, so the attention shown becomes the eager attention walked
    let sdpa = h.state().state.settings.attention;
    pick(&mut h, "PyTorch 1.10 or older");
    assert_eq!(h.state().state.settings.stack.torch, Torch::Before1_11);
    assert_eq!(sdpa, vramscope::estimate::AttentionImpl::Sdpa);
    assert_eq!(h.state().state.settings.attention, vramscope::estimate::AttentionImpl::Eager);
}

#[test]
fn qlora_and_quantized_inference_come_from_the_base_weights_menu() {
    use vramscope::estimate::BaseQuant;
    let mut h = harness();
    assert!(h.query_by_label("Base weights").is_none(), "full fine-tuning has no base to quantize");
    h.get_by_role_and_label(Role::CheckBox, "LoRA adapters").click_accesskit();
    h.run();
    let params = |h: &Harness<'_, VramApp>| shown(h).parameters;
    let lora = params(&h);
    h.get_by_role_and_label(Role::ComboBox, "Base weights").click();
    h.run();
    h.get_by_label("NF4 (double quant)").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.base_quant, BaseQuant::Nf4);
    // the frozen projections in NF4 (about a quarter of their bf16 bytes; embedding and head stay)
    assert!(params(&h) < lora / 2, "{} vs {}", params(&h), lora);
    // the scenario the window shows is the one `vramscope estimate --base-quant nf4` gives
    let sc = h.state().state.settings.to_scenario().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sc.base_quant, BaseQuant::Nf4);
    let gpu = vramscope::gpu::find(&h.state().state.settings.gpu_id).unwrap_or_else(|e| panic!("{e}"));
    assert!(vramscope::flags::line(&vramscope::flags::flags(&sc, &gpu)).contains("--base-quant nf4"));
    // who quantized it: bitsandbytes before 0.43 quantized from fp16, so each 4-bit matmul under
    // bf16 holds the fp16 weight and its bf16 cast; Lightning's plugin quantizes the head too
    use vramscope::estimate::Bnb;
    let nf4 = shown(&h);
    for (choice, bnb, flag) in [
        ("bitsandbytes < 0.43", Bnb::Before0_43, "--bitsandbytes 0.42"),
        ("Lightning (litgpt)", Bnb::Lightning, "--bitsandbytes lightning"),
    ] {
        // open the menu (a menu left open by the previous choice closes on the first click)
        for _ in 0..3 {
            if h.query_by_label(choice).is_some() {
                break;
            }
            h.get_by_role_and_label(Role::ComboBox, "Quantized by").click_accesskit();
            h.run();
        }
        h.get_by_label(choice).click_accesskit();
        h.run();
        assert_eq!(h.state().state.settings.stack.bnb, bnb);
        // the window's numbers are those of the flags it names
        let sc = h.state().state.settings.to_scenario().unwrap_or_else(|e| panic!("{e}"));
        let line = vramscope::flags::line(&vramscope::flags::flags(&sc, &gpu));
        assert!(line.contains(flag), "{line}");
        let (e, _) = vramscope::estimate::estimate_reserved(&sc, Some(gpu.memory_bytes()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.total, total(&h), "{choice}");
    }
    // Lightning's plugin quantizes the LM head too
    assert!(shown(&h).parameters < nf4.parameters, "{} vs {}", shown(&h).parameters, nf4.parameters);
}

#[test]
fn fsdp_and_its_code_are_chosen_in_the_parallel_section() {
    use vramscope::estimate::{FsdpImpl, FsdpMode};
    let mut h = harness();
    h.state_mut().state.settings.dp = 4;
    h.state_mut().state.settings.lora_enabled = true;
    h.run();
    assert!(h.query_by_label("FSDP code").is_none(), "shown under FSDP only");
    h.get_by_role_and_label(Role::ComboBox, "Sharding").click_accesskit();
    h.run();
    h.get_by_label("FSDP full_shard").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.fsdp, Some(FsdpMode::FullShard));
    let grads = |h: &Harness<'_, VramApp>| shown(h).gradients;
    let own = grads(&h);
    h.get_by_role_and_label(Role::ComboBox, "FSDP code").click_accesskit();
    h.run();
    h.get_by_label("fsdp1-shared").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.stack.fsdp, FsdpImpl::Fsdp1Shared);
    // adapters inside each block's flat parameter: every block weight's gradient, sharded
    assert!(grads(&h) > 20 * own, "{own} -> {}", grads(&h));
    // the window's scenario is the CLI's
    let sc = h.state().state.settings.to_scenario().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sc.parallel.fsdp, Some(FsdpMode::FullShard));
    let e = vramscope::estimate::estimate(&sc).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.gradients, grads(&h));
}

/// When the current batch fits above the largest micro-batch (a smaller one runs out of blocks in
/// the allocator replay), the headline says so instead of contradicting the verdict.
#[test]
fn the_largest_batch_line_explains_a_fitting_batch_above_it() {
    use vramscope::gui::derived::Computed;
    use vramscope::gui::panels::headline::max_batch_text;
    let s = Settings { batch: 3, ..Settings::default() };
    let mut c = Computed::new(&s).unwrap();
    assert!(c.fits());
    let plain = max_batch_text(&c);
    assert!(!plain.contains("finds no free block"), "{plain}");
    // as the replay answers when batch 2 fragments the cache and 3 does not
    c.max_batch = Some(1);
    let text = max_batch_text(&c);
    assert!(text.starts_with("Largest micro-batch that fits: 1 "), "{text}");
    assert!(text.contains("micro-batch 2 finds no free block"), "{text}");
}
