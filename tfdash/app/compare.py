"""The dashboard's two comparisons, as app actions (TfdashApp mixes them in):

    b   a baseline picker over recent snapshot exports (tfdash.app.screens.picker): the chosen
        one becomes `app.baseline`, the same Baseline `tfdash open B --baseline A` gives, so the
        kernel table's Δ columns, the drill-down's both sides and the roofline's both steps follow
    a   the live A/B of a plan variant (tfdash.app.screens.ab); `stop_ab` cancels one that runs
        and waits for it, before q or r stops the engine it steps

`snapshot_candidates(dirs)` lists the snapshot files where the dashboard writes exports (the export
directory, the last export's, --save's, the open file's) and where it keeps runs (tfdash.app.kept):
the newest files whose start names the snapshot schema. `read_snapshots(found)` loads and validates
each, so the picker can say what it is (model, dtype, when, tok/s) or why it does not load, the
latest recorded run first: tens of milliseconds a file, seconds for twenty while a decode shares the
GIL, so `b` reads them in a worker and the picker opens at once.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from tfdash.errors import TfdashError
from tfdash.profiling.export import GZIP_MAGIC, snapshot_label, snapshot_labels
from tfdash.profiling.export_files import EXPORT_TRACE, GZ_GLOB, TRACE_SUFFIX, without_gz  # traces: --export's, t's
from tfdash.profiling.snapshot import SCHEMA, ProfileSnapshot

RECENT = 20  # snapshot files the picker lists at most (each one is read and validated)
# A list read within this is shown whole as the picker opens; a longer read opens it at once with
# "reading N snapshots…" (keys pressed meanwhile wait for the picker, so none reaches the dashboard)
PICKER_GRACE_S = 0.15
# How long q and r wait for an A/B to end its window in progress: a window is 64 steps and a profile
# window 32 (milliseconds on a GPU); one still building its variant's kernels is not waited out
AB_STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Recent:
    path: Path
    mtime: float
    snapshot: ProfileSnapshot | None = None
    error: str | None = None  # why the file is not a snapshot this tfdash reads


HEAD_BYTES = 4096  # how much of a JSON file is read to tell whether it claims to be a snapshot
SCHEMA_FIELD = re.compile(rb'"schema"\s*:\s*"' + re.escape(SCHEMA.encode()) + rb'"')


def snapshot_files(directory: Path) -> list[Path]:
    """Snapshot exports in `directory`: the dashboard's `*.json` (not its `.trace.json`), and the
    `snapshot.json` of `--headless --export DIR` folders one level down (not their `trace.json`);
    each also gzip-compressed (`.json.gz`), which `tfdash open` and the picker's Enter read as well."""
    def trace(p: Path) -> bool:
        name = without_gz(p.name)
        return name == EXPORT_TRACE or name.endswith(TRACE_SUFFIX)

    try:  # .gz in any case (run.json.GZ), as --save writes gzip for it
        own = [p for pattern in ("*.json", "*.json" + GZ_GLOB) for p in directory.glob(pattern) if not trace(p)]
        return own + [p for pattern in ("*/snapshot.json", "*/snapshot.json" + GZ_GLOB) for p in directory.glob(pattern)]
    except OSError:
        return []


def claims_snapshot(path: Path) -> bool:
    """Whether the file's start names the snapshot schema (a snapshot writes it first; a gzip file's
    start once uncompressed): a JSON file that is something else (a trace, a config) is not offered;
    one that claims to be a snapshot and does not load is, with why."""
    import gzip
    import zlib

    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
        if head[:2] == GZIP_MAGIC:
            with gzip.open(path, "rb") as f:
                head = f.read(HEAD_BYTES)
        return SCHEMA_FIELD.search(head) is not None
    except (OSError, EOFError, zlib.error):  # unreadable, or gzip cut short in its first bytes
        return False


def snapshot_candidates(dirs: Iterable[Path], limit: int = RECENT,
                        skip: Iterable[Path] = ()) -> list[tuple[Path, float]]:
    """The newest `limit` snapshot files in `dirs` (less `skip`) and their mtimes, newest first:
    a glob, a stat and the first bytes of each (claims_snapshot), cheap enough for the UI thread."""
    skipped = {_real(p) for p in skip}
    found: dict[Path, float] = {}
    for d in dirs:
        for p in snapshot_files(Path(d)):
            try:
                if p.is_file() and _real(p) not in skipped and claims_snapshot(p):
                    found[_real(p)] = p.stat().st_mtime
            except OSError:
                continue
    return sorted(found.items(), key=lambda kv: -kv[1])[:limit]  # the newest files: only they are read


def read_snapshots(found: Iterable[tuple[Path, float]], cancelled=lambda: False) -> list[Recent] | None:
    """Each of `found` (snapshot_candidates) loaded and validated, the latest recorded first; None
    once `cancelled()`, asked between files (the picker closed, the app quits: neither waits for the rest)."""
    from tfdash.profiling.export import load_snapshot

    out = []
    for p, mtime in found:
        if cancelled():
            return None
        try:
            out.append(Recent(p, mtime, load_snapshot(p)))
        except Exception as e:  # noqa: BLE001 - any file that does not load is its row, with why (TfdashError, OSError
            # and the rest alike): in a worker, an uncaught one would leave the picker reading forever
            out.append(Recent(p, mtime, error=str(e).removeprefix(f"{p}: ") or type(e).__name__))
    return sorted(out, key=recorded, reverse=True)


def recorded(e: Recent) -> tuple[float, float]:
    """When the run `e` holds was recorded (its started_at, else its file's mtime, as the picker's
    "recorded" column says it), then the file's mtime: the picker's order, newest first, so that the
    rows read in the order of that column. A snapshot copied or saved again later has a new mtime
    and kept its run's start."""
    import calendar

    started = e.snapshot.meta.started_at if e.snapshot is not None else ""
    try:
        return calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ")), e.mtime
    except (TypeError, ValueError):
        return e.mtime, e.mtime


def _real(p: Path) -> Path:
    try:
        return Path(p).resolve()
    except OSError:
        return Path(p)


class CompareActions:
    """`b` and `a` on TfdashApp (bindings.APP: ids "baseline" and "ab")."""

    def snapshot_dirs(self) -> list[Path]:
        try:
            dirs = [self.export_directory()]
        except TfdashError:  # a config export_dir that names no folder (said at start): nothing listed there
            dirs = []
        for p in (self.last_export, self.save_path, self.source.path):
            if p is not None:
                dirs.append(Path(p).parent)
        if self.keep_dir is not None:  # the runs q and r kept (tfdash.app.kept)
            dirs.append(self.keep_dir)
        # one folder once, however it was spelled (`tfdash open run.json`: "." beside the cwd)
        unique: dict[Path, Path] = {}
        for d in dirs:
            unique.setdefault(_real(d), d)
        return list(unique.values())

    async def action_baseline(self) -> None:
        """The picker, its snapshots read in a worker: waited for up to PICKER_GRACE_S, so a short
        list is in the picker's first frame, and handed to the picker when read (`_snapshots_read`)."""
        from textual.worker import get_current_worker

        from tfdash.app.screens.picker import PickerScreen

        if isinstance(self.screen, PickerScreen):
            return
        skip = [self.source.path] if self.source.path is not None else []
        found = snapshot_candidates(self.snapshot_dirs(), skip=skip)

        read_list: list[list[Recent]] = []  # the list, once read: kept before it is handed back

        def read() -> list[Recent] | None:
            entries = read_snapshots(found, lambda: get_current_worker().is_cancelled)
            if entries is not None:
                read_list.append(entries)
                hand_back(self, self._snapshots_read, get_current_worker(), entries)
            return entries

        worker = self.run_worker(read, thread=True, group="picker", exclusive=True, exit_on_error=False)
        deadline = time.monotonic() + PICKER_GRACE_S
        while not read_list and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        # read_list, not worker.is_finished: the hand-back can run here, before the picker is pushed (so
        # it finds none), while the worker is not marked finished yet; the picker then read forever
        self.push_screen(PickerScreen(len(found), worker, read_list[0] if read_list else None))

    def _snapshots_read(self, worker, entries: list[Recent]) -> None:
        from tfdash.app.screens.picker import PickerScreen

        for s in self.screen_stack:
            if isinstance(s, PickerScreen) and s.reader is worker and s.entries is not entries:  # not twice
                s.show_entries(entries)

    def shown_name(self) -> str:
        """The file on screen as named beside the baseline's: with the folders that tell the two
        apart where both have one name (snapshot_labels)."""
        path, base = self.source.path, self.baseline
        if path and base is not None and base.path:
            return snapshot_labels(path, base.path)[0]
        return snapshot_label(path) if path else "this run"

    def set_baseline(self, chosen: Recent | None) -> str | None:
        """Compare against `chosen` (None: drop the baseline). The one-line refusal `tfdash diff`
        gives for another shape or dtype, or why there is nothing to compare yet; None when set."""
        from tfdash.app.baseline import Baseline
        from tfdash.profiling.diff import refusal

        if chosen is None:
            self.baseline = None
        else:
            if chosen.snapshot is None:
                return f"{snapshot_label(chosen.path)}: {chosen.error}"
            if self.snapshot is None:
                return "nothing measured yet to compare with: wait for the first tokens"
            path = self.source.path  # each named as beside the other: two snapshot.json, each with its folder
            name, shown = snapshot_labels(chosen.path, path) if path else (snapshot_label(chosen.path), "this run")
            line = refusal(chosen.snapshot, self.snapshot, name, shown, force="`tfdash diff --force`")
            if line:
                return line
            self.baseline = Baseline(chosen.snapshot, name, chosen.path)
        self.snapshot = self.snapshot  # every pane draws again, with or without the Δ
        return None

    def action_ab(self) -> None:
        from tfdash.app.screens.ab import ABScreen

        if isinstance(self.screen, ABScreen):
            return
        if not self.offers("ab"):  # a saved snapshot without an A/B: said before any variant list
            self.notify("a saved snapshot is read-only: nothing to A/B", severity="warning", timeout=3)
            return
        self.push_screen(ABScreen(), callback=lambda _: self.show_held_window_toast())  # refresh.py

    async def stop_ab(self, timeout: float = AB_STOP_TIMEOUT_S) -> bool:
        """Cancel a running A/B after its window in progress and wait for its worker (at most
        `timeout` s): quitting or re-running must not leave it stepping the engine (on a GPU,
        replaying graphs) beside the teardown or the next run, and what it measured reaches the
        run's snapshot first. True once none runs. Where no A/B screen was ever opened there is none
        to cancel, and the screen's module is not imported for it: it loads the engine and torch,
        seconds that every q on a saved snapshot waited for."""
        ab = sys.modules.get("tfdash.app.screens.ab")
        if ab is None:
            return True
        return await all_set([s.cancel_run() for s in self.screen_stack if isinstance(s, ab.ABScreen)], timeout)


def hand_back(app, fn, *args) -> None:
    """From a measuring worker's thread: `fn(*args)` on the app's loop, unless Textual cancelled the
    worker (its screen or the app has gone) or the app closed meanwhile."""
    from textual.worker import get_current_worker

    if get_current_worker().is_cancelled:
        return
    try:
        app.call_from_thread(fn, *args)
    except RuntimeError:  # the app has closed meanwhile
        pass


async def all_set(events: list, timeout: float) -> bool:
    """Wait (on the app's loop, polling) until every threading.Event in `events` is set, at most
    `timeout` s; whether they all were."""
    deadline = time.monotonic() + timeout
    while not all(e.is_set() for e in events):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
