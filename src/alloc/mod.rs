//! A replay model of PyTorch's CUDA caching allocator (`c10/cuda/CUDACachingAllocator.cpp`,
//! `DeviceCachingAllocator`, PyTorch 2.x as of late 2025), so a predicted stream of tensor
//! allocations and frees yields `torch.cuda.memory_allocated()`, `memory_reserved()` and their
//! peaks (`max_memory_reserved()`), segment and `cudaMalloc` counts, retries and OOMs.
//!
//! # What is modelled, function by function
//! * `round_size`: requests round up to 512 B (`kMinBlockSize`). The optional
//!   `roundup_power2_divisions` setting is **not** modelled (it is off by default).
//! * `get_pool`: rounded sizes ≤ 1 MiB (`kSmallSize`) go to the small pool, larger ones to the
//!   large pool; pools are further keyed by stream (`BlockComparatorSize` orders by stream, size,
//!   address), so a cached block is only reused by the stream that allocated it.
//! * `get_allocation_size`: a small request gets a 2 MiB segment (`kSmallBuffer`), a large one
//!   under 10 MiB (`kMinLargeAlloc`) a 20 MiB one (`large_segment_size`, default `kLargeBuffer`),
//!   anything else its size rounded up to 2 MiB (`kRoundLarge`).
//! * `get_free_block`: best fit, the smallest cached block of the same pool and stream that is at
//!   least the request (ties: lowest address). With `max_split_size`, a block ≥ `max_split_size`
//!   is refused for a request below it, and for a request ≥ `max_split_size` a block that exceeds
//!   the request by `max_non_split_rounding_size` (default 20 MiB) or more is refused. With
//!   expandable segments the block at the mapped end of a segment counts as its expandable size
//!   (block + the unmapped space after it), so best fit prefers interior blocks.
//! * `should_split` / `alloc_found_block`: a small-pool block (or any block with expandable
//!   segments) is split when at least 512 B remain; a large-pool block only when the request is
//!   below `max_split_size` and more than 1 MiB remains. Otherwise the caller gets the whole block
//!   and `allocated` counts the whole block, as PyTorch does (an 11 MiB request holds 12 MiB).
//! * `free` / `free_block` / `try_merge_blocks`: a freed block returns to its pool and merges with
//!   free neighbours of the same segment. Memory goes back to the driver only in `emptyCache`
//!   and on the out-of-memory path.
//! * `malloc`, in the source's order: `get_free_block`; else `garbage_collect_cached_blocks` when a
//!   threshold is set; `alloc_block`; else `release_available_cached_blocks` (only with
//!   `max_split_size`) and `alloc_block` again; else `release_cached_blocks` (every whole, unsplit
//!   cached segment; free pages of expandable segments are unmapped) and a last `alloc_block`,
//!   which counts in `num_alloc_retries`; else OOM: the request fails and counts in `num_ooms`,
//!   the state stays consistent and the replay goes on.
//! * `garbage_collect_cached_blocks`: when reserved memory is above `threshold × capacity`, whole
//!   cached large-pool segments whose age (`get_free_block` calls on the pool since the block was
//!   cached) is at least the average age are released, pass after pass, until enough is reclaimed.
//! * Expandable segments (`find_expandable_block`, `map_block`, `try_allocate_expandable_block`,
//!   `unmap_block`, `release_blocks`): one virtual segment per stream and pool, mapped in 2 MiB
//!   pages (small pool) or 20 MiB pages (large pool, `large_segment_size`); a request that no
//!   cached block fits is placed at the lowest address with enough free-or-unmapped room (normally
//!   the end, merging with a free block there) and the pages it needs are mapped. Freed memory
//!   stays mapped until `emptyCache` or the OOM path unmaps its whole pages.
//! * Statistics as `DeviceStats`: `allocated_bytes`, `reserved_bytes` (with peaks, reset by
//!   `resetPeakStats`), `segment` (cudaMalloc'd segments only: PyTorch does not count expandable
//!   segments there), `num_device_alloc` (cudaMalloc calls plus page-map calls),
//!   `num_alloc_retries`, `num_ooms`, `inactive_split_bytes` (free blocks of split segments,
//!   expandable segments excluded, as in `free_block`).
//!
//! Read from `c10/cuda/CUDACachingAllocator.cpp` of pytorch/pytorch (the stored snapshot at
//! commit `001074d2`, `CUDAAllocatorConfig` era, and a late-2025 revision with
//! `AcceleratorAllocatorConfig`, `large_segment_size` and `is_expandable_segments_active`, whose
//! behaviour is the one modelled) and `c10/core/AllocatorConfig.{h,cpp}` for the defaults.
//!
//! Cached blocks are indexed per pool by (stream, size) buckets (`index.rs`); replaying a
//! 50,000-op training step takes about 480 instructions per op, a few milliseconds (see the
//! `alloc replay 50k ops (70B step shape)` benchmark).
//!
//! # Simplifications
//! * One device; no `recordStream`/CUDA events, CUDA graphs, private memory pools, free-memory
//!   callbacks, IPC, or turning expandable segments on and off in mid-run.
//! * `capacity` is what the driver can hand out: a segment is created iff `reserved + size ≤
//!   capacity` (`cudaMalloc`), and pages are mapped iff `reserved + pages ≤ capacity` (`cuMemCreate`).
//!   CUDA-context memory, other processes and driver-side fragmentation are left out. The garbage
//!   collector, which PyTorch runs only under a memory fraction (`allowed_memory_maximum`), runs here
//!   when a threshold in (0, 1) is given and `capacity` is finite, with `capacity` as the maximum.
//! * Addresses come from a bump allocator that never reuses an address, so among equal-size
//!   cached blocks the older segment wins; the real driver may hand out addresses in another order.
//! * `max_non_split_rounding_size` and `large_segment_size` keep their 20 MiB defaults; an
//!   expandable segment reserves 9/8 of `capacity` (at most 72 TiB) of address space.
//! * Malformed streams never panic: freeing an unknown id (or twice) is ignored, a zero-byte
//!   request allocates nothing (PyTorch returns no block), allocating an id that is still live
//!   leaks the old block (it stays allocated, like a tensor whose handle was lost), and a request
//!   of 1 EiB or more fails as an OOM (PyTorch's `allocate` guard; it is counted here).

use index::FreeIndex;
use std::collections::{BTreeSet, HashMap};
use std::fmt;

mod expandable;
mod index;
mod release;
mod slab;
pub mod synth;
#[cfg(test)]
mod tests;

/// `kMinBlockSize`: every request is rounded up to a multiple of 512 bytes.
pub const MIN_BLOCK_SIZE: u64 = 512;
/// `kSmallSize`: the largest request (after rounding) served by the small pool, 1 MiB.
pub const SMALL_SIZE: u64 = 1 << 20;
/// `kSmallBuffer`: small-pool segment size, and the small pool's expandable page, 2 MiB.
pub const SMALL_BUFFER: u64 = 2 << 20;
/// `kLargeBuffer` (default `large_segment_size`): segment for 1–10 MiB requests, and the large
/// pool's expandable page, 20 MiB.
pub const LARGE_BUFFER: u64 = 20 << 20;
/// `kMinLargeAlloc`: requests of at least 10 MiB get a segment of their own size.
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// `kRoundLarge`: large segments are rounded up to 2 MiB.
pub const ROUND_LARGE: u64 = 2 << 20;
/// Default `max_non_split_rounding_size` (= `large_segment_size`): how much larger than an
/// oversize request a cached block may be and still be handed out whole.
pub const MAX_NON_SPLIT_ROUNDING: u64 = LARGE_BUFFER;

const MAX_REQUEST: u64 = 1 << 60; // allocate(): "Tried to allocate more than 1EB memory"
const MAX_VA: u64 = 64 << 40; // address space cap for an expandable segment (before the 9/8)
const DENSE_IDS: u32 = 1 << 24; // ids below this live in a Vec, others in a HashMap
const NONE: u32 = u32::MAX;

/// `round_size` without `roundup_power2_divisions`: `bytes` rounded up to 512 B, at least 512 B.
pub fn round_size(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(MIN_BLOCK_SIZE).saturating_mul(MIN_BLOCK_SIZE)
}

/// `get_allocation_size`: the size of the segment `cudaMalloc`ed for a rounded request `size`.
pub fn allocation_size(size: u64) -> u64 {
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        size.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE)
    }
}

/// Allocator settings, as `PYTORCH_CUDA_ALLOC_CONF` would give them, plus the device limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Bytes the driver can hand out (`cudaMalloc` / `cuMemCreate` fail beyond it);
    /// `u64::MAX` means unlimited.
    pub capacity: u64,
    /// `max_split_size_mb`, in bytes (PyTorch requires ≥ 20 MiB; any value is accepted here).
    /// `None` is PyTorch's default: every block may be split.
    pub max_split_size: Option<u64>,
    /// `garbage_collection_threshold`, a fraction in (0, 1) of `capacity`; other values disable it.
    pub garbage_collection_threshold: Option<f64>,
    /// `expandable_segments:True`.
    pub expandable_segments: bool,
}

impl Default for Config {
    /// Unlimited capacity and PyTorch's defaults (no max split size, no GC, no expandable segments).
    fn default() -> Self {
        Config {
            capacity: u64::MAX,
            max_split_size: None,
            garbage_collection_threshold: None,
            expandable_segments: false,
        }
    }
}

/// One event of a replayed program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Allocate `bytes` on `stream` under the caller's handle `id`.
    Alloc {
        /// Caller's handle, a small integer; may be reused after it is freed.
        id: u32,
        /// Requested bytes (before rounding).
        bytes: u64,
        /// CUDA stream, as a small integer.
        stream: u8,
    },
    /// Free the allocation under `id` (unknown ids are ignored).
    Free {
        /// The handle given to [`Op::Alloc`].
        id: u32,
    },
    /// `torch.cuda.empty_cache()`.
    EmptyCache,
}

/// Allocator statistics, named after `torch.cuda.memory_stats()` (aggregate pool).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `allocated_bytes.all.current`: bytes of blocks handed out (rounded, whole blocks).
    pub allocated: u64,
    /// `reserved_bytes.all.current`: bytes held from the driver (segments, mapped pages).
    pub reserved: u64,
    /// `allocated_bytes.all.peak` (`max_memory_allocated()`).
    pub peak_allocated: u64,
    /// `reserved_bytes.all.peak` (`max_memory_reserved()`).
    pub peak_reserved: u64,
    /// `segment.all.current`: live `cudaMalloc` segments (expandable segments are not counted).
    pub segments: u64,
    /// `num_device_alloc`: `cudaMalloc` calls plus expandable-segment map calls.
    pub cuda_mallocs: u64,
    /// `num_alloc_retries`: allocations that had to free every cached segment and retry.
    pub alloc_retries: u64,
    /// `num_ooms`: requests that failed.
    pub ooms: u64,
    /// `inactive_split_bytes.all.current`: free bytes inside split segments (fragmentation).
    pub inactive_split: u64,
}

/// A failed request: the simulated `torch.cuda.OutOfMemoryError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oom {
    /// Bytes requested.
    pub requested: u64,
    /// Segment size PyTorch reports ("Tried to allocate …"): `get_allocation_size`.
    pub alloc_size: u64,
    /// Allocated bytes when it failed.
    pub allocated: u64,
    /// Reserved bytes when it failed (after the cache was released).
    pub reserved: u64,
    /// The configured capacity.
    pub capacity: u64,
}

impl fmt::Display for Oom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CUDA out of memory (simulated): tried to allocate {} B for a {} B request; \
             {} B allocated, {} B reserved, capacity {} B",
            self.alloc_size, self.requested, self.allocated, self.reserved, self.capacity
        )
    }
}

impl std::error::Error for Oom {}

/// A block: a contiguous range of a segment, free or allocated, mapped or not.
#[derive(Clone, Copy, Debug)]
struct Block {
    addr: u64,
    size: u64,
    prev: u32,
    next: u32,
    gc_base: u64,
    bucket: u32,
    stream: u8,
    small: bool,
    allocated: bool,
    mapped: bool,
    expandable: bool,
    live: bool,
}

/// Cached mapped blocks, in `BlockComparatorSize` order: stream, size, address.
type FreeKey = (u8, u64, u64, u32);
/// Unmapped ranges of expandable segments, in `BlockComparatorAddress` order.
type UnmappedKey = (u8, u64, u32);

/// The simulated `DeviceCachingAllocator` of one device.
#[derive(Clone, Debug)]
pub struct Allocator {
    cfg: Config,
    max_split: u64,
    blocks: Vec<Block>,
    spare: Vec<u32>,
    free: [FreeIndex; 2],
    unmapped: [BTreeSet<UnmappedKey>; 2],
    gc: Option<f64>,
    gc_calls: [u64; 2],
    whole: [usize; 2],
    ids: Vec<u32>,
    far_ids: HashMap<u32, u32>,
    next_addr: u64,
    stats: Stats,
}

fn pool(small: bool) -> usize {
    usize::from(small)
}

fn page_size(small: bool) -> u64 {
    if small { SMALL_BUFFER } else { LARGE_BUFFER }
}

impl Allocator {
    /// An empty allocator (nothing reserved).
    pub fn new(cfg: Config) -> Self {
        Self::with_capacity_hint(cfg, 0)
    }

    /// An empty allocator with room preallocated for a replay of about `ops` operations.
    pub fn with_capacity_hint(cfg: Config, ops: usize) -> Self {
        let n = ops.min(1 << 20);
        Allocator {
            cfg,
            max_split: cfg.max_split_size.unwrap_or(u64::MAX),
            blocks: Vec::with_capacity(n / 8 + 64),
            spare: Vec::with_capacity(64),
            free: [FreeIndex::default(), FreeIndex::default()],
            unmapped: [BTreeSet::new(), BTreeSet::new()],
            gc: cfg.garbage_collection_threshold.filter(|&t| t > 0.0 && t < 1.0 && cfg.capacity != u64::MAX),
            gc_calls: [0; 2],
            whole: [0; 2],
            ids: Vec::with_capacity(n / 4 + 16),
            far_ids: HashMap::new(),
            next_addr: 1 << 32,
            stats: Stats::default(),
        }
    }

    /// The configuration this allocator runs with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Current statistics.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// `torch.cuda.reset_peak_memory_stats()`: peaks restart from the current values.
    pub fn reset_peaks(&mut self) {
        self.stats.peak_allocated = self.stats.allocated;
        self.stats.peak_reserved = self.stats.reserved;
    }

    /// Applies one [`Op`]; only an [`Op::Alloc`] can fail.
    pub fn apply(&mut self, op: Op) -> Result<(), Oom> {
        match op {
            Op::Alloc { id, bytes, stream } => self.malloc(id, bytes, stream),
            Op::Free { id } => {
                self.free(id);
                Ok(())
            }
            Op::EmptyCache => {
                self.empty_cache();
                Ok(())
            }
        }
    }

    /// `DeviceCachingAllocator::malloc`: allocates `bytes` on `stream` under the handle `id`.
    /// On failure the request is counted in [`Stats::ooms`] and nothing is allocated.
    pub fn malloc(&mut self, id: u32, bytes: u64, stream: u8) -> Result<(), Oom> {
        self.take_id(id); // a live id is overwritten: its block leaks, still allocated
        if bytes == 0 {
            return Ok(());
        }
        let size = round_size(bytes);
        let small = size <= SMALL_SIZE;
        let alloc_size = allocation_size(size);
        let found = if bytes >= MAX_REQUEST {
            None
        } else {
            match self.get_free_block(small, stream, size) {
                Some(b) => Some(b),
                None => self.new_block(small, stream, size, alloc_size),
            }
        };
        let Some(block) = found else {
            self.stats.ooms += 1;
            let s = self.stats;
            let capacity = self.cfg.capacity;
            return Err(Oom {
                requested: bytes,
                alloc_size,
                allocated: s.allocated,
                reserved: s.reserved,
                capacity,
            });
        };
        let split = self.should_split(block, size);
        let block = self.alloc_found_block(block, size, split);
        self.set_id(id, block);
        Ok(())
    }

    /// `DeviceCachingAllocator::free`: returns the block under `id` to its pool (unknown ids,
    /// double frees and zero-byte handles are ignored).
    pub fn free(&mut self, id: u32) {
        let Some(b) = self.take_id(id) else { return };
        let size = self.blocks[b as usize].size;
        self.stats.allocated = self.stats.allocated.saturating_sub(size);
        self.blocks[b as usize].allocated = false;
        self.free_block(b);
    }

    /// `emptyCache` / `release_cached_blocks`: releases every whole cached segment and unmaps the
    /// free pages of expandable segments. Split segments with a live block stay reserved.
    pub fn empty_cache(&mut self) {
        self.release_blocks(false);
        self.release_blocks(true);
    }

    // ---- the malloc path ----

    /// `get_free_block`: best fit among cached blocks of the pool and stream.
    fn get_free_block(&mut self, small: bool, stream: u8, size: u64) -> Option<u32> {
        let p = pool(small);
        if self.gc_threshold().is_some() {
            self.gc_calls[p] += 1;
        }
        let cur = self.best_fit(p, stream, size)?;
        let found = self.blocks[cur as usize].size;
        if size < self.max_split && found >= self.max_split {
            return None; // do not hand an oversize block to a smaller request
        }
        if size >= self.max_split && found >= size.saturating_add(MAX_NON_SPLIT_ROUNDING) {
            return None; // an oversize block may be rounded up, but only within the limit
        }
        self.remove_free(cur);
        Some(cur)
    }

    /// The `lower_bound` of `get_free_block`, with the expandable-segment preference.
    fn best_fit(&self, p: usize, stream: u8, size: u64) -> Option<u32> {
        let (s, _, _, mut cur) = self.free[p].first_from(stream, size)?;
        if s != stream {
            return None;
        }
        if self.blocks[cur as usize].expandable {
            // an end-of-segment block counts as the size it can expand to
            let grow = |i: u32| {
                let b = &self.blocks[i as usize];
                let tail = self.blocks.get(b.next as usize).filter(|n| !n.mapped).map_or(0, |n| n.size);
                b.size.saturating_add(tail)
            };
            let first = cur;
            self.free[p].walk_from(stream, size, |(s, _, _, next)| {
                if next == first {
                    return true;
                }
                if s != stream || !self.blocks[cur as usize].expandable || grow(next) >= grow(cur) {
                    return false;
                }
                cur = next;
                true
            });
        }
        Some(cur)
    }

    /// The part of `malloc` after a cache miss: GC, `alloc_block`, the two release-and-retry steps.
    fn new_block(&mut self, small: bool, stream: u8, size: u64, alloc_size: u64) -> Option<u32> {
        if self.gc_threshold().is_some() {
            self.garbage_collect_cached_blocks();
        }
        if let Some(b) = self.alloc_block(small, stream, size, alloc_size, false) {
            return Some(b);
        }
        if self.release_available_cached_blocks(small, stream, size)
            && let Some(b) = self.alloc_block(small, stream, size, alloc_size, false)
        {
            return Some(b);
        }
        self.empty_cache();
        self.alloc_block(small, stream, size, alloc_size, true)
    }

    /// `alloc_block`: a new `cudaMalloc` segment, or more mapped pages of an expandable segment.
    fn alloc_block(
        &mut self,
        small: bool,
        stream: u8,
        size: u64,
        alloc_size: u64,
        retry: bool,
    ) -> Option<u32> {
        if retry {
            self.stats.alloc_retries += 1;
        }
        if self.cfg.expandable_segments {
            return self.try_allocate_expandable_block(small, stream, size);
        }
        if self.stats.reserved.checked_add(alloc_size)? > self.cfg.capacity {
            return None;
        }
        let addr = self.bump(alloc_size, ROUND_LARGE)?;
        let b = self.block(addr, alloc_size, stream, small, true);
        let i = self.alloc_slot(b);
        self.stats.segments += 1;
        self.stats.cuda_mallocs += 1;
        self.add_reserved(alloc_size);
        Some(i)
    }

    /// `should_split`.
    fn should_split(&self, i: u32, size: u64) -> bool {
        let b = &self.blocks[i as usize];
        let remaining = b.size.saturating_sub(size);
        if b.small || self.cfg.expandable_segments {
            remaining >= MIN_BLOCK_SIZE
        } else {
            size < self.max_split && remaining > SMALL_SIZE
        }
    }

    /// `alloc_found_block`: splits off the remainder (cached again) and marks the block allocated.
    fn alloc_found_block(&mut self, i: u32, size: u64, split: bool) -> u32 {
        let already_split = self.is_split(i);
        let counted = !self.blocks[i as usize].expandable; // inactive_split skips expandable
        let block = if split {
            let rest = self.blocks[i as usize];
            let mut head = rest;
            (head.size, head.next) = (size, i);
            let h = self.alloc_slot(head);
            if rest.prev != NONE {
                self.blocks[rest.prev as usize].next = h;
            }
            let r = &mut self.blocks[i as usize];
            (r.prev, r.addr, r.size) = (h, rest.addr + size, rest.size - size);
            let remaining = r.size;
            self.insert_free(i);
            let s = &mut self.stats;
            if counted && already_split {
                s.inactive_split = s.inactive_split.saturating_sub(size);
            } else if counted {
                s.inactive_split = s.inactive_split.saturating_add(remaining);
            }
            h
        } else {
            if counted && already_split {
                let size = self.blocks[i as usize].size;
                self.stats.inactive_split = self.stats.inactive_split.saturating_sub(size);
            }
            i
        };
        let b = &mut self.blocks[block as usize];
        b.allocated = true;
        let s = &mut self.stats;
        s.allocated = s.allocated.saturating_add(b.size);
        s.peak_allocated = s.peak_allocated.max(s.allocated);
        block
    }

    /// `free_block`: merges with free neighbours and caches the result.
    fn free_block(&mut self, i: u32) {
        let b = self.blocks[i as usize];
        let subsumed = self.try_merge_blocks(i, b.prev) + self.try_merge_blocks(i, b.next);
        self.insert_free(i);
        if !b.expandable {
            let added = if self.is_split(i) { self.blocks[i as usize].size } else { 0 };
            let s = &mut self.stats;
            s.inactive_split = s.inactive_split.saturating_add(added).saturating_sub(subsumed);
        }
    }

    /// `try_merge_blocks`: absorbs `src` (a neighbour of `dst`) when it is free and in the same
    /// mapped state; returns the bytes absorbed. `dst` must not be in a pool set.
    #[inline]
    fn try_merge_blocks(&mut self, dst: u32, src: u32) -> u64 {
        let Some(&s) = self.blocks.get(src as usize) else { return 0 };
        if s.allocated || s.mapped != self.blocks[dst as usize].mapped {
            return 0;
        }
        if s.mapped {
            self.remove_free(src)
        } else {
            self.remove_unmapped(src)
        }
        let d = &mut self.blocks[dst as usize];
        if d.prev == src {
            (d.addr, d.prev) = (s.addr, s.prev);
            if s.prev != NONE {
                self.blocks[s.prev as usize].next = dst;
            }
        } else {
            d.next = s.next;
            if s.next != NONE {
                self.blocks[s.next as usize].prev = dst;
            }
        }
        self.blocks[dst as usize].size += s.size;
        self.release_slot(src);
        s.size
    }
}

/// Replays `ops` on a fresh allocator and returns the final statistics (peaks included).
pub fn replay(cfg: Config, ops: &[Op]) -> Stats {
    replay_with(cfg, ops, |_, _| {})
}

/// Same as [`replay`], calling `f(index, &Stats)` after every op (for drawing reserved memory over
/// a timeline). Failed allocations are counted in [`Stats::ooms`] and the replay goes on.
pub fn replay_with(cfg: Config, ops: &[Op], mut f: impl FnMut(usize, &Stats)) -> Stats {
    let mut a = Allocator::with_capacity_hint(cfg, ops.len());
    for (i, &op) in ops.iter().enumerate() {
        let _ = a.apply(op); // an OOM is already counted in the stats
        f(i, &a.stats);
    }
    a.stats
}
