//! Concurrent requests against their context length (log-log: the pool holds a fixed number of
//! tokens, so the curve is nearly a straight line), with the scheduler's `--max-num-seqs` cap,
//! the target, the mean context and max_model_len marked. Clicking the curve sets the mean context.

use crate::gui::derived::ServeComputed;
use crate::gui::intent::Intent;
use crate::gui::state::Settings;
use crate::gui::strings::tr_serve;
use eframe::egui;
use egui_plot::{HLine, Legend, Line, LineStyle, Plot, PlotPoints, Points, VLine};

/// Draws the curve.
pub fn ui(ui: &mut egui::Ui, c: &ServeComputed, settings: &Settings) -> Vec<Intent> {
    let t = tr_serve();
    let s = &c.serve;
    ui.label(egui::RichText::new(t.curve_hint).weak());
    let lx = |v: f64| v.max(1.0).log2();
    let ly = |v: f64| v.max(1e-3).log10();
    let pts: Vec<[f64; 2]> = c.curve.iter().map(|&(x, y)| [lx(x as f64), ly(y)]).collect();
    let seqs = s.settings.max_num_seqs as f64;
    let target = settings.serve.target_concurrency;
    let mut clicked = None;
    let height = crate::gui::panels::plot_height(ui);
    Plot::new("serve-concurrency")
        .height(height)
        .legend(Legend::default())
        .x_axis_label(t.curve_x)
        .y_axis_label(t.curve_y)
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .x_axis_formatter(|m, _| {
            let v = m.value.exp2();
            if v >= 1024.0 { format!("{:.0}k", v / 1024.0) } else { format!("{v:.0}") }
        })
        .y_axis_formatter(|m, _| {
            let v = 10f64.powf(m.value);
            if v >= 10.0 { format!("{v:.0}") } else { format!("{v:.1}") }
        })
        .label_formatter(|h| {
            let p = match h {
                egui_plot::HoverPosition::NearDataPoint { position, .. }
                | egui_plot::HoverPosition::Elsewhere { position } => position,
            };
            Some(format!("{:.0} tokens: {:.1}", p.x.exp2(), 10f64.powf(p.y)))
        })
        .show(ui, |p| {
            p.line(Line::new(t.curve_line, PlotPoints::from(pts.clone())).width(2.5));
            p.hline(
                HLine::new(format!("{} ({})", t.num_seqs, s.settings.max_num_seqs), ly(seqs))
                    .style(LineStyle::dotted_dense())
                    .width(1.5),
            );
            if target > 0.0 {
                p.hline(
                    HLine::new(format!("{} {target}", t.curve_target), ly(target))
                        .style(LineStyle::dashed_loose())
                        .width(2.0),
                );
            }
            if let (Some(ctx), Some(n)) = (s.context, s.concurrency_at_context) {
                p.vline(VLine::new("", lx(ctx as f64)).width(1.0));
                p.points(
                    Points::new(
                        crate::gui::panels::kv(t.curve_context, format!("{n:.1}")),
                        vec![[lx(ctx as f64), ly(n)]],
                    )
                    .radius(6.0)
                    .shape(egui_plot::MarkerShape::Diamond),
                );
            }
            p.points(
                Points::new(
                    crate::gui::panels::kv(t.curve_max_len, format!("{:.1}", s.max_concurrency)),
                    vec![[lx(s.settings.max_model_len as f64), ly(s.max_concurrency)]],
                )
                .radius(6.0)
                .shape(egui_plot::MarkerShape::Circle),
            );
            if p.response().clicked() {
                clicked = p.pointer_coordinate().map(|c| c.x);
            }
        });
    let mut out = Vec::new();
    if let Some(x) = clicked {
        let want = x.exp2().round().clamp(1.0, s.settings.max_model_len as f64) as u64;
        let mut n = settings.clone();
        n.serve.context = want;
        out.push(Intent::Edit { settings: Box::new(n), knob: "serve_context" });
    }
    out
}
