"""The A/B's result (tfdash.profiling.ab.summarize) as lines of text: the headless report's table,
`tfdash open`'s summary; the dashboard's A/B screen says its verdict with the same label and phrase.

    VERDICT_LABEL    what the verdict's Δ is and which way it points, said beside it
    OP_DELTA         the per-op table's Δ header, with its direction (B − A in time: + is B slower)
    medians_note(result)  why the sides' medians may differ the other way from the verdict
    when(result)     when the turns ran: "during the generation", or "after the generation, …"
    window_count(result)  the windows a side, each side's count where a stop left them unequal
    table(result)    the lines
"""

from __future__ import annotations

# What the verdict's Δ is, said beside it, with its direction: B's tok/s against A's in each pair of
# windows (A's step time over B's, less 1), so + is B faster, as the sides' tok/s columns read; the
# median of those pairs, not the ratio of the sides' medians (a drifting host moves both sides of a
# pair, not the pairs' median)
VERDICT_LABEL = "B vs A tok/s, median of pairs"

# The per-op table's Δ column: B's time less A's, so + is B slower, the opposite way round from the
# verdict's tok/s; its header says so (the headless table and the A/B screen alike)
OP_DELTA = "Δ (B−A)"


def medians_note(result: dict) -> str:
    """Where the sides' median tok/s put B ahead of A (or behind) and the verdict's Δ says the other
    way, why both hold, as a phrase; "" where they agree or a side is unmeasured. Each side's median
    is over its own windows; Δ pairs each window of B with the A window beside it (and a stop part
    way, esc or Ctrl+C, leaves a window of A unpaired)."""
    a, b = (result.get(side, {}).get("tok_per_s") for side in ("a", "b"))
    delta = result.get("delta_pct")
    if a is None or b is None or delta is None or (b - a) * delta >= 0:
        return ""
    return (f"the sides' medians put B {'ahead of' if b > a else 'behind'} A; Δ pairs each B window with "
            f"the A window beside it, which a host's drift moves alike")


def when(result: dict) -> str:
    """When the turns ran, as a phrase: "during the generation", or "after the generation, …"."""
    during = str(result.get("during", "?"))
    return f"during {during}" if during == "the generation" else during


def window_count(result: dict) -> str:
    """The windows each side ran, as the sides' table counts them: "4 windows of 64 steps a side", or,
    stopped mid-way (Ctrl+C, esc) with A one window ahead, each side's count and how many are paired."""
    na, nb = (result.get(side, {}).get("windows", 0) for side in ("a", "b"))
    steps = result.get("steps_per_window")
    if na == nb:
        return f"{result.get('windows_per_side')} windows of {steps} steps a side"
    return f"windows of {steps} steps, {na} of A and {nb} of B ({min(na, nb)} paired)"


def table(result: dict) -> list[str]:
    """The A/B as lines of text (the headless report; the dashboard draws the same numbers)."""
    if "unavailable" in result:
        return [f"A/B {result.get('what', '?')}: unavailable: {result['unavailable']}"]
    a, b = result["a"], result["b"]
    labels = [f"A running plan ({result['launches'][0]})", f"B {result['what']} ({result['launches'][1]})"]
    w = max(26, *(len(x) + 2 for x in labels))  # a GEMV spec's name is long: the columns stay in line

    def row(label, s):
        if not s.get("windows"):
            return f"{label:<{w}}{'—':>13}"
        return (f"{label:<{w}}{s['tok_per_s']:>13.1f}{s['tok_per_s_min']:>10.1f} - {s['tok_per_s_max']:<9.1f}"
                f"{s['step_ns'] / 1e6:>16.3f}{s['windows']:>9}")

    t = result["tokens"]
    lines = [f"A/B {result['what']} ({result['about']}) on {result['backend']}: {window_count(result)}, "
             f"order {result['order']}"
             + (f", {when(result)}" if result.get("during") else ""),
             f"{'side':<{w}}{'median tok/s':>13}{'range':>22}{'median ms/step':>16}{'windows':>9}",
             row(labels[0], a), row(labels[1], b),
             f"{VERDICT_LABEL}: {result['verdict']}",
             *filter(None, [medians_note(result)]),
             (f"tokens agree at all {t['checks']} turn starts" if t["agree"] == t["checks"] else
              f"tokens DIFFER at {t['checks'] - t['agree']} of {t['checks']} turn starts (first at ctx_len "
              f"{t['first_mismatch']['ctx_len']}: A {t['first_mismatch']['a']}, B {t['first_mismatch']['b']})")]
    if result.get("incomplete"):
        lines.append(f"incomplete: {result['incomplete']}")
    if result["per_op"]:
        lines.append(f"{'op':<16}{'A':>12}{'B':>12}{OP_DELTA:>12}{'Δ %':>8}   ({result['per_op_method']} profile window a side)")
        for r in result["per_op"]:
            def ns(x):
                return "—" if x is None else f"{x / 1e3:.1f} µs"
            pct = "—" if r["delta_pct"] is None else f"{r['delta_pct']:+.1f}"
            d = "—" if r["delta_ns"] is None else f"{r['delta_ns'] / 1e3:+.1f} µs"
            lines.append(f"{r['op']:<16}{ns(r['a_ns']):>12}{ns(r['b_ns']):>12}{d:>12}{pct:>8}")
    else:
        lines.append(result["per_op_method"])
    return lines
