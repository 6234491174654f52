"""The token ring: the pinned host slots each step's token reaches, and the events that say when.

The plan's argmax stores each step's token into the ring itself (`ring_in_graph`, the default): the
ring is pinned host memory, and its device address (`device_view`) is the buffer the kernel writes,
so the token reaches the host from inside the step's graph. Otherwise (a plan without it, a step
that is not the runtime's own graph) a 4-byte copy after the step puts it there, which costs a
step far more than its size (scripts/step_boundary.py measures both). An event recorded after the
step marks the slot complete. The host reads completed slots from a numpy view of the pinned
memory, never syncing per token. On CPU the step stores the token and its host time directly.

A step's device time is the difference of two clock stamps the plan's argmax leaves beside the
tokens (`ring_ns`, where the plan has it and the step is the runtime's own tilelang graph), else of
two timed events. A timed event after a replay costs the step about 1.8 us of GPU time and an
untimed one nothing measurable (scripts/step_boundary.py), so a step stamped after a stamped step
marks its slot with an untimed event. `slot_timing` is the rule.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from tfdash.engine.plan import TOKEN_RING as RING

HOST_RINGS = ("ring", "ring_ns")  # the plan's buffers in pinned host memory: tokens, and their stamps


class _Mapped:
    """A pinned host tensor as a CUDA array (`__cuda_array_interface__`): under unified addressing
    a pinned host block has the same address on the device."""

    def __init__(self, ring):
        self.__cuda_array_interface__ = {"shape": tuple(ring.shape), "typestr": ring.numpy().dtype.str,
                                         "data": (ring.data_ptr(), False), "strides": None, "version": 3}


def device_view(ring, device):
    """A CUDA tensor over the pinned `ring`'s memory: a kernel's stores into it land in host memory
    (the caller keeps `ring` alive as long as the view)."""
    if not ring.is_pinned() or not ring.is_contiguous():
        raise ValueError("a device view wants a pinned, contiguous host tensor")
    return torch.as_tensor(_Mapped(ring), device=device)


def slot_timing(stamped: bool, prev: tuple[bool, bool] | None) -> tuple[bool, bool]:
    """How a slot's step is timed: (timed, own_start). `stamped`: its graph stamps the slot; `prev`:
    the slot before it as (stamped, timed), None for a run's first step (timed from the run's start
    event). A stamped step after a stamped one is the difference of their stamps, its slot marked
    by an untimed event (timed False). Any other step is timed by events: from the slot before's
    timed event, or, where that slot has none, from an event of its own recorded just before the
    step (own_start)."""
    if stamped and prev is not None and prev[0]:
        return False, False
    return True, prev is not None and not prev[1]


class TokenRing:
    """The ring half of a Runtime (a mixin): it reads the runtime's `cuda`, `plan`, `shared`,
    `bufs`, `step`, `backend` and the pinned `_host_rings` its ring buffers were made over."""

    def _ring_init(self):
        # the plan's own ring (its argmax stores each token there), else one for the copies
        self.ring_in_graph = "ring" in self.plan.buffers and "ring" not in self.shared
        # its stamps, where the step's own graph leaves them: the tilelang kernel reads the clock
        self.stamped = (self.cuda and self.ring_in_graph and self.backend == "tilelang-graph"
                        and "ring_ns" in self.plan.buffers and "ring_ns" not in self.shared)
        # what the step's own graph stores into the host rings (enqueue's `writes` for its own steps)
        self._own_writes = (("ring",) if self.ring_in_graph else ()) + (("ring_ns",) if self.stamped else ())
        if self.cuda:
            own = self._host_rings.get("ring") if self.ring_in_graph else None
            self.ring = own if own is not None else torch.zeros(RING, dtype=torch.int32, pin_memory=True)
            self.ring_host = self.ring.numpy()  # the same pinned memory, read without torch
            self.ring_ns_host = self._host_rings["ring_ns"].numpy() if self.stamped else None
            self.ring_events = [torch.cuda.Event(enable_timing=True) for _ in range(RING)]
            self.quiet_events = [torch.cuda.Event() for _ in range(RING)]  # no timing: free on the GPU
            self.start_events = [torch.cuda.Event(enable_timing=True) for _ in range(RING)]
            self.start_event = torch.cuda.Event(enable_timing=True)
        else:
            self.ring = torch.zeros(RING, dtype=torch.int32)
            self.ring_host = self.ring.numpy()
            self.ring_ns = [0] * RING
        self._prev_slot = None
        self._pos: int | None = None  # the next step's position, where `begin` was told it
        self._slot_prev: list[int | None] = [None] * RING
        self._slot_how: list[tuple[bool, bool, bool]] = [(False, True, False)] * RING  # (stamped, timed, own_start)

    def begin(self, position: int | None = None) -> None:
        """Mark the start of a timed run of steps. `position`: the next step's pos, where its slot is
        pos % RING and each step after it the next position (Generation's steps): only then are the
        graph's stamps, stored at pos % RING, the slots'. Without it every step is timed by events."""
        self._prev_slot = None
        self._pos = position
        if self.cuda:
            self.start_event.record()
        else:
            self._t_prev = time.perf_counter_ns()

    def enqueue(self, slot: int, step_fn: Callable[[], None] | None = None, writes: tuple[str, ...] = ()) -> None:
        """Step once, get the token into ring[slot] (copied unless the step's graph stored it), and
        mark the slot's completion (`slot_timing` says with which event).
        `step_fn` replaces `self.step` for this step (a profiling window's timed step, an A/B variant's);
        `writes`: which of this runtime's HOST_RINGS its graph stores into at pos % RING (a variant's
        sharing this runtime's state stores the token, and its stamp where its plan has them)."""
        prev, pos = self._prev_slot, self._pos
        if pos is not None:
            self._pos = pos + 1
        if self.cuda:
            if step_fn is None:
                writes = self._own_writes
            at_pos = pos is not None and slot == pos % RING  # the slot the graph stores into
            stamped = self.stamped and at_pos and "ring_ns" in writes
            timed, own_start = slot_timing(stamped, None if prev is None else self._slot_how[prev][:2])
            if own_start:
                self.start_events[slot].record()
            (step_fn or self.step)()
            if not self.ring_in_graph or step_fn is not None and not (at_pos and "ring" in writes):
                self.ring[slot:slot + 1].copy_(self.bufs["tok"], non_blocking=True)  # no graph stored it there
            (self.ring_events if timed else self.quiet_events)[slot].record()
            self._slot_how[slot] = (stamped, timed, own_start)
        else:
            (step_fn or self.step)()
            self.ring[slot] = self.bufs["tok"][0]
            now = time.perf_counter_ns()
            self.ring_ns[slot] = now - self._t_prev
            self._t_prev = now
        self._slot_prev[slot] = prev
        self._prev_slot = slot

    def _done_event(self, slot: int):
        return self.ring_events[slot] if self._slot_how[slot][1] else self.quiet_events[slot]

    def ready(self, slot: int) -> bool:
        return self._done_event(slot).query() if self.cuda else True

    def wait(self, slot: int) -> None:
        """Until slot's step completed; a completed one returns at once, holding the GIL."""
        if self.cuda:
            ev = self._done_event(slot)
            if not ev.query():
                ev.synchronize()

    def token(self, slot: int) -> int:
        """The token of slot's completed step (see `wait`)."""
        return int(self.ring_host[slot])

    def step_ns(self, slot: int) -> int:
        """Device time between the end of the previous step and the end of this one (of a step timed
        from its own start event: from just before it)."""
        if not self.cuda:
            return self.ring_ns[slot]
        prev = self._slot_prev[slot]
        _, timed, own_start = self._slot_how[slot]
        if not timed:  # two stamps of the one clock
            return int(self.ring_ns_host[slot]) - int(self.ring_ns_host[prev])
        start = self.start_events[slot] if own_start else self.start_event if prev is None else self.ring_events[prev]
        return int(start.elapsed_time(self.ring_events[slot]) * 1e6)
