//! The menu bar.

use crate::gui::intent::Intent;
use crate::gui::learn::{LearnStep, Lesson};
use crate::gui::panels::shortcuts::{Shortcut, key_text};
use crate::gui::state::AppState;
use crate::gui::state::ZoomStep;
use crate::gui::strings::{tr, tr_controls};
use eframe::egui;

/// Draws the menu bar.
pub fn ui(ui: &mut egui::Ui, state: &AppState) -> Vec<Intent> {
    let t = tr();
    let tc = tr_controls();
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
            out.extend(screen_items(ui, state));
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
        ui.menu_button(t.menu_learn, |ui| out.extend(learn_items(ui, state)))
            .response
            .on_hover_text(t.menu_learn_tip);
        ui.menu_button(t.menu_help, |ui| {
            ui.label(t.help_text);
            ui.separator();
            if ui.button(tc.menu_shortcuts).clicked() {
                out.push(Intent::ShowShortcuts(true));
                ui.close();
            }
        });
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            ui.label(format!("{} — {}", t.app_title, state.settings.model_name()));
        });
    });
    out
}

/// View → full screen and zoom: the state of each, the keys beside them.
fn screen_items(ui: &mut egui::Ui, state: &AppState) -> Vec<Intent> {
    let tc = tr_controls();
    let ctx = ui.ctx().clone();
    let mut out = Vec::new();
    let mut full = ctx.input(|i| i.viewport().fullscreen.unwrap_or(false));
    let label = format!("{} ({})", tc.fullscreen, key_text(&ctx, Shortcut::Fullscreen));
    if ui.checkbox(&mut full, label).changed() {
        out.push(Intent::Fullscreen(full));
        ui.close();
    }
    let pct = (state.view.user_zoom() * 100.0).round().to_string();
    ui.label(tc.zoom_now.replace("{pct}", &pct));
    for (step, label, key) in [
        (ZoomStep::In, tc.zoom_in, Shortcut::ZoomIn),
        (ZoomStep::Out, tc.zoom_out, Shortcut::ZoomOut),
        (ZoomStep::Reset, tc.zoom_reset, Shortcut::ZoomReset),
    ] {
        // a click keeps the menu open, so the percentage above shows each step
        if ui.add(egui::Button::new(label).shortcut_text(key_text(&ctx, key))).clicked() {
            out.push(Intent::Zoom(step));
        }
    }
    out
}

/// The Learn menu: start or leave, then the eight lessons by number and title (a click goes
/// straight to that lesson; the user's own scenario comes back on leaving).
fn learn_items(ui: &mut egui::Ui, state: &AppState) -> Vec<Intent> {
    let tc = tr_controls();
    let lang = crate::gui::lang::current();
    let mut out = Vec::new();
    let at = state.view.learn.as_ref().map(|st| st.index.min(Lesson::ALL.len() - 1));
    let first = match at {
        Some(_) => egui::Button::new(tc.learn_leave).shortcut_text("Esc"),
        None => egui::Button::new(tc.learn_start),
    };
    if ui.add(first).clicked() {
        out.push(Intent::Learn(if at.is_some() { LearnStep::Leave } else { LearnStep::Start }));
        ui.close();
    }
    ui.separator();
    for (i, lesson) in Lesson::ALL.iter().enumerate() {
        let label = format!("{}. {}", i + 1, lesson.title(lang));
        if ui.add(egui::Button::selectable(at == Some(i), label)).clicked() {
            out.push(Intent::Learn(LearnStep::Go(i)));
            ui.close();
        }
    }
    out
}
