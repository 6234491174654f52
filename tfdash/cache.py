"""Where tfdash keeps what it measured or compiled, one definition for every part of it.

    cache_dir()            $TFDASH_CACHE_DIR, else $XDG_CACHE_HOME/tfdash, else ~/.cache/tfdash:
                           the bandwidth probe's results, the dashboard's stderr log
    tilelang_cache_dir()   $TILELANG_CACHE_DIR, else cache_dir()/tilelang: compiled kernels (the
                           variable is set when it was not, because tilelang itself reads it)
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    d = os.environ.get("TFDASH_CACHE_DIR")
    if d:
        return Path(d)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tfdash"


def tilelang_cache_dir() -> Path:
    d = os.environ.get("TILELANG_CACHE_DIR")
    if not d:
        d = str(cache_dir() / "tilelang")
        os.environ["TILELANG_CACHE_DIR"] = d
    return Path(d)
