//! Side-by-side comparison of the current scenario with pinned ones.

use super::gib;
use crate::explain::Component;
use crate::gui::derived::Computed;
use crate::gui::intent::Intent;
use crate::gui::strings::tr;
use eframe::egui::{self, RichText};

/// Draws the pin buttons and the difference table.
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
    egui::ScrollArea::vertical().id_salt("compare").show(ui, |ui| {
        egui::Grid::new("compare-grid").striped(true).num_columns(2 + 2 * pinned.len()).show(ui, |ui| {
            ui.label(RichText::new(t.component).strong());
            ui.label(RichText::new(t.current).strong());
            for (label, _) in pinned {
                ui.label(RichText::new(*label).strong());
                ui.label(RichText::new(format!("{} − {label}", t.current)).strong());
            }
            ui.end_row();
            let row = |ui: &mut egui::Ui, name: &str, f: &dyn Fn(&Computed) -> u64| {
                ui.label(name);
                let cur = f(c);
                ui.label(gib(cur));
                for (_, p) in pinned {
                    let v = f(p);
                    ui.label(gib(v));
                    let d = cur as f64 - v as f64;
                    ui.label(format!("{:+.1} GiB", d / crate::units::GIB));
                }
                ui.end_row();
            };
            for comp in Component::ALL {
                row(ui, super::breakdown::name(comp), &|x: &Computed| comp.at_peak(&x.estimate));
            }
            row(ui, "total (nvidia-smi)", &|x: &Computed| x.estimate.total);
            ui.label("model · batch × seq");
            ui.label(describe(c));
            for (_, p) in pinned {
                ui.label(describe(p));
                ui.label("");
            }
            ui.end_row();
        });
    });
    out
}

fn describe(c: &Computed) -> String {
    let s = &c.scenario;
    let p = &s.parallel;
    let layout = if p.world() > 1 {
        format!(
            " · {} (ZeRO-{}, TP {}, PP {})",
            crate::units::count(p.world(), "GPU"),
            p.effective_zero(),
            p.tp,
            p.pp
        )
    } else {
        String::new()
    };
    format!("{} · {}×{} · {} · ckpt {}{layout}", s.model.name, s.batch, s.seq, s.precision, s.checkpointing)
}
