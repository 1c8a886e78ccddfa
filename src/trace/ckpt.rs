//! Activation checkpointing of a traced model's blocks, planned once from what the tracer
//! recorded: each call of a block class (the innermost, as diffusers and transformers wrap
//! them) is a region; a storage made in a region and saved by its ops alone is dropped in the
//! forward (freed when nothing but the save would hold it: the tracer's second forward with
//! the saves dropped says when) and made again when backward first reads one of the region's
//! saves, by rerunning the region's forward up to its last such save (PyTorch's
//! non-reentrant `checkpoint`, early stop on). The region's inputs are held (the checkpoint
//! keeps them) until its backward has freed its saves, whether the forward would free them or
//! a backward op that saved them.

use super::{Event, Phase};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What checkpointing a trace's blocks does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The block classes wrapped (those of [`Self::regions`]).
    pub blocks: Vec<String>,
    /// Their calls that drop a save, in forward order.
    pub regions: Vec<Region>,
    /// `(event, storage)`: a dropped storage is freed after that forward event, in event order.
    pub early: Vec<(u32, u32)>,
    /// `(event, storage)`: a held input is freed before that backward event, in event order
    /// (its own free is not replayed).
    pub late: Vec<(u32, u32)>,
}

impl Plan {
    /// The trace can tell what checkpointing does.
    pub fn available(&self) -> bool {
        !self.regions.is_empty()
    }
}

/// One checkpointed block call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// The block's module (an index into the trace's strings).
    pub module: u32,
    /// Its forward's events, `start..end`.
    pub start: u32,
    /// One past its last forward event.
    pub end: u32,
    /// The recompute stops after this event (the last that makes a dropped storage).
    pub stop: u32,
    /// Backward first reads one of its dropped saves just before this event: the recompute
    /// runs there.
    pub trigger: u32,
}

/// What the tracer recorded for checkpointing, as the file has it.
pub(super) struct Recorded<'a> {
    pub calls: &'a [(u32, u32, u32, u32)],
    pub call_inputs: &'a [Vec<u32>],
    pub blocks: &'a [String],
    pub savers: &'a [(u32, Vec<u32>)],
    pub unpacked: &'a [(u32, u32)],
    pub natural: &'a [(u32, u32)],
    pub strings: &'a [String],
    /// The file's storage id -> ours.
    pub sids: &'a HashMap<u32, u32>,
    /// The file's event index -> ours.
    pub at: &'a [u32],
}

/// Plans checkpointing and marks each dropped storage in `events`; a trace without the
/// records plans nothing. A record out of range is an error.
pub(super) fn plan(r: &Recorded, events: &mut [Event]) -> Result<Plan, String> {
    let name =
        |i: u32| r.strings.get(i as usize).ok_or_else(|| format!("a call names string {i}, not listed"));
    let ev =
        |i: u32| r.at.get(i as usize).copied().ok_or_else(|| format!("event {i} is past the trace's end"));
    let sid = |s: u32| r.sids.get(&s).copied().ok_or_else(|| format!("storage {s} is not made in the trace"));
    // the block calls, innermost, as (module name, module, start, end) in our events
    let mut calls = Vec::new();
    for (k, &(module, class, start, end)) in r.calls.iter().enumerate() {
        let (m, c) = (name(module)?, name(class)?);
        if r.blocks.contains(c) {
            calls.push((m.as_str(), module, ev(start)?, ev(end)?, k));
        }
    }
    // a block call that holds another is not checkpointed itself: every proper dotted prefix of
    // a block call's module is an outer one
    let mut outer = std::collections::HashSet::new();
    for (m, ..) in &calls {
        outer.extend(m.match_indices('.').map(|(i, _)| &m[..i]));
    }
    let inner: Vec<_> = calls.iter().filter(|(m, ..)| !outer.contains(m)).copied().collect();
    let mut regions: Vec<Call> = Vec::new();
    let mut sorted = inner;
    sorted.sort_by_key(|c| c.2);
    for c in sorted {
        if c.2 < c.3 && regions.last().is_none_or(|l| l.3 <= c.2) {
            regions.push(c);
        }
    }
    let mut savers = HashMap::new();
    for (s, mods) in r.savers {
        let names = mods.iter().map(|&m| name(m).map(String::as_str)).collect::<Result<Vec<_>, _>>()?;
        savers.insert(sid(*s)?, names);
    }
    let unpacked =
        r.unpacked.iter().map(|&(s, e)| Ok((sid(s)?, ev(e)?))).collect::<Result<HashMap<_, _>, String>>()?;
    let natural =
        r.natural.iter().map(|&(s, e)| Ok((sid(s)?, ev(e)?))).collect::<Result<HashMap<_, _>, String>>()?;
    mark(events, &regions, &savers, &unpacked, &natural);
    let mut inputs = Vec::with_capacity(regions.len());
    for c in &regions {
        let ins = r.call_inputs.get(c.4).map_or(&[][..], Vec::as_slice);
        inputs.push(ins.iter().map(|&s| sid(s)).collect::<Result<Vec<_>, _>>()?);
    }
    let classes: Vec<&str> = regions
        .iter()
        .map(|c| r.calls.get(c.4).and_then(|k| r.strings.get(k.1 as usize)).map_or("", String::as_str))
        .collect();
    Ok(compact(&classes, &regions, &inputs, events, &unpacked))
}

/// A block call: its module's name and string, its events `start..end`, its index in the file.
type Call<'a> = (&'a str, u32, u32, u32, usize);

/// `inner` is `outer` or a module inside it.
fn within(inner: &str, outer: &str) -> bool {
    inner == outer || inner.strip_prefix(outer).is_some_and(|rest| rest.starts_with('.'))
}

/// Marks the storages a region's ops alone saved (their region and early free).
fn mark(
    events: &mut [Event],
    regions: &[Call],
    savers: &HashMap<u32, Vec<&str>>,
    unpacked: &HashMap<u32, u32>,
    natural: &HashMap<u32, u32>,
) {
    for (i, e) in events.iter_mut().enumerate() {
        let (Phase::Train, Some(made)) = (e.phase, e.made.as_mut()) else { continue };
        if !made.saved {
            continue;
        }
        let i = i as u32;
        let k = regions.partition_point(|r| r.2 <= i);
        let Some(k) = k.checked_sub(1).filter(|&k| i < regions[k].3) else { continue };
        let (Some(by), Some(&free), true) =
            (savers.get(&e.sid), natural.get(&e.sid), unpacked.contains_key(&e.sid))
        else {
            continue;
        };
        if !by.is_empty() && by.iter().all(|m| within(m, regions[k].0)) && free >= i {
            made.dropped = Some((k as u32, free));
        }
    }
}

/// The regions that drop a save, renumbered, with their stop and trigger events, the early
/// frees in order, and the inputs held.
fn compact(
    classes: &[&str],
    regions: &[Call],
    inputs: &[Vec<u32>],
    events: &mut [Event],
    unpacked: &HashMap<u32, u32>,
) -> Plan {
    // where each storage is freed (its last free event), and in which phase
    let mut freed = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.made.is_none() {
            freed.insert(e.sid, (i as u32, e.phase));
        }
    }
    let mut stop = vec![None::<u32>; regions.len()];
    let mut trigger = vec![u32::MAX; regions.len()];
    let mut done = vec![0u32; regions.len()];
    for (i, e) in events.iter().enumerate() {
        if let Some((k, _)) = e.made.as_ref().and_then(|m| m.dropped) {
            let k = k as usize;
            stop[k] = Some(i as u32);
            if let Some(&u) = unpacked.get(&e.sid) {
                trigger[k] = trigger[k].min(u);
            }
            if let Some(&(f, Phase::Backward)) = freed.get(&e.sid) {
                done[k] = done[k].max(f);
            }
        }
    }
    let mut renumber = vec![None; regions.len()];
    let mut out = Vec::new();
    let mut held: HashMap<u32, u32> = HashMap::new();
    for (k, r) in regions.iter().enumerate() {
        let Some(stop) = stop[k] else { continue };
        renumber[k] = Some(out.len() as u32);
        out.push(Region { module: r.1, start: r.2, end: r.3, stop, trigger: trigger[k] });
        // an input freed before the region's backward is done (in the forward, or in backward
        // once the op that saved it ran) is held to its end: the checkpoint keeps its inputs
        for &s in &inputs[k] {
            let early = match freed.get(&s) {
                Some(&(_, Phase::Train)) => true,
                Some(&(f, Phase::Backward)) => f < done[k],
                _ => false,
            };
            if early && done[k] > 0 {
                let h = held.entry(s).or_insert(0);
                *h = (*h).max(done[k]);
            }
        }
    }
    let (mut early, mut late) = (Vec::new(), Vec::new());
    for e in events.iter_mut() {
        let Some(made) = e.made.as_mut() else { continue };
        if let Some((k, free)) = made.dropped {
            made.dropped = renumber[k as usize].map(|k| (k, free));
            if made.dropped.is_some() {
                early.push((free, e.sid));
            }
        }
        made.held = held.get(&e.sid).copied();
        if let Some(h) = made.held {
            late.push((h, e.sid));
        }
    }
    early.sort_unstable();
    late.sort_unstable();
    // the classes of the calls checkpointed, in the order first met
    let mut blocks: Vec<String> = Vec::new();
    for (k, c) in classes.iter().enumerate() {
        if renumber.get(k).is_some_and(Option::is_some) && !blocks.iter().any(|b| b == c) {
            blocks.push((*c).to_owned());
        }
    }
    Plan { blocks, regions: out, early, late }
}
