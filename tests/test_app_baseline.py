"""`tfdash open B.json --baseline A.json`: the kernel table's Δ columns (and sorting by them), the
drill-down with both sides, the roofline pane with both step times, a picture of the main screen,
and the one-line refusals. A is the recorded fixture (the default plan), B the same recorded run
of the plan with fused_rope=False (a q/k norm + RoPE launch per layer)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from fixtures.appkit import SNAPSHOT, build_snapshot, isolated_config, sync  # noqa: F401  (fixture)

from tfdash.app.main import open_main, snapshot_app
from tfdash.app.widgets.kernel_table import KernelTable
from tfdash.errors import TfdashError
from tfdash.profiling.diff import compare
from tfdash.profiling.export import load_snapshot, write_snapshot

SIZE = (160, 48)


@pytest.fixture(scope="module")
def unfused(tmp_path_factory):
    return write_snapshot(build_snapshot(fused_rope=False), tmp_path_factory.mktemp("base") / "unfused.json")


def fake_tilelang(family: str) -> str:
    return f"def {family}_kernel(dims):\n    ...  # a stand-in\n"


def make_app(path, **kw):
    return snapshot_app(path, baseline=SNAPSHOT, theme="tfdash-dark", tilelang_source=fake_tilelang, **kw)


def screen_text(app) -> str:
    """The screen as plain text, as a user sees it."""
    import io

    from rich.console import Console

    w, h = app.size
    c = Console(width=w, height=h, file=io.StringIO(), force_terminal=True, record=True, legacy_windows=False)
    c.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return c.export_text()


def plain(widget) -> str:
    return str(widget.render())


def cells(table, key: str) -> list[str]:
    """The column's cells, top to bottom, as shown."""
    return [str(c) for c in table.get_column(key)]


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()


def signed(ns: float) -> str:
    from tfdash.app.model import fmt_ns

    return ("+" if ns > 0 else "") + fmt_ns(ns)


@sync
async def test_delta_columns_sort_and_drill_down(isolated_config, unfused):
    a, b = load_snapshot(SNAPSHOT), load_snapshot(unfused)
    expected = {r.label: r for r in compare(a, b, group="op").rows}
    messages = []
    app = make_app(unfused)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        kt = app.screen.query_one(KernelTable)
        t = kt.table
        headers = [str(c.label) for c in t.columns.values()]
        assert headers[-3:] == ["baseline", "Δ", "Δ %"]
        labels = cells(t, "label")
        deltas = dict(zip(labels, cells(t, "delta")))
        base = dict(zip(labels, cells(t, "base")))
        # each op's Δ is `tfdash diff`'s: B − A of the two files
        for op in ("gate_up", "lm_head", "attention", "qkv_proj"):
            assert deltas[op] == signed(expected[op].delta_ns)
        # the added op's too: its whole time, diff's Δ, so the column adds up to the kernel sums' Δ
        assert base["qk_norm_rope"] == "added" and deltas["qk_norm_rope"] == signed(expected["qk_norm_rope"].delta_ns)
        caption = plain(app.screen.query_one("#kernel-caption"))
        assert "vs snapshot-1.7b.json" in caption
        assert "Δ" in plain(app.screen.query_one("#kernel-total"))

        await pilot.press("s")  # measured -> Δ
        await settle(pilot)
        assert "sort Δ ▼" in plain(app.screen.query_one("#kernel-caption"))
        shown = [expected[x].delta_ns for x in cells(t, "label")]
        assert shown == sorted(shown, reverse=True) and cells(t, "base")[0] == "added"  # the most added time
        await pilot.press("S")
        await settle(pilot)
        shown = [expected[x].delta_ns for x in cells(t, "label")]
        assert shown == sorted(shown) and cells(t, "base")[-1] == "added"
        await pilot.press("s")  # Δ %: an added row has none, so it goes last either way
        await settle(pilot)
        assert "sort Δ % " in plain(app.screen.query_one("#kernel-caption")) and cells(t, "base")[-1] == "added"

        # the drill-down of attention: this run's numbers and the baseline's, per instance too
        await pilot.press("slash", *"attention", "enter")  # filter to the op, back in the table
        await settle(pilot)
        assert cells(t, "label") == ["attention"]
        await pilot.press("enter")
        await settle(pilot)
        drills = {id(m): m for m in messages if isinstance(m, KernelTable.Drill)}  # seen once per bubble
        assert [m.row.label for m in drills.values()] == ["attention"]
        summary = plain(app.screen.query_one("#drill-summary"))
        d = expected["attention"]
        assert "baseline snapshot-1.7b.json" in summary and "kernel attn_rope_decode" in summary
        assert f"Δ {signed(d.delta_ns)} (" in summary
        inst = app.screen.query_one("#instances-table")
        assert [str(c.label) for c in inst.columns.values()][-2:] == ["baseline", "Δ"]
        roles = cells(inst, "role")
        by_role = {k.role: k for k in a.kernels}
        assert len(roles) == 28
        from tfdash.app.model import fmt_ns

        assert cells(inst, "base") == [fmt_ns(by_role[r].measured_p50_ns) for r in roles]


@sync
async def test_an_added_op_says_so_in_the_drill_down(isolated_config, unfused):
    app = make_app(unfused)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"qk_norm", "enter")
        await settle(pilot)
        assert cells(app.screen.query_one(KernelTable).table, "label") == ["qk_norm_rope"]
        await pilot.press("enter")
        await settle(pilot)
        assert "not in the baseline (added)" in plain(app.screen.query_one("#drill-summary"))


@sync
async def test_the_other_way_round_the_fused_launches_are_baseline_only(isolated_config, unfused):
    app = snapshot_app(SNAPSHOT, baseline=unfused, tilelang_source=fake_tilelang)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        caption = plain(app.screen.query_one("#kernel-caption"))
        assert "vs unfused.json" in caption and "baseline only: qk_norm_rope" in caption


@sync
async def test_the_roofline_pane_shows_both_steps(isolated_config, unfused):
    a, b = load_snapshot(SNAPSHOT), load_snapshot(unfused)
    app = make_app(unfused)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = plain(app.screen.query_one("#roofline-stats"))
        from tfdash.app.model import fmt_ns

        pct = 100 * (b.roofline.measured_step_ns - a.roofline.measured_step_ns) / a.roofline.measured_step_ns
        assert fmt_ns(b.roofline.measured_step_ns) in text and fmt_ns(a.roofline.measured_step_ns) in text
        assert f"Δ +{pct:.1f} % vs it" in text
        assert "unfused.json vs snapshot-1.7b.json" in plain(app.screen.query_one("#topbar-state"))


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
@sync
async def test_the_delta_columns_stay_on_screen_in_a_small_terminal(isolated_config, unfused, size):
    # the table's own columns took the width first and pushed baseline, Δ and Δ % past the pane's edge
    gate_up = {r.label: r for r in compare(load_snapshot(SNAPSHOT), load_snapshot(unfused), group="op").rows}["gate_up"]
    app = make_app(unfused)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
    header = next(x for x in lines if "│ op " in x and "measured ▼" in x)
    row = next(x for x in lines if "│ gate_up " in x)
    assert re.search(r"baseline +Δ +Δ %  ", header) and "bound by" not in header, header  # bound by gives way
    assert f"{signed(gate_up.delta_ns)}  {gate_up.delta_pct:.1f} %" in row, row


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
@sync
async def test_the_baseline_is_named_and_the_step_sum_breaks_between_pairs(isolated_config, tmp_path, size):
    # at 80x24 the caption wrapped its baseline's name out of its one row ("… 23 launches  vs"), at
    # 100x30 the timing after it ("….json  ·"), and the Σ line broke "baseline" from its value
    from tfdash.app.model import fmt_ns
    from tfdash.profiling.snapshot import TimingInfo

    snap = load_snapshot(SNAPSHOT)
    own = dataclasses.replace(snap, timing=TimingInfo(method="windows", auto_window=True), profile_windows=1)
    shown = write_snapshot(own, tmp_path / "qwen3-1.7b-20251206-043100.json")
    base = write_snapshot(build_snapshot(fused_rope=False), tmp_path / "qwen3-1.7b-20251206-043207.json")
    app = snapshot_app(shown, baseline=base, theme="tfdash-dark", tilelang_source=fake_tilelang)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        lines = [x.strip("│ ") for x in screen_text(app).splitlines()]
    caption = next(x for x in lines if x.startswith("group op "))
    named = caption.rpartition("  vs ")[2]  # the whole name, else its tail after an ellipsis
    cut = named.startswith("…") and base.name.endswith(named[1:]) and len(named) >= 12
    assert named == base.name or cut, caption
    at = next(i for i, x in enumerate(lines) if x.startswith("Σ step"))
    total = lines[at:at + 2]
    mine, theirs = load_snapshot(shown).kernels, load_snapshot(base).kernels
    pairs = [f"predicted {fmt_ns(sum(k.predicted_ns for k in mine))}",
             f"kernels measured {fmt_ns(sum(k.measured_p50_ns for k in mine))}",
             f"baseline {fmt_ns(sum(k.measured_p50_ns for k in theirs))}"]
    assert all(any(p in x for x in total) for p in pairs), total


def test_main_screen_with_a_baseline(isolated_config, unfused, snap_compare):
    assert snap_compare(make_app(unfused), terminal_size=SIZE, run_before=settle)


@sync
async def test_a_baseline_from_the_checkpoint_in_another_folder_is_taken(isolated_config, tmp_path, capsys,
                                                                         monkeypatch):
    """The same model and dtype recorded from a checkpoint moved to another folder: its model's name
    (the folder's) differed, and --baseline and the picker (b) refused it as another run; it
    compares, the picker saying "✓ same shape and dtype" (what is compared), and the Δ columns come."""
    snap = load_snapshot(SNAPSHOT)
    meta = dataclasses.replace(snap.meta, model={**snap.meta.model, "name": "Qwen3-1.7B-moved"},
                               checkpoint="/elsewhere/Qwen3-1.7B-moved")
    base = write_snapshot(dataclasses.replace(snap, meta=meta), tmp_path / "moved.json")
    assert open_main([str(SNAPSHOT), "--baseline", str(base)]) == 0  # stdout is not a terminal: the summary
    out = capsys.readouterr().out
    assert "against the baseline" in out and "aligned by role" in out, out
    monkeypatch.chdir(tmp_path)  # the export directory the picker lists
    app = snapshot_app(SNAPSHOT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        picker = screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
    assert [line for line in picker.splitlines() if "moved.json" in line and "✓ same shape and dtype" in line], picker
    assert "vs moved.json" in text and "Δ %" in text, text


def test_refusals_are_one_line(isolated_config, unfused, tmp_path):
    snap = load_snapshot(SNAPSHOT)
    other = write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, dtype="float16")),
                           tmp_path / "fp16.json")
    with pytest.raises(TfdashError, match=r"--baseline fp16.json is another run .*dtype: float16 vs bfloat16"):
        open_main([str(unfused), "--baseline", str(other)])
    bigger = {**snap.meta.model, "name": "qwen3-big", "hidden_size": 4096, "num_layers": 36, "vocab_size": 1}
    big = write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, model=bigger)),
                         tmp_path / "big.json")
    with pytest.raises(TfdashError, match=r"model name: qwen3-big vs qwen3-1.7b; .*; and 1 more\); `tfdash diff"):
        open_main([str(unfused), "--baseline", str(big)])  # as many differences as diff counts, not three
    with pytest.raises(TfdashError, match="--baseline .*nope.json: no such snapshot file"):
        open_main([str(unfused), "--baseline", str(tmp_path / "nope.json")])
    cut = tmp_path / "cut.json"
    cut.write_text(SNAPSHOT.read_text()[:500])
    with pytest.raises(TfdashError, match="cut.json: not valid JSON"):
        open_main([str(unfused), "--baseline", str(cut)])


@sync
async def test_the_header_names_an_export_folders_snapshot_by_its_folder(isolated_config, tmp_path):
    """`tfdash open run1/snapshot.json` said "snapshot · snapshot.json" in the header (every
    `--headless --export DIR` file has that name), while its baseline beside it read
    "run2/snapshot.json": both are named DIR/snapshot.json, as the picker and diff name them."""
    import shutil

    for d in ("run1", "run2"):
        (tmp_path / d).mkdir()
        shutil.copy(SNAPSHOT, tmp_path / d / "snapshot.json")
    app = snapshot_app(tmp_path / "run1" / "snapshot.json", baseline=tmp_path / "run2" / "snapshot.json",
                       theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.source_label == "run1/snapshot.json vs run2/snapshot.json"
        top = app.screen.query_one("#topbar-state").render()
    assert "snapshot · run1/snapshot.json vs run2/snapshot.json" in str(top), str(top)


@sync
async def test_two_snapshots_of_one_name_are_named_by_the_folders_that_differ(isolated_config, tmp_path,
                                                                              monkeypatch):
    """`tfdash open dashboard-after-engine/snapshot-h200.json --baseline dashboard/snapshot-h200.json`
    said "snapshot-h200.json vs snapshot-h200.json"; a baseline picked (b) from another folder under
    the shown file's name read alike. Each is named with the folders that tell the two apart."""
    import shutil

    from tfdash.app.messages import BaselineChosen

    for d in ("dashboard", "dashboard-after-engine", "exports"):
        (tmp_path / "s3" / d).mkdir(parents=True)
        shutil.copy(SNAPSHOT, tmp_path / "s3" / d / "snapshot-h200.json")
    after, before = (tmp_path / "s3" / d / "snapshot-h200.json" for d in ("dashboard-after-engine", "dashboard"))
    app = snapshot_app(after, baseline=before, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        top = str(app.screen.query_one("#topbar-state").render())
    assert "dashboard-after-engine/snapshot-h200.json vs dashboard/snapshot-h200.json" in top, top

    monkeypatch.chdir(tmp_path)
    messages = []
    app = snapshot_app(after, theme="tfdash-dark", export_dir=tmp_path / "s3" / "exports")
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("enter")  # the picker's one row: exports/snapshot-h200.json
        await settle(pilot)
        top = str(app.screen.query_one("#topbar-state").render())
    assert "dashboard-after-engine/snapshot-h200.json vs exports/snapshot-h200.json" in top, top
    assert {m.label for m in messages if isinstance(m, BaselineChosen)} == {"exports/snapshot-h200.json"}


@sync
async def test_a_baseline_without_kernel_times_says_so(isolated_config, tmp_path, monkeypatch):
    """A snapshot saved without a profile window compares (same shape and dtype) but has no kernel
    times: the picker offered it as "✓ same shape and dtype" and the table then showed a "—" in every
    Δ without a word of why (`tfdash diff` says it)."""
    from test_app_compare import rows

    monkeypatch.chdir(tmp_path)
    snap = load_snapshot(SNAPSHOT)
    bare = dataclasses.replace(snap, kernels=tuple(dataclasses.replace(k, measured_p50_ns=None, measured_p90_ns=None)
                                                   for k in snap.kernels))
    write_snapshot(bare, tmp_path / "bare.json")
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark", tilelang_source=fake_tilelang)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        [listed] = rows(app.screen.query_one("#picker-table"))
        assert listed[0] == "bare.json" and listed[-1] == "same shape and dtype, not profiled"
        await pilot.press("enter")
        await settle(pilot)
        caption = plain(app.screen.query_one("#kernel-caption"))
    assert "vs bare.json" in caption and "baseline not profiled: no Δ" in caption, caption


@sync
async def test_at_80_columns_the_header_keeps_both_runs_names_ends(isolated_config, tmp_path):
    """Two kept runs' names ("tfdash-qwen3-tiny-20261207-014529.json vs ...-014457.json") were
    wider than an 80-column header, which clipped them at the right edge: the baseline's timestamp,
    what tells one kept run from the next, was cut off. Each name now keeps its end after "…"."""
    import shutil

    a, b = tmp_path / "tfdash-qwen3-1.7b-20261207-014457.json", tmp_path / "tfdash-qwen3-1.7b-20261207-014529.json"
    shutil.copy(SNAPSHOT, a)
    shutil.copy(SNAPSHOT, b)
    app = snapshot_app(b, baseline=a, theme="tfdash-dark", tilelang_source=fake_tilelang)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        top = screen_text(app).splitlines()[0]
        await pilot.press("enter")  # the drill-down's header too
        await pilot.pause()
        await pilot.pause()
        drill_top = screen_text(app).splitlines()[0]
    for line in (top, drill_top):
        assert "snapshot · …" in line and line.rstrip().endswith("014457.json"), line
        assert "014529.json vs …" in line, line


@sync
async def test_the_drill_downs_baseline_line_wraps_between_its_pairs(isolated_config, unfused):
    """The drill-down's baseline line was one run of text wrapped at the edge, so at 80 columns
    "predicted" ended a line and its value began the next, and at 120 "Δ +4.4 µs (+1.3" left its
    "%)" alone below: it now wraps between label-value pairs, as the line above it does."""
    for width in (80, 96, 104, 112, 120, 136):
        app = make_app(unfused)
        async with app.run_test(size=(width, 30)) as pilot:
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
            text = screen_text(app)
        summary = text[:text.index("╭─ instances")].splitlines()[1:]
        assert any(line.lstrip().startswith("baseline ") for line in summary), summary
        for line in summary:
            words = line.split()
            assert words and words[-1] not in ("predicted", "measured", "Δ", "baseline"), (width, summary)
            assert not line.lstrip().startswith(("%)", "µs", "ms")), (width, summary)


@sync
async def test_the_pickers_refusal_names_the_command_that_has_force(isolated_config, tmp_path, monkeypatch):
    """Choosing a float16 run as the baseline of a bfloat16 one said "--force compares them by op",
    an option the dashboard does not have: it names `tfdash diff --force`, as --baseline's refusal does."""
    monkeypatch.chdir(tmp_path)
    snap = load_snapshot(SNAPSHOT)
    write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, dtype="float16")),
                   tmp_path / "fp16.json")
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark", tilelang_source=fake_tilelang)
    said = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))[1]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")  # fp16.json is the picker's only row
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        text = " ".join(screen_text(app).split())
    refusal = next(s for s in said if "different runs" in s)
    assert "`tfdash diff --force` compares them by op" in refusal, refusal
    assert "dtype: float16 vs bfloat16" in refusal, refusal
    assert "; --force" not in text, text


async def drill_l5(unfused, size) -> tuple[str, list[str], str]:
    """Against the unfused baseline, grouped by layer, L5's drill-down: its summary, its instances'
    roles and the instances pane's bottom border, as shown."""
    app = snapshot_app(SNAPSHOT, baseline=unfused, theme="tfdash-dark", tilelang_source=fake_tilelang)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("g", "g")  # op -> family -> layer
        await settle(pilot)
        await pilot.press("slash", *"L5", "enter")
        await settle(pilot)
        assert cells(app.screen.query_one(KernelTable).table, "label") == ["L5"]
        await pilot.press("enter")
        await settle(pilot)
        r = app.screen.query_one("#instances").region
        return (plain(app.screen.query_one("#drill-summary")), cells(app.screen.query_one("#instances-table"), "role"),
                screen_text(app).splitlines()[r.bottom - 1][r.x:r.right])


@sync
async def test_a_layers_drill_down_names_the_launch_only_the_baseline_has(isolated_config, unfused):
    """Grouped by layer against the unfused baseline, L5's Δ counts the baseline's L5.qk_norm_rope
    (as `tfdash diff --group layer` does), but the instances list only this run's five launches,
    whose Δs did not add up to it and nothing said why. The instances' border names the launch
    only the baseline has and its Δ, so the two add up; in a narrow pane, a shorter form, its Δ whole."""
    from tfdash.app.model import fmt_ns

    b = load_snapshot(unfused)
    layer = {r.label: r for r in compare(b, load_snapshot(SNAPSHOT), group="layer").rows}["L5"]
    gone = fmt_ns(-{k.role: k for k in b.kernels}["L5.qk_norm_rope"].measured_p50_ns)
    summary, roles, bottom = await drill_l5(unfused, SIZE)
    assert f"Δ {signed(layer.delta_ns)} (" in summary, summary
    assert roles == [f"L5.{op}" for op in ("qkv_proj", "attention", "o_proj", "gate_up", "down")], roles
    assert f"baseline only: L5.qk_norm_rope Δ {gone}" in bottom, bottom
    _, _, bottom = await drill_l5(unfused, (80, 24))
    assert re.search(rf"baseline only: .*{re.escape(gone)} ─", bottom), bottom


@sync
async def test_a_tall_drill_down_summary_fits_80x24_without_scrolling_the_screen(isolated_config, unfused):
    """At 80x24 a layer's summary against a baseline whose kernels changed wraps to nine rows; with
    the panes' and the tabs' least heights the screen ran past 24 rows: it scrolled (a scrollbar in
    the footer's row), its last row was hidden and the summary, wrapped for the screen's width, was
    cut inside a pair ("measured 54.4" / "µs"). The tabs give up rows first; it fits."""
    from tfdash.app.model import fmt_ns

    app = snapshot_app(SNAPSHOT, baseline=unfused, theme="tfdash-dark", tilelang_source=fake_tilelang)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g", "g", "slash", *"L5", "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        r = app.screen.query_one("#drill-summary").region
        lines = screen_text(app).splitlines()
    base = {k.role: k for k in load_snapshot(unfused).kernels}
    shown = lines[r.y:r.bottom]
    assert r.width == 80 and r.bottom <= 22, r  # no scrollbar beside it; the panes, tabs and footer below
    assert "gemv_down_residual" in shown[-1] and "q Quit" in lines[-1] and "▇" not in lines[-1], lines
    measured = fmt_ns(sum(base[f"L5.{op}"].measured_p50_ns for op in ("qkv_proj", "qk_norm_rope", "attention",
                                                                         "o_proj", "gate_up", "down")))
    assert any(f"measured {measured}" in line for line in shown), shown
