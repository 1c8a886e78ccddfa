//! The answer first: "71.3 GiB of 80 GiB · fits, 8.7 GiB free · peak at the optimizer step".
//! Each phrase is one label that moves to the next line whole (never a word per line); the
//! presentation layout puts the scenario's one-line caption above it.

use super::gib;
use crate::estimate::{Checkpointing, Mode};
use crate::gui::derived::Computed;
use crate::gui::lang;
use crate::gui::palette;
use crate::gui::state::Settings;
use crate::gui::strings::tr;
use eframe::egui::{self, RichText};

/// A phrase that never wraps inside itself.
fn phrase(ui: &mut egui::Ui, text: RichText) -> egui::Response {
    ui.add(egui::Label::new(text).wrap_mode(egui::TextWrapMode::Extend))
}

/// "Largest micro-batch that fits: N", saying so when the current batch fits above it (a smaller
/// one runs out of blocks in the allocator replay: fragmentation near the card).
pub fn max_batch_text(c: &Computed) -> String {
    let t = tr();
    match c.max_batch {
        Some(b) if c.fits() && c.scenario.batch > b => super::kv(
            t.max_batch,
            format!("{b} {}", t.max_batch_above_tpl.replace("{next}", &(b + 1).to_string())),
        ),
        Some(b) => super::kv(t.max_batch, b),
        None => t.max_batch_none.to_owned(),
    }
}

/// "longest sequence that fits at micro-batch B: N" (the model's context length at most).
pub fn max_seq_text(c: &Computed) -> String {
    let t = tr();
    if c.scenario.image_size().is_some() {
        // a vision model's sequence knob is its image side
        return match c.max_seq {
            Some(n) => t
                .max_image_tpl
                .replace("{b}", &c.scenario.batch.to_string())
                .replace("{n}", &crate::units::digits(n)),
            None => t.max_image_none.to_owned(),
        };
    }
    if let Some(v) = c.scenario.vlm_images() {
        // a vision-language model's sequence knob is its text, beside the images
        return match c.max_seq {
            Some(n) => t
                .max_text_tpl
                .replace("{images}", &crate::units::digits(v.tokens()))
                .replace("{b}", &c.scenario.batch.to_string())
                .replace("{n}", &crate::units::digits(n)),
            None => t.max_text_none.to_owned(),
        };
    }
    match c.max_seq {
        Some(n) => t
            .max_seq_tpl
            .replace("{b}", &c.scenario.batch.to_string())
            .replace("{n}", &crate::units::digits(n)),
        None => t.max_seq_none.to_owned(),
    }
}

/// "does it fit" in words: "fits, 2.9 GiB free", "does NOT fit, 4.1 GiB short".
pub fn verdict(c: &Computed) -> String {
    let t = tr();
    let (e, cap) = (&c.estimate, c.capacity());
    if c.fits() {
        t.fits_free.replace("{gib}", &super::gap(cap, e.total))
    } else if e.total > cap {
        t.short_by.replace("{gib}", &super::gap(e.total, cap))
    } else {
        super::kv(t.does_not_fit, t.no_free_block)
    }
}

/// The scenario on one line, for a projector and a slide: "Llama-3.1-8B · full fine-tune,
/// bf16 · b1 × 2048 · every block checkpointed · 1 × NVIDIA H100 80 GB".
pub fn caption(c: &Computed, settings: &Settings) -> String {
    let l = lang::current();
    let sc = &c.scenario;
    let mut parts = vec![settings.model_name()];
    // the method from the core's one phrase for it (QLoRA named by its base, not the recipe)
    parts.push(sc.method_in(l));
    parts.push(match sc.image_size() {
        Some(i) => format!("b{} × {i} px", sc.batch),
        None => format!("b{} × {}", sc.batch, sc.seq),
    });
    if sc.mode == Mode::Train {
        parts.push(match sc.checkpointing {
            Checkpointing::None => l.pick("no checkpointing", "不做梯度检查点").to_owned(),
            Checkpointing::Full => l.pick("every block checkpointed", "每个块做梯度检查点").to_owned(),
            other => other.phrase_in(l),
        });
    }
    let q = &sc.parallel;
    let mut layout = Vec::new();
    if q.dp > 1 {
        layout.push(if q.effective_zero() > 0 {
            format!("DP {} ZeRO-{}", q.dp, q.zero)
        } else {
            format!("DP {}", q.dp)
        });
    }
    if q.tp > 1 {
        layout.push(format!("TP {}", q.tp));
    }
    if q.pp > 1 {
        layout.push(format!("PP {}", q.pp));
    }
    if !layout.is_empty() {
        parts.push(layout.join(" "));
    }
    parts.push(format!("{} × {}", q.world().max(1), c.gpu.name));
    parts.join(" · ")
}

/// Draws the headline (with the scenario's caption above it in the presentation layout).
pub fn ui(ui: &mut egui::Ui, c: &Computed, settings: &Settings, presentation: bool) {
    let t = tr();
    let e = &c.estimate;
    let cap = c.capacity();
    let fits = c.fits();
    if presentation {
        ui.horizontal_wrapped(|ui| {
            phrase(ui, RichText::new(caption(c, settings)).size(15.0).weak());
        });
    }
    ui.horizontal_wrapped(|ui| {
        let smi = gib(c.gpu.memory_bytes());
        phrase(ui, RichText::new(format!("{} {} {}", gib(e.total), t.of, gib(cap))).size(26.0).strong())
            .on_hover_text(t.capacity_tip.replace("{gib}", &gib(cap)).replace("{smi}", &smi));
        phrase(ui, RichText::new("·").size(26.0));
        phrase(ui, RichText::new(verdict(c)).size(26.0).strong().color(palette::verdict(fits)));
        phrase(ui, RichText::new("·").size(26.0));
        phrase(ui, RichText::new(t.peak_at_tpl.replace("{what}", &peak_moment(c))).size(18.0));
    });
    if let Some(kind) = crate::report::unvalidated_kind(&c.scenario, crate::gui::lang::current()) {
        ui.label(
            RichText::new(format!("{} ({kind})", t.unvalidated))
                .size(16.0)
                .strong()
                .color(palette::verdict(false)),
        )
        .on_hover_text(t.unvalidated_tip);
    }
    let mb = max_batch_text(c);
    let on = t.model_on_gpu.replace("{model}", &settings.model_name()).replace(
        "{gpu}",
        &match c.scenario.parallel.world() {
            // every GPU of the job (data × tensor × pipeline × context)
            n if n > 1 => format!("{} × {n}", c.gpu.name),
            _ => c.gpu.name.clone(),
        },
    );
    ui.horizontal_wrapped(|ui| {
        phrase(ui, RichText::new(mb).size(14.0));
        // a traced model has no sequence: its dims have their own sliders
        if c.scenario.model.traced().is_none() {
            phrase(ui, RichText::new("·").size(14.0));
            phrase(ui, RichText::new(max_seq_text(c)).size(14.0));
        }
        if !presentation {
            // the caption above says which model and GPU in the presentation layout, and the
            // room needs no note on units
            phrase(ui, RichText::new("·").size(14.0));
            phrase(ui, RichText::new(on).size(14.0));
            phrase(ui, RichText::new("·").size(14.0));
            phrase(ui, RichText::new(t.gib_note).size(14.0));
        }
    });
}

/// Where the peak is, in the interface's language.
pub fn peak_moment(c: &Computed) -> String {
    crate::estimate::moment_in(c.estimate.peak.what, lang::current()).into_owned()
}
