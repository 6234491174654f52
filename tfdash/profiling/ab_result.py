"""The A/B's result from its turns: each side's tok/s (the median of its turns, each turn's own
median step time with its first step left out), the verdict (the median of the paired turns' Δ
with half their interquartile range as the spread), both sides' next tokens compared, and each op
in both from the two profile windows. Pure: numbers in, the dict the snapshot keeps out
(`ProfileSnapshot.ab`); tfdash.profiling.ab runs the turns, ab_table says the dict as text.

    turn_ns(step_ns)                a turn's median step time, its first step left out
    verdict(delta_pct, spread_pct)  the verdict's phrase
    per_op(live_plan, var_plan, profiles)  each op's summed p50 in A and B, largest |Δ| first
    summarize(v, live, var, turns, checks, profiles, error)  the result dict
"""

from __future__ import annotations

import statistics


def turn_ns(step_ns) -> float:
    """A turn's median step time, its first step (after the switch's pause) left out: a stall of
    the host inside a turn (the dashboard redrawing, the GIL elsewhere) is not the plan's and
    must not land on whichever side happened to be running."""
    xs = list(step_ns[1:]) or list(step_ns)
    return float(statistics.median(xs))


def _half_iqr(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return (q[2] - q[0]) / 2


def _side(turns, side: str) -> dict:
    ns = [turn_ns(t[2]) for t in turns if t[0] == side]
    tps = [1e9 / x for x in ns if x > 0]
    if not tps:
        return {"windows": 0}
    return {"windows": len(tps), "tok_per_s": statistics.median(tps), "tok_per_s_min": min(tps),
            "tok_per_s_max": max(tps), "step_ns": statistics.median(ns), "steps": sum(len(t[2]) for t in turns
                                                                                      if t[0] == side),
            "tok_per_s_windows": tps}


def verdict(delta_pct: float | None, spread_pct: float | None) -> str:
    """The verdict's phrase for `delta_pct`, B's tok/s against A's in % (+: B, the variant, is faster),
    and its spread."""
    if delta_pct is None:
        return "no verdict: a side has no measured window"
    if abs(delta_pct) <= (spread_pct or 0.0):
        return f"no difference beyond the spread (Δ {delta_pct:+.1f} % ± {spread_pct:.1f} %)"
    return f"variant {'faster' if delta_pct > 0 else 'slower'} by {abs(delta_pct):.1f} % ± {spread_pct:.1f} %"


def per_op(live_plan, var_plan, profiles) -> tuple[list[dict], str]:
    """Each op's summed p50 in A and B (from the two profile windows), largest |Δ| first; an op
    on one side only has None on the other, and its whole time as its Δ (the missing side counts
    0, as in `tfdash diff` and the baseline column), its Δ % None. With the reason when a side has
    no window."""
    res = {s: profiles.get(s) for s in "AB"}
    bad = [f"{s}: {r.error if r is not None else 'not measured'}" for s, r in res.items() if r is None or not r.ok]
    if bad:
        return [], "no per-launch times (" + "; ".join(bad) + ")"
    sums: dict[str, list] = {}
    for k, plan in enumerate((live_plan, var_plan)):
        r = res["AB"[k]]
        for la in plan.launches:
            entry = sums.setdefault(la.op, [None, None, 0, 0])
            entry[k] = (entry[k] or 0.0) + r.p50(la.index)
            entry[2 + k] += 1
    rows = []
    for op, (a, b, na, nb) in sums.items():
        d = (b or 0.0) - (a or 0.0)
        rows.append({"op": op, "a_ns": a, "b_ns": b, "a_launches": na, "b_launches": nb, "delta_ns": d,
                     "delta_pct": 100 * d / a if a else None})
    rows.sort(key=lambda r: -abs(r["delta_ns"]))
    return rows, res["A"].method


def summarize(v, live, var, turns, checks, profiles, error=None) -> dict:
    """The result of the variant `v` (an ab.Variant: its name and settings) run as `var` against the
    running `live`: `turns` (side, first step, step ns), `checks` (ctx_len, A's token, B's), the
    sides' profile windows, and why the turns stopped short (`error`), marked "incomplete"."""
    a, b = _side(turns, "A"), _side(turns, "B")
    pa = [turn_ns(t[2]) for t in turns if t[0] == "A"]
    pb = [turn_ns(t[2]) for t in turns if t[0] == "B"]
    paired = [100 * (x / y - 1) for x, y in zip(pa, pb) if y > 0]  # tok/s ratio B/A - 1, per round
    delta = statistics.median(paired) if paired else None
    spread = _half_iqr(paired) if paired else None
    agree = sum(1 for _, x, y in checks if x == y)
    mismatch = next(({"ctx_len": c, "a": x, "b": y} for c, x, y in checks if x != y), None)
    ops, how = per_op(live.plan, var.plan, profiles)
    out = {"what": v.name, "about": v.about, "backend": live.backend, "a": a, "b": b,
           "order": "".join(t[0] for t in turns), "windows_per_side": min(a["windows"], b["windows"]),
           "steps_per_window": max((len(t[2]) for t in turns), default=0),
           "ctx_len": [turns[0][1], turns[-1][1] + len(turns[-1][2])] if turns else [],
           "delta_pct": delta, "spread_pct": spread, "verdict": verdict(delta, spread),
           "launches": [len(live.plan), len(var.plan)],
           "tokens": {"checks": len(checks), "agree": agree, "first_mismatch": mismatch},
           "per_op": ops, "per_op_method": how,
           "method": "turns of one generation alternating A B A B; per turn the median step (its first left out); "
                     "tok/s medians over turns; Δ B's tok/s vs A's (A's step over B's, less 1; + is B faster), "
                     "the median of paired turns, ± half their IQR"}
    if error:
        out["incomplete"] = error
    return out
