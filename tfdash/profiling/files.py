"""Atomic file writes: a reader never sees half a file, a crash never leaves one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from tfdash.errors import TfdashError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path, text: str) -> Path:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would make exports private
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as e:
        raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None
    return path


def write_json_atomic(path, payload) -> Path:
    return write_text_atomic(path, json.dumps(payload, indent=1, sort_keys=False) + "\n")
