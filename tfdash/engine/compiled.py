"""The torch-compile peer: the plan's torch spelling through `torch.compile`, then one CUDA graph.

This is the step a PyTorch user who wants speed writes (gpt-fast style): every launch's torch
spelling (cuBLAS GEMVs) traced into one function, compiled by inductor with `fullgraph=True` and
no CUDA graphs of its own, and that function captured whole in one `torch.cuda.CUDAGraph`. Same
weights, same cache, same plan as the tilelang engine, so `tfdash bench` compares kernels and
launches, nothing else.

Attention is the one launch spelled as such a user spells it rather than as the reference does:
`scaled_dot_product_attention` in the model dtype over the whole cache with a mask past pos, the
kv head's group of q heads as its query rows (GQA without copying the cache). The reference's
spelling scores the cache in f32, which is exact but copies every layer's K and V to f32 each step.
"""

from __future__ import annotations

import time

import torch

from tfdash.engine.runtime import GraphRuntime, Runtime

MODE = "max-autotune-no-cudagraphs"  # inductor's autotuned kernels; the graph is ours


def sdpa_attention(dims, bufs):
    """The attention launch as a speed-minded torch user writes it: q/k norm, RoPE and the KV
    append as the reference does them, then one fused SDPA over the capacity, masked past pos."""
    from tfdash.kernels.rope import torch_qk_norm_rope

    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    q = bufs.get("q")
    if dims.get("fused_rope"):
        q = torch.empty(nH * D, dtype=bufs["qkv"].dtype, device=bufs["qkv"].device)
        torch_qk_norm_rope(dims, {**bufs, "q": q})
    kc, vc, pos = bufs["k_cache"], bufs["v_cache"], bufs["pos"]
    keep = (torch.arange(kc.shape[1], device=kc.device) <= pos).view(1, 1, 1, -1)
    o = torch.nn.functional.scaled_dot_product_attention(
        q.view(1, nKV, nH // nKV, D), kc.unsqueeze(0), vc.unsqueeze(0), attn_mask=keep)
    bufs["out"].copy_(o.reshape(-1))


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


class CompiledRuntime(Runtime):
    """The plan's torch spelling, attention as SDPA, compiled into one function of the whole step.
    Its state buffers are each their own tensor, as a torch user allocates them: aot_autograd
    refuses a step that writes views of one allocation in different dtypes (the engine's state
    arena), "input mutations on views with different dtypes"."""

    backend = "torch-compiled"
    scatter_state = True

    def __init__(self, plan, weights, device="cuda", mode: str | None = MODE, backend: str = "inductor"):
        super().__init__(plan, weights, device)
        compile_step(self, mode, backend=backend)

    def _launch_fn(self, i):
        launch = self.plan.launches[i]
        if launch.family != "attention":
            return super()._launch_fn(i)
        dims, args = launch.dims, self.launch_args[i]
        return lambda: sdpa_attention(dims, args)


class CompiledGraphRuntime(CompiledRuntime, GraphRuntime):
    """The compiled step captured into one CUDA graph. The first capture compiles (its time is
    `compile_s`: inductor's autotuning, then the capture)."""

    backend = "torch-compile"

    def __init__(self, plan, weights, device="cuda", mode: str | None = MODE):
        super().__init__(plan, weights, device, mode)
        self.compile_s: float | None = None

    def capture(self, warmup_prompt: list[int] | None = None) -> None:
        t = time.perf_counter()
        super().capture(warmup_prompt)
        if self.compile_s is None:
            self.compile_s = time.perf_counter() - t
