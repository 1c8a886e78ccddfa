//! The Live tab: GPU memory over time against the prediction — this machine's GPUs from NVML
//! (with the processes on them), or a cluster's from Prometheus (every GPU against its rank's
//! stage, [`super::cluster`]) — the diagnosis of the curve, and an OOM-message explainer.

use super::gib;
use crate::cluster::Layout;
use crate::diagnose::oom::explain_oom_in;
use crate::diagnose::trace::TraceReport;
use crate::gui::derived::Computed;
use crate::gui::live::Live;
use crate::gui::state::LiveSource;
use crate::gui::strings::{tr, tr_cluster};
use crate::gui::strings_live::tr_live;
use crate::monitor::GpuSample;
use crate::units::GIB;
use eframe::egui::{self, RichText};
use egui_plot::{HLine, Line, LineStyle, Plot, PlotPoints};

/// What the Live tab asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveAction {
    /// Start or retry sampling.
    Start,
    /// Stop sampling.
    Stop,
    /// Write the history as CSV.
    Record,
    /// Read the source's last range into the history.
    LoadRange,
    /// Ask for a recording and open it.
    OpenRecording,
}

/// Draws the tab.
pub fn ui(ui: &mut egui::Ui, c: &Computed, live: &mut Live) -> Vec<LiveAction> {
    let t = tr();
    let k = tr_cluster();
    let v = tr_live();
    let out = toolbar(ui, live);
    if let Some(what) = &live.loaded {
        ui.label(RichText::new(k.showing.replace("{what}", what)).weak());
    }
    if let Some(p) = &live.problem {
        ui.label(RichText::new(p).color(ui.visuals().warn_fg_color));
    }
    let layout = if live.is_cluster() { Some(super::cluster::layout(c, live)) } else { None };
    if let Some(w) = layout.as_ref().filter(|_| live.show_worst).and_then(|l| l.rows.get(l.worst?)) {
        (live.host, live.gpu) = (Some(w.gpu.host.clone()), w.gpu.gpu);
        live.show_worst = false;
    }
    let process = live.process.filter(|_| layout.is_none());
    let t0 = live.history.samples.front().map_or(0.0, |s| s.t_s);
    let pts: Vec<[f64; 2]> = live
        .history
        .samples
        .iter()
        .filter_map(|s| {
            let g = s.gpus.iter().find(|g| live.is_shown(g))?;
            let used = match process {
                None => Some(g.used),
                Some(pid) => g.processes.iter().find(|p| p.pid == pid).and_then(|p| p.used),
            }?;
            Some([s.t_s - t0, used as f64 / GIB])
        })
        .collect();
    let shown = live.latest_gpus().iter().find(|g| live.is_shown(g)).cloned();
    let capacity = shown.as_ref().map_or(c.capacity(), |g| g.total);
    // a cluster's GPU against its rank's stage; this machine's against the estimate
    let row = layout.as_ref().and_then(|l| {
        l.rows.iter().find(|r| Some(&r.gpu.host) == live.host.as_ref() && r.gpu.gpu == live.gpu)
    });
    let predicted = row.and_then(|r| r.predicted).unwrap_or(c.estimate.total);
    let rank = row.and_then(|r| r.rank);
    // the verdict and the samples that show it, highlighted on the curve
    let key = (live.host.clone(), live.gpu);
    let report = live.curves().iter().find(|x| x.key == key).and_then(|x| x.report.as_ref().ok()).cloned();
    let evidence: Vec<Vec<[f64; 2]>> = report
        .as_ref()
        .map(|r| {
            r.evidence
                .iter()
                .map(|&(a, b)| pts.get(a..=b.min(pts.len().saturating_sub(1))).unwrap_or(&[]).to_vec())
                .collect()
        })
        .unwrap_or_default();
    // a cluster's GPU as its host numbers it, with the rank that runs on it
    let curve_name = match (&live.host, rank) {
        (Some(h), Some(rank)) => format!(
            "{} {}",
            t.live_measured,
            crate::gui::strings::tr_cluster()
                .gpu_with_rank
                .replace("{gpu}", &v.host_gpu(h, live.gpu))
                .replace("{rank}", &rank.to_string())
        ),
        (Some(h), None) => format!("{} {}", t.live_measured, v.host_gpu(h, live.gpu)),
        (None, _) => t.live_measured.to_owned(),
    };
    let curve = Curve { name: curve_name, pts, evidence, capacity, predicted };
    ui.columns(2, |cols| {
        chart(&mut cols[0], &curve);
        egui::ScrollArea::vertical().id_salt("live-side").show(&mut cols[1], |ui| {
            side(ui, c, live, layout.as_ref(), shown.as_ref(), report.as_ref());
        });
    });
    out
}

/// The source, its settings and the sampling, recording and range buttons.
fn toolbar(ui: &mut egui::Ui, live: &mut Live) -> Vec<LiveAction> {
    let t = tr();
    let k = tr_cluster();
    let mut out = Vec::new();
    ui.horizontal_wrapped(|ui| {
        let before = live.settings.source;
        egui::ComboBox::from_label(k.source)
            .selected_text(match live.settings.source {
                LiveSource::Nvml => k.source_nvml,
                LiveSource::Prometheus => k.source_prometheus,
            })
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut live.settings.source, LiveSource::Nvml, k.source_nvml);
                ui.selectable_value(&mut live.settings.source, LiveSource::Prometheus, k.source_prometheus);
            })
            .response
            .on_hover_text(k.source_tip);
        if live.settings.source != before && live.running() {
            out.push(LiveAction::Stop);
        }
        let prom = live.settings.source == LiveSource::Prometheus;
        if prom {
            ui.label(k.url);
            ui.add(egui::TextEdit::singleline(&mut live.settings.prometheus_url).desired_width(190.0))
                .on_hover_text(k.url_tip);
            ui.label(k.selector);
            ui.add(
                egui::TextEdit::singleline(&mut live.settings.selector)
                    .hint_text("{job=\"train-42\"}")
                    .desired_width(130.0),
            )
            .on_hover_text(k.selector_tip);
        }
        if live.running() {
            if ui.button(t.live_stop).clicked() {
                out.push(LiveAction::Stop);
            }
            let label = if live.paused { t.live_resume } else { t.live_pause };
            if ui.button(label).clicked() {
                live.paused = !live.paused;
            }
        } else if ui
            .button(t.live_start)
            .on_hover_text(if prom { k.start_tip } else { t.live_start_tip })
            .clicked()
        {
            out.push(LiveAction::Start);
        }
        if prom {
            egui::ComboBox::from_id_salt("live-range")
                .width(56.0)
                .selected_text(live.settings.range.as_str())
                .show_ui(ui, |ui| {
                    for r in ["15m", "1h", "6h", "1d", "7d"] {
                        ui.selectable_value(&mut live.settings.range, r.to_owned(), r);
                    }
                })
                .response
                .on_hover_text(k.range);
            if live.loading() {
                ui.spinner();
                ui.label(k.loading);
            } else if ui.button(k.load_range).on_hover_text(k.load_range_tip).clicked() {
                out.push(LiveAction::LoadRange);
            }
        }
        if ui.button(k.open_recording).on_hover_text(k.open_recording_tip).clicked() {
            out.push(LiveAction::OpenRecording);
        }
        if !live.is_cluster() {
            let gpus: Vec<(u32, String)> =
                live.latest_gpus().iter().map(|g| (g.index, format!("{} {}", g.index, g.name))).collect();
            if !gpus.is_empty() {
                egui::ComboBox::from_label(t.live_gpu)
                    .selected_text(
                        gpus.iter().find(|(i, _)| *i == live.gpu).map_or("?".into(), |(_, n)| n.clone()),
                    )
                    .show_ui(ui, |ui| {
                        for (i, n) in gpus {
                            ui.selectable_value(&mut live.gpu, i, n);
                        }
                    });
            }
        }
        if !live.history.samples.is_empty()
            && ui.button(t.live_record).on_hover_text(t.live_record_tip).clicked()
        {
            out.push(LiveAction::Record);
        }
        if live.is_cluster() {
            super::cluster::host_order(ui, live);
        }
    });
    out
}

/// The shown GPU's measured curve (its diagnosis's evidence highlighted) and what it is drawn
/// against.
struct Curve {
    name: String,
    pts: Vec<[f64; 2]>,
    evidence: Vec<Vec<[f64; 2]>>,
    /// The card's memory and the prediction, bytes.
    capacity: u64,
    predicted: u64,
}

/// The curve against the prediction and the card.
fn chart(ui: &mut egui::Ui, curve: &Curve) {
    let t = tr();
    let ui_warn = ui.visuals().warn_fg_color.gamma_multiply(0.6);
    // the legend over the plot, never on its data: every line named with its colour
    use super::legend::{Entry, Swatch, colors};
    let mut entries = vec![Entry::new(curve.name.as_str(), colors::CURVE, Swatch::Solid)];
    if !curve.evidence.is_empty() {
        entries.push(Entry::new(t.live_evidence, ui_warn, Swatch::Solid));
    }
    entries.push(Entry::new(t.live_predicted, colors::EXTRA[0], Swatch::Solid));
    entries.push(Entry::new(t.capacity, colors::CAPACITY, Swatch::Dashed));
    super::legend::row(ui, egui::Id::NULL.with("vramscope-live-legend"), &entries, "", &[]);
    Plot::new("live")
        .height(super::plot_height(ui) - 10.0)
        .x_axis_label("s")
        .y_axis_label("GiB")
        .include_y(0.0)
        .include_y(curve.capacity as f64 / GIB * 1.05)
        .show(ui, |p| {
            p.line(
                Line::new(curve.name.as_str(), PlotPoints::from(curve.pts.clone()))
                    .width(2.0)
                    .color(colors::CURVE),
            );
            for seg in &curve.evidence {
                p.line(Line::new(t.live_evidence, PlotPoints::from(seg.clone())).width(5.0).color(ui_warn));
            }
            p.hline(
                HLine::new(t.live_predicted, curve.predicted as f64 / GIB).width(1.5).color(colors::EXTRA[0]),
            );
            p.hline(
                HLine::new(t.capacity, curve.capacity as f64 / GIB)
                    .style(LineStyle::dashed_loose())
                    .color(colors::CAPACITY)
                    .width(1.5),
            );
        });
}

/// Beside the chart: the cluster view or this GPU's processes, the curve's verdict, the OOM box.
fn side(
    ui: &mut egui::Ui,
    c: &Computed,
    live: &mut Live,
    layout: Option<&Layout>,
    shown: Option<&GpuSample>,
    report: Option<&TraceReport>,
) {
    let t = tr();
    let v = tr_live();
    let lang = crate::gui::lang::current();
    if let Some(l) = layout {
        super::cluster::ui(ui, c, live, l);
    } else if let Some(g) = shown {
        let usage = v
            .gpu_usage
            .replace("{name}", &g.name)
            .replace("{used}", &gib(g.used))
            .replace("{total}", &gib(g.total));
        ui.label(RichText::new(usage).strong());
        egui::Grid::new("procs").striped(true).show(ui, |ui| {
            ui.label(v.col_pid);
            ui.label(t.live_process);
            ui.label(t.live_memory);
            ui.end_row();
            ui.label("");
            ui.radio_value(&mut live.process, None, t.live_whole_gpu);
            ui.label(gib(g.used));
            ui.end_row();
            for p in &g.processes {
                ui.label(p.pid.to_string());
                ui.radio_value(&mut live.process, Some(p.pid), format!("{} ({})", p.name, p.kind));
                ui.label(p.used.map_or("?".into(), gib));
                ui.end_row();
            }
        });
    }
    if let Some(r) = report.filter(|_| layout.is_none()) {
        ui.add_space(6.0);
        let line =
            v.verdict_line.replace("{label}", t.live_verdict).replace("{verdict}", r.verdict.label_in(lang));
        ui.label(RichText::new(line).strong());
        for a in &r.advice {
            ui.add(egui::Label::new(a.as_str()).wrap());
        }
    }
    oom_box(ui, c, live);
}

/// The OOM paste box: the message explained and the fixes ranked for the scenario.
fn oom_box(ui: &mut egui::Ui, c: &Computed, live: &mut Live) {
    let t = tr();
    let v = tr_live();
    let lang = crate::gui::lang::current();
    ui.add_space(8.0);
    ui.label(RichText::new(t.oom_title).strong());
    ui.add(egui::TextEdit::multiline(&mut live.oom_text).hint_text(t.oom_hint).desired_rows(3))
        .on_hover_text(t.oom_hint);
    if !live.oom_text.trim().is_empty() {
        match explain_oom_in(&live.oom_text, lang) {
            Ok(r) => {
                for line in r.explanation.iter().chain(r.fixes.iter()) {
                    ui.add(egui::Label::new(format!("• {line}")).wrap());
                }
                ui.label(RichText::new(t.oom_ranked).strong());
                for f in crate::diagnose::fixes::rank_fixes_in(&c.scenario, lang).iter().take(6) {
                    let line = v
                        .fix_line
                        .replace("{change}", &f.change)
                        .replace("{saves}", &gib(f.saves))
                        .replace("{total}", &gib(f.total_after));
                    ui.add(egui::Label::new(line).wrap());
                }
            }
            Err(e) => {
                ui.label(e.message_in(lang));
            }
        }
    }
}
