//! Side-by-side comparison of the current scenario with pinned ones: the Compare tab, and the
//! same table on the slide.

use super::gib;
use crate::explain::Component;
use crate::gui::derived::Computed;
use crate::gui::intent::Intent;
use crate::gui::strings::{tr, tr_export};
use eframe::egui::{self, RichText};

/// Draws the pin buttons and the difference table (scrolling both ways: with the controls open
/// the last "current − X" column is off to the right).
pub fn ui(ui: &mut egui::Ui, c: &Computed, pinned: &[(&str, &Computed)]) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    ui.horizontal(|ui| {
        let next = (b'A' + (pinned.len() % 26) as u8) as char;
        if ui.button(format!("{} {next}", t.pin)).on_hover_text(t.pin_tip).clicked() {
            out.push(Intent::Pin);
        }
        if !pinned.is_empty() && ui.button(t.unpin_all).clicked() {
            out.push(Intent::ClearPins);
        }
    });
    if pinned.is_empty() {
        super::hint(ui, t.compare_empty);
        return out;
    }
    legend(ui, c, pinned, None);
    ui.add_space(4.0);
    egui::ScrollArea::both().id_salt("compare").auto_shrink([false, true]).show(ui, |ui| {
        table(ui, c, pinned, None);
    });
    out
}

/// The difference table: a row a component and the total, a column for the current scenario,
/// then each pin's value and "current − pin". `size`: the text size (the slide's), else the
/// interface's.
pub fn table(ui: &mut egui::Ui, c: &Computed, pinned: &[(&str, &Computed)], size: Option<f32>) {
    let t = tr();
    let text = |s: String| sized(s, size);
    egui::Grid::new("compare-grid").striped(true).num_columns(2 + 2 * pinned.len()).show(ui, |ui| {
        ui.label(text(t.component.into()).strong());
        ui.label(text(t.current.into()).strong());
        for (label, _) in pinned {
            ui.label(text((*label).into()).strong());
            ui.label(text(format!("{} − {label}", t.current)).strong());
        }
        ui.end_row();
        let row = |ui: &mut egui::Ui, name: &str, f: &dyn Fn(&Computed) -> u64| {
            ui.label(text(name.into()));
            let cur = f(c);
            ui.label(text(gib(cur)));
            for (_, p) in pinned {
                let v = f(p);
                ui.label(text(gib(v)));
                let d = cur as f64 - v as f64;
                ui.label(text(format!("{} GiB", super::signed(d / crate::units::GIB, 1))));
            }
            ui.end_row();
        };
        for comp in Component::ALL {
            // a component no scenario has is no row
            if std::iter::once(c).chain(pinned.iter().map(|p| p.1)).all(|x| comp.at_peak(&x.estimate) == 0) {
                continue;
            }
            row(ui, super::breakdown::name(comp), &|x: &Computed| comp.at_peak(&x.estimate));
        }
        row(ui, tr_export().total_smi, &|x: &Computed| x.estimate.total);
    });
}

/// What each column is: "current: …", "A: …", each scenario's settings and card on a line of
/// its own (wrapped), in `size` (the slide's) or the interface's text size.
pub fn legend(ui: &mut egui::Ui, c: &Computed, pinned: &[(&str, &Computed)], size: Option<f32>) {
    for (label, x) in std::iter::once((tr().current, c)).chain(pinned.iter().copied()) {
        let item = tr_export().legend_item.replace("{label}", label).replace("{what}", &describe(x));
        ui.add(egui::Label::new(sized(item, size)).wrap());
    }
}

fn sized(s: String, size: Option<f32>) -> RichText {
    match size {
        Some(px) => RichText::new(s).size(px),
        None => RichText::new(s),
    }
}

/// A scenario's settings and card in one line (the core's summary, the method named by its one
/// phrase: "… · QLoRA r=16, NF4 base (double quant), bf16 · …").
pub fn describe(c: &Computed) -> String {
    format!("{} · {}", c.scenario.summary_in(crate::gui::lang::current()), c.gpu.name)
}
