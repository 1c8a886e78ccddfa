#!/usr/bin/env python3
"""Writes the snapshot fixtures: a two-segment memory snapshot in the layout of
torch.cuda.memory._snapshot() (dict with 'segments', each with 'blocks'), pickled with protocols 4
and 2 by CPython's pickle (what torch.cuda.memory._dump_snapshot uses). No torch needed."""
import pickle

MiB = 1 << 20
frames = [{"filename": "train.py", "line": 42, "name": "forward"}]
snap = {
    "segments": [
        {
            "device": 0, "address": 139_000_000_000, "total_size": 20 * MiB, "allocated_size": 12 * MiB,
            "active_size": 12 * MiB, "requested_size": 12 * MiB - 100, "stream": 0, "segment_type": "large",
            "blocks": [
                {"address": 139_000_000_000, "size": 8 * MiB, "requested_size": 8 * MiB, "state": "active_allocated", "frames": frames},
                {"address": 139_008_388_608, "size": 6 * MiB, "requested_size": 0, "state": "inactive", "frames": []},
                {"address": 139_014_680_064, "size": 4 * MiB, "requested_size": 4 * MiB - 100, "state": "active_allocated", "frames": frames},
                {"address": 139_018_874_368, "size": 2 * MiB, "requested_size": 0, "state": "inactive", "frames": []},
            ],
        },
        {
            "device": 0, "address": 140_000_000_000, "total_size": 2 * MiB, "allocated_size": 1 * MiB,
            "active_size": 1 * MiB, "requested_size": 1 * MiB, "stream": 0, "segment_type": "small",
            "blocks": [
                {"address": 140_000_000_000, "size": 1 * MiB, "requested_size": 1 * MiB, "state": "active_allocated", "frames": frames},
                {"address": 140_001_048_576, "size": 1 * MiB, "requested_size": 0, "state": "inactive", "frames": []},
            ],
        },
    ],
    "device_traces": [[]],
    "allocator_settings": {"expandable_segments": False, "max_split_size": -1, "ratio": 1.5},
}
if __name__ == "__main__":
    for proto in (4, 2):
        with open(f"snapshot_p{proto}.pickle", "wb") as f:
            pickle.dump(snap, f, protocol=proto)


# ---------------------------------------------------------------------------------------------
# Trace fixtures: three training steps of a 4-layer model recorded with
# torch.cuda.memory._record_memory_history(), in the layout _snapshot() returns (device_traces
# entries with action/addr/size/stream/time_us/frames, frames lists shared between entries of the
# same call site, segments at snapshot time, external_annotations from record_function).
# A tiny caching allocator: each block size is cached for reuse; a miss grows the cache by one
# segment (segment_alloc); empty_cache() after step 1 returns the cached segments (segment_free).
import json

KiB = 1 << 10
ROUND = 2 * MiB
SITE = "/opt/conda/lib/python3.11/site-packages/torch"


def frames_of(*stack):
    return [{"filename": f, "line": l, "name": n} for f, l, n in stack]


F_DATA = frames_of(("train.py", 22, "load_batch"))
F_FWD = frames_of((f"{SITE}/nn/modules/linear.py", 125, "forward"), ("train.py", 31, "block_forward"))
F_CKPT = frames_of((f"{SITE}/utils/checkpoint.py", 495, "checkpoint"), ("train.py", 29, "ckpt_forward"))
F_LOSS = frames_of((f"{SITE}/nn/functional.py", 3479, "cross_entropy"), ("train.py", 36, "loss_fn"))
F_BWD = frames_of((f"{SITE}/autograd/graph.py", 825, "_engine_run_backward"), ("train.py", 40, "backward"))
F_OPT = frames_of((f"{SITE}/optim/adamw.py", 480, "_multi_tensor_adamw"), ("train.py", 44, "optimizer_step"))
F_ZERO = frames_of((f"{SITE}/optim/optimizer.py", 975, "zero_grad"), ("train.py", 46, "zero_grad"))


class Sim:
    def __init__(self):
        self.t = 1_700_000_000_000_000
        self.trace, self.annotations = [], []
        self.live, self.cache, self.segments = {}, {}, {}
        self.next_addr = 0x7F3A_0000_0000
        self.events = 0  # entries that change allocated or reserved bytes
        self.peak = (0, 0)  # (bytes, event)
        self.peak_reserved = 0
        self.curve = []  # allocated bytes after each event

    def entry(self, action, addr, size, frames, counts=True):
        self.t += 7
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.t}
        if frames is not None:
            e["frames"] = frames
        self.trace.append(e)
        if counts:
            self.events += 1
            allocated = sum(self.live.values())
            self.curve.append(allocated)
            if allocated > self.peak[0]:
                self.peak = (allocated, self.events - 1)
            self.peak_reserved = max(self.peak_reserved, sum(self.segments.values()))

    def annotate(self, name, stage):
        self.t += 3
        self.annotations.append({"name": name, "stage": stage, "device": 0, "time_us": self.t})

    def alloc(self, size, frames, record=True):
        cached = self.cache.get(size)
        if cached:
            addr = cached.pop()
        else:
            addr = self.next_addr
            seg = -(-size // ROUND) * ROUND
            self.next_addr += seg
            self.segments[addr] = seg
            if record:
                self.entry("segment_alloc", addr, seg, frames)
        self.live[addr] = size
        if record:
            self.entry("alloc", addr, size, frames)
        return addr

    def free(self, addr, frames):
        size = self.live.pop(addr)
        self.entry("free_requested", addr, size, frames, counts=False)
        self.entry("free_completed", addr, size, frames)
        self.cache.setdefault(size, []).append(addr)

    def empty_cache(self):
        for size, addrs in self.cache.items():
            for a in addrs:
                seg = self.segments.pop(a)
                self.entry("segment_free", a, seg, None)
        self.cache = {}

    def snapshot(self):
        segments = []
        for addr, total in sorted(self.segments.items()):
            used = self.live.get(addr, 0)
            blocks = []
            if used:
                blocks.append({"address": addr, "size": used, "requested_size": used,
                               "state": "active_allocated", "frames": F_DATA})
            if total > used:
                blocks.append({"address": addr + used, "size": total - used, "requested_size": 0,
                               "state": "inactive", "frames": []})
            segments.append({
                "device": 0, "address": addr, "total_size": total, "allocated_size": used,
                "active_size": used, "requested_size": used, "stream": 0,
                "segment_type": "large" if total > MiB else "small", "segment_pool_id": (0, 0),
                "is_expandable": False, "frames": [], "blocks": blocks,
            })
        return segments


def train(checkpointing, annotate, steps=3, layers=4):
    s = Sim()
    params = [s.alloc(8 * MiB, F_FWD, record=False) for _ in range(layers)]  # before the trace
    batch = s.alloc(2 * MiB, F_DATA, record=False)  # freed in step 0: a free with no alloc
    grads, states = [], []
    step_events = []
    for k in range(steps):
        first = s.events
        if annotate:
            s.annotate(f"ProfilerStep#{k}", "START")
            s.annotate("Optimizer.zero_grad#AdamW.zero_grad", "START")
        for g in grads:  # zero_grad(set_to_none=True)
            s.free(g, F_ZERO)
        grads = []
        if annotate:
            s.annotate("Optimizer.zero_grad#AdamW.zero_grad", "END")
        if batch is None:
            batch = s.alloc(2 * MiB, F_DATA)
        if annotate:
            s.annotate("## forward ##", "START")
        acts = []
        for _ in range(layers):
            if checkpointing:
                tmp = s.alloc(16 * MiB, F_FWD)  # inside the checkpointed block, not kept
                acts.append(s.alloc(4 * MiB, F_CKPT))
                s.free(tmp, F_FWD)
            else:
                acts.append(s.alloc(16 * MiB, F_FWD))
        loss = s.alloc(512, F_LOSS)
        if annotate:
            s.annotate("## forward ##", "END")
            s.annotate("## backward ##", "START")
        s.free(loss, F_BWD)
        for l in reversed(range(layers)):
            recompute = s.alloc(16 * MiB, F_CKPT) if checkpointing else None
            grads.append(s.alloc(8 * MiB, F_BWD))
            tmp = s.alloc(4 * MiB, F_BWD)
            s.free(tmp, F_BWD)
            if recompute is not None:
                s.free(recompute, F_BWD)
            s.free(acts[l], F_BWD)
        if annotate:
            s.annotate("## backward ##", "END")
            s.annotate("Optimizer.step#AdamW.step", "START")
        if not states:
            states = [s.alloc(8 * MiB, F_OPT) for _ in range(2 * layers)]  # exp_avg, exp_avg_sq
        for _ in range(layers):
            tmp = s.alloc(8 * MiB, F_OPT)
            s.free(tmp, F_OPT)
        if annotate:
            s.annotate("Optimizer.step#AdamW.step", "END")
        s.free(batch, F_DATA)
        batch = None
        if k == 1:
            s.empty_cache()
        if annotate:
            s.annotate(f"ProfilerStep#{k}", "END")
        step_events.append([first, s.events])
    if annotate:  # someone tried a larger batch afterwards
        s.t += 7
        s.trace.append({"action": "oom", "device_free": 1 << 30, "size": 40 << 30, "stream": 0,
                        "time_us": s.t})
    s.t += 7
    s.trace.append({"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": s.t})
    snap = {
        "segments": s.snapshot(),
        "device_traces": [s.trace],
        "allocator_settings": {"expandable_segments": False, "max_split_size": -1},
    }
    if annotate:
        snap["external_annotations"] = s.annotations
    expected = {
        "entries": len(s.trace), "events": s.events, "peak_allocated": s.peak[0], "peak_event": s.peak[1],
        "peak_reserved": s.peak_reserved, "baseline_allocated": (layers * 8 + 2) * MiB,
        "step_events": step_events,
        "step_peaks": [max(s.curve[a:b]) for a, b in step_events],
    }
    return snap, expected


if __name__ == "__main__":
    expected = {}
    for name, ckpt, ann in (("trace_train", False, True), ("trace_train_ckpt", True, False)):
        snap, exp = train(ckpt, ann)
        with open(f"{name}.pickle", "wb") as f:
            pickle.dump(snap, f, protocol=4)
        expected[f"{name}.pickle"] = exp
    with open("trace_expected.json", "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
