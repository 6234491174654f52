"""Taking a prompt in chunks before the decode steps: the runtime of the prompt's plan.

    pf = Prefill(rt)           the chunk plan's runtime over rt's weights, cache, RoPE tables and
                               prompt (tfdash.engine.prefill_plan), its own rows
    pf.enqueue(ids, then)      every position of the prompt, `rows` a chunk, then `then()` (the step's
                               head on the last row), enqueued on the stream
    pf.elapsed_ns()            their device time (waits for them)

A tilelang runtime replays one captured graph a chunk: the chunk's start and count are device
scalars set before each replay, so one graph serves every chunk of every prompt. The torch
runtimes run the chunk plan's torch spellings eagerly (they read the start and count on the host).
"""

from __future__ import annotations

import time

import torch


class PromptChunks:
    """The prompt half of a Runtime (a mixin, as TokenRing is): it reads the runtime's `plan`,
    `bufs`, `launch_fns` and `prefill`."""

    def _make_prefill(self):
        """The runtime of the prompt's plan where the plan asks for one (build_plan's prefill_rows)."""
        rows = dict(self.plan.meta.get("options", {})).get("prefill_rows", 0)
        return Prefill(self, rows, progress=getattr(self, "_progress", None)) if rows else None

    def take_prompt(self, prompt_ids: list[int]) -> bool:
        """After `reset`, with a prompt plan: enqueue every prompt position in chunks, then the step's
        head on the last one (`head_step` at pos = its position), which leaves the first new token in
        tok (and its out_tokens and ring slot) and pos one past the prompt, as the step there would.
        False: nothing taken (no prompt plan, or one position: the steps walk the prompt)."""
        if not self.first_step(prompt_ids):
            return False
        self.bufs["pos"].fill_(len(prompt_ids) - 1)
        self.prefill.enqueue(prompt_ids, then=self.head_step)
        return True

    def first_step(self, prompt_ids) -> int:
        """The position of a generation's first step: past the prompt where `take_prompt` takes it."""
        return len(prompt_ids) if self.prefill is not None and len(prompt_ids) > 1 else 0

    def head_step(self) -> None:
        """The step's launches after its last layer (lm_head and argmax) alone, on the residual in x."""
        for i in self.head_launches:
            self.run_launch(i)  # launch i alone (a compiled runtime's launch_fns is its whole step)

    @property
    def head_launches(self) -> list[int]:
        return [launch.index for launch in self.plan.launches if launch.layer is None and launch.index > 0]


class Prefill:
    def __init__(self, rt, rows: int, progress=None):
        from tfdash.engine.prefill_plan import build_prefill_plan
        from tfdash.engine.runtime import Runtime, make_runtime

        plan = build_prefill_plan(rt.plan, rows)
        given = {n: rt.bufs[n] for n, s in plan.buffers.items() if s.parent is None and n in rt.bufs}
        self.tilelang = rt.backend == "tilelang-graph"
        self.rows, self.cuda = rows, rt.cuda
        # no PDL: the chunk's kernels wait for the one before them to finish, as a plain stream does
        self.runtime = make_runtime("tilelang-graph" if self.tilelang else "torch-eager", plan, given, rt.device,
                                    progress=progress, pdl=False)
        self._eager = lambda: Runtime.step(self.runtime)
        self.graph = None
        self._ns = 0
        if self.cuda:
            self._start, self._end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def capture(self) -> None:
        """Capture one chunk (tilelang on CUDA): warmed up and captured with a count of 0, so
        neither writes a cache row."""
        if not (self.tilelang and self.cuda) or self.graph is not None:
            return
        rt = self.runtime
        rt.bufs["pf_start"].zero_()
        rt.bufs["pf_count"].zero_()
        rt.warm_up(1)
        self.graph = rt._capture(self._eager, thread_local=True)  # maybe lazily, with the app's threads about

    def enqueue(self, prompt_ids, then=None) -> None:
        """Every position of the prompt (already in the shared `prompt` buffer), a chunk at a time,
        then `then()`; their time is `elapsed_ns`."""
        n = len(prompt_ids)
        self.capture()
        b = self.runtime.bufs
        t = time.perf_counter_ns()
        if self.cuda:
            self._start.record()
        for start in range(0, n, self.rows):
            b["pf_start"].fill_(start)
            b["pf_count"].fill_(min(self.rows, n - start))
            (self.graph.replay if self.graph is not None else self._eager)()
        if then is not None:
            then()
        if self.cuda:
            self._end.record()
        else:
            self._ns = time.perf_counter_ns() - t

    def elapsed_ns(self) -> int:
        """The last `enqueue`'s device time (CPU: its host time); on CUDA, waits for its end."""
        if not self.cuda:
            return self._ns
        self._end.synchronize()
        return int(self._start.elapsed_time(self._end) * 1e6)
