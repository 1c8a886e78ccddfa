//! The trace file (`.vstrace.json`, format 1) as the tracer writes it, checked and fitted into
//! a [`TracedModel`]. Every point of the grid must have run the same events (the same ops
//! making and freeing the same storages, in the same order); only sizes differ.

use super::fit::{Formula, MAX_DEPS};
use super::{Event, Made, Phase, TraceDim, TracedModel, TracedParam};
use serde::Deserialize;
use std::collections::HashMap;

#[derive(Deserialize)]
struct Raw {
    format: String,
    version: u32,
    #[serde(default)]
    torch: String,
    #[serde(default)]
    model_file: String,
    precision: String,
    trainable: String,
    dims: Vec<RawDim>,
    params: Vec<RawParam>,
    #[serde(default)]
    buffers: Vec<RawParam>,
    strings: Vec<String>,
    events: Vec<RawEvent>,
    saved: Vec<u32>,
    grads: Vec<(u32, u32)>,
    points: Vec<RawPoint>,
    /// `[module, class, first event, end event]` of each module call in the training forward.
    #[serde(default)]
    calls: Vec<(u32, u32, u32, u32)>,
    /// The storages each call took as its inputs (parallel to `calls`).
    #[serde(default)]
    call_inputs: Vec<Vec<u32>>,
    #[serde(default)]
    blocks: Vec<String>,
    /// `[storage, [module, ...]]`: the modules whose ops saved it.
    #[serde(default)]
    savers: Vec<(u32, Vec<u32>)>,
    /// `[storage, event]`: backward first read it just before this event.
    #[serde(default)]
    unpacked: Vec<(u32, u32)>,
    /// `[storage, event]`: were it not saved, it would be freed after this event.
    #[serde(default)]
    natural: Vec<(u32, u32)>,
}

#[derive(Deserialize)]
struct RawDim {
    name: String,
    values: Vec<u64>,
}

#[derive(Deserialize)]
struct RawParam {
    name: String,
    shape: Vec<u64>,
    dtype: String,
    #[serde(default)]
    trainable: bool,
}

/// One grid point: its dims' values and the shape of every storage made (`"a"` events, in order).
#[derive(Deserialize)]
struct RawPoint {
    dims: Vec<u64>,
    shapes: Vec<Vec<i64>>,
}

/// `[kind ("a" made, "f" freed), storage id, itemsize, op, module, phase]`, the same at every
/// point (the tracer checks it).
#[derive(Deserialize)]
struct RawEvent(String, u32, u8, u32, u32, String);

/// The most dims, points and events a trace may have.
const MAX_DIMS: usize = MAX_DEPS;
const MAX_POINTS: usize = 4096;
const MAX_RANK: usize = 16;

/// Parses and fits; the error is one line.
pub(super) fn parse(text: &str) -> Result<TracedModel, String> {
    let raw: Raw = serde_json::from_str(text).map_err(|e| format!("not a vramscope trace: {e}"))?;
    if raw.format != "vramscope-trace" {
        return Err(format!("format \"{}\" is not \"vramscope-trace\"", raw.format));
    }
    if raw.version != 1 {
        return Err(format!("trace version {} is not supported (this build reads version 1)", raw.version));
    }
    if !matches!(raw.precision.as_str(), "fp32" | "bf16" | "fp16" | "bf16-amp" | "fp16-amp") {
        return Err(format!(
            "precision \"{}\" is not one the tracer writes (fp32, bf16, fp16, bf16-amp, fp16-amp)",
            raw.precision
        ));
    }
    let dims = check_dims(&raw.dims)?;
    let grid = check_grid(&raw, &dims)?;
    let params = raw.params.iter().map(param).collect::<Result<Vec<_>, _>>()?;
    let buffers = raw
        .buffers
        .iter()
        .map(|b| param(b).map(|p| p.numel * u64::from(p.elem)))
        .collect::<Result<_, _>>()?;
    let Fitted { mut events, misfits, traced_only, sids, at } = fit_events(&raw, &dims, &grid, params.len())?;
    let checkpoint = super::ckpt::plan(
        &super::ckpt::Recorded {
            calls: &raw.calls,
            call_inputs: &raw.call_inputs,
            blocks: &raw.blocks,
            savers: &raw.savers,
            unpacked: &raw.unpacked,
            natural: &raw.natural,
            strings: &raw.strings,
            sids: &sids,
            at: &at,
        },
        &mut events,
    )?;
    let dims = dims
        .into_iter()
        .enumerate()
        .map(|(i, (name, values))| TraceDim { name, values, traced_only: traced_only[i] })
        .collect();
    Ok(TracedModel {
        model_file: raw.model_file,
        torch: raw.torch,
        precision: raw.precision,
        trainable: raw.trainable,
        dims,
        params,
        buffers,
        strings: raw.strings,
        events,
        misfits,
        checkpoint,
        derived: super::Derived::default(),
    })
}

fn check_dims(raw: &[RawDim]) -> Result<Vec<(String, Vec<u64>)>, String> {
    if raw.len() > MAX_DIMS {
        return Err(format!("{} dims: at most {MAX_DIMS}", raw.len()));
    }
    let mut out: Vec<(String, Vec<u64>)> = Vec::new();
    for d in raw {
        let ok_name = !d.name.is_empty()
            && d.name.len() <= 32
            && d.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok_name || out.iter().any(|(n, _)| *n == d.name) {
            return Err(format!("dim name \"{}\" is not a distinct identifier", d.name.escape_default()));
        }
        let mut sorted = d.values.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if d.values.is_empty()
            || sorted.len() != d.values.len()
            || sorted[0] == 0
            || sorted[sorted.len() - 1] > 1 << 24
        {
            return Err(format!("dim {}: values must be distinct, from 1 to 16777216", d.name));
        }
        out.push((d.name.clone(), d.values.clone()));
    }
    Ok(out)
}

/// Point index by its dims' values; every grid point present once.
fn check_grid(raw: &Raw, dims: &[(String, Vec<u64>)]) -> Result<HashMap<Vec<u64>, usize>, String> {
    let want: usize =
        dims.iter().map(|(_, v)| v.len()).try_fold(1usize, usize::checked_mul).unwrap_or(usize::MAX);
    if raw.points.is_empty() || raw.points.len() != want || want > MAX_POINTS {
        return Err(format!(
            "{} points: the grid of its dims has {want} (at most {MAX_POINTS})",
            raw.points.len()
        ));
    }
    let mut grid = HashMap::new();
    for (i, p) in raw.points.iter().enumerate() {
        let on_grid =
            p.dims.len() == dims.len() && p.dims.iter().zip(dims).all(|(v, (_, vs))| vs.contains(v));
        if !on_grid || grid.insert(p.dims.clone(), i).is_some() {
            return Err(format!("point {i} ({:?}) is not a distinct point of the dims' grid", p.dims));
        }
    }
    Ok(grid)
}

fn param(p: &RawParam) -> Result<TracedParam, String> {
    let elem = match p.dtype.as_str() {
        "float64" | "int64" | "complex64" => 8,
        "float32" | "int32" => 4,
        "bfloat16" | "float16" | "int16" => 2,
        "int8" | "uint8" | "bool" | "float8_e4m3fn" | "float8_e5m2" => 1,
        d => return Err(format!("parameter {}: dtype {d} is not one vramscope reads", p.name)),
    };
    let numel = p.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).filter(|&n| n < 1 << 48);
    let numel = numel.ok_or_else(|| format!("parameter {}: shape {:?} is out of range", p.name, p.shape))?;
    Ok(TracedParam { name: p.name.clone(), numel, elem, trainable: p.trainable })
}

fn phase(s: &str) -> Option<Phase> {
    Some(match s {
        "input" => Phase::Input,
        "train" => Phase::Train,
        "backward" => Phase::Backward,
        "infer" => Phase::Infer,
        _ => return None, // after the step: the tracer's own clean-up
    })
}

/// The events, each storage's shape fitted over the grid and checked at every point.
fn fit_events(
    raw: &Raw,
    dims: &[(String, Vec<u64>)],
    grid: &HashMap<Vec<u64>, usize>,
    n_params: usize,
) -> Result<Fitted, String> {
    check_shapes(raw)?;
    let lo: Vec<u64> = dims.iter().map(|(_, v)| v[0]).collect();
    let hi: Vec<u64> = dims.iter().map(|(_, v)| v.get(1).copied().unwrap_or(v[0])).collect();
    let varies: Vec<bool> = dims.iter().map(|(_, v)| v.len() >= 2).collect();
    let corner = |m: usize| -> Option<usize> {
        let x: Vec<u64> = (0..dims.len()).map(|d| if m >> d & 1 == 1 { hi[d] } else { lo[d] }).collect();
        grid.get(&x).copied()
    };
    let corners: Vec<usize> = (0..1usize << dims.len()).map(|m| corner(m).unwrap_or(0)).collect();
    let saved: std::collections::HashSet<u32> = raw.saved.iter().copied().collect();
    let grads: HashMap<u32, u32> = raw.grads.iter().copied().collect();
    if grads.values().any(|&i| i as usize >= n_params) {
        return Err("a gradient names a parameter the trace does not list".into());
    }
    let mut traced_only = vec![false; dims.len()];
    let mut misfits = Vec::new();
    let mut events = Vec::with_capacity(raw.events.len());
    let mut made: HashMap<u32, u32> = HashMap::new(); // the file's storage id -> in order of making
    let mut k = 0; // the storage's index among the points' shapes
    let mut at = Vec::with_capacity(raw.events.len() + 1); // the file's event -> ours
    for (j, e) in raw.events.iter().enumerate() {
        at.push(events.len() as u32);
        let RawEvent(kind, sid, item, op, module, ph) = e;
        if (*op as usize) >= raw.strings.len() || (*module as usize) >= raw.strings.len() {
            return Err(format!("event {j} names a string the trace does not list"));
        }
        let shape_at = k;
        if kind == "a" {
            k += 1;
        }
        let Some(phase) = phase(ph) else { continue };
        if kind == "f" {
            let Some(&dense) = made.get(sid) else {
                return Err(format!("event {j} frees storage {sid} before it was made"));
            };
            events.push(Event { phase, sid: dense, made: None });
            continue;
        }
        let dense = made.len() as u32;
        if kind != "a" || !matches!(item, 1 | 2 | 4 | 8) || made.insert(*sid, dense).is_some() {
            return Err(format!("event {j} is not a new storage of 1, 2, 4 or 8-byte elements"));
        }
        let value = |p: usize, r: usize| -> i64 { raw.points[p].shapes[shape_at][r] };
        let mut shape = Vec::new();
        for r in 0..raw.points[0].shapes[shape_at].len() {
            let f = Formula::fit(dims.len(), &varies, &|m| value(corners[m], r));
            if let Some(x) = grid
                .iter()
                .find(|(_, p)| f.eval(&raw.points[**p].dims, &lo, &hi) != Ok(value(**p, r)))
                .map(|(x, _)| x)
            {
                let off: Vec<&str> = (0..dims.len())
                    .filter(|&d| x[d] != lo[d] && x[d] != hi[d])
                    .map(|d| dims[d].0.as_str())
                    .collect();
                for (d, t) in traced_only.iter_mut().enumerate() {
                    *t |= x[d] != lo[d] && x[d] != hi[d];
                }
                if misfits.len() < 8 {
                    let (o, m) = (&raw.strings[*op as usize], &raw.strings[*module as usize]);
                    misfits
                        .push(format!("{o} ({m}) has a side that is not multilinear in {}", off.join(", ")));
                }
            }
            shape.push(f);
        }
        let m = Made {
            shape,
            item: *item,
            op: *op,
            module: *module,
            saved: saved.contains(sid),
            grad_of: grads.get(sid).copied(),
            dropped: None,
            held: None,
        };
        events.push(Event { phase, sid: dense, made: Some(m) });
    }
    at.push(events.len() as u32);
    Ok(Fitted { events, misfits, traced_only, sids: made, at })
}

/// The events and points agree: a shape for every storage made at every point, of the same
/// rank everywhere, in range.
fn check_shapes(raw: &Raw) -> Result<(), String> {
    let n = raw.events.iter().filter(|e| e.0 == "a").count();
    let p0 = &raw.points[0];
    for p in &raw.points {
        if p.shapes.len() != n {
            return Err(format!(
                "point {:?} has {} shapes for {n} storages made: the model ran differently there; trace such sizes apart",
                p.dims,
                p.shapes.len()
            ));
        }
        for (k, (a, b)) in p0.shapes.iter().zip(&p.shapes).enumerate() {
            if a.len() != b.len() || b.len() > MAX_RANK || b.iter().any(|&v| v < 0) {
                return Err(format!(
                    "point {:?}: storage {k} has a shape out of range or of another rank",
                    p.dims
                ));
            }
        }
    }
    Ok(())
}

/// The events fitted, what did not fit, and the dims only their traced values answer.
struct Fitted {
    events: Vec<Event>,
    misfits: Vec<String>,
    traced_only: Vec<bool>,
    /// The file's storage id -> ours.
    sids: HashMap<u32, u32>,
    /// The file's event index -> ours (one past the last for the end).
    at: Vec<u32>,
}
