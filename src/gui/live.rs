//! Live monitoring state of the explorer: the sampling thread (this machine's NVML, or a cluster's
//! Prometheus), its bounded history, a range or recording loaded into it, the chosen GPU, pause,
//! the last problem the source reported, and each GPU's curve diagnosis. Runtime only; the source
//! settings are persisted in `View::live`.

use super::lang::Lang;
use super::state::{LiveSettings, LiveSource};
use super::strings_live::tr_live;
use crate::diagnose::trace::{self, TraceReport};
use crate::monitor::{GpuSample, History, Monitor, MonitorError, Sampler, Snapshot};
use std::sync::mpsc;
use std::time::Duration;

/// Builds a sampler for the chosen source (NVML or Prometheus in the app, a fake in tests).
pub type SamplerFactory = Box<dyn Fn(&LiveSettings) -> Result<Box<dyn Sampler>, MonitorError>>;

/// Ten minutes at the default 250 ms interval.
pub const HISTORY_SAMPLES: usize = 2400;

/// Seconds between Prometheus queries (DCGM exporters are scraped every 15-30 s; querying
/// faster only repeats the last value).
pub const PROMETHEUS_INTERVAL_MS: u64 = 5000;

/// One GPU's identity: (host, index on the host).
pub type GpuKey = (Option<String>, u32);

/// The curve diagnosis of one GPU over the history.
#[derive(Clone, Debug)]
pub struct GpuCurve {
    pub key: GpuKey,
    /// Its last sample (a GPU that stopped reporting keeps its last one).
    pub last: GpuSample,
    /// The most it used over the history, bytes.
    pub peak: u64,
    /// Seconds between its last sample and the newest of any GPU, where it stopped reporting
    /// (its node or exporter down): more than two sampling intervals.
    pub stopped_s: Option<f64>,
    /// Its report, or why there is none.
    pub report: Result<TraceReport, CurveGap>,
}

/// Why a GPU's curve has no diagnosis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurveGap {
    /// Fewer samples than the diagnosis needs.
    TooFew,
    /// Its total memory is unknown (a source without free memory): no fraction of the card.
    NoTotal,
}

/// What the Live tab works with.
pub struct Live {
    factory: SamplerFactory,
    monitor: Option<Monitor>,
    range_rx: Option<mpsc::Receiver<Result<Vec<Snapshot>, MonitorError>>>,
    /// Samples so far (bounded).
    pub history: History,
    /// GPU shown (its index on its host).
    pub gpu: u32,
    /// Host of the GPU shown (a cluster's).
    pub host: Option<String>,
    /// Process whose memory is drawn (`None`: the whole GPU).
    pub process: Option<u32>,
    /// Samples are dropped while paused.
    pub paused: bool,
    /// Milliseconds between NVML samples.
    pub interval_ms: u64,
    /// Why sampling is not running, in plain words.
    pub problem: Option<String>,
    /// Text pasted into the OOM explainer.
    pub oom_text: String,
    /// The source and cluster settings (the app keeps `View::live` equal to them).
    pub settings: LiveSettings,
    /// Where the history came from when it was loaded (a recording's path, a range).
    pub loaded: Option<String>,
    /// Show the most loaded GPU once the cluster view has mapped the ranks (set when a range or a
    /// recording arrives).
    pub show_worst: bool,
    /// The diagnoses of the history of (samples, newest time) in a language.
    curves: Option<(usize, f64, Lang, Vec<GpuCurve>)>,
}

impl Live {
    /// Live state over the real sources.
    pub fn new() -> Self {
        Self::with_factory(Box::new(real_sampler))
    }

    /// Live state over another sampler source.
    pub fn with_factory(factory: SamplerFactory) -> Self {
        Self {
            factory,
            monitor: None,
            range_rx: None,
            history: History::new(HISTORY_SAMPLES),
            gpu: 0,
            host: None,
            process: None,
            paused: false,
            interval_ms: 250,
            problem: None,
            oom_text: String::new(),
            settings: LiveSettings::default(),
            loaded: None,
            show_worst: false,
            curves: None,
        }
    }

    /// Is a sampling thread running?
    pub fn running(&self) -> bool {
        self.monitor.is_some()
    }

    /// Is a range being read?
    pub fn loading(&self) -> bool {
        self.range_rx.is_some()
    }

    /// Starts sampling (again); `wake` repaints the UI when a sample arrives.
    pub fn start(&mut self, wake: impl Fn() + Send + 'static) {
        self.monitor = None;
        let every = match self.settings.source {
            LiveSource::Nvml => self.interval_ms.max(10),
            LiveSource::Prometheus => PROMETHEUS_INTERVAL_MS,
        };
        match (self.factory)(&self.settings) {
            Ok(sampler) => match Monitor::start(sampler, Duration::from_millis(every), wake) {
                Ok(m) => {
                    self.monitor = Some(m);
                    self.problem = None;
                }
                Err(e) => {
                    self.problem = Some(tr_live().sampling_thread_failed.replace("{e}", &e.to_string()))
                }
            },
            Err(e) => self.problem = Some(e.to_string()),
        }
    }

    /// Stops sampling.
    pub fn stop(&mut self) {
        self.monitor = None;
    }

    /// Reads the source's last `settings.range` on the "vramscope-prometheus-range" thread; the
    /// history takes it when it arrives ([`Live::drain`]).
    pub fn load_range(&mut self, wake: impl Fn() + Send + 'static) {
        let span = match crate::monitor::prometheus::parse_duration(&self.settings.range) {
            Ok(s) => s,
            Err(e) => {
                self.problem = Some(e.replacen("--range ", "range ", 1));
                return;
            }
        };
        let mut sampler = match (self.factory)(&self.settings) {
            Ok(s) => s,
            Err(e) => {
                self.problem = Some(e.to_string());
                return;
            }
        };
        let (tx, rx) = mpsc::channel();
        let spawned =
            std::thread::Builder::new().name("vramscope-prometheus-range".into()).spawn(move || {
                let _ = tx.send(sampler.history(span));
                wake();
            });
        match spawned {
            Ok(_) => {
                self.range_rx = Some(rx);
                self.problem = None;
            }
            Err(e) => self.problem = Some(tr_live().range_thread_failed.replace("{e}", &e.to_string())),
        }
    }

    /// Replaces the history by a recording (`monitor --prometheus --range --json` output or the
    /// Live tab's CSV); sampling stops. On failure the history stays and `problem` says why.
    pub fn open_recording(&mut self, path: &std::path::Path) {
        use std::io::Read;
        let shown =
            path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let read = std::fs::File::open(path).and_then(|f| {
            let mut text = String::new();
            f.take(crate::monitor::recording::MAX_BYTES + 1).read_to_string(&mut text).map(|_| text)
        });
        let snaps = match read {
            Ok(t) if t.len() as u64 > crate::monitor::recording::MAX_BYTES => Err(tr_live()
                .recording_too_large
                .replace("{mib}", &(crate::monitor::recording::MAX_BYTES >> 20).to_string())),
            Ok(t) => crate::monitor::recording::read(&t),
            Err(e) => Err(e.to_string()),
        };
        match snaps {
            Ok(s) => {
                self.monitor = None;
                self.history = History::new(HISTORY_SAMPLES.max(s.len()));
                self.take(s);
                // a cluster's recording is Prometheus data: the source box says so
                if self.is_cluster() {
                    self.settings.source = LiveSource::Prometheus;
                }
                self.loaded = Some(shown);
                self.problem = None;
            }
            Err(e) => self.problem = Some(format!("{}: {e}", path.display())),
        }
    }

    /// Puts `snaps` (oldest first) before the samples that came after them.
    fn take(&mut self, snaps: Vec<Snapshot>) {
        let last = snaps.last().map_or(f64::NEG_INFINITY, |s| s.t_s);
        let newer: Vec<Snapshot> = self.history.samples.drain(..).filter(|s| s.t_s > last).collect();
        self.history.capacity = self.history.capacity.max(snaps.len() + newer.len());
        for s in snaps.into_iter().chain(newer) {
            self.history.push(s);
        }
        self.keep_shown();
        self.show_worst = self.is_cluster();
        self.curves = None;
    }

    /// Takes what the threads sent since the last frame.
    pub fn drain(&mut self) {
        if let Some(rx) = &self.range_rx {
            match rx.try_recv() {
                Ok(Ok(snaps)) => {
                    self.range_rx = None;
                    self.loaded = Some(
                        crate::gui::strings::tr_cluster()
                            .loaded_range
                            .replace("{range}", &self.settings.range),
                    );
                    self.take(snaps);
                }
                Ok(Err(e)) => {
                    self.range_rx = None;
                    self.problem = Some(e.to_string());
                }
                Err(mpsc::TryRecvError::Empty) => {}
                Err(mpsc::TryRecvError::Disconnected) => self.range_rx = None,
            }
        }
        let Some(m) = &self.monitor else { return };
        let mut stopped = None;
        let mut got = false;
        while let Ok(r) = m.rx.try_recv() {
            match r {
                Ok(s) if !self.paused => {
                    self.history.push(s);
                    got = true;
                }
                Ok(_) => {}
                Err(e) => stopped = Some(e.to_string()),
            }
        }
        if got {
            self.keep_shown();
        }
        if let Some(e) = stopped {
            self.problem = Some(e);
            self.monitor = None;
        }
    }

    /// Shows the first GPU of the latest snapshot when the one shown is not in it.
    fn keep_shown(&mut self) {
        if let Some(g) = self.latest_gpus().first()
            && !self.latest_gpus().iter().any(|x| self.is_shown(x))
        {
            (self.host, self.gpu) = (g.host.clone(), g.index);
        }
    }

    /// The GPUs of the latest snapshot.
    pub fn latest_gpus(&self) -> &[GpuSample] {
        self.history.samples.back().map_or(&[], |s| s.gpus.as_slice())
    }

    /// Are the GPUs a cluster's (with hosts)?
    pub fn is_cluster(&self) -> bool {
        self.latest_gpus().iter().any(|g| g.host.is_some())
    }

    /// Is `g` the GPU shown?
    pub fn is_shown(&self, g: &GpuSample) -> bool {
        g.index == self.gpu && g.host == self.host
    }

    /// Latest used bytes of the chosen GPU (or of the chosen process on it).
    pub fn latest_used(&self) -> Option<u64> {
        let g = self.latest_gpus().iter().find(|g| self.is_shown(g))?;
        match self.process {
            None => Some(g.used),
            Some(pid) => g.processes.iter().find(|p| p.pid == pid).and_then(|p| p.used),
        }
    }

    /// Every GPU seen over the history (host, then index), each with its curve's diagnosis in the
    /// interface's language; recomputed when samples arrive or the language changes. A GPU
    /// missing from the latest samples stays, marked as stopped.
    pub fn curves(&mut self) -> &[GpuCurve] {
        let lang = crate::gui::lang::current();
        let key = (self.history.samples.len(), self.history.samples.back().map_or(0.0, |s| s.t_s));
        if self.curves.as_ref().is_none_or(|(n, t, l, _)| (*n, *t, *l) != (key.0, key.1, lang)) {
            let samples = &self.history.samples;
            let t0 = samples.front().map_or(0.0, |s| s.t_s);
            let newest = samples.back().map_or(0.0, |s| s.t_s);
            // the sampling interval: the history's span over its samples
            let interval = if samples.len() > 1 { (newest - t0) / (samples.len() - 1) as f64 } else { 0.0 };
            // each GPU's samples, its last sample and when it was taken
            let mut by_gpu: std::collections::BTreeMap<GpuKey, (Vec<trace::Sample>, &GpuSample, f64)> =
                std::collections::BTreeMap::new();
            for s in samples {
                for g in &s.gpus {
                    let sample = trace::Sample { t_s: s.t_s - t0, gpu: 0, used: g.used, total: g.total };
                    let e = by_gpu.entry((g.host.clone(), g.index)).or_insert_with(|| (Vec::new(), g, s.t_s));
                    e.0.push(sample);
                    (e.1, e.2) = (g, s.t_s);
                }
            }
            let out = by_gpu
                .into_iter()
                .map(|(key, (samples, last, last_t))| {
                    let report = if samples.iter().all(|s| s.total == 0) {
                        Err(CurveGap::NoTotal)
                    } else {
                        trace::classify_in(&samples, Some(0), lang).map_err(|_| CurveGap::TooFew)
                    };
                    let peak = samples.iter().map(|s| s.used).max().unwrap_or(0);
                    let stopped_s = crate::monitor::recording::stopped_for(last_t, newest, interval);
                    GpuCurve { key, last: last.clone(), peak, stopped_s, report }
                })
                .collect();
            self.curves = Some((key.0, key.1, lang, out));
        }
        self.curves.as_ref().map_or(&[], |c| c.3.as_slice())
    }

    /// What the breakdown's "measured" line shows: the GPU shown's latest use on one machine; its
    /// peak over the samples in a cluster, read against the per-rank prediction (`true`).
    pub fn bar_measure(&mut self) -> Option<(u64, bool)> {
        if !self.is_cluster() {
            return self.latest_used().map(|u| (u, false));
        }
        let key = (self.host.clone(), self.gpu);
        self.curves().iter().find(|c| c.key == key).map(|c| (c.peak, true))
    }
}

impl Default for Live {
    fn default() -> Self {
        Self::new()
    }
}

/// The app's samplers: NVML, or the Prometheus the settings name.
fn real_sampler(s: &LiveSettings) -> Result<Box<dyn Sampler>, MonitorError> {
    match s.source {
        LiveSource::Nvml => crate::monitor::NvmlSampler::new().map(|s| Box::new(s) as Box<dyn Sampler>),
        LiveSource::Prometheus => {
            let mut cfg = crate::monitor::prometheus::PromConfig::new(s.prometheus_url.trim());
            cfg.selector = s.selector.trim().to_owned();
            crate::monitor::prometheus::PrometheusSource::new(cfg)
                .map(|p| Box::new(p) as Box<dyn Sampler>)
                .map_err(|e| {
                    // the app's fields, not the command line's flags
                    MonitorError::Source(e.replacen("--prometheus ", "URL ", 1).replacen(
                        "--selector ",
                        "selector ",
                        1,
                    ))
                })
        }
    }
}
