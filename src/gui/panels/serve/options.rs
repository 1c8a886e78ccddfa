//! The serving options (each change alone) and the roadmap (each step on top of the ones before),
//! as tables; every row names the `vramscope serve` command that gives its figures, and "apply"
//! sets its settings in the controls.

use crate::gui::derived::ServeComputed;
use crate::gui::intent::Intent;
use crate::gui::palette;
use crate::gui::state::{ServeWeights, Settings};
use crate::gui::strings::tr_serve;
use crate::serve::advice::ServeStep;
use crate::units::digits;
use eframe::egui::{self, RichText};

/// The controls' settings that give `st`'s server (the model stays).
pub fn settings_of(st: &ServeStep, current: &Settings) -> Settings {
    let mut n = current.clone();
    let v = &st.serve.settings;
    n.gpu_id = st.serve.gpu.clone();
    n.tp = v.tp;
    n.pp = v.pp;
    n.serve.utilisation = v.gpu_memory_utilization;
    n.serve.max_model_len = v.max_model_len;
    n.serve.max_num_batched_tokens = v.max_num_batched_tokens;
    n.serve.max_num_seqs = v.max_num_seqs;
    n.serve.kv_fp8 = v.kv_cache_dtype.starts_with("fp8");
    n.serve.enforce_eager = v.enforce_eager;
    n.serve.weights = match (v.quantization, v.checkpoint_format) {
        (crate::serve::Quantization::Fp8, _) => ServeWeights::Fp8,
        (_, Some(_)) => ServeWeights::Awq4,
        _ => ServeWeights::Checkpoint,
    };
    n
}

fn table(
    ui: &mut egui::Ui,
    id: &str,
    steps: &[ServeStep],
    c: &ServeComputed,
    settings: &Settings,
    out: &mut Vec<Intent>,
) {
    let t = tr_serve();
    egui::Grid::new(id).striped(true).spacing([10.0, 4.0]).show(ui, |ui| {
        for h in [
            t.col_when,
            t.col_change,
            t.col_effort,
            t.col_gpus,
            t.col_tokens,
            t.col_concurrency,
            t.col_starts,
            t.col_price,
            "",
        ] {
            ui.label(RichText::new(h).strong());
        }
        ui.end_row();
        for st in steps {
            ui.label(st.horizon.label_in(crate::gui::lang::current()));
            let cmd = format!("vramscope serve --model {} {}", c.model_arg, st.serve_args.join(" "));
            ui.add(egui::Label::new(st.title.as_str()).extend()).on_hover_text(format!(
                "{}\n{}\n{cmd}",
                st.trade_off,
                st.changes.join(" ")
            ));
            ui.label(st.effort);
            ui.label(st.gpus.to_string());
            ui.label(digits(st.kv_tokens));
            let conc = match st.concurrency_at_context {
                Some(x) => format!("{:.1} ({x:.1})", st.max_concurrency),
                None => format!("{:.1}", st.max_concurrency),
            };
            ui.label(conc);
            let over = crate::serve::advice::margin(&st.serve);
            let shown = if st.starts || over > 0 {
                (if st.starts { t.yes } else { t.no }).to_owned()
            } else {
                format!("{} (−{})", t.no, crate::gui::panels::gib(u64::try_from(-over).unwrap_or(u64::MAX)))
            };
            ui.label(RichText::new(shown).color(palette::verdict(st.starts)));
            ui.label(st.cost_change.map_or_else(|| "–".into(), |x| format!("{:+.0} %", x * 100.0)));
            if ui.small_button(t.apply).on_hover_text(t.apply_tip).clicked() {
                out.push(Intent::Edit { settings: Box::new(settings_of(st, settings)), knob: "serve_apply" });
            }
            ui.end_row();
        }
    });
}

/// Draws the tables.
pub fn ui(ui: &mut egui::Ui, c: &ServeComputed, settings: &Settings) -> Vec<Intent> {
    let t = tr_serve();
    let mut out = Vec::new();
    let a = match &c.advice {
        Ok(a) => a,
        Err(e) => {
            ui.label(RichText::new(e.as_str()).color(palette::verdict(false)));
            return out;
        }
    };
    egui::ScrollArea::vertical().id_salt("serve-options").show(ui, |ui| {
        ui.label(
            RichText::new(a.headline.as_str())
                .strong()
                .size(16.0)
                .color(palette::verdict(a.meets_target_after)),
        );
        ui.add_space(4.0);
        if !a.roadmap.is_empty() {
            ui.label(RichText::new(t.roadmap_title).strong());
            table(ui, "serve-roadmap", &a.roadmap, c, settings, &mut out);
        }
        if !a.beside.is_empty() {
            ui.add_space(6.0);
            ui.label(RichText::new(t.beside_title).strong());
            table(ui, "serve-beside", &a.beside, c, settings, &mut out);
        }
        ui.add_space(6.0);
        ui.label(RichText::new(t.options_title).strong());
        table(ui, "serve-options-grid", &a.options, c, settings, &mut out);
    });
    out
}
