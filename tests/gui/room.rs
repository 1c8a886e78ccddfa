//! The window as a workshop's room sees it: every lesson at every projector size keeps its plot
//! and its highlighted segments readable, the lessons keep their own undo history, the Chinese
//! window writes Chinese punctuation, and the status line neither lingers nor stays English.

use super::*;
use eframe::egui::Rect;
use egui_kittest::kittest::{By, NodeT};
use vramscope::gui::intent::Intent;
use vramscope::gui::lang::Lang;
use vramscope::gui::learn::{LearnStep, Lesson};

fn learn(h: &mut Harness<'static, VramApp>, step: LearnStep) {
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, Intent::Learn(step));
    h.run_steps(4);
}

/// Where the plot under the tabs started and the height it was left.
fn plot_room(h: &Harness<'_, VramApp>) -> Option<(f32, f32)> {
    h.ctx.data(|d| d.get_temp(vramscope::gui::panels::plot_room_id()))
}

/// Every lesson, at 1280x720, 1280x800 and 1920x1080, in both languages, on the desk and in the
/// presentation layout: the curve, timeline or table the lesson talks about starts inside the
/// window and has at least `MIN_PLOT` points of it, and the segments it highlights are tall
/// enough to be seen from the back of a room.
#[test]
fn every_lesson_keeps_its_plot_and_segments_readable_at_every_projector_size() {
    use vramscope::gui::panels::MIN_PLOT;
    use vramscope::gui::panels::breakdown::{FocusSeg, Labels, focus_id, labels_id};
    for (w, hgt) in [(1280.0, 720.0), (1280.0, 800.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::ZhCn] {
            // the desk layout at the laptop's size; a projector's at every size
            for presentation in [true, w == 1280.0 && hgt == 800.0] {
                let mut state = AppState::default();
                state.view.lang = Some(lang);
                state.view.presentation = presentation;
                state.view.controls_collapsed = presentation;
                let mut h = test_harness(egui::vec2(w, hgt), VramApp::new(state));
                h.run();
                for (i, lesson) in Lesson::ALL.iter().enumerate() {
                    learn(&mut h, if i == 0 { LearnStep::Start } else { LearnStep::Next });
                    let what =
                        format!("{w}x{hgt} {} presentation={presentation} lesson {}", lang.code(), i + 1);
                    let screen = h.ctx.content_rect();
                    let (top, room) =
                        plot_room(&h).unwrap_or_else(|| panic!("{what}: no plot under the tabs"));
                    assert!(top < screen.bottom() - MIN_PLOT, "{what}: the plot starts at {top}");
                    assert!(room >= MIN_PLOT - 0.5, "{what}: the plot has {room} points (least {MIN_PLOT})");
                    // the roadmap lesson talks about the roadmap: its title is on screen, not
                    // scrolled away under the hardware table
                    if *lesson == Lesson::Roadmap {
                        let title = if lang == Lang::En { "Roadmap: " } else { "路线图：" };
                        // the roadmap's own title (the lesson's title names the roadmap too)
                        let r = h
                            .query_all(By::new().label_contains(title))
                            .find(|n| {
                                let a = n.accesskit_node();
                                a.label().or(a.value()).is_some_and(|t| t.starts_with(title))
                            })
                            .unwrap_or_else(|| panic!("{what}: no roadmap title"))
                            .rect();
                        assert!(
                            screen.contains_rect(r) && r.top() >= top - 1.0,
                            "{what}: roadmap title at {r:?}"
                        );
                    }
                    // each highlighted segment is named in large type, inside it or in a callout
                    // beside the bar, no name meeting another or the chart's own labels
                    let segs: Vec<FocusSeg> = h.ctx.data(|d| d.get_temp(focus_id())).unwrap_or_default();
                    assert_eq!(segs.is_empty(), lesson.focus().is_empty(), "{what}: highlighted {segs:?}");
                    let (chart, labels): (Rect, Labels) =
                        h.ctx.data(|d| d.get_temp(labels_id())).unwrap_or_else(|| panic!("{what}: no chart"));
                    let mut named: Vec<Rect> = labels.all();
                    for f in &segs {
                        let r = f.label.unwrap_or_else(|| panic!("{what}: {:?} has no label", f.comp));
                        assert!(r.height() >= 18.0, "{what}: {:?}'s label is {} high", f.comp, r.height());
                        assert!(
                            chart.contains_rect(r),
                            "{what}: {:?}'s label {r:?} leaves {chart:?}",
                            f.comp
                        );
                        if !f.seg.contains_rect(r) {
                            assert!(
                                !named.iter().any(|n| n.intersects(r)),
                                "{what}: {:?}'s callout meets a label",
                                f.comp
                            );
                            named.push(r);
                        }
                    }
                }
            }
        }
    }
}

/// The room's edits during the lessons stay out of the user's history: after leaving, undo
/// steps back through the user's own edits, never into a lesson's scenario.
#[test]
fn lesson_edits_stay_out_of_the_user_s_undo_history() {
    let mut h = harness();
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(2.0);
    h.run();
    let before_edit = Settings::default();
    let mine = h.state().state.settings.clone();
    assert_eq!(mine.batch, 2);
    learn(&mut h, LearnStep::Start);
    learn(&mut h, LearnStep::Next);
    learn(&mut h, LearnStep::Next);
    // the room moves a slider during lesson 3
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(16.0);
    h.run();
    assert_eq!(h.state().state.settings.batch, 16);
    learn(&mut h, LearnStep::Leave);
    assert_eq!(h.state().state.settings, mine, "leaving brings the user's scenario back");
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert_eq!(h.state().state.settings, before_edit, "undo is the user's own step, not a lesson's scenario");
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert_eq!(h.state().state.settings, before_edit, "nothing of the lessons is left to undo");
}

/// Lesson 3's "doubling the micro-batch" figure is the estimate at twice the batch, whatever batch
/// the room moved it to (never a "—" where the curve has no sample).
#[test]
fn lesson_three_names_the_doubled_batch_at_any_batch() {
    let mut h = harness();
    learn(&mut h, LearnStep::Start);
    learn(&mut h, LearnStep::Next);
    learn(&mut h, LearnStep::Next);
    for b in [3u64, 5, 8, 11] {
        h.state_mut().state.settings.batch = b;
        h.run_steps(2);
        let c = match &h.state().derived.current {
            Some(Ok(c)) => c.scenario.clone(),
            _ => panic!("no estimate"),
        };
        let doubled = vramscope::estimate::Scenario { batch: 2 * b, ..c };
        let acts = vramscope::estimate::estimate(&doubled).expect("estimate").activations;
        let want = format!("b={}: {:.2} GiB", 2 * b, acts as f64 / vramscope::units::GIB);
        assert!(h.query_by_label_contains(&want).is_some(), "lesson 3 at b={b} says {want}");
    }
}

/// A label's ASCII colon or comma that touches a Chinese character, or a space between two
/// Chinese characters: (the text, what is wrong).
fn punctuation_faults(text: &str) -> Vec<String> {
    let cjk = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let chars: Vec<char> = text.chars().collect();
    let mut faults = Vec::new();
    for (i, &ch) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        let after_space = chars.get(i + 2).copied().filter(|_| after == Some(' '));
        if matches!(ch, ':' | ',')
            && (before.is_some_and(cjk) || after.is_some_and(cjk) || after_space.is_some_and(cjk))
        {
            faults.push(format!("ASCII {ch:?} beside Chinese"));
        }
        if ch == ' ' && before.is_some_and(cjk) && after.is_some_and(cjk) {
            faults.push("a space between Chinese characters".into());
        }
    }
    faults
}

/// Every text the Chinese window shows (each tab, train and serve, every lesson) uses full-width
/// punctuation between Chinese words and no stray spaces inside Chinese phrases.
#[test]
fn the_chinese_window_writes_chinese_punctuation() {
    let mut state = AppState::default();
    state.view.lang = Some(Lang::ZhCn);
    let mut h = test_harness(egui::vec2(1280.0, 800.0), VramApp::new(state));
    h.run();
    let mut faults: Vec<String> = Vec::new();
    let mut check = |h: &Harness<'_, VramApp>, place: &str| {
        for node in h.query_all(By::new()) {
            let n = node.accesskit_node();
            for text in [n.label(), n.value()].into_iter().flatten() {
                let text: &str = text.as_str();
                for f in punctuation_faults(text) {
                    faults.push(format!("{place}: {f}: {text:?}"));
                }
            }
        }
    };
    let tabs = [
        Tab::Batch,
        Tab::Seq,
        Tab::Segments,
        Tab::Timeline,
        Tab::Gpus,
        Tab::Compare,
        Tab::Live,
        Tab::Options,
    ];
    for serving in [false, true] {
        h.state_mut().state.settings.serving = serving;
        for tab in tabs {
            h.state_mut().state.view.tab = tab;
            h.run_steps(3);
            check(&h, &format!("serving={serving} {tab:?}"));
        }
    }
    h.state_mut().state.settings.serving = false;
    for i in 0..Lesson::ALL.len() {
        learn(&mut h, if i == 0 { LearnStep::Start } else { LearnStep::Next });
        check(&h, &format!("lesson {}", i + 1));
    }
    faults.sort();
    faults.dedup();
    assert!(faults.is_empty(), "{} faults:\n{}", faults.len(), faults.join("\n"));
}

/// "Ready." follows the language switched at run time, and an error is cleared by the next
/// action that succeeds.
#[test]
fn the_status_line_follows_the_language_and_forgets_a_stale_error() {
    let mut h = harness();
    assert!(h.query_by_label("Ready.").is_some());
    h.state_mut().set_lang(Lang::ZhCn);
    h.run();
    assert!(h.query_by_label("Ready.").is_none(), "the status line turned Chinese");
    assert_eq!(h.state().status.1, vramscope::gui::strings::main::ZH.ready);
    h.state_mut().set_lang(Lang::En);
    h.run();
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, Intent::LoadPath("/nonexistent/config.json".into()));
    h.run();
    assert_eq!(h.state().status.0, StatusKind::Error, "a missing file is an error");
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(2.0);
    h.run();
    assert_eq!(h.state().status.0, StatusKind::Info, "the next edit clears it: {:?}", h.state().status);
}
