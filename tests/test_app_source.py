"""The app reads any object that keeps the Source protocol (it never asks which kind it holds),
and a marginal measured in this session is shown once, though the snapshot then carries it too."""

from __future__ import annotations

import dataclasses

import pytest
from fixtures.appkit import SNAPSHOT, LiveStandIn, isolated_config, quits_at_once, sync  # noqa: F401

from tfdash.app.app import TfdashApp
from tfdash.app.messages import MarginalMeasured, SessionNews
from tfdash.profiling.export import load_snapshot

RESULT = {"what": "L1.gate_up", "delta_ns": 12345.0, "spread_ns": 99.0, "rounds": 3}


class MeasuringSource(LiveStandIn):
    """A source of neither kind: a recorded run that can measure a marginal, which its
    snapshots then carry (as a live Session's do)."""

    def marginal(self, what: str, cancel=None) -> dict:
        self.asked.append(what)
        self.snap = dataclasses.replace(self.snap, marginal=self.snap.marginal + (dict(RESULT),))
        return dict(RESULT)


@sync
async def test_a_measured_marginal_is_shown_once(isolated_config):
    source = MeasuringSource()
    app = TfdashApp(source, tilelang_source=lambda fam: "# stand-in\n", cuda_source=lambda launch: "// stand-in\n")
    messages = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await pilot.pause(0.2)
        await pilot.press("enter", "down", "m")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert source.asked == ["L1.gate_up"]
        [m] = {id(m): m for m in messages if isinstance(m, MarginalMeasured)}.values()
        assert m.result == RESULT
        app.post_message(SessionNews())  # the next snapshot carries the measurement too
        for _ in range(200):  # the refresh is coalesced (up to SLOWEST_REFRESH_S on a busy host)
            if app.snapshot.marginal and app.snapshot.marginal[-1] == RESULT:
                break
            await pilot.pause(0.05)
        assert app.snapshot.marginal[-1] == RESULT
        body = str(app.screen.query_one("#marginal-body").render())
        assert body.count("12.3") == 1 and "99" in body, body


def test_a_queued_warning_is_never_superseded_by_a_status_line():
    from tfdash.app.messages import EngineStatus

    assert EngineStatus("capturing").can_replace(EngineStatus(""))  # a newer line replaces an older
    assert not EngineStatus("warning: tilelang is missing").can_replace(EngineStatus(""))


async def marginal_tab(app, pilot) -> str:
    """The drill-down of the second row opened on its marginal tab, as a user gets there: that tab's text."""
    await pilot.pause(0.2)
    await pilot.press("enter", "down")
    await pilot.pause()
    app.screen.query_one("TabbedContent").active = "marginal"
    await pilot.pause()
    return str(app.screen.query_one("#marginal-body").render())


@sync
async def test_a_cpu_runs_marginal_tab_says_it_cannot_before_any_key(isolated_config):
    """A live run without CUDA graphs has no graph to double a launch in: the tab says so at once,
    where it offered m and answered "unavailable" only after it was pressed."""
    import dataclasses

    source = MeasuringSource()
    why = "marginal cost needs CUDA graphs; this is torch-eager on the CPU"
    source.snap = dataclasses.replace(source.snap, unavailable={**source.snap.unavailable, "marginal": why})
    app = TfdashApp(source, tilelang_source=lambda fam: "# stand-in\n", cuda_source=lambda launch: "// stand-in\n")
    async with app.run_test(size=(160, 48)) as pilot:
        body = " ".join((await marginal_tab(app, pilot)).split())
        assert f"Not in this run: {why}." in body and "Press m" not in body and "not measured yet" not in body


@sync
async def test_a_saved_snapshots_marginal_tab_offers_no_key_it_cannot_keep(isolated_config):
    """A saved snapshot has no engine to double a launch in: its marginal tab says it shows what its
    run measured, where a live run's offers m; pressing m there still says why, in one line."""
    from tfdash.app.live import SnapshotSource

    for source, offers in ((SnapshotSource(load_snapshot(SNAPSHOT)), False), (MeasuringSource(), True)):
        app = TfdashApp(source, tilelang_source=lambda fam: "# stand-in\n", cuda_source=lambda launch: "// stand-in\n")
        async with app.run_test(size=(160, 48)) as pilot:
            body = await marginal_tab(app, pilot)
            assert ("Press m to measure it" in body) is offers, body
            assert ("A saved snapshot shows what its run measured" in body) is not offers, body
            if not offers:
                assert "not measured in this snapshot's run" in body, body
                await pilot.press("m")
                await app.workers.wait_for_complete()
                await pilot.pause()
                assert "a saved snapshot has no live session to measure" in str(
                    app.screen.query_one("#marginal-body").render())


@pytest.mark.parametrize(("kind", "offered"), [("gpu", True), ("cpu", False), ("saved", False)])
@sync
async def test_m_is_in_the_drill_downs_footer_only_where_a_marginal_can_be_measured(isolated_config, kind, offered):
    """A CPU run (no CUDA graphs) and a saved snapshot cannot measure a marginal: the drill-down's
    footer leaves `m` out, and pressed anyway it answers in one toast, the reason, with no
    "measuring…" before it. A run that can measure keeps `m` in the footer."""
    from fixtures.appkit import LiveStandIn
    from test_app_fit import footer, screen_text, settle

    from tfdash.app.live import SnapshotSource

    why = "marginal cost needs CUDA graphs; this is torch-eager on the CPU"
    snap = load_snapshot(SNAPSHOT)
    if kind == "cpu":
        snap = dataclasses.replace(snap, unavailable={**snap.unavailable, "marginal": why})
    source = SnapshotSource(snap) if kind == "saved" else LiveStandIn(snap)
    app = TfdashApp(source, tilelang_source=lambda fam: "# stand-in\n", cuda_source=lambda launch: "// stand-in\n")
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        keys = footer(app)
        assert "esc Back" in keys and ("m Marginal" in keys) is offered, keys
        if offered:
            return
        await pilot.press("m")
        await app.workers.wait_for_complete()
        await settle(pilot)
        text = screen_text(app)
    assert "marginal L0.gate_up: unavailable:" in text and "measuring the marginal cost" not in text, text


def test_quitting_while_the_cuda_tab_compiles_ends_the_compile_at_once(isolated_config, monkeypatch, tmp_path):
    """q on the drill-down's CUDA tab while its compile ran (a cold tilelang and nvcc: tens of seconds)
    closed the screen and then waited for the compile to end before the process exited, the shell
    held meanwhile. Now the compile's child is ended with the screen."""
    import sys

    from test_app_fit import screen_text

    from tfdash.app import cuda_source

    pid_file = tmp_path / "pid"
    sleeper = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    monkeypatch.setattr(cuda_source, "child_command", lambda spec: [sys.executable, "-c", sleeper])
    app = TfdashApp(LiveStandIn(), tilelang_source=lambda fam: "# stand-in\n")  # the real compile path

    async def start(app, pilot):
        await pilot.pause(0.2)
        await pilot.press("enter", "2")

    quits_at_once(app, start, pid_file, lambda app: ("compiling" in screen_text(app), screen_text(app)))
