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

/// The slide's text colours on its light background: dark, never the light theme's weak grey.
const INK: Color32 = Color32::from_gray(20);
/// Secondary text (the caption, the formulas, the footer): still dark enough to read projected.
const INK_SOFT: Color32 = Color32::from_gray(55);

/// Draws the slide into `ui` (the whole of it): `pinned` are the pinned scenarios beside the
/// current one, with their labels.
fn draw(ui: &mut egui::Ui, c: &Computed, pinned: &[(&str, &Computed)], settings: &Settings) {
    let rect = ui.max_rect();
    ui.painter().rect_filled(rect, 0.0, ui.visuals().panel_fill);
    // every text and the chart's labels in dark ink
    ui.visuals_mut().override_text_color = Some(INK);
    let inner = rect.shrink2(egui::vec2(48.0, 32.0));
    ui.scope_builder(egui::UiBuilder::new().max_rect(inner), |ui| {
        ui.visuals_mut().override_text_color = Some(INK);
        heading(ui, c, settings);
        ui.add_space(8.0);
        // the footer at the bottom, whole (wrapped); the chart and its texts above it
        let body = ui.available_rect_before_wrap();
        let bottom_up =
            egui::UiBuilder::new().max_rect(body).layout(egui::Layout::bottom_up(egui::Align::Min));
        ui.scope_builder(bottom_up, |ui| {
            footer(ui, c, settings);
            ui.add_space(4.0);
            ui.separator();
            ui.add_space(4.0);
            let rest = ui.available_rect_before_wrap();
            let top_down =
                egui::UiBuilder::new().max_rect(rest).layout(egui::Layout::top_down(egui::Align::Min));
            ui.scope_builder(top_down, |ui| chart_and_texts(ui, c, pinned, rest.height()));
        });
    });
}

/// The title, the scenario's caption, the verdict and the largest batch.
fn heading(ui: &mut egui::Ui, c: &Computed, settings: &Settings) {
    let l = super::lang::current();
    let t = super::strings::tr();
    let e = &c.estimate;
    let model = settings.model_name();
    let gpu = &c.gpu.name;
    ui.add(
        egui::Label::new(
            RichText::new(text!(l, "GPU memory per GPU: {model} on {gpu}", "每 GPU 显存：{model}，{gpu}"))
                .size(30.0)
                .strong(),
        )
        .wrap(),
    );
    ui.add(
        egui::Label::new(RichText::new(panels::headline::caption(c, settings)).size(15.0).color(INK_SOFT))
            .wrap(),
    );
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
    ui.add(egui::Label::new(RichText::new(panels::headline::max_batch_text(c)).size(15.0)).wrap());
}

/// The stacked bars (the pins' beside the current one) on the left; on the right each
/// component's size and formula, or with pins what each bar is and their difference table.
fn chart_and_texts(ui: &mut egui::Ui, c: &Computed, pinned: &[(&str, &Computed)], h: f32) {
    ui.horizontal_top(|ui| {
        let w = ui.available_width();
        let down = egui::Layout::top_down(egui::Align::Min);
        let chart_w = if pinned.is_empty() { w * 0.55 } else { w * 0.5 };
        ui.allocate_ui_with_layout(egui::vec2(chart_w, h), down, |ui| {
            panels::breakdown::ui(ui, c, pinned, h, None, &[]);
        });
        ui.add_space(16.0);
        ui.allocate_ui_with_layout(egui::vec2(ui.available_width(), h), down, |ui| {
            if pinned.is_empty() {
                formulas(ui, c);
            } else {
                comparison(ui, c, pinned);
            }
            cache_legend(ui, c);
        });
    });
}

/// Each component with its colour, size and formula (the numbers substituted).
fn formulas(ui: &mut egui::Ui, c: &Computed) {
    for x in c.explanations.iter().filter(|x| x.bytes > 0 || x.component == Component::Parameters) {
        ui.horizontal(|ui| {
            swatch(ui, x.component);
            ui.label(RichText::new(panels::breakdown::name(x.component)).size(16.0).strong());
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                ui.label(RichText::new(gib(x.bytes)).size(16.0).strong());
            });
        });
        ui.add(egui::Label::new(RichText::new(&x.substituted).size(12.5).color(INK_SOFT)).wrap());
        ui.add_space(5.0);
    }
}

/// With pins: what each bar is (its settings and card), the components' colours, and the
/// difference table as Compare shows it.
fn comparison(ui: &mut egui::Ui, c: &Computed, pinned: &[(&str, &Computed)]) {
    ui.visuals_mut().override_text_color = Some(INK_SOFT);
    panels::compare::legend(ui, c, pinned, Some(13.0));
    ui.visuals_mut().override_text_color = Some(INK);
    ui.add_space(6.0);
    ui.horizontal_wrapped(|ui| {
        for comp in Component::ALL {
            if std::iter::once(c).chain(pinned.iter().map(|p| p.1)).any(|x| comp.at_peak(&x.estimate) > 0) {
                // a swatch and its name are one widget, so the row wraps between entries
                named_swatch(ui, comp, 13.0);
                ui.add_space(10.0);
            }
        }
    });
    ui.add_space(6.0);
    ui.label(RichText::new(super::strings::tr_export().diff_title).size(16.0).strong());
    panels::compare::table(ui, c, pinned, Some(14.0));
    ui.add_space(6.0);
}

/// The hatched allocator-cache segment's legend entry (when the allocator was replayed).
fn cache_legend(ui: &mut egui::Ui, c: &Computed) {
    let Some(cache) = c.cache_at_peak() else { return };
    ui.horizontal(|ui| {
        let (r, _) = ui.allocate_exact_size(egui::vec2(28.0, 14.0), egui::Sense::hover());
        let bg = ui.visuals().panel_fill;
        panels::breakdown::hatched(ui.painter(), r, super::palette::color(Component::Overhead), bg);
        ui.label(RichText::new(super::strings::tr_export().legend_cache).size(13.0));
        ui.label(RichText::new(gib(cache)).size(13.0).strong());
    });
}

/// A component's colour, as a small square.
/// A component's swatch and name as one widget of their joint size.
fn named_swatch(ui: &mut egui::Ui, comp: Component, size: f32) {
    let color = ui.visuals().text_color();
    let name = panels::breakdown::name(comp).to_owned();
    let galley = ui.painter().layout_no_wrap(name, egui::FontId::proportional(size), color);
    let want = egui::vec2(14.0 + 5.0 + galley.size().x, galley.size().y.max(14.0));
    let (r, _) = ui.allocate_exact_size(want, egui::Sense::hover());
    let sq = egui::Rect::from_min_size(egui::pos2(r.left(), r.center().y - 7.0), egui::vec2(14.0, 14.0));
    ui.painter().rect_filled(sq, 2.0, super::palette::color(comp));
    ui.painter().galley(egui::pos2(sq.right() + 5.0, r.center().y - galley.size().y / 2.0), galley, color);
}

fn swatch(ui: &mut egui::Ui, comp: Component) {
    let (r, _) = ui.allocate_exact_size(egui::vec2(14.0, 14.0), egui::Sense::hover());
    ui.painter().rect_filled(r, 2.0, super::palette::color(comp));
}

/// The `vramscope estimate` command, whole (wrapped between its flags), and the version line.
fn footer(ui: &mut egui::Ui, c: &Computed, settings: &Settings) {
    let l = super::lang::current();
    // bottom-up: the last line first
    ui.add(
        egui::Label::new(
            RichText::new(text!(
                l,
                "vramscope {}: every number above is what this command prints",
                "vramscope {}：以上每个数字都是该命令的输出",
                env!("CARGO_PKG_VERSION")
            ))
            .size(11.0)
            .color(INK_SOFT),
        )
        .wrap(),
    );
    ui.add(
        egui::Label::new(RichText::new(command(c, settings)).size(11.0).monospace().color(INK_SOFT)).wrap(),
    );
}

/// Lays the slide out (two passes: the first loads the fonts) and returns what it drew, its
/// textures filled in `textures`.
fn layout(
    c: &Computed,
    pinned: &[(&str, &Computed)],
    settings: &Settings,
    ppp: f32,
    textures: &mut Textures,
) -> (egui::Context, egui::FullOutput) {
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
    let mut out = ctx.run_ui(input(), |ui| draw(ui, c, pinned, settings));
    textures.apply(&out.textures_delta);
    out.textures_delta.clear();
    out = ctx.run_ui(input(), |ui| draw(ui, c, pinned, settings));
    textures.apply(&out.textures_delta);
    out.textures_delta.clear();
    (ctx, out)
}

/// Renders the slide of `c` beside its `pinned` scenarios in the interface's language (the
/// calling thread's, see [`super::lang`]) and the light theme, at `ppp` pixels per point (a
/// 1280×720-point layout: [`PIXELS_PER_POINT`] gives 3840×2160 pixels).
pub fn render(c: &Computed, pinned: &[(&str, &Computed)], settings: &Settings, ppp: f32) -> ColorImage {
    let mut textures = Textures::default();
    let (ctx, out) = layout(c, pinned, settings, ppp, &mut textures);
    let primitives = ctx.tessellate(out.shapes, out.pixels_per_point);
    let size = [(SIZE.x * ppp).round() as usize, (SIZE.y * ppp).round() as usize];
    let mut image = ColorImage::filled(size, Color32::WHITE);
    paint(&mut image, &primitives, &textures, out.pixels_per_point);
    image
}

/// Renders the slide (with the `pinned` scenarios) in `lang` at [`PIXELS_PER_POINT`] and writes
/// it to `path` as PNG (atomically; on any thread).
pub fn write(
    c: &Computed,
    pinned: &[(String, Computed)],
    settings: &Settings,
    lang: crate::i18n::Lang,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    super::lang::set(lang);
    let pinned: Vec<(&str, &Computed)> = pinned.iter().map(|(l, p)| (l.as_str(), p)).collect();
    super::save_png(&render(c, &pinned, settings, PIXELS_PER_POINT), path)
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
    write(&c, &[], &settings, lang, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slide_is_the_chart_with_its_texts_on_white() {
        let settings = Settings::default();
        let c = Computed::new(&settings).expect("default scenario");
        // at one pixel a point to keep the test fast in a debug build
        let img = render(&c, &[], &settings, 1.0);
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
    fn the_default_file_name_names_the_model_and_the_card() {
        let mut app = super::super::app::VramApp::new(super::super::state::AppState::default());
        app.state.settings.gpu_id = "a100-80gb".into();
        let name = app.default_file_name(super::super::app::SaveWhat::Slide);
        assert_eq!(name, "vramscope-llama-3.1-8b-a100-80gb.png");
    }

    #[test]
    fn the_footer_names_the_command_that_prints_the_numbers() {
        let settings = Settings::default();
        let c = Computed::new(&settings).expect("default scenario");
        let cmd = command(&c, &settings);
        assert!(cmd.starts_with("vramscope estimate --model llama-3.1-8b "), "{cmd}");
        assert!(cmd.contains("--gpu h100-80gb"), "{cmd}");
    }

    /// A QLoRA scenario (NF4 base, double quant) and, pinned beside it, the same at batch 1.
    fn qlora() -> (Settings, Computed, Computed) {
        let settings = Settings {
            lora_enabled: true,
            lora_rank: 16,
            base_quant: crate::estimate::BaseQuant::Nf4,
            batch: 4,
            ..Settings::default()
        };
        let c = Computed::new(&settings).expect("qlora");
        let mut pin = settings.clone();
        pin.batch = 1;
        (settings, c, Computed::new(&pin).expect("pin"))
    }

    /// Every text the slide lays out (the texts' galleys, nested shapes included).
    fn galleys(out: &egui::FullOutput) -> Vec<std::sync::Arc<egui::Galley>> {
        fn walk(shape: &egui::Shape, into: &mut Vec<std::sync::Arc<egui::Galley>>) {
            match shape {
                egui::Shape::Text(t) => into.push(t.galley.clone()),
                egui::Shape::Vec(v) => v.iter().for_each(|s| walk(s, into)),
                _ => {}
            }
        }
        let mut into = Vec::new();
        out.shapes.iter().for_each(|s| walk(&s.shape, &mut into));
        into
    }

    #[test]
    fn the_slide_names_qlora_shows_the_pins_and_never_splits_a_word() {
        let (settings, c, pin) = qlora();
        for lang in crate::i18n::Lang::ALL {
            super::super::lang::set(lang);
            let mut textures = Textures::default();
            let (_ctx, out) = layout(&c, &[("A", &pin)], &settings, 1.0, &mut textures);
            let texts = galleys(&out);
            let all: Vec<&str> = texts.iter().map(|g| g.job.text.as_str()).collect();
            let has = |needle: &str| all.iter().any(|t| t.contains(needle));
            let method = c.scenario.method_name_in(lang);
            assert!(method.starts_with("QLoRA r=16"), "{method}");
            assert!(has(&method), "{lang:?}: the caption names {method}: {all:?}");
            // the legend says what A is, the table shows the difference
            let current = super::super::strings::tr().current;
            let legend = super::super::strings::tr_export().legend_item;
            let a = legend.replace("{label}", "A").replace("{what}", &panels::compare::describe(&pin));
            assert!(has(&a), "{lang:?}: {all:?}");
            assert!(has(&format!("{current} − A")), "{lang:?}: {all:?}");
            assert!(has(super::super::strings::tr_export().legend_cache), "{lang:?}: the cache's legend");
            // the footer's command whole: one text, not elided
            let cmd = command(&c, &settings);
            assert!(all.contains(&cmd.as_str()), "{lang:?}: {cmd}");
            assert!(texts.iter().any(|g| g.rows.len() > 1), "{lang:?}: some text wraps (the footer)");
            for g in &texts {
                assert!(!g.elided, "{lang:?}: cut: {:?}", g.job.text);
                for pair in g.rows.windows(2) {
                    if pair[0].ends_with_newline {
                        continue;
                    }
                    let (Some(a), Some(b)) = (pair[0].glyphs.last(), pair[1].glyphs.first()) else {
                        continue;
                    };
                    // egui keeps the space a row breaks at at its end; Chinese breaks between
                    // characters; a break anywhere else (a letter, a dash, a dot) splits a word
                    let ok = a.chr.is_whitespace() || !a.chr.is_ascii() || !b.chr.is_ascii();
                    assert!(ok, "{lang:?}: a word split at {:?}|{:?} in {:?}", a.chr, b.chr, g.job.text);
                }
            }
        }
        super::super::lang::set(crate::i18n::Lang::En);
    }

    #[test]
    fn the_formulas_are_dark_on_the_light_slide() {
        let settings = Settings::default();
        let c = Computed::new(&settings).expect("default scenario");
        let mut textures = Textures::default();
        let (_ctx, out) = layout(&c, &[], &settings, 1.0, &mut textures);
        let formulas: Vec<_> = galleys(&out).into_iter().filter(|g| g.job.text.contains(" × ")).collect();
        assert!(!formulas.is_empty());
        for g in formulas {
            for section in &g.job.sections {
                let col = section.format.color;
                assert!(col.r() < 90 && col.g() < 90 && col.b() < 90, "{:?} in {col:?}", g.job.text);
            }
        }
    }
}
