//! The model section's Hub field: an id (`org/name[@revision]`) and Fetch (Enter fetches), the
//! ids fetched lately in a menu, and while a fetch runs a spinner with the id and Cancel. Returns
//! [`Intent::FetchHub`] and [`Intent::CancelHub`]; the app runs the fetch (`gui::hub`).

use crate::gui::intent::Intent;
use crate::gui::strings::tr_controls;
use eframe::egui;

/// What the field shows.
pub struct HubField<'a> {
    /// The text typed.
    pub input: &'a mut String,
    /// The id being fetched, if a fetch is in flight.
    pub pending: Option<&'a str>,
    /// The ids fetched lately, newest first.
    pub recent: &'a [String],
}

/// Draws the field (or the spinner and Cancel while a fetch runs).
pub fn ui(ui: &mut egui::Ui, f: HubField<'_>) -> Vec<Intent> {
    let t = tr_controls();
    let mut out = Vec::new();
    if let Some(id) = f.pending {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(t.hub_fetching.replace("{id}", id));
            if ui.button(t.hub_cancel).clicked() {
                out.push(Intent::CancelHub);
            }
        });
        return out;
    }
    ui.horizontal(|ui| {
        let label = ui.label(t.hub_field);
        let r = ui
            .add(egui::TextEdit::singleline(f.input).hint_text(t.hub_hint).desired_width(150.0))
            .labelled_by(label.id)
            .on_hover_text(t.hub_tip);
        let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        let fetch = ui.button(t.hub_fetch).on_hover_text(t.hub_tip).clicked();
        if (fetch || enter) && !f.input.trim().is_empty() {
            out.push(Intent::FetchHub(f.input.trim().to_owned()));
        }
    });
    if let Some(newest) = f.recent.first() {
        egui::ComboBox::from_label(t.hub_recent)
            .selected_text(newest.as_str())
            .width(150.0)
            .show_ui(ui, |ui| {
                for id in f.recent {
                    if ui.selectable_label(false, id).clicked() {
                        f.input.clone_from(id);
                        out.push(Intent::FetchHub(id.clone()));
                    }
                }
            })
            .response
            .on_hover_text(t.hub_recent_tip);
    }
    out
}
