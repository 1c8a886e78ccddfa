//! Keyboard shortcuts: Ctrl+Z undo, Ctrl+Shift+Z / Ctrl+Y redo, Ctrl+= / Ctrl+− / Ctrl+0 zoom
//! (the app's one zoom, kept in the saved view: egui's own zoom keys are off), F11 full screen;
//! and the Help → Keyboard shortcuts window that lists them with the lesson keys
//! ([`super::learn::keys`]) and egui's quit key.

use crate::gui::intent::Intent;
use crate::gui::state::ZoomStep;
use crate::gui::strings::tr_controls;
use eframe::egui::{self, Key, KeyboardShortcut, Modifiers};

const REDO: KeyboardShortcut = KeyboardShortcut::new(Modifiers::COMMAND.plus(Modifiers::SHIFT), Key::Z);
const REDO_Y: KeyboardShortcut = KeyboardShortcut::new(Modifiers::COMMAND, Key::Y);
const UNDO: KeyboardShortcut = KeyboardShortcut::new(Modifiers::COMMAND, Key::Z);
/// Ctrl+= (what most keyboards give without Shift) and Ctrl++.
const ZOOM_IN: KeyboardShortcut = KeyboardShortcut::new(Modifiers::COMMAND, Key::Equals);
const ZOOM_IN_PLUS: KeyboardShortcut = KeyboardShortcut::new(Modifiers::COMMAND, Key::Plus);
const ZOOM_OUT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::COMMAND, Key::Minus);
const ZOOM_RESET: KeyboardShortcut = KeyboardShortcut::new(Modifiers::COMMAND, Key::Num0);
const FULLSCREEN: KeyboardShortcut = KeyboardShortcut::new(Modifiers::NONE, Key::F11);

/// Intents from the keyboard this frame.
pub fn read(ctx: &egui::Context) -> Vec<Intent> {
    ctx.input_mut(|i| {
        let mut out = Vec::new();
        // the more specific shortcut first: Ctrl+Shift+Z also matches Ctrl+Z
        if i.consume_shortcut(&REDO) || i.consume_shortcut(&REDO_Y) {
            out.push(Intent::Redo);
        } else if i.consume_shortcut(&UNDO) {
            out.push(Intent::Undo);
        }
        if i.consume_shortcut(&ZOOM_IN) || i.consume_shortcut(&ZOOM_IN_PLUS) {
            out.push(Intent::Zoom(ZoomStep::In));
        } else if i.consume_shortcut(&ZOOM_OUT) {
            out.push(Intent::Zoom(ZoomStep::Out));
        } else if i.consume_shortcut(&ZOOM_RESET) {
            out.push(Intent::Zoom(ZoomStep::Reset));
        }
        if i.consume_shortcut(&FULLSCREEN) {
            out.push(Intent::Fullscreen(!i.viewport().fullscreen.unwrap_or(false)));
        }
        out
    })
}

/// How a shortcut is written on this platform ("Ctrl+Z"; the Command key on a Mac).
pub fn key_text(ctx: &egui::Context, s: Shortcut) -> String {
    let sc = match s {
        Shortcut::ZoomIn => ZOOM_IN,
        Shortcut::ZoomOut => ZOOM_OUT,
        Shortcut::ZoomReset => ZOOM_RESET,
        Shortcut::Fullscreen => FULLSCREEN,
    };
    format(ctx, &sc)
}

/// A shortcut as the platform writes it, with the key's symbol ("Ctrl+=", not "Ctrl+Equals").
fn format(ctx: &egui::Context, s: &KeyboardShortcut) -> String {
    let k = s.logical_key;
    ctx.format_shortcut(s).replace(k.name(), k.symbol_or_name())
}

/// The shortcuts the View menu names beside its items.
#[derive(Clone, Copy, Debug)]
pub enum Shortcut {
    ZoomIn,
    ZoomOut,
    ZoomReset,
    Fullscreen,
}

/// Every key the window answers to, as (keys, what they do), in the order the window lists them:
/// what [`read`], the Learn view's keys and egui's quit shortcut bind.
pub fn bindings(ctx: &egui::Context) -> Vec<(String, &'static str)> {
    let t = tr_controls();
    let f = |s: &KeyboardShortcut| format(ctx, s);
    let mut rows = vec![
        (f(&UNDO), t.key_undo),
        (format!("{} / {}", f(&REDO), f(&REDO_Y)), t.key_redo),
        (format!("{} / {}", f(&ZOOM_IN), f(&ZOOM_IN_PLUS)), t.key_zoom_in),
        (f(&ZOOM_OUT), t.key_zoom_out),
        (f(&ZOOM_RESET), t.key_zoom_reset),
        (f(&FULLSCREEN), t.key_fullscreen),
        ("→ / PgDn".to_owned(), t.key_next),
        ("← / PgUp".to_owned(), t.key_back),
        ("Esc".to_owned(), t.key_leave),
    ];
    for q in ctx.options(|o| o.quit_shortcuts.clone()) {
        rows.push((f(&q), t.key_quit));
    }
    rows
}

/// The Help → Keyboard shortcuts window (while `open`); asks to close it when its × is clicked.
pub fn window(ctx: &egui::Context, open: bool) -> Vec<Intent> {
    if !open {
        return Vec::new();
    }
    let t = tr_controls();
    let mut still = true;
    egui::Window::new(t.shortcuts_title).open(&mut still).collapsible(false).resizable(false).show(
        ctx,
        |ui| {
            egui::Grid::new("shortcut-table").num_columns(2).striped(true).show(ui, |ui| {
                for (keys, what) in bindings(ctx) {
                    ui.label(egui::RichText::new(keys).monospace().strong());
                    ui.label(what);
                    ui.end_row();
                }
            });
            ui.add_space(4.0);
            ui.label(egui::RichText::new(t.keys_note).weak());
        },
    );
    if still { Vec::new() } else { vec![Intent::ShowShortcuts(false)] }
}
