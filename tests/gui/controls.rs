//! The controls a presenter expects (full screen, one zoom that persists, the Learn menu, the
//! keyboard-shortcut window, legends outside the plots, the micro-batch rail, thousands
//! separators) and curves you can read (the hover read-out, the fewest GPUs that fit whatever the
//! current count, why a curve is not smooth, which peak the timeline and the headline show).

use super::{harness, test_harness};
use eframe::egui::{self, Key, Modifiers, accesskit::Role};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vramscope::estimate::Checkpointing;
use vramscope::fit::Knob;
use vramscope::gui::app::VramApp;
use vramscope::gui::derived::Computed;
use vramscope::gui::intent::Intent;
use vramscope::gui::learn::Lesson;
use vramscope::gui::state::{AppState, ModelChoice, Settings, Tab};

/// The viewport commands the app sent in the last frame.
fn commands(h: &Harness<'_, VramApp>) -> Vec<egui::ViewportCommand> {
    h.output().viewport_output.get(&egui::ViewportId::ROOT).map(|v| v.commands.clone()).unwrap_or_default()
}

/// A node's text (its label, or a label's value).
fn label(n: &egui_kittest::Node<'_>) -> String {
    let a = n.accesskit_node();
    a.label().or_else(|| a.value()).unwrap_or_else(|| format!("{n:?}"))
}

fn app_with(settings: Settings, tab: Tab) -> Harness<'static, VramApp> {
    let mut state = AppState { settings, ..Default::default() };
    state.view.tab = tab;
    let mut h = test_harness(egui::vec2(1280.0, 800.0), VramApp::new(state));
    h.run();
    h
}

fn apply(h: &mut Harness<'_, VramApp>, intent: Intent) {
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, intent);
    h.run_steps(3);
}

#[test]
fn f11_and_the_view_menu_switch_full_screen() {
    let mut h = harness();
    h.key_down(Key::F11);
    h.step();
    assert!(commands(&h).contains(&egui::ViewportCommand::Fullscreen(true)), "F11 asks for full screen");
    h.key_up(Key::F11);
    h.run();
    // the window is full screen now: the menu item shows it and turns it off
    h.input_mut().viewports.entry(egui::ViewportId::ROOT).or_default().fullscreen = Some(true);
    h.get_by_label("View").click();
    h.run();
    let item = h.get_by_role_and_label(Role::CheckBox, "Full screen (F11)");
    assert_eq!(
        item.accesskit_node().toggled(),
        Some(egui::accesskit::Toggled::True),
        "checked while full screen"
    );
    item.click();
    h.step();
    assert!(commands(&h).contains(&egui::ViewportCommand::Fullscreen(false)), "the item leaves full screen");
}

#[test]
fn zoom_keys_change_one_zoom_that_is_kept() {
    let mut h = harness();
    h.key_press_modifiers(Modifiers::COMMAND, Key::Equals);
    h.run_steps(4);
    assert_eq!(h.state().state.view.zoom, 1.1);
    assert!((h.ctx.zoom_factor() - 1.1).abs() < 1e-4, "zoom {}", h.ctx.zoom_factor());
    // egui's own Ctrl+= would have been undone by the next frame; this one stays
    h.run_steps(5);
    assert!((h.ctx.zoom_factor() - 1.1).abs() < 1e-4);
    h.key_press_modifiers(Modifiers::COMMAND, Key::Minus);
    h.run();
    h.key_press_modifiers(Modifiers::COMMAND, Key::Minus);
    h.run();
    assert_eq!(h.state().state.view.zoom, 0.9);
    h.get_by_label("View").click();
    h.run();
    assert!(h.query_by_label("Zoom: 90 %").is_some(), "the View menu shows the percentage");
    h.get_by_label_contains("Zoom in").click();
    h.run();
    assert_eq!(h.state().state.view.zoom, 1.0);
    h.key_press(Key::Escape);
    h.run();
    h.key_press_modifiers(Modifiers::COMMAND, Key::Equals);
    h.run();
    // kept in the saved view, and multiplied with the presentation layout's zoom
    let saved = h.state().state.to_stored();
    let back = AppState::from_stored(Some(&saved)).unwrap().unwrap();
    assert_eq!(back.view.zoom, 1.1);
    apply(&mut h, Intent::SetPresentation(true));
    let want = 1.1 * 800.0 / 560.0;
    assert!((h.ctx.zoom_factor() - want).abs() < 0.01, "presentation zoom {} vs {want}", h.ctx.zoom_factor());
    h.key_press_modifiers(Modifiers::COMMAND, Key::Num0);
    h.run_steps(3);
    assert_eq!(h.state().state.view.zoom, 1.0);
    // a state saved before the zoom existed loads at 100 %
    let old = "(settings: (batch: 2), view: (dark: false))";
    assert_eq!(AppState::from_stored(Some(old)).unwrap().unwrap().view.zoom, 1.0);
}

#[test]
fn the_learn_menu_jumps_to_any_lesson_and_keeps_the_user_s_scenario() {
    let mut h = harness();
    h.state_mut().state.settings.batch = 3;
    h.state_mut().state.view.tab = Tab::Compare;
    h.run();
    let mine = h.state().state.settings.clone();
    h.get_by_label("Learn").click();
    h.run();
    for (i, l) in Lesson::ALL.iter().enumerate() {
        let title = format!("{}. {}", i + 1, l.title(vramscope::i18n::Lang::En));
        assert!(h.query_by_label(&title).is_some(), "the menu lists {title}");
    }
    h.get_by_label("5. Gradient checkpointing").click();
    h.run_steps(2);
    assert_eq!(h.state().state.settings, Lesson::ALL[4].settings());
    assert_eq!(h.state().state.view.tab, Lesson::ALL[4].tab());
    assert!(h.query_by_label_contains("Lesson 5 of 8").is_some());
    // straight on to lesson 8 from the menu, then PgUp back one
    h.get_by_label("Learn").click();
    h.run();
    h.get_by_label("8. The roadmap: short, mid and long term").click();
    h.run_steps(2);
    assert!(h.query_by_label_contains("Lesson 8 of 8").is_some());
    h.key_press(Key::PageUp);
    h.run_steps(2);
    assert!(h.query_by_label_contains("Lesson 7 of 8").is_some());
    h.get_by_label("Learn").click();
    h.run();
    h.get_by_role_and_label(Role::Button, "Leave the lessons").click();
    h.run_steps(2);
    assert_eq!(h.state().state.settings, mine, "the user's scenario is back");
    assert_eq!(h.state().state.view.tab, Tab::Compare);
}

#[test]
fn help_lists_every_bound_key() {
    let mut h = harness();
    h.get_by_label("Help").click();
    h.run();
    h.get_by_label("Keyboard shortcuts…").click();
    h.run();
    assert!(h.state().shortcuts_open);
    let rows = vramscope::gui::panels::shortcuts::bindings(&h.ctx);
    for keys in [
        "Ctrl+Z",
        "Ctrl+Shift+Z / Ctrl+Y",
        "Ctrl+= / Ctrl++",
        "Ctrl+−",
        "Ctrl+0",
        "F11",
        "→ / PgDn",
        "← / PgUp",
        "Esc",
        "Ctrl+Q",
    ] {
        assert!(rows.iter().any(|(k, _)| k == keys), "{keys} listed in {rows:?}");
        assert!(h.query_by_label(keys).is_some(), "{keys} shown in the window");
    }
    for (_, what) in &rows {
        assert!(h.query_all_by_label(what).next().is_some(), "{what} shown");
    }
    // each listed key does what the window says: Ctrl+Y redoes, PgDn steps a lesson
    h.get_by_role_and_label(Role::Slider, "Micro-batch").set_value_accesskit(4.0);
    h.run();
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    h.key_press_modifiers(Modifiers::COMMAND, Key::Y);
    h.run();
    assert_eq!(h.state().state.settings.batch, 4);
    apply(&mut h, Intent::Learn(vramscope::gui::learn::LearnStep::Start));
    h.key_press(Key::PageDown);
    h.run_steps(2);
    assert_eq!(h.state().state.view.learn.as_ref().map(|l| l.index), Some(1));
    apply(&mut h, Intent::ShowShortcuts(false));
    assert!(h.query_by_label("Keyboard shortcuts").is_none(), "the window closes");
}

/// The rect of the what-if plot as last drawn.
fn plot_rect(h: &Harness<'_, VramApp>) -> egui::Rect {
    h.ctx.data(|d| d.get_temp(vramscope::gui::panels::curves::plot_id())).expect("a what-if plot")
}

#[test]
fn legends_sit_outside_the_plots_and_list_every_line() {
    let mut heights = Vec::new();
    for (presentation, learn) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut h = harness();
        if presentation {
            apply(&mut h, Intent::SetPresentation(true));
        }
        if learn {
            // lesson 3 shows the batch curve
            apply(&mut h, Intent::Learn(vramscope::gui::learn::LearnStep::Go(2)));
        }
        h.run_steps(2);
        let what = format!("presentation {presentation}, lesson {learn}");
        let plot = plot_rect(&h);
        let gpu = h.state().state.settings.gpu_id.clone();
        for name in ["total per GPU".to_owned(), format!("{gpu} CUDA-visible: "), "current 4".to_owned()] {
            if name == "current 4" && !learn {
                continue;
            }
            let node = h.get_by_label_contains(&name);
            let r = node.rect();
            assert!(!r.intersects(plot), "{what}: legend entry {name} at {r:?} covers the plot {plot:?}");
            if name == "total per GPU" {
                heights.push((presentation, r.height()));
            }
        }
        assert!(
            h.query_by_label_contains("largest that fits:").is_some(),
            "{what}: the marked point is named"
        );
    }
    // larger type on a projector (same window, points)
    let desk = heights.iter().find(|(p, _)| !p).map(|(_, h)| *h).unwrap();
    let room = heights.iter().find(|(p, _)| *p).map(|(_, h)| *h).unwrap();
    assert!(room > desk * 1.1, "legend type {room} on a projector vs {desk} at a desk");
}

#[test]
fn the_micro_batch_rail_is_wide_steps_by_powers_of_two_and_takes_a_typed_value() {
    let mut h = harness();
    let rail = h.get_by_role_and_label(Role::Slider, "Micro-batch");
    assert!(rail.rect().width() >= 200.0, "the rail is {} points wide", rail.rect().width());
    rail.set_value_accesskit(16.0);
    h.run();
    assert_eq!(h.state().state.settings.batch, 16);
    h.get_by_role_and_label(Role::Slider, "Micro-batch").increment_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.batch, 32, "one step up is the next power of two");
    h.get_by_role_and_label(Role::Slider, "Micro-batch").decrement_accesskit();
    h.run();
    h.get_by_role_and_label(Role::Slider, "Micro-batch").decrement_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.batch, 8);
    // the number beside it: any value
    let rail = h.get_by_role_and_label(Role::Slider, "Micro-batch").rect();
    let typed = h
        .query_all_by_role(Role::SpinButton)
        .find(|n| {
            n.value().as_deref() == Some("8")
                && n.rect().bottom() <= rail.top() + 1.0
                && n.rect().bottom() > rail.top() - 30.0
        })
        .expect("a number over the rail");
    typed.set_value_accesskit(24.0);
    h.run();
    assert_eq!(h.state().state.settings.batch, 24);
}

#[test]
fn large_numbers_have_thousands_separators() {
    let s = Settings {
        model: ModelChoice::Preset("llama-3.1-405b".into()),
        batch: 64,
        seq: 8192,
        checkpointing: Checkpointing::None,
        ..Default::default()
    };
    let h = app_with(s, Tab::Batch);
    let short = h.get_by_label_contains("GiB short");
    let text = label(&short);
    let n = text.split(" GiB short").next().unwrap_or_default().rsplit(' ').next().unwrap_or_default();
    assert!(n.contains(',') && n.replace(',', "").parse::<f64>().unwrap() >= 1000.0, "{text}");
    assert!(h.query_by_label_contains(&format!("{n} GiB of")).is_none(), "short, not the total");
}

#[test]
fn hovering_a_curve_reads_its_value_at_that_x() {
    let mut h = harness();
    assert!(h.query_by_label("hover the curve to read its value").is_some());
    let plot = plot_rect(&h);
    h.hover_at(plot.center());
    h.run();
    let node = h
        .query_all_by_label_contains("at micro-batch ")
        .find(|n| label(n).starts_with("at micro-batch "))
        .expect("a read-out");
    let text = label(&node);
    // the read-out is a point of the curve: its knob value and its total
    let x: u64 = text
        .trim_start_matches("at micro-batch ")
        .split(':')
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    let c = h.state().derived.current.as_ref().unwrap().as_ref().unwrap();
    let p =
        c.curve(Knob::Batch).iter().find(|p| p.x == x).unwrap_or_else(|| panic!("{x} is not on the curve"));
    let total = vramscope::gui::panels::gib(p.total);
    assert!(text.contains(&format!(": {total} (allocated ")), "{text} shows {total}");
    // the pointer off the plot: the hint comes back
    h.hover_at(egui::pos2(5.0, 5.0));
    h.run();
    assert!(
        h.query_all_by_label_contains("at micro-batch ").all(|n| !label(&n).starts_with("at micro-batch "))
    );
}

#[test]
fn the_fewest_gpus_that_fit_do_not_depend_on_the_current_count() {
    let base = Settings { model: ModelChoice::Preset("llama-3.1-70b".into()), zero: 3, ..Default::default() };
    // the CLI's answer: the smallest power of two for which `estimate --dp N --zero 3` fits
    let cli = (0..=10)
        .map(|i| 1u64 << i)
        .find(|&dp| {
            let sc = Settings { dp, ..base.clone() }.to_scenario().unwrap();
            vramscope::fit::verdict(&sc, vramscope::gpu::find("h100-80gb").unwrap().capacity()).unwrap().fits
        })
        .expect("some data-parallel degree fits");
    assert!(cli > 1, "a 70B fine-tune needs more than one H100");
    for dp in [2, cli, 64] {
        let c = Computed::new(&Settings { dp, ..base.clone() }).unwrap();
        let shown = vramscope::gui::panels::curves::fewest_that_fit(c.curve(Knob::Gpus));
        assert_eq!(shown, Some(cli), "at dp {dp}");
    }
    let h = app_with(Settings { dp: 64, ..base }, Tab::Gpus);
    assert!(h.query_by_label(&format!("fewest GPUs that fit: {cli}")).is_some(), "the legend names {cli}");
}

#[test]
fn an_uneven_curve_says_why() {
    // the sequence curve of the default job dips where the allocator's reserve does
    let h = app_with(Settings::default(), Tab::Seq);
    assert!(h.query_by_label_contains("the caching allocator's reserve").is_some());
    // 41 checkpoint segments of a 70B's 80 blocks: 40 of one block and a last one of 40
    let s = Settings {
        model: ModelChoice::Preset("llama-3.1-70b".into()),
        dp: 8,
        zero: 3,
        checkpointing: Checkpointing::Segments(4),
        ..Default::default()
    };
    let h = app_with(s, Tab::Segments);
    let caption = h.get_by_label_contains("checkpoint_sequential");
    let text = label(&caption);
    assert!(text.contains("at 41 segments, 40 of 1 block(s) and a last one of 40"), "{text}");
}

#[test]
fn the_timeline_and_the_headline_name_their_figures() {
    let mut h = app_with(Settings::default(), Tab::Timeline);
    let c = h.state().derived.current.as_ref().unwrap().as_ref().unwrap();
    let peak = vramscope::gui::panels::gib(c.timeline.as_ref().unwrap().peak().unwrap().alive.total());
    let total = vramscope::gui::panels::gib(c.estimate.total);
    assert!(
        h.query_by_label_contains(&format!("peak {peak} allocated")).is_some(),
        "the timeline's peak is allocated"
    );
    assert!(h.query_by_label_contains(&format!("the headline's {total} is what nvidia-smi shows")).is_some());
    assert!(h.query_by_label_contains("stay at the step's peak").is_none(), "nothing selected yet");
    apply(&mut h, Intent::SelectEvent(Some(3)));
    assert!(
        h.query_by_label_contains("stay at the step's peak").is_some(),
        "the headline says it did not move"
    );
    assert!(h.query_by_label_contains("selected: ").is_some());
}

#[test]
fn a_traced_model_opens_with_a_slider_per_dim_and_says_when_it_extrapolates() {
    let mut h = harness();
    let ctx = h.ctx.clone();
    let path = format!("{}/tests/data/traced/convattn-fp32.vstrace.json", env!("CARGO_MANIFEST_DIR"));
    h.state_mut().apply(&ctx, Intent::LoadPath(path));
    h.run();
    let s = &h.state().state.settings;
    // it starts where it was traced: its precision, its first batch and image, no checkpointing
    assert_eq!(
        (s.batch, s.image.map(|i| (i.height, i.width))),
        (2, Some((16, 16))),
        "{:?}",
        h.state().status
    );
    assert_eq!(s.checkpointing, Checkpointing::None);
    let c = h.state().derived.current.as_ref().unwrap().as_ref().unwrap();
    assert!(vramscope::report::validated(&c.scenario), "a traced point is the recorded step");
    // its dims are sliders; the sequence and segment curves are gone
    h.get_by_role_and_label(Role::Slider, "height").set_value_accesskit(40.0);
    h.run();
    assert_eq!(h.state().state.settings.image.map(|i| i.height), Some(40));
    assert!(
        h.query_by_label("vs sequence").is_none() && h.query_by_label("vs checkpoint segments").is_none()
    );
    let c = h.state().derived.current.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(c.scenario.dim("height"), Some(40));
    assert!(!vramscope::report::validated(&c.scenario));
    assert!(h.query_by_label_contains("sizes extrapolated from the trace").is_some(), "the headline says so");
}

#[test]
fn a_traced_preset_checkpoints_its_blocks_from_one_box() {
    let s = Settings {
        model: ModelChoice::Preset("sd1.5-unet-lora".into()),
        batch: 4,
        image: Some(vramscope::model::pixels::ImageSize { height: 768, width: 768 }),
        precision: vramscope::units::Precision::Bf16Amp,
        checkpointing: Checkpointing::None,
        ..Default::default()
    };
    let mut h = app_with(s, Tab::Batch);
    let peak = |h: &Harness<'static, VramApp>| {
        let c = h.state().derived.current.as_ref().unwrap().as_ref().expect("an estimate");
        c.estimate.peak_allocated
    };
    let before = peak(&h);
    // the trace's own blocks, in one box; no attention or LoRA controls for a traced model
    assert!(h.query_by_label("LoRA adapters").is_none() && h.query_by_label("Attention").is_none());
    // the loss is the trace's: no framework preset (which sets one) and no compiled loss
    assert!(h.query_by_label("Framework").is_none() && h.query_by_label("compiled loss").is_none());
    assert!(h.query_by_label("optimizer in backward").is_some());
    h.get_by_label("Checkpoint the blocks (BasicTransformerBlock, ResnetBlock2D)").click();
    h.run();
    assert_eq!(h.state().state.settings.checkpointing, Checkpointing::Full);
    assert!(peak(&h) * 2 < before, "checkpointing: {} against {before}", peak(&h));
}

#[test]
fn a_compiled_loss_set_before_a_traced_model_shows_to_be_unset() {
    let mut s = Settings {
        model: ModelChoice::Preset("tv-resnet50".into()),
        precision: vramscope::units::Precision::Bf16Amp,
        ..Default::default()
    };
    s.stack.compiled_loss = true;
    let mut h = app_with(s, Tab::Batch);
    // the trace's loss refuses it, and the box that set it is there to clear it
    assert!(h.state().derived.current.as_ref().unwrap().is_err());
    h.get_by_label("compiled loss").click();
    h.run();
    assert!(!h.state().state.settings.stack.compiled_loss);
    assert!(h.state().derived.current.as_ref().unwrap().is_ok());
    assert!(h.query_by_label("compiled loss").is_none());
}
