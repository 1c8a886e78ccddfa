//! A plot's legend drawn outside it: a row of colour swatches and names above the plot (so a
//! legend never covers data, and every line's colour is listed), with the hover read-out — the
//! curve's value at the pointer's x — at its end. The plot's own legend stays off. On a projector
//! the row's type and the plot's axis type are larger.

use eframe::egui::{self, Color32, RichText};

/// How a line is drawn, for its swatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swatch {
    Solid,
    Dashed,
    Dotted,
    /// A marker (a point of the curve called out).
    Marker,
    /// An arrow: the entry names the x axis.
    Axis,
}

/// One entry of the row.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub color: Color32,
    pub swatch: Swatch,
}

impl Entry {
    pub fn new(name: impl Into<String>, color: Color32, swatch: Swatch) -> Self {
        Self { name: name.into(), color, swatch }
    }
}

/// The colours of a what-if plot's lines (each named in the row).
pub mod colors {
    use eframe::egui::Color32;
    /// The curve itself.
    pub const CURVE: Color32 = Color32::from_rgb(86, 156, 214);
    /// The card's capacity.
    pub const CAPACITY: Color32 = Color32::from_rgb(214, 69, 65);
    /// The current setting.
    pub const CURRENT: Color32 = Color32::from_rgb(0, 168, 150);
    /// The point called out (largest that fits, fewest GPUs, lowest peak).
    pub const MARK: Color32 = Color32::from_rgb(240, 180, 40);
    /// Further lines: forward/backward, optimizer step, the naive rule, a target.
    pub const EXTRA: [Color32; 3] =
        [Color32::from_rgb(90, 190, 110), Color32::from_rgb(190, 120, 220), Color32::from_rgb(200, 200, 120)];
}

/// The type size of a plot's legend row and axes: larger on a projector.
pub fn text_size(presentation: bool) -> f32 {
    if presentation { 15.0 } else { 12.5 }
}

/// Where the hover read-out of plot `plot` is kept between frames.
fn readout_id(plot: egui::Id) -> egui::Id {
    plot.with("vramscope-readout")
}

/// Draws the row: the entries, then the read-out of the last hover over `plot` (or, at a desk,
/// how to get one). On a projector, where every line counts, the `notes` (how to read the plot,
/// why it is not smooth) are " ? " marks at the row's start that show them on hover; at a desk
/// the caller writes them out.
pub fn row(ui: &mut egui::Ui, plot: egui::Id, entries: &[Entry], idle: &str, notes: &[&str]) {
    let presentation = super::presentation(ui.ctx());
    let size = text_size(presentation);
    let readout: Option<String> = ui.ctx().data(|d| d.get_temp(readout_id(plot)));
    ui.horizontal_wrapped(|ui| {
        if presentation {
            for n in notes {
                super::hint(ui, n);
            }
        }
        for e in entries {
            entry(ui, e, size);
            ui.add_space(8.0);
        }
        match readout {
            Some(text) => ui.label(RichText::new(text).size(size).strong()),
            None if presentation => ui.label(""),
            None => ui.label(RichText::new(idle).size(size).weak()),
        };
    });
}

/// One entry as one widget (swatch and name), so the row wraps between entries, never inside
/// one; named for screen readers by its text.
fn entry(ui: &mut egui::Ui, e: &Entry, size: f32) {
    let color = ui.visuals().text_color();
    let galley = ui.painter().layout_no_wrap(e.name.clone(), egui::FontId::proportional(size), color);
    let swatch = egui::vec2(size * 1.4, size);
    let gap = 4.0;
    let want = egui::vec2(swatch.x + gap + galley.size().x, galley.size().y.max(swatch.y));
    let (rect, response) = ui.allocate_exact_size(want, egui::Sense::hover());
    let sw = egui::Rect::from_min_size(egui::pos2(rect.left(), rect.center().y - swatch.y / 2.0), swatch);
    paint_swatch(ui.painter(), sw, e);
    let at = egui::pos2(sw.right() + gap, rect.center().y - galley.size().y / 2.0);
    ui.painter().galley(at, galley, color);
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &e.name));
}

fn paint_swatch(p: &egui::Painter, rect: egui::Rect, e: &Entry) {
    let y = rect.center().y;
    let stroke = egui::Stroke::new(2.5, e.color);
    match e.swatch {
        Swatch::Solid => {
            p.line_segment([egui::pos2(rect.left(), y), egui::pos2(rect.right(), y)], stroke);
        }
        Swatch::Dashed | Swatch::Dotted => {
            let (dash, gap) = if e.swatch == Swatch::Dashed { (5.0, 3.0) } else { (1.5, 2.5) };
            let pts = [egui::pos2(rect.left(), y), egui::pos2(rect.right(), y)];
            p.extend(egui::Shape::dashed_line(&pts, stroke, dash, gap));
        }
        Swatch::Marker => {
            p.circle_filled(rect.center(), rect.height() * 0.3, e.color);
        }
        Swatch::Axis => {
            let stroke = egui::Stroke::new(1.5, e.color);
            p.arrow(egui::pos2(rect.left(), y), egui::vec2(rect.width(), 0.0), stroke);
        }
    }
}

/// Keeps what the pointer reads over `plot` this frame (`None`: not over it) for the row.
pub fn set_readout(ctx: &egui::Context, plot: egui::Id, text: Option<String>) {
    let id = readout_id(plot);
    let before: Option<String> = ctx.data(|d| d.get_temp(id));
    if before != text {
        ctx.data_mut(|d| match text {
            Some(t) => {
                d.insert_temp(id, t);
            }
            None => {
                d.remove::<String>(id);
            }
        });
        // the row above the plot was drawn before the plot: show the new read-out at once
        ctx.request_repaint();
    }
}

/// The plot's axis and hover type on a projector: Body (axis labels, ticks, hover label) and
/// Monospace set to the row's size for what `add` draws.
pub fn with_plot_type<R>(ui: &mut egui::Ui, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    let presentation = super::presentation(ui.ctx());
    ui.scope(|ui| {
        if presentation {
            let size = text_size(true);
            let style = ui.style_mut();
            style.text_styles.insert(egui::TextStyle::Body, egui::FontId::proportional(size));
            style.text_styles.insert(egui::TextStyle::Monospace, egui::FontId::monospace(size - 1.0));
        }
        add(ui)
    })
    .inner
}
