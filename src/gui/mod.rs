//! The explorer: an eframe desktop app over the core. Panels return intents; the app applies them;
//! every number comes from the core.

pub mod app;
pub mod derived;
pub mod fonts;
pub mod hub;
pub mod intent;
pub mod lang;
pub mod learn;
pub mod live;
pub mod palette;
pub mod panels;
pub mod raster;
pub mod slide;
pub mod snapshots;
pub mod state;
pub mod strings;
// the tables' former paths, where the panels still import them
pub use strings::{live as strings_live, options as strings_options};

use anyhow::{Context, Result, anyhow};
use eframe::egui;
use std::path::{Path, PathBuf};

/// How to start the app.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Render, write a screenshot of the window to this PNG and exit.
    pub screenshot: Option<PathBuf>,
    /// Crop the screenshot to the breakdown chart.
    pub chart_only: bool,
    /// Frames to render before the screenshot.
    pub frames: u32,
    /// Tab shown in the screenshot.
    pub tab: Option<state::Tab>,
    /// Open in Serve mode (a vLLM-style server's KV budget).
    pub serve: bool,
    /// A scenario or model file to open first.
    pub open: Option<PathBuf>,
    /// A recorded cluster to open in the Live tab.
    pub recording: Option<PathBuf>,
    /// The interface language (`--lang`), kept as the view's choice; `None`: the saved one, else
    /// the system locale's.
    pub lang: Option<lang::Lang>,
    /// Screenshot in the presentation layout.
    pub presentation: bool,
    /// Screenshot in the light theme.
    pub light: bool,
    /// Open the Learn view at this lesson (1-based).
    pub lesson: Option<u8>,
}

/// Writes an egui image as PNG, atomically (temp file + rename).
pub fn save_png(img: &egui::ColorImage, path: &Path) -> Result<()> {
    let [w, h] = img.size;
    let bytes: Vec<u8> = img.pixels.iter().flat_map(|c| c.to_array()).collect();
    let buf = image::RgbaImage::from_raw(w as u32, h as u32, bytes)
        .ok_or_else(|| anyhow!("screenshot has no pixels"))?;
    let tmp = path.with_extension("png.tmp");
    buf.save_with_format(&tmp, image::ImageFormat::Png)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    Ok(())
}

/// Opens the window (blocks until it closes).
pub fn run(launch: Launch) -> Result<()> {
    let mut options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("vramscope")
            .with_app_id("vramscope")
            .with_inner_size([1280.0, 800.0])
            .with_min_inner_size([900.0, 600.0]),
        // a screenshot run must not read or overwrite the user's saved state
        persist_window: launch.screenshot.is_none(),
        ..Default::default()
    };
    // the window's icon (assets/vramscope.png); a PNG that does not decode keeps eframe's own
    let icon = eframe::icon_data::from_png_bytes(include_bytes!("../../assets/vramscope.png"));
    options.viewport.icon = icon.ok().map(Into::into);
    let code = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(1));
    let code_in = code.clone();
    let shot = launch.screenshot.clone();
    let frames = launch.frames.max(2);
    let chart_only = launch.chart_only;
    let tab = launch.tab;
    let serve = launch.serve;
    let (presentation, light, lesson) = (launch.presentation, launch.light, launch.lesson);
    let (open, recording, lang) = (launch.open.clone(), launch.recording.clone(), launch.lang);
    // winit panics (rather than erring) when e.g. libxkbcommon-x11 is missing: turn that into a
    // readable message too
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eframe::run_native(
            "vramscope",
            options,
            Box::new(move |cc| {
                let app = match shot {
                    Some(path) => {
                        // nothing of an earlier session's window (scroll offsets, open headers)
                        // in the picture: egui's memory as a fresh start has it
                        cc.egui_ctx.memory_mut(|m| *m = egui::Memory::default());
                        let mut st = state::AppState::default();
                        if let Some(t) = tab {
                            st.view.tab = t;
                        }
                        st.settings.serving = serve;
                        st.view.presentation = presentation;
                        st.view.controls_collapsed = presentation;
                        st.view.dark = !light;
                        let mut app = app::VramApp::new(st);
                        app.persist = false;
                        app.exit_code = code_in;
                        let mut job = app::ScreenshotJob::new(path, frames, true);
                        job.chart_only = chart_only;
                        app.with_screenshot(job)
                    }
                    None => {
                        let mut app = app::VramApp::from_storage(cc.storage);
                        if serve {
                            app.state.settings.serving = true;
                        }
                        app
                    }
                };
                let mut app = app;
                if let Some(l) = lang {
                    app.set_lang(l);
                }
                if let Some(p) = open {
                    app.pending_open = Some(p.display().to_string());
                }
                if let Some(n) = lesson {
                    use learn::LearnStep::{Next, Start};
                    for step in
                        std::iter::once(Start).chain(std::iter::repeat_n(Next, usize::from(n.max(1)) - 1))
                    {
                        app.apply(&cc.egui_ctx, intent::Intent::Learn(step));
                    }
                }
                if let Some(p) = recording {
                    app.open_recording(&p);
                }
                Ok(Box::new(app))
            }),
        )
    }));
    std::panic::set_hook(hook);
    let result = match result {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "the windowing library panicked".into())),
    };
    result.map_err(|e| {
        anyhow!(
            "could not open a window: {e}. A desktop session (X11 or Wayland) and the libraries libxkbcommon-x11-0, \
             libxcursor1, libxi6 and libgl1 are needed; `vramscope estimate …` works without them"
        )
    })?;
    if launch.screenshot.is_some() && code.load(std::sync::atomic::Ordering::SeqCst) != 0 {
        return Err(anyhow!("the window closed before the screenshot was written"));
    }
    Ok(())
}
