//! The cached-block index of one pool: `BlockPool::blocks`, a set in `BlockComparatorSize` order
//! (stream, size, address). Replays see a few dozen to a few hundred distinct sizes but up to
//! thousands of cached blocks, so the set is stored as one bucket of addresses per distinct
//! (stream, size) key, the keys sorted with a bitset of those that have cached blocks: best fit
//! and caching are a binary search over the keys (plus a bit scan), and a cached block remembers
//! its bucket, so uncaching is O(1). Keys whose buckets are empty are dropped once they are the
//! majority; a bucket keeps its id while it is not empty.

use super::FreeKey;
use std::cell::Cell;
use std::collections::VecDeque;

/// The cached blocks of one key, as (address, block) sorted by address; a deque, so that the
/// common patterns (the lowest address taken and cached again, blocks freed in address order or
/// in reverse) are O(1).
#[derive(Clone, Debug, Default)]
struct Bucket {
    key: u64,
    blocks: VecDeque<(u64, u32)>,
}

#[derive(Clone, Debug, Default)]
pub(super) struct FreeIndex {
    buckets: Vec<Bucket>,
    spare: Vec<u32>,
    /// Distinct keys in sorted order, and the bucket at each position.
    keys: Vec<u64>,
    ids: Vec<u32>,
    /// Positions whose buckets are not empty.
    used: Vec<u64>,
    empty: usize,
    len: usize,
    /// Recent `lower_bound` answers, by key hash: checked in O(1) before a binary search.
    hints: [Cell<u32>; 32],
}

/// (stream, size) packed so that integer order is `BlockComparatorSize` order. Exact: every block
/// size is a multiple of 512 B (requests, segments, pages and splits all are).
fn key(stream: u8, size: u64) -> u64 {
    (u64::from(stream) << 56) | (size >> 9)
}

fn unkey(k: u64) -> (u8, u64) {
    ((k >> 56) as u8, (k & ((1 << 56) - 1)) << 9)
}

impl FreeIndex {
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn set_used(&mut self, pos: usize, on: bool) {
        if let Some(w) = self.used.get_mut(pos / 64) {
            let bit = 1u64 << (pos % 64);
            if on { *w |= bit } else { *w &= !bit }
        }
    }

    /// Opens a clear bit at `pos`, moving the bits at and above it up by one.
    fn insert_bit(&mut self, pos: usize) {
        if self.keys.len() > self.used.len() * 64 {
            self.used.push(0);
        }
        let first = pos / 64;
        let mut carry = 0;
        for (w, word) in self.used.iter_mut().enumerate().skip(first) {
            let keep = if w == first { (1u64 << (pos % 64)) - 1 } else { 0 };
            let out = *word >> 63;
            *word = (*word & keep) | ((*word & !keep) << 1) | carry;
            carry = out;
        }
    }

    /// The first position `>= pos` with cached blocks.
    fn next_used(&self, pos: usize) -> Option<usize> {
        let mut w = pos / 64;
        let mut bits = self.used.get(w)? & (u64::MAX << (pos % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.used.get(w)?;
        }
    }

    /// The last position `< pos` with cached blocks.
    fn prev_used(&self, pos: usize) -> Option<usize> {
        let pos = pos.checked_sub(1)?;
        let mut w = pos / 64;
        let mut bits = self.used.get(w)? & (u64::MAX >> (63 - pos % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + 63 - bits.leading_zeros() as usize);
            }
            w = w.checked_sub(1)?;
            bits = *self.used.get(w)?;
        }
    }

    /// The position of the first key `>= k`.
    fn lower_bound(&self, k: u64) -> usize {
        let hint = &self.hints[(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59) as usize];
        let p = hint.get() as usize;
        let above = |p: usize| p.checked_sub(1).and_then(|q| self.keys.get(q)).is_none_or(|&x| x < k);
        if p <= self.keys.len() && above(p) && self.keys.get(p).is_none_or(|&x| x >= k) {
            return p;
        }
        let p = self.keys.partition_point(|&x| x < k);
        hint.set(p as u32);
        p
    }

    /// Caches a block; returns the bucket to give [`FreeIndex::remove`].
    pub(super) fn insert(&mut self, (stream, size, addr, i): FreeKey) -> u32 {
        let k = key(stream, size);
        let pos = self.lower_bound(k);
        let id = if self.keys.get(pos) == Some(&k) {
            self.ids[pos]
        } else {
            let id = self.spare.pop().unwrap_or(self.buckets.len() as u32);
            if id as usize == self.buckets.len() {
                self.buckets.push(Bucket::default());
            }
            self.buckets[id as usize].key = k;
            self.keys.insert(pos, k);
            self.ids.insert(pos, id);
            self.insert_bit(pos);
            self.empty += 1;
            id
        };
        let q = &mut self.buckets[id as usize].blocks;
        match (q.front(), q.back()) {
            (Some(&(lo, _)), _) if addr < lo => q.push_front((addr, i)),
            (_, Some(&(hi, _))) if addr > hi => q.push_back((addr, i)),
            (None, _) => q.push_back((addr, i)),
            _ => q.insert(q.partition_point(|&(a, _)| a < addr), (addr, i)),
        }
        if q.len() == 1 {
            self.empty -= 1;
            self.set_used(pos, true);
        }
        self.len += 1;
        id
    }

    /// Uncaches block `i` at `addr`, cached in `bucket`.
    pub(super) fn remove(&mut self, bucket: u32, addr: u64, i: u32) {
        let Some(b) = self.buckets.get_mut(bucket as usize) else { return };
        let q = &mut b.blocks;
        if q.front() == Some(&(addr, i)) {
            q.pop_front();
        } else if q.back() == Some(&(addr, i)) {
            q.pop_back();
        } else {
            let at = q.partition_point(|&(a, _)| a < addr);
            if q.get(at) != Some(&(addr, i)) {
                return;
            }
            q.remove(at);
        }
        self.len -= 1;
        if q.is_empty() {
            let k = b.key;
            let pos = self.lower_bound(k);
            self.empty += 1;
            self.set_used(pos, false);
            if self.empty > 64 && self.empty > self.keys.len() / 2 {
                self.compact();
            }
        }
    }

    /// Drops the keys without cached blocks (the other buckets keep their ids).
    fn compact(&mut self) {
        let (keys, ids) = (std::mem::take(&mut self.keys), std::mem::take(&mut self.ids));
        for (k, id) in keys.into_iter().zip(ids) {
            if self.buckets[id as usize].blocks.is_empty() {
                self.spare.push(id);
            } else {
                self.keys.push(k);
                self.ids.push(id);
            }
        }
        self.used.clear();
        self.used.resize(self.keys.len().div_ceil(64), u64::MAX);
        if let Some(last) = self.used.last_mut() {
            *last >>= (64 - self.keys.len() % 64) % 64;
        }
        self.empty = 0;
    }

    fn bucket(&self, pos: usize) -> (u8, u64, &VecDeque<(u64, u32)>) {
        let b = &self.buckets[self.ids[pos] as usize];
        let (stream, size) = unkey(b.key);
        (stream, size, &b.blocks)
    }

    /// Calls `f` on the cached blocks from `lower_bound((stream, size))` on, in order (any stream
    /// after it too), while it returns true.
    pub(super) fn walk_from(&self, stream: u8, size: u64, mut f: impl FnMut(FreeKey) -> bool) {
        let mut pos = self.next_used(self.lower_bound(key(stream, size)));
        while let Some(p) = pos {
            let (s, size, q) = self.bucket(p);
            for &(addr, i) in q {
                if !f((s, size, addr, i)) {
                    return;
                }
            }
            pos = self.next_used(p + 1);
        }
    }

    /// The first cached block at or after `lower_bound((stream, size))` (any stream).
    pub(super) fn first_from(&self, stream: u8, size: u64) -> Option<FreeKey> {
        let (s, size, q) = self.bucket(self.next_used(self.lower_bound(key(stream, size)))?);
        q.front().map(|&(addr, i)| (s, size, addr, i))
    }

    /// All cached blocks in order.
    pub(super) fn to_vec(&self) -> Vec<FreeKey> {
        let mut v = Vec::with_capacity(self.len);
        self.walk_from(0, 0, |k| {
            v.push(k);
            true
        });
        v
    }

    /// Cached blocks before `lower_bound((stream, size))`, in reverse order, while `keep` holds.
    pub(super) fn before_while(
        &self,
        stream: u8,
        size: u64,
        keep: impl Fn(&FreeKey) -> bool,
    ) -> Vec<FreeKey> {
        let mut v = Vec::new();
        let mut pos = self.prev_used(self.lower_bound(key(stream, size)));
        while let Some(p) = pos {
            let (s, size, q) = self.bucket(p);
            for &(addr, i) in q.iter().rev() {
                if !keep(&(s, size, addr, i)) {
                    return v;
                }
                v.push((s, size, addr, i));
            }
            pos = self.prev_used(p);
        }
        v
    }
}
