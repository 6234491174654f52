"""TfdashApp: the dashboard. It renders ProfileSnapshots; where they come from is its source.

    source = LiveSource(make_session)     a Session in a thread worker (tfdash [--ckpt DIR])
    source = SnapshotSource(snapshot)     a saved snapshot, read-only (tfdash open FILE)

Both are a `Source` (tfdash.app.live); the app never asks which one it holds.

State lives in two reactives that the screens watch: `snapshot` (the latest ProfileSnapshot) and
`state` ("starting", "running", "paused", "stopping", "done", "stopped", "error", "snapshot").
Live news is coalesced: the worker posts at most one SessionNews at a time, and the app takes a
snapshot at most `refresh_hz` (20) times a second.

Quitting mid-run (q or Ctrl+C) stops the engine after the steps in flight, waits for its worker,
and exits with the final snapshot as the app's return value (also `app.final_snapshot`); with a
save path it is written there too. Nothing else is written on quit.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

from textual.app import App, SystemCommand
from textual.reactive import var
from textual.screen import Screen

from tfdash.app import bindings, exports
from tfdash.app.config import Config, keymap_problems, load_config, save_config, valid_keymap
from tfdash.app.live import Source
from tfdash.app.messages import EngineStatus, RunEnded, SessionNews
from tfdash.app.model import TableRow
from tfdash.errors import TfdashError
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import visible
from tfdash.themes import CSS_PATH, DARK, DEFAULT_THEME, register_themes
from tfdash.themes import offered as offered_themes

PROFILE_STEPS = 32
UI_BUDGET = 0.2  # share of one core the dashboard's thread may use while the engine runs
SLOWEST_REFRESH_S = 0.25  # the adaptive refresh never drops below 4 Hz
STOP_TIMEOUT_S = 15.0  # how long quit waits for the engine to finish the steps in flight
MAX_WINDOWS = 64  # profile windows remembered for the drill-down's ctx_len sweep


class TfdashApp(App[ProfileSnapshot | None]):
    CSS_PATH = CSS_PATH
    BINDINGS = bindings.APP
    TITLE = "tfdash"

    snapshot: var[ProfileSnapshot | None] = var(None, always_update=True, init=False)
    state: var[str] = var("starting", init=False)

    def __init__(self, source: Source, *, config: Config | None = None,
                 export_dir: str | Path | None = None, save_path: str | Path | None = None,
                 max_new_tokens: int | None = None, theme: str | None = None, refresh_hz: float = 20.0,
                 cuda_source: Callable | None = None, tilelang_source: Callable | None = None,
                 exit_when_done: bool = False, baseline=None) -> None:
        super().__init__()
        self.source = source
        self.baseline = baseline  # a tfdash.app.baseline.Baseline: the Δ columns compare against it
        self.config = config if config is not None else load_config()
        self.export_dir = Path(export_dir).expanduser() if export_dir else None
        self.save_path = Path(save_path).expanduser() if save_path else None
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
        self.saved: Path | None = None  # where --save wrote the final snapshot
        self.save_error: str | None = None  # why it could not
        self.interrupted_by: int | None = None  # the signal that quit the app, if one did
        self.quitting = False  # a quit is stopping the engine and writing --save
        register_themes(self)
        wanted = theme or self.config.theme or DEFAULT_THEME
        self._theme_from_config = wanted
        self.theme = wanted if wanted in self.available_themes else DEFAULT_THEME
        self._theme_fallback = self.theme if self.theme != wanted else None  # shown, never saved
        if self.config.keymap:
            self.set_keymap(valid_keymap(self.config.keymap))  # keymap_problems names the rest

    @property
    def source_label(self) -> str:
        path = self.source.path
        label = Path(path).name if path else "read-only"
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
        if not self.source.live:
            self.state = "snapshot"
            self._apply(self.source.snapshot())
        else:
            # The first frame is the heaviest to draw (every widget, the CSS); drawn before the
            # decode starts, it cannot hold the GIL while the first steps are in flight.
            self.state = "starting"
            self.status_note = "building the engine…"
            self.call_after_refresh(self._start_run)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        """A toast. Its text is often untrusted (a path, an engine error, a config value), so it is
        never markup and its control characters are shown, not sent to the terminal."""
        super().notify(visible(str(message)), title=visible(str(title)), severity=severity, timeout=timeout,
                       markup=False)  # also when a screen's notify passes markup=True

    # -- live data ---------------------------------------------------------------------------
    def _start_run(self) -> None:
        self.state = "starting"
        self.status_note = "building the engine…"
        self.windows.clear()
        self._last_window = None
        self.source.start(self)

    def on_session_news(self, message: SessionNews) -> None:
        if self._refresh_timer is None:
            # At least 1 ms: a Textual timer of 0 s never fires.
            delay = max(0.001, self._last_refresh + self.refresh_interval - time.monotonic())
            self._refresh_timer = self.set_timer(delay, self._refresh_now, name="refresh")

    def _refresh_now(self) -> None:
        self._refresh_timer = None
        self.source.take_news()
        snap = self.source.snapshot()
        self._last_refresh = time.monotonic()
        self._adapt_rate(self._last_refresh)
        if snap is None:
            return
        if self.state == "starting":
            self.state = "paused" if self.source.paused else "running"
            self.status_note = ""
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
            if self._last_window is not None or self.state != "snapshot":
                self.notify(f"{r.steps} steps at ctx_len {r.ctx_len:,}: {r.measured_step_ns / 1e6:.3f} ms/step, "
                            f"{r.pct_ceiling:.1f} % of the ceiling", title="profile window", timeout=4)
            self._last_window = window
        self.snapshot = snap

    def on_engine_status(self, message: EngineStatus) -> None:
        if message.text.startswith("warning: "):  # stays as a toast, not a passing status line
            self.notify(message.text[len("warning: "):], title="engine", severity="warning", timeout=20)
            return
        self.status_note = message.text
        if self.state == "starting":
            self.snapshot = self.snapshot  # re-render the placeholder with the new line

    def on_run_ended(self, message: RunEnded) -> None:
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
        if self._rerun:
            self._rerun = False
            self._stopping = False
            self._start_run()
        elif self.exit_when_done:
            self.final_snapshot = self.snapshot
            self.exit(self.snapshot)

    @property
    def running(self) -> bool:
        return self.source.running

    # -- actions -------------------------------------------------------------------------------
    def _live_only(self, what: str) -> bool:
        if self.source.live:
            return True
        self.notify(f"a saved snapshot is read-only: nothing to {what}", severity="warning", timeout=3)
        return False

    def action_pause(self) -> None:
        if not self._live_only("pause") or not self.running:
            return
        paused = not self.source.paused
        self.source.pause(paused)
        if self.state in ("running", "paused"):
            self.state = "paused" if paused else "running"
        self.notify("paused: the engine holds at its next step" if paused else "resumed", timeout=2)

    def action_rerun(self) -> None:
        if not self._live_only("re-run"):
            return
        if self.running:
            self._rerun = True
            self.state = "stopping"
            self.source.stop()
        else:
            self._start_run()
        self.notify("re-running the generation", timeout=2)

    def action_profile(self) -> None:
        if not self._live_only("profile"):
            return
        if self.source.request_profile(PROFILE_STEPS):
            self.notify(f"profiling the next {PROFILE_STEPS} steps…", timeout=2)
        else:
            self.notify("no run in progress to profile (r re-runs)", severity="warning", timeout=3)

    def action_help(self) -> None:
        from tfdash.app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def open_drill(self, row: TableRow) -> None:
        """Open a row of the kernel table. A single launch opens its op -- every instance across
        the layers -- with the cursor on that launch."""
        from tfdash.app.model import group_rows
        from tfdash.app.screens.drill import DrillScreen
        from tfdash.app.widgets.kernel_table import KernelTable

        group = self.screen.query_one(KernelTable).group if self.screen.query(KernelTable) else "op"
        current = row.members[0]
        if group == "none" and self.snapshot is not None:
            for op_row in group_rows(self.snapshot.kernels, "op"):
                if current in op_row.members:
                    row, group = op_row, "op"
                    break
        self.push_screen(DrillScreen(row, group, current=current))

    def export_directory(self) -> Path:
        if self.export_dir is not None:
            return self.export_dir
        if self.config.export_dir:
            return Path(self.config.export_dir).expanduser()
        return Path.cwd()

    def action_export(self, kind: str) -> Path | None:
        snap = self.snapshot
        directory = self.export_directory()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = exports.unique_path(directory, exports.stem_for(snap), exports.KINDS[kind])
            if kind == "svg":
                self.save_screenshot(filename=path.name, path=str(directory))
            elif snap is None:
                self.notify("nothing measured yet to export", severity="warning", timeout=3)
                return None
            else:
                exports.write(kind, snap, path)
        except (TfdashError, OSError) as e:
            self.notify(str(e), title=f"export {exports.LABELS[kind]}", severity="error", timeout=8)
            return None
        self.notify(str(path), title=f"{exports.LABELS[kind]} written", timeout=6)
        self.last_export = path
        return path

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

    async def action_quit(self) -> None:
        if self.quitting:  # a second q or Ctrl+C: the first one finishes its stop and --save
            self.notify("stopping the engine and writing what was measured first…", timeout=3)
            return
        self.quitting = True
        snap = await self.stop_engine()
        if snap is not None and self.save_path is not None:
            try:
                exports.write("snapshot", snap, self.save_path)
                self.saved = self.save_path
            except (TfdashError, OSError) as e:
                self.save_error = str(e)  # the CLI says so after the screen closes, and exits 1
                self.notify(str(e), severity="error")
        self.exit(snap)

    def quit_on_signal(self, signum: int) -> None:
        """SIGTERM or SIGHUP: quit as `q` does -- stop the engine, keep what was measured, write
        --save. Called on the app's thread (the CLI's handler hands it over)."""
        if self.interrupted_by is None:
            self.interrupted_by = signum
            self.call_later(self.action_quit)

    async def stop_engine(self) -> ProfileSnapshot | None:
        """Stop the run after the steps in flight, wait for the worker; the final snapshot."""
        source = self.source
        if source.running:
            self._stopping = True
            self.state = "stopping"
            source.stop()
            worker = source.worker
            if worker is not None:
                try:
                    await asyncio.wait_for(worker.wait(), STOP_TIMEOUT_S)
                except Exception:  # noqa: BLE001 - a failed or slow worker: keep what we have
                    pass
        snap = source.snapshot() or self.snapshot
        self.final_snapshot = snap
        return snap

    def on_unmount(self) -> None:
        self.source.stop()

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
                seen.add(b.id)
                key = bindings.describe_key(bindings.effective_key(b, self._keymap), self)
                yield SystemCommand(f"{b.description} ({key})", b.tooltip or b.description,
                                    partial(self.run_action, b.action, target))
