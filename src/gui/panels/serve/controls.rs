//! The Serve mode's controls: vLLM's flags, each with a tooltip saying what it changes in the KV
//! budget. Edits `s` in place and names the knob that changed.

use crate::gui::state::{ServeWeights, Settings};
use crate::gui::strings::tr_serve;
use eframe::egui::{self, RichText};

/// Draws the server's section.
pub fn ui(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr_serve();
    let mut mark = |changed: bool, name: &'static str| {
        if changed {
            *knob = name;
        }
    };
    ui.add_space(8.0);
    ui.label(RichText::new(t.section).strong().small());
    let max_pos = s
        .model_spec()
        .ok()
        .and_then(|m| m.transformer().map(crate::model::TransformerSpec::max_context))
        .filter(|&m| m > 0)
        .unwrap_or(131_072);
    let v = &mut s.serve;
    let r = ui
        .add(
            egui::Slider::new(&mut v.utilisation, 0.5..=1.0)
                .step_by(0.01)
                .fixed_decimals(2)
                .text(t.utilisation),
        )
        .on_hover_text(t.utilisation_tip);
    mark(r.changed(), "serve_util");
    if v.max_model_len == 0 {
        v.max_model_len = max_pos;
    }
    v.max_model_len = v.max_model_len.clamp(16, max_pos);
    let r = ui
        .add(
            egui::Slider::new(&mut v.max_model_len, 16.min(max_pos)..=max_pos)
                .logarithmic(true)
                .text(t.max_model_len),
        )
        .on_hover_text(t.max_model_len_tip);
    mark(r.changed(), "serve_len");
    let r = ui
        .add(egui::Slider::new(&mut v.context, 0..=max_pos).logarithmic(true).text(t.context))
        .on_hover_text(t.context_tip);
    mark(r.changed(), "serve_context");
    let r = ui
        .add(
            egui::Slider::new(&mut v.max_num_batched_tokens, 0..=65_536)
                .logarithmic(true)
                .text(t.batched_tokens),
        )
        .on_hover_text(t.batched_tokens_tip);
    mark(r.changed(), "serve_mnbt");
    let r = ui
        .add(egui::Slider::new(&mut v.max_num_seqs, 0..=2048).logarithmic(true).text(t.num_seqs))
        .on_hover_text(t.num_seqs_tip);
    mark(r.changed(), "serve_seqs");
    ui.label(RichText::new(t.card_default).weak().small());
    let before = v.weights;
    egui::ComboBox::from_label(t.weights)
        .selected_text(match v.weights {
            ServeWeights::Checkpoint => t.weights_checkpoint,
            ServeWeights::Fp8 => t.weights_fp8,
            ServeWeights::Awq4 => t.weights_awq,
        })
        .show_ui(ui, |ui| {
            ui.selectable_value(&mut v.weights, ServeWeights::Checkpoint, t.weights_checkpoint);
            ui.selectable_value(&mut v.weights, ServeWeights::Fp8, t.weights_fp8);
            ui.selectable_value(&mut v.weights, ServeWeights::Awq4, t.weights_awq);
        })
        .response
        .on_hover_text(t.weights_tip);
    mark(v.weights != before, "serve_weights");
    let r = ui.checkbox(&mut v.kv_fp8, t.kv_fp8).on_hover_text(t.kv_fp8_tip);
    mark(r.changed(), "serve_kv");
    let r = ui.checkbox(&mut v.fp16, t.fp16).on_hover_text(t.fp16_tip);
    mark(r.changed(), "serve_fp16");
    let r = ui.checkbox(&mut v.enforce_eager, t.eager).on_hover_text(t.eager_tip);
    mark(r.changed(), "serve_eager");
    let r = ui
        .add(
            egui::Slider::new(&mut v.target_concurrency, 0.0..=1024.0)
                .logarithmic(true)
                .fixed_decimals(0)
                .text(t.target),
        )
        .on_hover_text(t.target_tip);
    mark(r.changed(), "serve_target");
    if let Some(heads) =
        s.model_spec().ok().and_then(|m| m.transformer().map(|t| (t.num_heads, t.num_layers)))
    {
        let r = ui
            .add(egui::Slider::new(&mut s.tp, 1..=heads.0.clamp(1, 64)).logarithmic(true).text(t.tp))
            .on_hover_text(t.parallel_tip);
        mark(r.changed(), "tp");
        let r = ui
            .add(egui::Slider::new(&mut s.pp, 1..=heads.1.clamp(1, 64)).logarithmic(true).text(t.pp))
            .on_hover_text(t.parallel_tip);
        mark(r.changed(), "pp");
    }
}
