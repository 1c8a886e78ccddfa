//! The image snapshots (lavapipe, `--features snapshots`): the main view and curves, the
//! presentation layout, a lesson, Chinese, a recorded cluster; without `UPDATE_SNAPSHOTS` they
//! must match the stored pictures.

use super::*;

/// A 1280x800 dark window rendered through wgpu, for image snapshots.
fn wgpu_harness(app: VramApp) -> Harness<'static, VramApp> {
    Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .with_theme(egui::Theme::Dark)
        .wgpu()
        .build_ui_state(|ui, app: &mut VramApp| app.show(ui), app)
}

/// Settles the window (no cursor, hover gone) and compares it with `name`'s snapshot.
fn shoot(h: &mut Harness<'static, VramApp>, name: &str) {
    h.run();
    h.remove_cursor();
    h.run();
    h.snapshot(name);
}

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

/// Every lesson of the Learn view as a workshop's projector shows it: 1280x720, the
/// presentation layout, English and Chinese (light, as most rooms are lit): its scenario, its
/// highlighted segments scaled to be read, its tab and its text with the numbers.
#[test]
fn snapshots_of_every_lesson() {
    use vramscope::gui::lang::Lang;
    use vramscope::gui::learn::{LearnStep, Lesson};
    let mut results = egui_kittest::SnapshotResults::default();
    for lang in [Lang::En, Lang::ZhCn] {
        let mut state = AppState::default();
        state.view.lang = Some(lang);
        state.view.presentation = true;
        state.view.controls_collapsed = true;
        state.view.dark = false;
        let mut h = Harness::builder()
            .with_size(egui::vec2(1280.0, 720.0))
            .with_theme(egui::Theme::Light)
            .wgpu()
            .build_ui_state(|ui, app: &mut VramApp| app.show(ui), VramApp::new(state));
        h.run();
        for i in 0..Lesson::ALL.len() {
            let step = if i == 0 { LearnStep::Start } else { LearnStep::Next };
            let ctx = h.ctx.clone();
            h.state_mut().apply(&ctx, vramscope::gui::intent::Intent::Learn(step));
            h.run_steps(3);
            shoot(&mut h, &format!("lesson_{}_{}", i + 1, lang.code()));
        }
        results.extend(h.take_snapshot_results());
    }
}

/// The main view, the Options tab and the Timeline tab in Chinese (the workshop's language).
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
