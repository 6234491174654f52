"""The live A/B of a plan variant, headless on CPU (tfdash.profiling.ab through Session.ab): on
the tiny preset the running plan and fused_rope=False take turns A B A B on one generation, each
side measures its windows, both sides' next tokens agree at every turn, the generation's own
token stream is the one a run without the A/B gives, and the snapshot (and its JSON) carries the
result. Also: after the run, cancelling, a variant that computes something else, and the one-line
refusals."""

from __future__ import annotations

import threading
import time

import pytest
from profiling_support import micro_engine

from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import Runtime
from tfdash.errors import TfdashError
from tfdash.profiling import ab, ab_result, ab_table
from tfdash.profiling.export import dumps_snapshot, loads_snapshot
from tfdash.profiling.messages import ABDone, ABProgress
from tfdash.profiling.probe import CPU
from tfdash.profiling.session import Session

PROMPT = "The GPU"
W, N, P = 3, 8, 4  # windows a side, steps a window, profile steps a side


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest: torch on one thread for the module


@pytest.fixture(scope="module")
def tiny():
    from tfdash.engine import load_engine

    return load_engine(model="qwen3-tiny", device="cpu", capacity=512)


def session(engine, max_new: int) -> Session:
    return Session(engine, PROMPT, max_new, target=CPU, nvml=False, probe_bandwidth=False, ignore_eos=True)


def run_in_thread(s: Session, events: list) -> threading.Thread:
    t = threading.Thread(target=s.run, args=(events.append,))
    t.start()
    while s.snapshot().new_tokens < 2:
        time.sleep(0.005)
    return t


def test_turns_alternate_on_the_generation_and_tokens_agree(tiny):
    events, progress = [], []
    s = session(tiny, 200)
    t = run_in_thread(s, events)
    result = s.ab("tilelang-unfused", windows=W, steps=N, profile_steps=P, progress=progress.append)
    t.join()
    assert "unavailable" not in result, result
    assert result["during"] == "the generation" and "incomplete" not in result
    assert result["order"] == "AB" * W  # interleaved, each side W times
    assert result["a"]["windows"] == result["b"]["windows"] == W == result["windows_per_side"]
    assert len(result["a"]["tok_per_s_windows"]) == W and all(x > 0 for x in result["b"]["tok_per_s_windows"])
    assert result["a"]["steps"] == result["b"]["steps"] == W * N
    assert result["tokens"] == {"checks": 2 * W, "agree": 2 * W, "first_mismatch": None}
    L = tiny.config.num_layers
    assert result["launches"] == [len(tiny.plan), len(tiny.plan) + L]  # a qk_norm_rope launch a layer
    ops = {r["op"]: r for r in result["per_op"]}
    assert ops["qk_norm_rope"]["a_ns"] is None and ops["qk_norm_rope"]["b_launches"] == L
    assert ops["attention"]["a_ns"] > 0 and ops["attention"]["b_ns"] > 0 and result["per_op_method"] == "direct"
    assert result["verdict"] == ab_result.verdict(result["delta_pct"], result["spread_pct"])
    # progress: building, then one line a window (2W turns and 2 profile windows), then done
    phases = [p.phase for p in progress]
    assert phases[0] == "building" and phases[-1] == "done"
    assert [p.done for p in progress if p.phase == "running"] == list(range(1, 2 * W + 3))
    assert all(isinstance(p, ABProgress) for p in progress)
    [done] = [e for e in events if isinstance(e, ABDone)]
    assert done.result == result

    # the generation's stream is what the running plan alone gives: the variant computed the same
    plain = session(tiny, 200)
    plain.run()
    assert [x.token_id for x in s.snapshot().tokens] == [x.token_id for x in plain.snapshot().tokens]
    snap = s.snapshot()
    assert snap.ab == (result,) and snap.new_tokens == 200
    assert loads_snapshot(dumps_snapshot(snap)).ab == (result,)  # exports carry it
    assert "tokens agree at all 6 turn starts" in "\n".join(ab_table.table(result))


def test_an_added_or_removed_ops_delta_is_its_whole_time():
    """The headless A/B's per-op table gave "—" as an added op's Δ, where `tfdash diff` and the
    dashboard's baseline column count its whole time (the side without it counts 0)."""
    from types import SimpleNamespace as NS

    def plan(*ops):
        return NS(launches=[NS(op=op, index=i) for i, op in enumerate(ops)])

    def window(*ns):
        return NS(ok=True, error=None, method="direct", p50=lambda i: ns[i])

    live, var = plan("attention", "old_norm"), plan("attention", "qk_norm_rope", "qk_norm_rope")
    rows, how = ab_result.per_op(live, var, {"A": window(5000.0, 300.0), "B": window(4000.0, 700.0, 800.0)})
    ops = {r["op"]: r for r in rows}
    assert ops["qk_norm_rope"]["a_ns"] is None and ops["qk_norm_rope"]["delta_ns"] == 1500.0
    assert ops["qk_norm_rope"]["delta_pct"] is None  # no A time to take a share of
    assert ops["old_norm"]["b_ns"] is None and ops["old_norm"]["delta_ns"] == -300.0
    assert [r["op"] for r in rows] == ["qk_norm_rope", "attention", "old_norm"]  # by |Δ|, the added ones too
    result = {"what": "v", "about": "", "backend": "torch-eager", "windows_per_side": 1, "steps_per_window": 1,
              "order": "AB", "a": {}, "b": {}, "launches": [2, 3], "verdict": "-",
              "tokens": {"checks": 2, "agree": 2}, "per_op": rows, "per_op_method": how}
    [line] = [x for x in ab_table.table(result) if x.startswith("qk_norm_rope")]
    assert line.split()[1:] == ["—", "1.5", "µs", "+1.5", "µs", "—"], line


def test_after_the_run_it_continues_from_where_it_stopped(tiny):
    s = session(tiny, 24)
    s.run()
    result = s.ab("tilelang-unfused", windows=2, steps=N, profile_steps=0)
    assert result["during"] == "after the generation, from where it stopped"
    assert result["order"] == "ABAB" and result["tokens"]["agree"] == 4
    assert result["per_op"] == [] and "not measured" in result["per_op_method"]
    assert s.snapshot().new_tokens == 24  # the run's own record is untouched


def test_cancel_stops_after_the_window_in_progress(tiny):
    s = session(tiny, 300)
    t = run_in_thread(s, [])
    stop = threading.Event()
    result = s.ab("tilelang-unfused", windows=W, steps=N, profile_steps=P, cancel=stop,
                  progress=lambda p: stop.set() if p.phase == "running" and p.done == 2 else None)
    t.join()
    assert result["incomplete"] == "cancelled" and result["order"].startswith("AB") and len(result["order"]) < 2 * W
    assert s.snapshot().new_tokens == 300  # the generation went on with the running plan


@pytest.mark.parametrize("where", ["between windows", "mid-window"])
def test_a_stopped_generation_marks_the_ab_cancelled_not_ended(tiny, monkeypatch, where):
    """Ctrl+C in `--headless --ab` sets the A/B's cancel and stops the session; the generation
    stops within a step, before the A/B's waiting thread sees the cancel (it looks every 50 ms).
    The window cut short (or the one waiting to start) then said "the generation ended before
    the A/B did", as if the generation had reached its end. A stop asked for is "cancelled"."""
    s = session(tiny, 300)
    t = run_in_thread(s, [])
    if where == "mid-window":
        real = ab.Turn.on_step

        def on_step(self, step_ns):
            real(self, step_ns)
            if self.index == 2 and len(self.step_ns) == 3:  # the third window, three steps in
                s.stop()

        monkeypatch.setattr(ab.Turn, "on_step", on_step)
    result = s.ab("tilelang-unfused", windows=W, steps=N, profile_steps=P,
                  progress=lambda p: s.stop() if where == "between windows" and p.phase == "running"
                  and p.done == 2 else None)
    t.join()
    assert result["incomplete"] == "cancelled", result["incomplete"]
    assert result["order"] == ("AB" if where == "between windows" else "ABA")  # the cut window's steps kept
    assert s.snapshot().new_tokens < 300


def test_cancel_after_the_run_stops_after_the_window_in_progress(tiny):
    """After the generation the windows run on the caller's thread: a cancel set meanwhile (the
    dashboard quitting) stopped nothing until all of them had run. Now the window in progress is
    the last, and what it measured is kept in the result and in the snapshot."""
    s = session(tiny, 24)
    s.run()
    stop = threading.Event()
    result = s.ab("tilelang-unfused", windows=W, steps=N, profile_steps=P, cancel=stop,
                  progress=lambda p: stop.set() if p.phase == "running" and p.done == 2 else None)
    assert result["incomplete"] == "cancelled" and result["order"] == "AB"
    assert result["during"] == "after the generation, from where it stopped"
    assert s.snapshot().ab[-1] == result


def test_the_timeout_holds_after_the_run_too(tiny):
    """After the generation the windows run on the caller's thread, and the timeout was checked only
    once they had all run: a slow A/B there could take as long as it liked. Now it ends at the first
    window boundary past it, marked "timed out", with what it measured."""
    s = session(tiny, 24)
    s.run()
    result = s.ab("tilelang-unfused", windows=W, steps=N, profile_steps=P, timeout=0.5,
                  progress=lambda p: time.sleep(0.6) if p.phase == "running" and p.done == 2 else None)
    assert result["incomplete"] == "timed out" and result["order"] == "AB"
    assert result["during"] == "after the generation, from where it stopped"


def test_cancel_while_the_variant_builds_runs_no_window(tiny):
    s = session(tiny, 24)
    s.run()
    stop = threading.Event()
    progress = []

    def say(p):
        progress.append(p.phase)
        stop.set()  # on the first line: "building"

    result = s.ab("tilelang-unfused", windows=W, steps=N, profile_steps=P, cancel=stop, progress=say)
    assert result["unavailable"] == "cancelled before its first window"
    assert "running" not in progress and s.snapshot().ab == ()


def test_a_variant_that_computes_something_else_is_reported():
    eng = micro_engine(capacity=256)
    var = eng.runtime.variant(build_plan(eng.config, "float32", capacity=256, fused_rope=False), share_state=True)
    plain_step = var.step

    def wrong():
        plain_step()
        var.bufs["tok"].add_(1)  # another function: every B step's token is one off

    var.step = wrong
    eng.runtime.reset([1, 2, 3])
    run = ab.ABRun(eng.runtime, var, ab.resolve("tilelang-unfused"), windows=2, steps=4, profile_steps=0)
    run.run_idle(eng.runtime)
    r = run.result()
    assert r["tokens"]["checks"] == 4 and r["tokens"]["agree"] == 0
    assert r["tokens"]["first_mismatch"]["b"] == r["tokens"]["first_mismatch"]["a"] + 1
    assert "tokens DIFFER at 4 of 4 turn starts" in "\n".join(ab_table.table(r))


def test_a_shared_variant_uses_the_cache_and_state_in_place():
    eng = micro_engine(capacity=128)
    rt = eng.runtime
    var = rt.variant(build_plan(eng.config, "float32", capacity=128, fused_rope=False), share_state=True)
    assert {"tok", "pos", "prompt", "k_cache", "v_cache"} <= var.shared  # the weights are shared anyway
    for name in ("tok", "pos", "prompt", "L0.k_cache", "L0.v_cache", "L0.w_qkv"):  # L0.*_cache: views of those
        assert var.bufs[name].data_ptr() == rt.bufs[name].data_ptr(), name
    assert rt.variant(var.plan).shared == frozenset()  # without share_state: only the weights


def test_refusals_are_one_line(tiny):
    s = session(tiny, 40)
    assert "has not started" in s.ab("tilelang-unfused")["unavailable"]
    t = run_in_thread(s, [])
    r = s.ab("tilelang-unfused")  # 6 x 64 steps a side do not fit in 40 tokens
    t.join()
    # r re-runs 40 tokens again, never 832: the advice is the A/B after the generation, from where it stopped
    assert "steps are left in this generation" in r["unavailable"] and "r re-runs" not in r["unavailable"]
    assert r["unavailable"].endswith("(more than its 40 new tokens: run it once the generation ends, "
                                   "from where it stopped)")
    assert "no plan variant 'nope'" in s.ab("nope")["unavailable"]
    assert "is a tilelang-graph launch setting; this engine is torch-eager" in s.ab("tilelang-nopdl")["unavailable"]
    assert "want OP:KEY=V" in s.ab("bogus:x")["unavailable"]
    eng = micro_engine(capacity=64)
    unfused = Runtime(build_plan(eng.config, "float32", capacity=64, fused_rope=False),
                      {n: eng.runtime.bufs[n] for n, b in eng.plan.buffers.items() if b.kind == "weight"})
    with pytest.raises(TfdashError, match="fused_rope=False.*is the plan already running"):
        ab.build(unfused, ab.resolve("tilelang-unfused"))


@pytest.mark.parametrize("model", ["qwen3-tiny", "qwen3-0.6b", "qwen3-8b"])
def test_a_variant_a_torch_engine_would_run_unchanged_is_refused_there(model):
    """`--ab down:seg=2` (or tilelang-sc24, or tilelang-ringevents) on torch-eager ran 6 + 6 windows
    of the same torch ops and could only say "no difference". TORCH_VISIBLE, the options that change
    the torch spelling's launches or their operands, is checked here against the plans themselves: a
    variant outside it builds the running plan's launches, roles and operands (only tilelang launch
    dims differ, and the stamps' ring_ns, which the torch argmax leaves), and a torch engine refuses
    it before any window, in one line."""
    from tfdash.engine.config import preset
    from tfdash.profiling.variants import TORCH_VISIBLE, refusal

    base = build_plan(preset(model), "float32", capacity=256)

    def launches(plan):  # what the torch spelling runs: ring_ns is the tilelang argmax's alone (it leaves it)
        return [(x.role, x.family, sorted((k, b) for k, b in x.args.items() if k != "ring_ns")) for x in plan.launches]

    changed = set()
    for v in [*ab.VARIANTS.values(), ab.resolve("down:seg=2"), ab.resolve("o_proj:blocks_per_sm=1")]:
        plan, options = ab.variant_plan(base, v)
        if options == dict(base.meta["options"]):
            continue  # the running plan itself: nothing to tell apart
        visible = bool(set(v.options) & TORCH_VISIBLE)
        assert (launches(plan) != launches(base)) == visible, (v.name, v.options)
        changed |= set(v.options) & TORCH_VISIBLE
        why = refusal(v, "torch-eager", dict(base.meta["options"]))
        if v.runtime:
            assert why.short == "tilelang-graph only"
        else:
            assert (why is None) == visible, (v.name, why)
            assert visible or why.line.endswith("whose two sides would run the same torch ops"), why
        assert refusal(v, "tilelang-graph", dict(base.meta["options"])) is None
    assert changed, "no variant changes the torch spelling"
    assert refusal(ab.VARIANTS["tilelang-ringevents"], "torch-graph", dict(base.meta["options"])).short == "no-op"


RINGCOPY_ON_CPU = ("tilelang-ringcopy (ring_in_graph=False) sets how a CUDA step's token reaches the host; this "
                   "engine is torch-eager on the CPU, which stores each token itself either way")


def test_a_variant_that_only_moves_a_cuda_token_is_refused_on_the_cpu():
    """`--ab tilelang-ringcopy` on torch-eager on the CPU ran its windows and gave a verdict of noise.
    ring_in_graph sets how a CUDA step's token reaches the host (the argmax stores it through the
    pinned ring's device address, or it is copied after the step); a CPU runtime stores each token
    into the ring the host reads itself, whatever the plan, and the plan's ring is another tensor.
    Refused on the CPU, by build too; CUDA's torch engines still try it, where the two ways differ."""
    from tfdash.profiling.variants import refusal

    eng = micro_engine(capacity=128)
    rt, v = eng.runtime, ab.VARIANTS["tilelang-ringcopy"]
    options = dict(rt.plan.meta["options"])
    assert options["ring_in_graph"] and rt.ring.data_ptr() != rt.bufs["ring"].data_ptr()  # not the ring read
    why = refusal(v, "torch-eager", options, device="cpu")
    assert why == ("no-op", RINGCOPY_ON_CPU)
    with pytest.raises(TfdashError) as e:
        ab.build(rt, v)
    assert str(e.value) == RINGCOPY_ON_CPU
    assert all(refusal(v, b, options, device="cuda") is None for b in ("torch-eager", "torch-graph", "tilelang-graph"))
    assert refusal(v, "torch-eager", options) is None  # a device not known is not the CPU
    assert refusal(ab.VARIANTS["tilelang-unfused"], "torch-eager", options, device="cpu") is None


def test_headless_ab_a_cpu_no_op_is_one_line_before_any_weight(capsys, monkeypatch):
    """`tfdash --headless --ab tilelang-ringcopy` on the CPU loaded the weights, ran the generation and
    12 windows. The engine's refusal is known from the arguments: one line, exit 2, no weight loaded."""
    from tfdash.cli import main
    from tfdash.engine import weights

    def loaded(*a, **kw):
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(weights, "load_weights", loaded)
    rc = main(["--headless", "--device", "cpu", "--threads", "1", "--max-new-tokens", "8", "--ab", "tilelang-ringcopy"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.splitlines() == [f"tfdash: error: --ab {RINGCOPY_ON_CPU}"]


def test_gemv_specs_and_bench_names_resolve():
    v = ab.resolve("down:seg=8,blocks_per_sm=1")
    assert v.name == "tilelang[down:seg=8,blocks_per_sm=1]" and v.options == {"gemv_overrides": {
        "down": {"seg": 8, "blocks_per_sm": 1}}}
    assert ab.resolve("tilelang[down:seg=8]").options == {"gemv_overrides": {"down": {"seg": 8}}}
    from tfdash.profiling.variants import PLAN_VARIANTS

    assert set(PLAN_VARIANTS) < set(ab.VARIANTS)  # every bench variant, and the PDL one
    assert ab.VARIANTS["tilelang-lateres"].about == "early_residual=False"
    with pytest.raises(TfdashError, match="no plan variant 'tilelang-nosuch'"):
        ab.resolve("tilelang-nosuch")
    assert v.about == "gemv_overrides.down.seg=8, gemv_overrides.down.blocks_per_sm=1"
    assert ab.VARIANTS["tilelang-gu1"].about == "gemv_blocks_per_sm.gate_up=1"


def test_scripts_name_their_variants_through_one_checked_list():
    from tfdash.profiling.variants import variant_names

    assert variant_names(" tilelang-bf16head,,tilelang-gu1 ") == ["tilelang-bf16head", "tilelang-gu1"]
    assert variant_names("") == []
    # a removed variant (decided and gone) is one line naming the known ones, never a KeyError
    with pytest.raises(TfdashError, match=r"no plan variant 'tilelang-pickfirst', 'nope' \(known: .*tilelang-bf16head"):
        variant_names("tilelang-bf16head,tilelang-pickfirst,nope")


def test_headless_ab_prints_the_table(capsys, monkeypatch, tmp_path):
    """`tfdash --headless --ab VARIANT`: a generation too short for the A/B, so it runs right after
    it, from where it stopped, and the table says so; --export keeps it in the snapshot."""
    from tfdash.cli import main
    from tfdash.profiling.export import load_snapshot

    monkeypatch.setattr(ab, "STEPS", 16)
    monkeypatch.setattr(ab, "PROFILE_STEPS", 8)
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    rc = main(["--headless", "--device", "cpu", "--threads", "1", "--max-new-tokens", "24", "--ab", "tilelang-unfused",
               "--export", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 0
    # a line a window after the generation too, where it said nothing until the table; the build's once
    said = [ln for ln in err.splitlines() if "tilelang-unfused" in ln]
    assert said[0] == "tfdash: building tilelang-unfused (fused_rope=False) beside the running plan…"
    assert said[1:] == [f"tfdash: tilelang-unfused: window {k}/14" for k in range(1, 15)], said
    assert "A/B tilelang-unfused (fused_rope=False) on torch-eager: 6 windows of 16 steps a side, order ABABABABABAB, " \
           "after the generation, from where it stopped" in out and "during after" not in out
    assert "tokens agree at all 12 turn starts" in out and "qk_norm_rope" in out
    [kept] = load_snapshot(tmp_path / "out" / "snapshot.json").ab
    assert kept["order"] == "AB" * 6
    # `tfdash open` without a terminal printed the run and its kernels, not the A/B the snapshot kept
    assert main(["open", str(tmp_path / "out" / "snapshot.json")]) == 0
    opened = capsys.readouterr().out
    assert "A/B tilelang-unfused (fused_rope=False) on torch-eager: 6 windows of 16 steps a side" in opened
    assert "tokens agree at all 12 turn starts" in opened


def test_ctrl_c_during_the_headless_ab_after_the_generation_stops_it_and_reports_it(capsys, monkeypatch, tmp_path):
    """Ctrl+C while `--ab` runs after the generation: the A/B stops after the window in progress,
    one line says so, the report ends with what it measured (marked incomplete, and kept in the
    export), and the exit code is 130. The A/B ran inside the report's signal guard, so the
    signal was only noted and all 12 windows and both profile windows ran first."""
    import signal

    from tfdash.cli import main
    from tfdash.profiling.export import load_snapshot

    monkeypatch.setattr(ab, "STEPS", 16)
    monkeypatch.setattr(ab, "PROFILE_STEPS", 8)
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    real_ab = Session.ab

    def ab_then_ctrl_c(self, what, progress=None, cancel=None, **sizes):
        def say(p):
            if progress is not None:
                progress(p)
            if p.phase == "running" and p.done == 2:  # the terminal's Ctrl+C reaches the main thread
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        return real_ab(self, what, progress=say, cancel=cancel, **sizes)

    monkeypatch.setattr(Session, "ab", ab_then_ctrl_c)
    rc = main(["--headless", "--device", "cpu", "--threads", "1", "--max-new-tokens", "24", "--ab", "tilelang-unfused",
               "--export", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 130, err
    assert [line for line in err.splitlines() if "SIGINT" in line] == [
        "tfdash: interrupted (SIGINT); the A/B stops after its window in progress; reporting what was measured"]
    assert "Traceback" not in err and "incomplete: cancelled" in out
    [kept] = load_snapshot(tmp_path / "out" / "snapshot.json").ab
    assert kept["incomplete"] == "cancelled" and kept["order"].startswith("AB") and len(kept["order"]) < 12
    assert f"order {kept['order']}, after the generation" in out


@pytest.mark.parametrize("where", ["mid-window", "between windows"])
def test_ctrl_c_during_the_headless_ab_on_the_generation_says_cancelled(capsys, monkeypatch, tmp_path, where):
    """Ctrl+C while `--ab` runs on the generation: headless decodes on the main thread, so the
    KeyboardInterrupt unwinds the decode loop itself, and the window it cut short (or the one waiting
    to start) ended the A/B as "the generation ended before the A/B did", a reason that was not so."""
    from tfdash.cli import main

    monkeypatch.setattr(ab, "STEPS", 16)
    monkeypatch.setattr(ab, "PROFILE_STEPS", 8)
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    real_on_step, real_next = ab.Turn.on_step, ab.ABRun.next

    def on_step(self, step_ns):  # the terminal's Ctrl+C, landing in the decode loop
        real_on_step(self, step_ns)
        if where == "mid-window" and self.index == 2 and len(self.step_ns) == 3:
            raise KeyboardInterrupt

    def next_window(self, cancelled=False):  # ... or between two windows
        real_next(self, cancelled)
        if where == "between windows" and self.finished == 2 and not self.done.is_set():
            raise KeyboardInterrupt

    monkeypatch.setattr(ab.Turn, "on_step", on_step)
    monkeypatch.setattr(ab.ABRun, "next", next_window)
    rc = main(["--headless", "--device", "cpu", "--threads", "1", "--max-new-tokens", "300", "--ab", "tilelang-unfused"])
    out, err = capsys.readouterr()
    assert rc == 130, err
    assert "Traceback" not in err and "incomplete: cancelled" in out, out


def test_a_variant_shares_state_on_an_indexed_device_too():
    """A tensor of `cuda:0` lives on the runtime's `cuda`: the variant must share it (torch.device
    equality says the two differ, which once left a CUDA A/B with nothing shared)."""
    import torch

    from tfdash.engine.runtime import same_device

    assert same_device(torch.device("cuda", 0), torch.device("cuda"))
    assert same_device(torch.device("cuda"), torch.device("cuda", 1))
    assert not same_device(torch.device("cuda", 0), torch.device("cuda", 1))
    assert not same_device(torch.device("cpu"), torch.device("cuda"))


def test_a_host_stall_inside_a_turn_does_not_move_its_side():
    """Turns of 1.0 ms steps on both sides, each B turn with one 40 ms stall (a redraw holding the
    GIL): no difference, where a turn's mean step (1.62 ms) would call the variant 38 % slower."""
    import types

    from tfdash.profiling.ab import summarize

    steady = [2_000_000] + [1_000_000] * 63
    stalled = list(steady)
    stalled[30] = 40_000_000
    turns = [("A", 64 * i, tuple(steady)) if i % 2 == 0 else ("B", 64 * i, tuple(stalled)) for i in range(6)]
    side = types.SimpleNamespace(plan=micro_engine(64).plan, backend="torch-eager")
    r = summarize(ab.resolve("tilelang-lateres"), side, side, turns, [], {})
    assert r["delta_pct"] == 0.0 and r["spread_pct"] == 0.0, r["verdict"]
    assert r["a"]["tok_per_s"] == r["b"]["tok_per_s"] == 1000.0 and r["b"]["tok_per_s_min"] == 1000.0, r


def test_an_ab_another_version_recorded_is_one_line_in_the_opened_summary(tmp_path):
    """The summary `tfdash open` prints without a terminal reads a recorded A/B through the headless
    table; one it cannot read (another version's fields) is a line saying so, never a traceback."""
    import dataclasses

    from fixtures.appkit import SNAPSHOT

    from tfdash.app.main import snapshot_summary
    from tfdash.profiling.export import load_snapshot

    snap = dataclasses.replace(load_snapshot(SNAPSHOT), ab=({"what": "tilelang-x", "a": {"windows": 1}},))
    text = snapshot_summary(snap, tmp_path / "s.json")
    assert text.endswith("A/B tilelang-x: recorded in a form this version does not read\n")


def test_an_ab_that_cannot_fit_the_cache_is_refused_before_the_run(ckpt_factory):
    """A checkpoint of 256 positions: `--ab` generated all its tokens, then said "A/B ...: unavailable:
    the cache holds 256 positions; the A/B needs 834" and exited 0. Now one line before the run."""
    from conftest import assert_one_line_error, run_tfdash

    d = ckpt_factory().path
    r = run_tfdash("--headless", "--ckpt", str(d), "--threads", "1", "--max-new-tokens", "200",
                   "--ab", "tilelang-unfused", timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "--ab tilelang-unfused", "need 834 positions", "holds 256",
                          "max_position_embeddings=256")


def test_the_header_counts_each_sides_windows_as_the_table_does():
    """Stopped mid-way (Ctrl+C), A had 5 windows and B 4: the header said "4 windows of 64 steps a
    side" above a table whose A row said 5. Where the sides differ, the header gives each count."""
    side = {"tok_per_s": 100.0, "tok_per_s_min": 99.0, "tok_per_s_max": 101.0, "step_ns": 1e7}
    result = {"what": "v", "about": "", "backend": "torch-eager", "windows_per_side": 4, "steps_per_window": 64,
              "order": "ABABABABA", "a": {**side, "windows": 5}, "b": {**side, "windows": 4}, "launches": [2, 3],
              "verdict": "-", "tokens": {"checks": 9, "agree": 9}, "per_op": [], "per_op_method": "-"}
    lines = ab_table.table(result)
    assert lines[0] == "A/B v () on torch-eager: windows of 64 steps, 5 of A and 4 of B (4 paired), order ABABABABA"
    assert lines[2].split()[-1] == "5" and lines[3].split()[-1] == "4"  # the table's windows column
    result["b"]["windows"] = result["windows_per_side"] = 5
    assert ab_table.table(result)[0].startswith("A/B v () on torch-eager: 5 windows of 64 steps a side, order")
