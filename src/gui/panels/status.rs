//! The status bar: messages, errors, undo and redo.

use crate::gui::app::StatusKind;
use crate::gui::intent::Intent;
use crate::gui::strings::tr;
use eframe::egui;

/// Draws the status bar.
pub fn ui(ui: &mut egui::Ui, status: &(StatusKind, String), can_undo: bool, can_redo: bool) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    ui.horizontal(|ui| {
        let color = match status.0 {
            StatusKind::Info => ui.visuals().text_color(),
            StatusKind::Error => ui.visuals().error_fg_color,
        };
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if ui.add_enabled(can_redo, egui::Button::new(t.redo)).on_hover_text("Ctrl+Shift+Z").clicked() {
                out.push(Intent::Redo);
            }
            if ui.add_enabled(can_undo, egui::Button::new(t.undo)).on_hover_text("Ctrl+Z").clicked() {
                out.push(Intent::Undo);
            }
            ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                ui.add(egui::Label::new(egui::RichText::new(status.1.as_str()).color(color)).truncate());
            });
        });
    });
    out
}
