#!/usr/bin/env python3
"""What the live dashboard costs a GPU-bound engine, simulated on the CPU.

    python3 scripts/sim_dashboard_overhead.py [--step-us 1400] [--tokens 2048] [--rounds 3]
        [--model qwen3-1.7b --continuous --releases 1 --switch-us 100]

On the H200 the decode loop is GPU-bound: the host enqueues a graph replay and harvests ring
slots while the device runs ~1.4 ms steps, and the dashboard draws in the same Python process.
What can slow the engine there is the host: the decode thread waiting for the GIL or for the
session's lock while the app renders, long enough to let the device queue drain. A CPU engine
is Python-bound and so cannot show this. Here the qwen3-tiny engine's runtime is replaced by a
simulated device: each enqueued step completes `--step-us` after the previous one (or after its
enqueue), `ready` and `wait` follow that clock (`wait` sleeps, releasing the GIL as an event
synchronize does), and the replay call releases the GIL as `CUDAGraph.replay` does. Then
tfdash.app.overhead.dashboard_ab runs the real app, headless, against plain decoding.

`--releases N`: the GIL releases of one enqueued step on CUDA (1: the replay, the token stored
into the ring from inside the graph; 2 for a plan that copies it after the replay). Each is a point where another thread takes the GIL and the decode thread waits up to
the switch interval to get it back; a harvest's wait releases it only when the step has not
completed. `--continuous`: continuous timing on a
simulated record source, a thread that every DRAIN_S delivers the kernel records of the steps
completed since its last drain (each step's launches back to back), as the C ring's drain does,
so the mapper, the statistics and the kernel table's measured column cost what they cost on
the H200. `--model`: the plan's shape (its launch count is what the table and the records scale
with); its weights are random, in --dtype.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def simulated(engine, step_ns: int, releases: int = 1):
    """Turn the engine's CPU runtime into a simulated GPU-bound one (in place). Its `done` list
    (every enqueued step's completion time, in order) feeds SimRecords."""
    from tfdash.engine.runtime import RING

    rt = engine.runtime
    vocab = engine.config.vocab_size
    done = [0] * RING  # perf_counter_ns at which each slot's step completes
    state = {"last": 0, "n": 0}
    rt.sim_done = []  # (start, end) ns of every step enqueued, in order

    def begin(position=None):
        state["last"] = time.perf_counter_ns()
        rt._prev_slot = None

    def enqueue(slot, step_fn=None, writes=()):
        for _ in range(releases):
            time.sleep(0)  # the replay and the ring copy release the GIL
        now = time.perf_counter_ns()
        start = max(now, state["last"])
        state["last"] = start + step_ns
        rt.sim_done.append((start, state["last"]))
        state["n"] += 1
        done[slot] = state["last"]
        rt._slot_prev[slot] = rt._prev_slot
        rt._prev_slot = slot

    def ready(slot):
        return time.perf_counter_ns() >= done[slot]

    def wait(slot):
        left = done[slot] - time.perf_counter_ns()
        if left > 0:  # the runtime queries first: only a real wait releases the GIL
            time.sleep(left / 1e9)

    def step_ns_of(slot):
        prev = rt._slot_prev[slot]
        return step_ns if prev is None else done[slot] - done[prev]

    def token(slot):
        return (state["n"] * 7919 + slot) % vocab

    def synchronize():
        wait_all = state["last"] - time.perf_counter_ns()
        if wait_all > 0:
            time.sleep(wait_all / 1e9)

    rt.reset = lambda ids: None
    rt.begin, rt.enqueue, rt.ready, rt.wait = begin, enqueue, ready, wait
    rt.step_ns, rt.token, rt.synchronize = step_ns_of, token, synchronize
    return engine


def sim_records(engine):
    """A record source (factory) over the simulated runtime: each drain delivers the records of
    the steps completed since the last one, every launch `<kernel>_kernel`, back to back."""
    import threading

    import numpy as np

    from tfdash.profiling.continuous.ring_source import DRAIN_S
    from tfdash.profiling.continuous.sources import Records, RecordSource
    from tfdash.profiling.kernel_map import tilelang_names

    names = np.array([n for ns in tilelang_names(engine.plan) for n in ns], dtype=object)
    K = len(names)
    frac = np.arange(K + 1, dtype=np.float64) / K

    class SimRecords(RecordSource):
        name = "simulated"
        clock_offset_ns = 0

        def __init__(self, runtime):
            self.rt, self._next, self._stop, self.running = runtime, 0, threading.Event(), False
            self._lock = threading.Lock()  # one drain at a time (the thread's, or a pause's)
            self._thread, self.error = None, None

        def start(self, deliver):
            self._deliver, self.running = deliver, True
            self._next = len(self.rt.sim_done)
            self._thread = threading.Thread(target=self._run, daemon=True, name="tfdash-sim-records")
            self._thread.start()

        def _run(self):
            while not self._stop.wait(DRAIN_S):
                self._drain()

        def _drain(self):
            with self._lock:
                try:
                    now = time.perf_counter_ns()
                    steps = [se for se in self.rt.sim_done[self._next:] if se[1] <= now]  # ends only grow
                    if not steps or not self.running:
                        return
                    self._next += len(steps)
                    t = time.perf_counter_ns()
                    se = np.array(steps, dtype=np.int64)
                    edges = se[:, :1] + (se[:, 1:] - se[:, :1]) * frac[None, :]
                    start, end = edges[:, :-1].astype(np.int64).ravel(), (edges[:, 1:].astype(np.int64) - 1).ravel()
                    self._deliver(Records(names[np.tile(np.arange(K), len(steps))], start, end,
                                          np.ones(len(start), dtype=np.int64), time.perf_counter_ns() - t))
                except Exception as e:  # noqa: BLE001 - the drain thread never dies silently
                    self.error = self.error or f"{type(e).__name__}: {e}"

        def flush(self):
            self._drain()

        def pause(self):
            self._drain()
            with self._lock:
                self.running = False

        def resume(self):
            with self._lock:
                self._next, self.running = len(self.rt.sim_done), True

        def stop(self):
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=2)
            self.pause()

    return SimRecords


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--step-us", type=float, default=1400.0)
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--depth", type=int, default=None, help="steps in flight (default: the CUDA default, SETTINGS.depth)")
    p.add_argument("--model", default="qwen3-tiny", help="the plan's shape (random weights)")
    p.add_argument("--dtype", default=None, help="its weights' dtype (default: the CPU's, float32)")
    p.add_argument("--releases", type=int, default=1, help="GIL releases an enqueued step makes (1 on CUDA)")
    p.add_argument("--continuous", action="store_true", help="continuous timing on simulated kernel records")
    p.add_argument("--switch-us", type=float, default=None, help="the decode loop's switch interval (default SWITCH_S)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    import tfdash.engine.decode as decode
    from tfdash.engine import load_engine

    eng = simulated(load_engine(model=args.model, device="cpu", dtype=args.dtype, max_new_tokens=args.tokens,
                                capacity=args.tokens + 64), int(args.step_us * 1000), args.releases)
    saved = decode.SWITCH_S, decode.CPU_SWITCH_S
    try:
        if args.switch_us is not None:
            decode.SWITCH_S = args.switch_us / 1e6
        decode.CPU_SWITCH_S = decode.SWITCH_S  # the simulated runtime is a CUDA one (its runtime says CPU)
        r = _ab(args, eng)
    finally:
        decode.SWITCH_S, decode.CPU_SWITCH_S = saved
    print(json.dumps(r, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1))
    return 0


def _ab(args, eng) -> dict:
    import tfdash.engine.decode as decode
    from tfdash.app.overhead import dashboard_ab
    from tfdash.engine import DEFAULT_PROMPT
    from tfdash.profiling.probe import default_target
    from tfdash.profiling.session import Session
    from tfdash.settings import SETTINGS

    target = default_target("cpu")
    depth = args.depth or SETTINGS.depth
    timing = dict(timing="continuous", record_source=sim_records(eng)) if args.continuous else {}
    r = dashboard_ab(lambda: Session(eng, DEFAULT_PROMPT, args.tokens, target=target, ignore_eos=True, depth=depth,
                                     nvml=False, **timing), rounds=args.rounds)
    r.update(step_us=args.step_us, tokens=args.tokens, depth=depth, ideal_tok_s=1e6 / args.step_us, model=args.model,
             releases=args.releases, continuous=args.continuous, switch_interval_s=decode.SWITCH_S)
    return r


if __name__ == "__main__":
    raise SystemExit(main())
