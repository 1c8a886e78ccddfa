//! File → Export → Slide (PNG): the breakdown chart with a title, the scenario's one-line
//! caption, the headline verdict, each component's size and formula, and a footer naming the
//! `vramscope estimate` command that gives every number on it — in the interface's language and
//! the light theme, a 1920×1080 slide at 2× pixel density (3840×2160 pixels). It is laid out by
//! egui in a context of its own and filled by [`super::raster`], so it needs no window and no GPU
//! (`vramscope --slide out.png` writes one from the command line).

use super::derived::Computed;
use super::panels::{self, gib};
use super::raster::{Textures, paint};
use super::state::Settings;
use crate::explain::Component;
use crate::text;
use eframe::egui::{self, Color32, ColorImage, RichText};

/// The slide's size in points: a 1280×720 layout, drawn at [`PIXELS_PER_POINT`].
pub const SIZE: egui::Vec2 = egui::vec2(1280.0, 720.0);

/// 3 pixels a point: a 1920×1080 slide at 2× pixel density, 3840×2160 pixels.
pub const PIXELS_PER_POINT: f32 = 3.0;

/// The `vramscope estimate` command the slide's numbers are, for its footer.
pub fn command(c: &Computed, settings: &Settings) -> String {
    let model = match &settings.model {
        super::state::ModelChoice::Custom { path, .. } => path.clone(),
        _ => crate::flags::model_arg(&c.scenario.model),
    };
    format!(
        "vramscope estimate --model {model} {}",
        crate::flags::line(&crate::flags::flags(&c.scenario, &c.gpu))
    )
}

/// Draws the slide into `ui` (the whole of it).
fn draw(ui: &mut egui::Ui, c: &Computed, settings: &Settings) {
    let l = super::lang::current();
    let t = super::strings::tr();
    let e = &c.estimate;
    let rect = ui.max_rect();
    ui.painter().rect_filled(rect, 0.0, ui.visuals().panel_fill);
    let inner = rect.shrink2(egui::vec2(48.0, 32.0));
    ui.scope_builder(egui::UiBuilder::new().max_rect(inner), |ui| {
        let model = settings.model_name();
        let gpu = &c.gpu.name;
        ui.label(
            RichText::new(text!(l, "GPU memory per GPU: {model} on {gpu}", "每 GPU 显存：{model}，{gpu}"))
                .size(30.0)
                .strong(),
        );
        ui.label(RichText::new(panels::headline::caption(c, settings)).size(15.0).weak());
        ui.add_space(6.0);
        ui.horizontal_wrapped(|ui| {
            let big = |s: String| RichText::new(s).size(24.0);
            ui.label(big(format!("{} {} {}", gib(e.total), t.of, gib(c.capacity()))).strong());
            ui.label(big("·".into()));
            ui.label(big(panels::headline::verdict(c)).strong().color(super::palette::verdict(c.fits())));
            ui.label(big("·".into()));
            ui.label(
                RichText::new(t.peak_at_tpl.replace("{what}", &panels::headline::peak_moment(c))).size(17.0),
            );
        });
        let mb = panels::headline::max_batch_text(c);
        ui.label(RichText::new(mb).size(15.0));
        ui.add_space(8.0);
        let footer_h = 40.0;
        let h = ui.available_height() - footer_h;
        ui.horizontal_top(|ui| {
            let w = ui.available_width();
            let down = egui::Layout::top_down(egui::Align::Min);
            ui.allocate_ui_with_layout(egui::vec2(w * 0.55, h), down, |ui| {
                panels::breakdown::ui(ui, c, &[], h, None, &[]);
            });
            ui.add_space(16.0);
            ui.allocate_ui_with_layout(egui::vec2(ui.available_width(), h), down, |ui| {
                for x in c.explanations.iter().filter(|x| x.bytes > 0 || x.component == Component::Parameters)
                {
                    ui.horizontal(|ui| {
                        let (r, _) = ui.allocate_exact_size(egui::vec2(14.0, 14.0), egui::Sense::hover());
                        ui.painter().rect_filled(r, 2.0, super::palette::color(x.component));
                        ui.label(RichText::new(panels::breakdown::name(x.component)).size(16.0).strong());
                        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                            ui.label(RichText::new(gib(x.bytes)).size(16.0).strong());
                        });
                    });
                    ui.add(egui::Label::new(RichText::new(&x.substituted).size(12.5).weak()).wrap());
                    ui.add_space(5.0);
                }
            });
        });
        ui.add_space(6.0);
        ui.separator();
        ui.horizontal(|ui| {
            ui.add(
                egui::Label::new(RichText::new(command(c, settings)).size(11.0).monospace().weak())
                    .wrap_mode(egui::TextWrapMode::Truncate),
            );
        });
        ui.label(
            RichText::new(text!(
                l,
                "vramscope {}: every number above is what this command prints",
                "vramscope {}：以上每个数字都是该命令的输出",
                env!("CARGO_PKG_VERSION")
            ))
            .size(11.0)
            .weak(),
        );
    });
}

/// Renders the slide of `c` in the interface's language (the calling thread's, see
/// [`super::lang`]) and the light theme, at `ppp` pixels per point (a 1280×720-point layout:
/// [`PIXELS_PER_POINT`] gives 3840×2160 pixels).
pub fn render(c: &Computed, settings: &Settings, ppp: f32) -> ColorImage {
    let ctx = egui::Context::default();
    ctx.set_fonts(super::fonts::definitions());
    ctx.set_theme(egui::Theme::Light);
    let input = || {
        let mut raw = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, SIZE)),
            max_texture_side: Some(16384),
            ..Default::default()
        };
        raw.viewports.entry(egui::ViewportId::ROOT).or_default().native_pixels_per_point = Some(ppp);
        raw
    };
    let mut textures = Textures::default();
    // the first pass loads the fonts, the second lays the slide out with them
    let mut out = ctx.run_ui(input(), |ui| draw(ui, c, settings));
    textures.apply(&out.textures_delta);
    out.textures_delta.clear();
    out = ctx.run_ui(input(), |ui| draw(ui, c, settings));
    textures.apply(&out.textures_delta);
    out.textures_delta.clear();
    let primitives = ctx.tessellate(out.shapes, out.pixels_per_point);
    let size = [(SIZE.x * ppp).round() as usize, (SIZE.y * ppp).round() as usize];
    let mut image = ColorImage::filled(size, Color32::WHITE);
    paint(&mut image, &primitives, &textures, out.pixels_per_point);
    image
}

/// Renders the slide in `lang` at [`PIXELS_PER_POINT`] and writes it to `path` as PNG
/// (atomically; on any thread).
pub fn write(
    c: &Computed,
    settings: &Settings,
    lang: crate::i18n::Lang,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    super::lang::set(lang);
    super::save_png(&render(c, settings, PIXELS_PER_POINT), path)
}

/// `vramscope --slide out.png [--open FILE] [--lang L]`: the slide of the default scenario (or of a
/// saved scenario or model file), written without a window.
pub fn write_file(
    path: &std::path::Path,
    open: Option<&std::path::Path>,
    lang: crate::i18n::Lang,
) -> anyhow::Result<()> {
    let mut state = super::state::AppState::default();
    state.view.lang = Some(lang);
    let mut app = super::app::VramApp::new(state);
    if let Some(file) = open {
        app.apply(&egui::Context::default(), super::intent::Intent::LoadPath(file.display().to_string()));
        if app.status.0 == super::app::StatusKind::Error {
            anyhow::bail!("{}", app.status.1);
        }
    }
    let settings = app.state.settings.clone();
    let c = Computed::new(&settings).map_err(|e| anyhow::anyhow!(e))?;
    write(&c, &settings, lang, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slide_is_the_chart_with_its_texts_on_white() {
        let settings = Settings::default();
        let c = Computed::new(&settings).expect("default scenario");
        // at one pixel a point to keep the test fast in a debug build
        let img = render(&c, &settings, 1.0);
        assert_eq!(img.size, [1280, 720]);
        let px = |x: usize, y: usize| img.pixels[y * 1280 + x];
        // a light slide: the corners are the light theme's panel colour
        assert!(px(2, 2).r() > 200 && px(1277, 717).g() > 200, "{:?}", px(2, 2));
        // the bar's segments in their palette colours are on it
        for comp in [Component::Parameters, Component::OptimizerStates] {
            let want = super::super::palette::color(comp);
            let n = img.pixels.iter().filter(|p| **p == want).count();
            assert!(n > 2000, "{comp:?}: {n} pixels of {want:?}");
        }
        // and text: many dark pixels (anti-aliased glyphs have in-between greys too)
        let dark = img.pixels.iter().filter(|p| p.r() < 90 && p.g() < 90 && p.b() < 90).count();
        assert!(dark > 5000, "{dark} dark pixels");
        let grey = img.pixels.iter().filter(|p| (100..200).contains(&p.r()) && p.r() == p.g()).count();
        assert!(grey > 500, "anti-aliasing: {grey}");
    }

    #[test]
    fn the_footer_names_the_command_that_prints_the_numbers() {
        let settings = Settings::default();
        let c = Computed::new(&settings).expect("default scenario");
        let cmd = command(&c, &settings);
        assert!(cmd.starts_with("vramscope estimate --model llama-3.1-8b "), "{cmd}");
        assert!(cmd.contains("--gpu h100-80gb"), "{cmd}");
    }
}
