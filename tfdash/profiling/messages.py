"""What a Session posts to its `on_event` callback: small frozen messages, one per happening.

`kind` names each for coalescing (the app collapses a flood of one kind into one redraw). The
callback runs on the thread that produced the message (the decode thread, the NVML sampler, a
marginal's caller), so it must return quickly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tfdash.profiling.nvml_sampler import NvmlSample
from tfdash.profiling.snapshot import KernelRow, Roofline, RunMeta, TokenRecord


@dataclass(frozen=True)
class SessionStarted:
    """The run began: its metadata and the roofline target the predictions use."""

    kind: ClassVar[str] = "started"
    meta: RunMeta
    target: dict


@dataclass(frozen=True)
class Status:
    """A set-up line (capturing, probing, learning the kernel map); "" clears it."""

    kind: ClassVar[str] = "status"
    text: str


@dataclass(frozen=True)
class TokenBatch:
    """Tokens harvested since the last batch, the steps that made them (a prompt walk's included),
    and the run so far."""

    kind: ClassVar[str] = "tokens"
    tokens: tuple[TokenRecord, ...]
    step_ns: tuple[int, ...]  # the steps completed since the previous batch (a prompt walk's included)
    new_tokens: int
    wall_ns: int
    tok_per_s: float


@dataclass(frozen=True)
class ProfileDone:
    """A profile window finished: the kernel rows and roofline it gives, or why it has none."""

    kind: ClassVar[str] = "profile"
    window: int  # windows completed so far, this one included
    rows: tuple[KernelRow, ...]
    roofline: Roofline | None
    error: str | None  # why the window has no numbers (the rows keep their predictions)


@dataclass(frozen=True)
class NvmlUpdate:
    """One NVML sample."""

    kind: ClassVar[str] = "nvml"
    sample: NvmlSample


@dataclass(frozen=True)
class MarginalDone:
    """A marginal-cost measurement (or a dict with "unavailable" and why)."""

    kind: ClassVar[str] = "marginal"
    result: dict


@dataclass(frozen=True)
class ABProgress:
    """A live A/B's progress (tfdash.profiling.ab): `phase` "building", "running" or "done";
    `done` of `total` windows; `line` says it in words. Handed to the A/B's own callback."""

    kind: ClassVar[str] = "ab_progress"
    what: str
    phase: str
    done: int
    total: int
    line: str


@dataclass(frozen=True)
class ABDone:
    """A live A/B finished: its result (tfdash.profiling.ab.summarize), or {"unavailable": why}."""

    kind: ClassVar[str] = "ab"
    result: dict


@dataclass(frozen=True)
class SessionEnded:
    """The run is over: how it stopped, and the whole-run figures (`error`: why it failed)."""

    kind: ClassVar[str] = "ended"
    stopped: str  # "" (all tokens), "eos", "cancelled", "error"
    new_tokens: int
    wall_ns: int
    tok_per_s: float
    error: str | None = None
