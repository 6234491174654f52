"""A stream of kernel records cut into whole steps of the plan.

The kernel map (`tfdash.profiling.kernel_map`) says which device kernels each launch makes, in
order; a step is those kernels back to back in start order (a tilelang launch is one kernel named
`<launch.kernel>_kernel`). Records come in batches of arbitrary size, so the mapper keeps the
incomplete tail of one batch (fewer than a step's kernels) to prepend to the next.

It tolerates loss. A step is taken only where the full sequence of names matches, all from one
CUDA graph; the stream re-synchronises on the next complete match after anything that does not
fit. Records of kernels the plan does not make, of eager launches (graph id 0) and of another
graph than the live step's (a marginal measurement's doubled variant) are ignored. The graph is
the one of the first complete step seen. Each step gets a generation index (== its ctx_len):
consecutive after a consecutive one, and after lost records the index moves on by the time since
the last measured step over the step period, so the sweep's buckets stay right. (Records are
lost in runs, which cut the steps at both ends; steps lost whole with no partial step around
them would go uncounted: no record says they ran.)

Exclusive time per launch is `kernel_map.exclusive_ns`, as windows compute it.

CUPTI names a C++ kernel by its mangled symbol, the kernel map (torch.profiler) by the demangled
one; a record's name is looked up as it is, then demangled (torch's demangler), once per name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfdash.profiling.continuous.sources import Records
from tfdash.profiling.kernel_map import exclusive_ns, is_kernel


@dataclass(frozen=True)
class Steps:
    """Whole steps cut from the stream, in order."""

    index: np.ndarray  # int64 [s]: the generation step (== its ctx_len)
    start: np.ndarray  # int64 [s]: its first kernel's start (source clock)
    end: np.ndarray  # int64 [s]: the latest end among its kernels
    excl: np.ndarray  # int64 [s, launches]: exclusive ns of each launch
    kstart: np.ndarray  # int64 [s, kernels]: each kernel's raw start (for the timeline)
    kdur: np.ndarray  # int64 [s, kernels]: and its raw duration

    def __len__(self) -> int:
        return len(self.index)

    def part(self, sl: slice) -> "Steps":
        return Steps(self.index[sl], self.start[sl], self.end[sl], self.excl[sl], self.kstart[sl], self.kdur[sl])


_EMPTY = np.zeros(0, dtype=np.int64)
MAX_NAMES = 4096  # distinct record names remembered (the plan's and a few foreign ones)


def _demangler():
    try:
        import torch

        return torch._C._demangle
    except Exception:  # noqa: BLE001 - without torch, names are compared as they come
        return lambda name: name


class StepMapper:
    def __init__(self, names, require_graph: bool = True, first_index: int = 0):
        """`names`: the kernel map ([launch] -> its device kernels' names); memsets and copies in
        it are left out (CUPTI's kernel records do not carry them). `require_graph`: ignore
        records launched outside a CUDA graph."""
        kernels = [(i, n) for i, ns in enumerate(names) for n in ns if is_kernel(n)]
        if not kernels:
            raise ValueError("the kernel map names no kernels")
        self.n_launches = len(names)
        self.owner = np.array([i for i, _ in kernels], dtype=np.int64)  # [kernel] -> launch
        self.kernel_names = tuple(n for _, n in kernels)
        self.K = len(kernels)
        self.name_id = {n: k for k, n in enumerate(dict.fromkeys(self.kernel_names))}
        self.expect = np.array([self.name_id[n] for n in self.kernel_names], dtype=np.int64)
        self._ids = dict(self.name_id)  # a record's name -> its id (-1: no plan kernel)
        self._demangle = _demangler()
        self._ar = np.arange(self.K)
        one_each = self.K == self.n_launches and bool((self.owner == np.arange(self.K)).all())
        self._sum = None if one_each else np.eye(self.n_launches, dtype=np.int64)[self.owner]  # [kernel, launch]
        self.require_graph = require_graph
        self.graph: int | None = None
        self.records = self.ignored = self.steps = self.dropped = 0
        self.rebase(first_index)

    def rebase(self, next_index: int) -> None:
        """The next step measured is generation step `next_index` (after a pause in the stream)."""
        self.next_index = int(next_index)
        self.last_index: int | None = None
        self.last_start = 0
        self.lost = False  # records lost since the last measured step
        self.frontier: int | None = None
        self._carry = (_EMPTY, _EMPTY, _EMPTY, _EMPTY)

    def _learn(self, name: str) -> int:
        try:
            i = self.name_id.get(self._demangle(name), -1)
        except Exception:  # noqa: BLE001 - a name the demangler refuses is no plan kernel
            i = -1
        if len(self._ids) < MAX_NAMES:
            self._ids[name] = i
        return i

    def _missing(self, dt: int, period_ns: float | None) -> int:
        """Steps lost between two measured ones `dt` ns apart with records lost between them:
        by the step period when known (0 when they are one period apart), else one."""
        if period_ns and period_ns > 0:
            return max(0, int(round(dt / period_ns)) - 1)
        return 1

    def _match(self, ids, gr) -> np.ndarray:
        """Start positions where a whole step's names follow, all from one graph, in order."""
        n, K = len(ids), self.K
        if n < K:
            return _EMPTY
        cand = np.flatnonzero(ids[:n - K + 1] == self.expect[0])
        if cand.size == 0:
            return cand
        cand = cand[(ids[cand[:, None] + self._ar] == self.expect).all(1)]
        if cand.size:
            g = gr[cand[:, None] + self._ar]
            cand = cand[(g == g[:, :1]).all(1)]
        return cand

    def feed(self, rec: Records, period_ns: float | None = None) -> Steps | None:
        """The whole steps completed by this batch (None: none)."""
        n0 = len(rec)
        self.records += n0
        get = self._ids.get
        ids = np.fromiter((get(x, -2) for x in rec.names), dtype=np.int64, count=n0)
        if (ids == -2).any():
            ids = np.fromiter((get(x) if get(x, -2) != -2 else self._learn(x) for x in rec.names),
                              dtype=np.int64, count=n0)
        keep = ids >= 0
        if self.require_graph:
            keep &= rec.graph != 0
        if self.graph is not None:
            keep &= rec.graph == self.graph
        self.ignored += n0 - int(keep.sum())
        cid, cst, cen, cgr = self._carry
        ids = np.concatenate((cid, ids[keep]))
        st = np.concatenate((cst, rec.start[keep]))
        en = np.concatenate((cen, rec.end[keep]))
        gr = np.concatenate((cgr, rec.graph[keep]))
        if ids.size == 0:
            return None
        if ids.size > 1 and (np.diff(st) < 0).any():
            order = np.argsort(st, kind="stable")
            ids, st, en, gr = ids[order], st[order], en[order], gr[order]
        valid = self._match(ids, gr)
        if self.graph is None and valid.size:
            self.graph = int(gr[valid[0]])  # lock onto the live step's graph
            mine = gr == self.graph
            self.ignored += int((~mine).sum())
            ids, st, en, gr = ids[mine], st[mine], en[mine], gr[mine]
            valid = self._match(ids, gr)
        taken, nxt = [], 0
        for p in valid.tolist():
            if p >= nxt:
                taken.append(p)
                nxt = p + self.K
        n = ids.size
        cut = max(nxt, n - self.K + 1, 0)  # records before cut are done with; after it, carried
        self._carry = (ids[cut:], st[cut:], en[cut:], gr[cut:])
        if cut == 0:
            return None
        f0 = int(st[0]) if self.frontier is None else self.frontier
        excl_all = exclusive_ns(st[:cut], en[:cut], f0)
        self.frontier = max(f0, int(en[:cut].max()))
        if not taken:
            self.lost = True
            return None
        pos = np.array(taken, dtype=np.int64)[:, None] + self._ar  # [s, K]
        ex = excl_all[pos]
        excl = ex if self._sum is None else ex @ self._sum
        kst, ken = st[pos], en[pos]
        index = np.empty(len(taken), dtype=np.int64)
        prev_end = 0
        for j, p in enumerate(taken):
            lost = self.lost or p > prev_end
            s0 = int(kst[j, 0])
            if self.last_index is None:
                i = self.next_index
            elif lost:
                miss = self._missing(s0 - self.last_start, period_ns)
                self.dropped += miss
                i = self.last_index + 1 + miss
            else:
                i = self.last_index + 1
            index[j], self.last_index, self.last_start = i, i, s0
            self.lost, prev_end = False, p + self.K
        if cut > nxt:
            self.lost = True  # records after the last step that no step took
        self.steps += len(taken)
        return Steps(index, kst[:, 0].copy(), ken.max(1), excl, kst, ken - kst)
