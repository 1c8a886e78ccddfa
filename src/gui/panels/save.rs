//! The save prompt every export opens (File → Export, and Serve's exports): a path field
//! prefilled with the export's default file name in the current folder, Save and Cancel; Enter
//! saves, Escape cancels. It needs no file dialog (there is none without an xdg portal or
//! zenity), as the Open field under the model picker needs none.

use crate::gui::intent::Intent;
use crate::gui::strings::tr_export;
use eframe::egui;
use std::path::Path;

/// The id of the prompt's path field (focused when the prompt opens).
pub fn field_id() -> egui::Id {
    egui::Id::unique("save-prompt-path")
}

/// Draws the prompt for saving `what` (the export's menu label) over the window; `path` is the
/// field's text. Returns [`Intent::SaveAs`] with the path, or [`Intent::CancelSave`].
pub fn ui(ctx: &egui::Context, what: &str, path: &mut String) -> Vec<Intent> {
    let t = tr_export();
    let mut out = Vec::new();
    egui::Window::new(format!("{} · {}", t.save_as, what.trim_end_matches('…')))
        .id(egui::Id::unique("save-prompt"))
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .show(ctx, |ui| {
            let field = ui.add(
                egui::TextEdit::singleline(path).id(field_id()).desired_width(560.0).hint_text(t.empty_path),
            );
            let field = field.on_hover_text(t.path_tip);
            // the field takes the keys from the moment the prompt opens
            if !field.has_focus() && !field.lost_focus() && ctx.memory(|m| m.focused().is_none()) {
                field.request_focus();
            }
            let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            let trimmed = path.trim();
            let problem = problem(trimmed);
            match &problem {
                Some(p) => {
                    ui.colored_label(ui.visuals().error_fg_color, p);
                }
                None if Path::new(trimmed).exists() => {
                    ui.colored_label(ui.visuals().warn_fg_color, t.will_replace.replace("{path}", trimmed));
                }
                None => {}
            }
            ui.horizontal(|ui| {
                let save = ui.add_enabled(problem.is_none(), egui::Button::new(t.save));
                if (save.clicked() || enter) && problem.is_none() {
                    out.push(Intent::SaveAs(trimmed.to_owned()));
                }
                if ui.button(t.cancel).clicked() || ui.input(|i| i.key_pressed(egui::Key::Escape)) {
                    out.push(Intent::CancelSave);
                }
            });
        });
    out
}

/// Why `path` cannot be saved to, if it cannot: empty, or in a folder that does not exist.
fn problem(path: &str) -> Option<String> {
    let t = tr_export();
    if path.is_empty() || path.ends_with(std::path::MAIN_SEPARATOR) {
        return Some(t.empty_path.to_owned());
    }
    match Path::new(path).parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            Some(t.no_folder.replace("{dir}", &dir.display().to_string()))
        }
        _ => None,
    }
}

/// A file name's slug: lower case, every run of characters but letters, digits and dots one "-"
/// ("Llama-3.1-8B" → "llama-3.1-8b", "NVIDIA A100 80GB" → "nvidia-a100-80gb").
pub fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars().flat_map(char::to_lowercase) {
        if ch.is_alphanumeric() || ch == '.' {
            out.push(ch);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches(['-', '.']).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_keep_letters_digits_and_dots() {
        assert_eq!(slug("Llama-3.1-8B"), "llama-3.1-8b");
        assert_eq!(slug("  Qwen/Qwen3 8B (custom) "), "qwen-qwen3-8b-custom");
        assert_eq!(slug("a100-80gb"), "a100-80gb");
    }

    #[test]
    fn a_path_in_a_missing_folder_or_none_is_refused() {
        assert!(problem("").is_some());
        assert!(problem("/no/such/folder/x.png").is_some());
        assert!(problem("plan.md").is_none());
        assert!(problem(&std::env::temp_dir().join("x.png").display().to_string()).is_none());
    }
}
