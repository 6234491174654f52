"""Quitting (Ctrl+C) or re-running (r) while the drill-down measures a marginal (`m`): the
measurement is cancelled after its round in progress and the app waits for its worker (a bounded
time) before it stops the engine or starts the next run, as it does for a live A/B
(test_app_ab_quit). The engine is a slow stand-in that measures a round every 50 ms for 10 s and
checks its cancel event between rounds, as tfdash.profiling.marginal.measure does; what it
measured is kept in the snapshot, marked incomplete."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
from fixtures.appkit import LiveStandIn, isolated_config, sync  # noqa: F401
from test_app_ab_quit import EXIT_S, palette
from test_app_compare import once, settle, wait_for

from tfdash.app.app import TfdashApp
from tfdash.app.messages import MarginalMeasured

ROUND_S, ROUNDS = 0.05, 200  # the stand-in's marginal: 10 s if nothing cancels it
pytestmark = pytest.mark.serial  # each bounds how long the app takes (EXIT_S)


class SlowMarginal(LiveStandIn):
    """A live stand-in whose marginal takes a round every ROUND_S, checking `cancel` between
    rounds; its result goes into the snapshot as a Session's does. `asked` records each
    marginal's end and each run's start, in order; `measuring` is set once a marginal runs."""

    def __init__(self):
        super().__init__()
        self.measuring = threading.Event()

    def marginal(self, what: str, cancel=None) -> dict:
        self.measuring.set()
        done = 0
        while done < ROUNDS and not (cancel is not None and cancel.is_set()):
            time.sleep(ROUND_S)
            done += 1
        result = {"what": what, "delta_ns": 1000.0, "spread_ns": 10.0, "rounds": done}
        if done < ROUNDS:
            result["incomplete"] = "cancelled"
        self.snap = dataclasses.replace(self.snap, marginal=(*self.snap.marginal, result))
        self.asked.append(f"marginal {what} after {done} rounds")
        return result

    def start(self, app) -> None:
        self.asked.append("run")
        super().start(app)


async def start_marginal(pilot, source) -> None:
    await settle(pilot)
    await pilot.press("enter", "m")  # the drill-down of the first row, its marginal measured
    await wait_for(pilot, source.measuring.is_set, timeout=30, what="the marginal to start")


def ran(source) -> int:
    """How many rounds the stand-in's marginal measured before it ended."""
    lines = [a for a in source.asked if a.startswith("marginal ")]
    assert len(lines) == 1, f"the marginal's worker had not ended when the app went on: {source.asked}"
    return int(lines[0].split(" after ")[1].split()[0])


@sync
async def test_quitting_mid_marginal_cancels_it_waits_for_it_and_keeps_what_it_measured(isolated_config):
    source = SlowMarginal()
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await start_marginal(pilot, source)
        t0 = time.monotonic()
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running, timeout=15, what="the app to exit")
        took = time.monotonic() - t0
    assert took < EXIT_S, f"quitting took {took:.1f} s with a marginal being measured"
    assert ran(source) < ROUNDS  # the marginal's worker saw the cancel and stopped early
    final = app.return_value
    assert final is not None and final.marginal[-1]["incomplete"] == "cancelled"
    assert final.marginal[-1]["rounds"] == ran(source)


@sync
async def test_rerun_mid_marginal_cancels_it_before_the_next_run_starts(isolated_config):
    messages = []
    source = SlowMarginal()
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await start_marginal(pilot, source)
        await palette(pilot, "re-run")
        t0 = time.monotonic()
        await pilot.press("enter")
        await wait_for(pilot, lambda: source.asked.count("run") == 2, timeout=15, what="the next run")
        took = time.monotonic() - t0
        assert took < EXIT_S, f"r took {took:.1f} s to start the next run with a marginal being measured"
        # the marginal had ended (and its result was in the snapshot) before the next run began
        assert [a.split(" after ")[0] for a in source.asked] == ["run", "marginal L0.gate_up", "run"]
        assert ran(source) < ROUNDS
        await wait_for(pilot, lambda: once(messages, MarginalMeasured), timeout=5, what="the marginal's result")
        [measured] = once(messages, MarginalMeasured)
        assert measured.result["incomplete"] == "cancelled"
