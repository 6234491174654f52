"""The app's live side (TfdashApp mixes it in): a run started on the Source, its news coalesced
into snapshots, its status lines and its end (with `exit_when_done`, the app's exit with the
final snapshot, after a live A/B or marginal has ended as a quit waits for them: run_actions.py
`stop_measuring`).

The worker posts at most one SessionNews at a time; the app takes a snapshot at most
`refresh_hz` (20) times a second, and less often while drawing costs its thread more than
UI_BUDGET of a core. Each snapshot taken is applied whole: the profile windows the drill-down's
ctx_len sweep reads (`app.windows`), a toast per new window (a warning where its step is over the
ceiling), then the `snapshot` reactive that the screens watch. While a screen with progress of
its own is up (`HOLDS_WINDOW_TOASTS`: the A/B's box, nearly all of an 80x24 terminal, whose bar and
status line the toast would cover), a window's plain toast waits and the newest is shown when it
closes; a warning never waits.
"""

from __future__ import annotations

import time

from tfdash.app.messages import EngineStatus, RunEnded, SessionNews
from tfdash.app.model import own_window
from tfdash.profiling.probe import ceiling_note, over_ceiling
from tfdash.profiling.snapshot import ProfileSnapshot

UI_BUDGET = 0.2  # share of one core the dashboard's thread may use while the engine runs
SLOWEST_REFRESH_S = 0.25  # the adaptive refresh never drops below 4 Hz
MAX_WINDOWS = 64  # profile windows remembered for the drill-down's ctx_len sweep


class LiveRefresh:
    """The run's start, its news and its end, on TfdashApp."""

    _generation_over = False  # as the last refresh found it: the footer's keys are redrawn when it changes

    def _start_run(self) -> None:
        self.state = "starting"
        self.status_note = "building the engine…"
        self.windows.clear()
        self._last_window = None
        self.source.start(self)

    def on_session_news(self, message: SessionNews) -> None:
        if self._refresh_timer is None and self.is_running:
            # At least 1 ms: a Textual timer of 0 s never fires.
            delay = max(0.001, self._last_refresh + self.refresh_interval - time.monotonic())
            self._refresh_timer = self.set_timer(delay, self._refresh_now, name="refresh")

    def _refresh_now(self) -> None:
        self._refresh_timer = None
        if not self.is_running or not self.screen_stack:
            # The app is shutting down: Textual prunes its screens before it stops the app's timers, so
            # this timer can fire with no screen left, and a reactive set here (state) refreshes the
            # bindings of a screen that is gone (ScreenStackError). The final snapshot is taken by the quit.
            return
        self.source.take_news()
        snap = self.source.snapshot()
        self._last_refresh = time.monotonic()
        self._adapt_rate(self._last_refresh)
        if snap is None:
            return
        if self.state == "starting":
            self.state = "paused" if self.source.paused else "running"
            self.status_note = ""
        if (over := self.source.generation_over) != self._generation_over:  # once, as it ends or a run starts
            self._generation_over = over
            self.refresh_bindings()  # the footer stops offering pause and profile (app.offers), or offers them again
        self._apply(snap)

    def _adapt_rate(self, now: float) -> None:
        """Keep the dashboard out of the engine's way: if this thread used more than UI_BUDGET of
        a core over the last second (rendering, in the same process as the decode loop), refresh
        less often; when it is cheap again, go back up to refresh_hz."""
        cpu = time.thread_time()
        if self._cpu_mark is None:
            self._cpu_mark = (now, cpu)
            return
        t0, c0 = self._cpu_mark
        if now - t0 < 1.0:
            return
        share = (cpu - c0) / (now - t0)
        if share > UI_BUDGET:
            self.refresh_interval = min(SLOWEST_REFRESH_S, self.refresh_interval * 1.5)
        elif share < UI_BUDGET / 2:
            self.refresh_interval = max(self.fastest_refresh, self.refresh_interval / 1.5)
        self._cpu_mark = (now, cpu)

    def _apply(self, snap: ProfileSnapshot) -> None:
        self.refreshes += 1
        r = snap.roofline
        window = (getattr(snap, "profile_windows", 0), r.ctx_len, r.measured_step_ns) if r is not None else None
        if getattr(snap, "windows", ()):
            from tfdash.app.drill_model import windows_of

            self.windows = windows_of(snap)  # the snapshot carries the whole sweep
        if window is not None and window != self._last_window:
            measured = {k.index: k.measured_p50_ns for k in snap.kernels if k.measured_p50_ns is not None}
            if measured and not getattr(snap, "windows", ()):  # an older snapshot: gather them here
                self.windows[r.ctx_len] = measured
                while len(self.windows) > MAX_WINDOWS:
                    self.windows.pop(next(iter(self.windows)))
            if (self._last_window is not None or self.state != "snapshot") and r.timing != "continuous":
                self._window_toast(snap)
            self._last_window = window
        self.snapshot = snap

    def _window_toast(self, snap: ProfileSnapshot) -> None:
        """A new profile window's toast: its step time and share of the ceiling. A share over the ceiling
        is a warning, and the first such toast says why (the probe read low) and how the ceiling is
        measured again; the later ones only warn, as the roofline pane goes on saying it."""
        r = snap.roofline
        over = over_ceiling(r.pct_ceiling)
        note = ceiling_note(r.pct_ceiling, r.ceiling_source, r.ceiling_gbps) \
            if not self._ceiling_told else ""
        self._ceiling_told = self._ceiling_told or over
        toast = (f"{r.steps} step{'' if r.steps == 1 else 's'} at ctx_len {r.ctx_len:,}: {r.measured_step_ns / 1e6:.3f} ms/step, "
                 f"{r.pct_ceiling:.1f} % of the ceiling" + (f"\n{note}" if note else ""),
                 dict(severity="warning" if over else "information", timeout=8 if note else 4, keep="\n",
                      title="profile window, taken on its own" if own_window(snap) else "profile window"))
        held = not over and getattr(self.screen, "HOLDS_WINDOW_TOASTS", False)
        self._held_window_toast = toast if held else None  # an older one held is stale either way
        if not held:
            self.notify(toast[0], **toast[1])

    def show_held_window_toast(self) -> None:
        """The newest window's toast held while a screen with progress of its own was up (it has closed)."""
        toast, self._held_window_toast = self._held_window_toast, None
        if toast is not None:
            self.notify(toast[0], **toast[1])

    def on_engine_status(self, message: EngineStatus) -> None:
        if message.text.startswith("warning: "):  # stays as a toast, not a passing status line
            self.notify(message.text[len("warning: "):], title="engine", severity="warning", timeout=20)
            return
        self.status_note = message.text
        if self.state == "starting":
            self.snapshot = self.snapshot  # re-render the placeholder with the new line

    async def on_run_ended(self, message: RunEnded) -> None:
        if message.run_id != self.source.run_id:
            return
        self.source.take_news()
        snap = self.source.snapshot()
        if message.error:
            self.state = "error"
            self.status_note = f"error: {message.error}"
            self.notify(message.error, title="engine", severity="error", timeout=15)
        else:
            self.state = "stopped" if self._stopping or self._rerun else "done"
            self.status_note = ""
        if snap is not None:
            self._apply(snap)
        else:
            self.snapshot = self.snapshot
        if self._rerun and self.quitting:  # q after r, before this end: the quit writes the run once and exits
            self._rerun = False
        elif self._rerun:
            self._rerun = False
            self._stopping = False
            self.keep_before_rerun()
            self._start_run()
        elif self.exit_when_done:
            # An A/B or a marginal still stepping the engine ends after its window or round in
            # progress, waited for (bounded) as a quit does: its result goes into the snapshot returned.
            await self.stop_measuring()
            self.final_snapshot = self.source.snapshot() or self.snapshot
            self.exit(self.final_snapshot)
