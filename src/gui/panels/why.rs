//! "Why this much?": each component with its formula and the numbers substituted.

use super::{exact, gib};
use crate::gui::derived::Computed;
use crate::gui::palette;
use crate::gui::strings::tr;
use eframe::egui::{self, RichText};

/// Draws the explanation table.
pub fn ui(ui: &mut egui::Ui, c: &Computed) {
    let t = tr();
    ui.heading(t.why_title);
    ui.label(RichText::new(t.why_hint).weak());
    egui::ScrollArea::vertical().id_salt("why").show(ui, |ui| {
        egui::Grid::new("why-grid").num_columns(3).spacing([8.0, 6.0]).striped(true).show(ui, |ui| {
            for x in &c.explanations {
                let (rect, _) = ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 2.0, palette::color(x.component));
                ui.label(RichText::new(super::breakdown::name(x.component)).strong()).on_hover_text(format!(
                    "{}\n{} at the peak",
                    x.formula,
                    exact(x.bytes)
                ));
                ui.add(egui::Label::new(x.substituted.as_str()).wrap()).on_hover_text(&x.formula);
                ui.end_row();
            }
        });
        if c.estimate.activations > 0 {
            ui.add_space(6.0);
            ui.label(RichText::new(t.activations_detail).strong());
            for (cat, bytes) in c.estimate.activation_breakdown.nonzero() {
                ui.label(format!("  · {:<24} {}", cat.label(), gib(bytes))).on_hover_text(format!(
                    "{}\n{}",
                    crate::explain::category_help(cat),
                    exact(bytes)
                ));
            }
        }
    });
}
