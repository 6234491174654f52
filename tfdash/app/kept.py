"""The runs the dashboard keeps, so that neither `q` nor `r` loses what a run measured.

A live run's final snapshot is written into a folder of the cache (`runs_dir()`,
cache_dir()/runs) when the dashboard quits without --save (or with a --save that failed), and
when `r` starts the next run over it. The newest KEEP stay: writing one removes the oldest past
that. `b` lists them beside the exports, so the run before is a baseline one key away, and the
line printed after the screen closes names the file (`tfdash open` reads it).

Keeping is the dashboard's own (tfdash.app.main.run_app passes the folder); an app built without
one keeps nothing.
"""

from __future__ import annotations

from pathlib import Path

from tfdash.app.bindings import key_name
from tfdash.app.exports import reserve, stem_for, unreserve, write
from tfdash.cache import cache_dir, not_a_folder
from tfdash.errors import TfdashError
from tfdash.profiling.snapshot import ProfileSnapshot

KEEP = 20  # kept runs at most: the oldest goes as a new one is written
PATTERN = "tfdash-*.json"  # what keep() writes (stem_for's names), and all that prune() removes


def runs_dir() -> Path:
    return cache_dir() / "runs"


def worth_keeping(snap: ProfileSnapshot | None) -> bool:
    """A run that made a token (one stopped while the engine was still building measured nothing)."""
    return snap is not None and snap.new_tokens > 0


def keep(snap: ProfileSnapshot, directory: Path, limit: int = KEEP) -> Path:
    """Write `snap` into `directory` under a new name (made if missing), then remove the oldest of
    the kept files past `limit`. The path written; TfdashError saying why where it cannot be."""
    blocked = not_a_folder() if directory.is_relative_to(cache_dir()) else None
    if blocked:
        raise TfdashError(f"not kept: {blocked}")
    path = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = reserve(directory, stem_for(snap), ".json")  # its own name at once (exports.reserve)
        write("snapshot", snap, path)
    except OSError as e:
        unreserve(path)
        raise TfdashError(f"not kept: cannot write {directory} ({e.strerror or e})") from None
    except TfdashError as e:
        unreserve(path)
        raise TfdashError(f"not kept: {e}") from None
    prune(directory, limit)
    return path


def kept_runs(directory: Path) -> list[Path]:
    """keep()'s files in `directory`, newest first (by modification time); none where it cannot be read.
    An empty one is a name reserve() made for a write that never came: not a run."""
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    def written(p: Path) -> bool:
        try:
            return p.is_file() and p.stat().st_size > 0
        except OSError:
            return False

    try:
        return sorted((p for p in directory.glob(PATTERN) if written(p)), key=mtime, reverse=True)
    except OSError:
        return []


def prune(directory: Path, limit: int) -> list[Path]:
    """Remove the oldest kept files past `limit` (only keep()'s names). The files removed; one that
    cannot be is left."""
    gone = []
    for old in kept_runs(directory)[limit:]:
        try:
            old.unlink()
            gone.append(old)
        except OSError:
            pass
    return gone


class KeptRuns:
    """`keep_run` on TfdashApp (mixed in): the app's `keep_dir` (None: keep nothing), `kept` (the
    file quitting wrote) and `keep_error` (why quitting could not keep the final run). A snapshot is kept
    once: a run that never built (its engine failed, or q came while it was building) leaves the
    app's snapshot the run before's, which `r` had kept already."""

    keep_dir: Path | None = None
    kept: Path | None = None
    keep_error: str | None = None
    _kept_last: tuple[ProfileSnapshot, Path] | None = None  # the snapshot written last, and where

    def _list_kept(self, path: Path) -> None:
        """The run just kept, into a baseline picker that is up (b pressed as r stopped the run)."""
        from tfdash.app.compare import Recent
        from tfdash.app.screens.picker import PickerScreen

        try:
            entry = Recent(path, path.stat().st_mtime, self.snapshot)
        except OSError:
            return
        for screen in self.screen_stack:
            if isinstance(screen, PickerScreen):
                screen.kept(entry)

    def keep_run(self, snap: ProfileSnapshot | None) -> Path | None:
        """Keep a live run's snapshot (one that made a token) in keep_dir: the path, or None (and
        keep_error saying why, where writing failed)."""
        self.keep_error = None
        if self.keep_dir is None or not self.source.live or not worth_keeping(snap):
            return None
        if self._kept_last is not None and self._kept_last[0] is snap:  # kept already: not a second copy
            return self._kept_last[1]
        try:
            path = keep(snap, self.keep_dir)
        except TfdashError as e:
            self.keep_error = str(e)
            return None
        self._kept_last = (snap, path)
        return path

    def keep_before_rerun(self) -> None:
        """Keep the run `r` is about to start over, and say where (or why not) in a toast; nothing
        where it was kept already (the run between never built)."""
        if self._kept_last is not None and self._kept_last[0] is self.snapshot:
            return
        path = self.keep_run(self.snapshot)
        if path is not None:
            self._list_kept(path)
            self.notify(f"the run before is kept as {path.name} ({key_name(self, 'baseline')} compares against it)",
                        timeout=4)
        elif self.keep_error:  # said here, and not again after the screen closes, which is of the final run
            self.notify(self.keep_error, title="the run before", severity="warning", timeout=8)
            self.keep_error = None
