"""The decode loop: a generator of token events that the CLI, the profiler and the app consume.

    prefill   the same captured step walks the prompt one position at a time (no host round trip:
              the argmax launch feeds the next prompt token while any remain)
    decode    each further step's argmax is the next token

The host keeps up to `depth` steps in flight and harvests ring slots whose events completed.
"""

from __future__ import annotations

import statistics
import threading
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator

from tfdash.engine.plan import check_generation
from tfdash.engine.runtime import RING, Runtime
from tfdash.engine.tokenizer import StreamDecoder


@dataclass(frozen=True)
class TokenEvent:
    index: int  # 0-based among generated tokens
    token_id: int
    text: str  # the text this token adds to the stream (may be "" mid-character)
    step_ns: int  # time of the step that produced it
    elapsed_ns: int  # wall time since the generation began


def percentile(values, q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(q / 100 * (len(s) - 1)))))
    return float(s[k])


@dataclass
class GenerationStats:
    prompt_tokens: int
    new_tokens: int = 0
    wall_ns: int = 0
    step_ns: array = field(default_factory=lambda: array("q"))  # every step, prompt walk included
    stopped: str = ""  # "", "eos", "cancelled"

    @property
    def tok_per_s(self) -> float:
        return self.new_tokens / (self.wall_ns / 1e9) if self.wall_ns else 0.0

    @property
    def ms_per_step_p50(self) -> float:
        return statistics.median(self.step_ns) / 1e6 if self.step_ns else float("nan")

    @property
    def ms_per_step_p99(self) -> float:
        return percentile(self.step_ns, 99) / 1e6 if self.step_ns else float("nan")

    def summary(self) -> str:
        return (f"{self.tok_per_s:.1f} tok/s over the whole generation "
                f"({self.new_tokens} new tokens in {self.wall_ns / 1e9:.3f} s, prompt walk included); "
                f"ms/step p50 {self.ms_per_step_p50:.3f} p99 {self.ms_per_step_p99:.3f}; "
                f"prompt {self.prompt_tokens} tokens, {self.new_tokens} new")


class Generation:
    """Iterate to run; `stats` fills in as it goes. `cancel()` (or a set `stop` event) ends it
    cleanly after the steps in flight, keeping everything measured so far."""

    def __init__(self, runtime: Runtime, prompt_ids: list[int], max_new_tokens: int, tokenizer,
                 eos_ids=(), depth: int = 16, stop: threading.Event | None = None):
        plan = runtime.plan
        check_generation(plan.config, plan.capacity, len(prompt_ids), max_new_tokens)
        self.runtime = runtime
        self.prompt_ids = list(prompt_ids)
        self.max_new_tokens = max_new_tokens
        self.decoder = StreamDecoder(tokenizer)
        self.eos_ids = set(eos_ids)
        self.depth = max(1, min(depth, RING - 1))
        self.stop = stop or threading.Event()
        self.stats = GenerationStats(prompt_tokens=len(prompt_ids))
        self.tokens: list[int] = []

    def cancel(self) -> None:
        self.stop.set()

    def __iter__(self) -> Iterator[TokenEvent]:
        rt, stats = self.runtime, self.stats
        n_prompt = len(self.prompt_ids)
        total_steps = n_prompt - 1 + self.max_new_tokens
        rt.reset(self.prompt_ids)
        inflight: deque[int] = deque()
        t0 = time.perf_counter_ns()
        rt.begin()
        step = 0

        def harvest(s: int) -> TokenEvent | None:
            slot = s % RING
            rt.wait(slot)
            dt = rt.step_ns(slot)
            stats.step_ns.append(dt)
            if s < n_prompt - 1:
                return None  # a prompt-walk step: its prediction is replaced by the prompt
            tok = rt.token(slot)
            self.tokens.append(tok)
            stats.new_tokens += 1
            stats.wall_ns = time.perf_counter_ns() - t0
            return TokenEvent(stats.new_tokens - 1, tok, self.decoder.push(tok), dt, stats.wall_ns)

        while True:
            while step < total_steps and len(inflight) < self.depth and not self.stop.is_set():
                rt.enqueue(step % RING)
                inflight.append(step)
                step += 1
            if not inflight:
                break
            if self.stop.is_set():
                # Drain quietly: these steps ran and are timed, their tokens are not emitted.
                while inflight:
                    s = inflight.popleft()
                    rt.wait(s % RING)
                    stats.step_ns.append(rt.step_ns(s % RING))
                break
            # Harvest the oldest step; block on it only when the window is full or nothing is
            # left to enqueue (back-pressure, not a per-token sync).
            if rt.ready(inflight[0] % RING) or len(inflight) >= self.depth or step >= total_steps:
                ev = harvest(inflight.popleft())
                if ev is not None:
                    yield ev
                    if ev.token_id in self.eos_ids:
                        stats.stopped = "eos"
                        self.stop.set()
            else:
                time.sleep(0)
        if self.stop.is_set() and not stats.stopped:
            stats.stopped = "cancelled"
        rt.synchronize()
