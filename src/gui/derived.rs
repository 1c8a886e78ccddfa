//! Everything the panels show, computed by the core from the settings — and recomputed only when
//! the settings change.

use super::state::{AppState, Settings};
use crate::estimate::{Estimate, Scenario, estimate};
use crate::explain::{Explanation, explain_in};
use crate::fit::{Knob, SweepPoint, exact_point, insert_point, max_batch, sweep};
use crate::gpu::{self, Gpu};

/// Results for one scenario.
#[derive(Clone, Debug)]
pub struct Computed {
    pub scenario: Scenario,
    pub estimate: Estimate,
    pub explanations: Vec<Explanation>,
    pub gpu: Gpu,
    pub max_batch: Option<u64>,
    /// The longest sequence that fits at the micro-batch (`fit::max_seq`).
    pub max_seq: Option<u64>,
    /// One what-if curve per knob (in `Knob::ALL` order), computed when first drawn: each point
    /// is what `vramscope estimate` prints with the knob at its value on this card, the allocator
    /// replayed (`fit::sweep`), with the current value (the bar's total) and the marked points.
    curves: [std::cell::OnceCell<Vec<SweepPoint>>; 4],
    /// The sampled points of each curve computed so far, with the settings they are for less the
    /// knob's own ([`curve_key`]): reused while only that knob moves.
    sampled: [std::cell::OnceCell<(Settings, Vec<SweepPoint>)>; 4],
    /// The settings this was computed for.
    settings: Settings,
    /// What each op of each kind of block keeps.
    pub block_ops: Vec<crate::estimate::BlockOps>,
    /// The step event by event (None when the walk is refused).
    pub timeline: Option<crate::estimate::step::Timeline>,
    /// The caching allocator replayed over the timeline (reserved bytes event by event).
    pub reserved: Option<crate::estimate::reserved::Reserved>,
    /// The scenario's verdict on each catalog card (fits, total), computed when first asked for
    /// (the Options tab's run costs), not on every slider move.
    card_verdicts: std::cell::OnceCell<Vec<(String, bool, u64)>>,
    /// What stays while only the micro-batch changes (dragging the batch slider reuses it).
    batch_free: BatchFree,
    /// What stays while only the sequence length changes: the longest sequence that fits.
    seq_free: (Settings, Option<u64>, Option<SweepPoint>),
    /// Each pipeline stage's predicted total (`estimate --stages`), computed when the Live tab
    /// first reads a cluster against it.
    stage_totals: std::cell::OnceCell<Vec<u64>>,
}

/// What does not depend on the micro-batch: the largest micro-batch that fits (a search that
/// replays the allocator tens of times) and the batch curve's exact points at it and the next,
/// for the settings with the batch left out.
#[derive(Clone, Debug)]
struct BatchFree {
    key: Settings,
    max_batch: Option<u64>,
    marks: Vec<SweepPoint>,
}

impl BatchFree {
    fn key(settings: &Settings) -> Settings {
        Settings { batch: 0, ..settings.clone() }
    }

    /// Reuses `prev` when only the micro-batch changed, else searches again.
    fn of(settings: &Settings, scenario: &Scenario, cap: u64, prev: Option<&Self>) -> Self {
        let key = Self::key(settings);
        if let Some(p) = prev.filter(|p| p.key == key) {
            return p.clone();
        }
        let max_batch = max_batch(scenario, cap);
        let marks = [max_batch, max_batch.map(|m| m + 1)]
            .into_iter()
            .flatten()
            .filter_map(|x| exact_point(scenario, Knob::Batch, x, cap))
            .collect();
        Self { key, max_batch, marks }
    }
}

/// Log-spaced steps of the batch and sequence curves the window draws (26 points: every point is
/// an allocator replay; the CSV export samples 65).
const GUI_CURVE_STEPS: u32 = 25;

/// The settings a knob's sampled curve depends on: all of them but the knob's own.
fn curve_key(settings: &Settings, knob: Knob) -> Settings {
    match knob {
        Knob::Batch => Settings { batch: 0, ..settings.clone() },
        // a vision backbone's image is the knob; a vision-language model's images stay
        Knob::Seq => {
            Settings { seq: 0, image: settings.image.filter(|_| settings.images > 0), ..settings.clone() }
        }
        Knob::Segments => {
            Settings { checkpointing: crate::estimate::Checkpointing::None, ..settings.clone() }
        }
        Knob::Gpus => Settings { dp: 0, ..settings.clone() },
    }
}

fn knob_index(knob: Knob) -> usize {
    Knob::ALL.iter().position(|k| *k == knob).unwrap_or(0)
}

/// The knob's value in `scenario` (`None`: the segment count of a scenario not checkpointed in
/// segments).
fn current_value(scenario: &Scenario, knob: Knob) -> Option<u64> {
    match knob {
        Knob::Batch => Some(scenario.batch),
        // a vision model's sequence knob is its image side
        Knob::Seq => Some(scenario.image_size().map_or(scenario.text_tokens(), |i| i.height.max(i.width))),
        Knob::Gpus => Some(scenario.parallel.dp),
        Knob::Segments => match scenario.checkpointing {
            crate::estimate::Checkpointing::Segments(n) => Some(n),
            _ => None,
        },
    }
}

/// One timeline event explained as "Why this much?" explains the peak.
#[derive(Clone, Debug)]
pub struct MomentView {
    /// Index of the event.
    pub index: usize,
    /// The event.
    pub event: crate::estimate::step::Event,
    /// Each component at that moment with its formula.
    pub explanations: Vec<Explanation>,
}

impl Computed {
    /// Where each fact about a loaded or fetched model came from (empty for a preset).
    pub fn model_facts(&self) -> &[crate::model::header_check::Fact] {
        match &self.settings.model {
            super::state::ModelChoice::Custom { facts, .. } => facts,
            _ => &[],
        }
    }

    /// Computes everything for `settings`.
    pub fn new(settings: &Settings) -> Result<Self, String> {
        Self::after(settings, None)
    }

    /// Computes everything for `settings`, reusing from `prev` what only the micro-batch does
    /// not change (the largest micro-batch and the curve's points at it).
    pub fn after(settings: &Settings, prev: Option<&Self>) -> Result<Self, String> {
        let scenario = settings.to_scenario()?;
        let gpu = gpu::find(&settings.gpu_id)?;
        let cap = gpu.capacity();
        // the estimate `vramscope estimate` prints: the allocator replayed on this card
        let (estimate, timeline, reserved) = match crate::estimate::replayed(&scenario, Some(cap)) {
            Ok((tl, r)) => (tl.estimate.clone(), Some(tl), Some(r)),
            Err(_) => (estimate(&scenario).map_err(|e| e.to_string())?, None, None),
        };
        let explanations = explain_in(&scenario, &estimate, super::lang::current());
        let batch_free = BatchFree::of(settings, &scenario, cap, prev.map(|p| &p.batch_free));
        let max_batch = batch_free.max_batch;
        let seq_key =
            Settings { seq: 0, image: settings.image.filter(|_| settings.images > 0), ..settings.clone() };
        let seq_free = match prev.map(|p| &p.seq_free) {
            Some((k, m, p)) if *k == seq_key => (seq_key, *m, *p),
            _ => {
                let m = crate::fit::max_seq(&scenario, cap);
                (seq_key, m, m.and_then(|x| exact_point(&scenario, Knob::Seq, x, cap)))
            }
        };
        let max_seq = seq_free.1;
        let sampled: [std::cell::OnceCell<(Settings, Vec<SweepPoint>)>; 4] = Default::default();
        if let Some(p) = prev {
            for knob in Knob::ALL {
                let i = knob_index(knob);
                if let Some(c) = p.sampled[i].get().filter(|c| c.0 == curve_key(settings, knob)) {
                    let _ = sampled[i].set(c.clone());
                }
            }
        }
        let block_ops = crate::estimate::block_ops(&scenario);
        Ok(Self {
            timeline,
            reserved,
            max_batch,
            max_seq,
            seq_free,
            scenario,
            estimate,
            explanations,
            gpu,
            curves: Default::default(),
            sampled,
            settings: settings.clone(),
            block_ops,
            card_verdicts: std::cell::OnceCell::new(),
            batch_free,
            stage_totals: std::cell::OnceCell::new(),
        })
    }

    /// The scenario's verdict on a catalog card: whether it fits and its total there (the
    /// allocator replayed on that card, as `estimate --gpu` does).
    pub fn on_card(&self, g: &Gpu) -> Option<(bool, u64)> {
        let all = self.card_verdicts.get_or_init(|| {
            gpu::catalog()
                .iter()
                .filter_map(|c| {
                    let v = crate::fit::verdict(&self.scenario, c.capacity()).ok()?;
                    Some((c.id.clone(), v.fits, v.estimate.total))
                })
                .collect()
        });
        all.iter().find(|(id, _, _)| *id == g.id).map(|&(_, f, t)| (f, t))
    }

    /// Each pipeline stage's predicted total on this card, stage 0 first, as `vramscope estimate
    /// --stages` gives them (one stage without pipeline parallelism: the estimate's total).
    pub fn stage_totals(&self) -> &[u64] {
        self.stage_totals.get_or_init(|| {
            if self.scenario.parallel.pp <= 1 {
                return vec![self.estimate.total];
            }
            crate::estimate::per_stage(&self.scenario, Some(self.capacity()))
                .map(|v| v.iter().map(|e| e.total).collect())
                .unwrap_or_default()
        })
    }

    /// Event `i` of the timeline with its explanation.
    pub fn moment_at(&self, i: usize) -> Option<MomentView> {
        let event = *self.timeline.as_ref()?.events.get(i)?;
        let mut e = self.estimate.clone();
        e.peak = event.moment();
        e.peak_allocated = event.alive.total();
        Some(MomentView {
            index: i,
            event,
            explanations: explain_in(&self.scenario, &e, super::lang::current()),
        })
    }

    /// Capacity of the chosen GPU in bytes.
    pub fn capacity(&self) -> u64 {
        self.gpu.capacity()
    }

    /// Does the total fit (and does the replayed allocator never run out)?
    pub fn fits(&self) -> bool {
        self.estimate.total <= self.capacity() && self.reserved.as_ref().is_none_or(|r| r.ooms == 0)
    }

    /// Memory outside PyTorch's allocator: the CUDA context and NCCL's buffers.
    pub fn outside_allocator(&self) -> u64 {
        crate::estimate::context::outside(&self.scenario).total()
    }

    /// The allocator's cache at the peak (reserved less allocated, at least the cuBLAS
    /// workspace), when the allocator was replayed.
    pub fn cache_at_peak(&self) -> Option<u64> {
        let e = &self.estimate;
        e.reserved
            .map(|r| r.saturating_sub(e.peak_allocated).max(self.scenario.overhead.workspace_bytes))
            .map(|c| c.min(e.overhead))
    }

    /// The curve of one knob.
    pub fn curve(&self, k: Knob) -> &[SweepPoint] {
        self.curves[knob_index(k)].get_or_init(|| self.build_curve(k))
    }

    /// The curve of `knob`: its sampled points (reused from the settings before where only this
    /// knob moved), the current value and, on the batch and sequence curves, the largest that
    /// fits and (batch) the one after it.
    fn build_curve(&self, knob: Knob) -> Vec<SweepPoint> {
        let cap = self.capacity();
        let (_, sampled) = self.sampled[knob_index(knob)].get_or_init(|| {
            let values = knob.values_n(&self.scenario, GUI_CURVE_STEPS);
            (curve_key(&self.settings, knob), sweep(&self.scenario, knob, values, Some(cap)))
        });
        let mut pts = sampled.clone();
        let now = &self.estimate;
        if let Some(x) = current_value(&self.scenario, knob) {
            let p = SweepPoint {
                x,
                peak: now.peak_allocated,
                total: now.total,
                phases: now.phase_peaks,
                activations: now.activations,
                fits: self.fits(),
            };
            insert_point(&mut pts, p);
        }
        let marks: Vec<SweepPoint> = match knob {
            Knob::Batch => self.batch_free.marks.clone(),
            Knob::Seq => self.seq_free.2.into_iter().collect(),
            _ => Vec::new(),
        };
        for m in marks.into_iter().filter(|m| Some(m.x) != current_value(&self.scenario, knob)) {
            insert_point(&mut pts, m);
        }
        pts
    }
}

/// Results of the Serve mode: the server's answer, its concurrency curve and its advice.
#[derive(Clone, Debug)]
pub struct ServeComputed {
    /// `vramscope serve` for these settings.
    pub serve: crate::serve::Serve,
    /// The card.
    pub gpu: Gpu,
    /// Concurrent requests against context length.
    pub curve: Vec<(u64, f64)>,
    /// The options and the roadmap (or why they could not be computed).
    pub advice: Result<crate::serve::advice::ServeAdvice, String>,
    /// The `--model` value that names the model on the command line.
    pub model_arg: String,
}

impl ServeComputed {
    /// Computes the server of `settings`, its advice in the interface's language.
    pub fn new(settings: &Settings) -> Result<Self, String> {
        let setup = settings.to_serve_setup()?;
        let serve =
            crate::serve::serve(&setup.model, &setup.gpu, &setup.cfg, setup.checkpoint_dtype.as_deref())
                .map_err(|e| e.to_string())?;
        let target = Some(settings.serve.target_concurrency).filter(|t| *t > 0.0);
        let advice = crate::serve::advice::advise_in(&setup, target, super::lang::current())
            .map_err(|e| e.to_string());
        let model_arg = match &settings.model {
            super::state::ModelChoice::Custom { path, .. } => path.clone(),
            _ => crate::flags::model_arg(&setup.model),
        };
        Ok(Self { curve: serve.concurrency_curve(), serve, gpu: setup.gpu, advice, model_arg })
    }

    /// The command line that gives this answer.
    pub fn command(&self) -> String {
        format!("vramscope serve --model {} {}", self.model_arg, self.serve.args().join(" "))
    }
}

/// Cache keyed by the state it was computed from.
#[derive(Default)]
pub struct Derived {
    /// What the results were computed for: the settings, the pins and the language of their texts.
    key: Option<(Settings, Vec<Settings>, super::lang::Lang)>,
    /// The current scenario.
    pub current: Option<Result<Computed, String>>,
    /// Pinned scenarios (label, result).
    pub pinned: Vec<(String, Result<Computed, String>)>,
    /// How many times anything was recomputed (for tests of "recompute only on change").
    pub recomputations: u64,
    /// Hardware paths of the current scenario, computed only while the Options tab is shown
    /// (a layout search per GPU count), keyed by the settings they were computed for.
    pub options: Option<(Settings, Vec<crate::options::HardwarePath>)>,
    /// The roadmap of the current scenario, computed with the options.
    pub roadmap: Option<crate::roadmap::Roadmap>,
    /// The server, in Serve mode.
    pub serve: Option<Result<ServeComputed, String>>,
    /// The language the hardware paths and the roadmap were written in.
    options_lang: super::lang::Lang,
}

impl Derived {
    /// Recomputes if the settings or pins changed since last time; a change of the interface
    /// language alone rewrites the texts (explanations, the server's advice), which is not
    /// counted as a recomputation.
    pub fn update(&mut self, state: &AppState) {
        let pins: Vec<Settings> = state.pinned.iter().map(|p| p.settings.clone()).collect();
        let lang = super::lang::current();
        if let Some((s, p, l)) = &mut self.key
            && *s == state.settings
            && *p == pins
        {
            if *l != lang {
                // the same numbers in another language: the texts are rewritten, nothing is
                // recomputed (a selected timeline event stays selected)
                *l = lang;
                self.serve = state.settings.serving.then(|| ServeComputed::new(&state.settings));
                for c in self.current.iter_mut().chain(self.pinned.iter_mut().map(|(_, c)| c)).flatten() {
                    c.explanations = explain_in(&c.scenario, &c.estimate, lang);
                }
            }
            return;
        }
        self.recomputations += 1;
        self.serve = state.settings.serving.then(|| ServeComputed::new(&state.settings));
        let prev = self.current.as_ref().and_then(|c| c.as_ref().ok());
        self.current = Some(Computed::after(&state.settings, prev));
        self.pinned = state.pinned.iter().map(|p| (p.label.clone(), Computed::new(&p.settings))).collect();
        self.key = Some((state.settings.clone(), pins, lang));
    }

    /// The hardware paths of the current scenario (computed on first use after a change of the
    /// settings or of the interface language).
    pub fn options(&mut self, settings: &Settings) -> &[crate::options::HardwarePath] {
        let lang = super::lang::current();
        if self.options.as_ref().is_none_or(|(s, _)| s != settings) || self.options_lang != lang {
            let (paths, roadmap) = match &self.current {
                Some(Ok(c)) => {
                    let global = c.scenario.batch * c.scenario.parallel.dp;
                    let speed = crate::plan::SpeedModel::default();
                    (
                        crate::options::hardware_paths_in(&c.scenario, &c.gpu, global, &speed, lang),
                        crate::roadmap::roadmap_in(&c.scenario, &c.gpu, 0.0, lang),
                    )
                }
                _ => (Vec::new(), None),
            };
            self.roadmap = roadmap;
            self.options = Some((settings.clone(), paths));
            self.options_lang = lang;
        }
        self.options.as_ref().map_or(&[], |(_, p)| p.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dragging the batch slider reuses the largest micro-batch and the curve's points at it:
    /// what it shows is what a fresh computation shows, and a change of anything else searches
    /// again.
    #[test]
    fn a_new_micro_batch_reuses_only_what_the_batch_does_not_change() {
        let s1 = Settings::default();
        let first = Computed::new(&s1).unwrap_or_else(|e| panic!("{e}"));
        let _ = first.curve(Knob::Batch);
        let s2 = Settings { batch: s1.batch + 2, ..s1.clone() };
        let reused = Computed::after(&s2, Some(&first)).unwrap_or_else(|e| panic!("{e}"));
        // the batch curve's sampled points do not depend on the batch: kept; the others are
        // computed when drawn
        assert!(reused.sampled[knob_index(Knob::Batch)].get().is_some(), "the batch curve is reused");
        assert!(reused.sampled[knob_index(Knob::Seq)].get().is_none());
        let fresh = Computed::new(&s2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reused.max_batch, fresh.max_batch);
        assert_eq!(reused.estimate.total, fresh.estimate.total);
        for k in Knob::ALL {
            assert_eq!(format!("{:?}", reused.curve(k)), format!("{:?}", fresh.curve(k)), "{k:?}");
        }
        assert_eq!(reused.batch_free.key, BatchFree::key(&s1), "the batch is left out of the key");
        // another sequence length is another search
        let s3 = Settings { seq: s1.seq * 2, ..s1.clone() };
        let other = Computed::after(&s3, Some(&first)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(other.max_batch, Computed::new(&s3).unwrap_or_else(|e| panic!("{e}")).max_batch);
        assert_ne!(other.max_batch, first.max_batch, "the default model's largest batch depends on seq");
    }

    /// Every point of every what-if curve is what `vramscope estimate` prints with the knob's
    /// flag at that value on this card (the allocator replayed, as the headline): once the
    /// sampled points used the flat 5 % reserve, anchored to a few exact ones.
    #[test]
    fn every_curve_point_is_the_estimate_at_its_value() {
        let s = Settings::default();
        let c = Computed::new(&s).unwrap_or_else(|e| panic!("{e}"));
        let cap = c.capacity();
        for knob in Knob::ALL {
            let pts = c.curve(knob);
            assert!(!pts.is_empty(), "{knob:?}");
            for p in pts.iter().step_by(7) {
                let mut sc = c.scenario.clone();
                knob.apply(&mut sc, p.x);
                let (e, fits) = crate::fit::printed(&sc, Some(cap)).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!((p.total, p.fits), (e.total, fits), "{knob:?} at {}", p.x);
            }
        }
    }
}
