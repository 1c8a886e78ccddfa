//! Expected numbers are worked out by hand from the rules in the module docs.

use super::*;

const MIB: u64 = 1 << 20;

fn cfg() -> Config {
    Config::default()
}

fn exp() -> Config {
    Config { expandable_segments: true, ..Config::default() }
}

fn cap(capacity: u64) -> Config {
    Config { capacity, ..Config::default() }
}

/// Runs `(id, bytes)` allocations (negative-free encoding: `bytes == 0` frees `id`) on stream 0.
fn run(c: Config, ops: &[(u32, u64)]) -> Allocator {
    let mut a = Allocator::new(c);
    for &(id, bytes) in ops {
        if bytes == 0 {
            a.free(id);
        } else {
            let _ = a.malloc(id, bytes, 0);
        }
        check(&a);
    }
    a
}

fn addr_of(a: &Allocator, id: u32) -> u64 {
    a.blocks[a.ids[id as usize] as usize].addr
}

/// Structural invariants: segments are contiguous linked runs, the pool sets hold exactly the
/// cached / unmapped blocks, no two live blocks overlap, and every statistic matches the blocks.
fn check(a: &Allocator) {
    let (mut reserved, mut allocated, mut segments, mut inactive) = (0u64, 0u64, 0u64, 0u64);
    let mut free = [BTreeSet::new(), BTreeSet::new()];
    let mut unmapped = [BTreeSet::new(), BTreeSet::new()];
    let mut seen = 0usize;
    let mut ranges = Vec::new();
    for (h, head) in a.blocks.iter().enumerate() {
        if !head.live || head.prev != NONE {
            continue;
        }
        let split = head.next != NONE;
        segments += u64::from(!head.expandable);
        let (mut i, mut prev, mut end) = (h as u32, NONE, head.addr);
        while i != NONE {
            let b = a.blocks[i as usize];
            assert!(b.live, "dead block {i} in a segment");
            assert_eq!(b.prev, prev, "broken prev link at {i}");
            assert_eq!(b.addr, end, "segment not contiguous at {i}");
            assert!(b.size > 0);
            assert_eq!((b.stream, b.small, b.expandable), (head.stream, head.small, head.expandable));
            if prev != NONE {
                let p = a.blocks[prev as usize];
                let both_free = !p.allocated && !b.allocated && p.mapped == b.mapped;
                assert!(!both_free, "adjacent free blocks {prev} and {i} were not merged");
            }
            if b.mapped {
                reserved += b.size;
            } else {
                assert!(b.expandable && !b.allocated);
                assert_eq!(b.addr % page_size(b.small), 0, "unmapped range not page aligned");
                unmapped[pool(b.small)].insert((b.stream, b.addr, i));
            }
            if b.allocated {
                allocated += b.size;
            } else if b.mapped {
                free[pool(b.small)].insert((b.stream, b.size, b.addr, i));
                if split && !b.expandable {
                    inactive += b.size;
                }
            }
            seen += 1;
            end = b.addr + b.size;
            (prev, i) = (i, b.next);
        }
        ranges.push((head.addr, end));
    }
    assert_eq!(seen, a.blocks.iter().filter(|b| b.live).count(), "blocks outside any segment");
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(w[0].1 <= w[1].0, "segments overlap: {w:?}");
    }
    let indexed = |p: usize| a.free[p].to_vec().into_iter().collect::<BTreeSet<_>>();
    assert_eq!(free, [indexed(0), indexed(1)], "cached-block sets out of sync");
    assert_eq!(a.free[0].len() + a.free[1].len(), free[0].len() + free[1].len());
    for (set, &count) in free.iter().zip(&a.whole) {
        let whole = set.iter().filter(|k| a.is_whole(k.3)).count();
        assert_eq!(whole, count, "count of whole cached segments out of sync");
    }
    assert_eq!(unmapped, a.unmapped, "unmapped sets out of sync");
    let s = a.stats();
    assert_eq!(s.reserved, reserved, "reserved != sum of mapped segment bytes");
    assert_eq!(s.allocated, allocated, "allocated != sum of allocated blocks");
    assert_eq!(s.segments, segments);
    assert_eq!(s.inactive_split, inactive);
    assert!(s.reserved >= s.allocated && s.peak_reserved >= s.reserved && s.peak_allocated >= s.allocated);
    let mut handles: Vec<u32> =
        a.ids.iter().chain(a.far_ids.values()).copied().filter(|&b| b != NONE).collect();
    for &b in &handles {
        assert!(
            a.blocks[b as usize].live && a.blocks[b as usize].allocated,
            "handle to a non-allocated block"
        );
    }
    handles.sort_unstable();
    handles.dedup();
    assert_eq!(handles.len(), a.ids.iter().chain(a.far_ids.values()).filter(|&&b| b != NONE).count());
}

#[test]
fn rounding_and_segment_sizes() {
    let a = run(cfg(), &[(0, 1000)]);
    let s = a.stats();
    assert_eq!((s.allocated, s.reserved, s.segments, s.cuda_mallocs), (1024, 2 * MIB, 1, 1));
    assert_eq!(s.inactive_split, 2 * MIB - 1024); // the split-off rest of the 2 MiB segment

    let s = run(cfg(), &[(0, MIB + 1)]).stats();
    assert_eq!((s.allocated, s.reserved), (MIB + 512, 20 * MIB));

    // 11 MiB gets a 12 MiB segment; 1 MiB would remain, not > 1 MiB, so the block is not split
    let s = run(cfg(), &[(0, 11 * MIB)]).stats();
    assert_eq!((s.allocated, s.reserved, s.inactive_split), (12 * MIB, 12 * MIB, 0));

    assert_eq!(run(cfg(), &[(0, MIB)]).stats().reserved, 2 * MIB); // exactly kSmallSize: small pool
    assert_eq!(run(cfg(), &[(0, 10 * MIB - 1)]).stats().reserved, 10 * MIB); // rounds to 10 MiB
    assert_eq!(run(cfg(), &[(0, 9 * MIB + MIB / 2)]).stats().reserved, 20 * MIB);
    assert_eq!((round_size(0), round_size(1), round_size(513)), (512, 512, 1024));
    assert_eq!((allocation_size(MIB), allocation_size(MIB + 512)), (2 * MIB, 20 * MIB));
    assert_eq!(allocation_size(101 * MIB), 102 * MIB);
}

#[test]
fn best_fit_picks_the_smallest_fitting_block() {
    // 50 MiB (lower address) and 40 MiB cached; 35 MiB must take the 40 so that 48 still fits
    let a = run(cfg(), &[(0, 50 * MIB), (1, 40 * MIB), (0, 0), (1, 0), (2, 35 * MIB), (3, 48 * MIB)]);
    let s = a.stats();
    assert_eq!((s.reserved, s.cuda_mallocs, s.allocated), (90 * MIB, 2, 83 * MIB));
    assert!(addr_of(&a, 2) > addr_of(&a, 3)); // 35 MiB went to the newer (40 MiB) segment
    // equal sizes: the lower address (older segment) wins
    let a = run(cfg(), &[(0, 30 * MIB), (1, 30 * MIB), (1, 0), (0, 0), (2, 30 * MIB)]);
    assert!(addr_of(&a, 2) < a.blocks[a.free[0].to_vec().first().map_or(0, |k| k.3) as usize].addr);
}

#[test]
fn small_pool_splits_down_to_512_bytes() {
    let mut a = run(cfg(), &[(0, MIB)]);
    assert_eq!(a.stats().inactive_split, MIB);
    a.malloc(1, MIB - 512, 0).unwrap();
    assert_eq!(a.stats().inactive_split, 512); // 1 MiB - 512 taken, 512 B split off
    a.malloc(2, 512, 0).unwrap(); // exact fit
    check(&a);
    let s = a.stats();
    assert_eq!((s.allocated, s.reserved, s.inactive_split, s.segments), (2 * MIB, 2 * MIB, 0, 1));
    a.malloc(3, 1, 0).unwrap();
    assert_eq!(a.stats().reserved, 4 * MIB);
}

#[test]
fn large_pool_splits_only_when_more_than_1_mib_remains() {
    // 18 MiB + 512 in a 20 MiB segment: 2 MiB - 512 remains (> 1 MiB): split
    let s = run(cfg(), &[(0, 18 * MIB + 512)]).stats();
    assert_eq!((s.allocated, s.inactive_split), (18 * MIB + 512, 2 * MIB - 512));
    // 19.5 MiB: 0.5 MiB would remain: the whole 20 MiB block is handed out
    let s = run(cfg(), &[(0, 19 * MIB + MIB / 2)]).stats();
    assert_eq!((s.allocated, s.inactive_split), (20 * MIB, 0));
    // reuse of a cached 20 MiB block: 19 MiB leaves exactly 1 MiB (not split), 18.5 MiB splits
    let s = run(cfg(), &[(0, 20 * MIB), (0, 0), (1, 19 * MIB)]).stats();
    assert_eq!((s.allocated, s.reserved), (20 * MIB, 20 * MIB));
    let s = run(cfg(), &[(0, 20 * MIB), (0, 0), (1, 18 * MIB + MIB / 2)]).stats();
    assert_eq!((s.allocated, s.inactive_split), (18 * MIB + MIB / 2, MIB + MIB / 2));
}

#[test]
fn free_merges_neighbours_and_keeps_memory_reserved() {
    let mut a = run(cfg(), &[(0, 4 * MIB), (1, 4 * MIB), (2, 4 * MIB)]);
    let s = a.stats();
    assert_eq!((s.reserved, s.cuda_mallocs, s.inactive_split), (20 * MIB, 1, 8 * MIB));
    a.free(1);
    assert_eq!((a.stats().inactive_split, a.free[0].len()), (12 * MIB, 2));
    a.free(0); // merges with the freed middle block
    assert_eq!((a.stats().inactive_split, a.free[0].len()), (16 * MIB, 2));
    a.free(2); // merges both sides: the whole segment is one free, unsplit block again
    check(&a);
    let s = a.stats();
    assert_eq!((s.allocated, s.reserved, s.inactive_split, a.free[0].len()), (0, 20 * MIB, 0, 1));
    a.malloc(3, 20 * MIB, 0).unwrap(); // reuses the merged block
    let s = a.stats();
    assert_eq!((s.allocated, s.cuda_mallocs, s.peak_reserved), (20 * MIB, 1, 20 * MIB));
}

#[test]
fn empty_cache_releases_only_whole_free_segments() {
    let mut a = run(cfg(), &[(0, 4 * MIB), (1, 100 * MIB), (1, 0)]);
    assert_eq!(a.stats().reserved, 120 * MIB); // freed memory stays reserved
    a.empty_cache();
    check(&a);
    let s = a.stats();
    assert_eq!((s.reserved, s.segments, s.allocated, s.peak_reserved), (20 * MIB, 1, 4 * MIB, 120 * MIB));
    a.free(0);
    a.empty_cache();
    check(&a);
    assert_eq!((a.stats().reserved, a.stats().segments), (0, 0));
}

#[test]
fn streams_do_not_share_cached_blocks() {
    let mut a = Allocator::new(cfg());
    a.malloc(0, 100 * MIB, 0).unwrap();
    a.free(0);
    a.malloc(1, 100 * MIB, 1).unwrap(); // stream 1 cannot use stream 0's block
    assert_eq!((a.stats().reserved, a.stats().cuda_mallocs), (200 * MIB, 2));
    a.free(1);
    a.malloc(2, 100 * MIB, 0).unwrap();
    a.malloc(3, 1000, 0).unwrap();
    a.malloc(4, 1000, 2).unwrap();
    check(&a);
    assert_eq!((a.stats().reserved, a.stats().cuda_mallocs), (204 * MIB, 4));
}

#[test]
fn oom_path_releases_cached_segments_then_fails_cleanly() {
    let mut a = Allocator::new(cap(250 * MIB));
    a.malloc(0, 100 * MIB, 0).unwrap();
    a.free(0);
    a.malloc(1, 200 * MIB, 0).unwrap(); // 300 > 250: the cached 100 MiB is released, retried
    check(&a);
    let s = a.stats();
    assert_eq!((s.reserved, s.alloc_retries, s.ooms, s.cuda_mallocs, s.segments), (200 * MIB, 1, 0, 2, 1));
    let err = a.malloc(2, 100 * MIB, 0).unwrap_err(); // nothing cached to release: OOM
    check(&a);
    assert_eq!((err.requested, err.alloc_size, err.reserved), (100 * MIB, 100 * MIB, 200 * MIB));
    let s = a.stats();
    assert_eq!((s.allocated, s.reserved, s.alloc_retries, s.ooms), (200 * MIB, 200 * MIB, 2, 1));
    a.free(2); // the failed handle holds nothing
    a.free(1);
    a.malloc(3, 100 * MIB, 0).unwrap(); // reuses (and splits) the 200 MiB block
    check(&a);
    assert_eq!((a.stats().allocated, a.stats().reserved, a.stats().ooms), (100 * MIB, 200 * MIB, 1));
    assert!(err.to_string().contains("out of memory"));
}

#[test]
fn oom_path_cannot_release_split_segments() {
    let mut a = Allocator::new(cap(40 * MIB));
    a.malloc(0, 4 * MIB, 0).unwrap(); // 20 MiB segment, 16 MiB free but split
    assert!(a.malloc(1, 30 * MIB, 0).is_err());
    check(&a);
    let s = a.stats();
    assert_eq!((s.reserved, s.allocated, s.ooms, s.alloc_retries), (20 * MIB, 4 * MIB, 1, 1));
}

#[test]
fn max_split_size_keeps_oversize_blocks_whole() {
    let mss = Config { max_split_size: Some(100 * MIB), ..cfg() };
    // a cached 200 MiB block is not used (nor split) for a 50 MiB request
    assert_eq!(run(mss, &[(0, 200 * MIB), (0, 0), (1, 50 * MIB)]).stats().reserved, 250 * MIB);
    assert_eq!(run(cfg(), &[(0, 200 * MIB), (0, 0), (1, 50 * MIB)]).stats().reserved, 200 * MIB);
    // oversize requests take an oversize block whole only within 20 MiB of it
    let s = run(mss, &[(0, 200 * MIB), (0, 0), (1, 181 * MIB)]).stats();
    assert_eq!((s.allocated, s.reserved), (200 * MIB, 200 * MIB));
    assert_eq!(run(mss, &[(0, 200 * MIB), (0, 0), (1, 180 * MIB)]).stats().reserved, 380 * MIB);
    // blocks below max_split_size still split for small requests
    let s = run(mss, &[(0, 30 * MIB), (0, 0), (1, 20 * MIB)]).stats();
    assert_eq!((s.allocated, s.inactive_split), (20 * MIB, 10 * MIB));
}

#[test]
fn release_available_cached_blocks_frees_oversize_blocks_without_a_retry() {
    let c = Config { capacity: 300 * MIB, max_split_size: Some(100 * MIB), ..cfg() };
    let s = run(c, &[(0, 200 * MIB), (0, 0), (1, 150 * MIB)]).stats();
    let got = (s.reserved, s.alloc_retries, s.cuda_mallocs, s.ooms, s.peak_reserved);
    assert_eq!(got, (150 * MIB, 0, 2, 0, 200 * MIB));
    // no single block is large enough: the largest oversize ones go until enough is freed
    let c = Config { capacity: 400 * MIB, ..c };
    let ops = [(0, 120 * MIB), (1, 130 * MIB), (0, 0), (1, 0), (2, 160 * MIB)];
    let s = run(c, &ops).stats();
    assert_eq!((s.reserved, s.alloc_retries, s.cuda_mallocs), (160 * MIB, 0, 3));
    let s = run(cap(400 * MIB), &ops).stats(); // without max_split_size: release all, retry
    assert_eq!((s.reserved, s.alloc_retries, s.cuda_mallocs), (160 * MIB, 1, 3));
}

#[test]
fn release_available_cached_blocks_fails_when_it_frees_too_little() {
    // only one oversize block (130 MiB) is cached below the 160 MiB request: it is released, but
    // that is reported as a failure, so the cache is flushed (the 60 MiB block too) and retried
    let c = Config { capacity: 300 * MIB, max_split_size: Some(100 * MIB), ..cfg() };
    let a = run(c, &[(0, 60 * MIB), (1, 130 * MIB), (0, 0), (1, 0), (2, 160 * MIB)]);
    let s = a.stats();
    assert_eq!((s.reserved, s.alloc_retries, s.segments, s.ooms), (160 * MIB, 1, 1, 0));
}

#[test]
fn garbage_collection_releases_the_oldest_cached_segments() {
    let gc = Config { capacity: 1000 * MIB, garbage_collection_threshold: Some(0.4), ..cfg() };
    let ops = [(0, 300 * MIB), (1, 200 * MIB), (0, 0), (1, 0), (2, 400 * MIB)];
    // both cached blocks have the average age: both go, although 100 MiB would have been enough
    assert_eq!(run(gc, &ops).stats().reserved, 400 * MIB);
    assert_eq!(run(cap(1000 * MIB), &ops).stats().reserved, 900 * MIB);
    // ages 3 and 1 (average 2): only the older 100 MiB block is released
    let gc = Config { capacity: 2000 * MIB, garbage_collection_threshold: Some(0.2), ..cfg() };
    let ops =
        [(0, 100 * MIB), (1, 100 * MIB), (0, 0), (2, 150 * MIB), (3, 150 * MIB), (1, 0), (4, 200 * MIB)];
    let a = run(gc, &ops);
    assert_eq!((a.stats().reserved, a.free[0].len()), (600 * MIB, 1));
    assert_eq!(run(cap(2000 * MIB), &ops).stats().reserved, 700 * MIB);
    // without a finite capacity (no allowed maximum) the threshold does nothing
    let unlimited = Config { garbage_collection_threshold: Some(0.2), ..cfg() };
    assert_eq!(run(unlimited, &ops).stats().reserved, 700 * MIB);
}

#[test]
fn expandable_segments_grow_by_pages() {
    let mut a = run(exp(), &[(0, 30 * MIB)]);
    let s = a.stats();
    assert_eq!((s.allocated, s.reserved, s.segments, s.cuda_mallocs), (30 * MIB, 40 * MIB, 0, 1));
    a.malloc(1, 5 * MIB, 0).unwrap(); // fits in the mapped tail
    assert_eq!((a.stats().allocated, a.stats().reserved), (35 * MIB, 40 * MIB));
    a.malloc(2, 10 * MIB, 0).unwrap(); // 5 MiB free at the end + one more 20 MiB page
    check(&a);
    let s = a.stats();
    assert_eq!((s.allocated, s.reserved, s.cuda_mallocs, s.inactive_split), (45 * MIB, 60 * MIB, 2, 0));
    a.malloc(3, 1000, 0).unwrap(); // small pool: 2 MiB pages
    assert_eq!(a.stats().reserved, 62 * MIB);
    // freed memory stays mapped; empty_cache unmaps only whole free pages
    a.free(0); // [0, 30) free: page [0, 20) is whole, [20, 30) shares a page with id 1
    assert_eq!(a.stats().reserved, 62 * MIB);
    a.empty_cache();
    check(&a);
    assert_eq!(a.stats().reserved, 42 * MIB);
    for id in 1..4 {
        a.free(id);
    }
    a.empty_cache();
    check(&a);
    assert_eq!(a.stats().reserved, 0);
    assert!(a.unmapped.iter().all(BTreeSet::is_empty) && a.blocks.iter().all(|b| !b.live));
}

#[test]
fn expandable_best_fit_prefers_blocks_inside_the_segment() {
    // I = [0, 60) free inside the segment, T = [80, 120) free at its mapped end: a 35 MiB request
    // takes I although T is smaller (T counts as T + the unmapped rest), so a later 60 MiB
    // request has to grow T by a page
    let ops = [(0, 60 * MIB), (1, 20 * MIB), (2, 30 * MIB), (0, 0), (2, 0), (3, 35 * MIB), (4, 60 * MIB)];
    let a = run(exp(), &ops);
    assert!(addr_of(&a, 3) < addr_of(&a, 1)); // it went to I, before block 1
    assert_eq!((a.stats().reserved, a.stats().allocated), (140 * MIB, 115 * MIB));
}

#[test]
fn classic_fragmentation_case() {
    // A(100), B(100), free A, C(150): the default allocator needs a third segment
    let ops = [(0, 100 * MIB), (1, 100 * MIB), (0, 0), (2, 150 * MIB)];
    let s = run(cfg(), &ops).stats();
    assert_eq!((s.reserved, s.segments, s.peak_reserved), (350 * MIB, 3, 350 * MIB));
    // with expandable segments C is also placed at the end (A's hole is not at the end) and
    // maps 8 pages: 100 + 100 + 160 MiB. Not less: PyTorch places new memory at the end
    assert_eq!(run(exp(), &ops).stats().reserved, 360 * MIB);
    // freeing the block at the end (B) instead: C grows it by 3 pages, 100 + 160 vs 350
    let ops = [(0, 100 * MIB), (1, 100 * MIB), (1, 0), (2, 150 * MIB)];
    assert_eq!(run(cfg(), &ops).stats().reserved, 350 * MIB);
    assert_eq!(run(exp(), &ops).stats().reserved, 260 * MIB);
    // under a 300 MiB limit both fit: the default frees A and retries, expandable unmaps A's pages
    let ops = [(0, 100 * MIB), (1, 100 * MIB), (0, 0), (2, 150 * MIB)];
    let (d, e) =
        (run(cap(300 * MIB), &ops).stats(), run(Config { capacity: 300 * MIB, ..exp() }, &ops).stats());
    assert_eq!((d.reserved, d.alloc_retries, d.ooms), (250 * MIB, 1, 0));
    assert_eq!((e.reserved, e.alloc_retries, e.ooms), (260 * MIB, 1, 0));
}

#[test]
fn expandable_segments_absorb_a_growing_batch() {
    // five 100 MiB tensors, freed, then five of 101 MiB (batch N+1): the default allocator
    // cannot reuse the 100 MiB segments; expandable ones merge into one run and tile it
    let mut ops: Vec<(u32, u64)> = (0..5).map(|i| (i, 100 * MIB)).collect();
    ops.extend((0..5).map(|i| (i, 0)));
    ops.extend((5..10).map(|i| (i, 101 * MIB)));
    let d = run(cfg(), &ops).stats();
    assert_eq!((d.reserved, d.segments), (1010 * MIB, 10));
    let e = run(exp(), &ops).stats();
    assert_eq!((e.reserved, e.allocated, e.cuda_mallocs), (520 * MIB, 505 * MIB, 6));
}

#[test]
fn malformed_streams_never_panic() {
    let mut a = Allocator::new(cfg());
    a.malloc(0, 0, 0).unwrap(); // zero bytes: nothing
    assert_eq!(a.stats(), Stats::default());
    a.free(0);
    a.free(12345);
    a.free(u32::MAX);
    a.malloc(1, 2 * MIB, 0).unwrap();
    a.free(1);
    a.free(1); // double free
    a.malloc(2, 30 * MIB, 0).unwrap();
    a.malloc(2, 30 * MIB, 0).unwrap(); // live id reused: the first block leaks, still allocated
    check(&a);
    assert_eq!(a.stats().allocated, 60 * MIB);
    a.free(2);
    assert_eq!(a.stats().allocated, 30 * MIB);
    a.malloc(5, MIB, 0).unwrap();
    a.malloc(5, 0, 0).unwrap(); // the 1 MiB block leaks: the handle now holds nothing
    a.free(5);
    assert_eq!(a.stats().allocated, 31 * MIB);
    a.malloc(u32::MAX - 1, 1000, 3).unwrap(); // far id
    a.free(u32::MAX - 1);
    let err = a.malloc(3, u64::MAX, 0).unwrap_err(); // 1 EiB guard
    assert_eq!((err.requested, a.stats().ooms), (u64::MAX, 1));
    assert!(Allocator::new(exp()).malloc(0, 1 << 59, 0).is_err()); // beyond the address space
    check(&a);
}

#[test]
fn reset_peaks_and_replay_with() {
    let ops = [
        Op::Alloc { id: 0, bytes: 100 * MIB, stream: 0 },
        Op::Free { id: 0 },
        Op::EmptyCache,
        Op::Alloc { id: 0, bytes: 10 * MIB, stream: 0 },
    ];
    let mut seen = Vec::new();
    let s = replay_with(cfg(), &ops, |i, s| seen.push((i, s.reserved)));
    assert_eq!(seen, [(0, 100 * MIB), (1, 100 * MIB), (2, 0), (3, 10 * MIB)]);
    assert_eq!((s.peak_reserved, s.reserved, s.peak_allocated), (100 * MIB, 10 * MIB, 100 * MIB));
    assert_eq!(replay(cfg(), &ops), s);
    let mut a = Allocator::new(cfg());
    for op in ops {
        a.apply(op).unwrap();
    }
    a.reset_peaks();
    assert_eq!((a.stats().peak_reserved, a.stats().peak_allocated), (10 * MIB, 10 * MIB));
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn invariants_hold_on_random_streams() {
    let base = [
        cfg(),
        cap(1 << 30),
        Config { capacity: 1 << 30, max_split_size: Some(64 * MIB), ..cfg() },
        Config { capacity: 1 << 30, garbage_collection_threshold: Some(0.5), ..cfg() },
        exp(),
        Config { capacity: 1 << 30, ..exp() },
        Config {
            capacity: 700 * MIB,
            max_split_size: Some(40 * MIB),
            garbage_collection_threshold: Some(0.6),
            ..exp()
        },
    ];
    let sizes =
        [512, 1000, 4096, 300_000, MIB, MIB + 1, 3 * MIB, 9 * MIB, 11 * MIB, 32 * MIB, 96 * MIB, 224 * MIB];
    let mut ooms = 0;
    for (k, &c) in base.iter().enumerate() {
        for seed in 1..6u64 {
            let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) + k as u64);
            let mut a = Allocator::new(c);
            let mut live: Vec<Option<u64>> = vec![None; 64];
            let (mut peak_a, mut peak_r) = (0, 0);
            for _ in 0..1500 {
                let id = rng.below(64) as u32;
                match rng.below(100) {
                    0 => a.empty_cache(),
                    1 => a.free(rng.below(1000) as u32 + 64), // unknown id
                    2..=45 => {
                        a.free(id);
                        live[id as usize] = None;
                    }
                    _ => {
                        let jitter = rng.below(4) * 512 * u64::from(rng.below(3) == 0);
                        let bytes = sizes[rng.below(sizes.len() as u64) as usize] + jitter;
                        let stream = rng.below(3) as u8;
                        if live[id as usize].is_some() {
                            a.free(id);
                        }
                        live[id as usize] = a.malloc(id, bytes, stream).ok().map(|()| bytes);
                    }
                }
                check(&a);
                let s = a.stats();
                let requested: u64 = live.iter().flatten().map(|&b| round_size(b)).sum();
                assert!(s.allocated >= requested, "allocated below the rounded live sizes");
                assert!(s.peak_allocated >= peak_a && s.peak_reserved >= peak_r, "peaks went down");
                (peak_a, peak_r) = (s.peak_allocated, s.peak_reserved);
                assert!(s.reserved <= c.capacity);
            }
            ooms += a.stats().ooms;
        }
    }
    assert!(ooms > 0, "the capacity-limited configurations should have hit the OOM path");
}

#[test]
fn step_shaped_stream_replays_cleanly() {
    // release-mode timings are in BENCH.md (examples/timing.rs); this checks the stream's shape
    let ops = super::synth::step_ops(80);
    assert!((40_000..60_000).contains(&ops.len()), "{} ops", ops.len());
    for c in [cfg(), exp(), Config { max_split_size: Some(200 * MIB), ..cfg() }] {
        let s = replay(c, &ops);
        assert_eq!((s.ooms, s.allocated), (0, 0));
        assert!(s.peak_reserved >= s.peak_allocated && s.peak_allocated > 100 << 30);
    }
}
