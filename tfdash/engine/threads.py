"""How many threads torch's CPU kernels get.

Batch-1 decode on a CPU is a chain of small ops (a few microseconds each at qwen3-tiny's sizes).
torch's intra-op pool splits every op over all its threads and waits at a barrier for the last
one, so when another process holds one of those cores the whole op waits for a time slice: the
step goes from milliseconds to tens of milliseconds. torch's default (one thread per core) is
the worst choice on a small shared machine. So the count is chosen here, on purpose:

    requested (--threads N)          exactly N
    OMP_NUM_THREADS in the env       that (the user already chose)
    otherwise                        the cores this process may use, minus the ones left spare
                                     (one for the rest of the host; with the dashboard, one
                                     more for its UI thread), at least 1 and at most MAX_AUTO
"""

from __future__ import annotations

import os

MAX_AUTO = 8  # past this, a batch-1 GEMV at these sizes gains nothing from more threads
MAX_THREADS = 1024  # past this OpenMP fails to start its pool (tens of thousands: a segfault in torch)


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def choose_threads(requested: int | None = None, ui: bool = False, cores: int | None = None,
                   env: dict | None = None) -> tuple[int, str]:
    """(threads, why): the count for torch's CPU kernels and a few words on where it came from."""
    if requested is not None:
        return max(1, int(requested)), "--threads"
    from tfdash.omp_env import omp_value, one_count

    omp = omp_value(env).strip()  # one the command line kept from libgomp too (tfdash.omp_env)
    if one_count(omp):
        if int(omp) > MAX_THREADS:
            from tfdash.errors import ConfigError

            raise ConfigError(f"OMP_NUM_THREADS={omp[:20]}: at most {MAX_THREADS} threads")
        return int(omp), "OMP_NUM_THREADS"
    cores = available_cores() if cores is None else cores
    spare = 2 if ui else 1
    n = max(1, min(MAX_AUTO, cores - spare))
    why = f"of {cores} cores, {spare} left spare" if cores > n else f"of {cores} cores"
    # set but not one count ("abc", "0", OpenMP's nested "4,2"): said where the count is shown, not ignored unseen
    return n, why + (f"; OMP_NUM_THREADS={omp[:20]!r} is not one count" if omp else "")


IGNORED_ON_GPU = "--threads on a GPU run"  # the `why` of a run whose step is on the GPU and was given --threads


def gpu_threads(requested: int | None) -> tuple[None, str]:
    """(threads, why) of a CUDA run: no CPU thread count; `why` remembers a --threads given anyway,
    so that the run says it changes nothing rather than taking it in silence."""
    return None, (IGNORED_ON_GPU if requested is not None else "")


def oversubscribed(threads: int | None, why: str, cores: int | None = None) -> str:
    """One line where a count the user chose (`why`: "--threads" or "OMP_NUM_THREADS") is more than
    the cores this process may use, or where --threads was given to a run whose step is on the GPU,
    else "": the surplus threads queue for time slices at every op's barrier (above), so each step
    slows many times over; run as asked, and said."""
    if why == IGNORED_ON_GPU:
        return "--threads sets the CPU engine's threads; this run's step is on the GPU, so it changes nothing"
    if threads is None or why not in ("--threads", "OMP_NUM_THREADS"):
        return ""
    cores = available_cores() if cores is None else cores
    if threads <= cores:
        return ""
    name = f"--threads {threads}" if why == "--threads" else f"OMP_NUM_THREADS={threads}"
    return (f"{name} is more than the {cores} core{'s' if cores != 1 else ''} this process may use: every op "
            f"waits for the extra threads' time slices, so each step slows down (use at most {cores})")


def apply_threads(threads: int) -> None:
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
