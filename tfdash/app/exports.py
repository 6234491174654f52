"""Exports from the dashboard: the snapshot (JSON), every launch (CSV, not the table's grouping),
a Chrome trace, and an SVG screenshot. The first three go through `tfdash.profiling.export`, the
same writers the headless CLI uses; the screenshot is Textual's own. ExportActions are the keys
that write them from the app.

Files are named after the run and a counter, never overwritten:
    tfdash-qwen3-1.7b-20261129-101500.json / .csv / .trace.json / .svg
each name claimed (`reserve`: created empty, exclusively) before the file is written over its own
claim, so a file made meanwhile under the same name (another dashboard, the same second) stays.
A folder made for them is named in the toast, as the CLI's outputs name theirs.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from tfdash.cache import expand_home
from tfdash.errors import TfdashError
from tfdash.profiling.export_files import CSV_SUFFIX, SNAPSHOT_SUFFIX, TRACE_SUFFIX
from tfdash.profiling.files import created_note, missing_folders, write_text_atomic
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import visible

KINDS = {"snapshot": SNAPSHOT_SUFFIX, "csv": CSV_SUFFIX, "trace": TRACE_SUFFIX, "svg": ".svg"}
# A toast's columns: at most TOAST_WIDTH and TOAST_SHARE of the screen less TOAST_EDGE (themes/app.tcss),
# its text TOAST_FRAME fewer (border and padding)
TOAST_WIDTH, TOAST_SHARE, TOAST_EDGE, TOAST_FRAME = 60, 0.65, 3, 3
LABELS = {"snapshot": "snapshot", "csv": "CSV", "trace": "Chrome trace", "svg": "SVG screenshot"}


def stem_for(snap: ProfileSnapshot | None, when: float | None = None) -> str:
    name = "run"
    if snap is not None and isinstance(snap.meta.model, dict):
        name = str(snap.meta.model.get("name", "run"))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "run"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if when is None else when))
    return f"tfdash-{name}-{stamp}"


def broken(text: str, after: str, width: int, first: str = "") -> list[str]:
    """`first` + `text` as lines of at most `width`, each break just after one of the characters in
    `after` (a word longer than a line is the only thing split elsewhere: where it must)."""
    lines, line = [], first
    for part in re.findall(f"[^{re.escape(after)}]*[{re.escape(after)}]|[^{re.escape(after)}]+$", text):
        if len(line) + len(part) > width and line.strip() not in ("", first.strip()):
            lines.append(line)
            line = ""
        line += part
    return [*lines, line]


def path_lines(path: Path, width: int) -> str:
    """The file's name on a line of its own (broken after a "-" or a "." only where it is longer
    than a line), then "in" its folder broken after a "/", so that no line passes `width`: a toast
    folds a long word mid-name, and a path is one long word."""
    return "\n".join([*broken(visible(path.name), "-.", width), *broken(visible(str(path.parent)), "/", width, "in ")])


def unique_path(directory: Path, stem: str, suffix: str) -> Path:
    path = directory / f"{stem}{suffix}"
    n = 2
    while os.path.lexists(path):  # a dangling link too: O_EXCL refuses its name, and a write follows it
        path = directory / f"{stem}-{n}{suffix}"
        n += 1
    return path


def reserve(directory: Path, stem: str, suffix: str) -> Path:
    """A new name in `directory`, made there (empty) at once with O_EXCL: `unique_path` only looked,
    and a file made under that name before the write (two dashboards exporting or keeping a run in
    the same second) was replaced by it."""
    while True:
        path = unique_path(directory, stem, suffix)
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            return path
        except FileExistsError:  # taken since unique_path looked: the next name
            continue


def unreserve(path: Path | None) -> None:
    """Remove reserve()'s empty file where the write into it failed."""
    try:
        if path is not None and path.stat().st_size == 0:
            path.unlink()
    except OSError:
        pass


def write(kind: str, snap: ProfileSnapshot, path: Path) -> Path:
    """Write one export of `snap` (not the screenshot) to `path`."""
    from tfdash.profiling import export

    if kind == "snapshot":
        export.write_snapshot(snap, path)
    elif kind == "csv":
        export.write_kernel_csv(snap, path)
    elif kind == "trace":
        export.write_chrome_trace(snap, path)
    else:
        raise ValueError(f"unknown export kind {kind!r}")
    return path


class ExportActions:
    """The export keys on TfdashApp (TfdashApp mixes them in; bindings.APP, ids export.*)."""

    def export_directory(self) -> Path:
        """Where exports go: the app's export_dir, else the config file's, else the current directory.
        A config value whose leading ~user has no home is a TfdashError naming the file (one line, where
        Path.expanduser's RuntimeError was a traceback)."""
        if self.export_dir is not None:
            return self.export_dir
        if self.config.export_dir:
            return Path(expand_home(self.config.export_dir, f"export_dir in {self.config.path}:"))
        return Path.cwd()

    def export_remedy(self) -> str:
        """What makes exports writable, for where their folder came from."""
        if self.export_dir is not None:
            return "pass another --export-dir"
        where = "fix" if self.config.export_dir else "set"
        return f"{where} export_dir in {self.config.path}"

    def action_export(self, kind: str) -> Path | None:
        """Write one export of what is on screen (ids export.*); a toast names the file or why not."""
        snap = self.snapshot
        if snap is None and kind != "svg":  # said before any folder is made for it
            self.notify("nothing measured yet to export", severity="warning", timeout=3)
            return None
        path = directory = None
        try:
            directory = self.export_directory()  # a config export_dir of "~nouser/x" is a TfdashError
            new = missing_folders(directory)  # asked before the mkdir makes them: the toast says so
            directory.mkdir(parents=True, exist_ok=True)
            path = reserve(directory, stem_for(snap), KINDS[kind])
            if kind == "svg":  # written over its claim as the others are (save_screenshot opens with "w")
                write_text_atomic(path, self.export_screenshot())
            else:
                write(kind, snap, path)
        except (TfdashError, OSError) as e:
            unreserve(path)
            where = directory if directory is not None else "the current folder"  # Path.cwd() gone
            why = f"cannot write {where}: {e.strerror or e}" if isinstance(e, OSError) else str(e)
            self.notify(f"{why} ({self.export_remedy()})", title=f"export {LABELS[kind]}", severity="error",
                        timeout=8)
            return None
        width = min(TOAST_WIDTH, int((self.size.width - TOAST_EDGE) * TOAST_SHARE)) - TOAST_FRAME
        made = broken(visible(created_note(new).strip()), "/ ", width) if new else []  # a typo in the folder is seen
        self.notify("\n".join([path_lines(path, width), *made]), title=f"{LABELS[kind]} written", timeout=6,
                    keep="\n")
        self.last_export = path
        return path
