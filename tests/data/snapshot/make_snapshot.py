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
for proto in (4, 2):
    with open(f"snapshot_p{proto}.pickle", "wb") as f:
        pickle.dump(snap, f, protocol=proto)
