"""Per-launch timing: mapping device events to launches (synthetic CUPTI events), the CPU's direct
windows, and the Generation's window hook (profiling never changes the tokens)."""

from __future__ import annotations

import pytest
import torch
from profiling_support import micro_engine

from tfdash.profiling.timeline import (DeviceEvent, DirectWindow, Timer, attribute, check_tilelang_names,
                                       graph_names, map_replays, profile_steps, step_events)


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest: torch on one thread for the module


@pytest.fixture(scope="module")
def eng():
    return micro_engine(capacity=512)


# -- mapping (what the H200 path runs on CUPTI's events) -----------------------------------------
NAMES = (("embed_gather_kernel",), ("gemm_a", "splitk_reduce"), ("argmax_feed_kernel",))


def replay_events(steps, t0=1000, gap=50, names=NAMES, durs=(10, 20, 5, 7)):
    """Device events of `steps` replays, each followed by the token ring's DtoH copy."""
    ev, t = [], t0
    for _ in range(steps):
        for k, name in enumerate(x for n in names for x in n):
            ev.append(DeviceEvent(name, t, durs[k % len(durs)]))
            t += durs[k % len(durs)] + 2
        ev.append(DeviceEvent("Memcpy DtoH (Device -> Pinned)", t, 3))
        t += gap
    return ev


def test_map_replays_by_order_and_name():
    ev = replay_events(3)
    launch_ns, spans, period, err = map_replays(list(reversed(ev)), NAMES, 3)  # order comes from start times
    assert err is None
    assert launch_ns == ((10, 10, 10), (25, 25, 25), (7, 7, 7))  # a two-kernel launch sums its kernels
    assert period == 10 + 20 + 5 + 7 + 4 * 2 + 50
    assert len(spans) == 12 and spans[1][:3] == (0, 1, "gemm_a") and spans[-1][:3] == (2, 2, "argmax_feed_kernel")


def test_overlapping_kernels_count_their_exclusive_time():
    # PDL: each kernel starts while the one before drains and waits on the device. Launch 1
    # starts 4 ns into launch 0 (which ends at 10) and ends at 30; launch 2 (two kernels) starts
    # at 12, its first kernel ends at 33, its second runs 40..47 after a 7 ns bubble.
    names = (("a_kernel",), ("b_kernel",), ("c_kernel", "d_kernel"))
    ev = [DeviceEvent("a_kernel", 0, 10), DeviceEvent("b_kernel", 4, 26), DeviceEvent("c_kernel", 12, 21),
          DeviceEvent("d_kernel", 40, 7)]
    launch_ns, spans, _, err = map_replays(ev, names, 1)
    assert err is None
    assert launch_ns == ((10,), (20,), (3 + 7,))
    # exclusive times sum to the busy time: first start to last end minus the bubble
    assert sum(x[0] for x in launch_ns) == 47 - 7
    assert [sp[4] for sp in spans] == [10, 26, 21, 7]  # the timeline keeps raw durations


def test_an_overlapping_window_keeps_its_replays_after_the_start_mark():
    # CUPTI started mid-replay with steps in flight: the tail of one replay, a whole earlier
    # replay, the start mark, the window's 2 replays, then the start of a later one.
    ev = replay_events(5)
    per = 5  # 4 kernels + the ring copy per replay
    mark = DeviceEvent("void at::cuda::(anonymous namespace)::spin_kernel(long)", ev[2 * per].start_ns - 20, 1)
    seen = ev[2:2 * per] + [mark] + ev[2 * per:4 * per] + ev[4 * per:4 * per + 2]
    launch_ns, spans, _, err = map_replays(seen, NAMES, 2, align=True)
    assert err is None
    assert [sp[3] for sp in spans] == [e.start_ns for e in ev[2 * per:4 * per] if "Memcpy" not in e.name]
    # without the mark: the first complete replay CUPTI saw
    _, spans, _, err = map_replays(ev[2:2 * per] + ev[2 * per:4 * per], NAMES, 2, align=True)
    assert err is None and spans[0][3] == ev[per].start_ns
    # too few complete replays after the mark
    _, _, _, err = map_replays(seen, NAMES, 3, align=True)
    assert err == "CUPTI saw 2 complete replays after the window started; it asked for 3"
    _, _, _, err = map_replays(ev[:3], NAMES, 1, align=True)
    assert err == "no complete replay among CUPTI's events"


def test_graph_names_come_from_a_replay():
    eager = (("a_kernel",), ("Memcpy DtoD (Device -> Device)", "b_kernel"))
    replay = [DeviceEvent("a_kernel", 0, 1), DeviceEvent("memcpy32_post", 2, 1), DeviceEvent("b_kernel", 4, 1)]
    assert graph_names(eager, replay) == (("a_kernel",), ("memcpy32_post", "b_kernel"))
    with pytest.raises(ValueError, match="one graph replay ran 2 device events, the eager step 3"):
        graph_names(eager, replay[:2])


def test_map_replays_refuses_a_wrong_count_or_name():
    ev = replay_events(3)
    _, _, _, err = map_replays(ev[:-2], NAMES, 3)
    assert "CUPTI saw 11 device events over 3 replays; the kernel map expects 4 per step (12)" in err
    bad = [DeviceEvent("other_kernel", e.start_ns, e.dur_ns) if e.name == "splitk_reduce" else e for e in ev]
    _, _, _, err = map_replays(bad, NAMES, 3)
    assert err == "step 0: device event 2 is 'other_kernel', launch 1 ran 'splitk_reduce' when learned"
    assert map_replays(ev, ((), ()), 3)[3] == "the learned kernel map is empty"


def test_host_copies_are_not_part_of_the_step():
    ev = [DeviceEvent("Memcpy HtoD (Pinned -> Device)", 0, 1), DeviceEvent("Memcpy DtoD (Device -> Device)", 5, 1),
          DeviceEvent("Memset (Device)", 3, 1), DeviceEvent("tfdash.launch.0", 0, 9)]
    assert [e.name for e in step_events(ev)] == ["Memset (Device)", "Memcpy DtoD (Device -> Device)"]


def test_attribute_learns_kernels_per_launch():
    anns = [(0, 0, 100), (1, 100, 300), (2, 300, 400)]
    ev = [DeviceEvent("embed_gather_kernel", 10, 5), DeviceEvent("gemm_a", 120, 50),
          DeviceEvent("splitk_reduce", 200, 5), DeviceEvent("argmax_feed_kernel", 320, 5),
          DeviceEvent("Memcpy DtoH (Device -> Pinned)", 390, 1)]
    assert attribute(anns, ev, 3) == NAMES
    # a kernel whose GPU timestamps sit a little off its CPU range (clock skew) goes to the nearest
    skewed = [DeviceEvent("embed_gather_kernel", 10, 5), DeviceEvent("gemm_a", 95, 20)] + ev[2:]
    assert attribute(anns, skewed, 3) == NAMES
    with pytest.raises(ValueError, match="outside every launch's range"):
        attribute(anns, ev + [DeviceEvent("stray", 10_000_000, 1)], 3)
    with pytest.raises(ValueError, match=r"no profiler range for launch\(es\) \[2\]"):
        attribute(anns[:2], ev[:3], 3)


def test_kineto_events_reads_annotations_from_a_real_profile():
    """The CPU half of what learn_kernel_map reads (the CUDA half runs on the H200)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    from tfdash.profiling.timeline import _kineto_events

    x = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(3):
            with record_function(f"tfdash.launch.{i}"):
                x = x @ x
    devs, anns = _kineto_events(prof)
    assert devs == [] and [a[0] for a in sorted(anns, key=lambda a: a[1])] == [0, 1, 2]
    assert all(a[1] < a[2] for a in anns)
    starts = sorted(a[1] for a in anns)
    assert starts[0] > 10**18  # wall-clock nanoseconds, the domain CuptiWindow converts from


def test_tilelang_names_are_checked():
    assert check_tilelang_names((("gemv_qkv_kernel",), ("argmax_feed_kernel",)), ["gemv_qkv", "argmax_feed"]) is None
    err = check_tilelang_names((("gemv_qkv_kernel",), ("gemv_o_kernel",)), ["gemv_qkv", "argmax_feed"])
    assert err == "launch 1 ran ['gemv_o_kernel'], the plan says one argmax_feed_kernel"
    assert "launch 0 ran ['a', 'b']" in check_tilelang_names((("a", "b"),), ["gemv_qkv"])


# -- CPU: direct timing --------------------------------------------------------------------------
def test_profile_steps_times_every_launch(eng):
    rt = eng.runtime
    rt.reset([1, 2, 3])
    rt.bufs["pos"].fill_(100)
    r = profile_steps(rt, 6)
    assert r.ok and r.method == "direct" and r.steps == 6 and r.first_step == 100 and r.ctx_len == 103
    assert len(r.launch_ns) == len(eng.plan) and all(len(x) == 6 and min(x) > 0 for x in r.launch_ns)
    for s in range(6):  # a step's kernels fit inside the step; its gap is what is left
        assert sum(x[s] for x in r.launch_ns) <= r.step_ns[s]
    assert r.kernel_sum_ns + r.gap_ns == pytest.approx(r.step_p50_ns)
    assert r.names == tuple((la.kernel,) for la in eng.plan.launches)
    assert int(rt.bufs["pos"][0]) == 106  # the steps really ran
    assert len(r.spans) == 6 * len(eng.plan)
    assert all(a[3] <= b[3] for a, b in zip(r.spans, r.spans[1:]))  # spans in time order


def test_timer_picks_direct_on_cpu(eng):
    t = Timer(eng.runtime)
    assert t.method == "direct" and isinstance(t.window(4), DirectWindow)


class Recorder:
    """A window that records the protocol calls it gets."""

    def __init__(self, steps):
        self.steps, self.step_fn, self.log, self.times = steps, None, [], []

    def start(self, rt, first, n):
        self.log.append(("start", first, n))

    def on_step(self, ns):
        self.times.append(ns)

    def finish(self, rt, cancelled):
        self.log.append(("finish", cancelled))

    def cancel(self, reason):
        self.log.append(("cancel", reason))


def test_intercept_brackets_steps_and_keeps_the_tokens(eng):
    plain = [e.token_id for e in eng.generate("a b c", 40)]
    gen = eng.generate("a b c", 40, depth=2)
    w1, pause, w2, late = Recorder(5), Recorder(0), DirectWindow(4), Recorder(3)
    toks = []
    for e in gen:
        toks.append(e.token_id)
        if e.index == 3:
            gen.intercept(w1)
            gen.intercept(pause)
            gen.intercept(w2)
        if e.index == 39:
            gen.intercept(late)
    assert toks == plain  # observing does not change what is generated
    first = w1.log[0][1]
    assert w1.log == [("start", first, 5), ("finish", False)] and len(w1.times) == 5
    assert 3 < first <= 8  # at the next boundary after the steps in flight
    assert pause.log == [("start", first + 5, 0), ("finish", False)]
    assert w2.result.ok and w2.result.first_step == first + 5 and w2.result.steps == 4
    assert late.log == [("cancel", "the generation ended before the window could run")]
    assert gen.stats.paused_ns > 0 and gen.stats.steps == 2 + 40


class Overlapping(Recorder):
    overlaps = True  # started and finished with steps in flight, as CUPTI windows are once learned


def test_overlapping_windows_need_no_drain(eng):
    plain = [e.token_id for e in eng.generate("a b c", 60)]
    gen = eng.generate("a b c", 60, depth=4)
    w, after = Overlapping(6), Recorder(2)
    toks, inflight_at = [], {}
    orig_start, orig_finish = w.start, w.finish

    def start(rt, first, n):
        inflight_at["start"] = gen.step_index - first
        orig_start(rt, first, n)

    def finish(rt, cancelled):
        inflight_at["finish"] = gen.step_index - (w.log[0][1] + 6)
        orig_finish(rt, cancelled)

    w.start, w.finish = start, finish
    for e in gen:
        toks.append(e.token_id)
        if e.index == 10:
            gen.intercept(w)
            gen.intercept(after)
            at = gen.step_index  # the next step to enqueue; steps 13.. are in flight (prompt walk 2)
    assert toks == plain
    first = w.log[0][1]
    assert w.log == [("start", first, 6), ("finish", False)] and len(w.times) == 6
    assert first == at and first > 10 + 2 + 1  # at once, with steps in flight: no drain
    assert inflight_at["finish"] >= 1  # later steps were already enqueued when it finished
    assert after.log[0] == ("start", first + 6 + inflight_at["finish"], 2)  # a draining window waits
    assert gen.stats.paused_ns > 0  # only the draining window's hooks are pauses


def test_window_cut_short_by_the_end_of_the_generation(eng):
    gen = eng.generate("a b c", 10, depth=1)
    w = DirectWindow(50)
    for e in gen:
        if e.index == 2:
            gen.intercept(w)
    assert w.result.ok and 0 < w.result.steps < 10


def test_window_finishes_when_the_consumer_walks_away(eng):
    gen = eng.generate("a b c", 30, depth=1)
    w = Recorder(20)
    it = iter(gen)
    for e in it:
        if e.index == 1:
            gen.intercept(w)
        if e.index == 6:
            break
    it.close()  # GeneratorExit inside the loop: the window is closed, not left running
    assert w.log[-1] == ("finish", True)


def test_bounded_generation(eng):
    from tfdash.engine.decode import Generation

    gen = Generation(eng.runtime, eng.encode("a b c"), 450, eng.tokenizer, keep=50)
    text = "".join(e.text for e in gen)
    assert len(gen.stats.step_ns) == 50 and len(gen.tokens) == 50 and gen.stats.steps == 452
    assert len(gen.decoder.ids) <= 300  # the stream decoder is trimmed as it goes
    assert text == eng.tokenizer.decode([e.token_id for e in eng.generate("a b c", 450)])


def test_torch_profiler_cycle_warning_is_not_printed():
    """A second start of a torch.profiler warns that it 'clears events at the end of each cycle'
    (what a window wants): with tfdash's timeline imported, nothing reaches stderr."""
    import subprocess
    import sys

    code = ("import tfdash.profiling.timeline\n"
            "from torch.profiler import profile, ProfilerActivity\n"
            "import torch\n"
            "p = profile(activities=[ProfilerActivity.CPU]); p.start(); torch.ones(3) + 1; p.stop()\n"
            "p.start(); p.stop()\n")
    r = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "clears events" not in r.stderr
    control = subprocess.run([sys.executable, "-W", "always", "-c", code.split("\n", 1)[1]], capture_output=True,
                             text=True, timeout=120)
    assert "clears events" in control.stderr  # the warning this guards against is real on this torch
