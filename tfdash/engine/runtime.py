"""Runtimes: three ways to launch the same StepPlan.

    torch-eager      each launch's torch spelling, one after another (CPU or CUDA)
    torch-graph      the same torch ops captured once into a CUDA graph (cuBLAS GEMVs); the peer
    tilelang-graph   every launch a tilelang kernel, the whole step captured into one CUDA graph

Every buffer is allocated once at a fixed address from the plan's BufferSpecs; the small state
(activations, tables, scratch) is carved from one page-aligned arena (`memory.carve`,
`TFDASH_STATE_ARENA`), so its layout is the same in every process, and in every runtime that
carves all of it (one sharing another's state carves only what it does not share). A step reads the
token in `tok` at position `pos` and leaves the next token in `tok` and pos + 1 in `pos`, so
stepping needs no host round trip. The plan's argmax stores each token into a pinned host ring slot
from inside the step (`ring_in_graph`; a plan without it gets a copy after the step), and an event
is recorded; the host reads slots whose events have completed, never syncing per token.

Every call that releases the GIL costs the decode thread up to the switch interval to get it back
while another thread (the dashboard's) is busy, so a graph runtime's step makes as few as torch
allows: the replay (and the ring copy where the plan has no ring), and one more only when the
host must wait for the GPU. A slot's event is queried (which keeps the GIL) before it is waited on,
and the token is read from a numpy view of the pinned ring, not through `Tensor.item` (which
releases it).

The runtime owns that state and every graph of it; profiling asks, never pokes the buffers:

    rt.take_prompt(ids)            after `reset`: the prompt in chunks, then the step's head on its
                                   last position (the plan's prefill_rows; tfdash.engine.prefill)
    with rt.held(): ...            pos/tok (and what a capture moves) restored on exit
    rt.set_position(ctx)           the next step runs at ctx_len = ctx
    rt.ensure_captured()           capture the step now if it is a graph runtime and has not been
    rt.capture_variant(doubled, ctx)  another graph of the step: launches `doubled` run twice,
                                   pos/tok reset to (ctx, tok) at its start, so each replay is the
                                   same step
    rt.variant(plan)               a runtime of a plan variant over the same weight tensors
    rt.variant(plan, share_state=True)  ... and over this runtime's cache and step state too: its
                                   steps continue this runtime's generation (a live A/B)
"""

from __future__ import annotations

import contextlib
import gc
from typing import Callable, Iterable

import torch

from tfdash.engine.memory import carve
from tfdash.engine.plan import TOKEN_RING, StepPlan
from tfdash.engine.prefill import PromptChunks
from tfdash.engine.token_ring import HOST_RINGS, TokenRing, device_view
from tfdash.kernels.base import family
from tfdash.kernels.rope import rope_tables
from tfdash.settings import SETTINGS

BACKENDS = ("torch-eager", "torch-graph", "tilelang-graph")
RING = TOKEN_RING  # pinned token slots: how far the host may run ahead of the GPU
STEP_STATE = ("tok", "pos", "prompt", "prompt_len", "out_tokens")  # what a capture's warm-up moves


def _torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def same_device(a: torch.device, b: torch.device) -> bool:
    """`cuda:0` is `cuda` (the current device): torch.device equality says they differ."""
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


class VariantGraph:
    """A captured variant of the step and the device scalars its prologue copies from (kept alive
    with it: the graph reads them by address)."""

    def __init__(self, graph, inputs):
        self.graph, self.inputs = graph, inputs

    def replay(self) -> None:
        self.graph.replay()


class Runtime(TokenRing, PromptChunks):
    """Buffers and eager stepping; subclasses add capture and tilelang kernels. The token ring's
    methods (begin, enqueue, ready, wait, token, step_ns) are TokenRing's; taking a prompt in
    chunks (take_prompt, head_step) is PromptChunks'."""

    backend = "torch-eager"
    scatter_state = False  # True: each state buffer its own allocation, whatever TFDASH_STATE_ARENA says

    def __init__(self, plan: StepPlan, weights: dict[str, torch.Tensor], device="cpu"):
        self.plan = plan
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.shared: frozenset[str] = frozenset()  # buffers that are another runtime's (variant(share_state))
        self._host_rings: dict[str, torch.Tensor] = {}  # HOST_RINGS' pinned host tensors, by name
        self.bufs = self._allocate(weights)
        self.launch_args = [self._resolve(launch) for launch in plan.launches]
        self.launch_fns: list[Callable[[], None]] = [self._launch_fn(i) for i in range(len(plan.launches))]
        self._ring_init()
        self.prefill = self._make_prefill()

    # -- buffers -------------------------------------------------------------------------
    def _allocate(self, weights):
        plan, dev = self.plan, self.device
        bufs: dict[str, torch.Tensor] = {}
        small: dict[str, tuple] = {}
        align = 0 if self.scatter_state else SETTINGS.state_arena  # 0: no arena
        shared = set()
        derived, to_derive = plan.meta.get("derived", {}), []
        for name, spec in plan.buffers.items():
            if spec.parent is not None:
                continue
            given = weights.get(name) if spec.kind != "weight" else None
            if given is not None and tuple(given.shape) == spec.shape and given.dtype == _torch_dtype(spec.dtype) \
                    and same_device(given.device, dev):
                bufs[name] = given  # another runtime's cache or state: used in place
                shared.add(name)
            elif name in HOST_RINGS:  # the token ring (and its stamps) the plan's argmax stores into: pinned
                host = self._host_rings[name] = torch.zeros(spec.shape, dtype=_torch_dtype(spec.dtype),
                                                            pin_memory=self.cuda)
                bufs[name] = device_view(host, dev) if self.cuda else host
            elif spec.kind == "weight" and name in derived:
                to_derive.append(name)  # made from its source below, always (one given may be of another dtype)
            elif spec.kind == "weight":
                t = weights[name]
                if tuple(t.shape) != spec.shape:
                    raise ValueError(f"weight {name} has shape {tuple(t.shape)}, plan wants {spec.shape}")
                bufs[name] = t.to(device=dev, dtype=_torch_dtype(spec.dtype)).contiguous()
            elif spec.kind == "cache" or align == 0:
                bufs[name] = torch.zeros(spec.shape, dtype=_torch_dtype(spec.dtype), device=dev)
            else:
                small[name] = (spec.shape, _torch_dtype(spec.dtype))
        if to_derive:
            from tfdash.engine.head_plan import derived_weights

            bufs.update(derived_weights(derived, bufs, to_derive))
        if align:  # the small state at fixed offsets in one allocation (a bad value is one line)
            bufs.update(carve(small, dev, align))
        for name, spec in plan.buffers.items():
            if spec.parent is not None:
                bufs[name] = bufs[spec.parent][spec.index]
        self.shared = frozenset(shared)
        if "rope_cos" not in shared:  # a shared table is filled already (and may be in use)
            cfg = plan.config
            cos, sin = rope_tables(plan.capacity, cfg.head_dim, cfg.rope_theta, _torch_dtype(plan.dtype), dev)
            bufs["rope_cos"].copy_(cos)
            bufs["rope_sin"].copy_(sin)
        return bufs

    def _resolve(self, launch) -> dict[str, torch.Tensor]:
        return {role: self.bufs[name] for role, name in launch.args.items()}

    def _launch_fn(self, i, args=None):
        """Launch i on its operands (`args`: other tensors for its roles, a variant's)."""
        launch = self.plan.launches[i]
        fn, dims, args = family(launch.family).torch, launch.dims, args or self.launch_args[i]
        return lambda: fn(dims, args)

    # -- stepping ------------------------------------------------------------------------
    def reset(self, prompt_ids: list[int]) -> None:
        """Load a prompt: tok = prompt[0], pos = 0. The caches need no clearing: a step reads
        only positions <= pos, all written by this generation."""
        from tfdash.engine.limits import check_generation

        check_generation(self.plan.config, self.plan.capacity, len(prompt_ids), 1)
        ids = torch.tensor(prompt_ids, dtype=torch.int32)
        b = self.bufs
        b["prompt"].zero_()
        b["prompt"][: len(prompt_ids)].copy_(ids)
        b["prompt_len"].fill_(len(prompt_ids))
        b["tok"].fill_(int(prompt_ids[0]))
        b["pos"].zero_()
        b["out_tokens"].zero_()

    def step(self) -> None:
        """One decode step, enqueued on the current stream (eager: run every launch)."""
        for fn in self.launch_fns:
            fn()

    def run_launch(self, i: int) -> None:
        self.launch_fns[i]()

    # -- the step's state ------------------------------------------------------------------
    @contextlib.contextmanager
    def held(self, keys: Iterable[str] = ("pos", "tok")):
        """Run the body and put the step state back as it was (synchronized on both sides): a
        profiling step, a warm-up or a variant graph's replays leave the generation where it was.
        The cache rows such a step writes at pos are rewritten by the real step at pos."""
        self.synchronize()
        saved = {k: self.bufs[k].clone() for k in keys}
        try:
            yield saved
        finally:
            self.synchronize()
            for k, v in saved.items():
                self.bufs[k].copy_(v)
            self.synchronize()

    def set_position(self, ctx: int) -> None:
        """The next step runs at ctx_len = ctx (the caller keeps it inside the cache)."""
        self.plan.check_ctx(int(ctx))
        self.synchronize()
        self.bufs["pos"].fill_(int(ctx))

    @property
    def position(self) -> int:
        return int(self.bufs["pos"][0])

    @property
    def needs_capture(self) -> bool:
        """A graph runtime whose step is not captured yet."""
        return False

    def ensure_captured(self) -> bool:
        """Capture the step now if this is a graph runtime that has not (a lazy capture inside a
        generation or a window would reset the prompt, pos and tok under it). True when it did."""
        return False

    def warm_up(self, steps: int = 1, prologue: Callable[[], None] | None = None, body=None) -> None:
        """Eager steps (or `body`s) on a side stream from the calling thread, before a capture: library
        handles (cuBLAS's are per thread), tilelang modules and the allocator must exist before it.
        They move pos and tok (hold them, or `reset`, around it)."""
        s = torch.cuda.Stream(self.device)
        s.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(s):
            for _ in range(steps):
                if prologue is not None:
                    prologue()
                (body or (lambda: Runtime.step(self)))()
        torch.cuda.current_stream(self.device).wait_stream(s)
        torch.cuda.synchronize(self.device)

    def _capture(self, body: Callable[[], None], thread_local: bool = False):
        """One CUDA graph of `body`. thread_local: other threads of the process (the app, NVML, a
        caller waiting on a measurement) may make CUDA calls meanwhile without invalidating it.
        The cyclic collector is held off: a finalizer run mid-capture (a freed event or pinned
        block) would make a forbidden call on this thread."""
        g = torch.cuda.CUDAGraph()
        was = gc.isenabled()
        gc.disable()
        try:
            with torch.cuda.graph(g, capture_error_mode="thread_local" if thread_local else "global"):
                body()
        finally:
            if was:
                gc.enable()
        torch.cuda.synchronize(self.device)
        return g

    def capture_variant(self, doubled: Iterable[int] = (), ctx: int | None = None):
        """A graph of the step with the launches in `doubled` run twice in a row, that first sets
        pos and tok to (ctx, the current tok): every replay is the same step at the same ctx.
        Warmed up from this thread first; pos and tok are restored. The caller replays it."""
        self.ensure_captured()  # the live graph's warm-up (allocator, handles) before this one
        twice = set(doubled)
        with self.held() as saved:
            pos0 = torch.full_like(saved["pos"], self.position if ctx is None else int(ctx))
            tok0 = saved["tok"].clone()

            def prologue():
                self.bufs["pos"].copy_(pos0)
                self.bufs["tok"].copy_(tok0)

            # a ring the plan's argmax stores into is the host's: this graph's tokens (and stamps) go to a scratch
            scratch = {i: dict(args, **{r: torch.zeros_like(args[r]) for r in HOST_RINGS if r in args})
                       for i, args in enumerate(self.launch_args) if "ring" in args}
            fns = [self._launch_fn(i, scratch[i]) if i in scratch else fn for i, fn in enumerate(self.launch_fns)]

            def body():
                prologue()
                for i, fn in enumerate(fns):
                    fn()
                    if i in twice:
                        fn()

            self.warm_up(1, body=body)  # its own launches: the host's ring (and stamps) left alone
            return VariantGraph(self._capture(body, thread_local=True), (pos0, tok0, scratch))

    def variant(self, plan: StepPlan, backend: str | None = None, share_state: bool = False,
                **kw) -> "Runtime":
        """A runtime of another plan of the same model (a plan variant to A/B) over this runtime's
        weight tensors (shared, not copied), of this backend unless told; its own buffers, graph
        and kernels. `kw` goes to the runtime (progress, pdl).

        share_state: every other buffer of the same name, shape and dtype (the KV cache, tok, pos,
        the prompt, the activations) is this runtime's too, so a step of the variant is the next
        step of this runtime's generation: the two can take turns. Steps are never concurrent
        (one stream), so sharing the activations is safe; the variant's graph is captured at the
        current position (`ensure_captured`), never by resetting the shared state."""
        given = {n: self.bufs[n] for n, b in self.plan.buffers.items()
                 if b.parent is None and (share_state or b.kind == "weight")}
        return make_runtime(backend or self.backend, plan, given, self.device, **kw)

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)


class GraphRuntime(Runtime):
    """The step captured once into a torch.cuda.CUDAGraph and replayed."""

    backend = "torch-graph"

    def __init__(self, plan, weights, device="cuda"):
        super().__init__(plan, weights, device)
        self.graph = self.head_graph = None

    def capture(self, warmup_prompt: list[int] | None = None) -> None:
        """Warm up, then capture one step. The warm-up steps move pos and tok; `reset` restores
        them before a generation."""
        Runtime.reset(self, warmup_prompt or [0, 0])
        self.warm_up(2)
        self.graph = self._capture(lambda: Runtime.step(self))
        if self.prefill is not None:
            self.prefill.capture()
            self.warm_up(1, body=self._head_alone)  # a compiled step never ran the head's launches alone
            self.head_graph = self._capture(self._head_alone)

    @property
    def needs_capture(self) -> bool:
        return self.graph is None

    def ensure_captured(self) -> bool:
        """Capture now if not yet. A runtime sharing another's state (variant(share_state=True))
        warms up at the generation's position instead of resetting: a step at pos writes only
        cache rows >= pos, each rewritten by the real step that reads it, so the run is unharmed."""
        if self.graph is not None:
            return False
        with self.held(STEP_STATE):
            if "pos" in self.shared:
                self.warm_up(2 if self.position + 1 < self.plan.capacity else 1)
                self.graph = self._capture(lambda: Runtime.step(self), thread_local=True)
            else:
                self.capture()
        return True

    def reset(self, prompt_ids: list[int]) -> None:
        """Capture first (capturing runs warm-up steps that move pos and tok), then load."""
        if self.graph is None:
            self.capture()
        super().reset(prompt_ids)

    def step(self) -> None:
        if self.graph is None:
            raise RuntimeError("reset() (or capture()) the graph runtime before stepping it")
        self.graph.replay()

    def head_step(self) -> None:
        """The head's launches replayed from their own graph where captured (with the step's), else
        eagerly (a runtime sharing another's state captures only its step)."""
        (self.head_graph.replay if self.head_graph is not None else self._head_alone)()

    def _head_alone(self) -> None:
        Runtime.head_step(self)


class TilelangRuntime(GraphRuntime):
    """Every launch a compiled tilelang kernel; the step captured into one CUDA graph."""

    backend = "tilelang-graph"

    def __init__(self, plan, weights, device="cuda", progress=None, pdl: bool | None = None):
        from tfdash.engine.compile import compile_plan

        self.pdl = SETTINGS.pdl if pdl is None else pdl
        self.kernels = compile_plan(plan, progress=progress, pdl=self.pdl)
        self._progress = progress  # for the prompt plan's kernels (_make_prefill)
        super().__init__(plan, weights, device)

    def _launch_fn(self, i, args=None):
        launch = self.plan.launches[i]
        kernel = self.kernels[launch.kernel]
        given = args or self.launch_args[i]
        args = [given[role] for role in family(launch.family).roles if role in launch.args]
        return lambda: kernel(*args)


def state_buffers(rt: Runtime) -> dict[str, torch.Tensor]:
    """The cache, activations, tables and scratch `rt` runs on (not its weights, views or the host's
    token ring, which each runtime keeps its own so its graph stores into it), to hand another
    runtime beside its weights: where a buffer's name, shape and dtype match its own plan's, that
    runtime uses it in place. Runtimes that step in turn (each `reset` before a generation) then
    differ only in their plans, not in where their state landed: identical engines measured about
    1 % apart on the H200 with the state's placement their only difference."""
    return {n: rt.bufs[n] for n, s in rt.plan.buffers.items()
            if s.kind != "weight" and s.parent is None and n not in HOST_RINGS}


def make_runtime(backend: str, plan: StepPlan, weights, device, progress=None, pdl: bool | None = None) -> Runtime:
    if backend == "torch-eager":
        return Runtime(plan, weights, device)
    if backend == "torch-graph":
        return GraphRuntime(plan, weights, device)
    if backend == "tilelang-graph":
        return TilelangRuntime(plan, weights, device, progress=progress, pdl=pdl)
    raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
