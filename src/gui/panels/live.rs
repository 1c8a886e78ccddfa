//! The Live tab: GPU memory from NVML over time against the prediction, the processes on the GPU,
//! the diagnosis of the curve, and an OOM-message explainer.

use super::gib;
use crate::diagnose::{explain_oom, trace};
use crate::gui::derived::Computed;
use crate::gui::live::Live;
use crate::gui::strings::tr;
use crate::units::GIB;
use eframe::egui::{self, RichText};
use egui_plot::{HLine, Legend, Line, LineStyle, Plot, PlotPoints};

/// What the Live tab asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveAction {
    /// Start or retry sampling.
    Start,
    /// Stop sampling.
    Stop,
    /// Write the history as CSV.
    Record,
}

/// Draws the tab.
pub fn ui(ui: &mut egui::Ui, c: &Computed, live: &mut Live) -> Vec<LiveAction> {
    let t = tr();
    let mut out = Vec::new();
    ui.horizontal(|ui| {
        if live.running() {
            if ui.button(t.live_stop).clicked() {
                out.push(LiveAction::Stop);
            }
            let label = if live.paused { t.live_resume } else { t.live_pause };
            if ui.button(label).clicked() {
                live.paused = !live.paused;
            }
        } else if ui.button(t.live_start).on_hover_text(t.live_start_tip).clicked() {
            out.push(LiveAction::Start);
        }
        let gpus: Vec<(u32, String)> = live
            .history
            .samples
            .back()
            .map(|s| s.gpus.iter().map(|g| (g.index, format!("{} {}", g.index, g.name))).collect())
            .unwrap_or_default();
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
        if !live.history.samples.is_empty()
            && ui.button(t.live_record).on_hover_text(t.live_record_tip).clicked()
        {
            out.push(LiveAction::Record);
        }
    });
    if let Some(p) = &live.problem {
        ui.label(RichText::new(p).color(ui.visuals().warn_fg_color));
    }
    let gpu = live.gpu;
    let process = live.process;
    let pts: Vec<[f64; 2]> = live
        .history
        .samples
        .iter()
        .filter_map(|s| {
            let g = s.gpus.iter().find(|g| g.index == gpu)?;
            let used = match process {
                None => Some(g.used),
                Some(pid) => g.processes.iter().find(|p| p.pid == pid).and_then(|p| p.used),
            }?;
            Some([s.t_s, used as f64 / GIB])
        })
        .collect();
    let capacity = live
        .history
        .samples
        .back()
        .and_then(|s| s.gpus.iter().find(|g| g.index == gpu))
        .map_or(c.capacity(), |g| g.total);
    // the verdict and the samples that show it, highlighted on the curve
    let samples: Vec<trace::Sample> = live
        .history
        .samples
        .iter()
        .flat_map(|s| {
            s.gpus.iter().map(move |g| trace::Sample {
                t_s: s.t_s,
                gpu: g.index,
                used: g.used,
                total: g.total,
            })
        })
        .collect();
    let report = trace::classify(&samples, Some(gpu)).ok();
    let evidence: Vec<Vec<[f64; 2]>> = report
        .as_ref()
        .map(|r| {
            r.evidence
                .iter()
                .map(|&(a, b)| pts.get(a..=b.min(pts.len().saturating_sub(1))).unwrap_or(&[]).to_vec())
                .collect()
        })
        .unwrap_or_default();
    ui.columns(2, |cols| {
        let ui = &mut cols[0];
        let ui_warn = ui.visuals().warn_fg_color.gamma_multiply(0.6);
        Plot::new("live")
            .legend(Legend::default())
            .height((ui.available_height() - 10.0).max(120.0))
            .x_axis_label("s")
            .y_axis_label("GiB")
            .include_y(0.0)
            .include_y(capacity as f64 / GIB * 1.05)
            .show(ui, |p| {
                p.line(Line::new(t.live_measured, PlotPoints::from(pts.clone())).width(2.0));
                for seg in &evidence {
                    p.line(
                        Line::new(t.live_evidence, PlotPoints::from(seg.clone())).width(5.0).color(ui_warn),
                    );
                }
                p.hline(HLine::new(t.live_predicted, c.estimate.total as f64 / GIB).width(1.5));
                p.hline(
                    HLine::new(t.capacity, capacity as f64 / GIB).style(LineStyle::dashed_loose()).width(1.5),
                );
            });
        let ui = &mut cols[1];
        egui::ScrollArea::vertical().id_salt("live-side").show(ui, |ui| {
            if let Some(g) = live.history.samples.back().and_then(|s| s.gpus.iter().find(|g| g.index == gpu))
            {
                ui.label(RichText::new(format!("{}: {} of {}", g.name, gib(g.used), gib(g.total))).strong());
                let procs = g.processes.clone();
                egui::Grid::new("procs").striped(true).show(ui, |ui| {
                    ui.label("pid");
                    ui.label(t.live_process);
                    ui.label(t.live_memory);
                    ui.end_row();
                    ui.label("");
                    ui.radio_value(&mut live.process, None, t.live_whole_gpu);
                    ui.label(gib(g.used));
                    ui.end_row();
                    for p in &procs {
                        ui.label(p.pid.to_string());
                        ui.radio_value(&mut live.process, Some(p.pid), format!("{} ({})", p.name, p.kind));
                        ui.label(p.used.map_or("?".into(), gib));
                        ui.end_row();
                    }
                });
            }
            if let Some(r) = &report {
                ui.add_space(6.0);
                ui.label(RichText::new(format!("{}: {:?}", t.live_verdict, r.verdict)).strong());
                for a in &r.advice {
                    ui.add(egui::Label::new(a.as_str()).wrap());
                }
            }
            ui.add_space(8.0);
            ui.label(RichText::new(t.oom_title).strong());
            ui.add(egui::TextEdit::multiline(&mut live.oom_text).hint_text(t.oom_hint).desired_rows(3))
                .on_hover_text(t.oom_hint);
            if !live.oom_text.trim().is_empty() {
                match explain_oom(&live.oom_text) {
                    Ok(r) => {
                        for line in r.explanation.iter().chain(r.fixes.iter()) {
                            ui.add(egui::Label::new(format!("• {line}")).wrap());
                        }
                        ui.label(RichText::new(t.oom_ranked).strong());
                        for f in crate::diagnose::fixes::rank_fixes(&c.scenario).iter().take(6) {
                            ui.add(
                                egui::Label::new(format!(
                                    "• {}: saves {}, total {}",
                                    f.change,
                                    gib(f.saves),
                                    gib(f.total_after)
                                ))
                                .wrap(),
                            );
                        }
                    }
                    Err(e) => {
                        ui.label(e.to_string());
                    }
                }
            }
        });
    });
    out
}
