"""The snapshot is the app's whole contract: a live CPU run with several profile windows, saved
and opened as `tfdash open` opens it, shows the same ctx_len sweep and kernel rows; a run on a
non-default plan variant (a non-boolean option among them) rebuilds exactly that plan."""

from __future__ import annotations

import dataclasses
import html
import re

import pytest
import torch
from fixtures.appkit import isolated_config, sync  # noqa: F401  (fixture)
from profiling_support import MICRO

from tfdash.app import drill_model
from tfdash.app.main import snapshot_app
from tfdash.app.model import group_rows
from tfdash.engine import Engine
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import Runtime
from tfdash.engine.tokenizer import StandInTokenizer
from tfdash.engine.weights import load_weights
from tfdash.profiling import probe
from tfdash.profiling.export import load_snapshot, write_snapshot
from tfdash.profiling.session import Session
from tfdash.profiling.snapshot import VERSION

TARGET = dataclasses.replace(probe.CPU, name="cpu-test", bandwidth=10e9, source="test: 10 GB/s")
VARIANT = dict(fused_rope=False, attn_kv_early=False, gemv_blocks_per_sm={"gate_up": 1, "down": 2})


def engine(**options) -> Engine:
    plan = build_plan(MICRO, "float32", capacity=512, **options)
    rt = Runtime(plan, load_weights(MICRO, None, torch.float32, "cpu", 0), "cpu")
    return Engine(MICRO, plan, rt, StandInTokenizer(MICRO.vocab_size), "random", "cpu", "torch-eager")


def screen_text(app) -> str:
    runs = re.findall(r"<text[^>]*>(.*?)</text>", app.export_screenshot(), flags=re.S)
    return html.unescape(" ".join(runs)).replace("\xa0", " ")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A live run with four profile windows at different ctx_len, saved as `--save` would."""
    s = Session(engine(), "w1 w2 w3", 200, target=TARGET, nvml=False, ignore_eos=True,
                profile_every=45, profile_steps=4)
    s.run()
    path = tmp_path_factory.mktemp("snap") / "run.json"
    write_snapshot(s.snapshot(), path)
    return s, s.snapshot(), path


def test_the_snapshot_keeps_every_window_and_the_plan_options(recorded):
    session, live, path = recorded
    snap = load_snapshot(path)
    assert snap.version == VERSION >= 3
    assert len(session.windows) >= 3
    assert [w.ctx_len for w in snap.windows] == [w.ctx_len for w in session.windows]
    assert len({w.ctx_len for w in snap.windows}) == len(snap.windows)
    for rec, win in zip(snap.windows, session.windows):
        assert rec.kernel_ns == tuple(win.p50(i) for i in range(len(win.launch_ns)))
        assert rec.step_ns == win.step_p50_ns and rec.steps == win.steps
    assert snap.meta.plan_options["capacity"] == 512 and snap.meta.plan_options["fused_rope"] is True
    assert snap == live


@sync
async def test_open_shows_the_live_runs_sweep_and_kernel_rows(isolated_config, recorded):
    session, live, path = recorded
    app = snapshot_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        from tfdash.app.widgets.kernel_table import KernelTable

        rows = app.screen.query_one(KernelTable).rows
        want = group_rows(live.kernels, "op")
        assert sorted((r.label, r.measured) for r in rows) == sorted((r.label, r.measured) for r in want)
        await pilot.press("enter")
        await pilot.pause()
        members = app.screen.row.members
        from textual.widgets import Static

        caption = app.screen.query_one("#sweep-caption", Static)
        text = str(caption.render())  # the pane's text, before it wraps to the pane's width
        assert "measured" in screen_text(app)
    # The sweep's measured points: one per window the live session ran, each at its ctx_len; past
    # CAPTION_POINTS the caption names the first and the last and how many (the chart draws them all).
    from tfdash.app.screens.drill import CAPTION_POINTS

    points = [f"{sum(w.p50(i) for i in members) / 1e3:,.1f} µs @ {w.ctx_len:,}" for w in session.windows]
    assert len(points) >= 3
    named = points if len(points) <= CAPTION_POINTS else [points[0], points[-1], f"({len(points)} points)"]
    missing = [p for p in named if p not in text]
    assert not missing, f"sweep points not on the screen: {missing} in {text!r}"


@pytest.fixture(scope="module")
def variant(tmp_path_factory):
    """A short run on a non-default plan (a non-boolean option among its options), saved."""
    eng = engine(**VARIANT)
    s = Session(eng, "w1 w2", 8, target=TARGET, nvml=False, ignore_eos=True)
    s.run()
    path = tmp_path_factory.mktemp("variant") / "variant.json"
    write_snapshot(s.snapshot(), path)
    return eng, path


@sync
async def test_the_drill_down_rebuilds_the_variant_plan(isolated_config, variant):
    eng, path = variant
    app = snapshot_app(path, tilelang_source=lambda fam: "# stand-in\n")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"gate_up", "enter", "enter")
        await pilot.pause()
        assert app.screen.row.label == "gate_up"
        text = screen_text(app)
        operands = app.screen.query_one("#operands-table")
        assert operands.row_count > 0
    assert "could not be rebuilt" not in text and "no step plan" not in text
    gate_up = next(la for la in eng.plan.launches if la.op == "gate_up")
    assert gate_up.kernel.endswith("_b1") and gate_up.dims["blocks_per_sm"] == 1  # the variant's own kernel


def test_a_plan_variant_rebuilds_exactly(variant):
    eng, path = variant
    snap = load_snapshot(path)
    assert snap.meta.plan_options["gemv_blocks_per_sm"] == {"gate_up": 1, "down": 2}
    plan = drill_model.plan_of(snap)
    assert plan is not None and plan.to_dict() == eng.plan.to_dict()
    assert plan.to_dict() != build_plan(MICRO, "float32", capacity=512).to_dict()
    assert build_plan(MICRO, **snap.meta.plan_options).to_dict() == eng.plan.to_dict()


def test_options_recorded_before_a_knob_changed_rebuild_the_plan_that_ran(variant):
    """A snapshot recorded before o_proj_trigger_first, attn_k_apart, attn_merge_early and
    attn_trigger_at existed ran o_proj triggering after its grid dependency, attention norming k
    apart, merging late and letting o_proj launch at its grid dependency, and
    recorded down_smem_prefetch=False: it rebuilds that plan, not today's default (unfused, k_apart
    changed nothing); one that names a removed option's other value cannot be rebuilt, and says
    so (None)."""
    eng, path = variant
    snap = load_snapshot(path)
    old = dict(snap.meta.plan_options, down_smem_prefetch=False)
    for added in ("o_proj_trigger_first", "attn_merge_early", "attn_trigger_at"):
        del old[added]
    before = dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, plan_options=old))
    plan = drill_model.plan_of(before)
    o = next(la for la in plan.launches if la.op == "o_proj")
    assert o.kernel == "gemv_o_residual_tlate" and "trigger_first" not in o.dims
    # unfused, with the late merge it ran: everything else as the live run's plan
    ran = build_plan(MICRO, "float32", capacity=512, **VARIANT, attn_merge_early=False, o_proj_trigger_first=False,
                     attn_trigger_at="dependency")
    assert plan.to_dict() == ran.to_dict() != eng.plan.to_dict()
    [att] = [la for la in plan.launches if la.op == "attention" and la.layer == 0]
    assert att.kernel == "attn_decode" and "merge_early" not in att.dims and "k_apart" not in att.dims
    for removed in ({"down_smem_prefetch": True}, {"attn_trigger_first": True}, {"fused_rope": True},
                    {"lm_head_q8": True, "lm_head_pick_ahead": False}):  # the int8 head's first pick
        gone = dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, plan_options=dict(old, **removed)))
        assert drill_model.plan_of(gone) is None, removed  # fused and k apart: a plan no longer built


def test_an_older_snapshot_without_options_still_rebuilds_by_search(recorded):
    _, live, _ = recorded
    old = dataclasses.replace(live, meta=dataclasses.replace(live.meta, plan_options=None), windows=(), version=2)
    plan = drill_model.plan_of(old)
    assert plan is not None and [la.role for la in plan.launches] == [k.role for k in live.kernels]


def test_an_older_snapshot_of_an_ab_variant_still_rebuilds_by_search(recorded):
    """A snapshot without recorded options, from before attn_merge_early (its merge late), of a
    run with two knobs of its own off: three flips from today's defaults."""
    _, live, _ = recorded
    ran = build_plan(MICRO, "float32", capacity=512, fused_rope=False, early_residual=False, attn_merge_early=False)
    rows = tuple(dataclasses.replace(live.kernels[0], index=la.index, role=la.role, layer=la.layer, kernel=la.kernel)
                 for la in ran.launches)
    old = dataclasses.replace(live, kernels=rows, meta=dataclasses.replace(live.meta, plan_options=None), windows=())
    plan = drill_model.plan_of(old)
    assert plan is not None and plan.to_dict() == ran.to_dict()


@pytest.mark.parametrize("recorded_as,want", [
    ({"fused_rope": True}, None),  # before o_proj_trigger_first: the fused attention normed k apart
    ({"fused_rope": False}, {"fused_rope": False, "o_proj_trigger_first": False, "attn_merge_early": False, "early_norm": False, "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False,
      "ring_in_graph": False, "attn_ilp": False, "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),
    ({"fused_rope": False, "o_proj_trigger_first": True, "attn_k_apart": True},
     {"fused_rope": False, "o_proj_trigger_first": True, "attn_merge_early": False, "early_norm": False, "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False,
      "ring_in_graph": False, "attn_ilp": False,
      "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),  # unfused: k_apart meant nothing
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_k_apart": False, "attn_trigger_first": False},
     {"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": False, "early_norm": False, "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False,
      "ring_in_graph": False, "attn_ilp": False, "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_k_apart": True}, None),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_trigger_first": True}, None),
    ({"fused_rope": True, "o_proj_trigger_first": True, "down_smem_prefetch": True}, None),
    ({"fused_rope": True, "o_proj_trigger_first": True, "mlp_fused": True}, None),  # the fused MLP, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "o_proj_l2_mb": 24}, None),  # the L2 look-ahead, removed
    ({"fused_rope": True, "o_proj_trigger_first": False, "attn_merge_early": True},
     {"fused_rope": True, "o_proj_trigger_first": False, "attn_merge_early": True, "early_norm": False, "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False,
      "ring_in_graph": False, "attn_ilp": False, "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_cluster": 16}, None),  # the cluster merge, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_kv_smem": True}, None),  # K/V in shared memory, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_signal": True}, None),  # o_proj on a count, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "argmax_in_lm_head": True}, None),  # lm_head feeding, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "oproj_merges": True}, None),  # o_proj merging, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_spin": True}, None),  # pos's block merging, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_rope_warp": True}, None),  # rope a warp a head, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_tagged": True}, None),  # tagged partials, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_tagged": True, "attn_merge_speculate": True}, None),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_once": True}, None),  # arriving once, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_idle_exit": True}, None),  # idle exit, removed
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_head_split": 2}, None),  # the head split, removed
    # the int8 head's pick in its first form, removed (recorded off, or before the ahead form and prefill_rows)
    ({"fused_rope": True, "o_proj_trigger_first": True, "lm_head_q8": True, "lm_head_pick_ahead": False}, None),
    ({"fused_rope": True, "o_proj_trigger_first": True, "lm_head_q8": True}, None),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "lm_head_q8": True, "lm_head_pick_ahead": True},  # the pick's ahead form: the one this version builds
     {"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False, "ring_in_graph": False, "attn_ilp": False,
      "attn_rounds_carry": False, "lm_head_q8": True, "ring_stamps": False}),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "oproj_merges": False},  # recorded while o_proj merging was a variant: attention merged
     {"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False, "ring_in_graph": False, "attn_ilp": False,
      "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "argmax_in_lm_head": False},  # recorded while lm_head feeding was a variant: the argmax launch ran
     {"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False, "ring_in_graph": False, "attn_ilp": False,
      "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True},
     {"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False,
      "ring_in_graph": False, "attn_ilp": False, "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),
    ({"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "ring_in_graph": True, "attn_ilp": True, "attn_merge_spin": False,  # chains interleaved: kept; spin off: dropped
      "attn_merge_tagged": False, "attn_merge_speculate": False,  # recorded while the tagged merge was a variant
      "attn_merge_once": False, "attn_idle_exit": False,  # and arriving once and the idle exit
      "attn_head_split": 1},  # and the head split
     {"fused_rope": True, "o_proj_trigger_first": True, "attn_merge_early": True, "early_norm": True,
      "attn_merge_acq_rel": False, "attn_merge_chunk": 16, "attn_merge_early_group": 4, "attn_trigger_at": "dependency",
      "gate_up_silu": False, "qkv_trigger_first": False, "ring_in_graph": True, "attn_ilp": True,
      "attn_rounds_carry": False, "lm_head_q8": False, "ring_stamps": False}),
])
def test_recorded_options_name_the_plan_that_ran_or_none(recorded_as, want):
    from tfdash.engine.plan_options import recorded_options

    assert recorded_options(recorded_as) == want
