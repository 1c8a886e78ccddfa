//! One file per panel. Each draws itself and returns [`Intent`](super::intent::Intent)s; none
//! computes memory itself.

pub mod breakdown;
pub mod cluster;
pub mod compare;
pub mod controls;
pub mod curves;
pub mod drop;
pub mod headline;
pub mod hub;
pub mod learn;
pub mod legend;
pub mod live;
pub mod menu;
pub mod options;
pub mod save;
pub mod serve;
pub mod shortcuts;
pub mod status;
pub mod tabs;
pub mod timeline;
mod traced;
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

/// The least height of a plot or table under the tabs, points: its axis labels and a few grid
/// lines (or table rows) readable on a projector.
pub const MIN_PLOT: f32 = 130.0;

fn plot_top_id() -> eframe::egui::Id {
    eframe::egui::Id::NULL.with("vramscope-plot-top")
}

/// The height a plot (or table) under the tabs takes: what is left of the window, at least
/// [`MIN_PLOT`]. Notes where it starts, so that the layout of the next frame leaves the tab's
/// rows above it and this much under the chart row ([`plot_top`]).
pub fn plot_height(ui: &eframe::egui::Ui) -> f32 {
    let top = ui.cursor().top();
    let room = ui.available_height();
    ui.ctx().data_mut(|d| {
        d.insert_temp(plot_top_id(), top);
        d.insert_temp(plot_room_id(), (top, room));
    });
    room.max(MIN_PLOT)
}

/// Where the last plot under the tabs started and the height it was left, in the context's
/// temporary data (for the layout tests: under [`MIN_PLOT`], the plot runs out of the window).
pub fn plot_room_id() -> eframe::egui::Id {
    eframe::egui::Id::NULL.with("vramscope-plot-room")
}

/// Where this frame's plot under the tabs started (screen points), if the tab has one; taken,
/// so a tab without a plot reads `None` the next frame.
pub fn plot_top(ctx: &eframe::egui::Context) -> Option<f32> {
    ctx.data_mut(|d| d.remove_temp(plot_top_id()))
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

/// Formats bytes as GiB for display (MiB below 0.1 GiB), with thousands separators
/// ("12,876.0 GiB").
pub fn gib(bytes: u64) -> String {
    let g = bytes as f64 / crate::units::GIB;
    if bytes == 0 || g >= 0.1 {
        format!("{} GiB", crate::units::grouped(g, 1))
    } else {
        format!("{} MiB", crate::units::grouped(bytes as f64 / crate::units::MIB, 1))
    }
}

/// The card's line, the same words in every mode and chart: "h100-80gb CUDA-visible: 79.2 GiB"
/// (what `torch.cuda.mem_get_info()` reports, which every verdict is against).
pub fn capacity_line(gpu_id: &str, bytes: u64) -> String {
    crate::gui::strings::tr().capacity_line.replace("{gpu}", gpu_id).replace("{gib}", &gib(bytes))
}

/// The gap between two figures as the headline shows them, `more − less`: the difference of the
/// rounded GiB figures (so "77.0 GiB of 79.6 GiB" leaves "2.6 GiB", never a "2.7" the eye cannot
/// add up); under a tenth of a GiB, where those figures look the same, in MiB.
pub fn gap(more: u64, less: u64) -> String {
    let round = |b: u64| (b as f64 / crate::units::GIB * 10.0).round() / 10.0;
    let d = round(more) - round(less);
    if d >= 0.1 { format!("{} GiB", crate::units::grouped(d, 1)) } else { gib(more.saturating_sub(less)) }
}

/// A signed figure with `decimals` decimals, never "-0.0": a difference that rounds to nothing
/// is "0.0".
pub fn signed(x: f64, decimals: usize) -> String {
    let s = format!("{x:+.decimals$}");
    if s[1..].chars().all(|ch| ch == '0' || ch == '.') { s[1..].to_owned() } else { s }
}

/// "key: value" in the interface's language (a full-width "：" in Chinese).
pub fn kv(key: &str, value: impl std::fmt::Display) -> String {
    format!("{key}{}{value}", crate::gui::lang::current().pick(": ", "："))
}

/// "name (value)" in the interface's language (full-width brackets, no space, in Chinese).
pub fn paren(name: &str, value: impl std::fmt::Display) -> String {
    match crate::gui::lang::current() {
        crate::gui::lang::Lang::ZhCn => format!("{name}（{value}）"),
        _ => format!("{name} ({value})"),
    }
}

/// A plot's GiB axis tick, with thousands separators.
pub fn gib_tick(mark: egui_plot::GridMark, _range: &std::ops::RangeInclusive<f64>) -> String {
    let v = mark.value;
    let places = if mark.step_size >= 1.0 { 0 } else { 1 };
    crate::units::grouped(v, places)
}

/// Exact bytes with thousands separators, for tooltips.
pub fn exact(bytes: u64) -> String {
    crate::units::digits(bytes) + crate::gui::lang::current().pick(" bytes", " 字节")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_adds_up_with_the_figures_shown_and_a_sign_is_never_on_zero() {
        let g = |x: f64| (x * crate::units::GIB) as u64;
        // 77.04 and 79.64 show as 77.0 and 79.6: the gap shown is 2.6, not the exact 2.60 → "2.6"
        // (nor the 2.7 that 79.66 − 76.96 rounds to)
        assert_eq!(gap(g(79.64), g(77.04)), "2.6 GiB");
        assert_eq!(gap(g(79.66), g(76.96)), "2.7 GiB");
        assert_eq!(gap(g(79.64), g(76.96)), "2.6 GiB", "79.6 − 77.0, not the exact 2.68");
        // under a tenth of a GiB the figures look the same: the gap in MiB
        assert_eq!(gap(g(79.64), g(79.62)), "20.5 MiB");
        assert_eq!(signed(-0.04, 1), "0.0");
        assert_eq!(signed(0.04, 1), "0.0");
        assert_eq!(signed(-1.25, 1), "-1.2");
        assert_eq!(signed(3.0, 0), "+3");
    }
}
