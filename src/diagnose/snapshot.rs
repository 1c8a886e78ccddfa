//! PyTorch memory snapshots (`torch.cuda.memory._snapshot()` / `_dump_snapshot(path)`: a pickle
//! of plain dicts and lists) read without Python: the segments the caching allocator reserved and
//! the blocks inside them, for a fragmentation view.
//!
//! The pickle reader understands the opcodes plain containers use (protocols 2-5) and nothing
//! that would build objects (`GLOBAL`, `REDUCE`, …): those are refused, so untrusted files cannot
//! make it do anything but fail with a message. Input is size-capped.
//!
//! [`unpickle`] builds an owned tree (for small pickles); [`read_snapshot`] and the trace reader
//! ([`crate::diagnose::memtrace`]) use the arena reader in `memtrace::pickle`, which takes
//! snapshots up to [`MAX_SNAPSHOT_BYTES`].

use serde::Serialize;
use std::collections::BTreeMap;

/// Largest snapshot read by [`read_snapshot`] and [`crate::diagnose::memtrace::read_trace`]: 2 GiB.
/// A trace recorded with `_record_memory_history(max_entries=1_000_000)` and Python stacks pickles
/// to a few hundred MiB; the arena reader behind these functions costs about 64 bytes of memory per
/// trace entry, so 2 GiB of pickle stays within a workstation's memory. (Offsets inside the reader
/// are 32-bit, which also bounds it.)
pub const MAX_SNAPSHOT_BYTES: usize = 2 << 30;

/// Largest pickle read by [`unpickle`], which builds a tree of owned values (several times the
/// input in memory): 256 MiB.
pub const MAX_TREE_BYTES: usize = 256 << 20;

/// A pickled value.
#[derive(Clone, Debug, PartialEq)]
pub enum Py {
    /// None.
    None,
    /// bool.
    Bool(bool),
    /// int (fits i128).
    Int(i128),
    /// float.
    Float(f64),
    /// str.
    Str(String),
    /// bytes.
    Bytes(Vec<u8>),
    /// list or tuple.
    List(Vec<Py>),
    /// dict with string or int keys (others are kept as their debug text).
    Dict(BTreeMap<String, Py>),
}

impl Py {
    /// `d[key]` for a dict.
    pub fn get(&self, key: &str) -> Option<&Py> {
        match self {
            Py::Dict(d) => d.get(key),
            _ => None,
        }
    }
    /// A non-negative int.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Py::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }
    /// A str.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Py::Str(s) => Some(s),
            _ => None,
        }
    }
    /// A list's items (empty for anything else).
    pub fn as_list(&self) -> &[Py] {
        match self {
            Py::List(v) => v,
            _ => &[],
        }
    }
}

/// Why a pickle could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PickleError {
    /// Ran past the end.
    #[error("the pickle ends early (at byte {0})")]
    Truncated(usize),
    /// An opcode outside plain containers.
    #[error("opcode 0x{op:02x} at byte {at} is not used by plain dicts and lists (refused)")]
    Unsupported {
        /// Opcode.
        op: u8,
        /// Offset.
        at: usize,
    },
    /// Stack or memo misuse.
    #[error("malformed pickle at byte {0}")]
    Malformed(usize),
    /// Larger than the limit (bytes) of the reader used.
    #[error("the snapshot is larger than {0} bytes")]
    TooLarge(usize),
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let end =
            self.i.checked_add(n).filter(|e| *e <= self.b.len()).ok_or(PickleError::Truncated(self.i))?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?[0])
    }
    fn le(&mut self, n: usize) -> Result<u64, PickleError> {
        let s = self.take(n)?;
        Ok(s.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }
}

fn key_of(v: &Py) -> String {
    match v {
        Py::Str(s) => s.clone(),
        Py::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// Reads a pickle of plain containers.
pub fn unpickle(bytes: &[u8]) -> Result<Py, PickleError> {
    if bytes.len() > MAX_TREE_BYTES {
        return Err(PickleError::TooLarge(MAX_TREE_BYTES));
    }
    let mut r = Reader { b: bytes, i: 0 };
    let mut m = Machine::default();
    let mal = |at: usize| PickleError::Malformed(at);
    loop {
        let at = r.i;
        let op = r.u8()?;
        match op {
            0x80 => {
                r.u8()?; // PROTO
            }
            0x95 => {
                r.le(8)?; // FRAME length
            }
            b'.' => return m.stack.pop().ok_or(mal(at)), // STOP
            b'(' => m.marks.push(m.stack.len()),
            0x94 | b'q' | b'r' | b'h' | b'j' => m.memo_op(op, at, &mut r)?,
            0x85 | 0x86 | 0x87 | b't' | b'a' | b'e' | b's' | b'u' => m.fill_container(op, at)?,
            _ => {
                let v = value(op, at, &mut r)?;
                m.stack.push(v);
            }
        }
        if m.stack.len() > 1 << 24 {
            return Err(mal(at));
        }
    }
}

/// The pickle machine of [`unpickle`]: its stack, marks and memo.
#[derive(Default)]
struct Machine {
    stack: Vec<Py>,
    marks: Vec<usize>,
    memo: Vec<Py>,
}

/// A scalar, string, bytes or empty container opcode's value; any other opcode is refused.
fn value(op: u8, at: usize, r: &mut Reader<'_>) -> Result<Py, PickleError> {
    let mal = |at: usize| PickleError::Malformed(at);
    Ok(match op {
        b'}' => Py::Dict(BTreeMap::new()),
        b']' | b')' => Py::List(Vec::new()),
        b'N' => Py::None,
        0x88 => Py::Bool(true),
        0x89 => Py::Bool(false),
        b'J' => Py::Int(i128::from(r.le(4)? as u32 as i32)),
        b'K' => Py::Int(i128::from(r.u8()?)),
        b'M' => Py::Int(i128::from(r.le(2)? as u16)),
        0x8a => {
            // LONG1: n-byte little-endian two's complement
            let n = usize::from(r.u8()?);
            if n > 16 {
                return Err(mal(at));
            }
            let s = r.take(n)?;
            let mut v: i128 = 0;
            for (k, byte) in s.iter().enumerate() {
                v |= i128::from(*byte) << (8 * k);
            }
            if n > 0 && n < 16 && s[n - 1] & 0x80 != 0 {
                v -= 1i128 << (8 * n);
            }
            Py::Int(v)
        }
        b'G' => {
            let s = r.take(8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            Py::Float(f64::from_be_bytes(a))
        }
        0x8c | b'X' | 0x8d => {
            let n = match op {
                0x8c => r.u8()? as usize,
                b'X' => r.le(4)? as usize,
                _ => usize::try_from(r.le(8)?).map_err(|_| mal(at))?,
            };
            let s = r.take(n)?;
            Py::Str(String::from_utf8_lossy(s).into_owned())
        }
        b'C' | b'B' | 0x8e => {
            let n = match op {
                b'C' => r.u8()? as usize,
                b'B' => r.le(4)? as usize,
                _ => usize::try_from(r.le(8)?).map_err(|_| mal(at))?,
            };
            Py::Bytes(r.take(n)?.to_vec())
        }
        _ => return Err(PickleError::Unsupported { op, at }),
    })
}

impl Machine {
    /// MEMOIZE, PUT (BINPUT, LONG_BINPUT) and GET (BINGET, LONG_BINGET).
    fn memo_op(&mut self, op: u8, at: usize, r: &mut Reader<'_>) -> Result<(), PickleError> {
        let mal = |at: usize| PickleError::Malformed(at);
        let (stack, memo) = (&mut self.stack, &mut self.memo);
        match op {
            0x94 => memo.push(stack.last().cloned().ok_or(mal(at))?), // MEMOIZE
            b'q' | b'r' => {
                let idx = if op == b'q' { r.u8()? as usize } else { r.le(4)? as usize };
                let v = stack.last().cloned().ok_or(mal(at))?;
                if idx > 1 << 24 {
                    return Err(mal(at)); // no plain snapshot needs that many memo slots
                }
                if idx >= memo.len() {
                    memo.resize(idx + 1, Py::None);
                }
                memo[idx] = v;
            }
            _ => {
                let idx = if op == b'h' { r.u8()? as usize } else { r.le(4)? as usize };
                stack.push(memo.get(idx).cloned().ok_or(mal(at))?);
            }
        }
        Ok(())
    }

    /// The tuples (of the top 1-3 values or those above the mark), APPEND(S) and SETITEM(S).
    fn fill_container(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        let mal = |at: usize| PickleError::Malformed(at);
        let (stack, marks) = (&mut self.stack, &mut self.marks);
        match op {
            0x85 | 0x86 | 0x87 | b't' => {
                let n = match op {
                    0x85 => 1,
                    0x86 => 2,
                    0x87 => 3,
                    _ => stack.len() - marks.pop().ok_or(mal(at))?,
                };
                if stack.len() < n {
                    return Err(mal(at));
                }
                let items = stack.split_off(stack.len() - n);
                stack.push(Py::List(items));
            }
            b'a' => {
                let v = stack.pop().ok_or(mal(at))?;
                match stack.last_mut() {
                    Some(Py::List(l)) => l.push(v),
                    _ => return Err(mal(at)),
                }
            }
            b'e' => {
                let m = marks.pop().ok_or(mal(at))?;
                if m > stack.len() || m == 0 {
                    return Err(mal(at));
                }
                let items = stack.split_off(m);
                match stack.last_mut() {
                    Some(Py::List(l)) => l.extend(items),
                    _ => return Err(mal(at)),
                }
            }
            b's' => {
                let v = stack.pop().ok_or(mal(at))?;
                let k = stack.pop().ok_or(mal(at))?;
                match stack.last_mut() {
                    Some(Py::Dict(d)) => {
                        d.insert(key_of(&k), v);
                    }
                    _ => return Err(mal(at)),
                }
            }
            _ => {
                let m = marks.pop().ok_or(mal(at))?;
                if m > stack.len() || m == 0 || !(stack.len() - m).is_multiple_of(2) {
                    return Err(mal(at));
                }
                let items = stack.split_off(m);
                match stack.last_mut() {
                    Some(Py::Dict(d)) => {
                        for kv in items.chunks(2) {
                            d.insert(key_of(&kv[0]), kv[1].clone());
                        }
                    }
                    _ => return Err(mal(at)),
                }
            }
        }
        Ok(())
    }
}

/// One reserved segment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Segment {
    /// Device.
    pub device: u64,
    /// Bytes reserved from the driver.
    pub total: u64,
    /// Bytes in allocated blocks.
    pub allocated: u64,
    /// "large" or "small" pool.
    pub pool: String,
    /// Blocks: (size, allocated?).
    pub blocks: Vec<(u64, bool)>,
}

/// The fragmentation view of a snapshot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SnapshotReport {
    /// Segments, largest first.
    pub segments: Vec<Segment>,
    /// Reserved bytes.
    pub reserved: u64,
    /// Allocated bytes.
    pub allocated: u64,
    /// Largest free block: the largest allocation that can succeed without growing the cache.
    pub largest_free_block: u64,
    /// 1 - largest free block / all free bytes (0: one contiguous hole; near 1: shattered).
    pub fragmentation: f64,
}

/// Reads a snapshot pickle into the fragmentation view (the arena reader of
/// [`crate::diagnose::memtrace`], so traces of millions of entries beside the segments are cheap).
pub fn read_snapshot(bytes: &[u8]) -> Result<SnapshotReport, PickleError> {
    let p = crate::diagnose::memtrace::pickle::parse(bytes)?;
    Ok(report_from(&p))
}

/// The fragmentation view of a parsed snapshot.
pub(crate) fn report_from(p: &crate::diagnose::memtrace::pickle::Parsed<'_>) -> SnapshotReport {
    let segs = p.get(p.root, "segments").map(|v| p.list(v)).unwrap_or_default();
    let mut segments = Vec::with_capacity(segs.len());
    for s in segs {
        let blocks: Vec<(u64, bool)> = p
            .get(*s, "blocks")
            .map(|v| p.list(v))
            .unwrap_or_default()
            .iter()
            .map(|b| {
                let size = p.get_u64(*b, "size").unwrap_or(0);
                let used = p.get_str(*b, "state").is_some_and(|st| st.starts_with("active"));
                (size, used)
            })
            .collect();
        let allocated = p
            .get_u64(*s, "allocated_size")
            .unwrap_or_else(|| blocks.iter().filter(|b| b.1).map(|b| b.0).sum());
        segments.push(Segment {
            device: p.get_u64(*s, "device").unwrap_or(0),
            total: p.get_u64(*s, "total_size").unwrap_or(0),
            allocated,
            pool: p.get_str(*s, "segment_type").unwrap_or("?").to_owned(),
            blocks,
        });
    }
    segments.sort_by_key(|s| std::cmp::Reverse(s.total));
    let reserved = segments.iter().map(|s| s.total).sum();
    let allocated = segments.iter().map(|s| s.allocated).sum::<u64>();
    let free_blocks: Vec<u64> =
        segments.iter().flat_map(|s| s.blocks.iter().filter(|b| !b.1).map(|b| b.0)).collect();
    let largest_free_block = free_blocks.iter().copied().max().unwrap_or(0);
    let free: u64 = free_blocks.iter().sum();
    let fragmentation = if free == 0 { 0.0 } else { 1.0 - largest_free_block as f64 / free as f64 };
    SnapshotReport { segments, reserved, allocated, largest_free_block, fragmentation }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pickle.dumps(snap, protocol=4)` of a two-segment snapshot in PyTorch's layout, made with
    /// CPython 3.11 (see tests/data/snapshot/README.md).
    const SNAP_P4: &[u8] = include_bytes!("../../tests/data/snapshot/snapshot_p4.pickle");
    const SNAP_P2: &[u8] = include_bytes!("../../tests/data/snapshot/snapshot_p2.pickle");

    #[test]
    fn reads_the_fragmentation_view() {
        for bytes in [SNAP_P4, SNAP_P2] {
            let r = read_snapshot(bytes).unwrap();
            assert_eq!(r.segments.len(), 2);
            assert_eq!(r.reserved, (20 << 20) + (2 << 20));
            assert_eq!(r.allocated, (12 << 20) + (1 << 20));
            assert_eq!(r.largest_free_block, 6 << 20);
            // free blocks: 6 MiB + 2 MiB in the large segment, 1 MiB in the small one
            assert!((r.fragmentation - (1.0 - 6.0 / 9.0)).abs() < 1e-9);
            assert_eq!(r.segments[0].pool, "large");
        }
    }

    #[test]
    fn refuses_objects_and_garbage() {
        // GLOBAL 'os system' would build an object: refused
        let evil = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.";
        assert!(matches!(unpickle(evil), Err(PickleError::Unsupported { .. })));
        assert!(matches!(unpickle(b"\x80\x04}"), Err(PickleError::Truncated(_))));
        assert!(unpickle(b"s.").is_err());
        assert!(unpickle(&[]).is_err());
        // a memo index far beyond anything real is refused, not allocated
        assert!(unpickle(b"\x80\x04N\x72\xff\xff\xff\xff.").is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let _ = read_snapshot(&bytes);
            let mut prefixed = b"\x80\x04".to_vec();
            prefixed.extend_from_slice(&bytes);
            let _ = unpickle(&prefixed);
        }
    }
}
