//! What-if curves: memory against micro-batch, sequence length, checkpoint segments or GPU count,
//! with the capacity line, the current setting and the largest value that fits. Clicking a curve
//! sets that value.

use crate::estimate::Checkpointing;
use crate::fit::Knob;
use crate::gui::derived::Computed;
use crate::gui::intent::Intent;
use crate::gui::state::{Settings, Tab};
use crate::gui::strings::tr;
use crate::units::GIB;
use eframe::egui;
use egui_plot::{HLine, Legend, Line, LineStyle, Plot, PlotPoints, Points, VLine};

/// Draws the curve of `tab`'s knob.
pub fn ui(ui: &mut egui::Ui, c: &Computed, tab: Tab, settings: &Settings) -> Vec<Intent> {
    let t = tr();
    let (knob, label, log_x) = match tab {
        Tab::Batch => (Knob::Batch, t.axis_batch, true),
        Tab::Seq => (Knob::Seq, t.axis_seq, true),
        Tab::Segments => (Knob::Segments, t.axis_segments, false),
        Tab::Gpus | Tab::Compare | Tab::Live | Tab::Options | Tab::Timeline | Tab::Concurrency => {
            (Knob::Gpus, t.axis_gpus, true)
        }
    };
    let curve = c.curve(knob);
    let cap = c.capacity();
    let to_x = |v: u64| if log_x { (v as f64).log2() } else { v as f64 };
    let from_x = |x: f64| if log_x { x.exp2() } else { x };
    let current = match knob {
        Knob::Batch => settings.batch,
        Knob::Seq => settings.seq,
        Knob::Segments => match settings.checkpointing {
            Checkpointing::Segments(n) => n,
            _ => 0,
        },
        Knob::Gpus => settings.dp,
    };
    // the point worth calling out: the largest batch / sequence that fits, the fewest GPUs that
    // fit, the segment count with the lowest peak
    let marked = match knob {
        // the headline's figure, which the curve holds as an exact point
        Knob::Batch => c.max_batch.map(|x| (x, t.largest_fit)),
        Knob::Seq => c.max_seq.map(|x| (x, t.largest_fit)),
        Knob::Gpus => curve.iter().filter(|p| p.total <= cap).map(|p| p.x).min().map(|x| (x, t.fewest_gpus)),
        Knob::Segments => curve.iter().min_by_key(|p| p.total).map(|p| (p.x, t.lowest_peak)),
    };
    super::hint(ui, t.curve_hint);
    // show the curve up to 2.5x the capacity: beyond that the capacity line would be a sliver;
    // a job above that everywhere in the range is shown up to 1.5x its lowest point instead
    let lowest = curve.iter().map(|p| p.total).min().unwrap_or(0) as f64;
    let limit = (cap as f64 * 2.5).max(lowest * 1.5);
    let mut pts: Vec<[f64; 2]> = Vec::with_capacity(curve.len());
    for p in curve {
        pts.push([to_x(p.x), p.total.min(limit as u64) as f64 / GIB]);
        // batch, sequence and GPU curves are monotone: stop once off the chart
        if p.total as f64 > limit && knob != Knob::Segments {
            break;
        }
    }
    let (extra, sets) = if knob == Knob::Segments && !curve.is_empty() {
        segment_lines(curve, to_x, limit, current)
    } else {
        (Vec::new(), None)
    };
    if let Some(s) = sets {
        ui.label(egui::RichText::new(s).strong());
    }
    let mut clicked_x = None;
    let short = ui.available_height() < 200.0;
    let height = super::plot_height(ui);
    let resp = Plot::new(("curve", knob as u8))
        .height(height)
        // the legend over the curve's flat end, not where it climbs: batch and sequence curves
        // rise to the right, segment and GPU curves fall from the left
        .legend(
            Legend::default()
                .position(if matches!(knob, Knob::Segments | Knob::Gpus) {
                    egui_plot::Corner::RightTop
                } else {
                    egui_plot::Corner::LeftTop
                })
                // a short plot (a projector's) keeps most of its height for the curve
                .text_style(if short { egui::TextStyle::Small } else { egui::TextStyle::Body }),
        )
        .x_axis_label(label)
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
        .x_grid_spacer(if log_x { egui_plot::log_grid_spacer(10) } else { Box::new(super::nice_grid()) })
        .x_axis_formatter(move |m, _| {
            let v = from_x(m.value);
            // a value the knob can take (no 2^64 from a mark far outside the sweep)
            if (1.0..1e12).contains(&v) { format!("{}", v.round() as u64) } else { String::new() }
        })
        .show(ui, |p| {
            p.line(Line::new(t.total_per_gpu, PlotPoints::from(pts.clone())).width(2.5));
            for (name, line, style) in &extra {
                p.line(Line::new(*name, PlotPoints::from(line.clone())).width(1.5).style(*style));
            }
            p.hline(
                HLine::new(super::capacity_line(&c.gpu.id, cap), cap as f64 / GIB)
                    .style(LineStyle::dashed_loose())
                    .width(2.0),
            );
            if current > 0 {
                p.vline(VLine::new(t.current, to_x(current)).width(1.5));
            }
            if let Some((x, what)) = marked
                && let Some(pt) = curve.iter().find(|p| p.x == x)
            {
                p.points(
                    Points::new(super::kv(what, x), vec![[to_x(x), pt.total as f64 / GIB]])
                        .radius(6.0)
                        .shape(egui_plot::MarkerShape::Diamond),
                );
            }
            if p.response().clicked() {
                clicked_x = p.pointer_coordinate().map(|c| c.x);
            }
        });
    // where the plot landed, for the layout tests (a projector's curve stays readable)
    let plot_rect = resp.response.rect;
    ui.ctx().data_mut(|d| d.insert_temp(plot_id(), plot_rect));
    clicked_x.and_then(|x| edit_at(knob, curve, settings, from_x(x))).into_iter().collect()
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
fn edit_at(knob: Knob, curve: &[crate::fit::SweepPoint], settings: &Settings, want: f64) -> Option<Intent> {
    let p = curve.iter().min_by(|a, b| (a.x as f64 - want).abs().total_cmp(&(b.x as f64 - want).abs()))?;
    let mut s = settings.clone();
    let name = match knob {
        Knob::Batch => {
            s.batch = p.x;
            "batch"
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
