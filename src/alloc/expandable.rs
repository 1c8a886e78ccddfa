//! Expandable segments (`expandable_segments:True`): `find_expandable_block`, `map_block`,
//! `try_allocate_expandable_block` and `unmap_block`.

use super::{Allocator, MAX_VA, NONE, page_size, pool};

impl Allocator {
    /// Address space of one expandable segment: 9/8 of the device, in whole pages.
    pub(super) fn segment_va(&self, small: bool) -> u64 {
        let cap = self.cfg.capacity.min(MAX_VA);
        (cap + cap / 8).div_ceil(page_size(small)).max(1) * page_size(small)
    }

    /// `try_allocate_expandable_block`: maps pages so that a free run of at least `size` bytes
    /// exists at the lowest possible address, and returns it (out of the pool).
    pub(super) fn try_allocate_expandable_block(
        &mut self,
        small: bool,
        stream: u8,
        size: u64,
    ) -> Option<u32> {
        if size > self.segment_va(small) {
            return None; // more than the address space, hence more than the capacity
        }
        let mut cand = self.find_expandable_block(small, stream, size)?;
        let c = self.blocks[cand as usize];
        if !c.mapped && !self.map_block(cand, c.size.min(size)) {
            return None;
        }
        while self.blocks[cand as usize].size < size {
            let next = self.blocks[cand as usize].next;
            let n = *self.blocks.get(next as usize)?;
            if n.mapped || n.allocated {
                return None; // unreachable: a free block is followed by unmapped space here
            }
            if !self.map_block(next, (size - self.blocks[cand as usize].size).min(n.size)) {
                return None;
            }
            cand = next; // the newly mapped block absorbed `cand`
        }
        self.remove_free(cand);
        Some(cand)
    }

    /// `find_expandable_block`: the lowest-address unmapped range of this stream and pool that,
    /// with the free block before it, has room for `size`; or a new segment.
    pub(super) fn find_expandable_block(&mut self, small: bool, stream: u8, size: u64) -> Option<u32> {
        let free_at = |i: u32| self.blocks.get(i as usize).is_some_and(|b| !b.allocated);
        let has_room = |mut i: u32| {
            let mut bytes = 0u64;
            while bytes < size && free_at(i) {
                bytes = bytes.saturating_add(self.blocks[i as usize].size);
                i = self.blocks[i as usize].next;
            }
            bytes >= size
        };
        let found = (self.unmapped[pool(small)].range((stream, 0, 0)..))
            .take_while(|k| k.0 == stream)
            .map(|k| {
                let prev = self.blocks[k.2 as usize].prev;
                if free_at(prev) { prev } else { k.2 }
            })
            .find(|&c| has_room(c));
        if found.is_some() {
            return found;
        }
        let va = self.segment_va(small);
        let addr = self.bump(va, page_size(small))?;
        let b = self.block(addr, va, stream, small, false);
        let i = self.alloc_slot(b);
        self.insert_unmapped(i);
        Some(i)
    }

    /// `map_block`: maps the pages covering the first `size` bytes of the unmapped block `i`,
    /// merges it with free neighbours and caches it. False when the pages do not fit the capacity.
    pub(super) fn map_block(&mut self, i: u32, size: u64) -> bool {
        let b = self.blocks[i as usize];
        let bytes = size.div_ceil(page_size(b.small)).saturating_mul(page_size(b.small)).min(b.size);
        if bytes == 0 || self.stats.reserved.checked_add(bytes).is_none_or(|r| r > self.cfg.capacity) {
            return false;
        }
        self.remove_unmapped(i);
        self.blocks[i as usize].mapped = true;
        if bytes < b.size {
            let mut rest = self.block(b.addr + bytes, b.size - bytes, b.stream, b.small, false);
            (rest.prev, rest.next) = (i, b.next);
            let r = self.alloc_slot(rest);
            if b.next != NONE {
                self.blocks[b.next as usize].prev = r;
            }
            (self.blocks[i as usize].next, self.blocks[i as usize].size) = (r, bytes);
            self.insert_unmapped(r);
        }
        let (prev, next) = (self.blocks[i as usize].prev, self.blocks[i as usize].next);
        self.try_merge_blocks(i, prev);
        self.try_merge_blocks(i, next);
        self.insert_free(i);
        self.add_reserved(bytes);
        self.stats.cuda_mallocs += 1;
        true
    }

    /// `unmap_block`: unmaps the whole pages inside the cached block `i`; the partial pages at
    /// either end stay mapped as free blocks.
    pub(super) fn unmap_block(&mut self, i: u32) {
        let b = self.blocks[i as usize];
        let page = page_size(b.small);
        let begin = b.addr.div_ceil(page) * page;
        let end = (b.addr + b.size) / page * page;
        if begin >= end {
            return;
        }
        self.remove_free(i);
        if begin > b.addr {
            let mut before = self.block(b.addr, begin - b.addr, b.stream, b.small, true);
            (before.prev, before.next) = (b.prev, i);
            let f = self.alloc_slot(before);
            if b.prev != NONE {
                self.blocks[b.prev as usize].next = f;
            }
            self.blocks[i as usize].prev = f;
            self.insert_free(f);
        }
        if b.addr + b.size > end {
            let mut after = self.block(end, b.addr + b.size - end, b.stream, b.small, true);
            (after.prev, after.next) = (i, b.next);
            let f = self.alloc_slot(after);
            if b.next != NONE {
                self.blocks[b.next as usize].prev = f;
            }
            self.blocks[i as usize].next = f;
            self.insert_free(f);
        }
        let m = &mut self.blocks[i as usize];
        (m.addr, m.size, m.mapped) = (begin, end - begin, false);
        let (prev, next) = (m.prev, m.next);
        self.try_merge_blocks(i, prev);
        self.try_merge_blocks(i, next);
        self.insert_unmapped(i);
        self.stats.reserved = self.stats.reserved.saturating_sub(end - begin);
    }
}
