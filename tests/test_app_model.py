"""What the dashboard computes, without a screen: table rows (group, sort, filter), throughput,
the drill-down's plan/operands/sweep, chart ticks, the config file and the bindings table."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fixtures.appkit import SNAPSHOT, build_snapshot, sync

from tfdash.app import bindings, drill_model, model
from tfdash.app.config import Config, config_path, load_config, save_config
from tfdash.app.widgets.chart import nice_ticks
from tfdash.profiling.export import load_snapshot


@pytest.fixture(scope="module")
def snap():
    return load_snapshot(SNAPSHOT)


def test_groups_partition_the_step(snap):
    for group in model.GROUPS:
        rows = model.group_rows(snap.kernels, group)
        members = sorted(i for r in rows for i in r.members)
        assert members == [k.index for k in snap.kernels], group
        assert sum(r.predicted for r in rows) == pytest.approx(sum(k.predicted_ns for k in snap.kernels))
        assert sum(r.measured for r in rows) == pytest.approx(sum(k.measured_p50_ns for k in snap.kernels))
        assert sum(r.share for r in rows) == pytest.approx(sum(k.share for k in snap.kernels))
    op = {r.label: r for r in model.group_rows(snap.kernels, "op")}
    gu = op["gate_up"]
    assert gu.count == 28 and gu.families == ("gemv",) and gu.kernels == ("gemv_gate_up",)
    assert gu.gap == pytest.approx(gu.measured / gu.predicted)
    assert gu.gbps == pytest.approx(gu.bytes / gu.measured)
    with pytest.raises(ValueError):
        model.group_rows(snap.kernels, "bogus")


def test_sort_puts_unmeasured_last_either_way(snap):
    ks = list(snap.kernels)
    ks[5] = replace(ks[5], measured_p50_ns=None, share=None)
    rows = model.group_rows(ks, "none")
    for desc in (True, False):
        out = model.sort_rows(rows, "measured", desc)
        assert out[-1].members == (5,)
        vals = [r.measured for r in out[:-1]]
        assert vals == sorted(vals, reverse=desc)
    labels = [r.label for r in model.sort_rows(rows, "label", False)]
    assert labels == sorted(labels)
    # Ties keep plan order, in both directions.
    counts = model.sort_rows(rows, "count", True)
    assert [r.members[0] for r in counts] == sorted(r.members[0] for r in counts)


def test_the_kernel_column_names_the_kernel_or_how_many_and_sorts_by_it(snap):
    layer = model.group_rows(snap.kernels, "layer")[1]
    assert len(layer.kernels) > 1 and layer.kernel == f"{len(layer.kernels)} kernels"
    rows = model.group_rows(snap.kernels, "op")
    assert {r.label: r.kernel for r in rows}["gate_up"] == "gemv_gate_up"
    names = [r.kernel for r in model.sort_rows(rows, "kernel", False)]
    assert names == sorted(names)


def test_filter_matches_names_families_and_kernels(snap):
    def labels(text):
        return {r.label for r in model.table_rows(snap.kernels, "op", model.DEFAULT_SORT, text)}

    assert labels("GEMV") == {"qkv_proj", "o_proj", "gate_up", "down", "lm_head"}
    assert labels("gemv_down") == {"down"}
    assert model.filter_launches(snap.kernels, "op", "   ") == list(snap.kernels)
    assert labels("no-such-thing") == set()


def test_throughput_numbers(snap):
    t = model.throughput(snap, points=50)
    assert t.tokens == 2048 and t.tok_s_run == pytest.approx(snap.tok_per_s)
    steps = sorted(snap.step_ns)
    assert t.p50_ms == pytest.approx(steps[len(steps) // 2] / 1e6, rel=1e-3)
    assert t.p99_ms >= t.p50_ms
    assert len(t.line_x) == len(t.line_y) == 50
    assert t.line_x == tuple(sorted(t.line_x))
    # tok/s now: the last second of tokens (the snapshot keeps 384 of them, ~0.7 s).
    toks = snap.tokens
    expect = (len(toks) - 1) / ((toks[-1].elapsed_ns - toks[0].elapsed_ns) / 1e9)
    assert t.tok_s_now == pytest.approx(expect)
    empty = replace(snap, tokens=(), step_ns=(), new_tokens=0, wall_ns=0)
    e = model.throughput(empty)
    assert e.tok_s_now is None and e.tok_s_run is None and e.p50_ms is None and e.line_x == ()


def test_formatting():
    assert model.fmt_ns(None) == "—" and model.fmt_ns(850) == "850 ns" and model.fmt_ns(12_345) == "12.3 µs"
    assert model.fmt_ns(1_801_000) == "1.801 ms"
    assert model.fmt_bytes(3.56e9) == "3.56 GB" and model.fmt_bytes(512) == "512 B"
    assert model.fmt_int(0.5) == "0.5" and model.fmt_int(330257.2) == "330,257"
    assert model.fmt_gap(1.234) == "1.23×" and model.fmt_gap(15306.2) == "15,306×"
    assert [model.gap_level(g) for g in (None, 1.2, 2.0, 9.0)] == ["", "good", "fair", "poor"]
    assert model.bar(0.5, 4) == "██  " and model.bar(0, 3) == "   " and model.bar(2, 2) == "██"


def test_nice_ticks():
    assert nice_ticks(0, 2100, 3) == [0, 1000, 2000]
    assert nice_ticks(1.74, 1.85, 3) == [1.75, 1.8, 1.85]
    assert nice_ticks(5, 5) == [5]


def test_plan_rebuilds_from_the_snapshot_and_its_variants(snap):
    plan = drill_model.plan_of(snap)
    assert plan is not None and [la.role for la in plan.launches] == [k.role for k in snap.kernels]
    unfused = build_snapshot(fused_rope=False)  # the A/B baseline: RoPE a launch of its own
    p2 = drill_model.plan_of(unfused)
    assert p2 is not None and len(p2) == len(unfused.kernels) != len(plan)
    both_late = build_snapshot(attn_kv_early=False, early_residual=False)  # two knobs off at once
    p3 = drill_model.plan_of(both_late)
    assert p3 is not None and [la.kernel for la in p3.launches] == [k.kernel for k in both_late.kernels]
    assert "gemv_o_residual_lateres" in p3.kernels() and "attn_rope_decode_late_me" in p3.kernels()
    alien = replace(snap, kernels=tuple(replace(k, role="x" + k.role) for k in snap.kernels))
    assert drill_model.plan_of(alien) is None


def test_sweep_prices_as_analyze_does(snap):
    from tfdash.profiling.analyze import analyze

    plan = drill_model.plan_of(snap)
    target = drill_model.target_of(snap)
    assert target.bandwidth == pytest.approx(4.27e12)
    members = [k.index for k in snap.kernels if k.role.endswith(".attention")]
    xs, ys = drill_model.predicted_sweep(plan, target, members, points=5)
    assert xs == [0, 528, 1056, 1583, 2111]
    for c, y in zip(xs, ys):
        a = analyze(plan, target, c)
        assert y == pytest.approx(sum(r.ideal_ns for r in a.rows if r.launch.index in members))
    assert ys[-1] > ys[0]  # attention reads more KV as the context grows
    # The analyzer at the profiled ctx_len gives a recorded snapshot's own predictions.
    fresh = build_snapshot()
    a = analyze(drill_model.plan_of(fresh), drill_model.target_of(fresh), fresh.roofline.ctx_len)
    assert [round(r.ideal_ns, 1) for r in a.rows] == [k.predicted_ns for k in fresh.kernels]


def test_operand_costs_add_up_to_the_launch_bytes(snap):
    plan = drill_model.plan_of(snap)
    ctx = drill_model.ctx_of(snap)
    for k in snap.kernels[:8]:
        ops = drill_model.operand_costs(plan, [k.index], ctx)
        assert sum(o.read for o in ops) == k.bytes_read and sum(o.written for o in ops) == k.bytes_written
    gu = [k.index for k in snap.kernels if k.role.endswith(".gate_up")]
    ops = {o.role: o for o in drill_model.operand_costs(plan, gu, ctx)}
    assert ops["w"].kind == "weight" and ops["w"].buffers == "L*.w_gu"
    mixed = drill_model.operand_costs(plan, [0, 1, 2], ctx)  # embed + gemv + attention: family.role
    assert all("." in o.role for o in mixed)


def test_measured_points_need_every_member():
    windows = {64: {1: 10.0, 2: 20.0}, 128: {1: 11.0}}
    assert drill_model.measured_points(windows, [1, 2]) == ([64], [30.0])
    assert drill_model.measured_points(windows, [1]) == ([64, 128], [10.0, 11.0])


def test_tilelang_source_follows_the_factory():
    src = drill_model.tilelang_source("gemv")
    assert "def " in src and "tfdash/kernels/gemv.py:" in src
    assert "/work/" not in src.splitlines()[0]  # paths relative to the package root


def test_config_paths(tmp_path, monkeypatch):
    monkeypatch.delenv("TFDASH_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path() == tmp_path / "xdg" / "tfdash" / "config.json"
    monkeypatch.setenv("TFDASH_CONFIG_DIR", str(tmp_path / "mine"))
    assert config_path() == tmp_path / "mine" / "config.json"


@pytest.mark.parametrize("value", ["rel/cfg", ".", "~nobody-here/cfg"])
def test_a_relative_xdg_config_home_is_ignored(tmp_path, monkeypatch, value):
    """The XDG spec ignores a relative $XDG_CONFIG_HOME: the keymap was read from (and saved into)
    a folder of whatever directory the dashboard was started in."""
    from pathlib import Path

    monkeypatch.delenv("TFDASH_CONFIG_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", value)
    assert config_path() == Path.home() / ".config" / "tfdash" / "config.json"


def test_config_round_trip_keeps_unknown_keys(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"theme": "tfdash-light", "keymap": {"pause": "p"}, "future": [1, 2]}))
    cfg = load_config(path)
    assert cfg.theme == "tfdash-light" and cfg.keymap == {"pause": "p"} and cfg.warning is None
    cfg.theme = "tfdash-contrast"
    save_config(cfg)
    assert json.loads(path.read_text()) == {"theme": "tfdash-contrast", "keymap": {"pause": "p"}, "future": [1, 2]}
    assert load_config(tmp_path / "missing.json") == Config(path=tmp_path / "missing.json")


@pytest.mark.parametrize("text,needle", [("{", "not readable JSON"), ("[1]", "expected a JSON object"),
                                         ('{"keymap": {"pause": 1}}', "pause: 1 is not a key"),
                                         ('{"keymap": ["P"]}', "keymap must map"),
                                         ('{"theme": 3}', "theme must be a string")])
def test_bad_config_is_a_warning(tmp_path, text, needle):
    path = tmp_path / "config.json"
    path.write_text(text)
    cfg = load_config(path)
    assert needle in cfg.warning and str(path) in cfg.warning


def test_binding_ids_are_unique_and_documented():
    ids = [b.id for t in (bindings.APP, bindings.MAIN, bindings.TABLE, bindings.DRILL, bindings.HELP) for b in t]
    assert all(ids) and len(ids) == len(set(ids))
    assert {"quit", "pause", "rerun", "profile", "export.snapshot", "export.csv", "export.trace", "export.svg",
            "theme", "help", "table.sort", "table.filter", "table.group", "table.drill", "drill.back",
            "drill.marginal"} <= set(ids)
    for t in (bindings.APP, bindings.MAIN, bindings.TABLE, bindings.DRILL):
        assert all(b.tooltip for b in t)



@sync
async def test_a_chart_with_nan_points_draws():
    """NVML can hand back a NaN; plotext would divide by a NaN range. The point is left out."""
    import math

    from textual.app import App

    from tfdash.app.widgets.chart import Chart, Figure, Line

    class One(App):
        def compose(self):
            yield Chart(id="c")

    app = One()
    async with app.run_test(size=(60, 16)) as pilot:
        c = app.query_one(Chart)
        c.show(Figure(lines=(Line((0.0, 1.0, 2.0), (math.nan, 1262.4, 2229.2)),), hlines=((math.nan, "accent"),),
                      y_from_zero=True))
        await pilot.pause()
        c.show(Figure(lines=(Line((0.0,), (math.nan,)),)))  # nothing finite at all
        await pilot.pause()
        assert c.figure.lines[0].ys[0] != c.figure.lines[0].ys[0]  # the figure keeps what it was given


def test_p90_and_meas_bytes_take_no_place_until_a_launch_has_one(snap):
    """Without p90s (an older snapshot) or counters, neither column is drawn nor walked by `s`."""
    from tfdash.app.widgets.kernel_cells import hidden, next_sort_key

    assert all(k.measured_p90_ns is not None for k in snap.kernels) and hidden(snap.kernels) == {"meas_bytes"}
    assert next_sort_key("measured", hidden(snap.kernels), False) == "p90"
    bare = tuple(replace(k, measured_p90_ns=None) for k in snap.kernels)
    assert hidden(bare) == {"meas_bytes", "p90"}
    assert next_sort_key("measured", hidden(bare), False) == "gap"
    walked, key = [], "label"
    for _ in range(len(model.SORT_KEYS)):
        key = next_sort_key(key, hidden(bare), False)
        walked.append(key)
    assert "p90" not in walked and "meas_bytes" not in walked and "gap" in walked
    rows = model.table_rows(bare, "op", ("measured", True), "")
    assert all(r.p90 is None for r in rows)


def test_a_snapshot_from_an_h100_is_priced_on_its_datasheet(snap):
    """A snapshot that records no target is priced on its own GPU's datasheet: an H100's run is not
    held to the H200's compute peaks or its 4.8 TB/s."""
    from tfdash.profiling.targets import H100_SXM

    bare = replace(snap, target=None, meta=replace(snap.meta, gpu="NVIDIA H100 80GB HBM3"))
    t = drill_model.target_of(bare)
    assert t.datasheet_bandwidth == H100_SXM.datasheet_bandwidth and t.peak_flops == H100_SXM.peak_flops
    assert t.bandwidth == pytest.approx(snap.roofline.ceiling_gbps * 1e9)  # the run's measured ceiling kept
    h200 = replace(bare, meta=replace(snap.meta, gpu="NVIDIA H200"))
    assert drill_model.target_of(h200).datasheet_bandwidth == 4.8e12
