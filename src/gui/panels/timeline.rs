//! The Timeline tab: what is alive over one step — forward op by op, backward block by block
//! with checkpoint recomputes, the optimizer step — as a stacked area, with the capacity PyTorch
//! can allocate, the peak marked and each event named on hover. Clicking an event shows that
//! moment in "Why this much?".

use super::gib;
use crate::estimate::Phase;
use crate::estimate::step::{Event, Timeline};
use crate::explain::Component;
use crate::gui::derived::Computed;
use crate::gui::intent::Intent;
use crate::gui::palette;
use crate::gui::snapshots::{self, Overlay, Snapshots};
use crate::gui::strings::tr;
use crate::units::GIB;
use eframe::egui::{self, RichText};
use egui_plot::{FilledArea, HLine, LineStyle, Plot, PlotPoints, Points, Text, VLine};

/// Stacking order, bottom to top.
const STACK: [Component; 7] = [
    Component::Parameters,
    Component::OptimizerStates,
    Component::Gradients,
    Component::Activations,
    Component::KvCache,
    Component::Temporaries,
    Component::ZeroBuckets,
];

/// A stacked area: its component, and its lower and upper edge at every step point (GiB).
type Layer = (Component, Vec<f64>, Vec<f64>);

fn part(e: &Event, c: Component) -> u64 {
    let a = &e.alive;
    match c {
        Component::Parameters => a.parameters,
        Component::Gradients => a.gradients,
        Component::OptimizerStates => a.optimizer_states,
        Component::Activations => a.activations,
        Component::KvCache => a.kv_cache,
        Component::Temporaries => a.temporaries,
        Component::ZeroBuckets => a.zero_buckets,
        Component::Overhead => 0,
    }
}

/// "frees 0.50 GiB of activations, allocates 0.50 GiB of gradients" between two events.
pub fn change(prev: Option<&Event>, e: &Event) -> String {
    let t = tr();
    let Some(p) = prev else { return String::new() };
    let mut parts = Vec::new();
    for c in STACK {
        let (a, b) = (part(p, c), part(e, c));
        if b > a {
            parts.push(format!(
                "{} {} {} {}",
                t.tl_allocates,
                gib(b - a),
                t.tl_of,
                super::breakdown::name(c)
            ));
        } else if a > b {
            parts.push(format!("{} {} {} {}", t.tl_frees, gib(a - b), t.tl_of, super::breakdown::name(c)));
        }
    }
    parts.join(", ")
}

fn phase_name(p: Phase) -> &'static str {
    let t = tr();
    match p {
        Phase::Forward => t.tl_forward,
        Phase::Backward => t.tl_backward,
        Phase::OptimizerStep => t.tl_step,
    }
}

/// Draws the timeline with the measured snapshots over it; returns what the user asked for.
/// `lesson`: a lesson is about what is alive, so the axis is scaled to the step's memory (the
/// card's line, far above a small model's step, is named in the key instead) and the
/// snapshot row gives its room to the plot.
pub fn ui(
    ui: &mut egui::Ui,
    c: &Computed,
    selected: Option<usize>,
    snaps: &Snapshots,
    path: &mut String,
    lesson: bool,
) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    let Some(tl) = c.timeline.as_ref() else {
        ui.label(t.tl_none);
        return out;
    };
    let ev = &tl.events;
    if ev.is_empty() {
        ui.label(t.tl_none);
        return out;
    }
    // what PyTorch's allocator may reserve: the card less the context and NCCL's buffers
    let usable = c.capacity().saturating_sub(c.outside_allocator());
    let peak = tl.peak().copied();
    out.extend(head_rows(ui, c, peak.as_ref(), selected.and_then(|i| ev.get(i)), snaps, path, lesson));
    let starts = std::sync::Arc::new(event_starts(ev));
    let index_at = {
        let starts = starts.clone();
        move |x: f64| {
            starts.partition_point(|s| *s <= x).saturating_sub(1).min(starts.len().saturating_sub(2))
        }
    };
    let xs: Vec<f64> = (0..ev.len()).flat_map(|i| [starts[i], starts[i + 1]]).collect();
    let reserved = reserved_line(c, ev, &starts);
    let (layers, lower) = stacked_layers(ev);
    let step_top = lower.iter().copied().chain(reserved.iter().map(|q| q[1])).fold(0.0, f64::max);
    // the card's line is drawn where it is inside the axis; a lesson's axis ends over the step
    let card_shown = !lesson || usable as f64 / GIB <= step_top * 1.12;
    colour_key(ui, c, &layers, card_shown.then_some(usable));
    let measured: Vec<(String, Vec<[f64; 2]>)> = snaps
        .loaded
        .iter()
        .map(|o| {
            let pts = snapshots::aligned(o, tl, &starts).into_iter().map(|[x, y]| [x, y / GIB]).collect();
            (format!("{} {}", t.tl_measured, o.name), pts)
        })
        .collect();
    for o in &snaps.loaded {
        ui.label(RichText::new(measured_vs_predicted(o, tl)).strong());
    }
    let top = lower
        .iter()
        .copied()
        .chain(measured.iter().flat_map(|(_, p)| p.iter().map(|q| q[1])))
        .chain(reserved.iter().map(|q| q[1]))
        .fold(0.0, f64::max)
        .max(if card_shown { usable as f64 / GIB } else { 0.0 });
    let spans = tl.phase_spans();
    let blocks: Vec<Option<u64>> = ev.iter().map(|e| e.block).collect();
    let events = ev.clone();
    let reserved_at: Vec<u64> = c.reserved.as_ref().map(|r| r.per_event.clone()).unwrap_or_default();
    let (at_tick, at_hover, at_click) = (index_at.clone(), index_at.clone(), index_at);
    let mut clicked = None;
    let drawing = Drawing {
        xs,
        starts: starts.clone(),
        layers,
        reserved,
        measured,
        spans,
        top,
        usable: card_shown.then_some(usable),
        peak,
        peak_index: tl.peak_index,
        selected,
        events: ev.len(),
        gpu_id: &c.gpu.id,
    };
    let height = super::plot_height(ui);
    Plot::new("timeline")
        .show_background(false)
        .height(height)
        .x_axis_label(t.tl_x_axis)
        .y_axis_label("GiB")
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .include_y(0.0)
        .include_y(top * 1.12)
        .y_grid_spacer(super::nice_grid())
        .x_axis_formatter(move |m, _| match blocks.get(at_tick(m.value)) {
            Some(Some(b)) if m.value >= 0.0 => format!("b{b}"),
            _ => String::new(),
        })
        .label_formatter(move |pos| {
            let x = match pos {
                egui_plot::HoverPosition::NearDataPoint { position, .. } => position.x,
                egui_plot::HoverPosition::Elsewhere { position } => position.x,
            };
            let i = at_hover(x);
            let e = events.get(i)?;
            let delta = change(i.checked_sub(1).and_then(|j| events.get(j)), e);
            let reserved =
                reserved_at.get(i).map_or_else(String::new, |r| format!(" · {} {}", gib(*r), t.tl_reserved));
            Some(format!(
                "#{i} {}: {}\n{} {}{reserved}{}",
                phase_name(e.phase),
                e.label_in(crate::gui::lang::current()),
                gib(e.alive.total()),
                t.tl_alive,
                if delta.is_empty() { String::new() } else { format!("\n{delta}") }
            ))
        })
        .show(ui, |p| {
            draw(p, &drawing);
            if p.response().clicked() {
                clicked = p.pointer_coordinate().map(|c| c.x);
            }
        });
    if let Some(x) = clicked {
        out.push(Intent::SelectEvent(Some(at_click(x))));
    }
    out
}

/// The rows over the plot: the peak, and (outside a lesson) the hint and the snapshot row.
fn head_rows(
    ui: &mut egui::Ui,
    c: &Computed,
    peak: Option<&Event>,
    selected: Option<&Event>,
    snaps: &Snapshots,
    path: &mut String,
    lesson: bool,
) -> Vec<Intent> {
    if let Some(p) = peak {
        peak_header(ui, c, p, selected);
    }
    if lesson {
        return Vec::new();
    }
    super::hint(ui, tr().tl_hint);
    snapshot_row(ui, snaps, path)
}

/// The timeline's peak as what it is, allocated bytes ("peak 16.1 GiB allocated — …", with the
/// selected moment's), and why the headline's total (what nvidia-smi shows) is larger.
fn peak_header(ui: &mut egui::Ui, c: &Computed, p: &Event, selected: Option<&Event>) {
    let tc = crate::gui::strings::tr_controls();
    let mut head = format!(
        "{} — {}",
        tc.tl_peak_allocated.replace("{gib}", &gib(p.alive.total())),
        p.label_in(crate::gui::lang::current())
    );
    if let Some(e) = selected {
        head += &format!(" · {}", tc.tl_selected_allocated.replace("{gib}", &gib(e.alive.total())));
    }
    let note =
        tc.tl_vs_headline.replace("{peak}", &gib(p.alive.total())).replace("{total}", &gib(c.estimate.total));
    // one line, so the plot keeps its height; the whole story on hover
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(head).strong()).on_hover_text(&note);
        ui.label(RichText::new(tc.tl_headline_is.replace("{total}", &gib(c.estimate.total))).weak())
            .on_hover_text(&note);
    });
}

/// Where each event starts on the x axis (and where the last ends): each holds until the next
/// one (a step shape); the optimizer step's few events get enough width to be seen next to
/// hundreds of per-op events.
fn event_starts(ev: &[Event]) -> Vec<f64> {
    let wide = (ev.len() as f64 / 30.0).max(1.0);
    let mut starts = Vec::with_capacity(ev.len() + 1);
    let mut x = 0.0;
    for e in ev {
        starts.push(x);
        x += if e.phase == Phase::OptimizerStep { wide } else { 1.0 };
    }
    starts.push(x);
    starts
}

/// The replayed allocator's reserved bytes after each event, as a second line (empty without a
/// replay).
fn reserved_line(c: &Computed, ev: &[Event], starts: &[f64]) -> Vec<[f64; 2]> {
    c.reserved
        .as_ref()
        .filter(|r| r.per_event.len() == ev.len())
        .map(|r| {
            (0..ev.len())
                .flat_map(|i| {
                    [[starts[i], r.per_event[i] as f64 / GIB], [starts[i + 1], r.per_event[i] as f64 / GIB]]
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The stacked areas, bottom to top (each component's lower and upper edge at every step
/// point), and the stack's top.
fn stacked_layers(ev: &[Event]) -> (Vec<Layer>, Vec<f64>) {
    let mut lower = vec![0.0f64; 2 * ev.len()];
    let mut layers: Vec<Layer> = Vec::with_capacity(STACK.len());
    for comp in STACK {
        if ev.iter().all(|e| part(e, comp) == 0) {
            continue;
        }
        let upper: Vec<f64> =
            ev.iter().flat_map(|e| [part(e, comp) as f64 / GIB; 2]).zip(&lower).map(|(v, l)| l + v).collect();
        layers.push((comp, lower.clone(), upper.clone()));
        lower = upper;
    }
    (layers, lower)
}

/// The colour key (the chart above uses the same colours); `usable`: the card's line, drawn
/// (`None`: above the axis, named with its figure).
fn colour_key(ui: &mut egui::Ui, c: &Computed, layers: &[Layer], usable: Option<u64>) {
    let t = tr();
    ui.horizontal_wrapped(|ui| {
        for (comp, _, _) in layers {
            let (rect, _) = ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
            ui.painter().rect_filled(rect, 2.0, palette::color(*comp));
            ui.label(super::breakdown::name(*comp));
            ui.add_space(6.0);
        }
        if c.reserved.is_some() {
            let (rect, _) = ui.allocate_exact_size(egui::vec2(16.0, 12.0), egui::Sense::hover());
            let y = rect.center().y;
            ui.painter().line_segment(
                [egui::pos2(rect.left(), y), egui::pos2(rect.right(), y)],
                egui::Stroke::new(2.0, palette::color(Component::Overhead)),
            );
            ui.label(t.tl_reserved);
            ui.add_space(6.0);
        }
        match usable {
            Some(_) => ui.label(RichText::new(format!("- - {} {}", c.gpu.id, t.tl_usable)).weak()),
            None => {
                let all = c.capacity().saturating_sub(c.outside_allocator());
                let text = t.tl_usable_above.replace("{gpu}", &c.gpu.id).replace("{gib}", &gib(all));
                ui.label(RichText::new(text).weak())
            }
        };
    });
}

/// What the plot draws, in plot units (x: the events' positions, y: GiB).
struct Drawing<'a> {
    xs: Vec<f64>,
    starts: std::sync::Arc<Vec<f64>>,
    layers: Vec<Layer>,
    reserved: Vec<[f64; 2]>,
    measured: Vec<(String, Vec<[f64; 2]>)>,
    spans: Vec<(Phase, std::ops::Range<usize>)>,
    top: f64,
    /// What PyTorch's allocator may reserve, bytes (`None`: above the axis).
    usable: Option<u64>,
    peak: Option<Event>,
    peak_index: usize,
    selected: Option<usize>,
    /// Events in the step.
    events: usize,
    gpu_id: &'a str,
}

/// The stacked areas, the phases, the reserved and measured lines, the usable memory, the peak
/// and the selected event.
fn draw(p: &mut egui_plot::PlotUi<'_>, d: &Drawing<'_>) {
    let t = tr();
    let starts = &d.starts;
    for (comp, lo, hi) in &d.layers {
        p.add(
            FilledArea::new(super::breakdown::name(*comp), &d.xs, lo, hi)
                .fill_color(palette::color(*comp).gamma_multiply(0.85)),
        );
    }
    for (phase, r) in &d.spans {
        if r.start > 0 {
            p.vline(VLine::new("", starts[r.start]).color(egui::Color32::GRAY).width(1.0));
        }
        let mid = (starts[r.start] + starts[r.end]) / 2.0;
        p.text(Text::new("", [mid, d.top * 1.07].into(), RichText::new(phase_name(*phase)).strong()));
    }
    if !d.reserved.is_empty() {
        p.line(
            egui_plot::Line::new(t.tl_reserved, PlotPoints::from(d.reserved.clone()))
                .color(palette::color(Component::Overhead))
                .style(LineStyle::dashed_dense())
                .width(2.0),
        );
    }
    for (i, (name, pts)) in d.measured.iter().enumerate() {
        let color = if i == 0 { egui::Color32::WHITE } else { egui::Color32::from_rgb(240, 228, 66) };
        p.line(egui_plot::Line::new(name.as_str(), PlotPoints::from(pts.clone())).color(color).width(1.5));
    }
    if let Some(usable) = d.usable {
        p.hline(
            HLine::new(format!("{} {}", d.gpu_id, t.tl_usable), usable as f64 / GIB)
                .color(egui::Color32::from_rgb(200, 40, 30))
                .style(LineStyle::dashed_loose())
                .width(2.0),
        );
    }
    if let Some(pk) = &d.peak {
        let y = pk.alive.total() as f64 / GIB;
        let px = (starts[d.peak_index] + starts[d.peak_index + 1]) / 2.0;
        p.points(
            Points::new(
                crate::gui::strings::tr_controls().tl_peak_allocated.replace("{gib}", &gib(pk.alive.total())),
                vec![[px, y]],
            )
            .radius(6.0)
            .color(egui::Color32::WHITE)
            .shape(egui_plot::MarkerShape::Diamond),
        );
    }
    if let Some(i) = d.selected.filter(|i| *i < d.events) {
        p.vline(VLine::new(t.tl_selected, (starts[i] + starts[i + 1]) / 2.0).width(2.0));
    }
}

/// The row that opens snapshots (path field, Open, Clear) and says what is being read.
fn snapshot_row(ui: &mut egui::Ui, snaps: &Snapshots, path: &mut String) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    ui.horizontal_wrapped(|ui| {
        ui.label(t.tl_snapshot);
        ui.add(egui::TextEdit::singleline(path).hint_text("/path/to/snapshot.pickle").desired_width(260.0));
        if ui.button(t.tl_open_snapshot).on_hover_text(t.tl_snapshot_tip).clicked() && !path.trim().is_empty()
        {
            out.push(Intent::OpenSnapshot(path.trim().to_owned()));
        }
        if !snaps.loaded.is_empty() && ui.button(t.tl_clear_snapshots).clicked() {
            out.push(Intent::ClearSnapshots);
        }
        if let Some(p) = snaps.pending_text() {
            ui.spinner();
            ui.label(format!("{} {p}", t.tl_reading));
        }
        if let Some(e) = &snaps.problem {
            ui.colored_label(palette::verdict(false), e);
        }
    });
    out
}

/// "trace.pickle: measured step peak 12.3 GiB vs predicted 12.1 GiB (+1.6 %) · forward …".
fn measured_vs_predicted(o: &Overlay, tl: &Timeline) -> String {
    let t = tr();
    let pct = |m: u64, p: u64| if p > 0 { 100.0 * (m as f64 - p as f64) / p as f64 } else { 0.0 };
    let pred = tl.estimate.peak_allocated;
    let m = snapshots::step_peak(o);
    let mut s = format!(
        "{}: {} {} {} {} ({} %)",
        o.name,
        t.tl_measured_peak,
        gib(m),
        t.tl_vs_predicted,
        gib(pred),
        super::signed(pct(m, pred), 1)
    );
    for (phase, bytes) in snapshots::phase_peaks(o) {
        let p = tl.estimate.phase_peaks.of(phase);
        let d = super::signed(pct(bytes, p), 1);
        s += &format!(" · {} {} / {} ({d} %)", phase_name(phase), gib(bytes), gib(p));
    }
    s
}

/// The peak of the timeline as text (for the tab's accessibility label and tests).
pub fn peak_text(tl: &Timeline) -> String {
    tl.peak().map_or_else(String::new, |p| {
        format!("{} {}", gib(p.alive.total()), p.label_in(crate::gui::lang::current()))
    })
}
