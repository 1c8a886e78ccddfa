//! The "Options & cost" tab: hardware paths for the current scenario.

use crate::gui::strings::tr;
use crate::options::HardwarePath;
use crate::units::GIB;
use eframe::egui;

/// Draws the table of hardware paths.
pub fn ui(ui: &mut egui::Ui, paths: &[HardwarePath]) {
    let t = tr();
    ui.label(egui::RichText::new(t.options_intro).weak());
    ui.add_space(4.0);
    egui::ScrollArea::both().id_salt("options").show(ui, |ui| {
        egui::Grid::new("options_grid").striped(true).spacing([14.0, 4.0]).show(ui, |ui| {
            for h in [
                "path",
                "GPU",
                "GPUs",
                "layout",
                "batch",
                "GiB per GPU",
                "fits",
                "speed",
                "$/h",
                "$/1k steps",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for p in paths {
                ui.label(p.kind);
                ui.label(&p.gpu_name);
                ui.label(p.gpus.to_string());
                let q = &p.parallel;
                ui.label(format!("dp{} tp{} pp{} Z{}, ckpt {}", q.dp, q.tp, q.pp, q.zero, p.checkpoint));
                ui.label(p.micro_batch.to_string());
                ui.label(format!("{:.1} / {:.1}", p.total_bytes as f64 / GIB, p.capacity as f64 / GIB));
                let (text, color) = if p.fits {
                    (format!("yes (+{:.1})", p.headroom as f64 / GIB), ui.visuals().text_color())
                } else {
                    (format!("no (-{:.1})", -p.headroom as f64 / GIB), ui.visuals().error_fg_color)
                };
                ui.colored_label(color, text);
                ui.label(format!("{:.2}x", p.speedup));
                ui.label(p.usd_per_hour.map_or_else(|| "-".into(), |x| format!("{x:.2}")));
                ui.label(p.usd_per_1k_steps.map_or_else(|| "-".into(), |x| format!("{x:.2}")));
                ui.end_row();
            }
        });
    });
}
