//! One file per panel. Each draws itself and returns [`Intent`](super::intent::Intent)s; none
//! computes memory itself.

pub mod breakdown;
pub mod cluster;
pub mod compare;
pub mod controls;
pub mod curves;
pub mod drop;
pub mod headline;
pub mod learn;
pub mod live;
pub mod menu;
pub mod options;
pub mod save;
pub mod serve;
pub mod shortcuts;
pub mod status;
pub mod tabs;
pub mod timeline;
pub mod why;

fn presentation_id() -> eframe::egui::Id {
    eframe::egui::Id::NULL.with("vramscope-presentation")
}

/// Tells the panels whether this frame is laid out for a projector (see [`hint`]).
pub fn set_presentation(ctx: &eframe::egui::Context, on: bool) {
    ctx.data_mut(|d| d.insert_temp(presentation_id(), on));
}

/// Is this frame laid out for a projector?
pub fn presentation(ctx: &eframe::egui::Context) -> bool {
    ctx.data(|d| d.get_temp(presentation_id())).unwrap_or(false)
}

/// A panel's how-to-read-it hint: a weak wrapped line, or on a projector (where every line
/// counts and the room reads the chart, not the prose) a " ? " that shows it on hover.
pub fn hint(ui: &mut eframe::egui::Ui, text: &str) {
    use eframe::egui::{Label, RichText};
    if presentation(ui.ctx()) {
        let bg = ui.visuals().faint_bg_color;
        ui.add(
            Label::new(RichText::new(" ? ").weak().background_color(bg)).sense(eframe::egui::Sense::hover()),
        )
        .on_hover_text(text);
    } else {
        ui.add(Label::new(RichText::new(text).weak()).wrap());
    }
}

/// A plot's value grid in 1-2-5 steps, about five labelled lines over the shown range (egui_plot's
/// default powers of ten leave a 0-90 GiB axis with the 0 alone labelled).
pub fn nice_grid() -> impl Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    egui_plot::uniform_grid_spacer(|input| {
        let span = (input.bounds.1 - input.bounds.0).abs().max(f64::MIN_POSITIVE);
        let raw = span / 5.0;
        let pow = 10f64.powf(raw.log10().floor());
        let step =
            [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * pow).find(|s| *s >= raw).unwrap_or(10.0 * pow);
        [step / 5.0, step, step * 5.0]
    })
}

/// Formats bytes as GiB for display (MiB below 0.1 GiB).
pub fn gib(bytes: u64) -> String {
    let g = bytes as f64 / crate::units::GIB;
    if bytes == 0 || g >= 0.1 {
        format!("{g:.1} GiB")
    } else {
        format!("{:.1} MiB", bytes as f64 / crate::units::MIB)
    }
}

/// Exact bytes with thousands separators, for tooltips.
pub fn exact(bytes: u64) -> String {
    let s = bytes.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out + crate::gui::lang::current().pick(" bytes", " 字节")
}
