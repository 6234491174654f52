"""Nsight Compute's counters in the dashboard, on a recorded snapshot driven with Pilot: `n` in the
drill-down on a CPU host says in one line why it cannot measure; with the measurement replaced
by the recorded ncu output (tests/fixtures/ncu-raw.csv) the counters fill the drill-down's tab,
the kernel table's "meas bytes" column and the CSV export."""

from __future__ import annotations

import csv
from pathlib import Path

from fixtures.appkit import SNAPSHOT, isolated_config, one_torch_thread, quits_at_once, sync  # noqa: F401

from tfdash.app.main import snapshot_app

# the synthetic ncu page names today's kernels; the recorded snapshot ran the plan before gate_up
# made silu(g) * u, whose gate_up was gemv_gate_up
RAW = (Path(__file__).resolve().parent / "fixtures" / "ncu-raw.csv").read_text().replace(
    "gemv_gate_up_silu_kernel", "gemv_gate_up_kernel")


def make_app(**kw):
    from test_app_snapshots import fake_tilelang

    return snapshot_app(SNAPSHOT, theme="tfdash-dark", tilelang_source=fake_tilelang, **kw)


def recorded_counters(snap, role, progress):
    """What measure_role hands back, from the recorded ncu output instead of a GPU."""
    from tfdash.app.drill_model import plan_of
    from tfdash.profiling import counters as cmod
    from tfdash.profiling import ncu

    progress("profiled kernel 1: gemv_gate_up_kernel")
    plan = plan_of(snap)
    index = next(k.index for k in snap.kernels if k.role == role)
    rec = [r for r in ncu.parse_csv(RAW) if r.kernel == cmod.device_kernel(plan.launches[index])]
    return cmod.match(rec[:1], plan, index, index, 512)


async def open_gate_up(app, pilot):
    from tfdash.app.model import group_rows

    await pilot.pause()
    row = next(r for r in group_rows(app.snapshot.kernels, "op") if r.label == "gate_up")
    app.open_drill(row)
    await pilot.pause()
    assert app.screen.current == 4  # L0.gate_up


def body(app) -> str:
    return str(app.screen.query_one("#counters-body").render())


@sync
async def test_counters_key_on_a_cpu_host_says_why(isolated_config):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await open_gate_up(app, pilot)
        await pilot.press("4")
        await pilot.pause()
        # a saved snapshot: no engine of the dashboard's decodes; the child builds the snapshot's model
        assert "one that builds this snapshot's model" in body(app) and "keeps decoding" not in body(app)
        # said as the tab opens (it offered "Press n to measure it", and n then said this)
        text = body(app)
        assert "unavailable: counters need an NVIDIA GPU and there is no CUDA device here" in text
        assert "Press n" not in text and "not measured yet" not in text
        await pilot.press("n")  # pressed anyway: the same line
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = body(app)
        assert "unavailable: counters need an NVIDIA GPU and there is no CUDA device here" in text
        assert "Traceback" not in text
        assert "not measured yet" not in text and "Press n" not in text  # nothing to wait for, no key to press
        assert app.snapshot.kernels[4].counters is None


@sync
async def test_counters_fill_the_drill_down_table_and_csv(isolated_config, tmp_path):
    from textual.widgets import DataTable

    app = make_app(export_dir=tmp_path)
    app.counters_fn = recorded_counters
    async with app.run_test(size=(160, 48)) as pilot:
        await open_gate_up(app, pilot)
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = body(app)
        assert "L0.gate_up" in text and "at ctx_len  512" in text
        assert "DRAM read  50.36 MB   analyzer 50.34 MB   ratio 1.000×" in text
        assert "23.0 % of peak" in text and "40 a thread" in text and "264 × 1 × 1 blocks" in text
        assert "serialized under ncu" in text
        assert app.snapshot.kernels[4].counters.dram_read == 50_362_112
        await pilot.press("escape")
        await pilot.pause()
        t = app.screen.query_one("#kernel-table", DataTable)
        assert "meas bytes" in [str(c.label) for c in t.columns.values()]
        cells = {str(t.get_row_at(i)[0]): str(t.get_cell_at((i, list(t.columns).index("meas_bytes"))))
                 for i in range(t.row_count)}
        assert cells["gate_up"] == "50.39 MB (1/28)" and cells["down"] == "—"
        path = app.action_export("csv")
        rows = list(csv.DictReader(path.open()))
        assert rows[4]["dram_read"] == "50362112" and rows[4]["registers_per_thread"] == "40"
        assert rows[5]["dram_read"] == ""


def test_quitting_while_ncu_measures_ends_it_at_once(isolated_config, monkeypatch, tmp_path):
    """q while n's ncu run went on (an engine build and every profiled kernel: minutes on a GPU host)
    closed the drill-down and then waited for ncu to end, up to its 900 s timeout, the shell held
    meanwhile. Now ncu's process group is ended as the app exits. ncu is the stand-in
    (fixtures/fake_ncu.py) that sleeps; the path from n to it is the dashboard's own."""
    from tfdash.app.drill_model import plan_of
    from tfdash.profiling import counters as cmod

    pid_file = tmp_path / "pid"
    monkeypatch.setenv("TFDASH_NCU", str(Path(__file__).resolve().parent / "fixtures" / "fake_ncu.py"))
    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    monkeypatch.setenv("FAKE_NCU_PID", str(pid_file))
    monkeypatch.setattr(cmod, "check_this_host", lambda device, backend=None: None)  # as on a GPU host
    monkeypatch.setattr(cmod, "prepare", lambda args, pick: cmod.Request(
        plan_of(app.snapshot), tuple(pick(plan_of(app.snapshot))), args))  # the default 900 s timeout
    app = make_app()

    async def start(app, pilot):
        await open_gate_up(app, pilot)
        await pilot.press("n")

    quits_at_once(app, start, pid_file, lambda app: ("ncu run 1/1: L0.gate_up" in body(app), body(app)))


@sync
async def test_a_measurement_goes_on_after_the_drill_down_closes(isolated_config, monkeypatch):
    """n, then esc back to the dashboard while ncu runs (minutes on a GPU host): ncu was ended with
    the drill-down and the measurement lost without a word, where before it went on and its counters
    reached the kernel table. Now it goes on, its progress and result reach the Source; only the
    app's exit ends it (q: test_quitting_while_ncu_measures_ends_it_at_once)."""
    import threading

    from tfdash.app.screens import drill_counters
    from tfdash.errors import TfdashError

    closed, cancels = threading.Event(), []

    def measure_role(snap, role, progress, cancel=None):  # ncu's run, still going when esc closes the screen
        cancels.append(cancel)
        closed.wait(10)
        if cancel is not None and cancel.wait(0.3):
            raise TfdashError("cancelled")
        return recorded_counters(snap, role, progress)

    monkeypatch.setattr(drill_counters, "measure_role", measure_role)
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await open_gate_up(app, pilot)
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "MainScreen"
        closed.set()  # the screen's worker was cancelled with it; its thread goes on
        for _ in range(100):
            if app.snapshot.kernels[4].counters is not None:
                break
            await pilot.pause(0.05)
        assert app.snapshot.kernels[4].counters is not None and app.snapshot.kernels[4].counters.dram_read == 50_362_112
        assert not cancels[0].is_set()
    assert cancels[0].is_set()  # the app's exit ends it


@sync
async def test_the_counters_tab_says_what_a_live_runs_engine_is_doing(isolated_config, one_torch_thread):
    """The counters tab of a live dashboard said "the dashboard's engine keeps decoding" while the
    run was paused and after it was over; its words (and the drill-down's top bar) follow the run."""
    from test_app_live import Recorder, wait_for

    from tfdash.app.main import live_app
    from tfdash.app.screens.main import TopBar
    from tfdash.engine import load_engine

    eng = load_engine(model="qwen3-tiny", device="cpu", capacity=4096)
    app = live_app(Recorder(eng, 3000), max_new_tokens=3000)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 5, what="tokens")
        await pilot.press("enter", "4")
        await pilot.pause()
        assert "keeps decoding" in body(app) and "paused" not in body(app)
        await pilot.press("space")
        await pilot.pause()
        assert app.state == "paused" and "the dashboard's engine stays paused" in body(app)
        assert "keeps decoding" not in body(app) and "paused" in top(app.screen.query_one(TopBar))
        await pilot.press("space")
        await pilot.pause()
        assert "keeps decoding" in body(app)
        app.source.stop()
        await wait_for(pilot, lambda: app.state == "done", what="the run to end")
        await pilot.pause()
        text = body(app)
        assert "the dashboard's run is over" in text and "keeps decoding" not in text, text
        await pilot.press("q")


def top(bar) -> str:
    return str(bar.query_one("#topbar-state").render())
