//! What the app writes and reads besides the scenario: exports (the report, framework settings,
//! the Serve mode's answer, the slide), PNG screenshots and their background writers, and the
//! Live tab's recordings.

use super::{ScreenshotJob, StatusKind, VramApp};
use crate::gui::panels;
use crate::gui::strings::tr;
use eframe::egui;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

impl VramApp {
    /// The Serve mode's answer and advice, rendered by the core as the CLI prints them.
    pub fn serve_export_text(&self, json: bool) -> Result<String, String> {
        let ts = crate::gui::strings::tr_serve();
        let Some(Ok(sv)) = &self.derived.serve else { return Err(ts.export_none.into()) };
        let a = sv.advice.as_ref().map_err(Clone::clone)?;
        if json {
            // JSON values stay English (what `serve --roadmap --json` prints), whatever the window's
            // language
            let english;
            let a = if crate::gui::lang::current() == crate::gui::lang::Lang::En {
                a
            } else {
                let setup = self.state.settings.to_serve_setup()?;
                let target = Some(self.state.settings.serve.target_concurrency).filter(|t| *t > 0.0);
                english = crate::serve::advice::advise_in(&setup, target, crate::gui::lang::Lang::En)
                    .map_err(|e| e.to_string())?;
                &english
            };
            return serde_json::to_string_pretty(a).map(|t| t + "\n").map_err(|e| e.to_string());
        }
        use crate::serve::text;
        Ok(format!(
            "{}\n{}\n{}",
            text::answer(&sv.serve, &sv.gpu.name),
            text::advice_in(a, &sv.model_arg, false, crate::gui::lang::current()),
            text::advice_in(a, &sv.model_arg, true, crate::gui::lang::current())
        ))
    }

    /// Writes the Serve mode's answer (text or JSON) to `path`.
    pub(super) fn export_serve(&mut self, json: bool, path: PathBuf) {
        let body = match self.serve_export_text(json) {
            Ok(b) => b,
            Err(e) => return self.set_status(StatusKind::Error, e),
        };
        match crate::export::write_atomic(&path, body.as_bytes(), true) {
            Ok(()) => self.set_status(
                StatusKind::Info,
                tr().st_exported.replace("{path}", &path.display().to_string()),
            ),
            Err(e) => self.set_status(StatusKind::Error, e.to_string()),
        }
    }

    /// Renders an export with the core and writes it to `path` (the save prompt's). The
    /// Markdown report adds the pinned scenarios and their difference from the current one.
    pub(super) fn export(&mut self, format: crate::export::Format, path: PathBuf) {
        use crate::export::{self, ScenarioFile};
        let sc = match self.state.settings.to_scenario() {
            Ok(sc) => sc,
            Err(e) => return self.set_status(StatusKind::Error, e),
        };
        let gpu = crate::gpu::find(&self.state.settings.gpu_id).ok();
        let file = ScenarioFile::new(sc, gpu.as_ref(), None);
        let text = match export::render_in(&file, format, crate::gui::lang::current()) {
            Ok(t) => t,
            Err(e) => return self.set_status(StatusKind::Error, e.to_string()),
        };
        // the Markdown report links the chart, written next to it (never over an existing file)
        let mut text = text;
        let mut chart = None;
        if format == export::Format::Markdown {
            text += &self.pinned_markdown();
            let stem = path.file_stem().map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
            let png = path.with_file_name(format!("{stem}.chart.png"));
            if !png.exists() {
                text = export::with_chart_link(&text, &format!("{stem}.chart.png"));
                chart = Some(png);
            }
        }
        // the prompt has said the file exists; the write itself is atomic
        match export::write_atomic(&path, text.as_bytes(), true) {
            Ok(()) => {
                // a framework export names the recipe it runs and whether it is the scenario's
                let recipe = export::recipe(&file, format).ok().flatten();
                let said = recipe.as_ref().and_then(|r| r.lines().pop()).map(|l| format!(" · {l}"));
                self.set_status(
                    StatusKind::Info,
                    tr().st_exported.replace("{path}", &path.display().to_string())
                        + &said.unwrap_or_default(),
                );
                if let Some(png) = chart {
                    let mut job =
                        ScreenshotJob::new(png, u32::try_from(self.frame + 2).unwrap_or(u32::MAX), false);
                    job.chart_only = true;
                    self.screenshot = Some(job);
                }
            }
            Err(e) => self.set_status(StatusKind::Error, e.to_string()),
        }
    }

    pub(super) fn live_action(&mut self, ctx: &egui::Context, a: panels::live::LiveAction) {
        use panels::live::LiveAction;
        match a {
            LiveAction::Start => {
                let c = ctx.clone();
                self.live.start(move || c.request_repaint());
                if let Some(p) = &self.live.problem {
                    self.status = (StatusKind::Error, p.clone());
                }
            }
            LiveAction::Stop => self.live.stop(),
            LiveAction::LoadRange => {
                let c = ctx.clone();
                self.live.load_range(move || c.request_repaint());
                if let Some(p) = &self.live.problem {
                    self.status = (StatusKind::Error, p.clone());
                }
            }
            LiveAction::OpenRecording => {
                if let Some(path) =
                    rfd::FileDialog::new().add_filter("recording", &["json", "csv"]).pick_file()
                {
                    self.open_recording(&path);
                }
            }
            LiveAction::Record => {
                let path = rfd::FileDialog::new()
                    .set_file_name("vramscope-trace.csv")
                    .save_file()
                    .unwrap_or_else(|| {
                        let secs = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_secs());
                        std::env::temp_dir().join(format!("vramscope-trace-{secs}.csv"))
                    });
                let tmp = path.with_extension("csv.tmp");
                let result = std::fs::write(&tmp, self.live.history.to_csv())
                    .and_then(|()| std::fs::rename(&tmp, &path));
                self.status = match result {
                    Ok(()) => (
                        StatusKind::Info,
                        tr().st_recorded
                            .replace("{n}", &self.live.history.samples.len().to_string())
                            .replace("{path}", &path.display().to_string()),
                    ),
                    Err(e) => (StatusKind::Error, format!("{}: {e}", path.display())),
                };
            }
        }
    }

    /// Opens a recorded cluster (or machine) in the Live tab; the status says what was read.
    pub fn open_recording(&mut self, path: &Path) {
        self.live.open_recording(path);
        self.status = match &self.live.problem {
            Some(p) => (StatusKind::Error, p.clone()),
            None => (
                StatusKind::Info,
                tr().st_opened_recording
                    .replace("{path}", &path.display().to_string())
                    .replace("{n}", &self.live.history.samples.len().to_string()),
            ),
        };
    }

    /// A PNG of the window (or of the chart alone) to `path`, taken once the prompt is gone.
    pub(super) fn export_png(&mut self, ctx: &egui::Context, chart_only: bool, path: PathBuf) {
        let mut job = ScreenshotJob::new(path, 0, false);
        job.chart_only = chart_only;
        // two more frames so the prompt is closed in the picture
        job.after_frames = u32::try_from(self.frame + 2).unwrap_or(u32::MAX);
        self.screenshot = Some(job);
        ctx.request_repaint();
    }

    /// The pinned scenarios that have an estimate, with their labels.
    pub(crate) fn pinned_shown(&self) -> Vec<(&str, &crate::gui::derived::Computed)> {
        self.derived.pinned.iter().filter_map(|(l, r)| r.as_ref().ok().map(|c| (l.as_str(), c))).collect()
    }

    /// The Markdown report's section on the pinned scenarios (empty without pins): what each is
    /// and its difference from the current scenario, as Compare and the slide show them.
    fn pinned_markdown(&self) -> String {
        let Some(Ok(c)) = &self.derived.current else { return String::new() };
        let pinned: Vec<crate::export::Compared<'_>> = self
            .pinned_shown()
            .into_iter()
            .map(|(label, p)| crate::export::Compared {
                label,
                scenario: &p.scenario,
                gpu: &p.gpu.name,
                estimate: &p.estimate,
            })
            .collect();
        let current = crate::export::Compared {
            label: tr().current,
            scenario: &c.scenario,
            gpu: &c.gpu.name,
            estimate: &c.estimate,
        };
        crate::export::compare_markdown_in(&current, &pinned, crate::gui::lang::current())
    }

    /// Renders the slide (with the pinned scenarios) and writes it to `path` on the
    /// "vramscope-slide" thread (a few hundred milliseconds for 3840×2160 pixels); the status bar
    /// says when it is written.
    pub(super) fn export_slide(&mut self, ctx: &egui::Context, path: PathBuf) {
        let Some(Ok(c)) = &self.derived.current else {
            return self.set_status(StatusKind::Error, tr().export_none);
        };
        let pinned: Vec<(String, crate::gui::derived::Computed)> =
            self.pinned_shown().into_iter().map(|(l, p)| (l.to_owned(), p.clone())).collect();
        let (c, settings, lang) = (c.clone(), self.state.settings.clone(), crate::gui::lang::current());
        let (tx, rx) = mpsc::channel();
        let shown = path.display().to_string();
        let repaint = ctx.clone();
        let spawned = std::thread::Builder::new().name("vramscope-slide".into()).spawn(move || {
            let err = crate::gui::slide::write(&c, &pinned, &settings, lang, &path)
                .err()
                .map_or_else(String::new, |e| format!("{e:#}"));
            let _ = tx.send((path, err));
            // the status line says it is written at once, not at the next pointer move
            repaint.request_repaint();
        });
        match spawned {
            Ok(_) => {
                self.png_rx = Some(rx);
                self.set_status(StatusKind::Info, tr().st_writing.replace("{path}", &shown));
            }
            Err(e) => {
                self.set_status(StatusKind::Error, tr().st_writer_failed.replace("{e}", &e.to_string()))
            }
        }
    }

    pub(super) fn screenshot_step(&mut self, ctx: &egui::Context) {
        if let Some(rx) = &self.png_rx {
            match rx.try_recv() {
                Ok((path, err)) => {
                    self.status = if err.is_empty() {
                        (StatusKind::Info, tr().st_png_written.replace("{path}", &path.display().to_string()))
                    } else {
                        (StatusKind::Error, err)
                    };
                    self.png_rx = None;
                }
                Err(mpsc::TryRecvError::Empty) => {
                    ctx.request_repaint_after(std::time::Duration::from_millis(50))
                }
                Err(mpsc::TryRecvError::Disconnected) => self.png_rx = None,
            }
        }
        let Some(job) = self.screenshot.as_mut() else { return };
        // a screenshot run's picture is the screen it was asked for (give the window a few
        // frames to take it, where the window system lets it)
        let settled = !job.exit_after || job.requested || super::fit_screen(ctx);
        let due = u64::from(job.after_frames);
        if !job.requested && self.frame >= due && (settled || self.frame >= due + 30) {
            let (tx, rx) = mpsc::channel();
            ctx.request_screenshot(move |img| {
                let _ = tx.send(img);
            });
            job.requested = true;
            job.rx = Some(rx);
        }
        if let Some(rx) = &job.rx
            && let Ok(img) = rx.try_recv()
        {
            let img = match self.chart_rect.filter(|_| job.chart_only) {
                Some(r) => std::sync::Arc::new(img.region(&r.expand(4.0), Some(ctx.pixels_per_point()))),
                None => img,
            };
            if !job.exit_after {
                // an export from the menu: encode and write on a background thread, report back
                let (tx, rx) = mpsc::channel();
                let path = job.path.clone();
                let repaint = ctx.clone();
                let spawned = std::thread::Builder::new().name("vramscope-png".into()).spawn(move || {
                    let err = crate::gui::save_png(&img, &path)
                        .err()
                        .map_or_else(String::new, |e| format!("{e:#}"));
                    let _ = tx.send((path, err));
                    repaint.request_repaint();
                });
                match spawned {
                    Ok(_) => {
                        self.png_rx = Some(rx);
                        self.status = (
                            StatusKind::Info,
                            tr().st_writing.replace("{path}", &job.path.display().to_string()),
                        );
                    }
                    Err(e) => {
                        self.status =
                            (StatusKind::Error, tr().st_writer_failed.replace("{e}", &e.to_string()))
                    }
                }
                self.screenshot = None;
                return;
            }
            let result = crate::gui::save_png(&img, &job.path);
            match &result {
                Ok(()) => {
                    self.exit_code.store(0, std::sync::atomic::Ordering::SeqCst);
                    self.status = (
                        StatusKind::Info,
                        tr().st_screenshot_written.replace("{path}", &job.path.display().to_string()),
                    );
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    self.status = (StatusKind::Error, format!("{e:#}"));
                }
            }
            if job.exit_after {
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            }
            self.screenshot = None;
        }
        // keep frames coming until the screenshot is taken
        ctx.request_repaint();
    }
}
