//! The stacked per-GPU bar (and pinned scenarios beside it), with the GPU's capacity as a line.
//! Hovering a segment shows its formula with the current numbers.

use super::{exact, gib};
use crate::explain::Component;
use crate::gui::derived::Computed;
use crate::gui::palette;
use crate::gui::strings::tr;
use eframe::egui::{self, Align2, FontId, Pos2, Rect, Sense, Stroke, pos2, vec2};

/// Display name of a component.
pub fn name(c: Component) -> &'static str {
    let t = tr();
    match c {
        Component::Parameters => t.c_parameters,
        Component::Gradients => t.c_gradients,
        Component::OptimizerStates => t.c_optimizer,
        Component::Activations => t.c_activations,
        Component::KvCache => t.c_kv,
        Component::Temporaries => t.c_temporaries,
        Component::Overhead => t.c_overhead,
    }
}

/// Draws the bars. `pinned` are (label, results) of pinned scenarios.
/// `measured` is the live used memory of the GPU, drawn across the current bar.
pub fn ui(ui: &mut egui::Ui, c: &Computed, pinned: &[(&str, &Computed)], height: f32, measured: Option<u64>) {
    let t = tr();
    let size = vec2(ui.available_width(), height);
    let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
    let painter = ui.painter_at(rect);
    let text_color = ui.visuals().text_color();
    let cap = c.capacity();
    let mut bars: Vec<(&str, &Computed)> = vec![(t.current, c)];
    bars.extend(pinned.iter().copied());
    let max_total = bars.iter().map(|(_, b)| b.estimate.total).max().unwrap_or(1);
    let top = (cap.max(max_total) as f64 * 1.08).max(1.0);
    let plot = Rect::from_min_max(
        pos2(rect.left() + 64.0, rect.top() + 22.0),
        pos2(rect.right() - 10.0, rect.bottom() - 24.0),
    );
    let y_of = |bytes: f64| plot.bottom() - (bytes / top) as f32 * plot.height();
    gib_ticks(&painter, plot, top, text_color);
    painter.text(
        pos2(rect.left() + 2.0, rect.top() + 4.0),
        Align2::LEFT_TOP,
        "GiB",
        FontId::proportional(13.0),
        text_color,
    );
    let n = bars.len() as f32;
    let slot = plot.width() / n.max(1.0);
    let bar_w = (slot * 0.5).min(230.0);
    let mut totals = Vec::with_capacity(bars.len());
    for (i, (label, b)) in bars.iter().enumerate() {
        let cx = plot.left() + slot * (i as f32 + 0.5);
        let mut acc = 0u64;
        for comp in Component::ALL {
            let mut bytes = comp.at_peak(&b.estimate);
            if comp == Component::Overhead
                && let Some(cache) = b.cache_at_peak()
            {
                // what the allocator reserves beyond the allocated peak, hatched, right on top of
                // what it allocated; the context and NCCL buffers above it
                let y0 = y_of(acc as f64);
                acc += cache;
                let seg =
                    Rect::from_min_max(pos2(cx - bar_w / 2.0, y_of(acc as f64)), pos2(cx + bar_w / 2.0, y0));
                hatched(&painter, seg, palette::color(comp), ui.visuals().panel_fill);
                let id = ui.scope_id().with(("seg", i, "cache"));
                let reserved = b.estimate.reserved.unwrap_or(0);
                ui.interact(seg, id, Sense::hover()).on_hover_ui(|ui| {
                    ui.label(egui::RichText::new(format!("{}: {}", t.c_cache, gib(cache))).strong());
                    ui.label(exact(cache));
                    ui.label(format!("{} {}", t.c_cache_reserved, gib(reserved)));
                    ui.label(t.c_cache_tip);
                });
                bytes = bytes.saturating_sub(cache);
            }
            if bytes == 0 {
                continue;
            }
            let y0 = y_of(acc as f64);
            acc += bytes;
            let y1 = y_of(acc as f64);
            let seg = Rect::from_min_max(pos2(cx - bar_w / 2.0, y1), pos2(cx + bar_w / 2.0, y0));
            painter.rect_filled(seg, 0.0, palette::color(comp));
            painter.rect_stroke(
                seg,
                0.0,
                Stroke::new(1.0, ui.visuals().panel_fill),
                egui::StrokeKind::Inside,
            );
            if seg.height() >= 15.0 {
                // the longest label that fits the segment: "name 15.0 GiB", then "15.0 GiB"
                let color = palette::text_on(comp);
                let long = format!("{} {}", name(comp), gib(bytes));
                for text in [long, gib(bytes)] {
                    let galley = painter.layout_no_wrap(text, FontId::proportional(13.0), color);
                    if galley.size().x + 6.0 <= seg.width() {
                        painter.galley(seg.center() - galley.size() / 2.0, galley, color);
                        break;
                    }
                }
            }
            let id = ui.scope_id().with(("seg", i, comp.key()));
            let resp = ui.interact(seg, id, Sense::hover());
            let explanation = b.explanations.iter().find(|x| x.component == comp);
            resp.on_hover_ui(|ui| {
                ui.label(egui::RichText::new(format!("{}: {}", name(comp), gib(bytes))).strong());
                ui.label(exact(bytes));
                if let Some(x) = explanation {
                    ui.label(&x.formula);
                    ui.label(&x.substituted);
                }
            });
        }
        // total left of the bar top (the capacity label sits at the right end of its line), on a
        // background so the line never cuts through it
        let galley = painter.layout_no_wrap(gib(acc), FontId::proportional(15.0), text_color);
        let at = pos2(cx - bar_w / 2.0 - 8.0 - galley.size().x, y_of(acc as f64) - galley.size().y / 2.0);
        totals.push((egui::Rect::from_min_size(at, galley.size()).expand(2.0), galley));
        painter.text(
            pos2(cx, plot.bottom() + 4.0),
            Align2::CENTER_TOP,
            *label,
            FontId::proportional(14.0),
            text_color,
        );
    }
    // capacity line, dashed
    let y = y_of(cap as f64);
    let dash = ui.visuals().strong_text_color();
    painter.extend(egui::Shape::dashed_line(
        &[pos2(plot.left(), y), pos2(plot.right(), y)],
        Stroke::new(2.0, dash),
        8.0,
        5.0,
    ));
    if let Some(m) = measured {
        let cx = plot.left() + slot * 0.5;
        let y = y_of(m as f64);
        let stroke = Stroke::new(3.0, ui.visuals().strong_text_color());
        painter.line_segment([pos2(cx - bar_w / 2.0 - 12.0, y), pos2(cx + bar_w / 2.0 + 12.0, y)], stroke);
        painter.text(
            pos2(cx - bar_w / 2.0 - 14.0, y),
            Align2::RIGHT_CENTER,
            format!("{} {}", t.measured_on_bar, gib(m)),
            FontId::proportional(13.0),
            ui.visuals().strong_text_color(),
        );
    }
    for (bg, galley) in totals {
        painter.rect_filled(bg, 3.0, ui.visuals().panel_fill);
        painter.galley(bg.min + vec2(2.0, 2.0), galley, text_color);
    }
    painter.text(
        Pos2::new(plot.right() - 2.0, y - 3.0),
        Align2::RIGHT_BOTTOM,
        format!("{} {}: {}", c.gpu.id, t.capacity, gib(cap)),
        FontId::proportional(13.0),
        dash,
    );
}

/// A segment filled with diagonal stripes of `color` on `bg` (the allocator's cache: memory
/// reserved from the driver that no tensor holds).
fn hatched(painter: &egui::Painter, seg: Rect, color: egui::Color32, bg: egui::Color32) {
    if seg.height() < 0.5 {
        return;
    }
    painter.rect_filled(seg, 0.0, bg);
    let clip = painter.with_clip_rect(seg.intersect(painter.clip_rect()));
    let stroke = Stroke::new(2.0, color);
    let gap = 7.0;
    let mut x = seg.left() - seg.height();
    while x < seg.right() {
        clip.line_segment([pos2(x, seg.bottom()), pos2(x + seg.height(), seg.top())], stroke);
        x += gap;
    }
    painter.rect_stroke(seg, 0.0, Stroke::new(1.0, color), egui::StrokeKind::Inside);
}

/// GiB ticks and grid lines on the left of `plot`, whose top is `top` bytes.
pub fn gib_ticks(painter: &egui::Painter, plot: Rect, top: f64, text_color: egui::Color32) {
    let y_of = |bytes: f64| plot.bottom() - (bytes / top) as f32 * plot.height();
    let gib_top = top / crate::units::GIB;
    let step = nice_step(gib_top / 5.0);
    let mut v = 0.0;
    while v <= gib_top {
        let y = y_of(v * crate::units::GIB);
        painter.line_segment(
            [pos2(plot.left() - 4.0, y), pos2(plot.right(), y)],
            Stroke::new(0.5, text_color.gamma_multiply(0.2)),
        );
        painter.text(
            pos2(plot.left() - 8.0, y),
            Align2::RIGHT_CENTER,
            format!("{v:.0}"),
            FontId::proportional(13.0),
            text_color,
        );
        v += step;
    }
}

/// A round axis step (1, 2 or 5 times a power of ten) near `raw`, at least 1.
pub fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    (nice * mag).max(1.0)
}
