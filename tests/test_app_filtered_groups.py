"""The kernel table grouped (by layer, op or family) under a filter: a row sums only its launches that
match, a group with none has no row, and the caption, the drill-down and a baseline's Δ say and sum
the same launches. Driven with Pilot on the recorded snapshot (tests/fixtures/snapshot-1.7b.json)."""

from __future__ import annotations

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import make_app, pane_cells, screen_text, settle

from tfdash.app import model
from tfdash.app.model import fmt_ns
from tfdash.profiling.export import load_snapshot

SIZE = (160, 48)


@pytest.fixture(scope="module")
def snap():
    return load_snapshot(SNAPSHOT)


def cells_of(line: str) -> list[str]:
    """The cells of a line's first pane; none for a line outside the panes."""
    return pane_cells(line) if line.count("│") >= 2 else []


def table_lines(text: str, header: str) -> list[list[str]]:
    """The kernel table's rows (cells) under its header line, which starts with `header`."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if cells_of(line)[:1] == [header])
    rows = []
    for line in lines[at + 1:]:
        cells = cells_of(line)
        if not cells or cells[0].startswith("Σ"):
            break
        rows.append(cells)
    return rows


def by_role(snap, role: str):
    return next(k for k in snap.kernels if k.role == role)


@sync
async def test_a_layer_row_filtered_for_lm_head_sums_the_lm_head_alone(isolated_config, snap):
    """The launches outside the layers are embed, lm_head and argmax: filtered for "lm_head", their
    row is the lm_head's one launch and its time (it was the three's sum, count 3), and the caption
    says how many of the step's launches the rows sum."""
    head = by_role(snap, "lm_head")
    outside = [k for k in snap.kernels if k.layer is None]
    assert len(outside) == 3
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", "g", "slash", *"lm_head", "enter")
        await settle(pilot)
        text = screen_text(app)
    [row] = table_lines(text, "layer")
    assert row[:4] == ["outside layers", "1", fmt_ns(head.predicted_ns), fmt_ns(head.measured_p50_ns)], row
    assert f"filter lm_head  1 row · 1 of {len(snap.kernels)} launches match" in text


@sync
async def test_layer_rows_filtered_by_family_sum_only_that_familys_launches(isolated_config, snap):
    """Filtered for "attention", each layer's row is its one attention launch; the launches outside
    the layers (none an attention) leave no row."""
    att = {k.layer: k for k in snap.kernels if k.family == "attention"}
    assert len(att) == 28 and None not in att
    app = make_app()
    async with app.run_test(size=(160, 80)) as pilot:
        await settle(pilot)
        await pilot.press("g", "g", "slash", *"attention", "enter")
        await settle(pilot)
        rows = table_lines(screen_text(app), "layer")
    assert len(rows) == 28 and "outside layers" not in {r[0] for r in rows}
    for label, count, predicted, measured, *_ in rows:
        k = att[int(label[1:])]
        assert (count, predicted, measured) == ("1", fmt_ns(k.predicted_ns), fmt_ns(k.measured_p50_ns)), label


def test_every_grouping_sums_the_matching_launches_only(snap):
    """Whatever the grouping, a filtered row's members are its group's launches that match, and the
    rows together hold every matching launch once."""
    for group in model.GROUPS:
        for text in ("lm_head", "gemv proj", "L3", "attention"):
            rows = model.table_rows(snap.kernels, group, model.DEFAULT_SORT, text)
            kept = model.filter_launches(snap.kernels, group, text)
            assert kept and sorted(i for r in rows for i in r.members) == sorted(k.index for k in kept)
            for r in rows:
                assert all(all(w in model.launch_names(snap.kernels[i], group) for w in text.lower().split())
                           for i in r.members), (group, text, r.label)


@sync
async def test_drilling_into_a_filtered_row_opens_its_matching_launches(isolated_config, snap):
    """⏎ on "outside layers" filtered for lm_head opens the lm_head alone, and the summary says the
    row is the launches matching the filter."""
    head = by_role(snap, "lm_head")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", "g", "slash", *"lm_head", "enter", "enter")
        await settle(pilot)
        text = screen_text(app)
    assert "1 of 3 launches/step  matching lm_head" in text
    assert f"measured {fmt_ns(head.measured_p50_ns)}" in text
    [instances] = [i for i, line in enumerate(text.splitlines()) if "─ instances ─" in line]
    assert [c[0] for c in table_lines("\n".join(text.splitlines()[instances:]), "launch")] == ["lm_head"]


@sync
async def test_against_a_baseline_a_filtered_rows_delta_is_its_matching_launches(isolated_config, tmp_path):
    """With a baseline, a layer row filtered for qkv_proj shows the baseline's qkv_proj of that layer
    and the Δ between the two (not "added", nor the whole layer's Δ)."""
    from fixtures.appkit import build_snapshot

    from tfdash.app.main import snapshot_app
    from tfdash.profiling.export import write_snapshot

    a = load_snapshot(SNAPSHOT)
    b = build_snapshot(fused_rope=False)  # a q/k norm + RoPE launch more per layer
    path = write_snapshot(b, tmp_path / "unfused.json")
    app = snapshot_app(path, baseline=SNAPSHOT, theme="tfdash-dark", tilelang_source=lambda f: "")
    async with app.run_test(size=(160, 80)) as pilot:
        await settle(pilot)
        await pilot.press("g", "g", "slash", *"qkv_proj", "enter")
        await settle(pilot)
        rows = table_lines(screen_text(app), "layer")
        await pilot.press("enter")  # the drill-down's baseline line: the same launches on both sides
        await settle(pilot)
        summary = screen_text(app)
    theirs = by_role(a, f"{rows[0][0]}.qkv_proj")
    assert "not in the baseline" not in summary and f"measured {fmt_ns(theirs.measured_p50_ns)}" in summary, summary
    assert len(rows) == 28
    for row in rows:
        mine, theirs = by_role(b, f"{row[0]}.qkv_proj"), by_role(a, f"{row[0]}.qkv_proj")
        d = mine.measured_p50_ns - theirs.measured_p50_ns
        assert row[1] == "1" and row[-3:-1] == [fmt_ns(theirs.measured_p50_ns), ("+" if d > 0 else "") + fmt_ns(d)], row


def caption_of(app) -> str:
    return str(app.screen.query_one("#operands-caption").render())


@sync
async def test_a_layers_drill_down_names_the_launch_whose_dims_it_shows(isolated_config, snap):
    """A layer's launches have dims of their own: the cost-by-operand caption sums the bytes of all
    five, and the dims under it are one launch's, the one under the cursor, named (they were the
    first launch's, unnamed, under the layer's Σ); ↓ moves to the next launch and its dims."""
    from tfdash.app import drill_model

    plan = drill_model.plan_of(snap)
    qkv, att = (next(la for la in plan.launches if la.role == role) for role in ("L5.qkv_proj", "L5.attention"))
    assert qkv.dims != att.dims
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", "g", "slash", *"L5", "enter", "enter")
        await settle(pilot)
        first = caption_of(app)
        await pilot.press("down")
        await settle(pilot)
        second = caption_of(app)
    n = f"N={qkv.dims['N']} K={qkv.dims['K']}"
    assert " over 5 launches" in first and f"launch L5.qkv_proj: {n}" in first, first
    assert "launch L5.attention: " in second and n not in second, second


@sync
async def test_an_ops_drill_down_shows_its_launches_shared_dims_unnamed(isolated_config):
    """An op's launches share their dims: the caption shows them as the row's, as before."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # gate_up, every layer
        await settle(pilot)
        text = caption_of(app)
    assert "launch L0" not in text and "over 28 launches" not in text and "N=" in text, text
