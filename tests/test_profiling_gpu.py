"""Profiling on the H200 (`pytest -m gpu tests/test_profiling_gpu.py`): CUPTI windows inside graph
replays, marginal cost, the D2D bandwidth probe and NVML GPM. CI skips these."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _engine(backend="torch-graph", model="qwen3-tiny", capacity=2048):
    from tfdash.engine import load_engine

    return load_engine(model=model, device="cuda", backend=backend, capacity=capacity)


@pytest.fixture(scope="module")
def tiny_graph():
    eng = _engine("torch-graph")
    eng.runtime.capture([0, 0])  # up front: a lazy capture inside generate() would reset its prompt
    return eng


def _tilelang_or_skip():
    from tfdash.engine import tilelang_available

    if not tilelang_available():
        pytest.skip("tilelang is not installed")


def _check_window(r, plan, steps):
    assert r.ok, r.error
    assert r.method == "cupti" and r.steps == steps
    assert len(r.launch_ns) == len(plan) and all(len(x) == steps for x in r.launch_ns)
    assert all(len(n) >= 1 for n in r.names)  # every launch ran at least one device kernel
    assert all(min(x) > 0 for x in r.launch_ns)  # and every launch has a measured time
    assert r.kernel_sum_ns + r.gap_ns == pytest.approx(r.step_p50_ns, rel=0.01)
    # the ring events' step time and CUPTI's replay period agree (same steady state)
    assert r.period_ns == pytest.approx(r.step_p50_ns, rel=0.25)


def test_cupti_window_torch_graph(tiny_graph):
    from tfdash.profiling.timeline import Timer, profile_steps

    rt = tiny_graph.runtime
    rt.reset([1, 2, 3])
    rt.bufs["pos"].fill_(100)
    timer = Timer(rt)
    r = profile_steps(rt, 16, timer)
    _check_window(r, tiny_graph.plan, 16)
    assert r.first_step == 100 and int(rt.bufs["pos"][0]) == 116
    assert timer.kernel_map.names is not None and timer.kernel_map.error is None
    assert sum(len(n) for n in r.names) > len(tiny_graph.plan)  # torch launches are several kernels
    r2 = profile_steps(rt, 8, timer)  # the learned map is reused
    _check_window(r2, tiny_graph.plan, 8)


def test_cupti_window_tilelang_names():
    _tilelang_or_skip()
    from tfdash.profiling.timeline import profile_steps

    eng = _engine("tilelang-graph", model="qwen3-1.7b")  # the shape the kernels are built for
    rt = eng.runtime
    rt.reset([1, 2, 3])
    rt.bufs["pos"].fill_(256)
    r = profile_steps(rt, 16)
    _check_window(r, eng.plan, 16)
    for launch, names in zip(eng.plan.launches, r.names):
        assert names == (f"{launch.kernel}_kernel",) or names[0].startswith(f"{launch.kernel}_kernel")


def test_session_window_in_a_live_generation(tiny_graph):
    from tfdash.profiling.session import ProfileDone, Session, TokenBatch

    plain = [e.token_id for e in tiny_graph.generate("a b c", 1500)]
    s = Session(tiny_graph, "a b c", 1500, nvml=True)  # long enough for the window after a TokenBatch
    msgs = []

    def on(m):
        msgs.append(m)
        if isinstance(m, TokenBatch) and m.new_tokens >= 50 and s.snapshot().profile_windows == 0:
            s.request_profile(32)

    s.run(on)
    snap = s.snapshot()
    assert [t.token_id for t in snap.tokens] == plain  # profiling does not change the tokens
    done = [m for m in msgs if isinstance(m, ProfileDone)]
    assert done and done[0].error is None
    r = snap.roofline
    assert r.timing == "cupti" and r.steps == 32 and all(k.measured_p50_ns for k in snap.kernels)
    assert r.kernel_sum_ns + r.gap_ns == pytest.approx(r.measured_step_ns, rel=0.01)
    assert snap.timeline and snap.meta.gpu


def test_marginal_cost_of_lm_head_and_gate_up():
    eng = _engine("torch-graph", model="qwen3-1.7b", capacity=2048)
    from tfdash.profiling.marginal import measure

    rt = eng.runtime
    rt.capture([1, 2, 3])
    rt.reset([1, 2, 3])
    rt.bufs["pos"].fill_(1024)
    head = measure(rt, "lm_head", rounds=7, reps=20)
    assert "unavailable" not in head, head
    # lm_head streams 0.62 GB of weights: at least ~100 us more per step when doubled
    assert head["delta_ns"] > 50_000 and head["spread_ns"] < head["delta_ns"] / 2
    up = measure(rt, "L13.gate_up", rounds=7, reps=20)
    assert 0 < up["delta_ns"] < head["delta_ns"]
    assert int(rt.bufs["pos"][0]) == 1024  # left where it was


def test_session_marginal_while_running(tiny_graph):
    import threading

    from tfdash.profiling.session import Session

    s = Session(tiny_graph, "a b c", 1500, nvml=False)
    t = threading.Thread(target=s.run)
    t.start()
    while s.snapshot().new_tokens < 100:
        time.sleep(0.01)
    r = s.marginal("lm_head", rounds=3, reps=5)
    s.stop()
    t.join(60)
    assert "unavailable" not in r, r
    assert r["ctx_len"] >= 100 and s.snapshot().marginal[-1]["what"] == "lm_head"


def test_probe_cuda_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path))
    from tfdash.profiling import probe

    r = probe.probe_bandwidth("cuda")
    assert r.method == "cuda d2d copy" and r.nbytes == 2 << 30
    assert 1e12 < r.bandwidth < 5.5e12  # H200: about 4.27 TB/s read + write
    assert probe.cached("cuda") == r
    t = probe.default_target("cuda")
    from tfdash.profiling.targets import datasheet_for

    sheet = datasheet_for(r.device)  # the H200's 4.8 TB/s; another GPU's own (an H100 SXM's 3.35)
    assert t.bandwidth == r.bandwidth and t.datasheet_bandwidth == sheet.bandwidth
    assert "H200" not in r.device or sheet.bandwidth == 4.8e12


def test_nvml_gpm_reads_bandwidth_during_a_copy_loop():
    from tfdash.profiling.nvml import NvmlSampler

    s = NvmlSampler(interval=0.15)
    if not s.available:
        pytest.skip(s.unavailable()["nvml"])
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    t0 = time.perf_counter() - s.origin
    s.start()
    end = time.time() + 1.5
    while time.time() < end:
        for _ in range(20):
            b.copy_(a)
        torch.cuda.synchronize()
    s.stop()
    t1 = time.perf_counter() - s.origin
    series = {x.name: x for x in s.series()}
    vals = [v for v in series["dram_gbps"].values if v is not None]
    assert vals and max(vals) > 1000, (vals, s.unavailable())
    gbps, note = s.window_gbps(t0, t1)
    assert gbps and gbps > 500 and "GPM DRAM_BW_UTIL" in note
    assert [v for v in series["sm_clock_mhz"].values if v] and [v for v in series["power_w"].values if v]
