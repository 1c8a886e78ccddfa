//! Live monitoring state of the explorer: the sampling thread, its bounded history, the chosen
//! GPU, pause, and the last problem NVML reported. Runtime only (not persisted).

use crate::monitor::{History, Monitor, MonitorError, Sampler};
use std::time::Duration;

/// Builds a sampler (NVML in the app, a scripted fake in tests).
pub type SamplerFactory = Box<dyn Fn() -> Result<Box<dyn Sampler>, MonitorError>>;

/// Ten minutes at the default 250 ms interval.
pub const HISTORY_SAMPLES: usize = 2400;

/// What the Live tab works with.
pub struct Live {
    factory: SamplerFactory,
    monitor: Option<Monitor>,
    /// Samples so far (bounded).
    pub history: History,
    /// GPU shown.
    pub gpu: u32,
    /// Process whose memory is drawn (`None`: the whole GPU).
    pub process: Option<u32>,
    /// Samples are dropped while paused.
    pub paused: bool,
    /// Milliseconds between samples.
    pub interval_ms: u64,
    /// Why sampling is not running, in plain words.
    pub problem: Option<String>,
    /// Text pasted into the OOM explainer.
    pub oom_text: String,
}

impl Live {
    /// Live state over the real driver.
    pub fn new() -> Self {
        Self::with_factory(Box::new(|| {
            crate::monitor::NvmlSampler::new().map(|s| Box::new(s) as Box<dyn Sampler>)
        }))
    }

    /// Live state over another sampler source.
    pub fn with_factory(factory: SamplerFactory) -> Self {
        Self {
            factory,
            monitor: None,
            history: History::new(HISTORY_SAMPLES),
            gpu: 0,
            process: None,
            paused: false,
            interval_ms: 250,
            problem: None,
            oom_text: String::new(),
        }
    }

    /// Is a sampling thread running?
    pub fn running(&self) -> bool {
        self.monitor.is_some()
    }

    /// Starts sampling (again); `wake` repaints the UI when a sample arrives.
    pub fn start(&mut self, wake: impl Fn() + Send + 'static) {
        self.monitor = None;
        match (self.factory)() {
            Ok(sampler) => {
                match Monitor::start(sampler, Duration::from_millis(self.interval_ms.max(10)), wake) {
                    Ok(m) => {
                        self.monitor = Some(m);
                        self.problem = None;
                    }
                    Err(e) => self.problem = Some(format!("could not start the sampling thread: {e}")),
                }
            }
            Err(e) => self.problem = Some(e.to_string()),
        }
    }

    /// Stops sampling.
    pub fn stop(&mut self) {
        self.monitor = None;
    }

    /// Takes what the thread sent since the last frame.
    pub fn drain(&mut self) {
        let Some(m) = &self.monitor else { return };
        let mut stopped = None;
        while let Ok(r) = m.rx.try_recv() {
            match r {
                Ok(s) if !self.paused => self.history.push(s),
                Ok(_) => {}
                Err(e) => stopped = Some(e.to_string()),
            }
        }
        if let Some(e) = stopped {
            self.problem = Some(e);
            self.monitor = None;
        }
    }

    /// Latest used bytes of the chosen GPU (or of the chosen process on it).
    pub fn latest_used(&self) -> Option<u64> {
        let g = self.history.samples.back()?.gpus.iter().find(|g| g.index == self.gpu)?;
        match self.process {
            None => Some(g.used),
            Some(pid) => g.processes.iter().find(|p| p.pid == pid).and_then(|p| p.used),
        }
    }
}

impl Default for Live {
    fn default() -> Self {
        Self::new()
    }
}
