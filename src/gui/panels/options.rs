//! The "Options & cost" tab: hardware paths for the current scenario.

use crate::cost;
use crate::explain::Component;
use crate::gui::derived::Computed;
use crate::gui::intent::Intent;
use crate::gui::palette;
use crate::gui::state::View;
use crate::gui::strings::tr;
use crate::gui::strings_options::tr_options;
use crate::options::HardwarePath;
use crate::roadmap::{Roadmap, Step, StepKind};
use crate::units::{GIB, grouped};
use eframe::egui::{self, Align2, FontId, Rect, Sense, Stroke, pos2, vec2};

/// Draws the table of hardware paths, the cost of a run, then the roadmap.
pub fn ui(
    ui: &mut egui::Ui,
    c: &Computed,
    paths: &[HardwarePath],
    roadmap: Option<&Roadmap>,
    view: &View,
) -> Vec<Intent> {
    let mut out = Vec::new();
    let t = tr();
    let o = tr_options();
    // the roadmap's lesson talks about the roadmap: it comes first, the hardware table after it
    let roadmap_first = view.learn.is_some();
    if !roadmap_first {
        ui.label(egui::RichText::new(t.options_intro).weak());
        ui.add_space(4.0);
    }
    let height = super::plot_height(ui);
    egui::ScrollArea::both().id_salt("options").max_height(height).show(ui, |ui| {
        if roadmap_first && let Some(r) = roadmap {
            // a lesson talks about the steps' flags: the table, under the breakdown above
            roadmap_ui(ui, r, false);
            ui.add_space(10.0);
            ui.label(egui::RichText::new(t.options_intro).weak());
        }
        egui::Grid::new("options_grid").striped(true).spacing([14.0, 4.0]).show(ui, |ui| {
            for h in [
                o.col_path,
                o.col_gpu,
                o.col_gpus,
                o.col_layout,
                o.col_batch,
                o.col_gib_per_gpu,
                o.col_fits,
                o.col_speed,
                o.col_usd_per_hour,
                o.col_usd_per_m_tokens,
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for p in paths {
                ui.label(&p.kind);
                ui.label(&p.gpu_name);
                ui.label(p.gpus.to_string());
                let q = &p.parallel;
                let offload = match q.offload {
                    crate::estimate::Offload::None => "",
                    crate::estimate::Offload::Optimizer => o.offload_optimizer,
                    crate::estimate::Offload::Params => o.offload_params,
                };
                let changes = if p.changes.is_empty() {
                    o.as_it_is.to_owned()
                } else {
                    format!("vramscope estimate … {}", p.changes.join(" "))
                };
                ui.label(format!(
                    "dp{} tp{} pp{} Z{}{}{} {}{offload}",
                    q.dp,
                    q.tp,
                    q.pp,
                    q.zero,
                    crate::gui::lang::current().pick(", ", "，"),
                    o.ckpt,
                    p.checkpoint
                ))
                .on_hover_text(changes);
                ui.label(if p.grad_accum > 1 {
                    format!("{} x {}", p.micro_batch, p.grad_accum)
                } else {
                    p.micro_batch.to_string()
                });
                ui.label(format!(
                    "{} / {}",
                    grouped(p.total_bytes as f64 / GIB, 1),
                    grouped(p.capacity as f64 / GIB, 1)
                ));
                let (text, color) = if p.fits {
                    (
                        format!("{} ({})", o.yes, super::signed(p.headroom as f64 / GIB, 1)),
                        ui.visuals().text_color(),
                    )
                } else {
                    (
                        format!("{} ({})", o.no, super::signed(p.headroom as f64 / GIB, 1)),
                        ui.visuals().error_fg_color,
                    )
                };
                ui.colored_label(color, text);
                ui.label(format!("{:.2}x", p.speedup));
                ui.label(p.usd_per_hour.map_or_else(|| "-".into(), |x| format!("{x:.2}")));
                ui.label(p.usd_per_m_tokens.map_or_else(|| "-".into(), |x| format!("{x:.2}")));
                ui.end_row();
            }
        });
        ui.add_space(10.0);
        run_cost_ui(ui, c, view, &mut out);
        if !roadmap_first && let Some(r) = roadmap {
            ui.add_space(10.0);
            roadmap_ui(ui, r, true);
        }
    });
    out
}

/// The cost of a run of N tokens on each catalog instance.
fn run_cost_ui(ui: &mut egui::Ui, c: &Computed, view: &View, out: &mut Vec<Intent>) {
    let o = tr_options();
    ui.horizontal(|ui| {
        ui.strong(o.run_cost);
        let mut tokens = view.run_tokens_b;
        let mut mfu = view.mfu * 100.0;
        let a = ui
            .add(
                egui::DragValue::new(&mut tokens)
                    .range(0.001..=100_000.0)
                    .speed(0.1)
                    .suffix(o.run_tokens_suffix),
            )
            .on_hover_text(o.run_tokens_tip);
        ui.label(o.at_mfu);
        let b = ui
            .add(egui::DragValue::new(&mut mfu).range(5.0..=90.0).speed(0.5).suffix(" %"))
            .on_hover_text(o.mfu_tip);
        if a.changed() || b.changed() {
            out.push(Intent::SetRunCost { tokens_b: tokens, mfu: mfu / 100.0 });
        }
    });
    let sc = &c.scenario;
    let train = sc.mode == crate::estimate::Mode::Train;
    let flops =
        cost::run_flops(crate::plan::active_params(sc, c.estimate.n_params), view.run_tokens_b * 1e9, train);
    let opts = cost::run_options(
        |g| c.on_card(g),
        sc.parallel.world(),
        flops,
        view.mfu,
        &cost::Discounts::default(),
    );
    ui.label(
        egui::RichText::new(
            o.run_cost_note
                .replace("{flops}", &format!("{flops:.2e}"))
                .replace("{gpus}", &sc.parallel.world().to_string()),
        )
        .weak(),
    );
    egui::Grid::new("run_cost_grid").striped(true).spacing([14.0, 3.0]).show(ui, |ui| {
        for h in [
            o.col_option,
            o.col_gpu,
            o.col_fits,
            o.col_instances,
            o.col_wall_hours,
            o.col_gpu_hours,
            o.col_on_demand,
            o.col_spot,
            o.col_committed,
        ] {
            ui.strong(h);
        }
        ui.end_row();
        for x in opts.iter().take(8) {
            let Some(k) = &x.cost else { continue };
            let rented = x.instance.purchase.is_none();
            ui.label(format!("{} {}", x.instance.provider, x.instance.name)).on_hover_text(
                o.price_noted
                    .replace("{date}", &x.instance.price_date)
                    .replace("{region}", &x.instance.region),
            );
            ui.label(&x.instance.gpu);
            ui.colored_label(palette::verdict(x.fits), if x.fits { o.yes } else { o.no });
            ui.label(k.instances.to_string());
            ui.label(format!("{:.1}", k.wall_hours));
            ui.label(format!("{:.0}", k.gpu_hours));
            ui.label(cost::usd(k.on_demand));
            ui.label(if rented { cost::usd(k.spot) } else { "-".into() });
            ui.label(if rented { cost::usd(k.committed) } else { "-".into() });
            ui.end_row();
        }
    });
    if sc.parallel.world() <= 1
        && let Some((slices, gib, jobs)) = cost::mig_share(c.estimate.total, &c.gpu)
    {
        ui.label(
            o.mig_share
                .replace("{slices}", &slices.to_string())
                .replace("{gib}", &format!("{gib:.0}"))
                .replace("{jobs}", &jobs.to_string())
                .replace("{gpu}", &c.gpu.name),
        );
    }
}

/// One roadmap bar: label, capacity, stacked parts.
type RoadmapBar = (String, u64, Vec<(Component, u64)>);

/// The roadmap's bars: "now" and one stacked bar per cumulative step, each step's capacity a
/// tick across it.
fn roadmap_bars(ui: &mut egui::Ui, r: &Roadmap) {
    let o = tr_options();
    let steps: Vec<_> = r.steps.iter().filter(|s| s.kind != StepKind::NotMemory).collect();
    let n = steps.len() + 1;
    // on a projector the steps' table under the bars stays in view
    let h = if super::presentation(ui.ctx()) { 120.0 } else { 170.0 };
    ui.label(egui::RichText::new(o.roadmap_hint).weak());
    let (rect, _) = ui.allocate_exact_size(vec2(ui.available_width().max(200.0), h), Sense::hover());
    let painter = ui.painter_at(rect);
    let text = ui.visuals().text_color();
    // scale to the totals and today's card; a bigger card's capacity above that is drawn at the top
    let top = steps
        .iter()
        .filter_map(|s| s.total_after)
        .chain([r.total_before, r.capacity_before])
        .max()
        .unwrap_or(1) as f64
        * 1.15;
    // GiB ticks on the left, as the breakdown's
    let plot = Rect::from_min_max(
        pos2(rect.left() + 44.0, rect.top() + 8.0),
        pos2(rect.right() - 4.0, rect.bottom() - 18.0),
    );
    super::breakdown::gib_ticks(&painter, plot, top, text);
    let y_of = |b: u64| plot.bottom() - ((b as f64 / top).min(1.0)) as f32 * plot.height();
    let slot = plot.width() / n as f32;
    let w = (slot * 0.55).min(60.0);
    let mut bars: Vec<RoadmapBar> = Vec::with_capacity(n);
    // "now": the total before the first step, one grey block (the breakdown above shows its parts)
    bars.push((o.now.into(), r.capacity_before, vec![(Component::Overhead, r.total_before)]));
    for (i, s) in steps.iter().enumerate() {
        let parts = Component::ALL.iter().map(|&c| (c, c.at_peak(&s.estimate))).collect();
        bars.push((format!("{}", i + 1), s.capacity, parts));
    }
    for (i, (label, cap, parts)) in bars.iter().enumerate() {
        let cx = plot.left() + slot * (i as f32 + 0.5);
        let mut acc = 0u64;
        for &(c, bytes) in parts {
            if bytes == 0 {
                continue;
            }
            let seg =
                Rect::from_min_max(pos2(cx - w / 2.0, y_of(acc + bytes)), pos2(cx + w / 2.0, y_of(acc)));
            let color = if i == 0 { text.gamma_multiply(0.35) } else { palette::color(c) };
            painter.rect_filled(seg, 0.0, color);
            acc += bytes;
        }
        let y = y_of(*cap);
        painter
            .line_segment([pos2(cx - w / 2.0 - 6.0, y), pos2(cx + w / 2.0 + 6.0, y)], Stroke::new(2.0, text));
        painter.text(
            pos2(cx, plot.bottom() + 2.0),
            Align2::CENTER_TOP,
            label,
            FontId::proportional(12.0),
            text,
        );
    }
}

/// The roadmap: the headline, one stacked bar per cumulative step (with that step's capacity as
/// a tick), and the steps with what they save.
fn roadmap_ui(ui: &mut egui::Ui, r: &Roadmap, bars: bool) {
    let o = tr_options();
    let lang = crate::gui::lang::current();
    ui.strong(o.roadmap_title.replace("{headline}", &r.headline));
    if bars {
        roadmap_bars(ui, r);
    }
    let sections: [(&str, &[Step]); 3] =
        [("roadmap_grid", &r.steps), ("roadmap_batch", &r.raise_batch), ("roadmap_method", &r.method)];
    for (id, list) in sections {
        if list.is_empty() {
            continue;
        }
        match id {
            "roadmap_batch" => ui.strong(o.raise_batch_title),
            "roadmap_method" => ui.strong(o.method_title),
            _ => ui.label(""),
        };
        egui::Grid::new(id).striped(true).spacing([12.0, 3.0]).show(ui, |ui| {
            for hd in [
                o.col_number,
                o.col_when,
                o.col_step,
                o.col_saves,
                o.col_total_after,
                o.col_fits,
                o.col_effort,
            ] {
                ui.strong(hd);
            }
            ui.end_row();
            for (i, s) in list.iter().enumerate() {
                ui.label(format!("{}", i + 1));
                ui.label(s.horizon.label_in(lang));
                let mut how = s.how.join("\n");
                if !s.changes.is_empty() {
                    how += &format!("\n{} {}", o.flags, s.changes.join(" "));
                }
                ui.label(&s.title).on_hover_text(how);
                match (s.kind, s.saves, s.saves_pct) {
                    (StepKind::NotMemory, _, _) => ui.label(o.not_memory),
                    (_, Some(b), Some(p)) => {
                        ui.label(format!("{} GiB ({p:.0} %)", grouped(b as f64 / GIB, 1)))
                    }
                    _ => ui.label(o.card_of.replace("{gib}", &grouped(s.capacity as f64 / GIB, 0))),
                };
                match s.total_after {
                    Some(t) => ui.label(format!(
                        "{} / {} GiB",
                        grouped(t as f64 / GIB, 1),
                        grouped(s.capacity as f64 / GIB, 1)
                    )),
                    None => ui.label("-"),
                };
                if s.kind == StepKind::NotMemory {
                    ui.label("-");
                } else {
                    ui.colored_label(palette::verdict(s.fits), if s.fits { o.yes } else { o.no });
                }
                ui.label(s.effort);
                ui.end_row();
            }
        });
    }
}
