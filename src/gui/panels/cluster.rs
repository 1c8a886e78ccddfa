//! The Live tab's cluster view: every GPU of the cluster by host, the rank that runs on it and its
//! pipeline stage, measured against that stage's prediction, its curve's diagnosis; the most
//! loaded GPU against the plan's most loaded stage. The mapping is `crate::cluster`'s.

use super::gib;
use crate::cluster::{Layout, Measured};
use crate::gui::derived::Computed;
use crate::gui::live::{CurveGap, GpuCurve, Live};
use crate::gui::strings::tr_cluster;
use crate::gui::strings_live::tr_live;
use eframe::egui::{self, RichText};

/// The cluster's latest snapshot mapped to the plan's ranks.
pub fn layout(c: &Computed, live: &mut Live) -> Layout {
    // every GPU seen over the samples, a stopped one with its last sample
    let measured: Vec<Measured> = live
        .curves()
        .iter()
        .map(|x| Measured {
            host: x.last.host.clone().unwrap_or_default(),
            gpu: x.last.index,
            used: x.last.used,
            peak: x.peak.max(x.last.used),
            total: x.last.total,
        })
        .collect();
    crate::cluster::map(&measured, &live.settings.host_order, &c.scenario.parallel, c.stage_totals())
}

/// "+4.2 %".
fn percent(e: f64) -> String {
    format!("{} %", super::signed(100.0 * e, 1))
}

/// The command that prints every stage's prediction.
fn command(c: &Computed) -> String {
    format!(
        "vramscope estimate --model {} {} --stages",
        crate::flags::model_arg(&c.scenario.model),
        crate::flags::line(&crate::flags::flags(&c.scenario, &c.gpu))
    )
}

/// The host-order field (in the Live tab's source bar).
pub fn host_order(ui: &mut egui::Ui, live: &mut Live) {
    let k = tr_cluster();
    ui.label(k.host_order).on_hover_text(k.host_order_tip);
    ui.add(
        egui::TextEdit::singleline(&mut live.settings.host_order)
            .hint_text(k.host_order_hint)
            .desired_width(220.0),
    )
    .on_hover_text(k.host_order_tip);
}

/// Draws the cluster's rows into the Live tab's side column.
pub fn ui(ui: &mut egui::Ui, c: &Computed, live: &mut Live, l: &Layout) {
    worst_lines(ui, c, l);
    job_notes(ui, c, l);
    let curves = live.curves().to_vec();
    verdict_lines(ui, l, &curves);
    ui.add_space(4.0);
    table(ui, c, live, l, &curves);
}

/// The most loaded GPU against the plan's most loaded stage.
fn worst_lines(ui: &mut egui::Ui, c: &Computed, l: &Layout) {
    let k = tr_cluster();
    let v = tr_live();
    let warn = ui.visuals().warn_fg_color;
    if let Some(w) = l.worst.and_then(|i| l.rows.get(i)) {
        let stage = w.stage.unwrap_or(0);
        let line = k
            .worst
            .replace("{gpu}", &v.host_gpu(&w.gpu.host, w.gpu.gpu))
            .replace("{rank}", &w.rank.unwrap_or(0).to_string())
            .replace("{stage}", &stage.to_string())
            .replace("{used}", &gib(w.gpu.peak))
            .replace("{total}", &gib(w.gpu.total))
            .replace("{predicted}", &w.predicted.map_or("?".into(), gib))
            .replace("{error}", &w.error().map_or("?".into(), percent));
        ui.add(egui::Label::new(RichText::new(line).strong()).wrap());
        if let Some(ws) = l.worst_stage {
            let pred = c.stage_totals().get(ws as usize).copied().map_or("?".into(), gib);
            let line = if ws == stage {
                k.plan_worst_same.replace("{stage}", &ws.to_string()).replace("{predicted}", &pred)
            } else {
                k.plan_worst_other
                    .replace("{stage}", &ws.to_string())
                    .replace("{predicted}", &pred)
                    .replace("{measured}", &stage.to_string())
            };
            let text = RichText::new(line);
            ui.add(egui::Label::new(if ws == stage { text } else { text.color(warn) }).wrap());
        }
    }
}

/// Hosts the plan does not know, ranks with no GPU, GPUs outside the job.
fn job_notes(ui: &mut egui::Ui, c: &Computed, l: &Layout) {
    let k = tr_cluster();
    let v = tr_live();
    let warn = ui.visuals().warn_fg_color;
    if !l.unknown_hosts.is_empty() {
        ui.label(RichText::new(k.unknown_hosts.replace("{hosts}", &v.list(&l.unknown_hosts))).color(warn));
    }
    if l.missing_ranks > 0 {
        let line = k
            .missing_ranks
            .replace("{n}", &l.missing_ranks.to_string())
            .replace("{world}", &c.scenario.parallel.world().to_string());
        ui.label(RichText::new(line).color(warn));
    }
    let outside: Vec<String> =
        l.rows.iter().filter(|r| r.rank.is_none()).map(|r| v.host_gpu(&r.gpu.host, r.gpu.gpu)).collect();
    if !outside.is_empty() {
        let line = k
            .outside_job
            .replace("{n}", &outside.len().to_string())
            .replace("{world}", &c.scenario.parallel.world().to_string())
            .replace("{list}", &v.list(&outside));
        ui.add(egui::Label::new(RichText::new(line).weak()).wrap());
    }
}

/// How many GPUs' curves fail, and which processes stopped.
fn verdict_lines(ui: &mut egui::Ui, l: &Layout, curves: &[GpuCurve]) {
    let k = tr_cluster();
    let v = tr_live();
    let warn = ui.visuals().warn_fg_color;
    let err = ui.visuals().error_fg_color;
    let curve_of =
        |host: &str, gpu: u32| curves.iter().find(|x| x.key.0.as_deref() == Some(host) && x.key.1 == gpu);
    let verdict_of = |host: &str, gpu: u32| curve_of(host, gpu).map(|x| &x.report);
    let named = |keep: fn(crate::diagnose::trace::Verdict) -> bool| -> Vec<String> {
        l.rows
            .iter()
            .filter(|r| {
                verdict_of(&r.gpu.host, r.gpu.gpu).is_some_and(|v| v.as_ref().is_ok_and(|t| keep(t.verdict)))
            })
            .map(|r| v.host_gpu(&r.gpu.host, r.gpu.gpu))
            .collect()
    };
    let (failing, near) = (named(|v| v.fails()), named(|v| v.warns()));
    let judged =
        l.rows.iter().filter(|r| verdict_of(&r.gpu.host, r.gpu.gpu).is_some_and(Result::is_ok)).count();
    if !near.is_empty() {
        let line = k
            .near_line
            .replace("{n}", &near.len().to_string())
            .replace("{m}", &judged.to_string())
            .replace("{list}", &v.list(&near));
        ui.add(egui::Label::new(RichText::new(line).color(warn)).wrap());
    }
    // "all healthy" is not said when some sit near the card
    if judged > 0 && (near.is_empty() || !failing.is_empty()) {
        let line = if failing.is_empty() {
            k.healthy.replace("{m}", &judged.to_string())
        } else {
            k.fails
                .replace("{n}", &failing.len().to_string())
                .replace("{m}", &judged.to_string())
                .replace("{list}", &v.list(&failing))
        };
        let text = RichText::new(line);
        ui.add(egui::Label::new(if failing.is_empty() { text } else { text.color(err) }).wrap());
    }
    let stopped: Vec<String> = curves
        .iter()
        .filter(|x| x.stopped_s.is_some())
        .map(|x| v.host_gpu(x.key.0.as_deref().unwrap_or(""), x.key.1))
        .collect();
    if !stopped.is_empty() {
        let line =
            k.stopped_line.replace("{n}", &stopped.len().to_string()).replace("{list}", &v.list(&stopped));
        ui.add(egui::Label::new(RichText::new(line).color(warn)).wrap());
    }
}

/// Every GPU by host: its rank and stage, peak against the prediction, its curve's verdict.
fn table(ui: &mut egui::Ui, c: &Computed, live: &mut Live, l: &Layout, curves: &[GpuCurve]) {
    let k = tr_cluster();
    let warn = ui.visuals().warn_fg_color;
    let curve_of =
        |host: &str, gpu: u32| curves.iter().find(|x| x.key.0.as_deref() == Some(host) && x.key.1 == gpu);
    let predicted_tip = format!("{}\n{}", k.predicted_tip, command(c));
    egui::Grid::new("cluster").striped(true).spacing([10.0, 1.0]).show(ui, |ui| {
        for h in [k.col_host, k.col_gpu, k.col_rank, k.col_stage] {
            ui.label(RichText::new(h).strong());
        }
        ui.label(RichText::new(k.col_used).strong()).on_hover_text(k.used_tip);
        ui.label(RichText::new(k.col_predicted).strong()).on_hover_text(&predicted_tip);
        ui.label(RichText::new(k.col_error).strong());
        ui.label(RichText::new(k.col_curve).strong());
        ui.end_row();
        let mut last_host = "";
        for (i, r) in l.rows.iter().enumerate() {
            let worst = l.worst == Some(i);
            let paint = |t: String| {
                let t = RichText::new(t);
                if worst { t.color(warn).strong() } else { t }
            };
            ui.label(if r.gpu.host != last_host { paint(r.gpu.host.clone()) } else { RichText::new("") });
            last_host = &r.gpu.host;
            let shown = live.host.as_deref() == Some(r.gpu.host.as_str()) && live.gpu == r.gpu.gpu;
            if ui
                .selectable_label(shown, paint(r.gpu.gpu.to_string()))
                .on_hover_text(k.click_to_show)
                .clicked()
            {
                (live.host, live.gpu) = (Some(r.gpu.host.clone()), r.gpu.gpu);
            }
            match (r.rank, r.stage) {
                (Some(rank), Some(stage)) => {
                    ui.label(paint(rank.to_string()));
                    ui.label(paint(stage.to_string()));
                }
                _ => {
                    ui.label(RichText::new(k.not_in_job).weak());
                    ui.label("");
                }
            }
            ui.label(paint(gib(r.gpu.peak))).on_hover_text(format!("{} {}", k.now, gib(r.gpu.used)));
            ui.label(paint(r.predicted.map_or(String::new(), gib))).on_hover_text(&predicted_tip);
            ui.label(paint(r.error().map_or(String::new(), percent)));
            curve_cell(ui, curve_of(&r.gpu.host, r.gpu.gpu));
            ui.end_row();
        }
    });
}

/// A GPU's curve verdict (its advice on hover), or why there is none; when its process stopped.
fn curve_cell(ui: &mut egui::Ui, curve: Option<&GpuCurve>) {
    let k = tr_cluster();
    let lang = crate::gui::lang::current();
    let warn = ui.visuals().warn_fg_color;
    let err = ui.visuals().error_fg_color;
    let stopped = curve
        .and_then(|x| x.stopped_s)
        .map(|s| format!(" · {}", k.stopped.replace("{s}", &format!("{s:.0}"))));
    match curve.map(|x| &x.report) {
        Some(Ok(t)) => {
            let text =
                RichText::new(format!("{}{}", t.verdict.label_in(lang), stopped.clone().unwrap_or_default()));
            let text = if t.verdict.fails() {
                text.color(err)
            } else if stopped.is_some() || t.verdict.warns() {
                text.color(warn)
            } else {
                text
            };
            let resp = ui.label(text);
            if !t.advice.is_empty() {
                resp.on_hover_text(t.advice.join("\n"));
            }
        }
        Some(Err(gap)) => {
            let why = match gap {
                CurveGap::TooFew => k.too_few,
                CurveGap::NoTotal => k.no_total,
            };
            ui.label(RichText::new(format!("{why}{}", stopped.unwrap_or_default())).weak());
        }
        None => {
            ui.label(RichText::new(k.too_few).weak());
        }
    }
}
