"""What observing costs: tok/s with and without periodic profile windows, A/B in one process,
alternating, medians.

    tok_s_ab(engine, prompt, 2048, every=256, steps=32, rounds=3)

Each round runs the same generation twice, once plain and once with a profile window every
`every` new tokens, in alternating order (AB, BA, ...). NVML is off in both arms, so the
difference is the windows alone (their drains, profiler start/stop, and the timed steps). A
warm-up run with one window comes first and is not counted (CUPTI's first start and the kernel
map are one-time costs).
"""

from __future__ import annotations

import statistics

from tfdash.profiling.session import Session


def _run(engine, prompt, max_new, target, every: int, steps: int):
    """(tok/s, windows, paused ns, [(phase, host ns)] of its windows (CUPTI))."""
    s = Session(engine, prompt, max_new, nvml=False, target=target, profile_every=every, profile_steps=steps,
                ignore_eos=True)
    s.run()
    snap = s.snapshot()
    phases = [p for w in s.windows for p in w.phases_ns]
    return snap.tok_per_s, snap.profile_windows, snap.paused_ns, phases


def tok_s_ab(engine, prompt: str, max_new_tokens: int = 2048, *, every: int = 256, steps: int = 32,
             rounds: int = 3, target=None, warmup: bool = True) -> dict:
    from tfdash.profiling.probe import default_target

    target = target or default_target(engine.device)
    if warmup:
        _run(engine, prompt, min(max_new_tokens, 2 * steps + 2), target, max(1, steps), steps)
    phases: dict[str, list[int]] = {}  # host ns of each window phase over the windowed runs
    plain: list[float] = []
    windowed: list[float] = []
    windows: list[int] = []
    paused: list[int] = []
    for r in range(rounds):
        for arm in (("plain", "windows") if r % 2 == 0 else ("windows", "plain")):
            if arm == "plain":
                plain.append(_run(engine, prompt, max_new_tokens, target, 0, steps)[0])
            else:
                tps, n, p, ph = _run(engine, prompt, max_new_tokens, target, every, steps)
                for name, ns in ph:
                    phases.setdefault(name, []).append(ns)
                windowed.append(tps)
                windows.append(n)
                paused.append(p)
    a, b = statistics.median(plain), statistics.median(windowed)
    return {
        "tokens": max_new_tokens, "every": every, "steps": steps, "rounds": rounds,
        "plain_tok_s": a, "windows_tok_s": b, "overhead_pct": 100.0 * (a - b) / a if a else None,
        "plain_per_round": plain, "windows_per_round": windowed, "windows_per_run": windows,
        "paused_ms_per_run": [p / 1e6 for p in paused],
        "window_phase_ms_median": {k: statistics.median(v) / 1e6 for k, v in phases.items()},
        "method": "same generation, plain vs a profile window every `every` tokens, alternating, medians",
    }
