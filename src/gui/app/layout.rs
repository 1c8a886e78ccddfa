//! The central panel: the chart row (the stacked bar and "Why this much?", or the Serve mode's
//! bar and budget) over the tab strip and the tab shown, laid out for a desk or a projector.

use crate::explain::Component;
use crate::gui::derived::{Computed, Derived, ServeComputed};
use crate::gui::intent::Intent;
use crate::gui::live::Live;
use crate::gui::panels;
use crate::gui::panels::live::LiveAction;
use crate::gui::snapshots::Snapshots;
use crate::gui::state::{AppState, Tab};
use eframe::egui;

/// What the central panel reads and writes, borrowed apart from the app so the derived results
/// can be read while the live view, the snapshot path and the chart's rect change.
pub(super) struct Central<'a> {
    pub(super) state: &'a AppState,
    pub(super) derived: &'a Derived,
    pub(super) live: &'a mut Live,
    pub(super) snapshots: &'a Snapshots,
    pub(super) snapshot_path: &'a mut String,
    /// Where the breakdown chart was drawn (for the chart-only PNG).
    pub(super) chart_rect: &'a mut Option<egui::Rect>,
    /// The timeline event shown in "Why this much?" (with the recomputation it belongs to).
    pub(super) selected_event: Option<(u64, usize)>,
    /// The Options tab's hardware paths.
    pub(super) option_paths: &'a [crate::options::HardwarePath],
    /// The segments the lesson shown is about.
    pub(super) focus: &'a [Component],
    /// What the panels asked for, in order.
    pub(super) intents: Vec<Intent>,
    pub(super) live_actions: Vec<LiveAction>,
}

impl Central<'_> {
    /// Draws the Serve mode's answer, or the estimate, or the error that stands for it.
    pub(super) fn ui(&mut self, ui: &mut egui::Ui) {
        let derived = self.derived;
        let serving = self.state.settings.serving;
        match (&derived.serve, &derived.current) {
            (Some(Ok(sv)), _) if serving => self.serve_view(ui, sv),
            (Some(Err(e)), _) if serving => {
                ui.heading(e.as_str());
            }
            (_, Some(Ok(c))) => self.estimate_view(ui, c),
            (_, Some(Err(e))) => {
                ui.heading(e.as_str());
            }
            (_, None) => {}
        }
    }

    /// Serve mode: the headline, the bar beside the budget, the tabs.
    fn serve_view(&mut self, ui: &mut egui::Ui, sv: &ServeComputed) {
        let presentation = self.state.view.presentation;
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
        let top_h = chart_height(ui.available_height(), share, least, below_need(ui.ctx()));
        ui.horizontal_top(|ui| {
            let w = ui.available_width();
            let down = egui::Layout::top_down(egui::Align::Min);
            let chart = ui.allocate_ui_with_layout(egui::vec2(w * 0.45, top_h), down, |ui| {
                panels::serve::bar::ui(ui, sv, top_h);
            });
            *self.chart_rect = Some(chart.response.rect);
            ui.add_space(10.0);
            ui.allocate_ui_with_layout(egui::vec2(ui.available_width(), top_h), down, |ui| {
                ui.set_min_height(top_h);
                panels::serve::why::ui(ui, sv);
            });
        });
        let row_bottom = ui.cursor().top();
        ui.separator();
        self.intents.extend(panels::tabs::ui_serve(ui, self.state.view.tab));
        match self.state.view.tab {
            Tab::Options => self.intents.extend(panels::serve::options::ui(ui, sv, &self.state.settings)),
            Tab::Live => {
                if let Some(Ok(c)) = &self.derived.current {
                    self.live_actions = panels::live::ui(ui, c, self.live);
                }
            }
            _ => self.intents.extend(panels::serve::curve::ui(ui, sv, &self.state.settings)),
        }
        note_head(ui.ctx(), row_bottom);
    }

    /// The estimate: the headline, the stacked bar beside "Why this much?", the tabs.
    fn estimate_view(&mut self, ui: &mut egui::Ui, c: &Computed) {
        let presentation = self.state.view.presentation;
        panels::headline::ui(ui, c, &self.state.settings, presentation);
        // a timeline event shown in "Why this much?": the headline and the bar say they did not move
        let events = c.timeline.as_ref().map_or(0, |tl| tl.events.len());
        if self.selected_event.is_some_and(|(r, i)| r == self.derived.recomputations && i < events) {
            let note = crate::gui::strings::tr_controls().headline_at_peak;
            ui.add(egui::Label::new(egui::RichText::new(note).italics()).wrap());
        }
        ui.add_space(6.0);
        // a lesson's chart is the lesson's scenario alone (the user's pins come back on leaving)
        let lesson_shown = self.state.view.learn.is_some();
        let pinned: Vec<(&str, &Computed)> = self
            .derived
            .pinned
            .iter()
            .filter(|_| !lesson_shown)
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
        } else if learning {
            (0.45, 150.0)
        } else if presentation {
            (0.6, 250.0)
        } else {
            (0.5, 250.0)
        };
        let top_h = chart_height(ui.available_height(), share, least, below_need(ui.ctx()));
        ui.horizontal_top(|ui| {
            let w = ui.available_width();
            let down = egui::Layout::top_down(egui::Align::Min);
            let measured = self.live.bar_measure();
            let chart = ui.allocate_ui_with_layout(egui::vec2(w * 0.52, top_h), down, |ui| {
                panels::breakdown::ui(ui, c, &pinned, top_h, measured, self.focus);
            });
            *self.chart_rect = Some(chart.response.rect);
            ui.add_space(10.0);
            ui.allocate_ui_with_layout(egui::vec2(ui.available_width(), top_h), down, |ui| {
                ui.set_min_height(top_h);
                // the Why column's room, for the tests that check it stays readable
                ui.ctx().data_mut(|d| d.insert_temp(panels::why::column_id(), ui.max_rect()));
                let at = self
                    .selected_event
                    .filter(|(r, _)| *r == self.derived.recomputations)
                    .and_then(|(_, i)| c.moment_at(i));
                self.intents.extend(panels::why::ui(ui, c, at.as_ref(), self.focus));
            });
        });
        let row_bottom = ui.cursor().top();
        ui.separator();
        // a convolutional network has no blocks to checkpoint: no segments curve either
        // nor a traced model, whose dims have their own sliders (no sequence to sweep)
        let traced = c.scenario.model.traced().is_some();
        let train =
            c.scenario.mode == crate::estimate::Mode::Train && c.scenario.model.net().is_none() && !traced;
        let image = c.scenario.image_size().is_some();
        let seq = !traced;
        self.intents.extend(panels::tabs::ui(ui, self.state.view.tab, train, image, seq));
        let selected = self.selected_event.filter(|(r, _)| *r == self.derived.recomputations).map(|(_, i)| i);
        // a saved Segments tab shows the batch curve while the mode is inference
        let tab = match self.state.view.tab {
            Tab::Segments if !train => Tab::Batch,
            Tab::Seq if traced => Tab::Batch,
            Tab::Concurrency => Tab::Batch,
            t => t,
        };
        match tab {
            Tab::Timeline => {
                let lesson = !self.focus.is_empty();
                self.intents.extend(panels::timeline::ui(
                    ui,
                    c,
                    selected,
                    self.snapshots,
                    self.snapshot_path,
                    lesson,
                ));
            }
            Tab::Compare => self.intents.extend(panels::compare::ui(ui, c, &pinned)),
            Tab::Live => self.live_actions = panels::live::ui(ui, c, self.live),
            Tab::Options => {
                self.intents.extend(panels::options::ui(
                    ui,
                    c,
                    self.option_paths,
                    self.derived.roadmap.as_ref(),
                    &self.state.view,
                ));
            }
            tab => self.intents.extend(panels::curves::ui(ui, c, tab, &self.state.settings)),
        }
        note_head(ui.ctx(), row_bottom);
    }
}

/// The least height of the chart row, points (the bar, its labels and a few ticks).
const CHART_MIN: f32 = 110.0;

fn head_id() -> egui::Id {
    egui::Id::NULL.with("vramscope-tab-head")
}

/// Keeps how far below the chart row (at `row_bottom`) this frame's plot under the tabs started:
/// the separator, the tab strip and the tab's own rows over its plot. A change is laid out again
/// at once.
fn note_head(ctx: &egui::Context, row_bottom: f32) {
    let Some(top) = panels::plot_top(ctx) else { return };
    let head = (top - row_bottom).max(0.0);
    let before: Option<f32> = ctx.data(|d| d.get_temp(head_id()));
    if before.is_none_or(|b| (b - head).abs() > 0.5) {
        ctx.data_mut(|d| d.insert_temp(head_id(), head));
        ctx.request_repaint();
    }
}

/// What the tab under the chart row needs: its rows over the plot (as last laid out; a tab strip
/// and a line of text before that) and the plot's least height.
fn below_need(ctx: &egui::Context) -> f32 {
    let head: f32 = ctx.data(|d| d.get_temp(head_id())).unwrap_or(70.0);
    head + panels::MIN_PLOT + 8.0
}

/// The height of the chart row over the tabs, out of `avail` points: `share` of it, at least
/// `least`, but leaving the tab under it `need` (its rows and a plot of [`panels::MIN_PLOT`]),
/// down to a chart of [`CHART_MIN`].
pub(super) fn chart_height(avail: f32, share: f32, least: f32, need: f32) -> f32 {
    (avail * share).max(least).min(avail - need).max(CHART_MIN)
}

/// The presentation layout's zoom: the window's height over 560 points (1280x720 → 1.29,
/// 1920x1080 → 1.93), so the layout is always about 560 points high and its type grows with the
/// screen; never below 1. With a lesson's text at the bottom the layout is 640 points high
/// (1280x720 → 1.13), so the lesson's chart and curve keep their room.
pub fn presentation_zoom(ctx: &egui::Context, learning: bool) -> f32 {
    let native_h = ctx.viewport_rect().height() * ctx.zoom_factor();
    let points = if learning { 640.0 } else { 560.0 };
    (native_h / points).clamp(1.0, 2.5)
}
