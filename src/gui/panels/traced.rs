//! A traced model's dims beside the batch: a slider each, from 1 to four times the largest value
//! traced. `height` and `width` set the image (`--image-size`), any other dim a `--dim`.

use super::controls::mark;
use crate::estimate::Checkpointing;
use crate::gui::state::Settings;
use crate::gui::strings::tr;
use crate::model::pixels::ImageSize;
use crate::trace::{TraceDim, TracedModel};
use eframe::egui;

/// The dims' sliders.
pub(super) fn dims(ui: &mut egui::Ui, s: &mut Settings, t: &TracedModel, knob: &mut &'static str) {
    for d in t.dims.iter().filter(|d| d.name != "batch") {
        let current = value(s, d);
        if d.values.len() < 2 {
            let line =
                tr().trace_dim_fixed.replace("{name}", &d.name).replace("{value}", &current.to_string());
            ui.small(line);
            continue;
        }
        if slider(ui, d, current).is_some_and(|v| set(s, d, v)) {
            mark(
                true,
                if matches!(d.name.as_str(), "height" | "width") { "image size" } else { "dim" },
                knob,
            );
        }
    }
}

/// The dim's value in the settings (the first traced where none is set).
fn value(s: &Settings, d: &TraceDim) -> u64 {
    match d.name.as_str() {
        "height" => s.image.map(|i| i.height),
        "width" => s.image.map(|i| i.width),
        n => s.dims.get(n).copied(),
    }
    .unwrap_or_else(|| d.first())
}

/// Sets the dim; true when it changed.
fn set(s: &mut Settings, d: &TraceDim, v: u64) -> bool {
    let (h, w) = (s.image.map(|i| i.height), s.image.map(|i| i.width));
    match d.name.as_str() {
        "height" => s.image = Some(ImageSize { height: v, width: w.unwrap_or(v) }),
        "width" => s.image = Some(ImageSize { height: h.unwrap_or(v), width: v }),
        n => {
            s.dims.insert(n.to_owned(), v);
        }
    }
    true
}

/// A name, a number that takes any value typed, and a rail; the new value when moved.
fn slider(ui: &mut egui::Ui, d: &TraceDim, current: u64) -> Option<u64> {
    let values: Vec<String> = d.values.iter().map(u64::to_string).collect();
    let tip = tr().trace_dim_tip.replace("{values}", &values.join(", "));
    let top = d.values.iter().copied().max().unwrap_or(1).saturating_mul(4).max(2);
    let mut v = current;
    let (name, typed) = ui
        .horizontal(|ui| {
            let name = ui.label(&d.name).on_hover_text(&tip);
            let typed = ui.add(egui::DragValue::new(&mut v).range(1..=top.max(current))).on_hover_text(&tip);
            (name, typed)
        })
        .inner;
    let rail = ui
        .scope(|ui| {
            ui.spacing_mut().slider_width = (ui.available_width() - 4.0).clamp(100.0, 480.0);
            ui.add(egui::Slider::new(&mut v, 1..=top.max(current)).show_value(false))
        })
        .inner
        .on_hover_text(&tip)
        .labelled_by(name.id);
    (typed.changed() || rail.changed()).then_some(v)
}

/// Checkpointing a traced model's blocks (`--checkpoint full`), where the trace recorded them.
pub(super) fn checkpoint(ui: &mut egui::Ui, s: &mut Settings, t: &TracedModel, knob: &mut &'static str) {
    let tr = tr();
    if !t.checkpoint.available() {
        ui.small(tr.trace_no_checkpoint);
        return;
    }
    let mut on = s.checkpointing == Checkpointing::Full;
    let label = tr.trace_checkpoint.replace("{blocks}", &t.checkpoint.blocks.join(", "));
    if ui.checkbox(&mut on, label).on_hover_text(tr.trace_checkpoint_tip).changed() {
        s.checkpointing = if on { Checkpointing::Full } else { Checkpointing::None };
        mark(true, "checkpoint", knob);
    }
}
