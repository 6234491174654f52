"""One stat of a path a user named, telling "nothing is there" from "cannot look": Path.exists and
Path.is_dir raise PermissionError for a path inside a folder that cannot be searched (chmod 000),
where each caller wants one line that names it instead of a traceback."""

from __future__ import annotations

import errno
import os

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
