"""One stat of a path a user named, telling "nothing is there" from "cannot look": Path.exists and
Path.is_dir raise PermissionError for a path inside a folder that cannot be searched (chmod 000),
where each caller wants one line that names it instead of a traceback. And whether the names a
write would make fit the file system, asked before the run rather than found at its end."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from tfdash.errors import TfdashError

ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # nothing there (or a loop of links, nothing at its end)


def stat_or_none(path, follow: bool = True) -> os.stat_result | None:
    """`path`'s stat (its link's own where not `follow`), or None where nothing is there. Any other
    OSError (a folder on the way that cannot be read or searched) is raised, for the caller to say
    in its own line."""
    try:
        return os.stat(path, follow_symlinks=follow)
    except OSError as e:
        if e.errno in ABSENT:
            return None
        raise


def why_no_folder(folder, e: OSError) -> str:
    """Why `folder` could not be made or written in (`e`, the OSError that said so): "X is a file,
    not a folder" where a file stands at it or on its way, since mkdir's own words for that, "File
    exists", read as if the file being written were in the way; else the error's own words."""
    f = Path(folder)
    there = next((p for p in (f, *f.parents) if os.path.lexists(p)), None)
    if there is not None and os.path.exists(there) and not os.path.isdir(there):
        return f"{there} is a file, not a folder"
    return e.strerror or str(e)


TEMP_EXTRA = len("..") + 8  # a write goes through ".NAME.XXXXXXXX" beside NAME first (tempfile's 8 characters)


def check_name_length(path, what: str, said=None, temp: bool = True) -> None:
    """A TfdashError ("WHAT PATH: a name is too long ...") where `path` cannot be written for a
    name's length: each part still to be made is held to the file system's NAME_MAX (asked of the
    nearest folder there), the last with room for the temporary name written first beside it (`temp`:
    a file, --export's folder; not a folder the files go into, which is used as it is). Checked before
    a run, where the write at its end failed with "File name too long" and the run's numbers were lost."""
    path = Path(path)
    base = next((p for p in path.parents if os.path.isdir(p)), Path("."))
    try:
        limit = os.pathconf(base, "PC_NAME_MAX")
    except (OSError, ValueError):  # no limit to ask of this file system
        return
    parts = path.parts[len(base.parts):]
    for i, part in enumerate(parts):
        room = limit - (TEMP_EXTRA if temp and i == len(parts) - 1 else 0)
        if len(os.fsencode(part)) > room:
            raise TfdashError(f"{what} {said or path}: a name is too long for this file system "
                              f"({len(os.fsencode(part))} bytes; at most {room} here)")
