//! The explorer app: wires the panels in order and applies the intents they return. `layout`
//! draws the central panel (the chart row over the tabs), `exports` writes files (exports, PNGs,
//! the slide, recordings) and reads the Live tab's recordings.

use super::derived::Derived;
use super::intent::Intent;
use super::panels;
use super::state::{APP_KEY, AppState, Pinned, Settings, Tab};
use super::strings::tr;
use crate::model::preset;
use eframe::egui;
use layout::Central;
pub use layout::presentation_zoom;
use std::path::Path;
use std::sync::mpsc;

mod exports;
mod hub;
mod layout;
mod save;

pub use save::{SavePrompt, SaveWhat};

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
    /// The user's undo and redo history, put aside while the lessons run.
    saved_history: Option<(Vec<Settings>, Vec<Settings>)>,
    last_edit: Option<(&'static str, f64)>,
    /// Status bar message.
    pub status: (StatusKind, String),
    /// The path field under the model picker.
    pub path_input: String,
    /// The Hub id field and its fetch; `hub.access` says where the Hub is (the environment's by
    /// default, as the CLI reads it).
    pub hub: super::hub::HubFetch,
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
    /// Help → Keyboard shortcuts is open.
    pub shortcuts_open: bool,
    /// The save prompt an export opened (where to write it), if one is open.
    pub save_prompt: Option<SavePrompt>,
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
            saved_history: None,
            last_edit: None,
            status: (StatusKind::Info, tr().ready.to_owned()),
            path_input: String::new(),
            hub: super::hub::HubFetch::default(),
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
            shortcuts_open: false,
            save_prompt: None,
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

    /// Applies one intent. An error shown from an earlier action is cleared first: it is stale
    /// once the user does something else (the intent sets a new one if it fails too).
    pub fn apply(&mut self, ctx: &egui::Context, intent: Intent) {
        if self.status.0 == StatusKind::Error {
            self.status = (StatusKind::Info, tr().ready.to_owned());
        }
        match intent {
            Intent::Edit { settings, knob } => self.edit(ctx, *settings, knob),
            // a memory snapshot opens over the timeline; anything else is a model
            Intent::LoadPath(path) if path.trim().ends_with(".pickle") => {
                self.snapshots.open(path.trim());
                self.state.view.tab = Tab::Timeline;
            }
            Intent::LoadPath(path) => self.load_path(ctx, path.trim()),
            Intent::FetchHub(id) => self.fetch_hub(ctx, &id),
            Intent::CancelHub => self.cancel_hub(),
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
            Intent::Learn(step) => self.learn_step(step),
            Intent::SetLang(l) => self.set_lang(l),
            Intent::Fullscreen(on) => ctx.send_viewport_cmd(egui::ViewportCommand::Fullscreen(on)),
            Intent::Zoom(step) => self.state.view.zoom = step.apply(self.state.view.user_zoom()),
            Intent::ShowShortcuts(open) => self.shortcuts_open = open,
            Intent::Quit => ctx.send_viewport_cmd(egui::ViewportCommand::Close),
            Intent::Export(format) => self.ask_save(SaveWhat::Format(format)),
            Intent::ExportServe { json } => self.ask_save(SaveWhat::Serve { json }),
            Intent::SaveAs(path) => self.save_to(ctx, &path),
            Intent::CancelSave => self.cancel_save(),
            Intent::SetRunCost { tokens_b, mfu } => {
                self.state.view.run_tokens_b = tokens_b.clamp(1e-6, 1e6);
                self.state.view.mfu = mfu.clamp(0.05, 0.9);
            }
            Intent::ExportSlide => {
                // nothing to draw: said at once, not after the prompt
                match &self.derived.current {
                    Some(Ok(_)) => self.ask_save(SaveWhat::Slide),
                    _ => self.set_status(StatusKind::Error, tr().export_none),
                }
            }
            Intent::ExportPng { chart_only } => self.ask_save(SaveWhat::Png { chart_only }),
        }
    }

    /// Steps the Learn view. A lesson's scenario is not an edit of the user's: the lessons keep
    /// an undo history of their own (the room's edits of the lesson shown), and leaving brings
    /// back the user's scenario with the user's own history.
    fn learn_step(&mut self, step: super::learn::LearnStep) {
        let v = &mut self.state.view;
        let was_learning = v.learn.is_some();
        let Some(s) = super::learn::step(&mut v.learn, &self.state.settings, &mut v.tab, step) else {
            return;
        };
        let learning = v.learn.is_some();
        if !was_learning && learning {
            self.saved_history = Some((std::mem::take(&mut self.undo), std::mem::take(&mut self.redo)));
        } else if was_learning && !learning {
            let (undo, redo) = self.saved_history.take().unwrap_or_default();
            (self.undo, self.redo) = (undo, redo);
        } else {
            // each lesson starts a history of its own
            self.undo.clear();
            self.redo.clear();
        }
        self.last_edit = None;
        self.state.settings = s;
        self.selected_event = None;
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
                let name = loaded.model.name.clone();
                let notes = if loaded.notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", loaded.notes.join("; "))
                };
                self.use_model(ctx, path, loaded);
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
        // "Ready." in the language that was shown is "Ready." in the new one
        let ready = [super::strings::main::EN.ready, super::strings::main::ZH.ready];
        if self.status.0 == StatusKind::Info && ready.contains(&self.status.1.as_str()) {
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
        // one zoom: the user's (kept in the saved view) times the presentation layout's; egui's
        // own zoom keys would be undone here every frame, so they are off and ours read them
        ctx.options_mut(|o| o.zoom_with_keyboard = false);
        let learning = self.state.view.learn.is_some();
        let base = if self.state.view.presentation { presentation_zoom(&ctx, learning) } else { 1.0 };
        let zoom = base * self.state.view.user_zoom();
        panels::set_presentation(&ctx, self.state.view.presentation);
        if (ctx.zoom_factor() - zoom).abs() > f32::EPSILON {
            ctx.set_zoom_factor(zoom);
        }
        if let Some(p) = self.pending_open.take() {
            self.apply(&ctx, Intent::LoadPath(p));
        }
        self.poll_hub(&ctx);
        self.derived.update(&self.state);
        self.live.drain();
        if self.snapshots.poll() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
        let mut intents: Vec<Intent> = Vec::new();
        intents.extend(panels::shortcuts::read(&ctx));
        intents.extend(panels::drop::read(&ctx));
        // the save prompt's field takes the arrows and Escape while it is open
        if self.state.view.learn.is_some() && self.save_prompt.is_none() {
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
                    let (input, pending) = self.hub.field();
                    let hub = panels::hub::HubField { input, pending, recent: &self.state.view.hub_recent };
                    intents.extend(panels::controls::ui(ui, &self.state.settings, &mut self.path_input, hub));
                });
            });
        }
        // the Options tab's paths need `&mut` (a lazily filled cache): fetch them before borrowing
        let option_paths = if self.state.view.tab == Tab::Options && !self.state.settings.serving {
            self.derived_options()
        } else {
            Vec::new()
        };
        let mut central = Central {
            state: &self.state,
            derived: &self.derived,
            live: &mut self.live,
            snapshots: &self.snapshots,
            snapshot_path: &mut self.snapshot_path,
            chart_rect: &mut self.chart_rect,
            selected_event: self.selected_event,
            option_paths: &option_paths,
            focus,
            intents: Vec::new(),
            live_actions: Vec::new(),
        };
        egui::CentralPanel::default().show(ui, |ui| central.ui(ui));
        intents.extend(panels::shortcuts::window(&ctx, self.shortcuts_open));
        let Central { intents: central_intents, live_actions, .. } = central;
        intents.extend(central_intents);
        if let Some(p) = &mut self.save_prompt {
            intents.extend(panels::save::ui(&ctx, p.what.label(), &mut p.path));
        }
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
}

/// Sizes the window to its monitor (a screenshot run under `xvfb-run -s '-screen 0 1920x1080x24'`
/// gives a 1920x1080 picture); true once they agree, or where the monitor is not known.
fn fit_screen(ctx: &egui::Context) -> bool {
    let (monitor, inner) = ctx.input(|i| (i.viewport().monitor_size, i.viewport().inner_rect));
    let (Some(m), Some(r)) = (monitor, inner) else { return true };
    if (r.size() - m).length() <= 1.0 && r.min.x.abs() <= 1.0 && r.min.y.abs() <= 1.0 {
        return true;
    }
    ctx.send_viewport_cmd(egui::ViewportCommand::OuterPosition(egui::pos2(0.0, 0.0)));
    ctx.send_viewport_cmd(egui::ViewportCommand::InnerSize(m));
    ctx.request_repaint();
    false
}

impl eframe::App for VramApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.show(ui);
    }

    /// A screenshot run's picture has no hover in it: the pointer (which a window system puts
    /// somewhere over the window) is taken away before each frame.
    fn raw_input_hook(&mut self, _ctx: &egui::Context, raw_input: &mut egui::RawInput) {
        if self.screenshot.as_ref().is_some_and(|j| j.exit_after) {
            raw_input.events.retain(|e| {
                !matches!(
                    e,
                    egui::Event::PointerMoved(_)
                        | egui::Event::PointerButton { .. }
                        | egui::Event::MouseMoved(_)
                )
            });
            raw_input.events.push(egui::Event::PointerGone);
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if self.persist {
            storage.set_string(APP_KEY, self.state.to_stored());
        }
    }
}
