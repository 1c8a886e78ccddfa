//! The Hub field's fetches as the app runs them: start one on the "vramscope-hub" thread (see
//! `gui::hub`), cancel it, and take its answer when a frame finds it: the model becomes a
//! `ModelChoice::Custom` named `ORG/NAME@COMMIT`, what `--model` takes to give the same answer.

use super::{StatusKind, VramApp};
use crate::gui::state::ModelChoice;
use crate::gui::strings::tr_controls;
use crate::hub;
use crate::model::preset::Loaded;
use eframe::egui;

/// How often a frame looks for the answer while a fetch runs (the thread also asks for a frame
/// when it is done).
const POLL: std::time::Duration = std::time::Duration::from_millis(100);

impl VramApp {
    /// Starts fetching the model `spec` names (`ORG/NAME[@REV]`); the window keeps drawing.
    pub(super) fn fetch_hub(&mut self, ctx: &egui::Context, spec: &str) {
        let spec = spec.trim();
        let id = match hub::parse_id(spec, None) {
            Some(Ok(id)) => id,
            Some(Err(e)) => return self.set_status(StatusKind::Error, e),
            None => {
                return self.set_status(StatusKind::Error, tr_controls().st_hub_not_id.replace("{id}", spec));
            }
        };
        let c = ctx.clone();
        if let Err(e) = self.hub.start(id, spec, move || c.request_repaint()) {
            self.set_status(StatusKind::Error, e);
        }
    }

    /// Stops waiting for the fetch in flight: the field is free at once, and the answer is
    /// dropped when it comes.
    pub(super) fn cancel_hub(&mut self) {
        if let Some(id) = self.hub.cancel() {
            self.set_status(StatusKind::Info, tr_controls().st_hub_cancelled.replace("{id}", &id));
        }
    }

    /// Takes the answer of the fetch in flight if it has come: the model, or the error in the
    /// status line (the scenario as it was).
    pub(super) fn poll_hub(&mut self, ctx: &egui::Context) {
        match self.hub.poll() {
            Some((id, Ok((loaded, source)))) => {
                let notes = loaded.notes.join("; ");
                let name = loaded.model.name.clone();
                // the commit, not the branch: the command shown gives the same number later
                self.use_model(ctx, &format!("{}@{}", source.repo, source.sha), loaded);
                self.state.view.remember_hub(&id);
                let msg = tr_controls().st_hub_loaded.replace("{name}", &name).replace("{notes}", &notes);
                self.set_status(StatusKind::Info, msg);
            }
            Some((_, Err(e))) => self.set_status(StatusKind::Error, e),
            None if self.hub.pending().is_some() => ctx.request_repaint_after(POLL),
            None => {}
        }
    }

    /// Makes `loaded` the model (one undo step), named on the command line by `path`; the
    /// sequence stays inside the model's positions.
    pub(super) fn use_model(&mut self, ctx: &egui::Context, path: &str, loaded: Loaded) {
        let mut s = self.state.settings.clone();
        s.model = ModelChoice::Custom {
            path: path.to_owned(),
            model: Box::new(loaded.model),
            dtype: loaded.dtype,
            facts: loaded.facts,
        };
        if let Ok(m) = s.model_spec()
            && let Some(t) = m.transformer()
            && t.usable_positions() > 0
        {
            s.seq = s.seq.min(t.usable_positions());
        }
        if let Ok(m) = s.model_spec()
            && m.traced().is_some()
        {
            // a trace answers in the precision and with the trainable set it ran with, at its
            // dims: start where it was traced (Scenario::new does), without checkpointing or LoRA
            let sc = crate::estimate::Scenario::new(m);
            (s.batch, s.image, s.precision) = (sc.batch, sc.image, sc.precision);
            s.dims.clear();
            s.checkpointing = crate::estimate::Checkpointing::None;
            s.lora_enabled = false;
        }
        self.edit(ctx, s, "model");
    }
}
