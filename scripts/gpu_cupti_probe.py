"""Probe of cupti-python's activity API on a CUDA graph, before tfdash's continuous timing relies on it.

A graph of LAUNCHES small kernels is replayed in alternating rounds with CUPTI's concurrent-kernel
activity off and on. Printed and written to --out: replay time per round, records per replay,
whether the records carry graph ids, the host time of the buffer callbacks, and whether
torch.profiler still works once the activity is disabled again.

    python3 scripts/gpu_cupti_probe.py --out probe.json
"""

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_cupti_ring_probe import LAUNCHES, make_graph, replay_us  # noqa: E402  (the same graph)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="cupti_probe.json")
    ap.add_argument("--replays", type=int, default=2000)
    a = ap.parse_args()
    res = {"launches": LAUNCHES}
    try:
        from cupti import cupti
    except Exception as e:  # noqa: BLE001
        res["import_error"] = repr(e)
        print(json.dumps(res))
        json.dump(res, open(a.out, "w"), indent=1)
        return
    g = make_graph()
    lock = threading.Lock()
    got = {"records": 0, "buffers": 0, "cb_s": 0.0, "graph_ids": set(), "node_ids": set(), "names": set(),
           "sample": []}

    def requested():
        return 8 * 1024 * 1024, 0

    def completed(activities):
        t0 = time.perf_counter()
        with lock:
            got["buffers"] += 1
            for act in activities:
                got["records"] += 1
                if len(got["sample"]) < 3:
                    got["sample"].append({k: str(getattr(act, k, None)) for k in
                                          ("kind", "name", "start", "end", "graph_id", "graph_node_id",
                                           "correlation_id", "stream_id")})
                got["graph_ids"].add(getattr(act, "graph_id", None))
                if len(got["node_ids"]) < 1000:
                    got["node_ids"].add(getattr(act, "graph_node_id", None))
                got["names"].add(getattr(act, "name", None))
            got["cb_s"] += time.perf_counter() - t0

    rounds = []
    try:
        cupti.activity_register_callbacks(requested, completed)
        for r in range(3):
            off = replay_us(g, a.replays)
            cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
            before = got["records"]
            on = replay_us(g, a.replays)
            t0 = time.perf_counter()
            cupti.activity_flush_all(1)
            flush_s = time.perf_counter() - t0
            cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)
            rounds.append({"off_us": off, "on_us": on, "records": got["records"] - before, "flush_ms": flush_s * 1e3})
            print(f"round {r}: off {off:.2f} us/replay, on {on:.2f} us/replay ({(on / off - 1) * 100:+.2f} %), "
                  f"records {got['records'] - before} ({(got['records'] - before) / a.replays:.1f}/replay)")
    except Exception as e:  # noqa: BLE001
        res["error"] = repr(e)
    res["rounds"] = rounds
    res.update(buffers=got["buffers"], callback_ms=got["cb_s"] * 1e3, graph_ids=len(got["graph_ids"]),
               node_ids=len(got["node_ids"]), names=sorted(map(str, got["names"]))[:5], sample=got["sample"])
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            g.replay()
            torch.cuda.synchronize()
        res["torch_profiler_after"] = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
    except Exception as e:  # noqa: BLE001
        res["torch_profiler_after"] = repr(e)
    print(json.dumps({k: v for k, v in res.items() if k != "rounds"}, default=str)[:1500])
    json.dump(res, open(a.out, "w"), indent=1, default=str)


if __name__ == "__main__":
    main()
