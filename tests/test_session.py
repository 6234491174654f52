"""Session: predictions before any measurement, profile windows in a live run, messages, stopping,
thread-safe snapshots, unavailable panels with reasons on CPU, and constant memory over 20k tokens."""

from __future__ import annotations

import dataclasses
import threading
import time
import tracemalloc

import pytest
from profiling_support import MICRO, micro_engine

from tfdash.errors import CapacityError, TfdashError
from tfdash.profiling import probe
from tfdash.profiling.export import dumps_snapshot, loads_snapshot
from tfdash.profiling.nvml import Nvml
from tfdash.profiling.session import (MarginalDone, ProfileDone, Session, SessionEnded, SessionStarted, Status,
                                      TokenBatch)

TARGET = dataclasses.replace(probe.CPU, name="cpu-test", bandwidth=10e9, source="test: 10 GB/s")


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest: torch on one thread for the module


@pytest.fixture(scope="module")
def eng():
    return micro_engine(capacity=1024)


@pytest.fixture(scope="module")
def tiny():
    from tfdash.engine import load_engine

    return load_engine(model="qwen3-tiny", device="cpu")


def test_predictions_before_any_measurement(tiny):
    s = Session(tiny, "hello world", 16, target=TARGET)
    snap = s.snapshot()
    assert len(snap.kernels) == len(tiny.plan) and snap.new_tokens == 0
    assert all(k.predicted_ns > 0 and k.measured_p50_ns is None and k.share is None for k in snap.kernels)
    assert [k.role for k in snap.kernels] == [la.role for la in tiny.plan.launches]
    a = s.analysis(1)  # ctx = prompt - 1 before the run
    assert snap.kernels[1].predicted_ns == pytest.approx(a.rows[1].ideal_ns)
    assert snap.kernels[1].bytes_read == a.rows[1].cost.bytes_read
    assert snap.unavailable["kernels"] == "no profile window yet"
    assert snap.unavailable["roofline"] == "no profile window yet"
    assert snap.unavailable["nvml"]  # a reason, whatever this machine lacks
    assert snap.unavailable["marginal"].startswith("marginal cost needs CUDA graphs")
    assert snap.roofline is None and snap.nvml == () and snap.target["bandwidth"] == 10e9
    assert snap.meta.backend == "torch-eager" and snap.meta.checkpoint == "random"
    assert snap.meta.launches_per_step == len(tiny.plan) and snap.meta.model["name"] == "qwen3-tiny"
    assert s.snapshot() is snap  # cached between changes


def test_lengths_are_checked_up_front(eng):
    with pytest.raises(CapacityError):
        Session(eng, "a b", 5000)


def test_run_with_a_profile_window(tiny, tmp_path):
    s = Session(tiny, "hello world", 24, target=TARGET, ignore_eos=True)
    s.request_profile(6)  # before run: applied as soon as the generation starts
    msgs = []
    s.run(msgs.append)
    kinds = [type(m) for m in msgs]
    assert kinds[0] is SessionStarted and kinds[-1] is SessionEnded and Status not in kinds  # target given
    batches = [m for m in msgs if isinstance(m, TokenBatch)]
    snap = s.snapshot()
    assert [t for b in batches for t in b.tokens] == list(snap.tokens)
    # the two-token prompt in one chunk and the head: the first token is no step
    assert sum(len(b.step_ns) for b in batches) == len(snap.step_ns) == snap.steps == 24 - 1
    assert batches[-1].new_tokens == 24 == snap.new_tokens and snap.tok_per_s > 0
    assert msgs[-1].stopped == "" and msgs[-1].new_tokens == 24 and msgs[-1].error is None

    done = [m for m in msgs if isinstance(m, ProfileDone)]
    assert len(done) == 1 and done[0].error is None and done[0].window == 1 == snap.profile_windows
    assert all(k.measured_p50_ns and k.measured_p90_ns >= k.measured_p50_ns and k.samples == 6
               for k in snap.kernels)
    r = snap.roofline
    assert r.timing == "direct" and r.steps == 6 and r.ctx_len == 2 + 3  # steps 2..7: past the prompt's chunk
    assert r.kernel_sum_ns == pytest.approx(sum(k.measured_p50_ns for k in snap.kernels))
    assert r.kernel_sum_ns + r.gap_ns == pytest.approx(r.measured_step_ns)
    assert sum(k.share for k in snap.kernels) == pytest.approx(r.kernel_sum_ns / r.measured_step_ns)
    assert r.bytes_per_step == s.analysis(5).bytes and r.achieved_gbps == pytest.approx(r.bytes_per_step / r.measured_step_ns)
    assert r.ceiling_gbps == 10.0 and r.datasheet_gbps == 0.0 and r.nvml_gbps is None and r.nvml_source
    assert "kernels" not in snap.unavailable and "roofline" not in snap.unavailable
    assert len(snap.timeline) == 6 * len(tiny.plan) and {sp.step for sp in snap.timeline} == set(range(6))
    assert snap.paused_ns > 0
    assert loads_snapshot(dumps_snapshot(snap)) == snap  # a live snapshot round-trips too


def test_window_requests_do_not_pile_up(eng):
    s = Session(eng, "a b c", 40, target=TARGET)
    assert [s.request_profile(3) for _ in range(4)] == [True, True, False, False]
    s.run()
    assert s.snapshot().profile_windows == 2
    assert s.timer.kernel_map is Session(eng, "a b c", 4, target=TARGET).timer.kernel_map  # one per runtime


def test_messages_are_frozen():
    b = TokenBatch((), (), 0, 0, 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.new_tokens = 1
    assert {TokenBatch.kind, ProfileDone.kind, MarginalDone.kind, SessionEnded.kind} == {
        "tokens", "profile", "marginal", "ended"}


def test_periodic_windows_and_a_session_runs_once(eng):
    s = Session(eng, "a b c", 120, target=TARGET, profile_every=30, profile_steps=4, keep_windows=2)
    s.run()
    snap = s.snapshot()
    assert snap.profile_windows >= 3 and len(s.windows) == 2  # bounded
    with pytest.raises(TfdashError, match="runs once"):
        s.run()
    assert s.request_profile(4) is False


def test_the_sessions_own_window_comes_once_and_only_when_none_was_asked_for(eng):
    s = Session(eng, "a b c", 120, target=TARGET, profile_steps=4, auto_window_at=20, ignore_eos=True)
    s.run()
    snap = s.snapshot()
    assert snap.profile_windows == 1 and snap.timing.auto_window and snap.roofline.steps == 4
    assert s.windows[0].first_step >= 20  # after the warm-up
    asked = Session(eng, "a b c", 120, target=TARGET, profile_steps=4, auto_window_at=20, ignore_eos=True)
    asked.request_profile(4)  # p before the run's own window: that one is the run's first numbers
    asked.run()
    assert asked.snapshot().profile_windows == 1 and not asked.snapshot().timing.auto_window


def test_stop_from_another_thread(eng):
    s = Session(eng, "a b c", 900, target=TARGET, ignore_eos=True)
    ended = []
    t = threading.Thread(target=s.run, args=(ended.append,))
    t.start()
    while s.snapshot().new_tokens < 20:
        time.sleep(0.005)
    s.stop()
    t.join(30)
    assert not t.is_alive()
    last = ended[-1]
    assert isinstance(last, SessionEnded) and last.stopped == "cancelled" and 20 <= last.new_tokens < 900


def test_external_stop_event(eng):
    stop = threading.Event()
    s = Session(eng, "a b c", 900, target=TARGET)

    def on(m):
        if isinstance(m, TokenBatch) and m.new_tokens >= 10:
            stop.set()

    s.run(on, stop)
    assert 10 <= s.snapshot().new_tokens < 900


def test_snapshots_from_other_threads_while_running(eng):
    """Two readers at ~200 Hz (ten times the app's rate) while the run decodes and profiles."""
    s = Session(eng, "a b c", 600, target=TARGET, profile_every=100, profile_steps=4, batch_s=0.0)
    errors, seen = [], []
    done = threading.Event()

    def reader():
        while not done.is_set():
            try:
                snap = s.snapshot()
                assert len(snap.tokens) == snap.new_tokens
                assert len(snap.kernels) == len(eng.plan)
                seen.append(snap.new_tokens)
                if len(seen) == 20:
                    s.request_profile(3)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            time.sleep(0.005)

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for r in readers:
        r.start()
    try:
        s.run()
    finally:
        done.set()
        for r in readers:
            r.join()
    assert not errors
    assert seen and max(seen) <= 600 and s.snapshot().new_tokens == 600
    assert s.snapshot().profile_windows >= 5


def test_nvml_and_marginal_say_why_on_cpu(eng):
    s = Session(eng, "a b c", 8, target=TARGET, nvml=True)
    s.run()
    snap = s.snapshot()
    assert snap.unavailable["nvml"] in (Nvml().init().reason if not Nvml().available else "",
                                        "the engine runs on the CPU; NVML watches GPUs")
    m = s.marginal("lm_head")
    assert m == {"what": "lm_head", "unavailable": "marginal cost needs CUDA graphs; this is torch-eager on the CPU"}
    off = Session(eng, "a b c", 8, target=TARGET, nvml=False)
    assert off.snapshot().unavailable["nvml"] == "NVML sampling is off (nvml=False)"


def test_profile_now_after_the_run(eng):
    s = Session(eng, "a b c", 20, target=TARGET)
    s.run()
    r = s.profile_now(5)
    assert r.ok and r.first_step == len(s.prompt_ids) - 1 + 20 and s.snapshot().profile_windows == 1
    r = s.profile_now(5, ctx_len=10_000)  # kept inside the cache
    assert r.ok and r.first_step + 5 < eng.plan.capacity


def test_probe_runs_at_start_when_no_target_is_given(eng, tmp_path, monkeypatch):
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(probe, "measured_target", lambda device: calls.append(device) or TARGET)
    s = Session(eng, "a b c", 4)
    assert s.snapshot().target["name"] == "cpu"  # nominal until probed
    msgs = []
    s.run(msgs.append)
    assert calls == ["cpu"] and any(isinstance(m, Status) for m in msgs)
    assert s.snapshot().target["bandwidth"] == 10e9


@pytest.mark.slow
def test_20k_tokens_in_constant_memory():
    """20k tokens through a Session with periodic windows: ring buffers stay at their caps and
    the traced Python heap hardly grows between 5k and 19k tokens."""
    cfg = dataclasses.replace(MICRO, vocab_size=128)
    eng = micro_engine(capacity=20_544, cfg=cfg)
    s = Session(eng, "a b c", 20_000, target=TARGET, keep_tokens=1000, keep_steps=2000, nvml=False,
                profile_every=5000, profile_steps=4, keep_windows=2, ignore_eos=True)
    marks = {}

    def on(m):
        if not isinstance(m, TokenBatch):
            return
        if m.new_tokens >= 2500 and not tracemalloc.is_tracing():
            tracemalloc.start()  # the ring buffers are full by now; trace from here (it is slow)
        if m.new_tokens >= 5000 and "start" not in marks:
            s.snapshot()
            marks["start"] = tracemalloc.get_traced_memory()[0]
        if m.new_tokens >= 19_000 and "end" not in marks:
            s.snapshot()
            marks["end"] = tracemalloc.get_traced_memory()[0]

    t = time.perf_counter()
    try:
        s.run(on)
    finally:
        tracemalloc.stop()
    wall = time.perf_counter() - t
    snap = s.snapshot()
    assert snap.new_tokens == 20_000 and snap.steps == 20_002
    assert len(snap.tokens) == 1000 and snap.tokens[-1].index == 19_999
    assert len(snap.step_ns) == 2000 and len(s.windows) == 2 and snap.profile_windows == 3  # the 4th falls at the end
    growth = marks["end"] - marks["start"]
    print(f"heap growth from 5k to 19k tokens: {growth} bytes; run {wall:.1f} s")
    assert growth < 256 * 1024, f"heap grew {growth} bytes from 5k to 19k tokens ({wall:.1f} s run)"


def test_prepare_profiler_is_free_on_cpu(eng):
    """CUDA learns the kernel map before decoding; the CPU's direct windows need nothing."""
    from tfdash.profiling.session import Session

    s = Session(eng, "a b", 4, nvml=False, prepare_profiler=True, probe_bandwidth=False)
    assert s.timer.prepared
    s.run()
    assert s.snapshot().new_tokens == 4


def test_the_window_after_a_short_run_ends_with_a_stop(eng):
    """A run that ended before its own window (here: 40 tokens, the window due at 1000) is timed
    right after the generation, on the decode thread. q or r then (the app's stop: the session's
    and the run's stop events) waited for every step of that window, which never looked at them: an
    in-generation window stops at the next step. Now it runs no step once stopped, and a stop that
    comes during it ends it after the step in flight, the steps timed so far kept."""
    stop = threading.Event()
    s = Session(eng, "a b c", 40, target=TARGET, profile_steps=8, auto_window_at=1000, ignore_eos=True,
                batch_s=1e9, nvml=False, probe_bandwidth=False)

    def on(m):  # one TokenBatch, the last flush: the generation is over, its window not yet taken
        if isinstance(m, TokenBatch):
            stop.set()
            s.stop()

    s.run(on, stop)
    assert s.snapshot().profile_windows == 0 and s.snapshot().new_tokens == 40

    during = Session(eng, "a b c", 40, target=TARGET, profile_steps=8, auto_window_at=1000, ignore_eos=True,
                     nvml=False, probe_bandwidth=False)
    window = during.timer.window

    def stopping_window(steps, on_done=None):
        w = window(steps, on_done)
        start = w.start

        def started(runtime, first_step, n):
            start(runtime, first_step, n)
            step = w.step_fn
            w.step_fn = lambda: (step(), during.stop())  # q during the window's first step

        w.start = started
        return w

    during.timer.window = stopping_window
    during.run()
    assert [w.steps for w in during.windows] == [1]  # the step in flight, then no more of its 8


def test_a_window_asked_for_while_the_run_ends_is_not_lost(eng):
    """p (or headless --profile's request) after the generation's last token, while the session
    times its own window after it: it went to the ended generation, which never ran nor cancelled it,
    so it waited for ever and no ProfileDone came. Now it ends with the session, saying so."""
    s = Session(eng, "a b c", 40, target=TARGET, profile_steps=8, auto_window_at=1000, ignore_eos=True,
                batch_s=1e9, nvml=False, probe_bandwidth=False)
    asked, done = [], []

    def on(m):
        if isinstance(m, TokenBatch) and not asked:
            asked.append(s.request_profile(4))
        elif isinstance(m, ProfileDone):
            done.append(m)

    s.run(on)
    assert asked == [True] and len(done) == 2, done  # the session's own window, and the one asked for
    assert all(w.done.is_set() for w in s._outstanding)
    assert done[-1].error and "the session ended" in done[-1].error


def test_a_run_with_no_step_says_so_whatever_its_timing(tiny):
    """A one-token run's token comes from the prompt: no step runs. Windows said why; a continuously
    timed run (the CUDA default) kept "no step measured yet" after its end, waiting for a step that
    never comes. The record says the run had none, and continuous timing's panes say it too."""
    from tfdash.profiling.assemble import NO_STEP, unavailable_panels
    from tfdash.profiling.snapshot import TimingInfo

    s = Session(tiny, "hello world", 1, target=TARGET, nvml=False)
    assert s.snapshot().unavailable["kernels"] == "no profile window yet"  # before the run: yet
    s.run()
    st = s.rec.freeze(s.meta, 2, s.pricing.target, False, "torch-eager", None, "")
    assert st.steps == 0 and st.new_tokens == 1 and st.no_window
    live = dataclasses.replace(st, no_window=None)  # mid-run, before a first step
    continuous = TimingInfo(method="continuous")
    assert unavailable_panels(live, None, (), continuous)["kernels"] == "continuous timing: no step measured yet"
    over = unavailable_panels(st, None, (), continuous)
    assert over["kernels"] == over["roofline"] == f"continuous timing: no step measured: {NO_STEP}"
    assert s.snapshot().unavailable["kernels"].startswith("no profile window: the run was too short")


def test_a_run_with_no_step_at_end_of_text_says_so_whatever_its_timing(ckpt_copy):
    """Room for 8 new tokens, and the first was end-of-text: no step ran. Both reasons said the run
    was one token ("2 or more new tokens have one") where 8 were asked for; they say end-of-text."""
    import json

    from tfdash.engine import load_engine
    from tfdash.profiling.assemble import NO_STEP_AT_EOS, unavailable_panels
    from tfdash.profiling.snapshot import TimingInfo

    d = ckpt_copy(tied=True)
    first = next(iter(load_engine(ckpt=d, device="cpu", capacity=64).generate("w5 w6", 1, ignore_eos=True))).token_id
    raw = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**raw, "eos_token_id": [first]}))
    s = Session(load_engine(ckpt=d, device="cpu", capacity=64), "w5 w6", 8, target=TARGET, nvml=False)
    s.run()
    st = s.rec.freeze(s.meta, 2, s.pricing.target, False, "torch-eager", None, "")
    assert st.steps == 0 and st.new_tokens == 1
    over = unavailable_panels(st, None, (), TimingInfo(method="continuous"))
    assert over["kernels"] == f"continuous timing: no step measured: {NO_STEP_AT_EOS}"
    assert s.snapshot().unavailable["kernels"].startswith("no profile window: the run stopped at end-of-text")


def test_a_run_stopped_before_its_first_step_is_not_called_too_short(tiny):
    s = Session(tiny, "hello world", 8, target=TARGET, nvml=False)
    s.stop()
    s.run()
    assert s.snapshot().new_tokens <= 1 and "too short" not in s.snapshot().unavailable["kernels"]
