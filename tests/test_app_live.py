"""The dashboard on a live Session over the real tiny CPU engine (qwen3-tiny, random weights):
tokens arrive, pause and resume, re-run, profile a window, quit mid-run with nothing lost, and
the refresh rate stays at or under 20 Hz."""

from __future__ import annotations

import time

import pytest
from fixtures.appkit import isolated_config, one_torch_thread, sync  # noqa: F401  (fixtures)

from tfdash.app.main import live_app, make_session
from tfdash.profiling.probe import CPU

SIZE = (140, 42)
PROMPT = "The GPU"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny_engine():
    from tfdash.engine import load_engine

    return load_engine(model="qwen3-tiny", device="cpu", capacity=4096)


class Recorder:
    """A session factory that remembers every Session it made and every token batch each posted."""

    def __init__(self, engine, max_new: int, **kw):
        self.engine, self.max_new, self.kw = engine, max_new, kw
        self.sessions = []
        self.produced: list[list] = []

    def __call__(self, status):
        s = make_session(self.engine, PROMPT, self.max_new, target=CPU, **self.kw)
        seen: list = []
        self.sessions.append(s)
        self.produced.append(seen)
        run = s.run

        def recording_run(on_event=None, stop=None):
            def tap(ev):
                if getattr(ev, "kind", "") == "tokens":
                    seen.extend(ev.tokens)
                on_event(ev)

            return run(on_event=tap, stop=stop)

        s.run = recording_run
        return s


def toasts_of(app) -> list[str]:
    """The messages the app notifies from now on, in order (the toasts a person reads)."""
    said = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
    return said


async def wait_for(pilot, cond, timeout: float = 30.0, what: str = "") -> None:
    t = time.monotonic()
    while not cond():
        if time.monotonic() - t > timeout:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await pilot.pause(0.05)


@sync
async def test_tokens_stream_in_on_the_embedded_default(isolated_config, tmp_path, monkeypatch):
    """The CLI's own wiring: `tfdash --device cpu --max-new-tokens 48` builds the embedded default
    (qwen3-tiny, random weights) in the worker, then a Session that probes the host's bandwidth."""
    from tfdash.app.main import session_factory
    from tfdash.cli import run_parser

    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    args = run_parser().parse_args(["--device", "cpu", "--max-new-tokens", "48"])
    app = live_app(session_factory(args, 48), max_new_tokens=48)
    notes = []
    async with app.run_test(size=SIZE) as pilot:
        from tfdash.app.widgets.continuation import Continuation

        t0 = time.monotonic()
        while app.snapshot is None:  # "building the engine…", "probing memory bandwidth…"
            if app.status_note and app.status_note not in notes:
                notes.append(app.status_note)
            assert time.monotonic() - t0 < 60, f"no first snapshot; status lines: {notes}"
            await pilot.pause(0.02)
        assert "building the engine…" in notes
        await wait_for(pilot, lambda: app.snapshot.new_tokens > 0, what="a token")
        assert app.state in ("running", "done")
        await wait_for(pilot, lambda: app.state == "done", what="the run's end")
        snap = app.snapshot
        assert snap.new_tokens == 48 and len(snap.tokens) == 48
        assert snap.text == app.source.session.engine.tokenizer.decode([t.token_id for t in snap.tokens])
        cont = app.screen.query_one(Continuation)
        assert cont.text == snap.text and cont.text.strip()
        # The panes show the run: tok/s, the kernel table's predictions, why NVML is absent.
        assert snap.meta.model["name"] == "qwen3-tiny" and snap.meta.checkpoint == "random"
        plan = app.source.session.plan
        assert len(snap.kernels) == len(plan) and "nvml" in snap.unavailable
        from tfdash.app.widgets.kernel_table import KernelTable

        ops = {la.op for la in plan.launches}
        assert app.screen.query_one(KernelTable).table.row_count == len(ops)  # grouped by op


@sync
async def test_quit_mid_run_keeps_what_was_measured(isolated_config, tiny_engine, tmp_path, monkeypatch, capsys):
    from tfdash.app.main import exit_status

    monkeypatch.chdir(tmp_path)
    rec = Recorder(tiny_engine, 3000)
    app = live_app(rec, max_new_tokens=3000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 40, what="40 tokens")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=20, what="the app to exit")
    snap = app.return_value
    assert snap is app.final_snapshot and snap is not None
    capsys.readouterr()
    assert exit_status(app) == 0 and capsys.readouterr().err == ""  # q is not an interrupt
    produced = rec.produced[0]
    assert 40 <= snap.new_tokens < 3000
    assert snap.tokens == tuple(produced)  # every token the session produced, nothing more
    assert snap.new_tokens == len(produced) and snap.text == "".join(t.text for t in produced)
    assert rec.sessions[0].snapshot() == snap  # the session's own final state
    assert list(tmp_path.iterdir()) == [tmp_path / "config"]  # nothing written on quit (no --save)
    assert list((tmp_path / "config").iterdir()) == []


@sync
async def test_ctrl_c_stops_cleanly_and_autosaves(isolated_config, tiny_engine, tmp_path, capsys):
    """Ctrl+C quits as q does, and the command exits as an interrupted one: 130 and a line after
    the screen closes, as headless's Ctrl+C."""
    from tfdash.app.main import exit_status
    from tfdash.profiling.export import load_snapshot

    rec = Recorder(tiny_engine, 3000)
    app = live_app(rec, max_new_tokens=3000, save_path=tmp_path / "run.json")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 10, what="tokens")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running, timeout=20, what="the app to exit")
    assert load_snapshot(tmp_path / "run.json") == app.return_value
    assert app.return_value.tokens == tuple(rec.produced[0])
    capsys.readouterr()
    assert exit_status(app) == 130
    assert capsys.readouterr().err == "tfdash: interrupted (SIGINT); what was measured is kept\n"


@sync
async def test_pause_resume_and_rerun(isolated_config, tiny_engine):
    rec = Recorder(tiny_engine, 3000)
    app = live_app(rec, max_new_tokens=3000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 10, what="tokens")
        await pilot.press("space")
        assert app.state == "paused"
        await pilot.pause(0.3)
        held = rec.sessions[0].snapshot().new_tokens
        await pilot.pause(0.4)
        assert rec.sessions[0].snapshot().new_tokens == held  # the engine holds
        await pilot.press("space")
        assert app.state == "running"
        await wait_for(pilot, lambda: rec.sessions[0].snapshot().new_tokens > held + 5, what="more tokens")
        # r: stop this run and start a fresh session on the same engine.
        await pilot.press("r")
        await wait_for(pilot, lambda: len(rec.sessions) == 2 and app.state == "running", what="the re-run")
        await wait_for(pilot, lambda: app.snapshot.new_tokens > 0 and app.snapshot is not None
                       and app.snapshot.tokens[0].index == 0, what="the re-run's tokens")
        assert rec.sessions[0].snapshot().new_tokens < 3000  # the first was stopped, not finished
        await pilot.press("q")


@sync
async def test_profile_a_window_now_on_cpu(isolated_config, tiny_engine):
    rec = Recorder(tiny_engine, 3000, auto_window_at=0)  # only p's window: none of the dashboard's own
    app = live_app(rec, max_new_tokens=3000)
    messages = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        from tfdash.app.messages import MarginalMeasured
        from tfdash.app.widgets.kernel_table import KernelTable

        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 5, what="tokens")
        assert app.snapshot.roofline is None
        await pilot.press("p")
        await wait_for(pilot, lambda: app.snapshot.roofline is not None, what="a profile window")
        snap = app.snapshot
        assert snap.roofline.timing == "direct" and snap.roofline.steps == 32
        assert all(k.measured_p50_ns is not None for k in snap.kernels)
        kt = app.screen.query_one(KernelTable)
        assert all(r.measured is not None for r in kt.rows)
        assert any(n.title == "profile window" for n in app._notifications)
        # The drill-down has a measured point at the window's ctx_len; m says why there is no marginal.
        await pilot.press("enter")
        drill = app.screen
        from tfdash.app import drill_model

        mx, _ = drill_model.measured_points(app.windows, drill.row.members)
        assert mx == [snap.roofline.ctx_len]
        await pilot.press("m")
        await wait_for(pilot, lambda: any(isinstance(m, MarginalMeasured) for m in messages),
                       what="the marginal result")
        [m] = {id(m): m for m in messages if isinstance(m, MarginalMeasured)}.values()  # it bubbles: seen twice
        assert "CPU" in m.result["unavailable"]
        assert "marginal cost needs CUDA graphs" in str(drill.query_one("#marginal-body").render())
        await pilot.press("escape", "q")


@pytest.mark.serial  # a rate of refreshes a second
@sync
async def test_refresh_is_coalesced_to_20_hz(isolated_config, tiny_engine):
    rec = Recorder(tiny_engine, 3000, batch_s=0.0)  # a batch per token: a flood of news
    app = live_app(rec, max_new_tokens=3000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 1, what="tokens")
        n0, t0 = app.refreshes, time.monotonic()
        tokens0 = app.snapshot.new_tokens
        # Many token events (however slow the host), over at least 1.5 s ...
        await wait_for(pilot, lambda: app.snapshot.new_tokens - tokens0 > 30 and time.monotonic() - t0 >= 1.5,
                       what="30 token events")
        rate = (app.refreshes - n0) / (time.monotonic() - t0)
        assert 2 <= rate <= 21  # ... rendered at most 20 times a second
        await pilot.press("q")


def test_dashboard_overhead_ab(isolated_config):
    """The A/B helper runs both arms on the real engine and reports medians (the number itself is
    the host's: recorded on the H200, not asserted on a shared CPU runner)."""
    from fixtures.appkit import micro_engine

    from tfdash.app.overhead import dashboard_ab

    eng = micro_engine(capacity=1024)
    out = dashboard_ab(lambda: make_session(eng, PROMPT, 400, target=CPU, nvml=False), rounds=1, size=(120, 40))
    assert len(out["headless"]) == len(out["dashboard"]) == 1
    assert out["medians"]["headless"] > 0 and out["medians"]["dashboard"] > 0
    assert out["refreshes"][0] >= 1
    assert out["overhead_pct"] == pytest.approx(100 * (1 - out["dashboard"][0] / out["headless"][0]))
    for arm in ("headless", "dashboard"):
        [d] = out["details"][arm]
        assert 0 < d["step_p50_ms"] <= d["step_p99_ms"] and d["slow_steps"] >= 0


@sync
async def test_an_engine_error_is_shown_not_raised(isolated_config):
    from tfdash.app.widgets.continuation import Continuation
    from tfdash.errors import CheckpointError

    def broken(status):
        status("building the engine…")
        raise CheckpointError("L3.w_qkv: expected shape (4096, 2048), found (4096, 1024)")

    app = live_app(broken)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state == "error", what="the error state")
        assert "expected shape" in app.status_note
        assert any(n.severity == "error" and "expected shape" in n.message for n in app._notifications)
        assert app.snapshot is None
        cont = app.screen.query_one(Continuation)
        assert "expected shape" in str(cont.render())
        await pilot.press("q")
    assert app.return_value is None


@sync
async def test_a_warning_from_the_engine_stays_as_a_toast(isolated_config, tiny_engine, monkeypatch):
    """The torch fallback on a CUDA machine without tilelang is a warning toast, which outlasts the
    set-up lines that follow it; the run itself goes on."""
    import tfdash.engine as engine
    from tfdash.app.main import session_factory
    from tfdash.cli import run_parser

    # the tiny CPU engine stands in for the torch peer on CUDA; the note is what fallback_note says there
    monkeypatch.setattr(engine, "load_engine", lambda **kw: tiny_engine)
    monkeypatch.setattr(engine, "fallback_note", lambda device, backend, requested: "tilelang is not importable here")
    args = run_parser().parse_args(["--model", "qwen3-tiny", "--device", "cpu", "--max-new-tokens", "32"])
    app = live_app(session_factory(args, 32), max_new_tokens=32)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state in ("done", "stopped"), what="the run")
        assert any(n.severity == "warning" and "tilelang is not importable" in n.message for n in app._notifications)
        assert "tilelang is not importable" not in (app.status_note or "")
        await pilot.press("q")


@sync
async def test_space_after_the_run_ended_says_why_nothing_pauses(isolated_config, tiny_engine):
    """The footer offers space (pause) after the generation is over too: it says there is no run
    to pause and how to start one, as p does, rather than doing nothing."""
    from test_first_hour_app import screen_text

    app = live_app(Recorder(tiny_engine, 8), max_new_tokens=8)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state == "done", what="the run to end")
        said = toasts_of(app)
        await pilot.press("space")
        await pilot.pause()
        assert said == ["no run in progress to pause (r re-runs)"]
        assert " done " in screen_text(app).splitlines()[0]  # still over, nothing paused
        await pilot.press("q")


@sync
async def test_p_while_paused_says_the_window_starts_when_the_run_resumes(isolated_config, tiny_engine):
    """Paused, the engine takes no step, so a window asked for with p starts only on resume: the
    toast said "profiling the next 32 steps…" and then nothing happened."""
    app = live_app(Recorder(tiny_engine, 3000), max_new_tokens=3000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 10, what="tokens")
        await pilot.press("space")
        said = toasts_of(app)
        await pilot.press("p")
        await pilot.pause()
        assert said == ["profiling 32 steps once the run resumes (space)"], said
        await pilot.press("q")


@sync
async def test_a_third_p_while_two_windows_wait_says_it_is_not_added(isolated_config, tiny_engine):
    """The session keeps at most two windows waiting; a third p (three typed fast, or while paused)
    said "profiling…" like the others and no window came of it. It says it is not added."""
    app = live_app(Recorder(tiny_engine, 3000, auto_window_at=0), max_new_tokens=3000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 10, what="tokens")
        await pilot.press("space")
        said = toasts_of(app)
        await pilot.press("p", "p", "p")
        await pilot.pause()
        assert said == ["profiling 32 steps once the run resumes (space)"] * 2 + [
            "two profile windows are waiting already: this one is not added"], said
        await pilot.press("space")
        await wait_for(pilot, lambda: app.snapshot.profile_windows == 2, what="the two windows")
        await pilot.press("q")


@sync
async def test_a_rerun_sorts_by_a_column_it_shows(isolated_config, tiny_engine):
    """Sorted by p90 after a profile window, `r` starts a run with no p90 yet (the column goes):
    the caption then names the column the table is sorted by, measured, not the hidden p90."""
    import re

    from test_first_hour_app import screen_text

    def caption_and_header() -> tuple[str, str]:
        lines = screen_text(app).splitlines()
        return (next(line for line in lines if "│ group " in line),
                next(line for line in lines if re.search(r"│ op\s", line)))

    rec = Recorder(tiny_engine, 3000, auto_window_at=0)  # the re-run stays unmeasured while it is looked at
    app = live_app(rec, max_new_tokens=3000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 5, what="tokens")
        await pilot.press("p")
        await wait_for(pilot, lambda: app.snapshot.roofline is not None, what="a profile window")
        await pilot.press("s", "S")  # measured -> p90, then ascending
        await pilot.pause(0.2)
        assert "sort p90 ▲" in caption_and_header()[0]
        await pilot.press("r")
        await wait_for(pilot, lambda: len(rec.sessions) == 2 and app.state == "running" and app.snapshot.tokens
                       and app.snapshot.tokens[0].index == 0, what="the re-run's tokens")
        await pilot.pause(0.3)
        caption, header = caption_and_header()
        assert " p90 " not in header and "p90" not in caption, (caption, header)
        assert "sort measured ▼" in caption and "measured ▼" in header, (caption, header)
        await pilot.press("q")


@sync
async def test_a_cpu_run_shows_measured_numbers_with_no_key_pressed(isolated_config, tiny_engine):
    """A new user's first run on the CPU was over before anyone pressed p: every measured cell —, the
    roofline "not profiled yet". The dashboard takes one window early in the run on its own and says
    so in the caption (in the words that fit: 120 and 80 columns); after the run, p says what to do."""
    from test_first_hour_app import screen_text

    app = live_app(Recorder(tiny_engine, 160), max_new_tokens=160)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.state == "done", what="the run to end")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "not profiled yet" not in text and "no profile window yet" not in text, text
        assert "32 steps, direct" in text and "%  of ceiling" in text, text  # the roofline pane
        assert "a 32-step window at ctx_len" in text and "taken by the dashboard on its own" in text, text
        rows = [line for line in text.splitlines() if line.startswith(("│ attention ", "│ gate_up ", "│ lm_head "))]
        assert len(rows) == 3 and not any("—" in line for line in rows), text
        said = toasts_of(app)
        await pilot.press("p")
        await pilot.pause()
        assert said == ["the run is over: r re-runs, then p profiles"]
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "roofline not profiled yet" not in text and "auto window, 32 steps" in text, text
        await pilot.press("q")


@sync
async def test_p_while_the_engine_is_built_says_so(isolated_config):
    """While the worker builds the engine there is no session to take a window: p said "two profile
    windows are waiting already", which no one had asked for."""
    import threading

    gate = threading.Event()

    def building(status):
        status("building the engine…")
        gate.wait(20)
        raise RuntimeError("stopped by the test")

    app = live_app(building)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.running and app.status_note == "building the engine…", what="the build")
        said = toasts_of(app)
        await pilot.press("p")
        await pilot.pause()
        gate.set()
        assert said == ["the engine is still being built: p once the run starts"], said
        await pilot.press("q")
