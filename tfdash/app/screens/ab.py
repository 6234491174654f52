"""The A/B screen (`a`): pick a plan variant that `tfdash bench` knows and A/B it live against the
running plan on the generation in progress (Session.ab, tfdash.profiling.ab), then read both
sides: each side's median tok/s over its windows with their range, its median ms/step, the
verdict with its spread, whether the two sides' tokens agreed, and each op's time in both from
one profile window a side. The verdict is the median of the paired windows' Δ, not the Δ of the
sides' medians (the two can differ, even in sign), and the screen names each figure so.

Until there is a result the variants have the box below the intro, with one line under them
(what ⏎ does, or what is running); the sides, the verdict and the per-op table come with a result
(an A/B that did not run has a verdict only) and go when the next A/B starts; ⏎ is not offered
while one runs, nor on a saved snapshot (it has no engine to run one). In a short terminal, once an
A/B runs or is shown, the intro gives its rows to the result (the verdict's second line says how it
was measured) and the variants scroll in what is left.

The A/B runs in a thread worker; its progress arrives as ABProgressed messages (posted from the
decode thread, which never waits on the screen). Escape cancels it after the window in progress,
and closes the screen when nothing runs. A quit (Ctrl+C, a stop signal, the palette's Quit) or a
re-run (the palette's Re-run) cancels it the same way and waits for its worker (`cancel_run`,
tfdash.app.compare.stop_ab); a screen that goes without waiting (the app exits) cancels it too.
On a saved snapshot the screen shows the A/Bs it holds.
"""

from __future__ import annotations

import threading

from rich.text import Text
from textual import work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, ProgressBar, Static

from tfdash.app import bindings
from tfdash.app.compare import hand_back
from tfdash.app.screens.ab_intro import intro, turns_after
from tfdash.app.widgets.footer import FitFooter
from tfdash.app.widgets.row_list import RowList
from tfdash.app.layout import SHORT_H, FitsBeforeDraw, fill_whole
from tfdash.profiling.ab_table import OP_DELTA, VERDICT_LABEL, medians_note, when, window_count
from tfdash.profiling.variants import Refusal, refusal
from tfdash.app.messages import ABMeasured, ABProgressed
from tfdash.app.model import fmt_ns
from tfdash.textsafe import visible


def variant_rows(meta=None) -> list[tuple[str, str, Refusal | None]]:
    """Each variant as `tfdash bench` names it, what it changes, and why this engine would refuse
    it (the A/B's own rule, from the snapshot's backend, plan options and device; None without a snapshot)."""
    from tfdash.profiling.ab import VARIANTS

    return [(v.name, v.about, refusal(v, meta.backend, meta.plan_options, device=meta.device)
             if meta is not None else None)
            for v in VARIANTS.values()]


def variant_cells(name: str, about: str, why: Refusal | None) -> tuple[Text, Text]:
    """A variant's row: one this engine would refuse is dim and says why in a few words (⏎ on it
    still answers the whole line)."""
    if why is None:
        return Text(name, style="bold"), Text(about)
    return Text(name, style="dim"), Text.assemble((about, "dim"), (f" · {why.short}", "dim italic"))


SIDE_COLUMNS = (("side", "side"), ("tok", Text("median tok/s", justify="right")),
                ("range", Text("range over windows", justify="right")),
                ("ms", Text("median ms/step", justify="right")), ("windows", Text("windows", justify="right")))
# The last goes first: the verdict gives the spread, and its second line the windows a side
SIDE_PRIORITY = ("side", "tok", "ms", "windows", "range")


def side_cells(label: str, s: dict) -> list[Text]:
    right = dict(justify="right")
    if not s.get("windows"):
        return [Text(visible(label)), Text("—", **right), Text("—", **right), Text("—", **right), Text("0", **right)]
    return [Text(visible(label), style="bold"), Text(f"{s['tok_per_s']:,.1f}", style="bold", **right),
            Text(f"{s['tok_per_s_min']:,.1f} – {s['tok_per_s_max']:,.1f}", **right),
            Text(f"{s['step_ns'] / 1e6:.3f}", **right), Text(str(s["windows"]), **right)]


def op_cells(r: dict) -> list[Text]:
    right = dict(justify="right")
    d, pct = r.get("delta_ns"), r.get("delta_pct")
    style = "" if pct is None or abs(pct) < 1.0 else ("green" if pct < 0 else "red")
    # An op on one side only has its whole time as Δ (as in the headless table and `tfdash diff`);
    # its name says which side it is on
    delta = "—" if d is None else ("+" if d > 0 else "") + fmt_ns(d)
    side = " (B only)" if r.get("a_ns") is None else " (A only)" if r.get("b_ns") is None else ""
    return [Text(visible(str(r.get("op", "?")) + side)), Text(fmt_ns(r.get("a_ns")), **right),
            Text(fmt_ns(r.get("b_ns")), **right), Text(delta, style=style, **right),
            Text("—" if pct is None else f"{pct:+.1f} %", style=style, **right)]


class SidesTable(DataTable, can_focus=False):
    """The two sides' table. Its columns are chosen to fit its width whole, so it is refitted
    whenever that width changes: when a result first shows it (its width comes with a layout
    that can follow the refresh after the result) and when the box is resized."""

    fitted_width = -1

    def on_resize(self, event) -> None:
        box = next((a for a in self.ancestors if isinstance(a, ABScreen)), None)  # not app.screen: gone on exit
        if event.size.width != self.fitted_width and box is not None:
            box.fill_sides()


def verdict_content(result: dict) -> Content:
    """The verdict, the token check, and how (and when) it was measured."""
    if "unavailable" in result:
        return Content.styled(visible(f"A/B {result.get('what', '?')}: {result['unavailable']}"), "$text-error")
    pct, spread = result.get("delta_pct"), result.get("spread_pct") or 0.0
    tone = "$text-success" if pct is not None and pct > spread else \
        "$text-error" if pct is not None and pct < -spread else "$text-warning"
    t = result.get("tokens", {})
    agree = t.get("agree") == t.get("checks")
    parts = [(f"{VERDICT_LABEL}: " if pct is not None else "", "$text-muted"),
             (visible(result.get("verdict", "")), f"bold {tone}"),
             (f"\n{medians_note(result)}" if medians_note(result) else "", "$text-muted"),
             (f"\ntokens agree at all {t.get('checks')} turn starts" if agree else
              f"\ntokens DIFFER at {t.get('checks', 0) - t.get('agree', 0)} of {t.get('checks')} turn starts",
              "$text-success" if agree else "bold $text-error"),
             (f" · {window_count(result)}, order {visible(str(result.get('order', '')))[:24]}, "
              f"{visible(when(result))}; "
              f"per op: {visible(str(result.get('per_op_method', '')))}", "$text-muted")]
    if result.get("incomplete"):
        parts.append((f"\nincomplete: {visible(str(result['incomplete']))}", "$text-warning"))
    return Content.assemble(*parts)


def why_not_start(app, running: str | None) -> str:
    """Why a new A/B may not start now ("" where it may), naming the keys as the keymap binds them.
    A paused run is said here, with the key that resumes it: the engine's own line names no key."""
    source = app.source
    if running is not None:
        return f"the A/B of {running} is still running ({bindings.key_name(app, 'ab.close')} cancels it)"
    if not source.live:
        return "a saved snapshot is read-only: nothing to A/B"
    if source.paused and source.running:
        return f"resume first ({bindings.key_name(app, 'pause')}): the A/B runs between decode steps"
    return ""


class ABScreen(FitsBeforeDraw, ModalScreen):
    BINDINGS = bindings.AB
    # At 80x24 the box is nearly the whole screen: a new profile window's toast (refresh.py) would
    # cover its progress bar and status line; it waits until the box closes (warnings do not)
    HOLDS_WINDOW_TOASTS = True
    _after = None  # whether the intro says the turns come after the generation (_intro)

    def __init__(self):
        super().__init__()
        self.variants = variant_rows()
        self._marked_for = None  # the meta whose engine the rows were marked for (_mark_variants)
        self.running: str | None = None  # the variant being A/B'd
        self.cancel = threading.Event()
        self.ended = threading.Event()  # set while no A/B worker runs: what quit and r wait on
        self.ended.set()
        self.result: dict | None = None
        self.sides: list[list[Text]] = []  # the cells of A and B, refitted to the width on resize

    def compose(self) -> ComposeResult:
        with Vertical(id="ab-box", classes="tf-modal"):
            yield Static(id="ab-intro")
            yield RowList(id="ab-variants", cursor_type="row", zebra_stripes=True)
            yield Static(id="ab-status")
            yield ProgressBar(id="ab-progress", show_eta=False)
            yield SidesTable(id="ab-sides", cursor_type="none")
            yield Static(id="ab-verdict")
            yield DataTable(id="ab-ops", cursor_type="none", zebra_stripes=True)
        yield FitFooter()  # its own keys: the dashboard's footer underneath names keys that do not act here

    def on_mount(self) -> None:
        self.set_class(self.app.size.height < SHORT_H, "-short")  # laid out short from its first frame
        box = self.query_one("#ab-box")
        box.border_title = "A/B a plan variant"
        self._keys()
        t = self.query_one("#ab-variants", DataTable)
        t.add_columns(("variant (as bench names it)", "name"), ("what it changes", "about"))
        for row in self.variants:
            t.add_row(*variant_cells(*row), key=row[0])
        self.watch(self.app, "snapshot", self._mark_variants, init=True)
        self.fill_sides()
        self.query_one("#ab-ops", DataTable).add_columns(
            "op", Text("A", justify="right"), Text("B", justify="right"), Text(OP_DELTA, justify="right"),
            Text("Δ %", justify="right"))
        self.query_one("#ab-progress", ProgressBar).display = False
        snap = self.app.snapshot
        if snap is not None and getattr(snap, "ab", ()):
            self.show_result(snap.ab[-1], recorded=True)
        else:
            start = bindings.key_name(self.app, "ab.start")
            self._status(f"pick a variant, {start} runs it" if self.app.source.live else
                         "a saved snapshot is read-only: it holds no A/B", "$text-muted")
        self.watch(self.app, "snapshot", self._intro, init=True)  # after a saved snapshot's A/B is shown
        t.focus()

    def _intro(self, _snap=None) -> None:
        """The intro, rewritten where when the turns run has changed (the generation may end with the box open)."""
        if (after := turns_after(self.app, self.result)) != self._after:  # snapshots come up to 20 times a second
            self._after = after
            self.query_one("#ab-intro", Static).update(intro(after))

    def _mark_variants(self, snap) -> None:
        """The rows this engine would refuse, marked once a snapshot names the engine (the screen
        may open while it is still being built). Decided once per run's meta, not per snapshot: the
        snapshot changes up to 20 times a second while the engine decodes."""
        meta = snap.meta if snap is not None else None
        if meta is self._marked_for:
            return
        self._marked_for = meta
        rows = variant_rows(meta)
        if rows == self.variants:
            return
        t = self.query_one("#ab-variants", DataTable)
        for row in rows:
            for column, cell in zip(("name", "about"), variant_cells(*row)):
                t.update_cell(row[0], column, cell, update_width=True)
        self.variants = rows

    def on_resize(self) -> None:
        self.set_class(self.app.size.height < SHORT_H, "-short")

    def fit_laid_out(self) -> None:
        """The sides refilled where their table's width changed (layout.FitsBeforeDraw)."""
        table = self.query_one("#ab-sides", SidesTable)
        if table.size.width != table.fitted_width:
            self.fill_sides()

    def fill_sides(self) -> None:
        """Both sides with the columns that fit the box whole: in 80 columns the range goes."""
        table = self.query_one("#ab-sides", SidesTable)
        table.fitted_width = table.size.width
        # its header and rows, a line each, laid out before they are filled (auto: the empty table's)
        table.styles.height = table.header_height + len(self.sides)
        fill_whole(table, SIDE_COLUMNS, self.sides, [None] * len(self.sides), SIDE_PRIORITY, scrollbar=0)

    def offers(self, action: str) -> bool:
        """⏎ Run is offered only where it runs an A/B: on a live source, with none running
        (widgets/footer.py); pressed anyway, it says why it does nothing."""
        if action == "ops":  # the per-op table, where a result has one: in a small terminal it scrolls
            return self.has_class("-ops")
        return action != "start" or (self.running is None and self.app.source.live)

    def footer_label(self, action: str) -> str | None:
        """esc in the footer as it acts now: it cancels a running A/B, else it closes the box; tab
        names where it moves the focus."""
        if action == "ops":
            return "Variants" if self.query_one("#ab-ops", DataTable).has_focus else "Ops"
        return ("Cancel" if self.running is not None else "Close") if action == "close" else None

    def action_ops(self) -> None:
        ops = self.query_one("#ab-ops", DataTable)
        (self.query_one("#ab-variants", DataTable) if ops.has_focus or not self.has_class("-ops") else ops).focus()

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()  # tab's word: where it moves the focus from here (a click moves it too)

    def _keys(self) -> None:
        """The box's subtitle and the footer name the keys that act now: no ⏎ during a run or on a
        saved snapshot, and esc as what it does (cancel the run, else close)."""
        box = self.query_one("#ab-box")
        start, close = bindings.key_name(self.app, "ab.start"), bindings.key_name(self.app, "ab.close")
        box.border_subtitle = f"{close} cancel" if self.running is not None else \
            f"{start} run · {close} close" if self.offers("start") else f"{close} close"
        self.refresh_bindings()

    def _status(self, line: str, style: str = "") -> None:
        self.query_one("#ab-status", Static).update(Content.styled(visible(line), style))

    # -- running -----------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.data_table.id == "ab-variants" and self._startable():
            self._start()

    def action_start(self) -> None:
        if not self._startable():
            return
        # ⏎ (a priority binding, so the footer shows it) runs as the key arrives, before the table has
        # moved for the arrows typed ahead of it: the table's own ⏎ selects in order (on_data_table_row_selected)
        if self.query_one("#ab-variants", DataTable).has_focus and bindings.takes_enter(self.app, "ab.start"):
            raise SkipAction()
        self._start()

    def _startable(self) -> bool:
        """Whether a new A/B may start; if not, a toast says why."""
        why = why_not_start(self.app, self.running)
        if why:
            self.notify(why, severity="warning", timeout=3)
        return not why

    def _start(self) -> None:
        t = self.query_one("#ab-variants", DataTable)
        name = self.variants[max(0, min(t.cursor_row, len(self.variants) - 1))][0]
        self.running, self.cancel = name, threading.Event()
        self._keys()
        self.clear_result()
        self.add_class("-used")
        bar = self.query_one("#ab-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self._status(f"building {name} beside the running plan…", "$text-accent")
        self.ended.clear()
        self._run(name, self.cancel, self.ended)

    @work(thread=True, group="ab", exit_on_error=False)
    def _run(self, name: str, cancel: threading.Event, ended: threading.Event) -> None:
        """The A/B, blocking on this thread: the engine side checks `cancel` between its windows.
        `ended` is set last, once the result is on the screen (or the app has gone)."""
        try:
            try:  # the sizes are tfdash.profiling.ab's, as the intro says
                result = dict(self.app.source.ab(name, progress=lambda p: self.post_message(ABProgressed(p)),
                                                 cancel=cancel))
            except Exception as e:  # noqa: BLE001 - one line on the screen, never a traceback
                result = {"what": name, "unavailable": f"{type(e).__name__}: {e}"}
            hand_back(self.app, self._done, name, result)
        finally:
            ended.set()

    def on_abprogressed(self, message: ABProgressed) -> None:
        p = message.progress
        if self.running is None:
            return
        self._status(p.line, "$text-accent")
        bar = self.query_one("#ab-progress", ProgressBar)
        if p.total:
            bar.update(total=p.total, progress=p.done)

    def _done(self, name: str, result: dict) -> None:
        self.running = None
        self._keys()
        self.query_one("#ab-progress", ProgressBar).display = False
        self.show_result(result)
        self.post_message(ABMeasured(name, result))
        if "unavailable" in result:
            self.notify(f"A/B {name}: {result['unavailable']}", severity="warning", timeout=6)
        elif result.get("incomplete"):  # a cancelled run's verdict is over fewer windows: never a plain one
            self.notify(f"A/B {name} {result['incomplete']} after {window_count(result)}, "
                        f"{VERDICT_LABEL}: {result.get('verdict', '')}", title="A/B incomplete",
                        severity="warning", timeout=8)
        elif not self.is_current:  # the box shows the verdict; at 80x24 a toast would cover it
            self.notify(f"A/B {name}, {VERDICT_LABEL}: {result.get('verdict', '')}", title="A/B", timeout=6)

    def clear_result(self) -> None:
        """The last result's sides, verdict and per-op table go (a new A/B runs): what is on the
        screen during a run is the variants and its progress, never another variant's numbers."""
        self.result = None
        self.remove_class("-result", "-measured", "-ops")
        self.query_one("#ab-verdict", Static).update("")
        self.query_one("#ab-ops", DataTable).clear()
        self.sides = []
        self.fill_sides()

    def show_result(self, result: dict, recorded: bool = False) -> None:
        self.result = result
        self.add_class("-used", "-result")
        self.set_class("unavailable" not in result, "-measured")
        self.set_class("unavailable" not in result and bool(result.get("per_op")), "-ops")  # else a bare header
        self.query_one("#ab-verdict", Static).update(verdict_content(result))
        ops = self.query_one("#ab-ops", DataTable)
        ops.clear()
        self.sides = []
        if "unavailable" in result:
            self.fill_sides()
            self._status("the A/B did not run", "$text-error")
            return
        what, (na, nb) = str(result.get("what", "?")), result.get("launches", ["?", "?"])
        self.sides = [side_cells(f"A running plan · {na} launches", result.get("a", {})),
                      side_cells(f"B {what} · {nb} launches", result.get("b", {}))]
        self.fill_sides()  # shown only now: its columns are fitted in the layout that gives it a width
        for r in result.get("per_op", []):
            ops.add_row(*op_cells(r))
        done = "incomplete" if result.get("incomplete") else "recorded" if recorded else "done"  # as the verdict says
        self._status(f"{done}: {what} ({result.get('about', '')}) on "
                     f"{result.get('backend', '?')}", "$text-muted")

    def cancel_run(self) -> threading.Event:
        """Cancel the running A/B after its window in progress (what it measured is kept and
        shown); the event set once its worker has ended (already set where none runs)."""
        if self.running is not None:
            self.cancel.set()
            self._status(f"cancelling {self.running} after the window in progress…", "$text-warning")
        return self.ended

    def action_close(self) -> None:
        if self.running is not None:
            self.cancel_run()
            return
        self.dismiss(self.result)

    def on_unmount(self) -> None:
        self.cancel.set()  # gone without cancel_run (the app exits): no A/B goes on stepping the engine
