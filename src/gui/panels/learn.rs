//! The Learn view's bar: "‹ Back · Lesson 5 of 8: gradient checkpointing · the lesson's text with
//! this scenario's numbers · Next › · Leave". Arrow keys step, Escape leaves.

use crate::gui::derived::Computed;
use crate::gui::intent::Intent;
use crate::gui::learn::{LearnState, LearnStep, Lesson};
use crate::gui::strings::tr;
use eframe::egui::{self, RichText};

/// The lesson's text, kept while the lesson, the scenario and the language stay the same.
#[derive(Default)]
pub struct BodyCache {
    key: Option<(usize, u64, crate::i18n::Lang, bool)>,
    text: String,
}

impl BodyCache {
    /// The text of the lesson `st` shows for `c` (recomputation `rev`).
    pub fn get(
        &mut self,
        st: &LearnState,
        rev: u64,
        c: &Computed,
        roadmap: Option<&crate::roadmap::Roadmap>,
    ) -> &str {
        let lang = crate::gui::lang::current();
        let key = (st.index, rev, lang, roadmap.is_some());
        if self.key != Some(key) {
            self.text = st.lesson().body(c, roadmap, lang);
            self.key = Some(key);
        }
        &self.text
    }
}

/// The keys of the Learn view: → / PageDown next, ← / PageUp back, Escape leaves (not while a
/// text field or slider has the keyboard).
pub fn keys(ctx: &egui::Context) -> Vec<Intent> {
    if ctx.memory(|m| m.focused().is_some()) {
        return Vec::new();
    }
    ctx.input(|i| {
        let mut out = Vec::new();
        if i.key_pressed(egui::Key::ArrowRight) || i.key_pressed(egui::Key::PageDown) {
            out.push(Intent::Learn(LearnStep::Next));
        }
        if i.key_pressed(egui::Key::ArrowLeft) || i.key_pressed(egui::Key::PageUp) {
            out.push(Intent::Learn(LearnStep::Back));
        }
        if i.key_pressed(egui::Key::Escape) {
            out.push(Intent::Learn(LearnStep::Leave));
        }
        out
    })
}

/// Draws the bar of the lesson `st` with its `body`.
pub fn ui(ui: &mut egui::Ui, st: &LearnState, body: &str) -> Vec<Intent> {
    let t = tr();
    let lang = crate::gui::lang::current();
    let mut out = Vec::new();
    let lesson = st.lesson();
    let i = Lesson::ALL.iter().position(|l| *l == lesson).unwrap_or(0);
    ui.add_space(4.0);
    ui.horizontal(|ui| {
        let back =
            ui.add_enabled(i > 0, egui::Button::new(RichText::new(format!("‹ {}", t.learn_back)).size(15.0)));
        if back.clicked() {
            out.push(Intent::Learn(LearnStep::Back));
        }
        let title =
            t.learn_of.replace("{i}", &(i + 1).to_string()).replace("{n}", &Lesson::ALL.len().to_string());
        ui.add(
            egui::Label::new(RichText::new(super::kv(&title, lesson.title(lang))).size(17.0).strong())
                .wrap_mode(egui::TextWrapMode::Truncate),
        );
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if ui.button(RichText::new(t.learn_leave).size(15.0)).on_hover_text(t.learn_leave_tip).clicked() {
                out.push(Intent::Learn(LearnStep::Leave));
            }
            let last = i + 1 == Lesson::ALL.len();
            let next = ui.add_enabled(
                !last,
                egui::Button::new(RichText::new(format!("{} ›", t.learn_next)).size(15.0)),
            );
            if next.clicked() {
                out.push(Intent::Learn(LearnStep::Next));
            }
        });
    });
    ui.add(egui::Label::new(RichText::new(body).size(15.0)).wrap());
    ui.add_space(4.0);
    out
}
