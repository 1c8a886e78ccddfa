//! The charts under the bar: the timeline (its peak, a click that explains a moment, a measured
//! snapshot laid over it) and the what-if curves against the headline and the bar.

use super::*;

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
        // monotone in the batch, up to what the allocator replay at each point may differ by
        // (1 %: a larger batch can leave the cache less fragmented), and near the card (within
        // 10 %) the release-and-retry path: where the next batch needs the allocator to free its
        // cache and retry, its total (what stays reserved) can be below the smaller batch's
        // (every point is `estimate`'s figure, as PyTorch's max_memory_reserved would read)
        let near_card = |t: u64| t + cap / 10 >= cap;
        assert!(
            curve.windows(2).all(|w| {
                w[1].total + (w[0].total / 100).max(64 << 20) >= w[0].total || near_card(w[0].total)
            }),
            "{mode:?}: {:?}",
            curve.iter().map(|p| (p.x, p.total >> 20)).collect::<Vec<_>>()
        );
    }
}
