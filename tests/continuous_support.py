"""Synthetic CUPTI kernel records of decode steps, for the continuous-timing tests.

A step's kernels run back to back in launch order with PDL-like overlap: each kernel after the
first starts while the one before it drains (by up to 20 % of its own duration, never more than
half the previous one's), so its raw duration overlaps its predecessor's and only its exclusive
time adds to the step. After the last kernel comes a gap (the token copy, the launch of the next
replay) before the next step's first kernel. Attention's duration grows with the step's ctx_len.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfdash.profiling.continuous import records
from tfdash.profiling.continuous.sources import Records
from tfdash.profiling.kernel_map import tilelang_names

GRAPH = 5  # the live step's graph id in the synthetic records


@dataclass
class Synth:
    index: np.ndarray  # [s]
    start: np.ndarray  # [s, L] raw kernel starts
    dur: np.ndarray  # [s, L]
    excl: np.ndarray  # [s, L] the exclusive ns each launch should get
    span: np.ndarray  # [s] first kernel start to the next step's
    names: tuple[str, ...]  # [L]


def synth(plan, steps: int, first: int = 0, t0: int = 1_000_000, seed: int = 0, slow: dict | None = None,
          gaps: dict | None = None) -> Synth:
    """`slow`: {step: (launch, extra ns)}; `gaps`: {step: extra idle ns after it}."""
    names = tuple(n for (n,) in tilelang_names(plan))
    L = len(names)
    rng = np.random.default_rng(seed)
    idx = np.arange(first, first + steps, dtype=np.int64)
    attn = np.array([la.family == "attention" for la in plan.launches])
    base = np.array([2000 + 400 * (i % 7) for i in range(L)], dtype=np.int64)
    dur = base[None, :] + attn[None, :] * (3 * idx[:, None]) + rng.integers(0, 300, (steps, L))
    for s, (launch, extra) in (slow or {}).items():
        dur[s - first, launch] += extra
    ov = np.zeros_like(dur)
    ov[:, 1:] = np.minimum(dur[:, 1:] // 5, dur[:, :-1] // 2)
    excl = dur - ov
    gap = 3000 + rng.integers(0, 500, steps)
    for s, extra in (gaps or {}).items():
        gap[s - first] += extra
    span = excl.sum(1) + gap
    sstart = t0 + np.concatenate(([0], np.cumsum(span)[:-1]))
    end = sstart[:, None] + np.cumsum(excl, 1)
    return Synth(idx, end - dur, dur, excl, span, names)


def rows(sy: Synth, graph: int = GRAPH, drop=()) -> list[tuple]:
    """(name, start, end, graph) per kernel in step order; `drop`: (step, launch) pairs, launch
    None for the whole step."""
    gone = set(drop)
    out = []
    for j, s in enumerate(sy.index.tolist()):
        if (s, None) in gone:
            continue
        for i, name in enumerate(sy.names):
            if (s, i) not in gone:
                st = int(sy.start[j, i])
                out.append((name, st, st + int(sy.dur[j, i]), graph))
    return out


def batches(rows_: list[tuple], seed: int = 1, mean: int = 700, swap: bool = True) -> list[Records]:
    """Cut into batches of random sizes (not on step edges); neighbours swapped here and there,
    as CUPTI writes records in completion order."""
    rng = np.random.default_rng(seed)
    rows_ = list(rows_)
    if swap:
        for k in rng.integers(0, len(rows_) - 1, len(rows_) // 50).tolist():
            rows_[k], rows_[k + 1] = rows_[k + 1], rows_[k]
    out, k = [], 0
    while k < len(rows_):
        n = int(rng.integers(1, 2 * mean))
        out.append(records(rows_[k:k + n]))
        k += n
    return out


def stream(plan, steps: int, per_batch: int = 97):
    """A long stream, made a batch at a time (constant memory), without the checks' extras."""
    names = [n for (n,) in tilelang_names(plan)]
    L = len(names)
    t = 1_000_000
    for first in range(0, steps, per_batch):
        n = min(per_batch, steps - first)
        sy = synth(plan, n, first, t, seed=first)
        t = int(sy.start[-1, 0] + sy.span[-1])
        yield Records(names * n, sy.start.reshape(-1).copy(), (sy.start + sy.dur).reshape(-1),
                      np.full(n * L, GRAPH, dtype=np.int64))
