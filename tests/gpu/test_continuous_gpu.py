"""Continuous timing on the H200 (`pytest -m gpu tests/gpu/test_continuous_gpu.py`; needs
cupti-python): CUPTI's kernel records of CUDA-graph replays come back and map onto whole steps,
a Session times every step continuously, and records still come after a torch.profiler window."""

import pytest
import torch

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)
pytest.importorskip("cupti", reason="needs cupti-python (pip install 'tfdash[cupti]')")

from tfdash.engine import load_engine  # noqa: E402
from tfdash.profiling.continuous import ContinuousTiming, CuptiActivity  # noqa: E402
from tfdash.profiling.session import Session  # noqa: E402
from tfdash.profiling.timeline import Timer, profile_steps  # noqa: E402


@pytest.fixture(scope="module")
def eng():
    e = load_engine(model="qwen3-tiny", device="cuda", backend="torch-graph", capacity=1024)
    e.runtime.ensure_captured()
    return e


def replays(rt, n):
    with rt.held():
        for _ in range(n):
            rt.graph.replay()
        rt.synchronize()


def test_graph_replays_come_back_as_whole_steps(eng):
    rt, timer = eng.runtime, Timer(eng.runtime)
    timer.prepare()
    seen = []
    t = ContinuousTiming(CuptiActivity(rt), timer.kernel_map.names, on_steps=seen.append)
    t.start()
    try:
        replays(rt, 5)
        t.source.flush()
        assert sum(len(s) for s in seen) == 5 and t.mapper.graph
        t.pause()
        rt.set_position(100)
        assert profile_steps(rt, 4, timer).ok  # torch.profiler in between
        t.resume(1000)
        replays(rt, 3)
        t.source.flush()
    finally:
        t.stop()
    assert t.state == "stopped" and sum(len(s) for s in seen) == 8 and seen[-1].index[-1] == 1002


def test_a_session_times_every_step(eng):
    s = Session(eng, "a b c", 200, nvml=False, ignore_eos=True, timing="continuous")
    s.run()
    snap = s.snapshot()
    assert snap.timing.method == "continuous", snap.timing.note
    assert snap.timing.steps_measured >= snap.steps - 2 and snap.timing.steps_dropped == 0
    assert all(k.measured_p50_ns for k in snap.kernels) and snap.roofline.timing == "continuous"
