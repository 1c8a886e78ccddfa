//! What-if curves: memory against micro-batch, sequence length, checkpoint segments or GPU count,
//! with the capacity line, the current setting and the largest value that fits. Clicking a curve
//! sets that value.

use super::legend::{self, Entry, Swatch, colors};
use crate::estimate::Checkpointing;
use crate::fit::Knob;
use crate::gui::derived::Computed;
use crate::gui::intent::Intent;
use crate::gui::state::{Settings, Tab};
use crate::gui::strings::{tr, tr_controls};
use crate::units::GIB;
use eframe::egui;
use egui_plot::{HLine, Line, LineStyle, Plot, PlotPoints, Points, VLine};

/// `tab`'s knob, its axis label and whether the axis is logarithmic.
fn axis(c: &Computed, tab: Tab) -> (Knob, &'static str, bool) {
    let t = tr();
    match tab {
        Tab::Batch => (Knob::Batch, t.axis_batch, true),
        Tab::Seq if c.scenario.image_size().is_some() => (Knob::Seq, t.axis_image, true),
        // a vision-language model's sequence knob is its text, beside the images' tokens
        Tab::Seq if c.scenario.vlm_images().is_some() => (Knob::Seq, t.axis_text, true),
        Tab::Seq => (Knob::Seq, t.axis_seq, true),
        Tab::Segments => (Knob::Segments, t.axis_segments, false),
        Tab::Gpus | Tab::Compare | Tab::Live | Tab::Options | Tab::Timeline | Tab::Concurrency => {
            (Knob::Gpus, t.axis_gpus, true)
        }
    }
}

/// Draws the curve of `tab`'s knob.
pub fn ui(ui: &mut egui::Ui, c: &Computed, tab: Tab, settings: &Settings) -> Vec<Intent> {
    let t = tr();
    let (knob, label, log_x) = axis(c, tab);
    let curve = c.curve(knob);
    let cap = c.capacity();
    let to_x = move |v: u64| if log_x { (v as f64).log2() } else { v as f64 };
    let from_x = move |x: f64| if log_x { x.exp2() } else { x };
    // a vision model's sequence knob is its image side
    let image = c.scenario.image_size();
    let current = match (knob, image) {
        (Knob::Seq, Some(i)) => i.height.max(i.width),
        _ => current_of(knob, settings),
    };
    // the point worth calling out: the largest batch / sequence that fits, the fewest GPUs that
    // fit, the segment count with the lowest peak
    let marked = match knob {
        // the headline's figure, which the curve holds as an exact point
        Knob::Batch => c.max_batch.map(|x| (x, t.largest_fit)),
        Knob::Seq => c.max_seq.map(|x| (x, t.largest_fit)),
        Knob::Gpus => fewest_that_fit(curve).map(|x| (x, t.fewest_gpus)),
        Knob::Segments => curve.iter().min_by_key(|p| p.total).map(|p| (p.x, t.lowest_peak)),
    };
    let presentation = super::presentation(ui.ctx());
    if !presentation {
        super::hint(ui, t.curve_hint);
    }
    let (pts, limit) = drawn(curve, knob, cap, to_x);
    let (extra, sets) = if knob == Knob::Segments && !curve.is_empty() {
        segment_lines(curve, to_x, limit, current)
    } else {
        (Vec::new(), None)
    };
    if let Some(s) = sets {
        ui.label(egui::RichText::new(s).strong());
    }
    let id = egui::Id::NULL.with(("vramscope-curve", knob as u8));
    let caption = uneven_caption(c, knob, curve);
    let notes: Vec<&str> = std::iter::once(t.curve_hint).chain(caption.as_deref()).collect();
    let mut row = entries(c, &extra, current, marked);
    if presentation {
        // a projector's plot keeps its height for the curve: the x axis is named in the row
        row.insert(0, Entry::new(format!("x: {label}"), ui.visuals().text_color(), Swatch::Axis));
    }
    legend::row(ui, id, &row, tr_controls().hover_none, &notes);
    // at a desk the caption goes under the plot
    let caption = caption.filter(|_| !presentation);
    let below = if caption.is_some() { 40.0 } else { 0.0 };
    let mut clicked_x = None;
    let plot = Plot::new(("curve", knob as u8))
        .height((super::plot_height(ui) - below).max(80.0))
        .x_axis_label(if presentation { "" } else { label })
        .y_axis_label("GiB")
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .include_y(0.0)
        .include_y(cap as f64 / GIB * 1.15)
        // the drawn part of the sweep, at least two of its values wide (a job off the chart from
        // its first value still gets an axis of knob values)
        .include_x(curve.first().map_or(0.0, |p| to_x(p.x)))
        .include_x(curve.get(pts.len().max(2) - 1).or(curve.last()).map_or(1.0, |p| to_x(p.x)))
        .y_grid_spacer(super::nice_grid())
        .y_axis_formatter(super::gib_tick)
        .x_grid_spacer(if log_x { egui_plot::log_grid_spacer(10) } else { Box::new(super::nice_grid()) })
        .x_axis_formatter(move |m, _| {
            let v = from_x(m.value);
            // a value the knob can take (no 2^64 from a mark far outside the sweep)
            if (1.0..1e12).contains(&v) { crate::units::digits(v.round() as u64) } else { String::new() }
        })
        .label_formatter(move |h| {
            let x = match h {
                egui_plot::HoverPosition::NearDataPoint { position, .. }
                | egui_plot::HoverPosition::Elsewhere { position } => position.x,
            };
            hover_text(label, curve, from_x(x))
        });
    let resp = legend::with_plot_type(ui, |ui| {
        plot.show(ui, |p| {
            p.line(Line::new(t.total_per_gpu, PlotPoints::from(pts.clone())).color(colors::CURVE).width(2.5));
            for (i, (name, line, style)) in extra.iter().enumerate() {
                let color = colors::EXTRA[i % colors::EXTRA.len()];
                p.line(
                    Line::new(*name, PlotPoints::from(line.clone())).color(color).width(1.5).style(*style),
                );
            }
            p.hline(
                HLine::new(super::capacity_line(&c.gpu.id, cap), cap as f64 / GIB)
                    .color(colors::CAPACITY)
                    .style(LineStyle::dashed_loose())
                    .width(2.0),
            );
            if current > 0 {
                p.vline(
                    VLine::new(t.current, to_x(current))
                        .color(colors::CURRENT)
                        .style(LineStyle::dashed_dense())
                        .width(2.5),
                );
            }
            if let Some((x, what)) = marked
                && let Some(pt) = curve.iter().find(|p| p.x == x)
            {
                p.points(
                    Points::new(super::kv(what, x), vec![[to_x(x), pt.total as f64 / GIB]])
                        .color(colors::MARK)
                        .radius(6.0)
                        .shape(egui_plot::MarkerShape::Diamond),
                );
            }
            let over = p.response().hover_pos().and(p.pointer_coordinate());
            legend::set_readout(p.ctx(), id, over.and_then(|pc| hover_text(label, curve, from_x(pc.x))));
            if p.response().clicked() {
                clicked_x = p.pointer_coordinate().map(|c| c.x);
            }
        })
    });
    // where the plot landed, for the layout tests (a projector's curve stays readable)
    let plot_rect = resp.response.rect;
    ui.ctx().data_mut(|d| d.insert_temp(plot_id(), plot_rect));
    if let Some(text) = caption {
        ui.add(egui::Label::new(egui::RichText::new(text).weak()).wrap());
    }
    clicked_x.and_then(|x| edit_at(knob, curve, settings, from_x(x), image.is_some())).into_iter().collect()
}

/// The knob's value in `settings` (0: a scenario not checkpointed in segments).
fn current_of(knob: Knob, settings: &Settings) -> u64 {
    match knob {
        Knob::Batch => settings.batch,
        Knob::Seq => settings.seq,
        Knob::Segments => match settings.checkpointing {
            Checkpointing::Segments(n) => n,
            _ => 0,
        },
        Knob::Gpus => settings.dp,
    }
}

/// The legend row's entries: every line and mark drawn, in its colour.
fn entries(
    c: &Computed,
    extra: &[NamedLine],
    current: u64,
    marked: Option<(u64, &'static str)>,
) -> Vec<legend::Entry> {
    let t = tr();
    let mut out = vec![Entry::new(t.total_per_gpu, colors::CURVE, Swatch::Solid)];
    for (i, (name, _, style)) in extra.iter().enumerate() {
        let swatch = match style {
            LineStyle::Solid => Swatch::Solid,
            LineStyle::Dashed { .. } => Swatch::Dashed,
            LineStyle::Dotted { .. } => Swatch::Dotted,
        };
        out.push(Entry::new(*name, colors::EXTRA[i % colors::EXTRA.len()], swatch));
    }
    out.push(Entry::new(super::capacity_line(&c.gpu.id, c.capacity()), colors::CAPACITY, Swatch::Dashed));
    if current > 0 {
        out.push(Entry::new(
            format!("{} {}", t.current, crate::units::digits(current)),
            colors::CURRENT,
            Swatch::Dashed,
        ));
    }
    if let Some((x, what)) = marked {
        out.push(Entry::new(super::kv(what, crate::units::digits(x)), colors::MARK, Swatch::Marker));
    }
    out
}

/// The fewest GPUs (data-parallel degree) whose point of the GPU curve fits: what `vramscope
/// estimate --dp N` says fits (the allocator replayed on the card), whatever the current degree.
pub fn fewest_that_fit(curve: &[crate::fit::SweepPoint]) -> Option<u64> {
    curve.iter().filter(|p| p.fits).map(|p| p.x).min()
}

/// The hover read-out at knob value `want`: the curve's nearest sampled point, its total (what
/// nvidia-smi shows) and the allocated peak: "at micro-batch 16: 45.2 GiB (allocated 41.0 GiB)".
pub fn hover_text(knob: &str, curve: &[crate::fit::SweepPoint], want: f64) -> Option<String> {
    let p = nearest(curve, want)?;
    let value = super::paren(&super::gib(p.total), format!("{} {}", tr().tl_alive, super::gib(p.peak)));
    Some(
        tr_controls()
            .hover_at
            .replace("{knob}", knob)
            .replace("{x}", &crate::units::digits(p.x))
            .replace("{value}", &value),
    )
}

/// Why the curve is not smooth, where it is not (both are real, not sampling noise): a segment
/// count that leaves `checkpoint_sequential`'s last, un-checkpointed segment longer; or, on the
/// batch and sequence curves, the caching allocator's reserve above an allocated peak that only
/// grows.
fn uneven_caption(c: &Computed, knob: Knob, curve: &[crate::fit::SweepPoint]) -> Option<String> {
    let tc = tr_controls();
    match knob {
        Knob::Segments => {
            let layers = c.scenario.model.transformer().map_or(0, |t| t.num_layers);
            // the first count whose longer last segment raises the peak over the count before
            let jump =
                curve.windows(2).find(|w| w[1].peak > w[0].peak && !layers.is_multiple_of(w[1].x))?[1].x;
            let seg = layers / jump;
            let last = layers - (jump - 1) * seg;
            Some(
                tc.seg_steps_caption
                    .replace("{layers}", &layers.to_string())
                    .replace("{n}", &jump.to_string())
                    .replace("{k}", &(jump - 1).to_string())
                    .replace("{seg}", &seg.to_string())
                    .replace("{last}", &last.to_string()),
            )
        }
        Knob::Batch | Knob::Seq => {
            let dips = curve.windows(2).any(|w| w[1].total < w[0].total);
            let peak_grows = curve.windows(2).all(|w| w[1].peak >= w[0].peak);
            (dips && peak_grows).then(|| tc.reserve_caption.to_owned())
        }
        Knob::Gpus => None,
    }
}

/// The sampled point nearest knob value `want` on the log scale (the curves' axes are logarithmic
/// but for segments, where the values are 1 apart anyway).
fn nearest(curve: &[crate::fit::SweepPoint], want: f64) -> Option<&crate::fit::SweepPoint> {
    let d = |x: u64| ((x.max(1) as f64).ln() - want.max(1.0).ln()).abs();
    curve.iter().min_by(|a, b| d(a.x).total_cmp(&d(b.x)))
}

/// A line beside the total: its legend name, its points, its style.
type NamedLine = (&'static str, Vec<[f64; 2]>, LineStyle);

/// The checkpoint-segment curve's own lines: the forward/backward and optimizer-step peaks (the
/// total is the larger), beside the naive "activations / segments" rule; and which phase sets
/// the peak at the current (else the lowest) point.
fn segment_lines(
    curve: &[crate::fit::SweepPoint],
    to_x: impl Fn(u64) -> f64,
    limit: f64,
    current: u64,
) -> (Vec<NamedLine>, Option<&'static str>) {
    let t = tr();
    let mut extra: Vec<NamedLine> = Vec::new();
    let y = |b: u64| b.min(limit as u64) as f64 / GIB;
    let over = |p: &crate::fit::SweepPoint| p.total - p.peak;
    let fb: Vec<[f64; 2]> =
        curve.iter().map(|p| [to_x(p.x), y(p.phases.forward.max(p.phases.backward) + over(p))]).collect();
    let st: Vec<[f64; 2]> = curve.iter().map(|p| [to_x(p.x), y(p.phases.optimizer_step + over(p))]).collect();
    let base = curve[0];
    let naive: Vec<[f64; 2]> = curve
        .iter()
        .map(|p| {
            let saved = (base.activations as f64 * (1.0 - 1.0 / p.x.max(1) as f64)) as u64;
            [to_x(p.x), y(base.total.saturating_sub(saved))]
        })
        .collect();
    extra.push((t.seg_backward, fb, LineStyle::Solid));
    if curve.iter().any(|p| p.phases.optimizer_step > 0) {
        extra.push((t.seg_step, st, LineStyle::dashed_dense()));
    }
    extra.push((t.seg_naive, naive, LineStyle::dotted_dense()));
    let at = curve.iter().find(|p| p.x == current).or_else(|| curve.iter().min_by_key(|p| p.total));
    let sets = at.map(|p| {
        if p.phases.optimizer_step >= p.phases.forward.max(p.phases.backward) {
            t.seg_sets_step
        } else {
            t.seg_sets_backward
        }
    });
    (extra, sets)
}

/// The edit a click at knob value `want` asks for: the curve's nearest value set.
fn edit_at(
    knob: Knob,
    curve: &[crate::fit::SweepPoint],
    settings: &Settings,
    want: f64,
    image: bool,
) -> Option<Intent> {
    let p = curve.iter().min_by(|a, b| (a.x as f64 - want).abs().total_cmp(&(b.x as f64 - want).abs()))?;
    let mut s = settings.clone();
    let name = match knob {
        Knob::Batch => {
            s.batch = p.x;
            "batch"
        }
        Knob::Seq if image => {
            s.image = Some(crate::model::pixels::ImageSize::square(p.x));
            "image size"
        }
        Knob::Seq => {
            s.seq = p.x;
            "seq"
        }
        Knob::Segments => {
            s.checkpointing = Checkpointing::Segments(p.x);
            "segments"
        }
        Knob::Gpus => {
            s.dp = p.x;
            "dp"
        }
    };
    Some(Intent::Edit { settings: Box::new(s), knob: name })
}

/// Where the last what-if plot was drawn (screen points), in the context's temporary data.
pub fn plot_id() -> egui::Id {
    egui::Id::NULL.with("vramscope-curve-plot")
}

/// The points of the curve as drawn and the axis' top, bytes: the curve up to 2.5x the capacity
/// (beyond that the capacity line would be a sliver; a job above that everywhere is shown up to
/// 1.5x its lowest point), each point above it at the top. A batch or sequence curve grows with
/// its knob and stops once off the chart; a GPU or segment curve falls, and is drawn whole (a
/// 70B job off the chart on one GPU comes down into it on more).
fn drawn(
    curve: &[crate::fit::SweepPoint],
    knob: Knob,
    cap: u64,
    to_x: impl Fn(u64) -> f64,
) -> (Vec<[f64; 2]>, f64) {
    let lowest = curve.iter().map(|p| p.total).min().unwrap_or(0) as f64;
    let limit = (cap as f64 * 2.5).max(lowest * 1.5);
    let mut pts: Vec<[f64; 2]> = Vec::with_capacity(curve.len());
    for p in curve {
        pts.push([to_x(p.x), p.total.min(limit as u64) as f64 / GIB]);
        if p.total as f64 > limit && matches!(knob, Knob::Batch | Knob::Seq) {
            break;
        }
    }
    (pts, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::SweepPoint;

    fn point(x: u64, peak_gib: u64, total_gib: u64, fits: bool) -> SweepPoint {
        let g = 1u64 << 30;
        SweepPoint {
            x,
            peak: peak_gib * g,
            total: total_gib * g,
            phases: Default::default(),
            activations: 0,
            fits,
        }
    }

    /// The read-out is the nearest sampled point's own figures, never the pointer's height.
    #[test]
    fn the_hover_names_the_nearest_point_and_its_value() {
        crate::gui::lang::set(crate::gui::lang::Lang::En);
        let curve = [point(1, 40, 45, true), point(16, 60, 66, true), point(1024, 900, 1234, false)];
        assert_eq!(
            hover_text("micro-batch", &curve, 14.0).as_deref(),
            Some("at micro-batch 16: 66.0 GiB (allocated 60.0 GiB)")
        );
        // 3 is nearer 1 than 16 on the log scale; 100 nearer 16 than 1024
        assert_eq!(nearest(&curve, 3.0).map(|p| p.x), Some(1));
        assert_eq!(nearest(&curve, 100.0).map(|p| p.x), Some(16));
        assert_eq!(
            hover_text("micro-batch", &curve, 5000.0).as_deref(),
            Some("at micro-batch 1,024: 1,234.0 GiB (allocated 900.0 GiB)")
        );
        assert_eq!(hover_text("micro-batch", &[], 3.0), None);
    }

    /// A GPU curve that starts off the chart (70B on one 40 GB card) is drawn whole: a line down
    /// into the chart, not a lone point; a batch curve stops once off it.
    #[test]
    fn a_falling_curve_that_starts_off_the_chart_is_drawn_whole() {
        let g = 1u64 << 30;
        let falling = [
            point(1, 1000, 1100, false),
            point(2, 500, 560, false),
            point(4, 250, 290, false),
            point(8, 120, 140, false),
            point(16, 60, 70, false),
        ];
        let (pts, _) = drawn(&falling, Knob::Gpus, 40 * g, |x| x as f64);
        assert_eq!(pts.len(), 5, "{pts:?}");
        let rising = [
            point(1, 30, 35, true),
            point(2, 60, 70, false),
            point(4, 120, 140, false),
            point(8, 240, 280, false),
        ];
        let (pts, limit) = drawn(&rising, Knob::Batch, 40 * g, |x| x as f64);
        assert_eq!(pts.len(), 3, "stops at the first point over {limit}: {pts:?}");
    }

    /// The fewest GPUs are read off the verdicts, whatever point the current degree added.
    #[test]
    fn the_fewest_gpus_are_the_first_that_fit() {
        let curve = [point(1, 90, 95, false), point(2, 70, 77, true), point(4, 40, 44, true)];
        assert_eq!(fewest_that_fit(&curve), Some(2));
        assert_eq!(fewest_that_fit(&curve[..1]), None);
    }
}
