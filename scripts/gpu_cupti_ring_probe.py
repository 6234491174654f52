"""Probe of tfdash's C CUPTI ring (tfdash/profiling/cupti_ring.c) on a CUDA graph.

The graph of scripts/gpu_cupti_probe.py (LAUNCHES small kernels) is replayed in alternating
rounds with the ring off and on; while it is on, a thread drains the ring every DRAIN_MS as
continuous timing would. Printed and written to --out: replay time off/on and the overhead, records
and drained entries per replay, ring and CUPTI drops, the callbacks' host time per replay, one
replay's records checked node by node, then torch.profiler on the same graph once the ring has
stopped, and the ring started again after it. Each part records its own error and the rest go on.

    python3 scripts/gpu_cupti_ring_probe.py --out ring_probe.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import threading
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tfdash.profiling import cupti_build, cupti_ring  # noqa: E402
from tfdash.profiling.cupti_ring import CuptiRing  # noqa: E402

LAUNCHES = 143
DRAIN_MS = 10  # the drain thread's period while the ring is on


def make_graph():
    x = torch.zeros(4096, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            for _ in range(LAUNCHES):
                x.add_(1.0)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(LAUNCHES):
                x.add_(1.0)
    return g


def replay_us(g, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        g.replay()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def part(res, key, fn):
    """res[key] = fn(), or the error and its traceback tail: one failure does not lose the rest."""
    try:
        res[key] = fn()
    except Exception as e:  # noqa: BLE001
        res[key] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-1500:]}
    return res[key]


class Drainer:
    """Drains the ring every DRAIN_MS on a thread of its own; counts entries and host time."""

    def __init__(self, ring):
        self.ring, self.n, self.calls, self.host_s, self.nodes = ring, 0, 0, 0.0, set()
        self.stop_evt = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop_evt.wait(DRAIN_MS / 1e3):
            self.once()

    def once(self):
        t0 = time.perf_counter()
        start, end, node, name_id = self.ring.drain()
        self.host_s += time.perf_counter() - t0
        self.n += len(start)
        self.calls += 1
        if len(self.nodes) < 1000:
            self.nodes.update(int(v) for v in node[:1000])

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_evt.set()
        self.t.join()


def delta(after, before):
    return {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], int)}


def rounds(g, ring, replays):
    out = []
    for r in range(3):
        off = replay_us(g, replays)
        before = ring.stats()
        if not ring.start():
            out.append({"off_us": off, "error": ring.error})
            break
        with Drainer(ring) as d:
            on = replay_us(g, replays)
            t0 = time.perf_counter()
            ring.flush(forced=True)
            flush_ms = (time.perf_counter() - t0) * 1e3
        ring.stop()
        d.once()  # what the last flush and stop left
        s = delta(ring.stats(), before)
        row = {"off_us": off, "on_us": on, "overhead_pct": (on / off - 1) * 100, "flush_ms": flush_ms,
               "records_per_replay": s["records"] / replays, "drained_per_replay": d.n / replays,
               "ring_dropped": s["ring_dropped"], "cupti_dropped": s["cupti_dropped"], "buffers": s["buffers"],
               "launches": s["launches"], "callback_us_per_replay": s["callback_ns"] / 1e3 / replays,
               "callback_max_us": ring.stats()["callback_max_ns"] / 1e3, "drain_calls": d.calls,
               "drain_us_per_call": d.host_s * 1e6 / max(d.calls, 1), "distinct_nodes": len(d.nodes)}
        out.append(row)
        print(f"round {r}: off {off:8.2f} us  on {on:8.2f} us  ({row['overhead_pct']:+6.2f} %)  "
              f"records/replay {row['records_per_replay']:6.1f}  drained/replay {row['drained_per_replay']:6.1f}  "
              f"dropped {row['ring_dropped']}+{row['cupti_dropped']}  callback {row['callback_us_per_replay']:.2f} us/replay")
    return out


def one_replay(g, ring):
    """One replay's records: one per graph node, all from one graph, durations against the wall."""
    ring.drain()
    assert ring.start(), ring.error
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    g.replay()
    torch.cuda.synchronize()
    wall_us = (time.perf_counter() - t0) * 1e6
    ring.stop()
    start, end, node, name_id, graph = ring.drain(graph=True)
    dur = (end - start).astype("int64")
    names = ring.names_for(name_id)
    return {"records": len(start), "distinct_nodes": len(set(node.tolist())), "graph_ids": sorted(set(graph.tolist())),
            "kernel_ns_median": float(sorted(dur)[len(dur) // 2]) if len(dur) else None,
            "kernel_ns_sum": int(dur.sum()), "span_us": float(end.max() - start.min()) / 1e3 if len(dur) else None,
            "wall_us": wall_us, "names": sorted(set(names.tolist()))[:3], "names_interned": len(ring.names()),
            "in_order": bool((start[1:] >= start[:-1]).all())}


def profiler_after(g, ring):
    """torch.profiler once the ring has stopped; available() while it runs; the ring again after."""
    from torch.profiler import ProfilerActivity, profile

    out = {}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        g.replay()
        torch.cuda.synchronize()
        out["available_during_profile"] = cupti_ring.available()
    out["torch_profiler_cuda_events"] = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
    ring.drain()
    out["ring_restart"] = ring.start() or ring.error
    g.replay()
    torch.cuda.synchronize()
    ring.stop()
    out["ring_records_after_profiler"] = len(ring.drain()[0])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="cupti_ring_probe.json")
    ap.add_argument("--replays", type=int, default=2000)
    a = ap.parse_args()
    res = {"launches": LAUNCHES, "replays": a.replays, "host": platform.node(), "torch": torch.__version__,
           "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": " ".join(sys.argv)}
    try:
        res["gpu"] = torch.cuda.get_device_name()
        torch.cuda.init()
    except Exception as e:  # noqa: BLE001
        res["gpu"] = repr(e)
    found = part(res, "found", cupti_build.locate)
    res["found"] = found if isinstance(found, (str, dict)) else {k: str(v) for k, v in vars(found).items()}
    ok, res["available"] = cupti_ring.available()
    print(f"available: {ok}: {res['available']}")
    g = part(res, "graph", make_graph)
    if ok and not isinstance(g, dict):
        res["graph"] = f"{LAUNCHES} nodes"
        ring = CuptiRing(ring_records=1 << 20, buffer_bytes=8 << 20, flush_period_ms=100)
        part(res, "rounds", lambda: rounds(g, ring, a.replays))
        part(res, "one_replay", lambda: one_replay(g, ring))
        part(res, "profiler_after", lambda: profiler_after(g, ring))
        part(res, "stats", ring.stats)
    print(json.dumps({k: v for k, v in res.items() if k not in ("rounds", "found")}, default=str)[:2500])
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1, default=str)


if __name__ == "__main__":
    main()
