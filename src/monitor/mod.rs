//! Live GPU memory from the NVIDIA driver (NVML) or a cluster's Prometheus ([`prometheus`]),
//! behind a [`Sampler`] trait with a scripted [`FakeSampler`] for tests and GPU-less machines,
//! and a named background thread that samples at an interval and hands snapshots over a channel.
//!
//! This is the driver room: the estimator core does not depend on it; the GUI and the CLI do.

pub mod prometheus;
pub mod recording;

use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One process using a GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessSample {
    /// Process id.
    pub pid: u32,
    /// Command name (from /proc), or "?" when it exited or cannot be read.
    pub name: String,
    /// GPU memory it uses, bytes (`None` when the driver does not say).
    pub used: Option<u64>,
    /// Compute or graphics context.
    pub kind: &'static str,
}

/// One GPU at one moment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuSample {
    /// Device index.
    pub index: u32,
    /// Device name.
    pub name: String,
    /// Total memory, bytes.
    pub total: u64,
    /// Used memory, bytes.
    pub used: u64,
    /// Free memory, bytes.
    pub free: u64,
    /// Kernel utilisation, percent.
    pub util_pct: Option<u32>,
    /// Processes on it.
    pub processes: Vec<ProcessSample>,
    /// The host it is on (a cluster source); `None` for this machine's GPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// All GPUs at one moment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Snapshot {
    /// Seconds since sampling started (NVML), or since the Unix epoch (Prometheus, recordings).
    pub t_s: f64,
    /// The GPUs.
    pub gpus: Vec<GpuSample>,
}

/// What went wrong, in words a user can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MonitorError {
    /// No driver library.
    #[error("NVML unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)")]
    NoLibrary,
    /// Driver installed but not loaded.
    #[error("NVML unavailable: the NVIDIA driver is not loaded")]
    DriverNotLoaded,
    /// Not allowed.
    #[error("NVML unavailable: permission denied (run as a user allowed to query the GPU)")]
    NoPermission,
    /// The GPU fell off the bus.
    #[error("GPU {0} was lost (fell off the bus or reset); sampling stopped, retry when it is back")]
    GpuLost(u32),
    /// Anything else the driver said.
    #[error("NVML error: {0}")]
    Other(String),
    /// A network source (Prometheus) failed; the message says how.
    #[error("{0}")]
    Source(String),
}

/// A source of snapshots.
pub trait Sampler: Send {
    /// Takes one snapshot.
    fn sample(&mut self) -> Result<Snapshot, MonitorError>;

    /// The snapshots of the last `span_s` seconds, oldest first, where the source keeps a history
    /// (Prometheus does; the driver does not).
    fn history(&mut self, span_s: f64) -> Result<Vec<Snapshot>, MonitorError> {
        let _ = span_s;
        Err(MonitorError::Source("this source keeps no history: only Prometheus can load a range".into()))
    }
}

/// A scripted sampler: plays back the given results with fixed timestamps, then repeats the last.
pub struct FakeSampler {
    script: Vec<Result<Snapshot, MonitorError>>,
    next: usize,
    past: Option<Vec<Snapshot>>,
}

impl FakeSampler {
    /// Plays back `script`.
    pub fn new(script: Vec<Result<Snapshot, MonitorError>>) -> Self {
        Self { script, next: 0, past: None }
    }

    /// A source whose [`Sampler::history`] answers `past` (those within the span of its last).
    pub fn with_history(mut self, past: Vec<Snapshot>) -> Self {
        self.past = Some(past);
        self
    }

    /// One GPU whose used memory follows `used` (bytes), a sample every `dt_s` seconds.
    pub fn from_curve(total: u64, used: &[u64], dt_s: f64) -> Self {
        let script = used
            .iter()
            .enumerate()
            .map(|(i, &u)| {
                Ok(Snapshot {
                    t_s: i as f64 * dt_s,
                    gpus: vec![GpuSample {
                        index: 0,
                        name: "Fake GPU".into(),
                        total,
                        used: u,
                        free: total.saturating_sub(u),
                        util_pct: Some(50),
                        processes: vec![ProcessSample {
                            pid: 4242,
                            name: "python".into(),
                            used: Some(u),
                            kind: "compute",
                        }],
                        host: None,
                    }],
                })
            })
            .collect();
        Self::new(script)
    }
}

impl Sampler for FakeSampler {
    fn sample(&mut self) -> Result<Snapshot, MonitorError> {
        let i = self.next.min(self.script.len().saturating_sub(1));
        self.next += 1;
        self.script.get(i).cloned().unwrap_or_else(|| Err(MonitorError::Other("empty script".into())))
    }

    fn history(&mut self, span_s: f64) -> Result<Vec<Snapshot>, MonitorError> {
        let past = self.past.as_ref().ok_or_else(|| MonitorError::Source("no history".into()))?;
        let end = past.last().map_or(0.0, |s| s.t_s);
        Ok(past.iter().filter(|s| s.t_s >= end - span_s).cloned().collect())
    }
}

/// The real sampler over NVML (loaded at run time; building needs no driver).
pub struct NvmlSampler {
    nvml: nvml_wrapper::Nvml,
    start: Instant,
}

fn map_err(e: nvml_wrapper::error::NvmlError, gpu: u32) -> MonitorError {
    use nvml_wrapper::error::NvmlError as E;
    match e {
        E::LibloadingError(_) | E::LibraryNotFound => MonitorError::NoLibrary,
        E::DriverNotLoaded => MonitorError::DriverNotLoaded,
        E::NoPermission => MonitorError::NoPermission,
        E::GpuLost => MonitorError::GpuLost(gpu),
        other => MonitorError::Other(other.to_string()),
    }
}

fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "?".into())
}

impl NvmlSampler {
    /// Loads the driver library; says plainly why when it cannot.
    pub fn new() -> Result<Self, MonitorError> {
        let nvml = nvml_wrapper::Nvml::init().map_err(|e| map_err(e, 0))?;
        Ok(Self { nvml, start: Instant::now() })
    }
}

impl Sampler for NvmlSampler {
    fn sample(&mut self) -> Result<Snapshot, MonitorError> {
        let n = self.nvml.device_count().map_err(|e| map_err(e, 0))?;
        let mut gpus = Vec::with_capacity(n as usize);
        for i in 0..n {
            let d = self.nvml.device_by_index(i).map_err(|e| map_err(e, i))?;
            let mem = d.memory_info().map_err(|e| map_err(e, i))?;
            let mut processes = Vec::new();
            // a process that exits between the calls is simply missing: not an error
            for (kind, list) in
                [("compute", d.running_compute_processes()), ("graphics", d.running_graphics_processes())]
            {
                for p in list.unwrap_or_default() {
                    let used = match p.used_gpu_memory {
                        nvml_wrapper::enums::device::UsedGpuMemory::Used(b) => Some(b),
                        nvml_wrapper::enums::device::UsedGpuMemory::Unavailable => None,
                    };
                    processes.push(ProcessSample { pid: p.pid, name: process_name(p.pid), used, kind });
                }
            }
            gpus.push(GpuSample {
                index: i,
                name: d.name().unwrap_or_else(|_| format!("GPU {i}")),
                total: mem.total,
                used: mem.used,
                free: mem.free,
                util_pct: d.utilization_rates().ok().map(|u| u.gpu),
                processes,
                host: None,
            });
        }
        Ok(Snapshot { t_s: self.start.elapsed().as_secs_f64(), gpus })
    }
}

/// A sampling thread. Dropping it stops the thread.
pub struct Monitor {
    /// Snapshots (or the error that stopped sampling).
    pub rx: mpsc::Receiver<Result<Snapshot, MonitorError>>,
    alive: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Monitor {
    /// Starts sampling `sampler` every `interval` on a thread named "vramscope-nvml"; `wake` is
    /// called after each snapshot (the GUI passes `request_repaint`). Stops on the first error.
    pub fn start(
        mut sampler: Box<dyn Sampler>,
        interval: Duration,
        wake: impl Fn() + Send + 'static,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let alive = Arc::new(AtomicBool::new(true));
        let flag = alive.clone();
        let handle = std::thread::Builder::new().name("vramscope-nvml".into()).spawn(move || {
            while flag.load(Ordering::Relaxed) {
                let s = sampler.sample();
                let stop = s.is_err();
                if tx.send(s).is_err() {
                    break; // the receiver is gone
                }
                wake();
                if stop {
                    break;
                }
                // sleep in small steps so dropping the monitor is quick
                let until = Instant::now() + interval;
                while flag.load(Ordering::Relaxed) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(10).min(interval));
                }
            }
        })?;
        Ok(Self { rx, alive, handle: Some(handle) })
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A bounded history of samples (ring buffer).
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Samples, oldest first.
    pub samples: std::collections::VecDeque<Snapshot>,
    /// Most kept.
    pub capacity: usize,
}

impl History {
    /// Keeps at most `capacity` samples (10 minutes at 250 ms = 2,400).
    pub fn new(capacity: usize) -> Self {
        Self { samples: std::collections::VecDeque::with_capacity(capacity.min(1 << 16)), capacity }
    }

    /// Adds a sample, dropping the oldest when full.
    pub fn push(&mut self, s: Snapshot) {
        if self.samples.len() >= self.capacity.max(1) {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }

    /// The history as `t_s,gpu,used_bytes,total_bytes` CSV (what `diagnose --trace` reads), with
    /// a `host` column after them when the GPUs are a cluster's (the app opens it again).
    pub fn to_csv(&self) -> String {
        let hosts = self.samples.iter().any(|s| s.gpus.iter().any(|g| g.host.is_some()));
        let mut out = String::from(if hosts {
            "t_s,gpu,used_bytes,total_bytes,host\n"
        } else {
            "t_s,gpu,used_bytes,total_bytes\n"
        });
        for s in &self.samples {
            for g in &s.gpus {
                out += &format!("{:.3},{},{},{}", s.t_s, g.index, g.used, g.total);
                if hosts {
                    out += &format!(",{}", g.host.as_deref().unwrap_or(""));
                }
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_plays_back_and_history_is_bounded() {
        let mut f = FakeSampler::from_curve(100, &[10, 20, 30], 0.25);
        let ts: Vec<f64> = (0..5).map(|_| f.sample().unwrap().t_s).collect();
        assert_eq!(ts, vec![0.0, 0.25, 0.5, 0.5, 0.5]);
        let mut h = History::new(2);
        for s in FakeSampler::from_curve(100, &[1, 2, 3], 1.0).script.into_iter().flatten() {
            h.push(s);
        }
        assert_eq!(h.samples.len(), 2);
        assert_eq!(h.samples[0].gpus[0].used, 2);
        assert!(h.to_csv().starts_with("t_s,gpu,used_bytes,total_bytes\n1.000,0,2,100\n"));
    }

    #[test]
    fn thread_delivers_then_stops_on_error_and_on_drop() {
        let script =
            vec![FakeSampler::from_curve(100, &[5], 0.0).script.remove(0), Err(MonitorError::GpuLost(0))];
        let m = Monitor::start(Box::new(FakeSampler::new(script)), Duration::from_millis(1), || {}).unwrap();
        let first = m.rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
        assert_eq!(first.gpus[0].used, 5);
        let second = m.rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(second, Err(MonitorError::GpuLost(0)));
        assert!(second.unwrap_err().to_string().contains("lost"));
        drop(m);
        let endless =
            Monitor::start(Box::new(FakeSampler::from_curve(1, &[1], 0.0)), Duration::from_secs(3600), || {})
                .unwrap();
        let t = Instant::now();
        drop(endless);
        assert!(t.elapsed() < Duration::from_secs(2), "drop stops the thread promptly");
    }

    #[test]
    fn no_driver_is_a_plain_message() {
        // this machine (and CI) has no NVIDIA driver; where one exists, a snapshot comes back
        match NvmlSampler::new() {
            Err(e) => assert!(e.to_string().starts_with("NVML unavailable"), "{e}"),
            Ok(mut s) => assert!(s.sample().is_ok()),
        }
    }
}
