"""Where tfdash keeps what it measured or compiled, one definition for every part of it.

    cache_dir()            $TFDASH_CACHE_DIR, else $XDG_CACHE_HOME/tfdash, else ~/.cache/tfdash:
                           the bandwidth probe's results, the dashboard's stderr log
    xdg_home(var, dflt)    an XDG base folder: $var where it is absolute (after a leading ~), else dflt
    expand_home(value, v)  a leading ~ or ~user made that home; a ~user with no home is one line naming
                           the variable v (Path.expanduser's RuntimeError was a traceback)
    tilelang_cache_dir()   $TILELANG_CACHE_DIR, else cache_dir()/tilelang: compiled kernels (the
                           variable is set when it was not, because tilelang itself reads it)
    not_a_folder()         what stands in cache_dir()'s way where a file does (TFDASH_CACHE_DIR=a
                           file), so a user of it says that once rather than each read's ENOTDIR
"""

from __future__ import annotations

import os
from pathlib import Path

from tfdash.errors import TfdashError


def cache_dir() -> Path:
    """A leading `~` is the home, as the config folder's variables read it: a value quoted in a
    script or an env file (`TFDASH_CACHE_DIR="~/x"`) reaches us unexpanded, and the writes (which
    expand it) and the checks before them (which did not) named two different folders."""
    d = os.environ.get("TFDASH_CACHE_DIR")
    if d:
        return Path(expand_home(d, "TFDASH_CACHE_DIR"))
    return xdg_home("XDG_CACHE_HOME", ".cache") / "tfdash"


def xdg_home(var: str, default: str) -> Path:
    """$`var` (XDG_CACHE_HOME, XDG_CONFIG_HOME), else ~/`default`. The XDG spec has a relative value
    ignored: it was read from the working directory, so each folder a command ran in grew its own
    cache. A leading `~` is the home first, as tfdash reads it in every variable that names a folder."""
    d = Path(os.path.expanduser(os.environ.get(var) or ""))  # "~nobody/x" stays as it is (relative): ignored
    return d if d.is_absolute() else Path(expand_home(f"~/{default}", "the default folder"))


def expand_home(value: str, what: str = "") -> str:
    """`value` with a leading `~` (or `~user`) made that home. Where there is none (an unknown user, or
    no HOME and no password entry) a TfdashError names `what` (the variable that said it): Path.expanduser
    raises RuntimeError there, which reached the user as a traceback."""
    out = os.path.expanduser(value)
    if out.startswith("~"):  # os.path.expanduser leaves what it cannot expand as it was
        user = value[1:].split("/", 1)[0]
        why = f"there is no user {user!r}" if user else "HOME is unset and this user has no home folder"
        raise TfdashError(f"{what + ' ' if what else ''}{value}: {why}, so its leading ~ names no folder")
    return out


def tilelang_cache_dir() -> Path:
    d = os.environ.get("TILELANG_CACHE_DIR")
    if not d:
        d = str(cache_dir() / "tilelang")
        os.environ["TILELANG_CACHE_DIR"] = d
    return Path(d)


def not_a_folder() -> str | None:
    """"TFDASH_CACHE_DIR X is a file, not a folder" (or the file on its way, or the default's words),
    where cache_dir() cannot be a folder because a file stands there; None where it is one or can be
    made. Asked through os.path, which never raises."""
    d = cache_dir()
    f = next((p for p in (d, *d.parents) if os.path.exists(p)), None)
    if f is None or os.path.isdir(f):
        return None
    where = f"TFDASH_CACHE_DIR {d}" if os.environ.get("TFDASH_CACHE_DIR") else f"the cache folder {d}"
    return f"{where} is a file, not a folder" if f == d else f"{where}: {f} is a file, not a folder"
