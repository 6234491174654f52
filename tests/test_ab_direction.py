"""Which way the A/B's verdict points: its Δ is B's tok/s against A's in each pair of windows, the
median of the pairs, so + is B faster, as the sides' tok/s columns read. The words beside it say so
(headless and on the A/B screen), and where the sides' medians point the other way from the pairs'
median (a drifting host, or esc leaving a window of A unpaired) a line says why both hold."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401

from tfdash.profiling import ab, ab_result, ab_table


def result_of(a_ms: list[float], b_ms: list[float]) -> dict:
    """The result summarize gives for turns A B A B ... of these step times (ms), no profile windows."""
    side = SimpleNamespace(plan=[], backend="torch-eager")
    turns = []
    for i in range(max(len(a_ms), len(b_ms))):
        for s, ms in (("A", a_ms), ("B", b_ms)):
            if i < len(ms):
                turns.append((s, 64 * len(turns), (int(ms[i] * 1e6),) * 8))
    checks = [(t[1], 7, 7) for t in turns]
    return ab_result.summarize(ab.resolve("tilelang-unfused"), side, side, turns, checks, {})


def test_b_faster_reads_faster_and_plus_in_every_word():
    r = result_of([2.0, 2.0, 2.0], [1.6, 1.6, 1.6])  # B's steps 20 % shorter: 25 % more tok/s
    lines = ab_table.table(r)
    a, b = (float(next(line for line in lines if line.startswith(label)).split(")", 1)[1].split()[0])
            for label in ("A running plan", "B tilelang-unfused"))
    assert b > a  # the median tok/s column: B ahead
    assert r["delta_pct"] > 0
    [verdict] = [line for line in lines if line.startswith(ab_table.VERDICT_LABEL)]
    assert verdict == "B vs A tok/s, median of pairs: variant faster by 25.0 % ± 0.0 %", lines
    assert not ab_table.medians_note(r)
    r = result_of([2.0, 2.0, 2.0], [1.99, 1.96, 2.02])  # within the spread: the Δ shown keeps its sign
    assert r["delta_pct"] > 0 and f"Δ +{r['delta_pct']:.1f} %" in r["verdict"]


def test_medians_the_other_way_from_the_pairs_say_why():
    """A: 1, 2, 3 ms; B: 0.9, 3.5, 2.9 ms. Two of three pairs have B faster (Δ +3.4 %), while B's
    median step (2.9 ms) is longer than A's (2 ms): both true, and said."""
    r = result_of([1.0, 2.0, 3.0], [0.9, 3.5, 2.9])
    assert r["delta_pct"] > 0 and r["b"]["tok_per_s"] < r["a"]["tok_per_s"]
    lines = ab_table.table(r)
    i = next(i for i, line in enumerate(lines) if line.startswith(ab_table.VERDICT_LABEL))
    assert lines[i + 1] == ("the sides' medians put B behind A; Δ pairs each B window with the A window beside "
                            "it, which a host's drift moves alike"), lines
    # esc after A's fourth window: A one ahead, its unpaired window only in A's median
    r = result_of([2.0, 2.0, 1.0, 1.0], [1.9, 1.9, 1.9])
    assert r["delta_pct"] > 0 and r["b"]["tok_per_s"] < r["a"]["tok_per_s"]
    assert "put B behind A" in ab_table.medians_note(r)


@sync
async def test_the_ab_screen_says_the_direction_and_why_the_medians_differ(isolated_config):
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    from tfdash.app.main import snapshot_app
    from tfdash.profiling.export import load_snapshot

    r = {**result_of([1.0, 2.0, 3.0], [0.9, 3.5, 2.9]), "during": "the generation"}
    app = snapshot_app(dataclasses.replace(load_snapshot(SNAPSHOT), ab=(r,)), theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        for _ in range(3):
            await pilot.pause()
        inside = box_lines(screen_text(app), "A/B a plan variant")
    assert f"{ab_table.VERDICT_LABEL}: {r['verdict']}" in inside, inside
    assert any(line.startswith("the sides' medians put B behind A; Δ pairs each B window") for line in inside), inside


def test_the_per_op_delta_header_says_b_minus_a():
    """The per-op table's Δ is B's time less A's (+ is B slower), the other way round from the
    verdict's tok/s: its header says which way, in the headless table."""
    from test_app_compare import recorded_ab

    lines = ab_table.table(recorded_ab())
    [header] = [line for line in lines if line.startswith("op ")]
    assert header.split()[:7] == ["op", "A", "B", "Δ", "(B−A)", "Δ", "%"], header
    added = next(line for line in lines if line.startswith("qk_norm_rope"))  # B only: B's time, +
    assert "+84.6 µs" in added, lines


@sync
async def test_the_ab_screen_ops_header_says_b_minus_a_at_80_columns(isolated_config):
    """On the A/B screen at 80x24 the ops table's Δ header says its direction, whole."""
    from test_app_compare import recorded_ab
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    from tfdash.app.main import snapshot_app
    from tfdash.profiling.export import load_snapshot

    app = snapshot_app(dataclasses.replace(load_snapshot(SNAPSHOT), ab=(recorded_ab(),)), theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        for _ in range(3):
            await pilot.pause()
        inside = box_lines(screen_text(app), "A/B a plan variant")
    [header] = [line for line in inside if line.lstrip().startswith("op ")]
    assert "Δ (B−A)" in header and header.rstrip().endswith("Δ %"), inside
