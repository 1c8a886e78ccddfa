//! A model traced by `vramscope_trace.py` (written by `vramscope trace --emit-script`): any
//! PyTorch `nn.Module`, run once per point of a grid of named dims under fake tensors, every
//! storage its aten ops made and freed recorded in order. The file becomes a [`TracedModel`]:
//! the parameter list, and the events with each tensor dimension fitted as a function of the
//! dims ([`fit::Formula`]), so the step is replayed exactly at sizes that were not traced.
//!
//! Layers: pure (the file's text in, a model out); the CLI reads the file ([`read`] caps it).

pub mod ckpt;
pub mod file;
pub mod fit;
pub mod modules;
pub mod replay;

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The tracer script, as `vramscope trace --emit-script` writes it.
pub const SCRIPT: &str = include_str!("vramscope_trace.py");

/// The largest trace file read (bytes).
pub const MAX_FILE: u64 = 50 << 20;

/// A traced model, fitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedModel {
    /// The model file the trace ran (as the tracer was given it).
    pub model_file: String,
    /// The torch version that ran it.
    pub torch: String,
    /// The precision it was traced in (`fp32`, `bf16`, `fp16`: the whole model in that dtype).
    pub precision: String,
    /// What trains (`all`, `lora:…`, `only:…`).
    pub trainable: String,
    /// The named dims and the values traced.
    pub dims: Vec<TraceDim>,
    /// Every parameter tensor.
    pub params: Vec<TracedParam>,
    /// Bytes of each buffer tensor.
    pub buffers: Vec<u64>,
    /// The aten ops' and modules' names the events point to.
    pub strings: Vec<String>,
    /// The events, in order.
    pub events: Vec<Event>,
    /// What does not extrapolate, in words.
    pub misfits: Vec<String>,
    /// What activation checkpointing of its blocks does (empty: the trace cannot tell).
    #[serde(default)]
    pub checkpoint: ckpt::Plan,
    /// What is derived from the events to evaluate them fast (not part of the model).
    #[serde(skip)]
    pub(crate) derived: Derived,
}

/// What sizing the events reuses, derived on first use: not part of the model (a clone starts
/// empty, and any two compare equal).
#[derive(Default)]
pub(crate) struct Derived {
    /// Every event's bytes at the point last resolved: a scenario's validation and its replay
    /// ask for the same point.
    memo: std::sync::Mutex<Option<AtPoint>>,
    /// Each distinct fitted dimension (a trace repeats few shapes many times).
    shapes: std::sync::OnceLock<Shapes>,
}

/// A point and every event's bytes there.
type AtPoint = (Vec<u64>, Arc<[u64]>);

/// The events' tensor dimensions, each distinct formula once.
struct Shapes {
    formulas: Vec<fit::Formula>,
    /// Each made event's dimensions in order, as indices into `formulas`.
    of: Vec<u32>,
}

impl Shapes {
    fn new(events: &[Event]) -> Self {
        let mut index = std::collections::HashMap::new();
        let mut formulas = Vec::new();
        let mut of = Vec::new();
        for f in events.iter().filter_map(|e| e.made.as_ref()).flat_map(|m| &m.shape) {
            let k = *index.entry(f).or_insert_with(|| {
                formulas.push(f.clone());
                formulas.len() as u32 - 1
            });
            of.push(k);
        }
        Self { formulas, of }
    }
}

impl Derived {
    /// The sizes at `x`, from the memo or `compute` (remembered when they are whole).
    fn sizes<E>(&self, x: &[u64], compute: impl FnOnce() -> Result<Vec<u64>, E>) -> Result<Arc<[u64]>, E> {
        // a poisoned lock only means another thread panicked mid-store: recompute
        if let Ok(memo) = self.memo.lock()
            && let Some((at, bytes)) = memo.as_ref()
            && at == x
        {
            return Ok(Arc::clone(bytes));
        }
        let bytes: Arc<[u64]> = compute()?.into();
        if let Ok(mut memo) = self.memo.lock() {
            *memo = Some((x.to_vec(), Arc::clone(&bytes)));
        }
        Ok(bytes)
    }
}

impl Clone for Derived {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for Derived {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Derived {}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Derived")
    }
}

/// One named dim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceDim {
    /// Its name (`batch`, `height`, …).
    pub name: String,
    /// The values traced, in the order given (the first two are the fit's corners).
    pub values: Vec<u64>,
    /// Some quantity is not multilinear in it: only the traced values answer.
    pub traced_only: bool,
}

impl TraceDim {
    /// The first value traced (where a scenario starts).
    pub fn first(&self) -> u64 {
        self.values.first().copied().unwrap_or(1)
    }

    /// Traced at three values or more: the fit is checked at a point it was not made on.
    pub fn checked(&self) -> bool {
        self.values.len() >= 3
    }
}

/// One parameter tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedParam {
    /// Its name in `named_parameters()`.
    pub name: String,
    /// Elements.
    pub numel: u64,
    /// Bytes per element.
    pub elem: u8,
    /// `requires_grad`.
    pub trainable: bool,
}

/// When an event happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The inputs, made before the step and held through it.
    Input,
    /// The training forward (and the loss).
    Train,
    /// `loss.backward()`.
    Backward,
    /// The no-grad inference forward.
    Infer,
}

/// One storage made or freed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// When.
    pub phase: Phase,
    /// The storage (numbered in order of making).
    pub sid: u32,
    /// Made (with its size) or freed (`None`).
    pub made: Option<Made>,
}

/// A storage made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Made {
    /// Its shape, each dimension fitted.
    pub shape: Vec<fit::Formula>,
    /// Bytes per element.
    pub item: u8,
    /// The op that made it (index into [`TracedModel::strings`]).
    pub op: u32,
    /// The module it ran in (index into [`TracedModel::strings`]; in backward: none).
    pub module: u32,
    /// Autograd saved it for backward.
    pub saved: bool,
    /// It became this parameter's gradient.
    pub grad_of: Option<u32>,
    /// Under checkpointing: the region ([`ckpt::Plan::regions`]) whose ops alone saved it (it
    /// is dropped in the forward and recomputed in backward), and the event after which it
    /// would be freed were it not saved.
    #[serde(default)]
    pub dropped: Option<(u32, u32)>,
    /// Under checkpointing: an input of a checkpointed region freed before the region's
    /// backward is done (by the forward, or by the backward of an op that saved it), held
    /// (`checkpoint` keeps its inputs) until this backward event.
    #[serde(default)]
    pub held: Option<u32>,
}

/// A trace that cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {msg}")]
pub struct TraceError {
    /// The file.
    pub file: String,
    /// What is wrong.
    pub msg: String,
}

/// A size the trace cannot answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct DimError(pub String);

impl TracedModel {
    /// Parses a trace file's text.
    pub fn parse(file: &str, text: &str) -> Result<Self, TraceError> {
        file::parse(text).map_err(|msg| TraceError { file: file.to_owned(), msg })
    }

    /// Distinct parameters.
    pub fn n_params(&self) -> u64 {
        self.params.iter().map(|p| p.numel).sum()
    }

    /// Parameters that train.
    pub fn n_trainable(&self) -> u64 {
        self.params.iter().filter(|p| p.trainable).map(|p| p.numel).sum()
    }

    /// The dim named `name`.
    pub fn dim(&self, name: &str) -> Option<usize> {
        self.dims.iter().position(|d| d.name == name)
    }

    /// Each dim's value: `pick(name)` where it answers, else the first value traced. Checks
    /// that every quantity is whole there and that a dim traced only at some values is one of
    /// them.
    pub fn resolve(&self, pick: impl Fn(&str) -> Option<u64>) -> Result<Vec<u64>, DimError> {
        self.resolve_sizes(pick).map(|(x, _)| x)
    }

    /// [`Self::resolve`], with every event's bytes there ([`sizes`]) for [`replay::run_with`]
    /// (the last point's remembered).
    pub fn resolve_sizes(
        &self,
        pick: impl Fn(&str) -> Option<u64>,
    ) -> Result<(Vec<u64>, Arc<[u64]>), DimError> {
        let x: Vec<u64> = self.dims.iter().map(|d| pick(&d.name).unwrap_or_else(|| d.first())).collect();
        for (d, &v) in self.dims.iter().zip(&x) {
            let list = || d.values.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
            if v == 0 {
                return Err(DimError(format!("{} must be at least 1", d.name)));
            }
            if d.values.len() < 2 && !d.values.contains(&v) {
                return Err(DimError(format!(
                    "{} was traced at {} only: trace more values (--dim {}=A,B,C) to vary it",
                    d.name,
                    list(),
                    d.name
                )));
            }
            if d.traced_only && !d.values.contains(&v) {
                return Err(DimError(format!(
                    "{} = {v}: the trace answers at {} only (some tensor is not multilinear in {}; \
                     trace the sizes you need)",
                    d.name,
                    list(),
                    d.name
                )));
            }
        }
        match self.derived.sizes(&x, || sizes(self, &x)) {
            Ok(bytes) => Ok((x, bytes)),
            Err(at) => Err(DimError(self.not_whole(&x, at))),
        }
    }

    /// Says which dim value left a tensor side fractional, and the nearest values that work.
    fn not_whole(&self, x: &[u64], at: usize) -> String {
        let (op, module) = match self.events.get(at).and_then(|e| e.made.as_ref()) {
            Some(m) => (self.op_name(m.op), self.module_name(m.module)),
            None => ("?", ""),
        };
        let place = if module.is_empty() { String::new() } else { format!(" in {module}") };
        // the first varying dim whose neighbours make everything whole
        for (d, dim) in self.dims.iter().enumerate().filter(|(_, d)| d.values.len() >= 2) {
            let near = |v: u64| {
                let mut y = x.to_vec();
                y[d] = v;
                sizes(self, &y).is_ok()
            };
            let down = (1..=64).map(|k| x[d].saturating_sub(k)).find(|&v| v >= 1 && near(v));
            let up = (1..=64).map(|k| x[d] + k).find(|&v| near(v));
            if down.is_some() || up.is_some() {
                let alts: Vec<String> = down.into_iter().chain(up).map(|v| v.to_string()).collect();
                return format!(
                    "{} = {}: {op}{place} makes a tensor with a fractional side there; {} = {} works",
                    dim.name,
                    x[d],
                    dim.name,
                    alts.join(" or ")
                );
            }
        }
        format!("at these sizes {op}{place} makes a tensor with a fractional side; trace them")
    }

    /// An op's name.
    pub fn op_name(&self, op: u32) -> &str {
        self.strings.get(op as usize).map_or("?", String::as_str)
    }

    /// A module's name.
    pub fn module_name(&self, m: u32) -> &str {
        self.strings.get(m as usize).map_or("", String::as_str)
    }

    /// One line on what was traced.
    pub fn describe(&self) -> String {
        let dims: Vec<String> = self
            .dims
            .iter()
            .map(|d| {
                let v: Vec<String> = d.values.iter().map(u64::to_string).collect();
                format!("{} at {}", d.name, v.join(", "))
            })
            .collect();
        format!(
            "traced from {} (torch {}, {}, trainable {}): {}",
            self.model_file,
            self.torch,
            self.precision,
            self.trainable,
            if dims.is_empty() { "no dims".to_owned() } else { dims.join("; ") }
        )
    }
}

/// Each event's bytes at `x` (0 for a free), or the first event whose size is not whole.
pub fn sizes(m: &TracedModel, x: &[u64]) -> Result<Vec<u64>, usize> {
    let (lo, hi) = corners(m);
    let shapes = m.derived.shapes.get_or_init(|| Shapes::new(&m.events));
    let values: Vec<Option<u64>> = shapes
        .formulas
        .iter()
        .map(|f| f.eval(x, &lo, &hi).ok().and_then(|v| u64::try_from(v).ok()))
        .collect();
    let mut dims = shapes.of.iter();
    let mut out = Vec::with_capacity(m.events.len());
    for (j, e) in m.events.iter().enumerate() {
        let Some(made) = &e.made else {
            out.push(0);
            continue;
        };
        let mut bytes = u64::from(made.item);
        for _ in 0..made.shape.len() {
            let v = dims.next().and_then(|&k| values.get(k as usize).copied().flatten()).ok_or(j)?;
            bytes = bytes.checked_mul(v).filter(|&b| b < 1 << 56).ok_or(j)?;
        }
        out.push(bytes);
    }
    Ok(out)
}

/// Each dim's first two traced values.
fn corners(m: &TracedModel) -> (Vec<u64>, Vec<u64>) {
    let lo = m.dims.iter().map(|d| d.values.first().copied().unwrap_or(1)).collect();
    let hi = m.dims.iter().map(|d| d.values.get(1).or(d.values.first()).copied().unwrap_or(1)).collect();
    (lo, hi)
}

/// Reads a trace file, refusing one over [`MAX_FILE`].
pub fn read(path: &std::path::Path) -> Result<TracedModel, TraceError> {
    let file = path.display().to_string();
    let err = |msg: String| TraceError { file: file.clone(), msg };
    let len = std::fs::metadata(path).map_err(|e| err(e.to_string()))?.len();
    if len > MAX_FILE {
        return Err(err(format!("{len} bytes is over the {} MB a trace may have", MAX_FILE >> 20)));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    TracedModel::parse(&file, &text)
}

/// Op names as `&'static str` (the step's events name their op so): each distinct name is
/// leaked once, at most [`MAX_NAMES`] of them (later ones read "op").
pub(crate) fn intern(name: &str) -> &'static str {
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<std::collections::HashSet<&'static str>>> = OnceLock::new();
    let Ok(mut set) = NAMES.get_or_init(Default::default).lock() else { return "op" };
    if let Some(s) = set.get(name) {
        return s;
    }
    if set.len() >= MAX_NAMES || name.len() > 64 {
        return "op";
    }
    let s: &'static str = Box::leak(name.to_owned().into_boxed_str());
    set.insert(s);
    s
}

/// The most distinct op names kept.
const MAX_NAMES: usize = 4096;

#[cfg(test)]
mod tests;
