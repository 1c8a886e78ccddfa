//! Giving memory back to the driver: `release_block`, `release_available_cached_blocks`,
//! `release_blocks` and `garbage_collect_cached_blocks`.

use super::{Allocator, Block, FreeKey, NONE, pool};

impl Allocator {
    /// `release_block`: `cudaFree`s a whole cached segment.
    pub(super) fn release_block(&mut self, i: u32) {
        self.remove_free(i);
        let size = self.blocks[i as usize].size;
        self.stats.reserved = self.stats.reserved.saturating_sub(size);
        self.stats.segments = self.stats.segments.saturating_sub(1);
        self.release_slot(i);
    }

    /// `release_available_cached_blocks`: with `max_split_size`, frees one cached oversize block
    /// large enough for the request, or else the largest oversize blocks until enough is freed.
    pub(super) fn release_available_cached_blocks(&mut self, small: bool, stream: u8, size: u64) -> bool {
        if self.max_split == u64::MAX {
            return false;
        }
        let p = pool(small);
        let want = size.max(self.max_split);
        // PyTorch skips expandable blocks here; split ones never reach it (cudaFree would fail)
        let first = self.free[p].first_from(stream, want);
        if let Some((_, _, _, i)) = first.filter(|k| k.0 == stream && self.is_whole(k.3)) {
            self.release_block(i);
            return true;
        }
        let below = self.free[p].before_while(stream, want, |k| k.0 == stream && k.1 >= self.max_split);
        let below: Vec<FreeKey> = below.into_iter().filter(|k| self.is_whole(k.3)).collect();
        let mut released = 0u64;
        for (_, size, _, i) in below {
            if released >= want {
                break;
            }
            released += size;
            self.release_block(i);
        }
        released >= want
    }

    /// `release_blocks` for one pool: frees whole cached segments, unmaps expandable free pages.
    pub(super) fn release_blocks(&mut self, small: bool) {
        if !self.cfg.expandable_segments && self.whole[pool(small)] == 0 {
            return; // nothing to free (the common case on a repeated OOM path)
        }
        let cached: Vec<u32> = self.free[pool(small)].to_vec().into_iter().map(|k| k.3).collect();
        let mut to_unmap = Vec::new();
        for i in cached {
            if self.blocks[i as usize].expandable {
                to_unmap.push(i);
            } else if !self.is_split(i) {
                self.release_block(i);
            }
        }
        for i in to_unmap {
            self.unmap_block(i);
            let b = self.blocks[i as usize];
            if b.live && !b.mapped && b.prev == NONE && b.next == NONE {
                self.remove_unmapped(i); // release_expandable_segment
                self.release_slot(i);
            }
        }
    }

    /// `garbage_collect_cached_blocks`: frees the oldest whole cached large segments once reserved
    /// memory passes `threshold × capacity`.
    pub(super) fn garbage_collect_cached_blocks(&mut self) {
        let Some(t) = self.gc_threshold() else { return };
        if self.whole[0] == 0 {
            return; // no whole cached large segment to release
        }
        let threshold = (t * self.cfg.capacity as f64) as u64;
        if self.stats.reserved <= threshold {
            return;
        }
        let target = self.stats.reserved - threshold;
        let now = self.gc_calls[0];
        let age = |b: &Block| now.saturating_sub(b.gc_base);
        let (mut total_age, mut count) = (0u64, 0u64);
        for (_, _, _, i) in self.free[0].to_vec() {
            if !self.is_split(i) {
                total_age += age(&self.blocks[i as usize]);
                count += 1;
            }
        }
        let (mut reclaimed, mut freed) = (0u64, true);
        while reclaimed < target && freed && count > 0 {
            let age_threshold = total_age as f64 / count as f64;
            freed = false;
            let cached: Vec<u32> = self.free[0].to_vec().into_iter().map(|k| k.3).collect();
            for i in cached {
                let b = self.blocks[i as usize];
                if !self.is_split(i) && !b.expandable && age(&b) as f64 >= age_threshold {
                    freed = true;
                    reclaimed += b.size;
                    total_age = total_age.saturating_sub(age(&b));
                    count -= 1;
                    self.release_block(i);
                }
            }
        }
    }
}
