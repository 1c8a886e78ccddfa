//! The answer first: "71.3 GiB of 80 GiB · fits, 8.7 GiB free · peak at the optimizer step".

use super::gib;
use crate::gui::derived::Computed;
use crate::gui::palette;
use crate::gui::state::Settings;
use crate::gui::strings::tr;
use eframe::egui::{self, RichText};

/// Draws the headline.
pub fn ui(ui: &mut egui::Ui, c: &Computed, settings: &Settings) {
    let t = tr();
    let e = &c.estimate;
    let cap = c.capacity();
    let fits = c.fits();
    let verdict = if fits {
        format!("{}, {} {}", t.fits, gib(cap.saturating_sub(e.total)), t.free)
    } else if e.total > cap {
        format!("{}, {} {}", t.does_not_fit, gib(e.total - cap), t.short)
    } else {
        format!("{}: {}", t.does_not_fit, t.no_free_block)
    };
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(format!("{} {} {}", gib(e.total), t.of, gib(cap))).size(26.0).strong());
        ui.label(RichText::new("·").size(26.0));
        ui.label(RichText::new(verdict).size(26.0).strong().color(palette::verdict(fits)));
        ui.label(RichText::new("·").size(26.0));
        ui.label(RichText::new(format!("{} {}", t.peak_at, e.peak.what)).size(18.0));
    });
    if let Some(kind) = crate::report::unvalidated_kind(&c.scenario) {
        ui.label(
            RichText::new(format!("{} ({kind})", t.unvalidated))
                .size(16.0)
                .strong()
                .color(palette::verdict(false)),
        )
        .on_hover_text(t.unvalidated_tip);
    }
    let mb = match c.max_batch {
        Some(b) => format!("{}: {b}", t.max_batch),
        None => t.max_batch_none.to_owned(),
    };
    ui.label(
        RichText::new(format!(
            "{mb}   ·   {}   ·   {}",
            t.model_on_gpu.replace("{model}", &settings.model_name()).replace(
                "{gpu}",
                &match c.scenario.parallel.world() {
                    // every GPU of the job (data × tensor × pipeline × context)
                    n if n > 1 => format!("{} × {n}", c.gpu.name),
                    _ => c.gpu.name.clone(),
                }
            ),
            t.gib_note
        ))
        .size(14.0),
    );
}
