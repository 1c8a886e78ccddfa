//! Synthetic snapshot pickles, for tests and benchmarks: a small protocol-4 writer that lays out
//! containers the way CPython's `pickle` does (`EMPTY_DICT MEMOIZE MARK … SETITEMS`, `APPENDS`
//! in batches of 1,000, every string memoized and repeated with `BINGET`), and a generator of
//! training-loop traces.

use std::collections::HashMap;

/// A streaming pickle writer. Call [`PickleWriter::finish`] once the root value is written.
#[derive(Default)]
pub struct PickleWriter {
    out: Vec<u8>,
    memo: u32,
    strings: HashMap<String, u32>,
    /// Items written into each open list since its last APPENDS.
    lists: Vec<usize>,
}

impl PickleWriter {
    /// A writer with the protocol header written.
    pub fn new() -> Self {
        let mut w = PickleWriter::default();
        w.out.extend_from_slice(&[0x80, 4]);
        w
    }
    fn memoize(&mut self) -> u32 {
        self.out.push(0x94);
        self.memo += 1;
        self.memo - 1
    }
    /// A str (memoized; repeats are memo references).
    pub fn str(&mut self, s: &str) {
        if let Some(i) = self.strings.get(s) {
            let i = *i;
            self.get(i);
            return;
        }
        if s.len() < 256 {
            self.out.push(0x8c);
            self.out.push(s.len() as u8);
        } else {
            self.out.push(b'X');
            self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
        self.out.extend_from_slice(s.as_bytes());
        let i = self.memoize();
        self.strings.insert(s.to_owned(), i);
    }
    /// A memo reference (`BINGET` / `LONG_BINGET`).
    pub fn get(&mut self, i: u32) {
        if i < 256 {
            self.out.extend_from_slice(&[b'h', i as u8]);
        } else {
            self.out.push(b'j');
            self.out.extend_from_slice(&i.to_le_bytes());
        }
    }
    /// An int, in the shortest opcode CPython would use.
    pub fn int(&mut self, v: i64) {
        if (0..256).contains(&v) {
            self.out.extend_from_slice(&[b'K', v as u8]);
        } else if (0..65536).contains(&v) {
            self.out.push(b'M');
            self.out.extend_from_slice(&(v as u16).to_le_bytes());
        } else if i32::try_from(v).is_ok() {
            self.out.push(b'J');
            self.out.extend_from_slice(&(v as i32).to_le_bytes());
        } else {
            let b = v.to_le_bytes();
            let mut n = 8;
            while n > 1
                && ((b[n - 1] == 0 && b[n - 2] & 0x80 == 0) || (b[n - 1] == 0xff && b[n - 2] & 0x80 != 0))
            {
                n -= 1;
            }
            self.out.extend_from_slice(&[0x8a, n as u8]);
            self.out.extend_from_slice(&b[..n]);
        }
    }
    /// None.
    pub fn none(&mut self) {
        self.out.push(b'N');
    }
    /// Opens a dict; write key, value, key, value, …, then [`PickleWriter::end_dict`].
    pub fn begin_dict(&mut self) -> u32 {
        self.out.push(b'}');
        let i = self.memoize();
        self.out.push(b'(');
        i
    }
    /// Closes a dict.
    pub fn end_dict(&mut self) {
        self.out.push(b'u');
    }
    /// Opens a list; write items, calling [`PickleWriter::item`] after each, then
    /// [`PickleWriter::end_list`]. Returns its memo index, for sharing it with [`PickleWriter::get`].
    pub fn begin_list(&mut self) -> u32 {
        self.out.push(b']');
        let i = self.memoize();
        self.out.push(b'(');
        self.lists.push(0);
        i
    }
    /// Marks the end of one list item.
    pub fn item(&mut self) {
        if let Some(n) = self.lists.last_mut() {
            *n += 1;
            if *n == 1000 {
                *n = 0;
                self.out.extend_from_slice(b"e(");
            }
        }
    }
    /// Closes a list.
    pub fn end_list(&mut self) {
        self.lists.pop();
        self.out.push(b'e');
    }
    /// `key: int` inside a dict.
    pub fn kv_int(&mut self, k: &str, v: i64) {
        self.str(k);
        self.int(v);
    }
    /// `key: str` inside a dict.
    pub fn kv_str(&mut self, k: &str, v: &str) {
        self.str(k);
        self.str(v);
    }
    /// Writes STOP and returns the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(b'.');
        self.out
    }
}

/// One trace entry for [`trace_pickle`].
#[derive(Clone, Copy, Debug)]
pub struct SynthEntry {
    /// `alloc`, `free_completed`, `segment_alloc`, …
    pub action: &'static str,
    /// Address.
    pub addr: u64,
    /// Bytes.
    pub size: u64,
    /// Index of a shared frames list (`frames[i]` of [`trace_pickle`]'s argument), if any.
    pub frames: Option<usize>,
}

/// A segment for [`trace_pickle`]: address, total size, live blocks `(address, size)`.
pub type SynthSegment = (u64, u64, Vec<(u64, u64)>);

/// A snapshot pickle: `segments` (one per `(address, total_size, live blocks (addr, size))`),
/// one device's `device_traces` (with `time_us` = 10 × index) and `frames` lists shared by
/// reference, each a list of `(filename, line, name)`.
pub fn trace_pickle(
    segments: &[SynthSegment],
    entries: &[SynthEntry],
    frames: &[Vec<(&str, i64, &str)>],
) -> Vec<u8> {
    let mut w = PickleWriter::new();
    w.begin_dict();
    w.str("segments");
    w.begin_list();
    for (addr, total, live) in segments {
        w.begin_dict();
        w.kv_int("device", 0);
        w.kv_int("address", *addr as i64);
        w.kv_int("total_size", *total as i64);
        w.kv_str("segment_type", "large");
        w.str("blocks");
        w.begin_list();
        let mut at = *addr;
        for (baddr, size) in live {
            if *baddr > at {
                block(&mut w, at, baddr - at, "inactive");
            }
            block(&mut w, *baddr, *size, "active_allocated");
            at = baddr + size;
        }
        if at < addr + total {
            block(&mut w, at, addr + total - at, "inactive");
        }
        w.end_list();
        w.end_dict();
        w.item();
    }
    w.end_list();
    w.str("device_traces");
    w.begin_list();
    w.begin_list();
    let mut memo_of: Vec<Option<u32>> = vec![None; frames.len()];
    for (i, e) in entries.iter().enumerate() {
        w.begin_dict();
        w.kv_str("action", e.action);
        w.kv_int("addr", e.addr as i64);
        w.kv_int("size", e.size as i64);
        w.kv_int("stream", 0);
        w.kv_int("time_us", 10 * i as i64);
        if let Some(f) = e.frames.filter(|f| *f < frames.len()) {
            w.str("frames");
            match memo_of[f] {
                Some(m) => w.get(m),
                None => {
                    memo_of[f] = Some(w.begin_list());
                    for (file, line, name) in &frames[f] {
                        w.begin_dict();
                        w.kv_str("filename", file);
                        w.kv_int("line", *line);
                        w.kv_str("name", name);
                        w.end_dict();
                        w.item();
                    }
                    w.end_list();
                }
            }
        }
        w.end_dict();
        w.item();
    }
    w.end_list();
    w.item();
    w.end_list();
    w.end_dict();
    w.finish()
}

fn block(w: &mut PickleWriter, addr: u64, size: u64, state: &str) {
    w.begin_dict();
    w.kv_int("address", addr as i64);
    w.kv_int("size", size as i64);
    w.kv_int("requested_size", size as i64);
    w.kv_str("state", state);
    w.end_dict();
    w.item();
}

/// A training loop of `steps` steps with `layers` layers, `steps * (5 * layers + 2) + 2` entries
/// (`4 * layers + 2` events a step): forward allocs of 16 MiB activations, backward 8 MiB
/// gradient allocs and activation frees, an optimizer temporary, zero_grad frees; 8 MiB of
/// parameters per layer live from before the trace.
pub fn training_trace(steps: usize, layers: usize) -> Vec<u8> {
    training_trace_with(steps, layers, 16)
}

/// [`training_trace`] with `act_mib` MiB activations per layer.
pub fn training_trace_with(steps: usize, layers: usize, act_mib: u64) -> Vec<u8> {
    const MIB: u64 = 1 << 20;
    let base = 0x7f00_0000_0000u64;
    let param = |l: usize| base + (l as u64) * 8 * MIB;
    let act = |l: usize| base + 0x10_0000_0000 + (l as u64) * 16 * MIB;
    let grad = |l: usize| base + 0x20_0000_0000 + (l as u64) * 8 * MIB;
    let frames = vec![
        vec![
            ("/site-packages/torch/nn/modules/linear.py", 125, "forward"),
            ("train.py", 30, "block_forward"),
        ],
        vec![
            ("/site-packages/torch/autograd/graph.py", 744, "_engine_run_backward"),
            ("train.py", 41, "backward"),
        ],
        vec![("/site-packages/torch/optim/adamw.py", 480, "_multi_tensor_adamw"), ("train.py", 44, "step")],
    ];
    let mut e = Vec::with_capacity(steps * (8 * layers + 4) + 2);
    let opt = base + 0x30_0000_0000;
    e.push(SynthEntry {
        action: "segment_alloc",
        addr: act(0),
        size: layers as u64 * 16 * MIB,
        frames: None,
    });
    e.push(SynthEntry {
        action: "segment_alloc",
        addr: grad(0),
        size: layers as u64 * 8 * MIB,
        frames: None,
    });
    for _ in 0..steps {
        for l in 0..layers {
            e.push(SynthEntry { action: "alloc", addr: act(l), size: act_mib * MIB, frames: Some(0) });
        }
        for l in (0..layers).rev() {
            e.push(SynthEntry { action: "alloc", addr: grad(l), size: 8 * MIB, frames: Some(1) });
            e.push(SynthEntry {
                action: "free_requested",
                addr: act(l),
                size: act_mib * MIB,
                frames: Some(1),
            });
            e.push(SynthEntry {
                action: "free_completed",
                addr: act(l),
                size: act_mib * MIB,
                frames: Some(1),
            });
        }
        e.push(SynthEntry { action: "alloc", addr: opt, size: 8 * MIB, frames: Some(2) });
        e.push(SynthEntry { action: "free_completed", addr: opt, size: 8 * MIB, frames: Some(2) });
        for l in 0..layers {
            e.push(SynthEntry { action: "free_completed", addr: grad(l), size: 8 * MIB, frames: Some(2) });
        }
    }
    let params: Vec<(u64, u64)> = (0..layers).map(|l| (param(l), 8 * MIB)).collect();
    let segs = vec![
        (base, layers as u64 * 8 * MIB, params),
        (act(0), layers as u64 * 16 * MIB, Vec::new()),
        (grad(0), layers as u64 * 8 * MIB, Vec::new()),
    ];
    trace_pickle(&segs, &e, &frames)
}
