//! GUI frame cost at 1280x800 while a slider is dragged (the scenario changes every frame, so the
//! estimate, the explanations and all four what-if curves are recomputed; the largest micro-batch
//! only when something else than the batch changed), and on an idle frame.
//! CPU only: egui layout and tessellation, no GPU upload.

use criterion::{Criterion, criterion_group, criterion_main};
use eframe::egui;
use egui_kittest::Harness;
use vramscope::gui::app::VramApp;
use vramscope::gui::state::AppState;

fn harness() -> Harness<'static, VramApp> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .build_ui_state(|ui, app: &mut VramApp| app.show(ui), VramApp::new(AppState::default()));
    h.run();
    h
}

fn benches(c: &mut Criterion) {
    let mut h = harness();
    let mut b = 1u64;
    c.bench_function("gui frame while dragging the batch slider", |bench| {
        bench.iter(|| {
            b = b % 64 + 1;
            h.state_mut().state.settings.batch = b;
            h.step();
        })
    });
    // any other slider searches the largest micro-batch again (the allocator replayed tens of
    // times): the dearest frame
    let mut h = harness();
    let mut s = 0u64;
    c.bench_function("gui frame while dragging the sequence slider", |bench| {
        bench.iter(|| {
            s = s % 16 + 1;
            h.state_mut().state.settings.seq = 128 * s;
            h.step();
        })
    });
    let mut h = harness();
    c.bench_function("gui frame, idle (nothing changed)", |bench| bench.iter(|| h.step()));
}

criterion_group!(group, benches);
criterion_main!(group);
