//! The stacked per-GPU bar (and pinned scenarios beside it), with the GPU's capacity as a line.
//! Hovering a segment shows its formula with the current numbers.

use super::{exact, gib};
use crate::explain::Component;
use crate::gui::derived::Computed;
use crate::gui::palette;
use crate::gui::strings::tr;
use eframe::egui::{self, Align2, FontId, Rect, Sense, Stroke, pos2, vec2};

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
        Component::ZeroBuckets => t.c_zero_buckets,
        Component::Overhead => t.c_overhead,
    }
}

/// Draws the bars. `pinned` are (label, results) of pinned scenarios.
/// `measured`: the Live tab's GPU shown, bytes, and whether that is its peak (a cluster's GPU,
/// read against the per-rank prediction) rather than its latest sample.
pub fn ui(
    ui: &mut egui::Ui,
    c: &Computed,
    pinned: &[(&str, &Computed)],
    height: f32,
    measured: Option<(u64, bool)>,
    focus: &[Component],
) {
    let t = tr();
    let size = vec2(ui.available_width(), height);
    let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
    let painter = ui.painter_at(rect);
    let text_color = ui.visuals().text_color();
    let cap = c.capacity();
    let mut bars: Vec<(&str, &Computed)> = vec![(t.current, c)];
    bars.extend(pinned.iter().copied());
    let max_total = bars.iter().map(|(_, b)| b.estimate.total).max().unwrap_or(1);
    // a lesson is about its segments: the axis ends over the bars, so a small model's parts on a
    // big card are tall enough to read; the card's line, above, is named at the top
    let lesson = !focus.is_empty();
    let top = (if lesson { max_total } else { cap.max(max_total) } as f64 * 1.08).max(1.0);
    let cap_shown = cap as f64 <= top;
    let plot = Rect::from_min_max(
        pos2(rect.left() + 64.0, rect.top() + 22.0),
        pos2(rect.right() - 10.0, rect.bottom() - 24.0),
    );
    let n = bars.len() as f32;
    let slot = plot.width() / n.max(1.0);
    let bar_w = (slot * 0.5).min(230.0);
    let label_pt = if lesson { 16.0 } else { 13.0 };
    let canvas = Canvas { painter: &painter, plot, top, bar_w, label_pt };
    let y_of = |bytes: f64| canvas.y_of(bytes);
    // the grid under the bars; the tick labels go where no other label is (below)
    for (bytes, _) in tick_values(top) {
        grid_line(&painter, plot, y_of(bytes), text_color);
    }
    painter.text(
        pos2(rect.left() + 2.0, rect.top() + 4.0),
        Align2::LEFT_TOP,
        "GiB",
        FontId::proportional(13.0),
        text_color,
    );
    let mut totals = Vec::with_capacity(bars.len());
    let mut bar_tops = Vec::with_capacity(bars.len());
    let mut inner_labels: Vec<Rect> = Vec::new();
    ui.ctx().data_mut(|d| d.insert_temp(focus_id(), Vec::<FocusSeg>::new()));
    for (i, (label, b)) in bars.iter().enumerate() {
        let cx = plot.left() + slot * (i as f32 + 0.5);
        let (acc, inner) = bar(ui, &canvas, i, b, cx, focus);
        inner_labels.extend(inner);
        // the total beside the bar top, on a background so the line never cuts through it
        let galley = painter.layout_no_wrap(gib(acc), FontId::proportional(15.0), text_color);
        bar_tops.push(BarTop {
            cx,
            width: bar_w,
            y: y_of(acc as f64),
            label: galley.size() + vec2(4.0, 4.0),
        });
        totals.push(galley);
        painter.text(
            pos2(cx, plot.bottom() + 4.0),
            Align2::CENTER_TOP,
            *label,
            FontId::proportional(14.0),
            text_color,
        );
    }
    // capacity line, dashed
    let y = y_of((cap as f64).min(top));
    let dash = ui.visuals().strong_text_color();
    if cap_shown {
        painter.extend(egui::Shape::dashed_line(
            &[pos2(plot.left(), y), pos2(plot.right(), y)],
            Stroke::new(2.0, dash),
            8.0,
            5.0,
        ));
    }
    let font = |size: f32| FontId::proportional(size);
    let cap_text = if cap_shown {
        super::capacity_line(&c.gpu.id, cap)
    } else {
        t.capacity_above.replace("{gpu}", &c.gpu.id).replace("{gib}", &gib(cap))
    };
    let cap_galley = painter.layout_no_wrap(cap_text, font(13.0), dash);
    let measured_galley = measured.map(|(m, peak)| {
        let what =
            if peak { crate::gui::strings::tr_cluster().measured_peak_on_bar } else { t.measured_on_bar };
        let galley = painter.layout_no_wrap(format!("{what} {}", gib(m)), font(13.0), dash);
        (m, galley)
    });
    let measured_at = measured_galley.as_ref().map(|(m, g)| (y_of(*m as f64), g.size()));
    let labels = place_labels(
        rect,
        plot,
        top,
        (&bar_tops, &inner_labels),
        (y, cap_galley.size()),
        measured_at,
        |text| painter.layout_no_wrap(text.to_owned(), font(13.0), text_color).size(),
    );
    // the placed labels, for the tests that check no two meet
    ui.ctx().data_mut(|d| d.insert_temp(labels_id(), (rect, labels.clone())));
    for tick in &labels.ticks {
        if let Some(r) = tick.label {
            painter.text(r.right_center(), Align2::RIGHT_CENTER, &tick.text, font(13.0), text_color);
        }
    }
    if let (Some((m, galley)), Some(r)) = (measured_galley, labels.measured) {
        let cx = plot.left() + slot * 0.5;
        let ym = y_of(m as f64);
        let stroke = Stroke::new(3.0, ui.visuals().strong_text_color());
        painter.line_segment([pos2(cx - bar_w / 2.0 - 12.0, ym), pos2(cx + bar_w / 2.0 + 12.0, ym)], stroke);
        painter.galley(r.min, galley, ui.visuals().strong_text_color());
    }
    for (r, galley) in labels.totals.iter().zip(totals) {
        painter.rect_filled(*r, 3.0, ui.visuals().panel_fill);
        painter.galley(r.min + vec2(2.0, 2.0), galley, text_color);
    }
    // on a background, so a bar or its line under it never cuts through it
    painter.rect_filled(labels.capacity.expand(2.0), 3.0, ui.visuals().panel_fill);
    painter.galley(labels.capacity.min, cap_galley, dash);
    if !focus.is_empty() {
        let cx = plot.left() + slot * 0.5;
        callouts(ui, &painter, rect, &labels.all(), cx + bar_w / 2.0, canvas.label_pt);
    }
}

/// A highlighted segment of the current bar (a lesson's): its component and bytes, where it was
/// drawn, and where its "name 0.4 GiB" label went (inside it, or a callout beside the bar).
#[derive(Clone, Copy, Debug)]
pub struct FocusSeg {
    pub comp: Component,
    pub bytes: u64,
    pub seg: Rect,
    pub label: Option<Rect>,
}

/// The labels of the highlighted segments too thin to hold theirs, in large type right of the
/// bar (whose right edge is `bar_right`), each joined to its segment by a line, none meeting
/// another label (`taken`) or leaving `rect`.
fn callouts(ui: &egui::Ui, painter: &egui::Painter, rect: Rect, taken: &[Rect], bar_right: f32, pt: f32) {
    let mut segs: Vec<FocusSeg> = ui.ctx().data(|d| d.get_temp(focus_id())).unwrap_or_default();
    let text_color = ui.visuals().strong_text_color();
    let mut placed: Vec<Rect> = taken.to_vec();
    // top to bottom, so each callout goes at or under the one above it
    let mut order: Vec<usize> = (0..segs.len()).filter(|&k| segs[k].label.is_none()).collect();
    order.sort_by(|&a, &b| segs[a].seg.center().y.total_cmp(&segs[b].seg.center().y));
    for k in order {
        let f = segs[k];
        let text = format!("{} {}", name(f.comp), gib(f.bytes));
        let galley = painter.layout_no_wrap(text, FontId::proportional(pt), text_color);
        let size = galley.size() + vec2(8.0, 4.0);
        let x = (bar_right + 24.0).min(rect.right() - size.x - 2.0);
        let mut r = Rect::from_min_size(pos2(x, f.seg.center().y - size.y / 2.0), size);
        r = r.translate(vec2(0.0, (rect.top() + 2.0 - r.top()).max(0.0)));
        // down a little at a time past what is there, round to the chart's top at its bottom
        let mut tries = 0;
        while placed.iter().any(|p| p.intersects(r)) && tries < 80 {
            r = r.translate(vec2(0.0, 4.0));
            if r.bottom() > rect.bottom() - 2.0 {
                r = r.translate(vec2(0.0, rect.top() + 2.0 - r.top()));
            }
            tries += 1;
        }
        let swatch = palette::color(f.comp);
        painter.line_segment([f.seg.right_center(), r.left_center()], Stroke::new(1.5, swatch));
        painter.rect_filled(r, 3.0, ui.visuals().panel_fill);
        painter.rect_stroke(r, 3.0, Stroke::new(2.0, swatch), egui::StrokeKind::Inside);
        painter.galley(r.min + vec2(4.0, 2.0), galley, text_color);
        placed.push(r);
        segs[k].label = Some(r);
    }
    ui.ctx().data_mut(|d| d.insert_temp(focus_id(), segs));
}

/// Where the bars are drawn: the painter, the plot area and its top (bytes), a bar's width.
struct Canvas<'p> {
    painter: &'p egui::Painter,
    plot: Rect,
    top: f64,
    bar_w: f32,
    /// The segments' label size, points (larger in a lesson).
    label_pt: f32,
}

impl Canvas<'_> {
    /// The screen y of `bytes`.
    fn y_of(&self, bytes: f64) -> f32 {
        self.plot.bottom() - (bytes / self.top) as f32 * self.plot.height()
    }
}

/// Draws bar `i` (the scenario `b`) centred at `cx`, segment by segment with its hover texts;
/// returns its total and where the labels inside its segments went.
fn bar(
    ui: &mut egui::Ui,
    canvas: &Canvas<'_>,
    i: usize,
    b: &Computed,
    cx: f32,
    focus: &[Component],
) -> (u64, Vec<Rect>) {
    let mut inner = Vec::new();
    let t = tr();
    let (painter, bar_w) = (canvas.painter, canvas.bar_w);
    let y_of = |bytes: f64| canvas.y_of(bytes);
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
            hatched(painter, seg, palette::color(comp), ui.visuals().panel_fill);
            let id = ui.scope_id().with(("seg", i, "cache"));
            let reserved = b.estimate.reserved.unwrap_or(0);
            ui.interact(seg, id, Sense::hover()).on_hover_ui(|ui| {
                ui.label(egui::RichText::new(super::kv(t.c_cache, gib(cache))).strong());
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
        // a lesson's segments stand out: the others fade
        let dim = !focus.is_empty() && !focus.contains(&comp);
        let fill = if dim { palette::color(comp).gamma_multiply(0.3) } else { palette::color(comp) };
        painter.rect_filled(seg, 0.0, fill);
        painter.rect_stroke(seg, 0.0, Stroke::new(1.0, ui.visuals().panel_fill), egui::StrokeKind::Inside);
        if !dim && !focus.is_empty() {
            let stroke = Stroke::new(2.0, ui.visuals().strong_text_color());
            painter.rect_stroke(seg, 0.0, stroke, egui::StrokeKind::Inside);
        }
        let mut label = None;
        if seg.height() >= canvas.label_pt + 2.0 {
            // the longest label that fits the segment: "name 15.0 GiB", then "15.0 GiB"
            let color = palette::text_on(comp);
            let long = format!("{} {}", name(comp), gib(bytes));
            for text in [long, gib(bytes)] {
                let galley = painter.layout_no_wrap(text, FontId::proportional(canvas.label_pt), color);
                if galley.size().x + 6.0 <= seg.width() {
                    label = Some(Rect::from_center_size(seg.center(), galley.size()));
                    inner.push(Rect::from_center_size(seg.center(), galley.size()));
                    painter.galley(seg.center() - galley.size() / 2.0, galley, color);
                    break;
                }
            }
        }
        if i == 0 && !dim && !focus.is_empty() {
            let f = FocusSeg { comp, bytes, seg, label };
            ui.ctx().data_mut(|d| d.get_temp_mut_or_default::<Vec<FocusSeg>>(focus_id()).push(f));
        }
        let id = ui.scope_id().with(("seg", i, comp.key()));
        let resp = ui.interact(seg, id, Sense::hover());
        let explanation = b.explanations.iter().find(|x| x.component == comp);
        resp.on_hover_ui(|ui| {
            ui.label(egui::RichText::new(super::kv(name(comp), gib(bytes))).strong());
            ui.label(exact(bytes));
            if let Some(x) = explanation {
                ui.label(&x.formula);
                ui.label(&x.substituted);
            }
        });
    }
    (acc, inner)
}

/// Where the current bar's highlighted segments (a lesson's) were drawn last frame, in the
/// context's temporary data: `Vec<(Component, Rect)>`.
pub fn focus_id() -> egui::Id {
    egui::Id::NULL.with("vramscope-breakdown-focus")
}

/// Where the last frame's chart rect and [`Labels`] are kept in the context's temporary data.
pub fn labels_id() -> egui::Id {
    egui::Id::NULL.with("vramscope-breakdown-labels")
}

/// A bar's top for [`place_labels`]: centre, width, y of its total, the total's label size.
#[derive(Clone, Copy, Debug)]
pub struct BarTop {
    pub cx: f32,
    pub width: f32,
    pub y: f32,
    pub label: egui::Vec2,
}

/// One GiB tick: its value's text, height, and where its label goes (`None`: dropped, it would
/// meet another label).
#[derive(Clone, Debug)]
pub struct Tick {
    pub text: String,
    pub y: f32,
    pub label: Option<Rect>,
}

/// Where the chart's texts go.
#[derive(Clone, Debug)]
pub struct Labels {
    pub ticks: Vec<Tick>,
    /// Each bar's total.
    pub totals: Vec<Rect>,
    /// The capacity line's label.
    pub capacity: Rect,
    /// The measured line's label.
    pub measured: Option<Rect>,
}

impl Labels {
    /// Every label placed, ticks included.
    pub fn all(&self) -> Vec<Rect> {
        let mut v: Vec<Rect> = self.ticks.iter().filter_map(|t| t.label).collect();
        v.extend(&self.totals);
        v.push(self.capacity);
        v.extend(self.measured);
        v
    }
}

/// Places the chart's labels so that none meets another and none leaves `rect`: each total left
/// of its bar top, else above the bar, else right of it; the capacity label at the right end of
/// its line (above it, else below, else at the line's left end, each moved away from the line
/// by a label height at a time when a total sits there); the measured label left of
/// the bar, else right of it, else just above or below its line; then the GiB ticks, a label dropped (its grid line kept) where it
/// would meet one of those or the tick below it. `bars`: each bar's top, and the labels already
/// inside the segments (nothing goes over them); `cap`: the capacity line's y and label size;
/// `measured`: the measured line's y and label size; `tick_size`: a tick text's size.
pub fn place_labels(
    rect: Rect,
    plot: Rect,
    top: f64,
    (bars, inner): (&[BarTop], &[Rect]),
    cap: (f32, egui::Vec2),
    measured: Option<(f32, egui::Vec2)>,
    tick_size: impl Fn(&str) -> egui::Vec2,
) -> Labels {
    let inside = |r: &Rect| rect.contains_rect(*r);
    let clear = |r: &Rect, taken: &[Rect]| inside(r) && !taken.iter().any(|t| t.intersects(*r));
    // the labels inside the segments are there already: nothing goes over them
    let mut taken: Vec<Rect> = inner.to_vec();
    let mut totals = Vec::with_capacity(bars.len());
    for b in bars {
        let s = b.label;
        let left = Rect::from_min_size(pos2(b.cx - b.width / 2.0 - 8.0 - s.x, b.y - s.y / 2.0), s);
        let over = Rect::from_min_size(pos2(b.cx - s.x / 2.0, b.y - 4.0 - s.y), s);
        let right = Rect::from_min_size(pos2(b.cx + b.width / 2.0 + 8.0, b.y - s.y / 2.0), s);
        // left of the bar it must also leave the tick column free
        let left_ok = left.left() >= plot.left() + 2.0 && clear(&left, &taken);
        let r = if left_ok {
            left
        } else if clear(&over, &taken) {
            over
        } else if clear(&right, &taken) {
            right
        } else {
            // over the bar's own top, inside the chart: legible, if on the bar
            over.translate(vec2(0.0, (rect.top() - over.top()).max(0.0)))
        };
        taken.push(r);
        totals.push(r);
    }
    // the capacity label at the right end of its line, above it, else below it, else at its
    // left end
    let (cap_y, cap_size) = cap;
    let above =
        Rect::from_min_size(pos2(plot.right() - 2.0 - cap_size.x, cap_y - 3.0 - cap_size.y), cap_size);
    let below = above.translate(vec2(0.0, cap_size.y + 6.0));
    let shift = vec2(plot.left() + 4.0 - above.left(), 0.0);
    // a total just under the line, or a segment's own label, can take both sides of its right
    // end: then one label height further away at a time, up to seven times

    let step = vec2(0.0, cap_size.y + 3.0);
    let capacity = (0..8u8)
        .flat_map(|k| {
            let (up, down) = (above.translate(-step * f32::from(k)), below.translate(step * f32::from(k)));
            [up, down, up.translate(shift), down.translate(shift)]
        })
        .find(|r| clear(r, &taken))
        .unwrap_or(above);
    taken.push(capacity);
    let measured = measured.map(|(y, s)| {
        let b = bars.first().copied().unwrap_or(BarTop { cx: plot.center().x, width: 0.0, y, label: s });
        let left = Rect::from_min_size(pos2(b.cx - b.width / 2.0 - 14.0 - s.x, y - s.y / 2.0), s);
        let right = Rect::from_min_size(pos2(b.cx + b.width / 2.0 + 14.0, y - s.y / 2.0), s);
        // beside the bar on the line, else just above or below the line (left, then right of
        // the bar, then against the chart's right edge), else above it on the left
        let up = vec2(0.0, -(s.y / 2.0 + 3.0));
        let down = vec2(0.0, s.y / 2.0 + 3.0);
        let edge = Rect::from_min_size(pos2(rect.right() - 2.0 - s.x, y - s.y / 2.0), s);
        let r = [
            left,
            right,
            left.translate(up),
            left.translate(down),
            right.translate(up),
            right.translate(down),
            edge.translate(up),
            edge.translate(down),
        ]
        .into_iter()
        .find(|r| clear(r, &taken))
        .unwrap_or(left.translate(up));
        taken.push(r);
        r
    });
    let y_of = |bytes: f64| plot.bottom() - (bytes / top) as f32 * plot.height();
    let mut ticks = Vec::new();
    let mut below: Option<Rect> = None;
    for (bytes, text) in tick_values(top) {
        let y = y_of(bytes);
        let s = tick_size(&text);
        let r = Rect::from_min_size(pos2(plot.left() - 8.0 - s.x, y - s.y / 2.0), s);
        let ok = clear(&r, &taken) && below.is_none_or(|b| !b.intersects(r));
        if ok {
            below = Some(r);
        }
        ticks.push(Tick { text, y, label: ok.then_some(r) });
    }
    Labels { ticks, totals, capacity, measured }
}

/// A segment filled with diagonal stripes of `color` on `bg` (the allocator's cache: memory
/// reserved from the driver that no tensor holds).
pub fn hatched(painter: &egui::Painter, seg: Rect, color: egui::Color32, bg: egui::Color32) {
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

/// The GiB ticks of an axis whose top is `top` bytes: (bytes, label), a round step apart from 0
/// (decimals where the step is under 1 GiB).
pub fn tick_values(top: f64) -> Vec<(f64, String)> {
    let gib_top = top / crate::units::GIB;
    let step = nice_step(gib_top / 5.0);
    let decimals = if step >= 1.0 { 0 } else { (-step.log10()).ceil() as usize };
    (0u32..1000)
        .map(|k| f64::from(k) * step)
        .take_while(|v| *v <= gib_top * (1.0 + 1e-9))
        .map(|v| (v * crate::units::GIB, crate::units::grouped(v, decimals)))
        .collect()
}

/// A faint horizontal grid line at `y` across `plot` (and the tick mark left of it).
fn grid_line(painter: &egui::Painter, plot: Rect, y: f32, text_color: egui::Color32) {
    painter.line_segment(
        [pos2(plot.left() - 4.0, y), pos2(plot.right(), y)],
        Stroke::new(0.5, text_color.gamma_multiply(0.2)),
    );
}

/// GiB ticks and grid lines on the left of `plot`, whose top is `top` bytes.
pub fn gib_ticks(painter: &egui::Painter, plot: Rect, top: f64, text_color: egui::Color32) {
    let y_of = |bytes: f64| plot.bottom() - (bytes / top) as f32 * plot.height();
    for (bytes, text) in tick_values(top) {
        let y = y_of(bytes);
        grid_line(painter, plot, y, text_color);
        painter.text(
            pos2(plot.left() - 8.0, y),
            Align2::RIGHT_CENTER,
            text,
            FontId::proportional(13.0),
            text_color,
        );
    }
}

/// A round axis step (1, 2 or 5 times a power of ten) near `raw`.
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
    nice * mag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_line_just_above_the_total_keeps_clear_of_it() {
        // the Live tab's cluster at 1280x800: a peak 5.6 GiB over a 49.8 GiB bar, 14 px apart,
        // a label too wide for the right of the bar
        let rect = Rect::from_min_max(pos2(303.0, 95.0), pos2(815.0, 360.0));
        let plot = Rect::from_min_max(pos2(340.0, 110.0), pos2(800.0, 340.0));
        let bar = BarTop { cx: 581.0, width: 214.0, y: 212.0, label: vec2(60.0, 16.0) };
        let l = place_labels(
            rect,
            plot,
            90.0 * 1073741824.0,
            (&[bar], &[]),
            (128.0, vec2(170.0, 16.0)),
            Some((198.0, vec2(150.0, 16.0))),
            |t| vec2(8.0 * t.len() as f32, 16.0),
        );
        let all = l.all();
        for (i, a) in all.iter().enumerate() {
            assert!(rect.contains_rect(*a), "{a:?} outside {rect:?}");
            for b in &all[i + 1..] {
                assert!(!a.intersects(*b), "{a:?} meets {b:?}");
            }
        }
    }
}
