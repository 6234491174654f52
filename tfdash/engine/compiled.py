"""The torch-compile peer: the plan's torch spelling through `torch.compile`, then one CUDA graph.

This is the step a PyTorch user who wants speed writes (gpt-fast style): every launch's torch
spelling (cuBLAS GEMVs, attention masked over the cache's capacity) traced into one function,
compiled by inductor with `fullgraph=True` and no CUDA graphs of its own, and that function
captured whole in one `torch.cuda.CUDAGraph`. Same weights, same cache, same plan as the
tilelang engine, so `tfdash bench` compares kernels and launches, nothing else.
"""

from __future__ import annotations

import time

import torch

from tfdash.engine.runtime import GraphRuntime

MODE = "max-autotune-no-cudagraphs"  # inductor's autotuned kernels; the graph is ours


def compile_step(runtime, mode: str | None = MODE, fullgraph: bool = True, backend: str = "inductor") -> None:
    """Replace `runtime`'s launches by one compiled function of all of them. `Runtime.step`
    runs the launch list, so it then runs the compiled step; `run_launch(i)` still runs launch i
    alone, eagerly. (`backend="eager"` traces without compiling: a quick check of the trace.)"""
    eager = list(runtime.launch_fns)

    def decode_step():
        for fn in eager:
            fn()

    runtime.eager_fns = eager
    runtime.launch_fns = [torch.compile(decode_step, fullgraph=fullgraph, mode=mode, backend=backend)]
    runtime.run_launch = lambda i: eager[i]()


class CompiledGraphRuntime(GraphRuntime):
    """The compiled step captured into one CUDA graph. The first capture compiles (its time is
    `compile_s`: inductor's autotuning, then the capture)."""

    backend = "torch-compile"

    def __init__(self, plan, weights, device="cuda", mode: str = MODE):
        super().__init__(plan, weights, device)
        compile_step(self, mode)
        self.compile_s: float | None = None

    def capture(self, warmup_prompt: list[int] | None = None) -> None:
        t = time.perf_counter()
        super().capture(warmup_prompt)
        if self.compile_s is None:
            self.compile_s = time.perf_counter() - t
