"""Marginal cost: what a name resolves to, how rounds become a delta and a spread, and a clear
"unavailable" on CPU (the measurement itself is in test_profiling_gpu.py)."""

from __future__ import annotations

import pytest

from tfdash.engine import build_plan, preset
from tfdash.errors import TfdashError
from tfdash.profiling.marginal import MarginalTask, measure, resolve, summarize


@pytest.fixture(scope="module")
def plan():
    return build_plan(preset("qwen3-1.7b"), capacity=2048)


def test_resolve_role_op_kernel_family(plan):
    assert resolve(plan, "lm_head") == [la.index for la in plan.launches if la.role == "lm_head"]
    gate_up = resolve(plan, "L13.gate_up")
    assert len(gate_up) == 1 and plan.launches[gate_up[0]].role == "L13.gate_up"
    every = resolve(plan, "gate_up")
    assert len(every) == 28 and gate_up[0] in every
    assert resolve(plan, "gemv_gate_up_silu") == every  # the kernel name
    gemv = resolve(plan, "gemv")
    assert set(every) < set(gemv) and all(plan.launches[i].family == "gemv" for i in gemv)
    with pytest.raises(TfdashError, match="no launch, op, kernel or family named 'L99.nope'"):
        resolve(plan, "L99.nope")


def test_summarize_medians_and_spread():
    plain = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    variant = [1100.0, 1115.0, 1090.0, 1104.0, 1097.0]
    r = summarize("L3.gate_up", [20], plain, variant, 1024, 20)
    assert r["delta_ns"] == pytest.approx(1100.0 - 1000.0)
    diffs = sorted(v - p for p, v in zip(plain, variant))  # 99, 100, 100, 102, 105
    assert r["spread_ns"] == pytest.approx((102 - 100) / 2)
    assert r["rounds"] == 5 and r["ctx_len"] == 1024 and r["per_launch_ns"] == r["delta_ns"]
    r2 = summarize("gate_up", list(range(28)), plain, variant, 0, 20)
    assert r2["per_launch_ns"] == pytest.approx(r2["delta_ns"] / 28)
    assert summarize("x", [1], [5.0], [7.0], 0, 1)["spread_ns"] == 0.0


def test_cpu_says_unavailable():
    from tfdash.engine import load_engine

    eng = load_engine(model="qwen3-tiny", device="cpu")
    r = measure(eng.runtime, "lm_head")
    assert r == {"what": "lm_head", "unavailable": "marginal cost needs CUDA graphs; this is torch-eager on cpu"}
    task = MarginalTask("lm_head")
    task.cancel("the generation ended")
    assert task.done.is_set() and task.result["unavailable"] == "the generation ended"


class FakeGraphs:
    """A runtime that claims CUDA graphs: it captures nothing and holds nothing."""

    cuda = True
    position = 100

    def __init__(self, plan):
        self.plan = plan

    def held(self):
        import contextlib

        return contextlib.nullcontext()

    def capture_variant(self, launches, ctx):
        return object()


@pytest.mark.parametrize("stop_after", [0, 3])
def test_a_cancel_ends_the_measurement_after_the_round_in_progress(plan, monkeypatch, stop_after):
    """A quit or a re-run sets `cancel`: the rounds stop there (the runtime's lock is not held through
    the rest), the rounds done are the result, marked incomplete; none done, it says so."""
    import threading

    from tfdash.profiling import marginal

    cancel = threading.Event()
    timed = []

    def fake_time(graph, reps):  # a round times both graphs; the warm-up times each twice first
        timed.append(reps)
        if (len(timed) - 2) // 2 >= stop_after:
            cancel.set()
        return 1000.0 if len(timed) % 2 else 1100.0

    monkeypatch.setattr(marginal, "_time", fake_time)
    r = measure(FakeGraphs(plan), "L3.gate_up", rounds=7, cancel=cancel)
    if stop_after == 0:
        assert r == {"what": "L3.gate_up", "unavailable": marginal.CANCELLED}
    else:
        assert r["rounds"] == stop_after and r["incomplete"] == "cancelled", r
    assert len(timed) == 2 + 2 * stop_after  # the warm-up, then the rounds before the cancel
    cancel.set()
    assert measure(FakeGraphs(plan), "L3.gate_up", cancel=cancel)["unavailable"] == marginal.CANCELLED
    assert "incomplete" not in measure(FakeGraphs(plan), "L3.gate_up", rounds=2)  # uncancelled: whole
