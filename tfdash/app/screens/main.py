"""The dashboard: continuation, throughput, roofline, kernels and NVML, all from one snapshot.

    ┌ continuation ───────────┐┌ throughput ─┐┌ roofline ──┐
    └─────────────────────────┘└─────────────┘└────────────┘
    ┌ kernels ─────────────────────────────┐┌ NVML ────────┐
    └──────────────────────────────────────┘└──────────────┘
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from tfdash.app import bindings
from tfdash.app.widgets.continuation import Continuation
from tfdash.app.widgets.kernel_table import KernelTable
from tfdash.app.widgets.panes import NvmlPane, RooflinePane, ThroughputPane, set_content
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import visible


def describe_run(snap: ProfileSnapshot) -> str:
    m = snap.meta
    name = m.model.get("name", "model") if isinstance(m.model, dict) else "model"
    src = "random weights" if m.checkpoint == "random" else m.checkpoint.rstrip("/").rsplit("/", 1)[-1]
    where = m.gpu or m.device
    return f"{name} · {src} · {m.backend} on {where} · {m.dtype} · {m.launches_per_step} launches/step"


class TopBar(Horizontal):
    """One line: what is running, and its state. No clock: a recorded snapshot renders the same."""

    DEFAULT_CSS = """
    TopBar { height: 1; }
    TopBar > #topbar-title { width: 1fr; height: 1; }
    TopBar > #topbar-state { width: auto; height: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="topbar-title")
        yield Static(id="topbar-state")

    def show(self, title: str, state: str, state_style: str) -> None:
        set_content(self.query_one("#topbar-title", Static),
                    Content.assemble((" tfdash ", "bold $text-primary"), ("│ ", "$text-muted"), (title, "")))
        set_content(self.query_one("#topbar-state", Static), Content.styled(f" {state} ", state_style))


class MainScreen(Screen):
    BINDINGS = bindings.MAIN
    AUTO_FOCUS = "#kernel-table"

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        with Horizontal(id="top-row"):
            yield Continuation(id="continuation")
            yield ThroughputPane(id="throughput")
            yield RooflinePane(id="roofline")
        with Horizontal(id="bottom-row"):
            yield KernelTable(id="kernels")
            yield NvmlPane(id="nvml")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        for pane_id, title in (("continuation", "continuation"), ("throughput", "throughput"),
                               ("roofline", "roofline"), ("kernels", "kernels"), ("nvml", "NVML")):
            self.query_one(f"#{pane_id}").border_title = title
        self.watch(self.app, "snapshot", self.render_snapshot, init=True)
        self.watch(self.app, "state", self._state_changed, init=True)

    @property
    def table(self) -> KernelTable:
        return self.query_one(KernelTable)

    def on_screen_resume(self) -> None:
        self.render_snapshot(self.app.snapshot)

    def render_snapshot(self, snap: ProfileSnapshot | None) -> None:
        if not self.is_current:
            return  # a drill-down or help is on top: rendered again on resume
        app = self.app
        live = app.state in ("running", "paused", "starting", "stopping")
        cont = self.query_one(Continuation)
        cont.show(snap, running=app.state == "running", note=app.status_note)
        if snap is not None:
            src = "random weights · stand-in vocabulary" if snap.meta.checkpoint == "random" else snap.meta.checkpoint
            cont.border_subtitle = Content(visible(src))  # a path is text, never markup
        self.query_one(ThroughputPane).show(snap, app.max_new_tokens, final=not live)
        self.query_one(RooflinePane).show(snap)
        self.query_one(NvmlPane).show(snap, final=not live)
        if snap is not None:
            self.table.show(snap.kernels, snap.unavailable.get("kernels", ""), final=not live)
        self._state_changed(app.state)

    def _state_changed(self, state: str) -> None:
        app = self.app
        snap = app.snapshot
        title = describe_run(snap) if snap is not None else (app.status_note or "starting…")
        style = {"running": "bold $background on $success", "paused": "bold $background on $warning",
                 "error": "bold $background on $error"}.get(state, "bold $background on $primary")
        label = {"snapshot": f"snapshot · {app.source_label}"}.get(state, state)
        self.query_one(TopBar).show(title, label, style)

    @on(KernelTable.Drill)
    def _drill(self, event: KernelTable.Drill) -> None:
        self.app.open_drill(event.row)

    # -- actions (ids in bindings.MAIN) ---------------------------------------------------------
    def action_sort(self) -> None:
        self.table.next_sort()

    def action_reverse(self) -> None:
        self.table.reverse()

    def action_filter(self) -> None:
        self.table.open_filter()

    def action_group(self) -> None:
        self.table.next_group()  # the table's caption names the grouping

    def action_drill(self) -> None:
        row = self.table.selected_row()
        if row is not None:
            self.app.open_drill(row)
