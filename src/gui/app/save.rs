//! The save prompt's side of the app: every export (File → Export's formats, the window and
//! chart PNGs, the slide, Serve's answer) opens the prompt with its default file name in the
//! current folder, and the path typed there is where it is written. No file dialog is involved.

use super::{StatusKind, VramApp};
use crate::gui::panels::save::slug;
use crate::gui::strings::tr;
use std::path::PathBuf;

/// What the save prompt is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaveWhat {
    /// A core export format (File → Export → report, settings, scenario…).
    Format(crate::export::Format),
    /// Serve mode's answer, options and roadmap (text or JSON).
    Serve {
        /// JSON rather than text.
        json: bool,
    },
    /// A PNG of the window, or of the breakdown chart alone.
    Png {
        /// The chart alone.
        chart_only: bool,
    },
    /// The slide (PNG).
    Slide,
}

/// An open save prompt: what it saves and the path field's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavePrompt {
    /// What Save writes.
    pub what: SaveWhat,
    /// The path field.
    pub path: String,
}

impl SaveWhat {
    /// The menu label of the export (the prompt's title).
    pub fn label(self) -> &'static str {
        let t = tr();
        match self {
            Self::Format(f) => crate::gui::strings::export_label(f),
            Self::Serve { json: false } => crate::gui::strings::tr_serve().export_text,
            Self::Serve { json: true } => crate::gui::strings::tr_serve().export_json,
            Self::Png { chart_only: false } => t.menu_export_window_png,
            Self::Png { chart_only: true } => t.menu_export_chart_png,
            Self::Slide => t.menu_export_slide,
        }
    }
}

impl VramApp {
    /// The file name an export is offered under: the slide names the model and the card
    /// ("vramscope-llama-3.1-8b-h100-80gb.png").
    pub fn default_file_name(&self, what: SaveWhat) -> String {
        match what {
            SaveWhat::Format(f) => format!("vramscope-{}.{}", f.name(), f.extension()),
            SaveWhat::Serve { json } => format!("vramscope-serve.{}", if json { "json" } else { "txt" }),
            SaveWhat::Png { chart_only: false } => "vramscope.png".into(),
            SaveWhat::Png { chart_only: true } => "vramscope-chart.png".into(),
            SaveWhat::Slide => {
                let s = &self.state.settings;
                format!("vramscope-{}-{}.png", slug(&s.model_name()), slug(&s.gpu_id))
            }
        }
    }

    /// Opens the save prompt for `what`, its path the default file name in the current folder.
    pub(super) fn ask_save(&mut self, what: SaveWhat) {
        let name = self.default_file_name(what);
        let path = std::env::current_dir().map_or_else(|_| PathBuf::from(&name), |d| d.join(&name));
        self.save_prompt = Some(SavePrompt { what, path: path.display().to_string() });
    }

    /// Writes the export the prompt is for to `path` and closes the prompt.
    pub(super) fn save_to(&mut self, ctx: &eframe::egui::Context, path: &str) {
        let Some(prompt) = self.save_prompt.take() else { return };
        let path = PathBuf::from(path);
        match prompt.what {
            SaveWhat::Format(f) => self.export(f, path),
            SaveWhat::Serve { json } => self.export_serve(json, path),
            SaveWhat::Png { chart_only } => self.export_png(ctx, chart_only, path),
            SaveWhat::Slide => self.export_slide(ctx, path),
        }
    }

    /// Closes the save prompt; the status says nothing was written.
    pub(super) fn cancel_save(&mut self) {
        if self.save_prompt.take().is_some() {
            self.set_status(StatusKind::Info, tr().export_cancelled);
        }
    }
}
