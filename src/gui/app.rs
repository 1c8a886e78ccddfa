//! The explorer app: wires the panels in order and applies the intents they return.

use super::derived::Derived;
use super::intent::Intent;
use super::panels;
use super::state::{APP_KEY, AppState, ModelChoice, Pinned, Settings, Tab};
use super::strings::tr;
use crate::model::preset;
use eframe::egui;
use std::path::Path;
use std::sync::mpsc;

/// How long edits of the same control merge into one undo step, seconds.
const UNDO_MERGE_SECS: f64 = 1.0;
/// Undo depth.
const UNDO_DEPTH: usize = 200;

/// Kind of status message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusKind {
    Info,
    Error,
}

/// A pending screenshot (the `--screenshot` smoke test, or an export).
pub struct ScreenshotJob {
    /// Where to write the PNG.
    pub path: std::path::PathBuf,
    /// Frames to render before taking it.
    pub after_frames: u32,
    /// Close the app once written.
    pub exit_after: bool,
    /// Crop to the breakdown chart (as drawn when the picture is taken).
    pub chart_only: bool,
    requested: bool,
    rx: Option<mpsc::Receiver<std::sync::Arc<egui::ColorImage>>>,
}

impl ScreenshotJob {
    /// A screenshot after `after_frames` frames.
    pub fn new(path: std::path::PathBuf, after_frames: u32, exit_after: bool) -> Self {
        Self { path, after_frames, exit_after, chart_only: false, requested: false, rx: None }
    }
}

/// The application.
pub struct VramApp {
    /// Persisted state.
    pub state: AppState,
    /// Computed results (cache).
    pub derived: Derived,
    undo: Vec<Settings>,
    redo: Vec<Settings>,
    last_edit: Option<(&'static str, f64)>,
    /// Status bar message.
    pub status: (StatusKind, String),
    /// The path field under the model picker.
    pub path_input: String,
    frame: u64,
    screenshot: Option<ScreenshotJob>,
    /// Where the breakdown chart was drawn last frame (for the chart-only PNG).
    chart_rect: Option<egui::Rect>,
    /// PNG files being encoded on the "vramscope-png" thread: (path, result) arrives here.
    png_rx: Option<mpsc::Receiver<(std::path::PathBuf, String)>>,
    /// Exit code for the screenshot mode (0 = written).
    pub exit_code: std::sync::Arc<std::sync::atomic::AtomicI32>,
    /// Save state through eframe storage (off for screenshot runs).
    pub persist: bool,
    /// Live monitoring.
    pub live: super::live::Live,
    /// The timeline event shown in "Why this much?" (with the recomputation it belongs to).
    pub selected_event: Option<(u64, usize)>,
    /// Measured snapshots over the timeline.
    pub snapshots: super::snapshots::Snapshots,
    /// Path typed in the Timeline tab's snapshot field.
    pub snapshot_path: String,
    /// A file to open on the first frame (`--open`).
    pub pending_open: Option<String>,
    /// The Learn view's lesson text for the scenario shown.
    learn_body: panels::learn::BodyCache,
}

impl VramApp {
    /// A new app with the given state.
    pub fn new(state: AppState) -> Self {
        super::lang::set(state.view.lang.unwrap_or_else(super::lang::Lang::system));
        let mut live = super::live::Live::new();
        live.settings = state.view.live.clone();
        Self {
            live,
            state,
            derived: Derived::default(),
            undo: Vec::new(),
            redo: Vec::new(),
            last_edit: None,
            status: (StatusKind::Info, tr().ready.to_owned()),
            path_input: String::new(),
            frame: 0,
            screenshot: None,
            chart_rect: None,
            png_rx: None,
            exit_code: std::sync::Arc::new(std::sync::atomic::AtomicI32::new(1)),
            persist: true,
            selected_event: None,
            snapshots: super::snapshots::Snapshots::default(),
            snapshot_path: String::new(),
            pending_open: None,
            learn_body: Default::default(),
        }
    }

    /// Restores the app from eframe storage (falling back to defaults with a message).
    pub fn from_storage(storage: Option<&dyn eframe::Storage>) -> Self {
        let stored = storage.and_then(|s| s.get_string(APP_KEY));
        match AppState::from_stored(stored.as_deref()) {
            None => Self::new(AppState::default()),
            Some(Ok(state)) => Self::new(state),
            Some(Err(_)) => {
                let mut app = Self::new(AppState::default());
                app.status = (StatusKind::Error, tr().restored_defaults.to_owned());
                app
            }
        }
    }

    /// Takes a screenshot once `job.after_frames` frames were drawn.
    pub fn with_screenshot(mut self, job: ScreenshotJob) -> Self {
        self.screenshot = Some(job);
        self
    }

    fn set_status(&mut self, kind: StatusKind, msg: impl Into<String>) {
        self.status = (kind, msg.into());
    }

    /// Applies one intent.
    pub fn apply(&mut self, ctx: &egui::Context, intent: Intent) {
        match intent {
            Intent::Edit { settings, knob } => self.edit(ctx, *settings, knob),
            // a memory snapshot opens over the timeline; anything else is a model
            Intent::LoadPath(path) if path.trim().ends_with(".pickle") => {
                self.snapshots.open(path.trim());
                self.state.view.tab = Tab::Timeline;
            }
            Intent::LoadPath(path) => self.load_path(ctx, path.trim()),
            Intent::OpenDialog => {
                let picked = rfd::FileDialog::new()
                    .add_filter("model or memory snapshot", &["json", "ron", "safetensors", "pickle"])
                    .set_title(tr().menu_open)
                    .pick_file();
                match picked {
                    Some(p) => self.apply(ctx, Intent::LoadPath(p.display().to_string())),
                    None => self.set_status(StatusKind::Info, tr().dialog_unavailable),
                }
            }
            Intent::Pin => {
                let label = ((b'A' + (self.state.pinned.len() % 26) as u8) as char).to_string();
                self.state
                    .pinned
                    .push(Pinned { label: label.clone(), settings: self.state.settings.clone() });
                if self.state.pinned.len() > 4 {
                    self.state.pinned.remove(0);
                }
                self.set_status(StatusKind::Info, tr().st_pinned.replace("{label}", &label));
            }
            Intent::ClearPins => self.state.pinned.clear(),
            Intent::Undo => {
                if let Some(prev) = self.undo.pop() {
                    self.redo.push(std::mem::replace(&mut self.state.settings, prev));
                    self.last_edit = None;
                }
            }
            Intent::Redo => {
                if let Some(next) = self.redo.pop() {
                    self.undo.push(std::mem::replace(&mut self.state.settings, next));
                    self.last_edit = None;
                }
            }
            Intent::Reset => {
                self.edit(ctx, Settings::default(), "reset");
                self.set_status(StatusKind::Info, tr().st_defaults);
            }
            Intent::SetTab(t) => self.state.view.tab = t,
            Intent::OpenSnapshot(path) => self.snapshots.open(&path),
            Intent::ClearSnapshots => self.snapshots.clear(),
            Intent::SelectEvent(i) => {
                self.selected_event = i.map(|i| (self.derived.recomputations, i));
            }
            Intent::SetDark(d) => self.state.view.dark = d,
            Intent::SetPresentation(p) => {
                self.state.view.presentation = p;
                // a projector needs the room: the chart takes the controls' place
                self.state.view.controls_collapsed = p;
            }
            Intent::CollapseControls(c) => self.state.view.controls_collapsed = c,
            Intent::Learn(step) => {
                let v = &mut self.state.view;
                if let Some(s) = super::learn::step(&mut v.learn, &self.state.settings, &mut v.tab, step) {
                    // a lesson's scenario is not an edit of the user's: leaving restores theirs
                    self.state.settings = s;
                    self.selected_event = None;
                }
            }
            Intent::SetLang(l) => self.set_lang(l),
            Intent::Quit => ctx.send_viewport_cmd(egui::ViewportCommand::Close),
            Intent::Export(format) => self.export(format),
            Intent::ExportServe { json } => self.export_serve(json),
            Intent::SetRunCost { tokens_b, mfu } => {
                self.state.view.run_tokens_b = tokens_b.clamp(1e-6, 1e6);
                self.state.view.mfu = mfu.clamp(0.05, 0.9);
            }
            Intent::ExportSlide => self.export_slide(),
            Intent::ExportPng { chart_only } => {
                let name = if chart_only { "vramscope-chart.png" } else { "vramscope.png" };
                match rfd::FileDialog::new().set_file_name(name).add_filter("PNG", &["png"]).save_file() {
                    Some(path) => {
                        let mut job = ScreenshotJob::new(path, 0, false);
                        job.chart_only = chart_only;
                        // one more frame so the menu is closed in the picture
                        job.after_frames = u32::try_from(self.frame + 2).unwrap_or(u32::MAX);
                        self.screenshot = Some(job);
                        ctx.request_repaint();
                    }
                    None => self.set_status(StatusKind::Info, tr().export_cancelled),
                }
            }
        }
    }

    fn edit(&mut self, ctx: &egui::Context, settings: Settings, knob: &'static str) {
        if settings == self.state.settings {
            return;
        }
        let now = ctx.input(|i| i.time);
        let merge = self.last_edit.is_some_and(|(k, t)| k == knob && now - t < UNDO_MERGE_SECS);
        if !merge {
            self.undo.push(self.state.settings.clone());
            if self.undo.len() > UNDO_DEPTH {
                self.undo.remove(0);
            }
        }
        self.redo.clear();
        self.last_edit = Some((knob, now));
        self.state.settings = settings;
    }

    /// Loads a model file; on failure the scenario stays as it was and the status says why.
    fn load_path(&mut self, ctx: &egui::Context, path: &str) {
        if path.is_empty() {
            return;
        }
        // a saved scenario (File > Export > Scenario, `vramscope export --format ron`)
        if path.ends_with(".ron")
            && let Ok(text) = std::fs::read_to_string(path)
            && text.contains("scenario:")
        {
            match crate::export::ScenarioFile::from_ron(path, &text) {
                Ok(f) => {
                    let (s, dropped) = Settings::from_scenario_file(&f, path, &self.state.settings.gpu_id);
                    self.edit(ctx, s, "scenario");
                    let note = if dropped.is_empty() {
                        String::new()
                    } else {
                        tr().st_not_shown.replace("{list}", &dropped.join(", "))
                    };
                    self.set_status(
                        StatusKind::Info,
                        tr().st_opened_scenario.replace("{path}", path).replace("{note}", &note),
                    );
                }
                Err(e) => self.set_status(StatusKind::Error, e.to_string()),
            }
            return;
        }
        match preset::load_path(Path::new(path)) {
            Ok(loaded) => {
                let mut s = self.state.settings.clone();
                let name = loaded.model.name.clone();
                s.model = ModelChoice::Custom {
                    path: path.to_owned(),
                    model: Box::new(loaded.model),
                    dtype: loaded.dtype,
                };
                // keep the sequence inside the new model's positions
                if let Ok(m) = s.model_spec()
                    && let Some(t) = m.transformer()
                    && t.max_position_embeddings > 0
                {
                    s.seq = s.seq.min(t.max_position_embeddings);
                }
                self.edit(ctx, s, "model");
                let notes = if loaded.notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", loaded.notes.join("; "))
                };
                self.set_status(
                    StatusKind::Info,
                    tr().st_loaded
                        .replace("{name}", &name)
                        .replace("{path}", path)
                        .replace("{notes}", &notes),
                );
            }
            Err(e) => self.set_status(StatusKind::Error, format!("{e}")),
        }
    }

    /// Undo steps available (for tests and the status bar).
    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    /// Redo steps available.
    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Switches the interface language (kept in the view, so it is saved).
    pub fn set_lang(&mut self, l: super::lang::Lang) {
        self.state.view.lang = Some(l);
        super::lang::set(l);
        if self.status.0 == StatusKind::Info && self.frame == 0 {
            self.status.1 = tr().ready.to_owned();
        }
    }

    /// Draws the whole window into `ui` and applies the resulting intents.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        if self.frame == 0 {
            // the CJK font as every family's fallback, before the first frame's text
            ctx.set_fonts(super::fonts::definitions());
        }
        super::lang::set(self.state.view.lang.unwrap_or_else(super::lang::Lang::system));
        self.frame += 1;
        ctx.set_theme(if self.state.view.dark { egui::Theme::Dark } else { egui::Theme::Light });
        let zoom = if self.state.view.presentation { presentation_zoom(&ctx) } else { 1.0 };
        panels::set_presentation(&ctx, self.state.view.presentation);
        if (ctx.zoom_factor() - zoom).abs() > f32::EPSILON {
            ctx.set_zoom_factor(zoom);
        }
        if let Some(p) = self.pending_open.take() {
            self.apply(&ctx, Intent::LoadPath(p));
        }
        self.derived.update(&self.state);
        self.live.drain();
        if self.snapshots.poll() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
        let mut intents: Vec<Intent> = Vec::new();
        let mut live_actions = Vec::new();
        intents.extend(panels::shortcuts::read(&ctx));
        intents.extend(panels::drop::read(&ctx));
        if self.state.view.learn.is_some() {
            intents.extend(panels::learn::keys(&ctx));
        }
        egui::Panel::top("menu").show(ui, |ui| intents.extend(panels::menu::ui(ui, &self.state)));
        egui::Panel::bottom("status").show(ui, |ui| {
            intents.extend(panels::status::ui(ui, &self.status, self.can_undo(), self.can_redo()));
        });
        if let (Some(st), Some(Ok(c))) = (&self.state.view.learn, &self.derived.current) {
            let body = self.learn_body.get(st, self.derived.recomputations, c, self.derived.roadmap.as_ref());
            egui::Panel::bottom("learn").show(ui, |ui| intents.extend(panels::learn::ui(ui, st, body)));
        }
        // the segments the lesson shown is about
        let focus: &[crate::explain::Component] = match &self.state.view.learn {
            Some(st) => st.lesson().focus(),
            None => &[],
        };
        if self.state.view.controls_collapsed {
            // a slim strip: the chart gets the room, one click brings the controls back
            egui::Panel::left("controls-strip").exact_size(34.0).resizable(false).show(ui, |ui| {
                intents.extend(panels::controls::strip(ui));
            });
        } else {
            egui::Panel::left("controls").default_size(310.0).resizable(true).show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    intents.extend(panels::controls::fold_button(ui));
                    intents.extend(panels::controls::ui(ui, &self.state.settings, &mut self.path_input));
                });
            });
        }
        let presentation = self.state.view.presentation;
        // the Options tab's paths need `&mut` (a lazily filled cache): fetch them before borrowing
        let option_paths = if self.state.view.tab == Tab::Options && !self.state.settings.serving {
            self.derived_options()
        } else {
            Vec::new()
        };
        let serving = self.state.settings.serving;
        egui::CentralPanel::default().show(ui, |ui| match (&self.derived.serve, &self.derived.current) {
            (Some(Ok(sv)), _) if serving => {
                panels::serve::headline(ui, sv);
                ui.add_space(6.0);
                // a cluster's table needs the room of its rows: the chart gives up some height
                let cluster = self.state.view.tab == Tab::Live && self.live.is_cluster();
                // on a projector the curve and tables under the bar keep a readable height
                let (share, least) = match (cluster, presentation) {
                    (true, _) => (0.4, 250.0),
                    (false, true) => (0.45, 200.0),
                    (false, false) => (0.5, 250.0),
                };
                let top_h = presentation_split(ui.available_height(), share, least, presentation);
                ui.horizontal_top(|ui| {
                    let w = ui.available_width();
                    let down = egui::Layout::top_down(egui::Align::Min);
                    let chart = ui.allocate_ui_with_layout(egui::vec2(w * 0.45, top_h), down, |ui| {
                        panels::serve::bar::ui(ui, sv, top_h);
                    });
                    self.chart_rect = Some(chart.response.rect);
                    ui.add_space(10.0);
                    ui.allocate_ui_with_layout(egui::vec2(ui.available_width(), top_h), down, |ui| {
                        ui.set_min_height(top_h);
                        panels::serve::why::ui(ui, sv);
                    });
                });
                ui.separator();
                intents.extend(panels::tabs::ui_serve(ui, self.state.view.tab));
                match self.state.view.tab {
                    Tab::Options => intents.extend(panels::serve::options::ui(ui, sv, &self.state.settings)),
                    Tab::Live => {
                        if let Some(Ok(c)) = &self.derived.current {
                            live_actions = panels::live::ui(ui, c, &mut self.live);
                        }
                    }
                    _ => intents.extend(panels::serve::curve::ui(ui, sv, &self.state.settings)),
                }
            }
            (Some(Err(e)), _) if serving => {
                ui.heading(e.as_str());
            }
            (_, Some(Ok(c))) => {
                panels::headline::ui(ui, c, &self.state.settings, presentation);
                ui.add_space(6.0);
                let pinned: Vec<(&str, &super::derived::Computed)> = self
                    .derived
                    .pinned
                    .iter()
                    .filter_map(|(l, r)| r.as_ref().ok().map(|c| (l.as_str(), c)))
                    .collect();
                // a cluster's table needs the room of its rows: the chart gives up some height
                let cluster = self.state.view.tab == Tab::Live && self.live.is_cluster();
                // on a projector the chart is the centre of the screen; a lesson's text takes room
                // at the bottom, so the chart gives some up and the curve or table the lesson talks
                // about stays readable under it
                let learning = self.state.view.learn.is_some();
                let table_lesson = learning && matches!(self.state.view.tab, Tab::Options | Tab::Live);
                let (share, least) = if cluster || table_lesson {
                    (0.4, 160.0)
                } else if presentation && learning {
                    (0.45, 150.0)
                } else if presentation {
                    (0.6, 250.0)
                } else {
                    (0.5, 250.0)
                };
                let top_h = presentation_split(ui.available_height(), share, least, presentation);
                ui.horizontal_top(|ui| {
                    let w = ui.available_width();
                    let down = egui::Layout::top_down(egui::Align::Min);
                    let measured = self.live.bar_measure();
                    let chart = ui.allocate_ui_with_layout(egui::vec2(w * 0.52, top_h), down, |ui| {
                        panels::breakdown::ui(ui, c, &pinned, top_h, measured, focus);
                    });
                    self.chart_rect = Some(chart.response.rect);
                    ui.add_space(10.0);
                    ui.allocate_ui_with_layout(egui::vec2(ui.available_width(), top_h), down, |ui| {
                        ui.set_min_height(top_h);
                        // the Why column's room, for the tests that check it stays readable
                        ui.ctx().data_mut(|d| d.insert_temp(panels::why::column_id(), ui.max_rect()));
                        let at = self
                            .selected_event
                            .filter(|(r, _)| *r == self.derived.recomputations)
                            .and_then(|(_, i)| c.moment_at(i));
                        intents.extend(panels::why::ui(ui, c, at.as_ref(), focus));
                    });
                });
                ui.separator();
                let train = c.scenario.mode == crate::estimate::Mode::Train;
                intents.extend(panels::tabs::ui(ui, self.state.view.tab, train));
                let selected =
                    self.selected_event.filter(|(r, _)| *r == self.derived.recomputations).map(|(_, i)| i);
                // a saved Segments tab shows the batch curve while the mode is inference
                let tab = match self.state.view.tab {
                    Tab::Segments if !train => Tab::Batch,
                    Tab::Concurrency => Tab::Batch,
                    t => t,
                };
                match tab {
                    Tab::Timeline => intents.extend(panels::timeline::ui(
                        ui,
                        c,
                        selected,
                        &self.snapshots,
                        &mut self.snapshot_path,
                    )),
                    Tab::Compare => intents.extend(panels::compare::ui(ui, c, &pinned)),
                    Tab::Live => live_actions = panels::live::ui(ui, c, &mut self.live),
                    Tab::Options => {
                        intents.extend(panels::options::ui(
                            ui,
                            c,
                            &option_paths,
                            self.derived.roadmap.as_ref(),
                            &self.state.view,
                        ));
                    }
                    tab => intents.extend(panels::curves::ui(ui, c, tab, &self.state.settings)),
                }
            }
            (_, Some(Err(e))) => {
                ui.heading(e.as_str());
            }
            (_, None) => {}
        });
        for i in intents {
            self.apply(&ctx, i);
        }
        // the Live tab edits its source settings in place; they are persisted with the view
        if self.live.settings != self.state.view.live {
            self.state.view.live = self.live.settings.clone();
        }
        for a in live_actions {
            self.live_action(&ctx, a);
        }
        self.screenshot_step(&ctx);
    }

    fn derived_options(&mut self) -> Vec<crate::options::HardwarePath> {
        self.derived.options(&self.state.settings).to_vec()
    }

    /// The Serve mode's answer and advice, rendered by the core as the CLI prints them.
    pub fn serve_export_text(&self, json: bool) -> Result<String, String> {
        let ts = crate::gui::strings::tr_serve();
        let Some(Ok(sv)) = &self.derived.serve else { return Err(ts.export_none.into()) };
        let a = sv.advice.as_ref().map_err(Clone::clone)?;
        if json {
            // JSON values stay English (what `serve --roadmap --json` prints), whatever the window's
            // language
            let english;
            let a = if super::lang::current() == super::lang::Lang::En {
                a
            } else {
                let setup = self.state.settings.to_serve_setup()?;
                let target = Some(self.state.settings.serve.target_concurrency).filter(|t| *t > 0.0);
                english = crate::serve::advice::advise_in(&setup, target, super::lang::Lang::En)
                    .map_err(|e| e.to_string())?;
                &english
            };
            return serde_json::to_string_pretty(a).map(|t| t + "\n").map_err(|e| e.to_string());
        }
        use crate::serve::text;
        Ok(format!(
            "{}\n{}\n{}",
            text::answer(&sv.serve, &sv.gpu.name),
            text::advice_in(a, &sv.model_arg, false, super::lang::current()),
            text::advice_in(a, &sv.model_arg, true, super::lang::current())
        ))
    }

    fn export_serve(&mut self, json: bool) {
        let body = match self.serve_export_text(json) {
            Ok(b) => b,
            Err(e) => return self.set_status(StatusKind::Error, e),
        };
        let default = if json { "vramscope-serve.json" } else { "vramscope-serve.txt" };
        let Some(path) = rfd::FileDialog::new().set_file_name(default).save_file() else {
            return self.set_status(StatusKind::Info, tr().export_cancelled);
        };
        match crate::export::write_atomic(&path, body.as_bytes(), true) {
            Ok(()) => self.set_status(
                StatusKind::Info,
                tr().st_exported.replace("{path}", &path.display().to_string()),
            ),
            Err(e) => self.set_status(StatusKind::Error, e.to_string()),
        }
    }

    /// Renders an export with the core and writes it where the user chose.
    fn export(&mut self, format: crate::export::Format) {
        use crate::export::{self, ScenarioFile};
        let sc = match self.state.settings.to_scenario() {
            Ok(sc) => sc,
            Err(e) => return self.set_status(StatusKind::Error, e),
        };
        let gpu = crate::gpu::find(&self.state.settings.gpu_id).ok();
        let file = ScenarioFile::new(sc, gpu.as_ref(), None);
        let text = match export::render_in(&file, format, super::lang::current()) {
            Ok(t) => t,
            Err(e) => return self.set_status(StatusKind::Error, e.to_string()),
        };
        let default = format!("vramscope-{}.{}", format.name(), format.extension());
        let Some(path) = rfd::FileDialog::new().set_file_name(default.as_str()).save_file() else {
            return self.set_status(StatusKind::Info, tr().export_cancelled);
        };
        // the Markdown report links the chart, written next to it (never over an existing file)
        let mut text = text;
        let mut chart = None;
        if format == export::Format::Markdown {
            let stem = path.file_stem().map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
            let png = path.with_file_name(format!("{stem}.chart.png"));
            if !png.exists() {
                text = export::with_chart_link(&text, &format!("{stem}.chart.png"));
                chart = Some(png);
            }
        }
        // the dialog has asked about overwriting; the write itself is atomic
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

    fn live_action(&mut self, ctx: &egui::Context, a: panels::live::LiveAction) {
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

    /// Asks where, then renders the slide and writes it on the "vramscope-slide" thread (a few
    /// hundred milliseconds for 3840×2160 pixels); the status bar says when it is written.
    fn export_slide(&mut self) {
        let Some(Ok(c)) = &self.derived.current else {
            return self.set_status(StatusKind::Error, tr().export_none);
        };
        let Some(path) = rfd::FileDialog::new()
            .set_file_name("vramscope-slide.png")
            .add_filter("PNG", &["png"])
            .save_file()
        else {
            return self.set_status(StatusKind::Info, tr().export_cancelled);
        };
        let (c, settings, lang) = (c.clone(), self.state.settings.clone(), super::lang::current());
        let (tx, rx) = mpsc::channel();
        let shown = path.display().to_string();
        let spawned = std::thread::Builder::new().name("vramscope-slide".into()).spawn(move || {
            let err = super::slide::write(&c, &settings, lang, &path)
                .err()
                .map_or_else(String::new, |e| format!("{e:#}"));
            let _ = tx.send((path, err));
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

    fn screenshot_step(&mut self, ctx: &egui::Context) {
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
        if !job.requested && self.frame >= u64::from(job.after_frames) {
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
                    let err =
                        super::save_png(&img, &path).err().map_or_else(String::new, |e| format!("{e:#}"));
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
            let result = super::save_png(&img, &job.path);
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

impl eframe::App for VramApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.show(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if self.persist {
            storage.set_string(APP_KEY, self.state.to_stored());
        }
    }
}

/// The height of the chart row over the tabs, out of `avail` points: `share` of it, at least
/// `least`; on a projector the tab's curve or table under it keeps `BELOW` points (its tab strip,
/// hint and a plot tall enough for its axis labels and legend), down to a chart of 150.
fn presentation_split(avail: f32, share: f32, least: f32, presentation: bool) -> f32 {
    const BELOW: f32 = 190.0;
    let top = (avail * share).max(least);
    if presentation { top.min((avail - BELOW).max(150.0)) } else { top }
}

/// The presentation layout's zoom: the window's height over 560 points (1280x720 → 1.29,
/// 1920x1080 → 1.93), so the layout is always about 560 points high and its type grows with the
/// screen; never below 1.
pub fn presentation_zoom(ctx: &egui::Context) -> f32 {
    let native_h = ctx.viewport_rect().height() * ctx.zoom_factor();
    (native_h / 560.0).clamp(1.0, 2.5)
}
