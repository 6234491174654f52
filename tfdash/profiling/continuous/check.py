"""What the H200 check of continuous timing computes (scripts/gpu_continuous_check.py), kept
here so the CPU tests run the same code on synthetic records.

    run_steps(runtime, n, ctx)      n steps from ctx, each one's CUDA-event time, state restored
    join_spans(steps, step_ns)      each measured step's CUPTI span against its CUDA-event time
"""

from __future__ import annotations

import numpy as np


def pct(xs, q):
    """Nearest-rank percentile (tfdash.stats), None for no values."""
    from tfdash.stats import percentile

    return percentile(list(xs), q) if len(xs) else None


def run_steps(rt, n: int, ctx: int) -> list[int]:
    """n steps from ctx (pos restored after), each step's CUDA-event time (ns)."""
    from tfdash.engine.runtime import RING

    out = []
    with rt.held():
        rt.set_position(ctx)
        rt.begin(ctx)  # step k runs at ctx + k, in the slot its graph stores into
        pending = []
        for k in range(ctx, ctx + n):
            if len(pending) >= RING - 1:
                s = pending.pop(0)
                rt.wait(s % RING)
                out.append(rt.step_ns(s % RING))
            rt.enqueue(k % RING)
            pending.append(k)
        for s in pending:
            rt.wait(s % RING)
            out.append(rt.step_ns(s % RING))
    return out


def join_spans(log, step_ns, skip: int = 16) -> dict:
    """Each measured step's CUPTI span (first kernel to the next step's first kernel: Sigma
    exclusive + gap) against the same step's CUDA-event time (step_ns[i] is step i), past the
    first `skip` steps; only steps whose successor was measured have a span."""
    idx = np.concatenate([x.index for x in log])
    start = np.concatenate([x.start for x in log])
    busy = np.concatenate([x.excl.sum(1) for x in log])
    ev = np.asarray(step_ns, dtype=np.int64)
    nxt = np.flatnonzero(np.diff(idx) == 1)
    span, s_idx, busy = start[nxt + 1] - start[nxt], idx[nxt], busy[nxt]
    ok = (s_idx >= skip) & (s_idx + 1 < len(ev))
    span, s_idx, busy = span[ok], s_idx[ok], busy[ok]
    if span.size == 0:
        return {"joined_steps": 0}
    rel, rel_next = span / ev[s_idx] - 1, span / ev[s_idx + 1] - 1
    return {"joined_steps": int(span.size), "span_vs_event_rel_p50": float(np.median(rel)),
            "span_vs_event_absrel_p50": float(np.median(np.abs(rel))),
            "span_vs_next_event_absrel_p50": float(np.median(np.abs(rel_next))),
            "span_p50_ns": float(np.median(span)), "event_p50_ns": float(np.median(ev[s_idx])),
            "busy_p50_ns": float(np.median(busy)),
            "p50_span_over_p50_event": float(np.median(span) / np.median(ev[s_idx]))}
