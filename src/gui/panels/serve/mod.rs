//! The Serve mode's panels: a vLLM-style server's KV budget. The headline is here; the bar, the
//! "why" table, the concurrency curve, the options and the controls each have their file. None
//! computes memory: they read [`ServeComputed`](crate::gui::derived::ServeComputed).

pub mod bar;
pub mod controls;
pub mod curve;
pub mod options;
pub mod why;

use crate::gui::derived::ServeComputed;
use crate::gui::palette;
use crate::gui::strings::tr_serve;
use crate::units::digits;
use eframe::egui::{self, RichText};

/// The one-line answer: "<model> on 1×<GPU>: N tokens of KV cache · M concurrent 8,192-token
/// requests", or why the server does not start.
pub fn answer(c: &ServeComputed) -> (String, bool) {
    let t = tr_serve();
    let s = &c.serve;
    let lang = crate::gui::lang::current();
    let head = crate::text!(lang, "{} on {}×{}", "{}，{}×{}", s.model, s.gpus(), c.gpu.name);
    let text = if s.fits {
        let figures = format!(
            "{} {} · {:.1} {} {}{}",
            digits(s.kv_tokens),
            t.tokens_of_kv,
            s.max_concurrency,
            t.concurrent,
            digits(s.settings.max_model_len),
            t.token_requests
        );
        crate::gui::panels::kv(&head, figures)
    } else if s.kv_tokens > 0 {
        crate::gui::panels::kv(&head, format!("{} — {}", t.does_not_start, t.request_too_long))
    } else {
        crate::gui::panels::kv(&head, format!("{} — {}", t.does_not_start, t.nothing_left))
    };
    (text, s.fits)
}

/// Draws the headline.
pub fn headline(ui: &mut egui::Ui, c: &ServeComputed) {
    let t = tr_serve();
    let s = &c.serve;
    let (text, fits) = answer(c);
    ui.add(egui::Label::new(RichText::new(text).size(22.0).strong().color(palette::verdict(fits))).wrap());
    let mut second = Vec::new();
    if let (Some(n), Some(ctx)) = (s.concurrency_at_context, s.context) {
        second.push(format!("{n:.1} {} {}{}", t.concurrent, digits(ctx), t.token_requests));
    }
    second.push(crate::gui::panels::kv(t.longest_fits, digits(s.max_model_len_that_fits)));
    let at = crate::serve::profile::peak_at_in(&s.activation_peak_at, crate::gui::lang::current());
    second.push(crate::gui::panels::paren(
        &format!("{} {}", t.seg_profile, super::gib(s.bytes.activation_peak)),
        at,
    ));
    // each figure a phrase that moves to the next line whole
    ui.horizontal_wrapped(|ui| {
        for (i, part) in second.iter().enumerate() {
            if i > 0 {
                ui.label(RichText::new("·").size(15.0));
            }
            ui.add(egui::Label::new(RichText::new(part).size(15.0)).wrap_mode(egui::TextWrapMode::Extend));
        }
    });
    if super::presentation(ui.ctx()) {
        // on a projector the command is for the presenter, on hover
        super::hint(ui, &format!("{}\n{}", t.cli_hint, c.command()));
    } else {
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(t.cli_hint).weak().small());
            ui.add(egui::Label::new(RichText::new(c.command()).monospace().small()).wrap());
        });
    }
}
