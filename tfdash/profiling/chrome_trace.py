"""The run as a Chrome trace (opens in Perfetto / chrome://tracing): process "tfdash decode" with
a track of decode steps (laid end to end from their measured times, ending at the run's wall
time) and a track of the latest profile window's kernels; process "NVML" with one counter per
series. Times in microseconds, as the trace-event format counts them.
"""

from __future__ import annotations

from pathlib import Path

from tfdash.profiling.files import write_json_atomic
from tfdash.profiling.snapshot import SCHEMA, VERSION, ProfileSnapshot

PID_DECODE, PID_NVML = 1, 2
TID_STEPS, TID_KERNELS = 1, 2


def chrome_trace(snap: ProfileSnapshot) -> dict:
    """The trace-event JSON object (times in microseconds)."""
    roles = {k.index: k.role for k in snap.kernels}
    ev: list[dict] = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": PID_DECODE, "tid": 0,
         "args": {"name": f"tfdash decode ({snap.meta.model.get('name', '?')}, {snap.meta.backend})"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": PID_DECODE, "tid": TID_STEPS,
         "args": {"name": "decode steps"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": PID_DECODE, "tid": TID_KERNELS,
         "args": {"name": "kernels (latest profile window)"}},
        {"name": "process_name", "ph": "M", "ts": 0, "pid": PID_NVML, "tid": 0, "args": {"name": "NVML"}},
    ]
    first = max(0, snap.steps - len(snap.step_ns))
    t = max(0, snap.wall_ns - sum(snap.step_ns))
    for k, dt in enumerate(snap.step_ns):
        ev.append({"name": "step", "cat": "decode", "ph": "X", "ts": t / 1e3, "dur": max(0, dt) / 1e3,
                   "pid": PID_DECODE, "tid": TID_STEPS, "args": {"step": first + k}})
        t += max(0, dt)
    for sp in snap.timeline:
        ev.append({"name": sp.name, "cat": "kernel", "ph": "X", "ts": max(0, sp.start_ns) / 1e3,
                   "dur": max(0, sp.dur_ns) / 1e3, "pid": PID_DECODE, "tid": TID_KERNELS,
                   "args": {"launch": sp.launch, "role": roles.get(sp.launch, "?"), "step": sp.step}})
    for s in snap.nvml:
        for ts, v in zip(s.t, s.values):
            if v is not None:
                ev.append({"name": s.name, "cat": "nvml", "ph": "C", "ts": max(0.0, ts) * 1e6,
                           "pid": PID_NVML, "tid": 0, "args": {s.unit or "value": v}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"schema": SCHEMA, "version": VERSION, "host": snap.meta.host,
                          "gpu": snap.meta.gpu or "cpu", "started_at": snap.meta.started_at}}


def write_chrome_trace(snap: ProfileSnapshot, path) -> Path:
    return write_json_atomic(path, chrome_trace(snap))
