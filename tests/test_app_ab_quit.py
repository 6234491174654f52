"""Quitting (Ctrl+C, a stop signal) or re-running (r) while a live A/B runs: the A/B is cancelled
after its window in progress, the app waits for its worker (a bounded time) before it stops the
engine or starts the next run, and what the A/B measured so far is kept in the final snapshot and
shown, as an `esc` cancel keeps it. The engine is a slow stand-in that measures a window every
50 ms for 30 s and checks its cancel event between windows, as Session.ab does.

On the A/B screen `q` is its own Cancel/Close key (bindings.AB) and the app's other keys do not
reach past a modal screen, so a quit lands while an A/B runs as Ctrl+C (a priority key), a stop
signal, or the command palette's Quit (q); a re-run as the palette's Re-run (r)."""

from __future__ import annotations

import dataclasses
import signal
import time

import pytest
from fixtures.appkit import LiveStandIn, isolated_config, sync  # noqa: F401
from test_app_compare import once, recorded_ab, settle, wait_for

from tfdash.app.app import TfdashApp
from tfdash.app.messages import ABMeasured, ABProgressed
from tfdash.profiling.messages import ABProgress

# the stand-in's A/B: 30 s if nothing cancels it. Typing into the palette waits for the app to go idle
# after each key, up to a second each while the A/B's progress keeps it busy; at 10 s a loaded host
# had the A/B done before the palette's command ran
WINDOW_S, WINDOWS = 0.05, 600
EXIT_S = 3.0  # quitting mid-A/B: one window, then the snapshot (a 2-core runner is slow to deliver keys)
pytestmark = pytest.mark.serial  # each bounds how long the app takes (EXIT_S)


class SlowAB(LiveStandIn):
    """A live stand-in whose A/B takes a window every WINDOW_S, checking `cancel` between windows;
    its result goes into the snapshot as a Session's does. `asked` records each A/B's end and each
    run's start, in order."""

    def ab(self, what, progress=None, cancel=None, **sizes) -> dict:
        say = progress or (lambda p: None)
        done = 0
        while done < WINDOWS and not (cancel is not None and cancel.is_set()):
            time.sleep(WINDOW_S)
            done += 1
            say(ABProgress(what, "running", done, WINDOWS, f"{what}: window {done}/{WINDOWS}"))
        result = {**recorded_ab(), "what": what, "windows_per_side": done // 2}
        if done < WINDOWS:
            result["incomplete"] = "cancelled"
        self.snap = dataclasses.replace(self.snap, ab=(*self.snap.ab, result))
        self.asked.append(f"ab {what} after {done} windows")
        return result

    def start(self, app) -> None:
        self.asked.append("run")
        super().start(app)


async def start_ab(pilot, messages) -> None:
    await settle(pilot)
    await pilot.press("a", "enter")
    await wait_for(pilot, lambda: any(m.progress.phase == "running" for m in once(messages, ABProgressed)),
                   timeout=30, what="the A/B's first window")


async def palette(pilot, command: str) -> None:
    """Open the command palette (Ctrl+P) and type `command` in it: enter runs it."""
    await pilot.press("ctrl+p")
    await settle(pilot)
    await pilot.press(*command)
    await settle(pilot)


def ran(source) -> int:
    """How many windows the stand-in's A/B measured before it ended."""
    lines = [a for a in source.asked if a.startswith("ab ")]
    assert len(lines) == 1, f"the A/B's worker had not ended when the app went on: {source.asked}"
    return int(lines[0].split(" after ")[1].split()[0])


@pytest.mark.parametrize("how", ["ctrl+c", "SIGTERM", "palette"])
@sync
async def test_quitting_mid_ab_cancels_it_waits_for_it_and_keeps_what_it_measured(isolated_config, how):
    messages = []
    source = SlowAB()
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await start_ab(pilot, messages)
        if how == "palette":
            await palette(pilot, "quit")
        t0 = time.monotonic()
        if how == "ctrl+c":
            await pilot.press("ctrl+c")
        elif how == "SIGTERM":  # what the CLI's handler hands the app
            app.quit_on_signal(signal.SIGTERM)
        else:
            await pilot.press("enter")
        await wait_for(pilot, lambda: not app.is_running, timeout=15, what="the app to exit")
        took = time.monotonic() - t0
    assert took < EXIT_S, f"quitting took {took:.1f} s with an A/B running"
    assert ran(source) < WINDOWS  # the A/B's worker saw the cancel and stopped early
    [measured] = once(messages, ABMeasured)
    assert measured.result["incomplete"] == "cancelled"
    final = app.return_value
    assert final is not None and final.ab[-1]["incomplete"] == "cancelled"  # kept, like any measurement
    assert final.ab[-1]["windows_per_side"] == ran(source) // 2


@sync
async def test_rerun_mid_ab_cancels_it_before_the_next_run_starts(isolated_config):
    messages = []
    source = SlowAB()
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await start_ab(pilot, messages)
        await palette(pilot, "re-run")
        t0 = time.monotonic()
        await pilot.press("enter")
        await wait_for(pilot, lambda: source.asked.count("run") == 2, timeout=15, what="the next run")
        took = time.monotonic() - t0
        assert took < EXIT_S, f"r took {took:.1f} s to start the next run with an A/B running"
        await wait_for(pilot, lambda: once(messages, ABMeasured), timeout=5, what="the cancelled A/B's result")
        [measured] = once(messages, ABMeasured)
        assert measured.result["incomplete"] == "cancelled"
        # the A/B had ended (and its result was in the snapshot) before the next run began
        assert [a.split(" after ")[0] for a in source.asked] == ["run", "ab tilelang-unfused", "run"]
        assert ran(source) < WINDOWS


@sync
async def test_a_run_that_ends_mid_ab_with_exit_when_done_waits_for_the_ab_and_keeps_it(isolated_config):
    """With `exit_when_done` (tfdash.app.overhead) the app quits with the final snapshot as soon as
    the run ends: an A/B still running then is cancelled after its window in progress and waited
    for, as a quit does, so its result reaches the snapshot the app returns."""
    from tfdash.app.messages import RunEnded

    messages = []
    source = SlowAB()
    app = TfdashApp(source, theme="tfdash-dark", exit_when_done=True)
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await start_ab(pilot, messages)
        t0 = time.monotonic()
        app.post_message(RunEnded(source.run_id))  # the generation reached its last token
        await wait_for(pilot, lambda: not app.is_running, timeout=15, what="the app to exit")
        took = time.monotonic() - t0
    assert took < EXIT_S, f"exiting took {took:.1f} s with an A/B running"
    assert ran(source) < WINDOWS  # the A/B's worker saw the cancel and stopped early
    final = app.return_value
    assert final is not None and final is app.final_snapshot
    assert final.ab and final.ab[-1]["incomplete"] == "cancelled"  # what it measured, kept
    assert final.ab[-1]["windows_per_side"] == ran(source) // 2
