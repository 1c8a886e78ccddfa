//! The server's memory as one stacked bar per GPU: weights, the profiling peak, non-torch memory,
//! CUDA graphs and the KV pool as its own segment, under the utilisation budget line; what the
//! budget keeps free up to the CUDA-visible total, hatched. Hovering a segment names its rule.

use crate::explain::Component;
use crate::gui::derived::ServeComputed;
use crate::gui::palette;
use crate::gui::panels::breakdown::gib_ticks;
use crate::gui::panels::{exact, gib};
use crate::gui::strings::tr_serve;
use eframe::egui::{self, Align2, FontId, Rect, Sense, Stroke, pos2, vec2};

/// The segments bottom-up: (label, bytes, colour component, hover text).
fn segments(c: &ServeComputed) -> Vec<(&'static str, u64, Component, String)> {
    let t = tr_serve();
    let s = &c.serve;
    let b = &s.bytes;
    let lang = crate::gui::lang::current();
    vec![
        (
            t.seg_weights,
            b.weights,
            Component::Parameters,
            crate::text!(
                lang,
                "{} per GPU (TP {}, PP {})",
                "每 GPU {}（TP {}，PP {}）",
                t.seg_weights,
                s.settings.tp,
                s.settings.pp
            ),
        ),
        (
            t.seg_profile,
            b.activation_peak,
            Component::Activations,
            crate::serve::profile::peak_at_in(&s.activation_peak_at, lang).into_owned(),
        ),
        (
            t.seg_non_torch,
            b.non_torch,
            Component::Overhead,
            lang.pick("cuBLAS workspace, NCCL buffers", "cuBLAS 工作区，NCCL 缓冲区").into(),
        ),
        (t.seg_graphs, b.cudagraph, Component::Temporaries, t.eager_tip.into()),
        (
            t.seg_kv,
            b.kv_cache,
            Component::KvCache,
            crate::text!(
                lang,
                "{} blocks × {} tokens",
                "{} 个块 × {} 个 token",
                crate::units::digits(s.kv_blocks),
                s.layout.block_size
            ),
        ),
    ]
}

/// Draws the bar into a `height`-tall area.
pub fn ui(ui: &mut egui::Ui, c: &ServeComputed, height: f32) {
    let t = tr_serve();
    let s = &c.serve;
    let b = &s.bytes;
    let size = vec2(ui.available_width(), height);
    let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
    let painter = ui.painter_at(rect);
    let text_color = ui.visuals().text_color();
    let segs = segments(c);
    let stacked: u64 = segs.iter().map(|x| x.1).sum();
    let top = (b.cuda_total.max(stacked) as f64 * 1.06).max(1.0);
    let plot = Rect::from_min_max(
        pos2(rect.left() + 48.0, rect.top() + 12.0),
        pos2(rect.right() - 8.0, rect.bottom() - 8.0),
    );
    let y_of = |bytes: f64| plot.bottom() - (bytes / top) as f32 * plot.height();
    // GiB ticks on the left axis; the line labels sit right of the bar, so they never meet
    gib_ticks(&painter, plot, top, text_color);
    painter.text(
        pos2(rect.left() + 2.0, rect.top()),
        Align2::LEFT_TOP,
        "GiB",
        FontId::proportional(12.0),
        text_color,
    );
    let bar_w = (plot.width() * 0.38).min(220.0);
    let x0 = plot.left() + 16.0;
    let mut acc = 0u64;
    for (i, (label, bytes, comp, hover)) in segs.iter().enumerate() {
        if *bytes == 0 {
            continue;
        }
        let y0 = y_of(acc as f64);
        acc += bytes;
        let seg = Rect::from_min_max(pos2(x0, y_of(acc as f64)), pos2(x0 + bar_w, y0));
        painter.rect_filled(seg, 0.0, palette::color(*comp));
        painter.rect_stroke(seg, 0.0, Stroke::new(1.0, ui.visuals().panel_fill), egui::StrokeKind::Inside);
        if seg.height() >= 15.0 {
            let color = palette::text_on(*comp);
            for text in [format!("{label} {}", gib(*bytes)), gib(*bytes)] {
                let galley = painter.layout_no_wrap(text, FontId::proportional(13.0), color);
                if galley.size().x + 6.0 <= seg.width() {
                    painter.galley(seg.center() - galley.size() / 2.0, galley, color);
                    break;
                }
            }
        }
        ui.interact(seg, ui.scope_id().with(("serve-seg", i)), Sense::hover()).on_hover_ui(|ui| {
            ui.label(egui::RichText::new(crate::gui::panels::kv(label, gib(*bytes))).strong());
            ui.label(exact(*bytes));
            ui.label(hover.as_str());
        });
    }
    // what the utilisation keeps free, up to the CUDA-visible total
    if b.cuda_total > acc.max(b.budget) {
        let seg = Rect::from_min_max(
            pos2(x0, y_of(b.cuda_total as f64)),
            pos2(x0 + bar_w, y_of(acc.max(b.budget) as f64)),
        );
        let stroke = Stroke::new(1.0, text_color.gamma_multiply(0.35));
        painter.rect_stroke(seg, 0.0, stroke, egui::StrokeKind::Inside);
        if seg.height() >= 14.0 {
            painter.text(
                seg.center(),
                Align2::CENTER_CENTER,
                format!("{} {}", t.seg_reserved, gib(b.cuda_total - acc.max(b.budget))),
                FontId::proportional(12.0),
                text_color.gamma_multiply(0.7),
            );
        }
    }
    // the budget and the CUDA-visible total as lines, labelled right of the bar; labels that
    // would overlap are pushed apart (budget below its line, total above its)
    let strong = ui.visuals().strong_text_color();
    let (yb, yt) = (y_of(b.budget as f64), y_of(b.cuda_total as f64));
    let lx = x0 + bar_w + 10.0;
    painter.extend(egui::Shape::dashed_line(
        &[pos2(x0 - 6.0, yb), pos2(plot.right(), yb)],
        Stroke::new(2.0, strong),
        8.0,
        5.0,
    ));
    painter.line_segment(
        [pos2(x0 - 6.0, yt), pos2(plot.right(), yt)],
        Stroke::new(1.0, strong.gamma_multiply(0.6)),
    );
    let budget_label = format!(
        "{} {} = {} × {:.2}",
        t.budget_line,
        gib(b.budget),
        gib(b.cuda_total),
        s.settings.gpu_memory_utilization
    );
    painter.text(pos2(lx, yb + 2.0), Align2::LEFT_TOP, budget_label, FontId::proportional(13.0), strong);
    painter.text(
        pos2(lx, yt - 2.0),
        Align2::LEFT_BOTTOM,
        crate::gui::panels::capacity_line(&c.gpu.id, b.cuda_total),
        FontId::proportional(13.0),
        strong.gamma_multiply(0.8),
    );
    if stacked > b.budget {
        let over = stacked - b.budget;
        painter.text(
            pos2(lx, y_of(stacked as f64)),
            Align2::LEFT_CENTER,
            crate::text!(
                crate::gui::lang::current(),
                "{} {} over",
                "{}：超出 {}",
                t.does_not_start,
                gib(over)
            ),
            FontId::proportional(14.0),
            palette::verdict(false),
        );
    }
}
