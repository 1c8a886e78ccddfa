//! Keyboard shortcuts: Ctrl+Z undo, Ctrl+Shift+Z / Ctrl+Y redo.

use crate::gui::intent::Intent;
use eframe::egui::{self, Key, KeyboardShortcut, Modifiers};

/// Intents from the keyboard this frame.
pub fn read(ctx: &egui::Context) -> Vec<Intent> {
    let redo = KeyboardShortcut::new(Modifiers::COMMAND | Modifiers::SHIFT, Key::Z);
    let redo_y = KeyboardShortcut::new(Modifiers::COMMAND, Key::Y);
    let undo = KeyboardShortcut::new(Modifiers::COMMAND, Key::Z);
    ctx.input_mut(|i| {
        // the more specific shortcut first: Ctrl+Shift+Z also matches Ctrl+Z
        if i.consume_shortcut(&redo) || i.consume_shortcut(&redo_y) {
            vec![Intent::Redo]
        } else if i.consume_shortcut(&undo) {
            vec![Intent::Undo]
        } else {
            Vec::new()
        }
    })
}
