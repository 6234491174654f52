"""The torch-compile peer: the plan's torch spelling through `torch.compile`, then one CUDA graph.

This is the step a PyTorch user who wants speed writes (gpt-fast style): every launch's torch
spelling (cuBLAS GEMVs) traced into one function, compiled by inductor with `fullgraph=True` and
no CUDA graphs of its own, and that function captured whole in one `torch.cuda.CUDAGraph`. Same
weights, same cache, same plan as the tilelang engine, so `tfdash bench` compares kernels and
launches, nothing else.

Attention is the one launch spelled as such a user spells it rather than as the reference does:
scores and values as two batched matmuls in the model dtype over the whole cache, masked past pos
(the kv head's group of q heads as its query rows: GQA without copying the cache), with an f32
softmax between. The reference's spelling scores the cache in f32, which is exact but copies every
layer's K and V to f32 each step. The peer is the fastest of the forms `scripts/peer_kernels.py`
times (ATTENTION_FORMS, HEAD_FORMS, inductor's modes): SDPA with the group as query rows runs
cuDNN's prefill kernel, many times slower than the two matmuls; SDPA over the q heads with
`enable_gqa` is about as fast, not faster. Max-autotune fuses the GEMVs into Triton reductions
slower than cuBLAS's, so the peer takes inductor's default mode.
"""

from __future__ import annotations

import time

import torch

from tfdash.engine.runtime import GraphRuntime, Runtime

MODE = None  # inductor's default mode (cuBLAS for the GEMVs); no CUDA graphs inside: the graph is ours
# How the peer may spell its attention and its head (the first of each is the bench's peer; the
# others are forms a torch user might write instead, which scripts/peer_kernels.py times beside it)
ATTENTION_FORMS = ("bmm", "sdpa", "sdpa-heads")
HEAD_FORMS = ("f32", "bf16")


def sdpa_attention(dims, bufs):
    """The attention launch as a speed-minded torch user writes it: q/k norm, RoPE and the KV
    append as the reference does them, then one fused SDPA over the capacity, masked past pos."""
    q, (kc, vc, keep) = _roped_q(dims, bufs), _cache(bufs)
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    o = torch.nn.functional.scaled_dot_product_attention(
        q.view(1, nKV, nH // nKV, D), kc.unsqueeze(0), vc.unsqueeze(0), attn_mask=keep)
    bufs["out"].copy_(o.reshape(-1))


def sdpa_heads_attention(dims, bufs):
    """SDPA with the q heads as heads and GQA left to SDPA (`enable_gqa`), as gpt-fast lays it out."""
    q, (kc, vc, keep) = _roped_q(dims, bufs), _cache(bufs)
    nH, D = dims["n_heads"], dims["head_dim"]
    o = torch.nn.functional.scaled_dot_product_attention(
        q.view(1, nH, 1, D), kc.unsqueeze(0), vc.unsqueeze(0), attn_mask=keep, enable_gqa=True)
    bufs["out"].copy_(o.reshape(-1))


def bmm_attention(dims, bufs):
    """Scores and values as two batched matmuls in the model dtype (f32 softmax between), which
    inductor fuses around: no attention kernel at all."""
    q, (kc, vc, keep) = _roped_q(dims, bufs), _cache(bufs)
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    s = torch.bmm(q.view(nKV, nH // nKV, D), kc.transpose(1, 2)).float() * (D ** -0.5)
    p = torch.softmax(s.masked_fill(~keep.view(1, 1, -1), float("-inf")), dim=-1).to(q.dtype)
    bufs["out"].copy_(torch.bmm(p, vc).reshape(-1))


def _roped_q(dims, bufs):
    """q normed and roped, with this step's k and v appended to the cache (the reference's spelling),
    where the attention launch does that itself; else the q the rope launch wrote."""
    from tfdash.kernels.rope import torch_qk_norm_rope

    if not dims.get("fused_rope"):
        return bufs["q"]
    q = torch.empty(dims["n_heads"] * dims["head_dim"], dtype=bufs["qkv"].dtype, device=bufs["qkv"].device)
    torch_qk_norm_rope(dims, {**bufs, "q": q})
    return q


def _cache(bufs):
    """The whole cache and the mask that keeps its positions up to pos (capturable: no shape depends on pos)."""
    kc, vc = bufs["k_cache"], bufs["v_cache"]
    return kc, vc, (torch.arange(kc.shape[1], device=kc.device) <= bufs["pos"]).view(1, 1, 1, -1)


def bf16_head(dims, bufs):
    """The lm_head's logits in the model dtype (then widened into the f32 logits buffer), as a
    torch user's `output(x)` gives them, where the bench's peer keeps cuBLAS's f32 accumulator."""
    from tfdash.kernels.gemv import prologue_torch

    h = prologue_torch(dims, bufs["x"], bufs.get("norm_w"))
    bufs["out"].copy_(torch.nn.functional.linear(h, bufs["w"]))


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
    """The plan's torch spelling, attention as two batched matmuls, compiled into one function of the whole step.
    Its state buffers are each their own tensor, as a torch user allocates them: aot_autograd
    refuses a step that writes views of one allocation in different dtypes (the engine's state
    arena), "input mutations on views with different dtypes"."""

    backend = "torch-compiled"
    scatter_state = True

    def __init__(self, plan, weights, device="cuda", mode: str | None = MODE, backend: str = "inductor",
                 attention: str = ATTENTION_FORMS[0], head: str = HEAD_FORMS[0]):
        if attention not in ATTENTION_FORMS or head not in HEAD_FORMS:
            raise ValueError(f"attention {attention!r} / head {head!r}: the forms are {ATTENTION_FORMS} / {HEAD_FORMS}")
        self.forms = {"attention": attention, "head": head}
        super().__init__(plan, weights, device)
        compile_step(self, mode, backend=backend)

    def _launch_fn(self, i):
        launch = self.plan.launches[i]
        dims, args = launch.dims, self.launch_args[i]
        if launch.family == "attention":
            fn = {"sdpa": sdpa_attention, "sdpa-heads": sdpa_heads_attention,
                  "bmm": bmm_attention}[self.forms["attention"]]
            return lambda: fn(dims, args)
        if launch.op == "lm_head" and launch.family == "gemv" and self.forms["head"] == "bf16":
            return lambda: bf16_head(dims, args)
        return super()._launch_fn(i)


class CompiledGraphRuntime(CompiledRuntime, GraphRuntime):
    """The compiled step captured into one CUDA graph. The first capture compiles (its time is
    `compile_s`: inductor's compile, then the capture)."""

    backend = "torch-compile"

    def __init__(self, plan, weights, device="cuda", mode: str | None = MODE, **forms):
        super().__init__(plan, weights, device, mode, **forms)
        self.compile_s: float | None = None

    def capture(self, warmup_prompt: list[int] | None = None) -> None:
        t = time.perf_counter()
        super().capture(warmup_prompt)
        if self.compile_s is None:
            self.compile_s = time.perf_counter() - t
