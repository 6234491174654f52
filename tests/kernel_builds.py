"""Each distinct tilelang kernel the CPU tests check, built for sm_90a once per test run.

The sm_90a tests read the same kernels many times: the plan variants share most of their kernels,
every preset's plan shares some with the 1.7B variants, and the register checks read the sources
the source checks built. Lowering and building a kernel takes seconds (attention nearer ten), so
each distinct build -- family, kernel name, dims, PDL, launcher and target -- is done once, by a
pool of two worker processes (CI has two cores), into a kernel cache that is a fresh directory, so
every kernel is really lowered and built here, never loaded from an earlier run. ptxas's report of
a source is likewise read once, in the same pool.

    builds = KernelBuilds(fresh_dir)
    builds.prefetch(launches, ptxas=...)   # queue builds in the order the tests will read them
    builds.start()                         # submit them (else when a test first asks for one)
    builds.get(launch).source              # the CUDA; waits for its build, raises what it raised
    builds.resources(launch).registers     # ptxas's Resources of that source

A build that fails raises its exception in the test that reads it; a worker that dies fails the
tests still waiting (BrokenProcessPool), and no wait is longer than WAIT_S.

Under pytest-xdist (`lock`: the run's serial_lock folder) each build and ptxas job holds a shared
turn, as a test does, so no build runs beside a `serial` test; the tests that wait for the builds
hold none (conftest.py), so a serial test never waits on a build that waits on it.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from contextlib import nullcontext
from multiprocessing import get_context
from pathlib import Path
from types import MappingProxyType, SimpleNamespace

from serial_lock import turn

from tfdash.engine.compile import SM90A

WORKERS = 2
WAIT_S = 1800  # far above a whole file's builds; a hung worker fails the test instead of the run


@dataclass(frozen=True)
class Built:
    """What the tests read of a compiled kernel: its CUDA source, its prim_func's parameter names
    and, when asked for with the build, ptxas's Resources of the source."""

    source: str
    params: tuple[str, ...]
    resources: object | None = None


def key(launch, pdl: bool = True, backend: str = "tvm_ffi", target: dict | None = None) -> tuple:
    """What makes two builds the same: the launch's family, kernel name and dims, and the options
    compile_one is given. Two plans' launches with these equal build the same prim_func."""
    dims = json.dumps(dict(launch.dims), sort_keys=True, default=repr)
    return (launch.family, launch.kernel, dims, bool(pdl), backend, json.dumps(target or SM90A, sort_keys=True))


_LOCK: list[str] = []  # in a worker: the serial_lock folder its jobs take a shared turn in


def _turn():
    return turn(_LOCK[0], serial=False) if _LOCK else nullcontext()


def _init_worker(cache_dir: str, nice: int, lock: str | None = None) -> None:
    """A worker builds into `cache_dir` at priority `nice`; tilelang's and nvcc's messages go to
    /dev/null, not into the output of whichever test is running (a failure comes back raised)."""
    os.environ["TILELANG_CACHE_DIR"] = cache_dir
    _LOCK[:] = [lock] if lock else []
    if nice:
        os.nice(nice)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _build(family: str, kernel: str, dims: dict, pdl: bool, backend: str, target: dict, ptxas: bool) -> Built:
    """Compile one kernel with compile_one (in a worker) and, with `ptxas`, read its resources."""
    from tfdash.engine.compile import compile_one

    launch = SimpleNamespace(family=family, kernel=kernel, dims=MappingProxyType(dims))
    with _turn():
        compiled = compile_one(launch, target=dict(target), pdl=pdl, backend=backend)
        src = compiled.get_kernel_source()
        params = tuple(p.name for p in compiled.prim_func.params)
        return Built(src, params, _ptxas(src) if ptxas else None)


def _ptxas(src: str):
    from tfdash.engine.ptxas import resource_usage

    return resource_usage(src)


def _resources(src: str):
    with _turn():
        return _ptxas(src)


class KernelBuilds:
    """The run's builds, keyed by `key`; the worker pool starts with the first build submitted.
    `nice` lowers the workers' priority, for builds that run beside other tests; `lock`, the
    serial_lock folder whose shared turn each job takes (None: none)."""

    def __init__(self, cache_dir: Path, nice: int = 0, lock: str | None = None):
        self.cache_dir = Path(cache_dir)
        self.nice = nice
        self.lock = lock
        self._pool: ProcessPoolExecutor | None = None
        self._builds: dict[tuple, Future] = {}
        self._resources: dict[tuple, Future] = {}
        self._queued: dict[tuple, tuple] = {}  # key -> _build's arguments, not submitted yet

    def _submit(self, fn, *args) -> Future:
        if self._pool is None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            assert not any(self.cache_dir.iterdir()), f"{self.cache_dir} is not a fresh kernel cache"
            self._pool = ProcessPoolExecutor(WORKERS, mp_context=get_context("spawn"), initializer=_init_worker,
                                             initargs=(str(self.cache_dir), self.nice, self.lock))
        return self._pool.submit(fn, *args)

    def start(self) -> None:
        """Submit the queued builds, in the order they were first queued."""
        queued, self._queued = self._queued, {}
        for k, args in queued.items():
            self._builds[k] = self._submit(_build, *args)

    def _future(self, launch, pdl: bool, backend: str, target: dict | None) -> Future:
        k = key(launch, pdl, backend, target)
        if k not in self._builds and k not in self._queued:
            self.prefetch([launch], pdl, backend, target)
        self.start()
        return self._builds[k]

    def prefetch(self, launches, pdl: bool = True, backend: str = "tvm_ffi", target: dict | None = None,
                 ptxas=lambda launch: False) -> None:
        """Queue the builds of `launches` not submitted or queued yet, to be submitted in the order
        they were queued by `start` (or when a test first asks for a build); `ptxas(launch)` says
        which to run ptxas on in the same job (a build queued twice runs it when either asked)."""
        for launch in launches:
            k = key(launch, pdl, backend, target)
            if k in self._builds:
                continue
            want = bool(ptxas(launch)) or (k in self._queued and self._queued[k][-1])
            self._queued[k] = (launch.family, launch.kernel, dict(launch.dims), bool(pdl), backend,
                               dict(target or SM90A), want)

    def get(self, launch, pdl: bool = True, backend: str = "tvm_ffi", target: dict | None = None) -> Built:
        """The build of `launch` with these options: queued now if it was not, and waited for."""
        return self._future(launch, pdl, backend, target).result(timeout=WAIT_S)

    def resources(self, launch, pdl: bool = True, backend: str = "tvm_ffi", target: dict | None = None):
        """ptxas's Resources of the launch's built source (tfdash.engine.ptxas.resource_usage)."""
        built = self.get(launch, pdl, backend, target)
        if built.resources is not None:
            return built.resources
        k = key(launch, pdl, backend, target)
        if k not in self._resources:
            self._resources[k] = self._submit(_resources, built.source)
        return self._resources[k].result(timeout=WAIT_S)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
