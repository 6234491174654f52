"""Exports from the dashboard: the snapshot (JSON), the kernel table (CSV), a Chrome trace, and an
SVG screenshot. The first three go through `tfdash.profiling.export`, the same writers the
headless CLI uses; the screenshot is Textual's own. ExportActions are the keys that write them
from the app.

Files are named after the run and a counter, never overwritten:
    tfdash-qwen3-1.7b-20261129-101500.json / .csv / .trace.json / .svg
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from tfdash.errors import TfdashError
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import visible

KINDS = {"snapshot": ".json", "csv": ".csv", "trace": ".trace.json", "svg": ".svg"}
TOAST_WIDTH, TOAST_SHARE, TOAST_FRAME = 60, 0.6, 4  # a toast's columns, at most that share of the screen
# (themes/app.tcss), less its border and padding
LABELS = {"snapshot": "snapshot", "csv": "CSV", "trace": "Chrome trace", "svg": "SVG screenshot"}


def stem_for(snap: ProfileSnapshot | None, when: float | None = None) -> str:
    name = "run"
    if snap is not None and isinstance(snap.meta.model, dict):
        name = str(snap.meta.model.get("name", "run"))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "run"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if when is None else when))
    return f"tfdash-{name}-{stamp}"


def path_lines(path: Path, width: int) -> str:
    """The file's name on a line of its own, then "in" its folder broken after a "/" so that no line
    passes `width`: a toast folds a long word mid-name, and a path is one long word."""
    lines, line = [], "in "
    for part in re.findall(r"[^/]*/|[^/]+$", visible(str(path.parent))):
        if len(line) + len(part) > width and line.strip() not in ("", "in"):
            lines.append(line)
            line = ""
        line += part
    return "\n".join([visible(path.name), *lines, line])


def unique_path(directory: Path, stem: str, suffix: str) -> Path:
    path = directory / f"{stem}{suffix}"
    n = 2
    while path.exists():
        path = directory / f"{stem}-{n}{suffix}"
        n += 1
    return path


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
        """Where exports go: the app's export_dir, else the config file's, else the current directory."""
        if self.export_dir is not None:
            return self.export_dir
        if self.config.export_dir:
            return Path(self.config.export_dir).expanduser()
        return Path.cwd()

    def action_export(self, kind: str) -> Path | None:
        """Write one export of what is on screen (ids export.*); a toast names the file or why not."""
        snap = self.snapshot
        directory = self.export_directory()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = unique_path(directory, stem_for(snap), KINDS[kind])
            if kind == "svg":
                self.save_screenshot(filename=path.name, path=str(directory))
            elif snap is None:
                self.notify("nothing measured yet to export", severity="warning", timeout=3)
                return None
            else:
                write(kind, snap, path)
        except (TfdashError, OSError) as e:
            self.notify(str(e), title=f"export {LABELS[kind]}", severity="error", timeout=8)
            return None
        width = min(TOAST_WIDTH, int(self.size.width * TOAST_SHARE)) - TOAST_FRAME
        self.notify(path_lines(path, width), title=f"{LABELS[kind]} written", timeout=6, keep="\n")
        self.last_export = path
        return path
