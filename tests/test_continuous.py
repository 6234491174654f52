"""Continuous per-kernel timing on the CPU, from synthetic CUPTI kernel records of a real StepPlan
(tests/continuous_support.py): the statistics land on the right launches with PDL overlap,
memory stays flat over a 20k-step stream, lost records are resynchronised, the Session falls
back to windows in one line when CUPTI is missing, and carries the statistics into its snapshot."""

from __future__ import annotations

import dataclasses
import sys
import tracemalloc

import numpy as np
import pytest
from continuous_support import GRAPH, batches, rows, stream, synth
from profiling_support import micro_engine

from tfdash.engine.config import PRESETS
from tfdash.engine.plan import build_plan
from tfdash.profiling import probe
from tfdash.profiling.continuous import ContinuousTiming, CuptiActivity, ReplaySource, records
from tfdash.profiling.continuous.stats import TRACE_STEPS
from tfdash.profiling.export import load_snapshot, write_snapshot
from tfdash.profiling.kernel_map import DeviceEvent, check_tilelang_names, map_replays, tilelang_names
from tfdash.profiling.messages import Status
from tfdash.profiling.session import Session
from tfdash.stats import percentile

TARGET = dataclasses.replace(probe.CPU, name="cpu-test", bandwidth=10e9, source="test: 10 GB/s")


@pytest.fixture(scope="module")
def plan():
    return build_plan(PRESETS["qwen3-tiny"], "bfloat16", capacity=4096)


def timed(plan, batches_, keep=256, bucket=128, **kw):
    """A ContinuousTiming over a replayed stream, run to its end."""
    seen = []
    t = ContinuousTiming(ReplaySource(batches_), tilelang_names(plan), keep=keep, bucket=bucket,
                         on_steps=seen.append, **kw)
    t.start()
    t.source.flush()
    return t, seen


def test_statistics_land_on_the_right_launches(plan):
    names = tilelang_names(plan)
    assert check_tilelang_names(names, [la.kernel for la in plan.launches]) is None
    n, N = 600, 256
    sy = synth(plan, n, slow={400: (7, 60_000)}, gaps={450: 90_000})
    noise = [("foreign_kernel", 5, 9, GRAPH), (names[0][0], 10, 20, 0)]  # not the plan's; not a graph's
    variant = [(r[0], r[1] + 7, r[2] + 7, GRAPH + 1) for r in rows(synth(plan, 2, t0=1_500_000))]  # another graph
    t, seen = timed(plan, batches(noise + rows(sy) + variant))
    v = t.view()
    assert (t.mapper.steps, t.mapper.dropped, t.mapper.ignored) == (n, 0, len(noise) + len(variant))
    assert (v.first_step, v.last_step, v.steps) == (n - N, n - 1, N)
    last = sy.excl[-N:]
    for i in range(len(plan.launches)):
        assert v.p50(i) == percentile(last[:, i], 50) and v.p90(i) == percentile(last[:, i], 90)
        assert v.last(i) == sy.excl[-1, i]
    assert v.step_p50_ns == percentile(sy.span[n - N:n - 1], 50)  # the last step's span is not known yet
    assert v.kernel_sum_ns == sum(v.p50s) and v.gap_ns == v.step_p50_ns - v.kernel_sum_ns
    # the window path's formula on the same kernels gives the same exclusive times
    ev = [DeviceEvent(r[0], r[1], r[2] - r[1]) for r in rows(sy)[:10 * len(names)]]
    launch_ns, _, _, err = map_replays(ev, names, 10)
    assert err is None and np.array_equal(np.array(launch_ns).T, sy.excl[:10])
    got = np.concatenate([s.excl for s in seen])
    assert np.array_equal(got, sy.excl) and np.array_equal(np.concatenate([s.index for s in seen]), sy.index)
    # the timeline: every kernel of the last few steps, raw start and duration
    assert len(v.spans) == TRACE_STEPS * len(names) and v.spans[-1][:3] == (n - 1, len(names) - 1, names[-1][0])
    # the slowest steps, whole, with what made them slow
    slow = {s.step: s for s in v.slow}
    assert slow[400].launch == 7 and slow[400].launch_ns == tuple(int(x) for x in sy.excl[400])
    assert slow[450].launch == -1 and slow[450].excess_ns > 80_000
    assert v.slow[0].excess_ns >= v.slow[-1].excess_ns and len(v.slow) <= 8
    # the sweep: a point per ctx_len bucket of 128 steps, attention rising with ctx_len
    t.stop()
    sweep = t.view().sweep
    assert [w.first_step for w in sweep] == [0, 128, 256, 384, 512] and [w.steps for w in sweep] == [128] * 4 + [88]
    attn = next(i for i, la in enumerate(plan.launches) if la.family == "attention")
    assert all(a.kernel_ns[attn] < b.kernel_ns[attn] for a, b in zip(sweep, sweep[1:]))
    assert sweep[1].kernel_ns == tuple(percentile(sy.excl[128:256, i], 50) for i in range(len(names)))


def test_a_prompt_taken_in_chunks_starts_the_index_past_it(plan):
    """The chunks' kernels are no plan kernel's and the head's run in a graph of their own, so
    the first whole step is the one past the prompt: it is indexed there (its ctx_len)."""
    names = tilelang_names(plan)
    head = [r for r in rows(synth(plan, 1)) if r[0] in ("gemv_lm_head_kernel", "argmax_feed_ring_ns_kernel")]
    assert len(head) == 2
    prompt = [("rows_gemm_qkv_proj_kernel", 1, 2, GRAPH + 5)] + [(r[0], r[1], r[2], GRAPH + 6) for r in head]
    sy = synth(plan, 40, t0=1_000_000)
    t, _ = timed(plan, batches(prompt + rows(sy)), first_index=12)
    v = t.view()
    assert t.mapper.steps == 40 and (v.first_step, v.last_step) == (12, 51)
    assert names[0] and t.mapper.ignored == len(prompt)


def test_memory_is_flat_over_a_20k_step_stream(plan):
    tracemalloc.start()
    try:
        t = ContinuousTiming(ReplaySource(()), tilelang_names(plan), keep=256, bucket=128)
        feed = stream(plan, 20_000, per_batch=100)
        for _ in range(100):  # 10k steps: the rings full, the sweep at its cap of 64 points (8192 steps)
            t._deliver(next(feed))
        t.view()
        half = tracemalloc.get_traced_memory()[0]
        for b in feed:
            t._deliver(b)
        t.view()
        grew = tracemalloc.get_traced_memory()[0] - half
    finally:
        tracemalloc.stop()
    assert t.mapper.steps == 20_000 and t.mapper.dropped == 0 and t.error is None
    assert t.stats.excl.shape == (256, len(plan.launches)) and len(t.stats.sweep) == 64  # the sweep's cap
    # 230k records went by: keeping one int of each would be 1.8 MB; what is left is which batch
    # and which view happen to be alive at the two moments
    assert grew < 64 * 1024, f"{grew} bytes more after the second 10k steps"


def test_lost_records_resynchronise_and_keep_the_step_count(plan):
    n = 300
    sy = synth(plan, n)
    L = len(plan.launches)
    run = [(s, i) for s in (150, 151, 152) for i in range(L) if (s, i) >= (150, 3) and (s, i) <= (152, 10)]
    lost = [(100, 5), *run, (200, 0), (201, L - 1)]  # CUPTI loses runs of records: steps cut at both ends
    t, seen = timed(plan, batches(rows(sy, drop=lost)))
    v = t.view()
    measured = np.concatenate([s.index for s in seen])
    assert sorted(set(range(n)) - set(measured.tolist())) == [100, 150, 151, 152, 200, 201]
    assert t.mapper.dropped == 6 and t.mapper.steps == n - 6 and v.last_step == n - 1
    ok = np.isin(sy.index, measured)
    assert np.array_equal(np.concatenate([s.excl for s in seen]), sy.excl[ok])
    kept = sy.excl[ok][-256:]  # the ring holds the latest 256 measured steps
    assert v.steps == 256 and v.first_step == int(sy.index[ok][-256]) and v.p50(3) == percentile(kept[:, 3], 50)


def test_a_stray_partial_step_between_two_steps_does_not_shift_them(plan):
    sy = synth(plan, 40)
    rs = rows(sy)
    K = len(plan.launches)
    e = max(r[2] for r in rs[19 * K:20 * K])  # in the idle after step 19
    stray = [(rs[k][0], e + 1 + k, e + 2 + k, GRAPH) for k in range(3)]
    t, seen = timed(plan, [records(rs[:20 * K]), records(stray), records(rs[20 * K:])])
    assert t.mapper.steps == 40 and [int(x) for s in seen for x in s.index] == list(range(40))
    assert t.mapper.dropped == 0


def block_cupti(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # `from cupti import cupti` raises ImportError


def test_cupti_missing_is_one_line(monkeypatch):
    block_cupti(monkeypatch)
    why = CuptiActivity(None).check()
    assert why.startswith("cupti-python is not importable (") and "tfdash[cupti]" in why
    assert "\n" not in why


def test_session_falls_back_to_windows_when_cupti_is_missing(monkeypatch):
    block_cupti(monkeypatch)
    msgs = []
    s = Session(micro_engine(512), "w1 w2 w3", 60, target=TARGET, nvml=False, ignore_eos=True, profile_every=30,
                profile_steps=4, timing="continuous", record_source=lambda rt: CuptiActivity(None))
    s.run(msgs.append)
    [line] = [m.text for m in msgs if isinstance(m, Status) and "continuous" in m.text]
    assert line.startswith("continuous timing unavailable: cupti-python is not importable") and "\n" not in line
    assert line.endswith("per-kernel times come from profile windows")
    snap = s.snapshot()
    assert snap.timing.method == "windows" and snap.timing.note == line and snap.unavailable["continuous"] == line
    assert snap.profile_windows >= 1 and all(k.measured_p50_ns is not None for k in snap.kernels)


def test_auto_on_the_cpu_says_why_in_the_snapshot_only():
    msgs = []
    s = Session(micro_engine(512), "w1 w2", 8, target=TARGET, nvml=False, ignore_eos=True, timing="auto")
    s.run(msgs.append)
    assert not [m for m in msgs if isinstance(m, Status) and "continuous" in m.text]
    assert "the engine runs on the CPU" in s.snapshot().timing.note and s.timing_method == "windows"


def test_the_snapshot_carries_continuous_statistics(tmp_path):
    eng = micro_engine(512)
    n = 300
    sources = []

    def source(rt):
        sources.append(ReplaySource(lambda: batches(rows(synth(rt.plan, n)))))
        return sources[-1]

    s = Session(eng, "w1 w2 w3", n - 2, target=TARGET, nvml=False, ignore_eos=True, timing="continuous",
                record_source=source, continuous_steps=128, sweep_bucket=64)
    s.run()
    snap = s.snapshot()
    t = snap.timing
    assert t.method == "continuous" and t.steps_measured == n and t.range_steps == 128 and t.bucket_steps == 64
    assert t.source.startswith("replay") and t.host_ns_per_step > 0 and t.slow_steps
    assert snap.roofline.timing == "continuous" and snap.roofline.steps == 128
    assert all(k.measured_p50_ns is not None and k.measured_last_ns is not None and k.samples == 128
               for k in snap.kernels)
    assert [w.first_step for w in snap.windows] == [0, 64, 128, 192, 256]  # a sweep point per bucket
    assert "kernels" not in snap.unavailable and "timeline" not in snap.unavailable and snap.timeline
    path = tmp_path / "run.json"
    write_snapshot(snap, path)
    assert load_snapshot(path) == snap


def test_a_profile_window_pauses_and_resumes_continuous_timing():
    eng = micro_engine(512)
    src = []
    msgs = []

    def source(rt):
        src.append(ReplaySource(lambda: batches(rows(synth(rt.plan, 50)))))
        return src[-1]

    s = Session(eng, "w1 w2 w3", 120, target=TARGET, nvml=False, ignore_eos=True, timing="continuous",
                record_source=source, profile_every=40, profile_steps=4)
    s.run(msgs.append)
    snap = s.snapshot()
    assert snap.profile_windows >= 1 and snap.timing.method == "continuous" and snap.timing.pauses >= 1
    assert src[0].events[:3] == ["start", "pause", "resume"] and src[0].events[-1] == "stop"
    texts = [m.text for m in msgs if isinstance(m, Status)]
    assert any("paused" in x and "torch.profiler" in x for x in texts)
    assert s.continuous.mapper.next_index >= 40  # rebased to the step after the window


def test_the_gpu_checks_span_join(plan):
    from tfdash.profiling.continuous import check

    sy = synth(plan, 80)
    _, seen = timed(plan, batches(rows(sy, drop=[(50, 2)])))
    got = check.join_spans(seen, sy.span.tolist())  # CUDA events that agree with CUPTI exactly
    assert got["joined_steps"] == 80 - 16 - 3  # no span for 49 (50 lost), 50, nor the last step
    assert got["span_vs_event_absrel_p50"] == 0 and got["p50_span_over_p50_event"] == 1
    assert got["busy_p50_ns"] < got["span_p50_ns"]


def test_mangled_record_names_meet_the_demangled_kernel_map():
    pytest.importorskip("torch")
    from tfdash.profiling.continuous import StepMapper

    mangled = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"
    demangled = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                 "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
    m = StepMapper(((demangled, "Memset (Device)"), ("b_kernel",)))  # a memset has no kernel record
    got = m.feed(records([(mangled, 0, 10, 3), ("b_kernel", 8, 30, 3), (mangled, 40, 50, 3), ("b_kernel", 45, 60, 3),
                          (mangled, 70, 80, 3)]))
    assert got.index.tolist() == [0, 1] and got.excl.tolist() == [[10, 20], [10, 10]]


def test_a_live_ab_pauses_continuous_timing_around_each_sides_profile_window():
    """torch.profiler times each side's window: the ring lets go of CUPTI for each and takes it back."""
    import threading
    import time

    eng = micro_engine(2048)
    src = []

    def source(rt):
        src.append(ReplaySource(lambda: batches(rows(synth(rt.plan, 50)))))
        return src[-1]

    s = Session(eng, "w1 w2 w3", 1500, target=TARGET, nvml=False, ignore_eos=True, timing="continuous",
                record_source=source)
    t = threading.Thread(target=s.run, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while s.snapshot() is None or s.snapshot().new_tokens < 8:
        assert time.monotonic() < deadline, "no tokens"
        time.sleep(0.01)
    r = s.ab("tilelang-unfused", windows=3, steps=4, profile_steps=3)
    s.stop()
    t.join(30)
    assert "unavailable" not in r and r["during"] == "the generation", r
    assert r["order"] == "AB" * 3 and "per_op" in r and r["per_op"], r
    events = src[0].events
    assert events.count("pause") == 2 and events.count("resume") == 2, events  # one pair a side
    assert s.snapshot().timing.method == "continuous" and s.continuous.error is None
