"""The drill-down's marginal tab: `m` measures the current launch's in-graph marginal cost (the
step with the launch doubled, minus the plain step) through the Source, in a thread worker, and
posts MarginalMeasured. The tab shows what the snapshot recorded for the launch, and this
screen's own measurement until the snapshot has it (once).

A measurement steps the engine (inside the generation, or after it holding the runtime's lock):
a quit or a re-run cancels it after its round in progress and waits for its worker
(`cancel_marginal`, run_actions.py `stop_measuring`), and a screen that goes without waiting (the
app exits) cancels it too. What it measured so far is its result, marked incomplete.

Where no marginal can be measured -- a saved snapshot, or a run without CUDA graphs to double a
launch in (the snapshot says so) -- `m` is not offered in the footer, and pressed anyway it says
why in one toast, with no "measuring…" before it: the run's own snapshot's word where it has one
(also while `r` builds the next engine, which would only have said that it was being built), else
the source's answer.
"""

from __future__ import annotations

import threading

from textual import work
from textual.content import Content
from textual.widgets import Static, TabbedContent

from tfdash.app import drill_model
from tfdash.app.bindings import key_name
from tfdash.app.compare import hand_back
from tfdash.app.messages import MarginalMeasured
from tfdash.app.model import fmt_ns
from tfdash.textsafe import KEEP_LAYOUT, visible_content


class MarginalTab:
    """Mixed into DrillScreen: the marginal tab's key, its worker and what it shows."""

    _marginal: dict[str, dict]  # role -> this screen's measurement (or its "measuring…" status)
    # each measurement in flight, cancel -> ended: replaced whole, never changed in place (the
    # class's empty one stands until the first `m`)
    _measuring: dict[threading.Event, threading.Event] = {}
    _marginal_offered = True  # `m` in the footer, as last drawn

    def offers(self, action: str) -> bool:
        """`m` is offered only where a marginal can be measured (pressed elsewhere, it says why)."""
        return action != "marginal" or self.can_measure_marginal()

    def _offer_marginal(self) -> None:
        """`m` comes into the footer, or leaves it, as a new snapshot says it can be measured or not."""
        if self.offers("marginal") != self._marginal_offered:
            self._marginal_offered = not self._marginal_offered
            self.refresh_bindings()

    def _run_cannot_measure(self) -> str:
        """Why this live run can never measure a marginal (its snapshot says it has no CUDA graphs
        to double a launch in), else ""."""
        snap = self.app.snapshot
        why_not = snap.unavailable.get("marginal", "") if snap is not None else ""
        return why_not if self.app.source.live and why_not.startswith("marginal cost needs") else ""

    def can_measure_marginal(self) -> bool:
        """Whether `m` can measure here, as far as is known before it is pressed: not on a saved
        snapshot, nor in a run that cannot."""
        return self.app.source.live and not self._run_cannot_measure()

    def action_marginal(self) -> None:
        launch_role = self._current_role()
        self.query_one(TabbedContent).active = "marginal"
        source = self.app.source
        cannot = self._run_cannot_measure()
        if cannot:  # the run's snapshot says it never can: said at once, also while r's re-run is being built
            self._marginal_done(launch_role, {"what": launch_role, "unavailable": cannot})
            return
        if not self.can_measure_marginal():  # the source says why at once: its one toast, no "measuring…"
            self._measure(source, launch_role)
            return
        if source.paused and source.running:
            self.notify(f"resume first ({key_name(self.app, 'pause')}): the marginal is measured between decode steps",
                        severity="warning", timeout=4)
            return
        self._marginal[launch_role] = {"what": launch_role, "status": "measuring…"}
        self._show_marginal()
        self.notify(f"measuring the marginal cost of {launch_role}…", timeout=2)
        self._measure(source, launch_role)

    def _measure(self, source, role: str) -> None:
        cancel, ended = threading.Event(), threading.Event()
        self._measuring = {**{c: e for c, e in self._measuring.items() if not e.is_set()}, cancel: ended}
        self._measure_worker(source, role, cancel, ended)

    @work(thread=True, group="marginal", exit_on_error=False)
    def _measure_worker(self, source, role: str, cancel: threading.Event, ended: threading.Event) -> None:
        """The measurement, blocking on this thread: the engine side checks `cancel` between its
        rounds. `ended` is set last, once the result is on the screen (or the screen has gone)."""
        try:
            try:
                result = dict(source.marginal(role, cancel=cancel))
            except BaseException as e:  # noqa: BLE001
                result = {"unavailable": f"{type(e).__name__}: {e}"}
            result.setdefault("what", role)
            hand_back(self.app, self._marginal_done, role, result)
        finally:
            ended.set()

    def cancel_marginal(self) -> list[threading.Event]:
        """Cancel the measurements in flight after their round in progress (what they measured is
        kept and shown); the events set once each one's worker has ended."""
        for cancel in self._measuring:
            cancel.set()
        return [ended for ended in self._measuring.values() if not ended.is_set()]

    def on_unmount(self) -> None:
        self.cancel_marginal()  # gone without waiting (the app exits): no measurement goes on stepping the engine

    def _marginal_done(self, role: str, result: dict) -> None:
        self._marginal[role] = result
        self._show_marginal()
        self.post_message(MarginalMeasured(role, result))
        if "unavailable" in result:
            self.notify(f"marginal {role}: unavailable: {result['unavailable']}", severity="warning", timeout=4)
        elif result.get("incomplete"):  # over fewer rounds than asked: never a plain figure
            self.notify(f"marginal {role} {result['incomplete']} after {result.get('rounds', 0)} rounds: "
                        f"{fmt_ns(result.get('delta_ns'))}", title="marginal incomplete", severity="warning",
                        timeout=6)
        else:
            self.notify(f"marginal {role}: {fmt_ns(result.get('delta_ns'))}", timeout=4)

    def _show_marginal(self) -> None:
        role = self._current_role()
        snap = self.app.snapshot
        recorded = drill_model.marginal_for(snap, [role], []) if snap is not None else []
        live = self.app.source.live
        out: list = [("in-graph marginal cost of ", "$text-muted"), (role, "bold $text-primary"),
                     (": the step time with this launch doubled, minus the plain step time.", "$text-muted")]
        # a saved snapshot has no engine to double a launch in: it shows what its run measured; a run
        # without CUDA graphs has none to double it in either, which is said before any key is pressed
        cannot = self._run_cannot_measure()
        if cannot:
            out += [(" Not in this run: ", "$text-muted"), (cannot, "italic $text-warning"), (".\n\n", "$text-muted")]
        else:
            m = key_name(self.app, "drill.marginal")
            out += [(" Press ", "$text-muted"), (m, "bold $accent"), (" to measure it.\n\n", "$text-muted")] if live \
                else [(f" A saved snapshot shows what its run measured ({m} in a live run).\n\n", "$text-muted")]
        mine = self._marginal.get(role)
        # A measurement of this session is in the snapshot too, once the app has taken one: once.
        results = recorded + ([mine] if mine is not None and mine not in recorded else [])
        if not results and not cannot:
            out.append(("not measured yet" if live else "not measured in this snapshot's run", "italic $text-muted"))
        for res in results:
            for k, v in res.items():
                value = fmt_ns(v) if k.endswith("_ns") and isinstance(v, (int, float)) else str(v)
                style = "bold $text-warning" if k == "unavailable" else "bold"
                out += [(f"{k:>14}  ", "$text-muted"), (value, style), ("\n", "")]
            out.append(("\n", ""))
        self.query_one("#marginal-body", Static).update(visible_content(Content.assemble(*out), KEEP_LAYOUT))
