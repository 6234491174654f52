"""Time to first token, decode-only tok/s and paused time: in the generation's stats, its summary,
the snapshot (round trip included) and `tfdash bench`'s rows and table."""

from __future__ import annotations

import dataclasses
import threading

import pytest
import torch
from profiling_support import micro_engine

from tfdash.stats import GenerationStats, rates
from tfdash.profiling import probe
from tfdash.profiling.bench import TABLE_HEAD, round_order, round_row, summary_row, table_row
from tfdash.profiling.export import dumps_snapshot, loads_snapshot
from tfdash.profiling.session import Session

TARGET = dataclasses.replace(probe.CPU, name="cpu-test", bandwidth=10e9, source="test: 10 GB/s")


@pytest.fixture(scope="module")
def eng():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield micro_engine(capacity=512)
    torch.set_num_threads(n)


def test_rates_leave_out_held_time_and_the_first_token():
    whole, decode = rates(new_tokens=11, wall_ns=3_000_000_000, held_ns=1_000_000_000, ttft_ns=500_000_000)
    assert whole == pytest.approx(11 / 2.0)  # 2 s of run time, not 3 s of wall time
    assert decode == pytest.approx(10 / 1.5)  # the 10 tokens after the first, over the time after it
    assert rates(1, 10**9, 0, 10**9)[1] is None  # one token: no decode-only rate, and the summary says why
    line = GenerationStats(1, new_tokens=1, wall_ns=10**9, ttft_ns=10**9).summary()
    assert "decode-only - (one new token);" in line
    assert "(1 new token in " in line and line.endswith("prompt 1 token, 1 new")  # it said "prompt 1 tokens"


def test_ttft_and_decode_rate_of_a_generation(eng):
    gen = eng.generate([5, 6, 7, 8], 40)
    events = list(gen)
    st = gen.stats
    assert st.ttft_ns == events[0].elapsed_ns > 0 and st.ttft_ns < st.wall_ns
    assert st.decode_tok_per_s == pytest.approx(39 / ((st.wall_ns - st.ttft_ns) / 1e9))
    assert st.held_ns == 0 and st.tok_per_s == pytest.approx(40 / (st.wall_ns / 1e9))
    line = st.summary()
    assert f"time to first token {st.ttft_ns / 1e6:.1f} ms" in line
    assert f"decode-only {st.decode_tok_per_s:.1f} tok/s" in line and "paused" not in line


@pytest.mark.parametrize("new", [2, 3])
def test_a_short_runs_decode_rate_is_its_steps(eng, monkeypatch, new):
    """`--max-new-tokens 2` said 9000+ tok/s at 4 ms a step: two CPU steps ran before the first token
    was stamped, so time to first token took the decode step and decode-only had next to no time."""
    import time

    step, slow_ns = eng.runtime.step, 20_000_000

    def slow_step():
        step()
        time.sleep(slow_ns / 1e9)

    monkeypatch.setattr(eng.runtime, "step", slow_step)
    gen = eng.generate([5, 6, 7], new)
    list(gen)
    st = gen.stats
    assert st.wall_ns - st.ttft_ns >= (new - 1) * slow_ns  # every decode step after the first token is in it
    assert st.ttft_ns < 4 * slow_ns  # the prompt walk's 2 steps and the first token's: 3, not 4
    assert st.decode_tok_per_s <= 1e9 / slow_ns


def test_a_pause_is_held_time_not_run_time(eng):
    gen = eng.generate([5, 6, 7], 60)
    hold_s = 0.6
    events = []
    for ev in gen:
        events.append(ev)
        if ev.index == 10:
            gen.pause(True)  # held at the next step boundary, once the steps in flight are harvested
            threading.Timer(hold_s, gen.pause, args=(False,)).start()
    st = gen.stats
    assert all(e.held_ns == 0 for e in events[:11]) and events[-1].held_ns == st.held_ns  # each token's hold so far
    assert [e.held_ns for e in events] == sorted(e.held_ns for e in events)
    assert st.new_tokens == 60
    assert st.held_ns >= hold_s * 0.9e9
    assert st.tok_per_s == pytest.approx(60 / ((st.wall_ns - st.held_ns) / 1e9))
    assert st.tok_per_s > 60 / (st.wall_ns / 1e9)
    assert max(st.step_ns) < hold_s * 0.5e9  # the pause is not inside any step's time
    assert f"paused {st.held_ns / 1e9:.3f} s not counted" in st.summary()


def test_a_run_stopped_while_paused_keeps_its_rate(eng):
    """Pause, then quit or re-run while paused (the dashboard's q, r): the hold came after the last
    token, so it is not in the wall time; it was still taken off it, and the kept run said 0.0 tok/s
    (or, for a hold shorter than the run, a rate too high by the hold)."""
    gen = eng.generate([5, 6, 7], 400)
    hold_s = 0.5
    for ev in gen:
        if ev.index == 10:
            gen.pause(True)
            threading.Timer(hold_s, gen.cancel).start()  # stopped while held, never resumed
    st = gen.stats
    assert st.stopped == "cancelled" and 10 < st.new_tokens < 400
    assert 0 <= st.held_ns < st.wall_ns
    assert st.tok_per_s == pytest.approx(st.new_tokens / ((st.wall_ns - st.held_ns) / 1e9))
    assert st.wall_ns - st.held_ns < hold_s * 1e9 or st.tok_per_s > 0  # the run's own time, not less
    assert f"{st.tok_per_s:.1f} tok/s" in st.summary() and st.tok_per_s > 0


def test_a_session_pause_and_the_snapshot(eng):
    s = Session(eng, "w1 w2 w3", 80, target=TARGET, nvml=False, ignore_eos=True, probe_bandwidth=False)
    held = []

    def on_event(m):  # on the decode thread, as the dashboard's pause arrives between batches
        if m.kind == "tokens" and not held:
            held.append(m.new_tokens)
            s.pause(True)
            threading.Timer(0.4, s.pause, args=(False,)).start()

    s.run(on_event)
    snap = s.snapshot()
    assert held and snap.held_ns >= 0.35e9 and 0 < snap.ttft_ns < snap.wall_ns - snap.held_ns
    assert snap.tok_per_s == pytest.approx(80 / ((snap.wall_ns - snap.held_ns) / 1e9))
    assert snap.decode_tok_per_s == pytest.approx(79 / ((snap.wall_ns - snap.held_ns - snap.ttft_ns) / 1e9))
    assert snap.tokens[0].held_ns == 0 and snap.tokens[-1].held_ns == snap.held_ns  # each token keeps its hold
    back = loads_snapshot(dumps_snapshot(snap))
    assert back == snap and back.ttft_ns == snap.ttft_ns and back.held_ns == snap.held_ns
    assert back.tokens == snap.tokens


def _tokens(*gaps_ms, held_at=None, hold_ms=0):
    """TokenRecords `gaps_ms` apart; a hold of `hold_ms` before token `held_at` (wall time, and held)."""
    from tfdash.profiling.snapshot import TokenRecord

    out, t, held = [], 0, 0
    for i, gap in enumerate(gaps_ms):
        if i == held_at:
            t, held = t + hold_ms * 1_000_000, held + hold_ms * 1_000_000
        t += int(gap * 1_000_000)
        out.append(TokenRecord(i, 1, "x", t, held))
    return tuple(out)


@pytest.mark.parametrize("hold_ms,after", [(400, 30), (5000, 1), (5000, 3)])
def test_tok_s_now_leaves_out_a_hold_in_its_window(hold_ms, after):
    """'tok/s now' dipped for about a second after a resume: its window was wall time, so the hold
    counted as time with no tokens (one token after a 5 s hold read 0.2 tok/s). It is run time now."""
    from profiling_support import rich_snapshot

    from tfdash.app import model

    toks = _tokens(*[10] * (80 + after), held_at=80, hold_ms=hold_ms)  # 100 tok/s, held after 80 tokens
    snap = dataclasses.replace(rich_snapshot(), tokens=toks, new_tokens=len(toks))
    assert model.tok_s_now(snap) == pytest.approx(100.0)
    assert model.throughput(snap).tok_s_now == pytest.approx(100.0)


def test_an_older_snapshots_tokens_load_without_their_hold():
    """Snapshots from before each token kept its hold (version 7 and older) still load: no hold."""
    import json

    from profiling_support import rich_snapshot

    from tfdash.errors import SnapshotError

    raw = json.loads(dumps_snapshot(rich_snapshot()))
    for t in raw["tokens"]:
        del t["held_ns"]
    raw["version"] = 7
    back = loads_snapshot(json.dumps(raw))
    assert [t.held_ns for t in back.tokens] == [0] * len(raw["tokens"])
    assert [t.run_ns for t in back.tokens] == [t["elapsed_ns"] for t in raw["tokens"]]
    raw["tokens"][1]["held_ns"] = raw["tokens"][1]["elapsed_ns"] + 1  # more held than elapsed: a corrupt file
    with pytest.raises(SnapshotError, match=r"tokens\[1\]\.held_ns: .* more than the token's elapsed_ns"):
        loads_snapshot(json.dumps(raw), "bad.json")
    raw["tokens"][1]["held_ns"] = -1
    with pytest.raises(SnapshotError, match=r"tokens\[1\]\.held_ns: -1 is negative"):
        loads_snapshot(json.dumps(raw), "bad.json")


def test_bench_rows_and_table_carry_ttft_and_decode_rate():
    st = GenerationStats(prompt_tokens=12, new_tokens=2048, wall_ns=2_600_000_000, ttft_ns=40_000_000)
    st.step_ns.extend([1_200_000] * 99 + [11_200_000])  # one slow step: the mean moves, the p50 not
    row = round_row(0, "tilelang-graph", st)
    assert row["ms_per_step_mean"] == pytest.approx(1.3) and row["ms_per_step_p50"] == pytest.approx(1.2)
    assert row["ttft_ms"] == pytest.approx(40.0)
    assert row["decode_tok_per_s"] == pytest.approx(2047 / 2.56)
    row["achieved_gbps"] = 2900.0
    s = summary_row([row], 4.2e12, [1, 2])
    assert s["ttft_ms"] == pytest.approx(40.0) and s["decode_tok_per_s"] == pytest.approx(2047 / 2.56)
    assert "TTFT ms" in TABLE_HEAD and "decode tok/s" in TABLE_HEAD
    line = table_row("tilelang-graph", s)
    assert "40.0" in line and f"{2047 / 2.56:.1f}" in line
    hf = summary_row([{"tok_per_s": 200.0, "ttft_ms": None, "decode_tok_per_s": None, "ms_per_step_p50": None,
                       "achieved_gbps": 700.0}], 4.2e12, [])
    assert hf["ttft_ms"] is None and " - " in table_row("hf-compile", hf)


def test_each_bench_round_starts_one_backend_later():
    """No backend always runs first in its round: over as many rounds as backends, each takes
    every place once."""
    names = ["tilelang-graph", "tilelang-ringcopy", "torch-compile"]
    orders = [round_order(names, r) for r in range(3)]
    assert orders[0] == names and orders[1] == ["tilelang-ringcopy", "torch-compile", "tilelang-graph"]
    for name in names:
        assert sorted(o.index(name) for o in orders) == [0, 1, 2]
    assert round_order(names, 3) == names and round_order([], 2) == []


def test_the_dashboards_throughput_model_carries_ttft_decode_and_pause():
    from profiling_support import rich_snapshot

    from tfdash.app import model

    snap = dataclasses.replace(rich_snapshot(), new_tokens=3, wall_ns=3_000_000_000, held_ns=1_000_000_000,
                               ttft_ns=500_000_000)
    t = model.throughput(snap)
    assert t.tok_s_run == pytest.approx(3 / 2.0) and t.ttft_ms == pytest.approx(500.0)
    assert t.tok_s_decode == pytest.approx(2 / 1.5) and t.held_s == pytest.approx(1.0)


def test_bench_holds_each_backend_to_the_bytes_its_own_plan_moves():
    """The engine's int8 head reads about half the lm_head's bytes: its GB/s and share of the ceiling
    are its own plan's bytes over its time, while the bf16-head variant, the torch peers and
    transformers keep the bf16 head's."""
    from types import SimpleNamespace

    from tfdash.engine.config import preset
    from tfdash.engine.plan import build_plan
    from tfdash.profiling.bench import bytes_by_peer, generation_bytes

    cfg = preset("qwen3-1.7b")
    plan, q8 = build_plan(cfg, capacity=2112), build_plan(cfg, capacity=2112, lm_head_q8=True)
    peers = {"tilelang-graph": SimpleNamespace(plan=q8), "tilelang-bf16head": SimpleNamespace(plan=plan),
             "torch-compile": SimpleNamespace(plan=plan), "hf-compile": object()}
    got = bytes_by_peer(peers, plan, TARGET, 2059)
    assert got["tilelang-bf16head"] == got["torch-compile"] == got["hf-compile"] == generation_bytes(plan, TARGET, 2059)
    head_saved = 2059 * cfg.vocab_size * (cfg.hidden_size - 16)  # bf16 rows against int8 rows and 16 B of meta
    assert got["tilelang-bf16head"] - got["tilelang-graph"] == pytest.approx(head_saved, rel=0.02)


def test_a_prompt_taken_in_chunks_is_held_to_its_chunks_bytes():
    """With prefill_rows, a 12-token prompt moves one chunk's bytes (the body's weights once, not
    twelve steps' worth) and the head's on its last position; the steps after it are the walk's,
    and a one-token prompt is the walk exactly."""
    from tfdash.engine.config import preset
    from tfdash.engine.plan import build_plan
    from tfdash.engine.prefill_plan import build_prefill_plan
    from tfdash.profiling.analyze import analyze
    from tfdash.profiling.bench import generation_bytes

    cfg = preset("qwen3-1.7b")
    walk, chunked = build_plan(cfg, capacity=2112), build_plan(cfg, capacity=2112, prefill_rows=16)
    steps = 11 + 2048
    saved = generation_bytes(walk, TARGET, steps, 12) - generation_bytes(chunked, TARGET, steps, 12)
    twelve = sum(analyze(walk, TARGET, p).bytes for p in range(12))
    chunk = sum(launch.cost(0).bytes for launch in build_prefill_plan(chunked).launches)
    head = sum(x.cost(11).bytes for x in walk.launches if x.role in ("lm_head", "argmax"))
    assert saved == twelve - chunk - head and 9 * chunk < twelve  # twelve steps' bytes, less one chunk's
    assert generation_bytes(chunked, TARGET, 2048, 1) == generation_bytes(walk, TARGET, 2048, 1)
    assert generation_bytes(walk, TARGET, steps, 12) == generation_bytes(walk, TARGET, steps)


def test_a_peers_failure_names_its_cause_on_one_line():
    """torch.compile wraps the compiler's error under a line that only introduces it; the bench's one
    line carries the cause too, so a peer that fails to warm up says why."""
    from tfdash.profiling.bench import said

    wrapped = RuntimeError("backend='inductor' raised:\nCalledProcessError: gcc failed\n\nSet TORCH_LOGS=+dynamo")
    assert said(wrapped) == "backend='inductor' raised: CalledProcessError: gcc failed"
    assert said(ValueError("plain\nsecond")) == "plain" and said(ValueError("")) == ""
    assert len(said(ValueError("x" * 900))) == 300


def test_a_run_stopped_in_its_prompt_reports_no_rate():
    """Ctrl+C while a long prompt was taken in chunks printed "0.0 tok/s over the whole generation
    (0 new tokens in 0.000 s, prompt included)": a rate and a time the run never had, beside
    "time to first token -"; tfdash diff shows the same run's tok/s as —."""
    from tfdash.stats import summary

    line = summary(0.0, 0, 0, 0, 0, None, None, None, 6000)
    assert line.startswith("- tok/s over the whole generation (no new token: the run stopped before its first)")
    assert "0.0 tok/s" not in line and "0.000 s" not in line and line.endswith("prompt 6000 tokens, 0 new")
