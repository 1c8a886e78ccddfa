//! "Why this much?": each component with its formula and the numbers substituted.

use super::{exact, gib};
use crate::gui::derived::{Computed, MomentView};
use crate::gui::intent::Intent;
use crate::gui::palette;
use crate::gui::strings::tr;
use eframe::egui::{self, RichText};

/// Where the last frame's Why column rect is kept in the context's temporary data.
pub fn column_id() -> egui::Id {
    egui::Id::NULL.with("vramscope-why-column")
}

/// Draws the explanation table: of the peak, or of the timeline event `at`.
pub fn ui(
    ui: &mut egui::Ui,
    c: &Computed,
    at: Option<&MomentView>,
    focus: &[crate::explain::Component],
) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    ui.heading(t.why_title);
    let explanations = match at {
        Some(m) => {
            ui.horizontal_wrapped(|ui| {
                ui.label(
                    RichText::new(format!(
                        "{} #{}: {} ({})",
                        t.why_at,
                        m.index,
                        m.event.label_in(crate::gui::lang::current()),
                        gib(m.event.alive.total())
                    ))
                    .strong(),
                );
                if ui.button(t.why_back).clicked() {
                    out.push(Intent::SelectEvent(None));
                }
            });
            &m.explanations
        }
        None => {
            super::hint(ui, t.why_hint);
            &c.explanations
        }
    };
    egui::ScrollArea::vertical().id_salt("why").show(ui, |ui| {
        // one row a component: its colour, name and size on a line, the formula with the
        // numbers under it at the column's full width (it wraps by phrase, never a word a line)
        for (i, x) in explanations.iter().enumerate() {
            let focused = focus.contains(&x.component);
            let row = egui::Frame::NONE
                .fill(if i % 2 == 0 { ui.visuals().faint_bg_color } else { egui::Color32::TRANSPARENT })
                .stroke(if focused {
                    egui::Stroke::new(2.0, ui.visuals().strong_text_color())
                } else {
                    egui::Stroke::NONE
                })
                .inner_margin(egui::Margin::symmetric(4, 3))
                .show(ui, |ui| {
                    ui.set_width(ui.available_width());
                    ui.horizontal(|ui| {
                        let (rect, _) = ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
                        ui.painter().rect_filled(rect, 2.0, palette::color(x.component));
                        ui.label(RichText::new(super::breakdown::name(x.component)).strong());
                        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                            ui.label(RichText::new(gib(x.bytes)).strong());
                        });
                    });
                    egui::Frame::NONE.inner_margin(egui::Margin { left: 18, ..Default::default() }).show(
                        ui,
                        |ui| {
                            ui.add(egui::Label::new(x.substituted.as_str()).wrap());
                        },
                    );
                });
            if focused && focus.first() == Some(&x.component) {
                // the lesson's first segment in view, once a lesson (the room may scroll after)
                let id = egui::Id::NULL.with("why-lesson-scrolled");
                if ui.ctx().data(|d| d.get_temp::<Vec<crate::explain::Component>>(id)).as_deref()
                    != Some(focus)
                {
                    row.response.scroll_to_me(Some(egui::Align::TOP));
                    ui.ctx().data_mut(|d| d.insert_temp(id, focus.to_vec()));
                }
            }
            row.response.on_hover_text(format!("{}\n{} {}", x.formula, exact(x.bytes), t.at_the_peak));
        }
        if c.estimate.activations > 0 && !c.block_ops.is_empty() {
            ui.add_space(6.0);
            egui::CollapsingHeader::new(RichText::new(t.ops_title).strong()).id_salt("why-ops").show(
                ui,
                |ui| {
                    ui.label(RichText::new(t.ops_hint).weak());
                    for b in &c.block_ops {
                        ui.label(RichText::new(kind_label(b.layers, b.flags)).strong());
                        for op in b.ops.iter().filter(|o| o.kept_bytes > 0) {
                            ui.label(format!("  · {:<28} {}", op.op, gib(op.kept_bytes)))
                                .on_hover_text(exact(op.kept_bytes));
                        }
                    }
                },
            );
        }
        facts(ui, c.model_facts());
        if c.estimate.activations > 0 {
            ui.add_space(6.0);
            ui.label(RichText::new(t.activations_detail).strong());
            for (cat, bytes) in c.estimate.activation_breakdown.nonzero() {
                ui.label(format!("  · {:<24} {}", cat.label_in(crate::gui::lang::current()), gib(bytes)))
                    .on_hover_text(format!(
                        "{}\n{}",
                        crate::explain::category_help_in(cat, crate::gui::lang::current()),
                        exact(bytes)
                    ));
            }
        }
    });
    out
}

/// Where each fact about a loaded model came from, folded: the file's keys, the class defaults
/// transformers fills in, vramscope's own defaults, the safetensors header.
fn facts(ui: &mut egui::Ui, facts: &[crate::model::header_check::Fact]) {
    if facts.is_empty() {
        return;
    }
    let t = tr();
    ui.add_space(6.0);
    let r = egui::CollapsingHeader::new(RichText::new(t.facts_title).strong()).id_salt("why-facts").show(
        ui,
        |ui| {
            ui.label(RichText::new(t.facts_hint).weak());
            // one line a fact, wrapped at the column's width: what it is (with its value), then
            // where it came from, dimmed
            for f in facts {
                let what = match &f.value {
                    Some(v) => format!("{} = {v}", f.fact),
                    None => f.fact.clone(),
                };
                ui.horizontal_wrapped(|ui| {
                    ui.label(what);
                    ui.label(RichText::new(format!("· {}", source_label(&f.from))).weak());
                });
            }
        },
    );
    if r.header_response.clicked() {
        // opened at the column's foot: bring the list into view
        r.header_response.scroll_to_me(Some(egui::Align::TOP));
    }
}

/// A fact's source in the interface's language (the keys and file names as they are).
fn source_label(from: &str) -> String {
    use crate::model::header_check::{FROM_FAMILY, FROM_HEADER};
    let t = tr();
    match from {
        FROM_HEADER => t.facts_header.into(),
        FROM_FAMILY => t.facts_family.into(),
        "class default" => t.facts_class_default.into(),
        f if f.starts_with("vramscope default") => t.facts_vramscope_default.into(),
        f => f.into(),
    }
}

/// "32 layers", "24 layers · sliding window", …
fn kind_label(layers: u64, flags: u8) -> String {
    use crate::model::layer;
    let t = tr();
    let mut s = format!("{layers} {}", t.ops_layers);
    for (bit, name) in [
        (layer::SLIDING, t.ops_sliding),
        (layer::DENSE, t.ops_dense),
        (layer::NO_ROPE, t.ops_no_rope),
        (layer::CONV, t.ops_conv),
        (layer::SSM, t.ops_ssm),
        (layer::MAMBA, t.ops_mamba),
        (layer::NO_MLP, t.ops_no_mlp),
        (layer::NO_MIXER, t.ops_no_mixer),
    ] {
        if flags & bit != 0 {
            s += " · ";
            s += name;
        }
    }
    s
}
