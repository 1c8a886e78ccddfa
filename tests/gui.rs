//! GUI interaction tests (egui_kittest through AccessKit, no GPU): controls are found by label,
//! acted on, and the app's state and the shown numbers are checked. The charts, the Live tab,
//! the controls' sections and Serve mode, and the image snapshots are in `tests/gui/`.

use eframe::egui::{self, Key, Modifiers, accesskit::Role};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vramscope::gui::app::{StatusKind, VramApp};
use vramscope::gui::state::{AppState, ModelChoice, Settings, Tab};

// groups of tests in tests/gui/ (modules of this one test binary)
#[path = "gui/charts.rs"]
mod charts;
#[path = "gui/controls.rs"]
mod controls;
#[path = "gui/exports.rs"]
mod exports;
#[path = "gui/hub.rs"]
mod hub;
#[path = "gui/live.rs"]
mod live;
#[path = "gui/room.rs"]
mod room;
#[path = "gui/settings.rs"]
mod settings;
#[cfg(feature = "snapshots")]
#[path = "gui/snapshots.rs"]
mod snapshots;

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
            // (the curve under it keeps its least height first: the chart gives up what it needs)
            assert!(rect.width() >= 380.0 && rect.height() >= 190.0, "{what}: chart {rect:?}");
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
    h.run();
    h.get_by_label("Start at lesson 1").click();
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

/// A vision-language model's controls: images per sample and their size beside the text, the
/// scenario they build (text + image tokens), and a saved scenario opening on the same controls.
#[test]
fn a_vision_language_model_takes_images_beside_its_text() {
    use vramscope::model::pixels::ImageSize;
    let s = Settings {
        model: ModelChoice::Preset("qwen2.5-vl-7b".into()),
        seq: 2048,
        images: 4,
        image: Some(ImageSize::square(1024)),
        lora_enabled: true,
        ..Default::default()
    };
    let sc = s.to_scenario().unwrap();
    assert_eq!((sc.seq, sc.text_tokens(), sc.image_tokens()), (2048 + 5476, 2048, 5476));
    // no images: the text alone; LLaVA's images take their fixed size
    assert_eq!(Settings { images: 0, ..s.clone() }.to_scenario().unwrap().seq, 2048);
    let llava = Settings {
        model: ModelChoice::Preset("llava-1.5-7b".into()),
        seq: 512,
        images: 2,
        ..Default::default()
    };
    assert_eq!(llava.to_scenario().unwrap().seq, 512 + 2 * 576);
    // a saved scenario opens with the text on the sequence slider and the images beside it
    let file = vramscope::export::ScenarioFile {
        schema: vramscope::export::SCENARIO_SCHEMA,
        gpu: None,
        global_batch: None,
        scenario: sc,
    };
    let (back, dropped) = Settings::from_scenario_file(&file, "s.ron", "h100-80gb");
    assert!(dropped.is_empty(), "{dropped:?}");
    assert_eq!((back.seq, back.images, back.image), (2048, 4, Some(ImageSize::square(1024))));
}

/// A scenario file's LoRA targets and dropout are kept when the app opens it (the app has no
/// control for them, and a file of q,v adapters used to come back with all seven).
#[test]
fn an_opened_scenario_keeps_its_lora_targets_and_dropout() {
    let mut sc = Settings { lora_enabled: true, ..Default::default() }.to_scenario().unwrap();
    let lora: vramscope::estimate::Lora = "16:q,v".parse().unwrap();
    sc.lora = Some(vramscope::estimate::Lora { dropout: 0.05, ..lora });
    let file = vramscope::export::ScenarioFile {
        schema: vramscope::export::SCENARIO_SCHEMA,
        gpu: None,
        global_batch: None,
        scenario: sc.clone(),
    };
    let (back, dropped) = Settings::from_scenario_file(&file, "s.ron", "h100-80gb");
    assert!(dropped.is_empty(), "{dropped:?}");
    assert_eq!(back.to_scenario().unwrap().lora, sc.lora);
}
