//! Files dropped on the window load as the model (a `.pickle` memory snapshot opens over the
//! timeline).

use crate::gui::intent::Intent;
use eframe::egui;

/// One `LoadPath` per dropped file.
pub fn read(ctx: &egui::Context) -> Vec<Intent> {
    ctx.input(|i| {
        i.raw.dropped_files.iter().map(|f| Intent::LoadPath(f.path().display().to_string())).collect()
    })
}
