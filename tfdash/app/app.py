"""TfdashApp: the dashboard. It renders ProfileSnapshots; where they come from is its source.

    source = LiveSource(make_session)     a Session in a thread worker (tfdash [--ckpt DIR])
    source = SnapshotSource(snapshot)     a saved snapshot, read-only (tfdash open FILE)

Both are a `Source` (tfdash.app.live); the app never asks which one it holds.

State lives in two reactives that the screens watch: `snapshot` (the latest ProfileSnapshot) and
`state` ("starting", "running", "paused", "stopping", "done", "stopped", "error", "snapshot").
Live news is coalesced: the worker posts at most one SessionNews at a time, and the app takes a
snapshot at most `refresh_hz` (20) times a second (tfdash.app.refresh).

Quitting mid-run (q or Ctrl+C) stops the engine after the steps in flight, waits for its worker,
and exits with the final snapshot as the app's return value (also `app.final_snapshot`); with a
save path it is written there too (tfdash.app.run_actions); without one, or where writing it failed,
the dashboard keeps it in a folder of the cache, as it keeps a run that `r` starts over (tfdash.app.kept).

The app's actions live beside it, each group in its module, mixed in here: the run's keys
(run_actions.py), the exports (exports.py), the baseline and the A/B (compare.py). This class
holds the state, the themes and the config, the drill-down and help screens, the palette.
"""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

from textual.app import App, SystemCommand
from textual.reactive import var
from textual.screen import Screen

from tfdash.app import bindings
from tfdash.app.compare import CompareActions
from tfdash.app.layout import MinSizeGuard
from tfdash.app.config import Config, applied_keymap, keymap_problems, load_config, save_config
from tfdash.app.exports import ExportActions
from tfdash.app.kept import KeptRuns
from tfdash.app.live import Source
from tfdash.app.model import TableRow
from tfdash.app.refresh import MAX_WINDOWS, LiveRefresh  # noqa: F401 - MAX_WINDOWS: the app's bound
from tfdash.app.run_actions import RunActions
from tfdash.errors import TfdashError
from tfdash.profiling.snapshot import ProfileSnapshot, kernel_list_note
from tfdash.textsafe import KEEP_NONE, visible
from tfdash.themes import CSS_PATH, DARK, DEFAULT_THEME, register_themes
from tfdash.themes import offered as offered_themes


class TfdashApp(MinSizeGuard, LiveRefresh, RunActions, ExportActions, CompareActions, KeptRuns, App[ProfileSnapshot | None]):
    CSS_PATH = CSS_PATH
    BINDINGS = bindings.APP
    TITLE = "tfdash"

    snapshot: var[ProfileSnapshot | None] = var(None, always_update=True, init=False)
    state: var[str] = var("starting", init=False, bindings=True)  # the footer's offers follow it

    def __init__(self, source: Source, *, config: Config | None = None,
                 export_dir: str | Path | None = None, save_path: str | Path | None = None,
                 max_new_tokens: int | None = None, theme: str | None = None, refresh_hz: float = 20.0,
                 cuda_source: Callable | None = None, tilelang_source: Callable | None = None,
                 exit_when_done: bool = False, baseline=None, keep_dir: str | Path | None = None) -> None:
        super().__init__()
        self.source = source
        # Set as the app exits: the child processes its workers wait on (the drill-down's ncu) end then, and
        # not before, their waiting thread would hold the process's exit (drill_counters.CountersTab)
        self.exiting = threading.Event()
        self.baseline = baseline  # a tfdash.app.baseline.Baseline: the Δ columns compare against it
        self.config = config if config is not None else load_config()
        self.export_dir = Path(export_dir).expanduser() if export_dir else None
        self.save_path = Path(save_path).expanduser() if save_path else None
        self.keep_dir = Path(keep_dir).expanduser() if keep_dir else None  # where q and r keep a run (kept.py)
        self.max_new_tokens = max_new_tokens
        self.fastest_refresh = 1.0 / refresh_hz
        self.refresh_interval = self.fastest_refresh  # adapts: see _adapt_rate
        self._cpu_mark: tuple[float, float] | None = None
        self.cuda_source = cuda_source  # launch -> CUDA text (default: compile for sm_90a)
        self.tilelang_source = tilelang_source  # family -> source text (default: inspect the factory)
        self.last_export: Path | None = None
        self.exit_when_done = exit_when_done  # quit with the final snapshot when the run ends
        self.status_note = ""
        self.final_snapshot: ProfileSnapshot | None = None
        self.windows: dict[int, dict[int, float]] = {}  # ctx_len -> {launch index: measured p50 ns}
        self.refreshes = 0  # snapshots rendered (the tests check the 20 Hz cap with it)
        self._last_refresh = 0.0
        self._refresh_timer = None
        self._rerun = False
        self._stopping = False
        self._last_window = None
        self._ceiling_told = False  # a window's toast has said why a step is over the ceiling
        self._held_window_toast: tuple[str, dict] | None = None  # refresh.py: shown when the A/B closes
        self.saved: Path | None = None  # where --save wrote the final snapshot
        self.save_made: list[Path] = []  # the folders that write made (files.missing_folders)
        self.save_replaced: str | None = None  # the run whose snapshot that write replaced (recorded_run)
        self.save_error: str | None = None  # why it could not
        self.interrupted_by: int | None = None  # the signal that quit the app, if one did
        self.drawn = False  # the first frame is drawn (on_ready): a quit no longer ends the screen mid-mount
        self.quitting = False  # a quit is stopping the engine and writing --save
        register_themes(self)
        wanted = theme or self.config.theme or DEFAULT_THEME
        self._theme_from_config = wanted
        self.theme = wanted if wanted in self.available_themes else DEFAULT_THEME
        self._theme_fallback = self.theme if self.theme != wanted else None  # shown, never saved
        if self.config.keymap:
            self.set_keymap(applied_keymap(self.config.keymap, bindings.KEYMAP_SCOPES))  # keymap_problems names the rest

    @property
    def source_label(self) -> str:
        from tfdash.profiling.export import snapshot_label  # DIR/snapshot.json: every export's file has that name

        label = self.shown_name() if self.source.path else "read-only"
        return f"{label} vs {self.baseline.label}" if self.baseline is not None else label

    @property
    def available_themes(self) -> dict:
        """tfdash's own themes that render; Textual's built-in ones are not offered (they stand in
        only before ours are registered, while Textual's own __init__ runs)."""
        registered = super().available_themes
        return offered_themes(registered) or registered

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {k: v for k, v in DARK.variables.items() if k.startswith("tf-")}

    def get_default_screen(self) -> Screen:
        from tfdash.app.screens.main import MainScreen

        return MainScreen()

    def on_ready(self) -> None:  # the first frame is drawn: quitting sooner ends the screen mid-mount
        self.drawn = True
        if self.interrupted_by is not None:  # a signal before it (signal_while_stopped, quit_on_signal)
            self.call_later(self.action_quit)

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        if self.config.warning:
            self.notify(self.config.warning, title="config", severity="warning", timeout=8)
        for problem in keymap_problems(self.config.keymap, bindings.KEYMAP_SCOPES, bindings.all_ids()):
            self.notify(f"keymap: {problem}", title="config", severity="warning", timeout=8)
        if self._theme_from_config not in self.available_themes:
            self.notify(f"theme {self._theme_from_config!r} is not one of tfdash's themes "
                        f"({', '.join(self.available_themes)}); using {DEFAULT_THEME}",
                        title="config", severity="warning", timeout=8)
        if self.export_dir is None and self.config.export_dir:  # said now, not when a run's export fails
            from tfdash.profiling.files import check_writable_dir

            try:
                check_writable_dir(self.config.export_dir, f"export_dir in {self.config.path}:")
            except TfdashError as e:  # only `tfdash open` has --export-dir; a live run's fix is the file
                fix = "(or pass --export-dir)" if not self.source.live else f"in {self.config.path}"
                self.notify(f"{e}; exports will fail until it is fixed {fix}", title="config", severity="warning",
                            timeout=8)
        if not self.source.live:
            self.state = "snapshot"
            self._apply(self.source.snapshot())
            note = kernel_list_note(self.source.snapshot())  # a file cut short: its table is not the step
            if note:
                self.notify(note, title="snapshot", severity="warning", timeout=10)
        else:
            # The first frame is the heaviest to draw (every widget, the CSS); drawn before the
            # decode starts, it cannot hold the GIL while the first steps are in flight.
            self.state = "starting"
            self.status_note = "building the engine…"
            self.call_after_refresh(self._start_run)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False, keep: str = KEEP_NONE) -> None:
        """A toast. Its text is often untrusted (a path, an engine error, a config value), so it is
        never markup and its control characters are shown, not sent to the terminal (but those in
        `keep`, for a message that breaks its own lines)."""
        super().notify(visible(str(message), keep), title=visible(str(title)), severity=severity, timeout=timeout,
                       markup=False)  # also when a screen's notify passes markup=True

    @property
    def running(self) -> bool:
        return self.source.running

    def offers(self, action: str) -> bool:
        """Whether the footer and the palette offer `action` now (widgets/footer.py). On a saved
        snapshot the keys that need an engine (pause, re-run, profile; A/B when it holds none) are
        not offered; pressed anyway, they say it is read-only. Once a live run is over, pause and
        profile are not either (there is no step left to hold or time; pressed, each says which
        run would have one, layout.ProfileKeys: r's re-run, or after a one-token run, not that),
        nor while the run's own window times the steps after its generation."""
        if action in ("pause", "profile"):
            return self.source.live and self.state not in ("done", "stopped", "error") and not self.source.generation_over
        if action == "rerun":
            return self.source.live
        if action == "ab":
            return self.source.live or bool(getattr(self.snapshot, "ab", ()))
        return True

    def footer_label(self, action: str) -> str | None:
        """space in the footer as it acts now: on a paused run it resumes (widgets/footer.py)."""
        return "Resume" if action == "pause" and self.state == "paused" else None

    # -- actions -------------------------------------------------------------------------------
    def action_help(self) -> None:
        from tfdash.app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def open_drill(self, row: TableRow) -> None:
        """Open a row of the kernel table, under the table's filter (its launches that match). A
        single launch opens its op -- every instance across the layers, unfiltered -- with the
        cursor on that launch."""
        from tfdash.app.model import group_rows
        from tfdash.app.screens.drill import DrillScreen
        from tfdash.app.widgets.kernel_table import KernelTable

        table = self.screen.query_one(KernelTable) if self.screen.query(KernelTable) else None
        group, text = (table.group, table.filter_text) if table is not None else ("op", "")
        current = row.members[0]
        if group == "none" and self.snapshot is not None:
            for op_row in group_rows(self.snapshot.kernels, "op"):
                if current in op_row.members:
                    row, group, text = op_row, "op", ""
                    break
        self.push_screen(DrillScreen(row, group, current=current, filter_text=text))

    def _theme_changed(self, theme) -> None:
        if theme.name == self.config.theme:
            return
        if theme.name == self._theme_fallback:  # the stand-in for a saved theme that did not load
            self._theme_fallback = None
            return
        self.config.theme = theme.name
        try:
            save_config(self.config)
        except TfdashError as e:
            self.notify(str(e), title="config", severity="warning", timeout=6)

    def on_unmount(self) -> None:
        self.source.stop(quitting=True)  # never a re-run after this: an engine still being built is abandoned
        self.exiting.set()

    # -- command palette -----------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's own commands (quit at once, keys panel, maximize, its screenshot) are not
        # offered: each has a tfdash binding below, or is not meant for this app.
        tables = [(bindings.APP, self)]
        tables += [(list(getattr(type(screen), "BINDINGS", [])), screen)]
        if hasattr(screen, "action_drill"):
            tables += [(bindings.TABLE, screen)]
        seen = set()
        for table, target in tables:
            for b in table:
                if not b.id or b.id in seen or b.id in ("interrupt", "help.close"):
                    continue
                if target.check_action(b.action.split("(")[0], ()) is False:
                    continue  # nothing to act on here (`v` with every pane shown, `s` with the table swapped out)
                if not getattr(target, "offers", lambda _a: True)(b.action):
                    continue  # it would only say why not (space on a saved snapshot)
                seen.add(b.id)
                key = bindings.describe_key(bindings.effective_key(b, self._keymap), self)
                title = bindings.PALETTE_TITLES.get(b.id, b.description)
                yield SystemCommand(f"{title} ({key})", bindings.tooltip(self, b),
                                    partial(self.run_action, b.action, target))
