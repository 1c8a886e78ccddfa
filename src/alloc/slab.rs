//! The block slab, the handle table, pool-set bookkeeping and statistics helpers.

use super::{Allocator, Block, DENSE_IDS, FreeKey, NONE, UnmappedKey, pool};

impl Allocator {
    pub(super) fn take_id(&mut self, id: u32) -> Option<u32> {
        let slot = if id < DENSE_IDS { self.ids.get_mut(id as usize)? } else { self.far_ids.get_mut(&id)? };
        let b = std::mem::replace(slot, NONE);
        (b != NONE).then_some(b)
    }

    pub(super) fn set_id(&mut self, id: u32, block: u32) {
        if id < DENSE_IDS {
            let i = id as usize;
            if i >= self.ids.len() {
                self.ids.resize(i + 1, NONE);
            }
            self.ids[i] = block;
        } else {
            self.far_ids.insert(id, block);
        }
    }

    pub(super) fn alloc_slot(&mut self, b: Block) -> u32 {
        if let Some(i) = self.spare.pop() {
            self.blocks[i as usize] = b;
            i
        } else {
            self.blocks.push(b);
            (self.blocks.len() - 1) as u32
        }
    }

    pub(super) fn release_slot(&mut self, i: u32) {
        self.blocks[i as usize].live = false;
        self.spare.push(i);
    }

    pub(super) fn block(&self, addr: u64, size: u64, stream: u8, small: bool, mapped: bool) -> Block {
        let expandable = self.cfg.expandable_segments;
        let (prev, next, gc_base) = (NONE, NONE, 0);
        Block {
            addr,
            size,
            prev,
            next,
            gc_base,
            bucket: NONE,
            stream,
            small,
            allocated: false,
            mapped,
            expandable,
            live: true,
        }
    }

    pub(super) fn is_split(&self, i: u32) -> bool {
        let b = &self.blocks[i as usize];
        b.prev != NONE || b.next != NONE
    }

    pub(super) fn free_key(&self, i: u32) -> FreeKey {
        let b = &self.blocks[i as usize];
        (b.stream, b.size, b.addr, i)
    }

    /// `BlockPool::insert_into_blocks`: caches a block and stamps its GC age base.
    pub(super) fn insert_free(&mut self, i: u32) {
        let small = self.blocks[i as usize].small;
        self.blocks[i as usize].gc_base = self.gc_calls[pool(small)];
        let key = self.free_key(i);
        self.blocks[i as usize].bucket = self.free[pool(small)].insert(key);
        self.whole[pool(small)] += usize::from(self.is_whole(i));
    }

    pub(super) fn remove_free(&mut self, i: u32) {
        let b = &self.blocks[i as usize];
        self.free[pool(b.small)].remove(b.bucket, b.addr, i);
        let whole = usize::from(self.is_whole(i));
        self.whole[pool(b.small)] = self.whole[pool(b.small)].saturating_sub(whole);
    }

    /// A whole `cudaMalloc` segment (what `release_block` can free). A cached block keeps this
    /// property until it leaves the cache: its neighbours, if any, are allocated.
    pub(super) fn is_whole(&self, i: u32) -> bool {
        !self.blocks[i as usize].expandable && !self.is_split(i)
    }

    pub(super) fn unmapped_key(&self, i: u32) -> (usize, UnmappedKey) {
        let b = &self.blocks[i as usize];
        (pool(b.small), (b.stream, b.addr, i))
    }

    pub(super) fn insert_unmapped(&mut self, i: u32) {
        let (p, key) = self.unmapped_key(i);
        self.unmapped[p].insert(key);
    }

    pub(super) fn remove_unmapped(&mut self, i: u32) {
        let (p, key) = self.unmapped_key(i);
        self.unmapped[p].remove(&key);
    }

    /// A fresh virtual address range (the simulated `cudaMalloc`/`cuMemAddressReserve`).
    /// None once the simulated address space (2^64 B, never reused) is used up.
    pub(super) fn bump(&mut self, size: u64, align: u64) -> Option<u64> {
        let addr = self.next_addr.div_ceil(align).checked_mul(align)?;
        self.next_addr = addr.checked_add(size)?;
        Some(addr)
    }

    pub(super) fn add_reserved(&mut self, n: u64) {
        let s = &mut self.stats;
        s.reserved = s.reserved.saturating_add(n);
        s.peak_reserved = s.peak_reserved.max(s.reserved);
    }

    pub(super) fn gc_threshold(&self) -> Option<f64> {
        self.gc
    }
}
