//! The pickle reader for large snapshots: the same refusing opcode set as
//! [`crate::diagnose::snapshot::unpickle`], but values are 16-byte handles into flat arenas, so a
//! trace of millions of entries costs one small record per entry and no per-string allocation.
//!
//! - Strings and bytes are ranges of the input (no copies; decoded only when asked).
//! - Containers are shared by index, so a memo reference (`BINGET`) to a list sees everything
//!   appended to it later — as in Python. PyTorch shares one `frames` list between every entry
//!   with the same traceback, so this matters.
//! - A dict that receives an `action` key in its first `SETITEMS` is a trace entry: it is stored
//!   as a fixed [`Entry`] (the keys memory_viz reads), not as a key list.
//! - Input is capped ([`MAX_SNAPSHOT_BYTES`]), the stack at 2^24 values and the arenas at
//!   [`MAX_CONTAINERS`] containers, so hostile input fails with a message instead of exhausting
//!   memory.

use crate::diagnose::snapshot::{MAX_SNAPSHOT_BYTES, PickleError};

/// Most lists + dicts one pickle may create (a 1-GiB PyTorch trace has roughly 10 million).
pub const MAX_CONTAINERS: usize = 1 << 26;

/// A pickled value: scalars inline, strings as input ranges, containers as arena indices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum V {
    None,
    Bool(bool),
    Int(i64),
    /// An int above `i64::MAX` that fits a u64.
    UInt(u64),
    /// An int outside i64 and u64 (its value is not kept).
    BigInt,
    Float(f64),
    Str(u32, u32),
    Bytes(u32, u32),
    List(u32),
    Dict(u32),
}

impl V {
    pub(crate) fn as_u64(self) -> Option<u64> {
        match self {
            V::Int(i) => u64::try_from(i).ok(),
            V::UInt(u) => Some(u),
            _ => None,
        }
    }
    pub(crate) fn as_i64(self) -> Option<i64> {
        match self {
            V::Int(i) => Some(i),
            _ => None,
        }
    }
}

/// What a trace entry did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    #[default]
    Other,
}

impl Action {
    fn parse(s: &[u8]) -> Action {
        match s {
            b"alloc" => Action::Alloc,
            b"free_requested" => Action::FreeRequested,
            // "free" is memory_viz's name for a requested+completed pair
            b"free_completed" | b"free" => Action::FreeCompleted,
            b"segment_alloc" => Action::SegmentAlloc,
            b"segment_free" => Action::SegmentFree,
            b"segment_map" => Action::SegmentMap,
            b"segment_unmap" => Action::SegmentUnmap,
            b"snapshot" => Action::Snapshot,
            b"oom" => Action::Oom,
            _ => Action::Other,
        }
    }
}

/// A trace entry's fields (absent ones are 0 / None).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub(crate) struct Entry {
    pub action: Action,
    pub addr: u64,
    pub size: u64,
    pub stream: i64,
    pub time_us: i64,
    pub device_free: u64,
    pub frames: Option<V>,
}

#[derive(Clone, Debug)]
pub(crate) enum DictSlot {
    Items(Vec<(V, V)>),
    Entry(Entry),
}

/// A parsed pickle: the root value and the arenas it points into.
pub(crate) struct Parsed<'a> {
    pub bytes: &'a [u8],
    pub root: V,
    pub lists: Vec<Vec<V>>,
    pub dicts: Vec<DictSlot>,
}

impl<'a> Parsed<'a> {
    pub(crate) fn bytes_of(&self, v: V) -> Option<&'a [u8]> {
        match v {
            V::Str(s, l) | V::Bytes(s, l) => {
                self.bytes.get(s as usize..(s as usize).checked_add(l as usize)?)
            }
            _ => None,
        }
    }
    pub(crate) fn str_of(&self, v: V) -> Option<&'a str> {
        match v {
            V::Str(..) => std::str::from_utf8(self.bytes_of(v)?).ok(),
            _ => None,
        }
    }
    pub(crate) fn list(&self, v: V) -> &[V] {
        match v {
            V::List(i) => self.lists.get(i as usize).map(Vec::as_slice).unwrap_or_default(),
            _ => &[],
        }
    }
    pub(crate) fn entry(&self, v: V) -> Option<&Entry> {
        match v {
            V::Dict(i) => match self.dicts.get(i as usize) {
                Some(DictSlot::Entry(e)) => Some(e),
                _ => None,
            },
            _ => None,
        }
    }
    /// `d[key]` for a plain dict (not a trace entry).
    pub(crate) fn get(&self, d: V, key: &str) -> Option<V> {
        let V::Dict(i) = d else { return None };
        let Some(DictSlot::Items(items)) = self.dicts.get(i as usize) else { return None };
        items.iter().rev().find(|(k, _)| self.bytes_of(*k) == Some(key.as_bytes())).map(|kv| kv.1)
    }
    pub(crate) fn get_u64(&self, d: V, key: &str) -> Option<u64> {
        self.get(d, key).and_then(V::as_u64)
    }
    pub(crate) fn get_str(&self, d: V, key: &str) -> Option<&'a str> {
        self.get(d, key).and_then(|v| self.str_of(v))
    }
}

fn apply(p: &Parsed<'_>, e: &mut Entry, k: V, v: V) {
    match p.bytes_of(k) {
        Some(b"action") => e.action = p.bytes_of(v).map(Action::parse).unwrap_or_default(),
        Some(b"addr") => e.addr = v.as_u64().unwrap_or(0),
        Some(b"size") => e.size = v.as_u64().unwrap_or(0),
        Some(b"stream") => e.stream = v.as_i64().unwrap_or(0),
        Some(b"time_us") => e.time_us = v.as_i64().unwrap_or(0),
        Some(b"device_free") => e.device_free = v.as_u64().unwrap_or(0),
        Some(b"frames") => e.frames = Some(v),
        _ => {}
    }
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, x| (acc << 8) | u64::from(*x))
}

/// Parses a pickle of plain containers into arenas.
pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed<'_>, PickleError> {
    if bytes.len() > MAX_SNAPSHOT_BYTES {
        return Err(PickleError::TooLarge(MAX_SNAPSHOT_BYTES));
    }
    let mut m = Machine {
        p: Parsed { bytes, root: V::None, lists: Vec::new(), dicts: Vec::new() },
        stack: Vec::with_capacity(4096),
        marks: Vec::new(),
        memo: Vec::new(),
        i: 0,
    };
    let mal = PickleError::Malformed;
    loop {
        let at = m.i;
        let op = *bytes.get(m.i).ok_or(PickleError::Truncated(m.i))?;
        m.i += 1;
        match op {
            0x80 => {
                m.take(1)?; // PROTO
            }
            0x95 => {
                m.take(8)?; // FRAME
            }
            b'.' => {
                m.p.root = m.stack.pop().ok_or(mal(at))?;
                return Ok(m.p);
            }
            b'(' => m.marks.push(m.stack.len()),
            0x94 | b'q' | b'r' | b'h' | b'j' => m.memo_op(op, at)?,
            b'}' | b']' | b')' | 0x85 | 0x86 | 0x87 | b't' => m.new_container(op, at)?,
            b'a' | b'e' | b's' | b'u' => m.fill_container(op, at)?,
            _ => {
                let v = m.value(op, at)?;
                m.stack.push(v);
            }
        }
        if m.stack.len() > 1 << 24 {
            return Err(mal(at));
        }
    }
}

/// The pickle machine: the arenas being filled, its stack, marks and memo, and the read position.
struct Machine<'a> {
    p: Parsed<'a>,
    stack: Vec<V>,
    marks: Vec<usize>,
    memo: Vec<V>,
    i: usize,
}

impl<'a> Machine<'a> {
    /// The next `n` bytes of the input.
    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let bytes = self.p.bytes;
        let end =
            self.i.checked_add(n).filter(|e| *e <= bytes.len()).ok_or(PickleError::Truncated(self.i))?;
        let s = &bytes[self.i..end];
        self.i = end;
        Ok(s)
    }

    /// A scalar, string or bytes opcode's value; any other opcode is refused.
    fn value(&mut self, op: u8, at: usize) -> Result<V, PickleError> {
        let mal = PickleError::Malformed;
        Ok(match op {
            b'N' => V::None,
            0x88 => V::Bool(true),
            0x89 => V::Bool(false),
            b'J' => V::Int(i64::from(le(self.take(4)?) as u32 as i32)),
            b'K' => V::Int(i64::from(self.take(1)?[0])),
            b'M' => V::Int(le(self.take(2)?) as i64),
            0x8a => {
                let n = usize::from(self.take(1)?[0]);
                let s = self.take(n)?;
                long1(s)
            }
            b'G' => {
                let mut a = [0u8; 8];
                a.copy_from_slice(self.take(8)?);
                V::Float(f64::from_be_bytes(a))
            }
            0x8c | b'X' | 0x8d | b'C' | b'B' | 0x8e => {
                let n = match op {
                    0x8c | b'C' => usize::from(self.take(1)?[0]),
                    b'X' | b'B' => le(self.take(4)?) as usize,
                    _ => usize::try_from(le(self.take(8)?)).map_err(|_| mal(at))?,
                };
                let start = self.i;
                self.take(n)?;
                // the input is at most 2 GiB, so offsets and lengths fit u32
                let (s, l) = (start as u32, n as u32);
                if matches!(op, 0x8c | b'X' | 0x8d) { V::Str(s, l) } else { V::Bytes(s, l) }
            }
            _ => return Err(PickleError::Unsupported { op, at }),
        })
    }

    /// MEMOIZE, PUT (BINPUT, LONG_BINPUT) and GET (BINGET, LONG_BINGET).
    fn memo_op(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        let mal = PickleError::Malformed;
        match op {
            0x94 => self.memo.push(*self.stack.last().ok_or(mal(at))?), // MEMOIZE
            b'q' | b'r' => {
                let idx = if op == b'q' { usize::from(self.take(1)?[0]) } else { le(self.take(4)?) as usize };
                let v = *self.stack.last().ok_or(mal(at))?;
                // Python numbers its memo in order; allow a little slack, never a huge jump
                if idx > self.memo.len() + 1024 {
                    return Err(mal(at));
                }
                if idx >= self.memo.len() {
                    self.memo.resize(idx + 1, V::None);
                }
                self.memo[idx] = v;
            }
            _ => {
                let idx = if op == b'h' { usize::from(self.take(1)?[0]) } else { le(self.take(4)?) as usize };
                self.stack.push(*self.memo.get(idx).ok_or(mal(at))?);
            }
        }
        Ok(())
    }

    /// An empty dict, list or tuple, or a tuple of the top 1-3 values or those above the mark.
    fn new_container(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        let mal = PickleError::Malformed;
        let (p, stack) = (&mut self.p, &mut self.stack);
        if let b'}' | b']' | b')' = op {
            if p.lists.len() + p.dicts.len() >= MAX_CONTAINERS {
                return Err(mal(at));
            }
            if op == b'}' {
                stack.push(V::Dict(p.dicts.len() as u32));
                p.dicts.push(DictSlot::Items(Vec::new()));
            } else {
                stack.push(V::List(p.lists.len() as u32));
                p.lists.push(Vec::new());
            }
            return Ok(());
        }
        let n = match op {
            0x85 => 1,
            0x86 => 2,
            0x87 => 3,
            _ => stack.len().checked_sub(self.marks.pop().ok_or(mal(at))?).ok_or(mal(at))?,
        };
        if stack.len() < n || p.lists.len() + p.dicts.len() >= MAX_CONTAINERS {
            return Err(mal(at));
        }
        let items = stack.split_off(stack.len() - n);
        stack.push(V::List(p.lists.len() as u32));
        p.lists.push(items);
        Ok(())
    }

    /// APPEND, APPENDS, SETITEM and SETITEMS: values into the list or dict below them.
    fn fill_container(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        let mal = PickleError::Malformed;
        let (p, stack) = (&mut self.p, &mut self.stack);
        match op {
            b'a' => {
                let v = stack.pop().ok_or(mal(at))?;
                let Some(V::List(l)) = stack.last() else { return Err(mal(at)) };
                p.lists[*l as usize].push(v);
            }
            b'e' => {
                let m = self.marks.pop().ok_or(mal(at))?;
                if m > stack.len() || m == 0 {
                    return Err(mal(at));
                }
                let V::List(l) = stack[m - 1] else { return Err(mal(at)) };
                p.lists[l as usize].extend_from_slice(&stack[m..]);
                stack.truncate(m);
            }
            _ => {
                let m = if op == b's' {
                    stack.len().checked_sub(2).ok_or(mal(at))?
                } else {
                    self.marks.pop().ok_or(mal(at))?
                };
                if m > stack.len() || m == 0 || !(stack.len() - m).is_multiple_of(2) {
                    return Err(mal(at));
                }
                let V::Dict(d) = stack[m - 1] else { return Err(mal(at)) };
                set_items(p, d as usize, &stack[m..]);
                stack.truncate(m);
            }
        }
        Ok(())
    }
}

fn long1(s: &[u8]) -> V {
    let n = s.len();
    if n == 0 {
        return V::Int(0);
    }
    let negative = s[n - 1] & 0x80 != 0;
    // drop redundant sign bytes, then read what is left
    let mut len = n;
    while len > 1 && s[len - 1] == if negative { 0xff } else { 0 } && (s[len - 2] & 0x80 != 0) == negative {
        len -= 1;
    }
    if len > 9 || (len == 9 && (negative || s[8] != 0)) {
        return V::BigInt;
    }
    let mut v: u64 = 0;
    for (k, b) in s[..len.min(8)].iter().enumerate() {
        v |= u64::from(*b) << (8 * k);
    }
    if len == 9 {
        return if v > i64::MAX as u64 { V::UInt(v) } else { V::Int(v as i64) };
    }
    if negative && len < 8 {
        v |= u64::MAX << (8 * len); // sign-extend
    }
    if !negative && v > i64::MAX as u64 {
        return V::UInt(v);
    }
    V::Int(v as i64)
}

fn set_items(p: &mut Parsed<'_>, d: usize, kv: &[V]) {
    let is_entry = match &p.dicts[d] {
        DictSlot::Items(items) => {
            items.is_empty() && kv.chunks_exact(2).any(|c| p.bytes_of(c[0]) == Some(b"action".as_slice()))
        }
        DictSlot::Entry(_) => true,
    };
    if is_entry {
        let mut e = match &p.dicts[d] {
            DictSlot::Entry(e) => *e,
            DictSlot::Items(_) => Entry::default(),
        };
        for c in kv.chunks_exact(2) {
            apply(p, &mut e, c[0], c[1]);
        }
        p.dicts[d] = DictSlot::Entry(e);
    } else if let DictSlot::Items(items) = &mut p.dicts[d] {
        items.extend(kv.chunks_exact(2).map(|c| (c[0], c[1])));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long1_reads_signs_and_widths() {
        assert_eq!(long1(&[]), V::Int(0));
        assert_eq!(long1(&[0xff]), V::Int(-1));
        assert_eq!(long1(&[0x00, 0x80]), V::Int(-32768));
        assert_eq!(long1(&[0xff, 0x00]), V::Int(255));
        let addr = 0x7f12_3456_0000u64;
        assert_eq!(long1(&addr.to_le_bytes()[..6]), V::Int(addr as i64));
        let mut big = u64::MAX.to_le_bytes().to_vec();
        big.push(0);
        assert_eq!(long1(&big), V::UInt(u64::MAX));
        assert_eq!(long1(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]), V::BigInt);
        assert_eq!(long1(&i64::MIN.to_le_bytes()), V::Int(i64::MIN));
    }
}
