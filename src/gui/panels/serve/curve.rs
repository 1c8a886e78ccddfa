//! Concurrent requests against their context length (log-log: the pool holds a fixed number of
//! tokens, so the curve is nearly a straight line), with the scheduler's `--max-num-seqs` cap,
//! the target, the mean context and max_model_len marked. Clicking the curve sets the mean context.

use crate::gui::derived::ServeComputed;
use crate::gui::intent::Intent;
use crate::gui::panels::legend::{self, Entry, Swatch, colors};
use crate::gui::state::Settings;
use crate::gui::strings::{tr_controls, tr_serve};
use eframe::egui;
use egui_plot::{HLine, Line, LineStyle, Plot, PlotPoints, Points, VLine};

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
    let id = egui::Id::NULL.with("vramscope-serve-curve");
    let presentation = crate::gui::panels::presentation(ui.ctx());
    let mut entries = vec![
        Entry::new(t.curve_line, colors::CURVE, Swatch::Solid),
        Entry::new(
            super::super::paren(t.num_seqs, s.settings.max_num_seqs),
            colors::EXTRA[0],
            Swatch::Dotted,
        ),
    ];
    if target > 0.0 {
        entries.push(Entry::new(format!("{} {target}", t.curve_target), colors::CAPACITY, Swatch::Dashed));
    }
    if let (Some(_), Some(n)) = (s.context, s.concurrency_at_context) {
        entries.push(Entry::new(
            crate::gui::panels::kv(t.curve_context, format!("{n:.1}")),
            colors::MARK,
            Swatch::Marker,
        ));
    }
    entries.push(Entry::new(
        crate::gui::panels::kv(t.curve_max_len, format!("{:.1}", s.max_concurrency)),
        colors::EXTRA[1],
        Swatch::Marker,
    ));
    if presentation {
        // a projector's plot keeps its height for the curve: its axes are named in the row
        let text = ui.visuals().text_color();
        entries.insert(0, Entry::new(format!("y: {}", t.curve_y), text, Swatch::Axis));
        entries.insert(0, Entry::new(format!("x: {}", t.curve_x), text, Swatch::Axis));
    }
    legend::row(ui, id, &entries, tr_controls().hover_none, &[]);
    let curve = &c.curve;
    let mut clicked = None;
    let height = crate::gui::panels::plot_height(ui);
    let plot = Plot::new("serve-concurrency")
        .height(height)
        .x_axis_label(if presentation { "" } else { t.curve_x })
        .y_axis_label(if presentation { "" } else { t.curve_y })
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .x_axis_formatter(|m, _| {
            let v = m.value.exp2();
            if v >= 1024.0 { format!("{:.0}k", v / 1024.0) } else { format!("{v:.0}") }
        })
        .y_axis_formatter(|m, _| {
            let v = 10f64.powf(m.value);
            if v >= 10.0 { crate::units::grouped(v, 0) } else { format!("{v:.1}") }
        })
        // the curve's value at the pointer's context length, not the pointer's height
        .label_formatter(move |h| {
            let p = match h {
                egui_plot::HoverPosition::NearDataPoint { position, .. }
                | egui_plot::HoverPosition::Elsewhere { position } => position,
            };
            hover_text(curve, p.x.exp2())
        });
    legend::with_plot_type(ui, |ui| {
        plot.show(ui, |p| {
            p.line(Line::new(t.curve_line, PlotPoints::from(pts.clone())).color(colors::CURVE).width(2.5));
            p.hline(
                HLine::new(format!("{} ({})", t.num_seqs, s.settings.max_num_seqs), ly(seqs))
                    .color(colors::EXTRA[0])
                    .style(LineStyle::dotted_dense())
                    .width(1.5),
            );
            if target > 0.0 {
                p.hline(
                    HLine::new(format!("{} {target}", t.curve_target), ly(target))
                        .color(colors::CAPACITY)
                        .style(LineStyle::dashed_loose())
                        .width(2.0),
                );
            }
            if let (Some(ctx), Some(n)) = (s.context, s.concurrency_at_context) {
                p.vline(VLine::new("", lx(ctx as f64)).color(colors::MARK).width(1.0));
                p.points(
                    Points::new(
                        crate::gui::panels::kv(t.curve_context, format!("{n:.1}")),
                        vec![[lx(ctx as f64), ly(n)]],
                    )
                    .color(colors::MARK)
                    .radius(6.0)
                    .shape(egui_plot::MarkerShape::Diamond),
                );
            }
            p.points(
                Points::new(
                    crate::gui::panels::kv(t.curve_max_len, format!("{:.1}", s.max_concurrency)),
                    vec![[lx(s.settings.max_model_len as f64), ly(s.max_concurrency)]],
                )
                .color(colors::EXTRA[1])
                .radius(6.0)
                .shape(egui_plot::MarkerShape::Circle),
            );
            let over = p.response().hover_pos().and(p.pointer_coordinate());
            legend::set_readout(p.ctx(), id, over.and_then(|pc| hover_text(curve, pc.x.exp2())));
            if p.response().clicked() {
                clicked = p.pointer_coordinate().map(|c| c.x);
            }
        })
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

/// The curve's sampled point nearest `tokens` on the log scale: (context length, concurrent
/// requests).
pub fn nearest(curve: &[(u64, f64)], tokens: f64) -> Option<(u64, f64)> {
    let d = |x: u64| ((x.max(1) as f64).ln() - tokens.max(1.0).ln()).abs();
    curve.iter().copied().min_by(|a, b| d(a.0).total_cmp(&d(b.0)))
}

/// The hover read-out at `tokens`: the curve's value there ("at context length (tokens) 8,192:
/// 53.0"), never the pointer's height.
pub fn hover_text(curve: &[(u64, f64)], tokens: f64) -> Option<String> {
    let (x, n) = nearest(curve, tokens)?;
    Some(
        tr_controls()
            .hover_at
            .replace("{knob}", tr_serve().curve_x)
            .replace("{x}", &crate::units::digits(x))
            .replace("{value}", &format!("{n:.1}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The read-out is the curve's value at the nearest sampled length (once the pointer's
    /// height: "469.0" where the curve is at 53).
    #[test]
    fn the_hover_reads_the_curve_not_the_pointer() {
        let curve = [(1024, 212.0), (2048, 106.0), (4096, 53.0), (8192, 26.5)];
        assert_eq!(nearest(&curve, 4000.0), Some((4096, 53.0)));
        assert_eq!(nearest(&curve, 3000.0), Some((4096, 53.0)), "nearer 4096 than 2048 on the log scale");
        assert_eq!(nearest(&curve, 1.0), Some((1024, 212.0)));
        assert_eq!(nearest(&[], 10.0), None);
        crate::gui::lang::set(crate::gui::lang::Lang::En);
        assert_eq!(hover_text(&curve, 4500.0).as_deref(), Some("at context length (tokens) 4,096: 53.0"));
    }
}
