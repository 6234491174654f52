"""OMP_NUM_THREADS, kept from libgomp where tfdash does not use it.

torch loads libgomp when it is imported, and libgomp reads OMP_NUM_THREADS then: a value that is not a
count ("abc", "0", an empty one) gets libgomp's own "Invalid value" line on stderr, before anything
tfdash says. tfdash sets torch's threads itself and takes only one positive count from the variable
(tfdash.engine.threads, which says where the count is shown that any other value is not one). So the
command line takes any other value out of the environment before torch is imported (`set_aside`),
and `omp_value` still reads it for that note. Torch-free, so that it can run first.
"""

from __future__ import annotations

import os

_set_aside: str | None = None  # the value taken out of os.environ by the last set_aside


def one_count(value: str) -> bool:
    """Whether `value` is the one positive count tfdash takes from OMP_NUM_THREADS: ASCII digits, as
    libgomp reads them (str.isdigit also takes "²", which int() refuses, and "３", which libgomp does)."""
    v = value.strip()
    return v.isascii() and v.isdigit() and int(v) >= 1


def set_aside() -> None:
    """Take an OMP_NUM_THREADS that is not one count out of os.environ (before torch is imported)."""
    global _set_aside
    omp = os.environ.get("OMP_NUM_THREADS")
    _set_aside = os.environ.pop("OMP_NUM_THREADS") if omp is not None and not one_count(omp) else None


def omp_value(env=None) -> str:
    """OMP_NUM_THREADS as the user gave it: `env`'s, else this process's or the value set aside ("" if none)."""
    if env is not None:
        return env.get("OMP_NUM_THREADS", "")
    return os.environ.get("OMP_NUM_THREADS", _set_aside or "")
