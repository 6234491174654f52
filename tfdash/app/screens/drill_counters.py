"""The drill-down's counters tab: `n` measures the current launch with Nsight Compute.

ncu runs in a thread worker over a child process that builds its own engine
(tfdash.profiling.counters), so the engine of a live run keeps decoding; progress lines show in
the tab while it runs. The result goes to the Source (`add_counters`): the snapshots carry it from
then on, so the kernel table's "meas bytes", the CSV and a saved snapshot have it too. Anything
that stops it (no ncu, no permission, a CPU) is one line in the tab and a toast. Closing the
drill-down leaves it running (its result still lands in the Source); the app's exit ends it.
"""

from __future__ import annotations

import threading

from textual import work
from textual.widgets import Static, TabbedContent

from tfdash.app.bindings import key_name
from tfdash.app.counters_view import counters_content, engine_args
from tfdash.errors import TfdashError
from tfdash.textsafe import KEEP_LAYOUT, visible_content


def measure_role(snap, role: str, progress, cancel: threading.Event | None = None) -> dict:
    """{snapshot launch index: Counters} of the launch `role`, measured in a child process; a set
    `cancel` ends ncu and its child (counters.run_streaming)."""
    from tfdash.profiling import counters as cmod

    req = cmod.prepare(engine_args(snap), lambda plan: cmod.select(plan, [role]))
    got = cmod.measure(req, progress=progress, cancel=cancel)
    index = {k.role: k.index for k in snap.kernels}
    return {index[req.plan.launches[i].role]: c for i, c in got.items() if req.plan.launches[i].role in index}


class CountersTab:
    """Mixed into DrillScreen: the counters tab's state, its key and its worker."""

    _counter_status: dict

    def _current_role(self) -> str:
        snap = self.app.snapshot
        for k in snap.kernels if snap is not None else ():
            if k.index == self.current:
                return k.role
        return self.row.label

    def _show_counters(self) -> None:
        snap = self.app.snapshot
        role = self._current_role()
        rows = {k.index: k for k in snap.kernels} if snap is not None else {}
        members = [rows[i] for i in self.row.members if i in rows]
        status = getattr(self, "_counter_status", {}).get(role) or self._host_cannot(snap)
        body = counters_content(role, rows.get(self.current), members, status, self.app.source.live,
                                key_name(self.app, "drill.counters"), self.app.state)
        self.query_one("#counters-body", Static).update(visible_content(body, KEEP_LAYOUT))

    def _host_cannot(self, snap) -> str | None:
        """"unavailable: why" where this host cannot measure the snapshot's engine at all (a CPU run,
        no ncu), said when the tab opens, as the marginal tab says it, rather than after `n`; asked once."""
        if not hasattr(self, "_host_why"):
            from tfdash.profiling.counters import check_this_host

            self._host_why = None
            if snap is not None:
                args = engine_args(snap)
                try:
                    check_this_host(args["device"], args["backend"])
                except TfdashError as e:
                    self._host_why = f"unavailable: {e}"
        return self._host_why

    def _counters_snapshot(self, snap) -> None:
        """Redraw the tab when the counters of the row's launches or the run's state change (its
        words follow the state: decoding, paused, over), not on every snapshot."""
        want = set(self.row.members)
        key = (self.app.state, tuple(k.counters for k in snap.kernels if k.index in want))
        if key != getattr(self, "_counters_key", None):
            self._counters_key = key
            self._show_counters()

    def action_counters(self) -> None:
        role, snap = self._current_role(), self.app.snapshot
        self.query_one(TabbedContent).active = "counters"
        if not hasattr(self, "_counter_status"):
            self._counter_status = {}
        if snap is None:
            return
        self._counter_status[role] = "starting ncu…"
        self._show_counters()
        self._count(snap, role, self.app)

    @work(thread=True, group="counters", exclusive=True, exit_on_error=False)
    def _count(self, snap, role: str, app) -> None:
        """ncu's run, on a thread that outlives the drill-down: closed (esc), the screen no longer
        finds its app (hence `app`), and the measurement goes on, its result still reaching the
        Source so the kernel table's "meas bytes" has it. Only the app's exit ends ncu
        (TfdashApp.exiting): its waiting thread would hold the process's exit until ncu was done."""
        injected = getattr(app, "counters_fn", None)  # the tests' stand-in takes no cancel
        exiting = getattr(app, "exiting", None) or threading.Event()

        def progress(s: str) -> None:
            app.call_from_thread(self._counters_progress, role, s)

        try:
            result = injected(snap, role, progress) if injected else measure_role(snap, role, progress, exiting)
            why = None
        except TfdashError as e:
            result, why = {}, str(e)
        except Exception as e:  # noqa: BLE001 - one line in the tab, never a traceback
            result, why = {}, f"{type(e).__name__}: {e}"
        app.call_from_thread(self._counters_done, role, result, why)

    def _counters_progress(self, role: str, text: str) -> None:
        self._counter_status[role] = text
        if self.is_attached:  # closed (esc) while ncu goes on: nothing of it to redraw
            self._show_counters()

    def _counters_done(self, role: str, result: dict, why: str | None) -> None:
        if why is not None:
            self._counter_status[role] = f"unavailable: {why}"
            self.notify(f"counters {role}: {why}", severity="warning", timeout=6)
        else:
            self._counter_status.pop(role, None)
            self.app.source.add_counters(result)
            snap = self.app.source.snapshot()
            if snap is not None:
                self.app.snapshot = snap
            self.notify(f"counters {role}: {len(result)} launch{'es' if len(result) != 1 else ''} measured", timeout=4)
        if self.is_attached:  # closed (esc) meanwhile: the result is in the Source, the toast says so
            self._show_counters()
