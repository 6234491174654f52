"""Step statistics, one formula each: the nearest-rank percentile of step times, and a
generation's throughput (whole run, time to first token, decode only, paused time left out).
Pure Python without torch, so the engine, the snapshot model and the app all share it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field


def rank(n: int, q: float) -> int:
    """The index, in sorted order, of the nearest-rank q-th percentile (q in 0..100) of n values."""
    return max(0, min(n - 1, int(round(q / 100 * (n - 1)))))


def percentile(values, q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a sequence; NaN when it is empty."""
    s = sorted(values)
    return float(s[rank(len(s), q)]) if s else float("nan")


def step_ms(step_ns) -> tuple[float | None, float | None]:
    """(p50, p99) of step times in ms, None for no steps."""
    if not len(step_ns):
        return None, None
    return percentile(step_ns, 50) / 1e6, percentile(step_ns, 99) / 1e6


def rates(new_tokens: int, wall_ns: int, held_ns: int = 0, ttft_ns: int = 0) -> tuple[float, float | None]:
    """(tok/s over the whole generation, decode-only tok/s). Time held (paused by the user) is not
    run time. Decode-only: the tokens after the first over the time after it (None for one token)."""
    run_ns = wall_ns - held_ns
    whole = new_tokens / (run_ns / 1e9) if run_ns > 0 else 0.0
    decode_ns = run_ns - ttft_ns
    decode = (new_tokens - 1) / (decode_ns / 1e9) if new_tokens > 1 and ttft_ns > 0 and decode_ns > 0 else None
    return whole, decode


class Rates:
    """tok/s of a run from its `new_tokens`, `wall_ns`, `held_ns` and `ttft_ns` (see `rates`)."""

    @property
    def tok_per_s(self) -> float:
        """New tokens over the run time (wall time less the time held)."""
        return rates(self.new_tokens, self.wall_ns, self.held_ns, self.ttft_ns)[0]

    @property
    def decode_tok_per_s(self) -> float | None:
        """The tokens after the first over the run time after it (None without a second token)."""
        return rates(self.new_tokens, self.wall_ns, self.held_ns, self.ttft_ns)[1]


@dataclass
class GenerationStats(Rates):
    prompt_tokens: int
    new_tokens: int = 0
    wall_ns: int = 0  # since the generation began, held time included
    step_ns: array = field(default_factory=lambda: array("q"))  # every step, a prompt walk's included
    stopped: str = ""  # "", "eos", "cancelled"
    paused_ns: int = 0  # wall time inside profiling windows' start/finish (drains, CUPTI set-up)
    steps: int = 0  # steps completed, a prompt walk's included (step_ns may keep only the last ones)
    ttft_ns: int = 0  # run time (held time left out) until the first new token was harvested
    held_ns: int = 0  # wall time the generation was held (paused); not run time
    prefill_positions: int = 0  # prompt positions taken in chunks, the head on the last (0: walked)
    prefill_ns: int = 0  # their device time (CPU: host time), once the first token is harvested

    @property
    def ms_per_step_p50(self) -> float:
        p50 = step_ms(self.step_ns)[0]
        return float("nan") if p50 is None else p50

    @property
    def ms_per_step_p99(self) -> float:
        p99 = step_ms(self.step_ns)[1]
        return float("nan") if p99 is None else p99

    def summary(self) -> str:
        return summary(self.tok_per_s, self.new_tokens, self.wall_ns, self.held_ns, self.ttft_ns,
                       self.decode_tok_per_s, self.ms_per_step_p50, self.ms_per_step_p99, self.prompt_tokens,
                       self.prefill_positions, self.prefill_ns)


def summary(tok_per_s: float, new_tokens: int, wall_ns: int, held_ns: int, ttft_ns: int, decode: float | None,
            p50_ms, p99_ms, prompt_tokens: int, prefill_positions: int = 0, prefill_ns: int = 0) -> str:
    """The one-line report of a generation (headless, the engine's own summary). A prompt taken in
    chunks says so with the chunks' and the first token's head's time, which is part of the time to
    first token; a walked prompt's steps are the decode step's, so its line says nothing more."""
    held = f", paused {held_ns / 1e9:.3f} s not counted" if held_ns > 0 else ""
    first = f"{ttft_ns / 1e6:.1f} ms" if ttft_ns else "-"
    dec = f"{decode:.1f} tok/s" if decode is not None else "- (one new token)" if new_tokens == 1 else "-"
    p50 = "-" if p50_ms is None or p50_ms != p50_ms else f"{p50_ms:.3f}"
    p99 = "-" if p99_ms is None or p99_ms != p99_ms else f"{p99_ms:.3f}"
    run = (f"{tok_per_s:.1f} tok/s over the whole generation ({tokens(new_tokens, 'new ')} in "
           f"{(wall_ns - held_ns) / 1e9:.3f} s, prompt included{held})") if new_tokens else \
        "- tok/s over the whole generation (no new token: the run stopped before its first)"  # its time is not kept
    return (f"{run}; time to first token {first}; "
            f"decode-only {dec}; ms/step p50 {p50} p99 {p99}; prompt {tokens(prompt_tokens)}"
            f"{prompt_chunks(prefill_positions, prefill_ns)}, {new_tokens} new")


def prompt_chunks(positions: int, ns: int) -> str:
    """` taken in chunks in 1.38 ms` for a prompt taken in chunks (its positions, their time), else ``."""
    return f" taken in chunks in {ns / 1e6:.2f} ms" if positions > 0 and ns > 0 else ""


def tokens(n: int, kind: str = "") -> str:
    """`1 token`, `2 tokens` (`kind`: a word before it, e.g. "new ")."""
    return f"{n} {kind}token{'' if n == 1 else 's'}"
