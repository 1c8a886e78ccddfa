//! The menu bar.

use crate::gui::intent::Intent;
use crate::gui::state::AppState;
use crate::gui::strings::tr;
use eframe::egui;

/// Draws the menu bar.
pub fn ui(ui: &mut egui::Ui, state: &AppState) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    egui::MenuBar::new().ui(ui, |ui| {
        ui.menu_button(t.menu_file, |ui| {
            if ui.button(t.menu_open).clicked() {
                out.push(Intent::OpenDialog);
                ui.close();
            }
            ui.menu_button(t.menu_export, |ui| {
                if state.settings.serving {
                    let ts = crate::gui::strings::tr_serve();
                    for (json, label) in [(false, ts.export_text), (true, ts.export_json)] {
                        if ui.button(label).clicked() {
                            out.push(Intent::ExportServe { json });
                            ui.close();
                        }
                    }
                    ui.separator();
                }
                for (f, _) in crate::export::Format::ALL {
                    if ui.button(crate::gui::strings::export_label(f)).clicked() {
                        out.push(Intent::Export(f));
                        ui.close();
                    }
                }
                ui.separator();
                if ui.button(t.menu_export_window_png).clicked() {
                    out.push(Intent::ExportPng { chart_only: false });
                    ui.close();
                }
                if ui.button(t.menu_export_chart_png).clicked() {
                    out.push(Intent::ExportPng { chart_only: true });
                    ui.close();
                }
                if !state.settings.serving
                    && ui.button(t.menu_export_slide).on_hover_text(t.menu_export_slide_tip).clicked()
                {
                    out.push(Intent::ExportSlide);
                    ui.close();
                }
            });
            if ui.button(t.menu_reset).clicked() {
                out.push(Intent::Reset);
                ui.close();
            }
            ui.separator();
            if ui.button(t.menu_quit).clicked() {
                out.push(Intent::Quit);
            }
        });
        ui.menu_button(t.menu_view, |ui| {
            let mut dark = state.view.dark;
            if ui.radio_value(&mut dark, true, t.menu_dark).clicked()
                || ui.radio_value(&mut dark, false, t.menu_light).clicked()
            {
                out.push(Intent::SetDark(dark));
            }
            let mut pres = state.view.presentation;
            if ui.checkbox(&mut pres, t.menu_presentation).changed() {
                out.push(Intent::SetPresentation(pres));
            }
            ui.separator();
            ui.menu_button(t.menu_language, |ui| {
                let now = crate::gui::lang::current();
                for l in crate::gui::lang::Lang::ALL {
                    if ui.radio(now == l, l.native_name()).clicked() {
                        out.push(Intent::SetLang(l));
                        ui.close();
                    }
                }
            });
        });
        let learning = state.view.learn.is_some();
        if ui.selectable_label(learning, t.menu_learn).on_hover_text(t.menu_learn_tip).clicked() {
            out.push(Intent::Learn(if learning {
                crate::gui::learn::LearnStep::Leave
            } else {
                crate::gui::learn::LearnStep::Start
            }));
        }
        ui.menu_button(t.menu_help, |ui| {
            ui.label(t.help_text);
        });
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            ui.label(format!("{} — {}", t.app_title, state.settings.model_name()));
        });
    });
    out
}
