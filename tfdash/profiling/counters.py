"""Hardware counters per launch: Nsight Compute run over a child process that replays the step.

    select(plan, patterns, layers)    which launches: roles, ops or globs ("L3.gate_up", "down",
                                      "L0.*"), all of them, and optionally only some layers
    segments(indices)                 contiguous runs of launches: one ncu run each (ncu's
                                      --launch-skip/--launch-count pick one run of kernels)
    measure(request, progress)        the counters of every selected launch: {index: Counters}
    with_counters(rows, counters)     KernelRows with their counters (snapshot, table, CSV)

The child (tfdash.profiling.counters_child) builds its own engine: the engine being profiled is
never the one a dashboard is running, which keeps decoding while ncu works. Each ncu run has a
timeout; on it the child's process group is ended. Anything that stops a measurement (no ncu, no
permission to read counters, no CUDA, another backend) is a `CountersUnavailable` whose message
is one line saying what is missing and how to get it.
"""

from __future__ import annotations

import fnmatch
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from tfdash.errors import TfdashError
from tfdash.profiling import ncu as ncu_mod
from tfdash.profiling.snapshot import Counters, KernelRow

DEFAULT_CTX = 512  # ctx_len of the profiled replay: eight attention blocks of KV
RUN_TIMEOUT_S = 900.0  # one ncu run: engine build (compiles), capture, and every profiled kernel
IMPORT_TIMEOUT_S = 120.0
NCU_PLACES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
MISSING_NCU = ("Nsight Compute (ncu) not found on PATH or at /usr/local/cuda/bin/ncu: install the CUDA "
               "toolkit's Nsight Compute, or set TFDASH_NCU=/path/to/ncu")


class CountersUnavailable(TfdashError):
    """Counters cannot be measured here; the message says what is missing and how to get it."""


def find_ncu() -> str | None:
    explicit = os.environ.get("TFDASH_NCU")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    return next((p for p in NCU_PLACES if os.access(p, os.X_OK)), None)


def device_kernel(launch) -> str:
    """The device kernel a tilelang launch runs (its prim_func is named after the launch's kernel)."""
    return f"{launch.kernel}_kernel"


# -- which launches ---------------------------------------------------------------------------
def select(plan, patterns: Sequence[str] = (), every: bool = False, layers: set[int] | None = None) -> list[int]:
    """Plan indices of the launches asked for: `every` launch, or those whose role, op or a glob of
    the role matches a pattern; `layers` keeps, of layered launches, only those layers."""
    chosen = []
    for la in plan.launches:
        hit = every or any(p in (la.role, la.op) or fnmatch.fnmatchcase(la.role, p) for p in patterns)
        if hit and (layers is None or la.layer is None or la.layer in layers):
            chosen.append(la.index)
    if not chosen:
        want = ", ".join(patterns) or "none"
        raise TfdashError(f"no launch of the step matches {want}"
                          f"{' in layers ' + ','.join(map(str, sorted(layers))) if layers is not None else ''} "
                          f"(roles look like L0.qkv_proj, ops like gate_up, globs like 'L3.*')")
    return chosen


def segments(indices: Sequence[int]) -> list[tuple[int, int]]:
    """[(first, last)] of the contiguous runs in sorted `indices`."""
    out: list[tuple[int, int]] = []
    for i in sorted(set(indices)):
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


# -- a request and its result -------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    plan: object  # the StepPlan the child builds too (tfdash.engine.plan_for, same environment)
    indices: tuple[int, ...]
    engine_args: dict = field(default_factory=dict)  # ckpt, model, device, dtype, backend, seed
    ctx_len: int = DEFAULT_CTX
    timeout_s: float = RUN_TIMEOUT_S


def child_command(engine_args: dict, ctx: int) -> list[str]:
    argv = [sys.executable, "-m", "tfdash.profiling.counters_child", "--ctx", str(int(ctx))]
    for key in ("ckpt", "model", "device", "dtype", "backend", "seed"):
        v = engine_args.get(key)
        if v is not None:
            argv += [f"--{key}", str(v)]
    return argv


def prepare(engine_args: dict, pick: Callable[[object], list[int]], ctx: int = DEFAULT_CTX,
            timeout_s: float = RUN_TIMEOUT_S) -> Request:
    """The request for the launches `pick(plan)` of the engine `engine_args` (ckpt, model,
    device, dtype, backend, seed) asks for: checked for this host first (check_host), its plan
    built as the child will build it. The device and backend resolved are passed on, so the
    child builds that engine and no other."""
    from tfdash.engine import choose_engine, plan_for

    args = {k: engine_args.get(k) for k in ("ckpt", "model", "device", "dtype", "backend", "seed")}
    check_this_host(args["device"])  # no GPU here: said first, before any engine argument is weighed
    choice = choose_engine(**args)
    check_host(choice.device, choice.backend)
    plan = plan_for(choice.config, choice.dtype, choice.capacity())
    resolved = dict(engine_args, device=choice.device, dtype=choice.dtype, backend=choice.backend)
    return Request(plan, tuple(pick(plan)), resolved, ctx, timeout_s)


def check_ctx_arg(engine_args: dict, ctx: int) -> None:
    """--ctx against the KV cache the child's engine builds (its default capacity, on the model the
    arguments name or, where none is, the GPU's default shape): CapacityError, said as a mistake of
    the argument before the host is weighed and any engine or ncu run."""
    from tfdash.engine.config import load_config, preset
    from tfdash.engine.limits import LEAST_CAPACITY, check_ctx, default_capacity

    ckpt, model = engine_args.get("ckpt"), engine_args.get("model")
    cfg = load_config(ckpt) if ckpt is not None else preset(model or "qwen3-1.7b")
    check_ctx(cfg, default_capacity(cfg, LEAST_CAPACITY), ctx)


def to_counters(rec: ncu_mod.NcuRecord, launch, ctx: int) -> Counters:
    m = rec.metrics
    cost = launch.cost(ctx)

    def whole(name):
        v = m.get(name)
        return None if v is None else int(round(v))

    return Counters(ctx_len=ctx, kernel=rec.kernel, dram_read=whole("dram__bytes_read.sum"),
                    dram_written=whole("dram__bytes_write.sum"), predicted_read=cost.bytes_read,
                    predicted_written=cost.bytes_written,
                    warps_active_pct=m.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
                    registers=whole("launch__registers_per_thread"),
                    smem_static=whole("launch__shared_mem_per_block_static"),
                    smem_dynamic=whole("launch__shared_mem_per_block_dynamic"),
                    grid=rec.grid, block=rec.block, ncu_ns=m.get("gpu__time_duration.sum"))


def match(records: Sequence[ncu_mod.NcuRecord], plan, first: int, last: int, ctx: int) -> dict[int, Counters]:
    """ncu's records of one run, in order, onto launches first..last; TfdashError when a name or
    the count disagrees with the plan."""
    want = plan.launches[first:last + 1]
    if len(records) != len(want):
        raise TfdashError(f"ncu profiled {len(records)} kernels; launches {first}..{last} are {len(want)} "
                          "(did the replay run between cudaProfilerStart and Stop?)")
    out = {}
    for rec, la in zip(records, want):
        if rec.kernel != device_kernel(la):
            raise TfdashError(f"ncu's kernel {rec.id} is {rec.kernel!r}; launch {la.index} ({la.role}) runs "
                              f"{device_kernel(la)!r}: the child's plan is not this one")
        out[la.index] = to_counters(rec, la, ctx)
    return out


# -- running ncu ------------------------------------------------------------------------------
def run_streaming(cmd: Sequence[str], timeout_s: float, on_line: Callable[[str], None] | None = None,
                  env: dict | None = None, cancel: threading.Event | None = None) -> tuple[int, str]:
    """Run `cmd` in its own process group, stdout and stderr merged and handed line by line to
    `on_line`; at `timeout_s` the group is ended and TfdashError says so. A set `cancel` (the
    dashboard exits) ends the group too, within a fifth of a second,
    and raises TfdashError("cancelled"): the thread waiting here would otherwise hold the
    process's exit until ncu was done, up to the timeout."""
    try:
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True, env=env)
    except OSError as e:
        raise CountersUnavailable(f"cannot start {cmd[0]}: {e.strerror or e}") from None
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for ln in proc.stdout:
            lines.put(ln)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    kept: list[str] = []
    deadline = time.monotonic() + timeout_s
    while reader.is_alive() or not lines.empty():
        if cancel is not None and cancel.is_set():
            _end(proc)
            raise TfdashError("cancelled")
        try:
            ln = lines.get(timeout=0.2)
        except queue.Empty:
            if time.monotonic() > deadline:
                _end(proc)
                raise TfdashError(f"the profiling run took longer than {timeout_s:.0f} s and was stopped "
                                  "(profile fewer launches: --launch ROLE or --layers)") from None
            continue
        kept.append(ln)
        if on_line is not None:
            on_line(ln.rstrip("\n"))
    try:
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _end(proc)
        raise TfdashError(f"the profiling run did not exit within {timeout_s:.0f} s and was stopped") from None
    return rc, "".join(kept)


def _end(proc: subprocess.Popen) -> None:
    """End the child's process group (ncu and the python it runs): TERM, then KILL."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def measure(req: Request, progress: Callable[[str], None] | None = None, ncu: str | None = None,
            cancel: threading.Event | None = None) -> dict[int, Counters]:
    """Counters of every launch in `req.indices`: one ncu run per contiguous segment. A set
    `cancel` ends the ncu run in progress and raises TfdashError("cancelled") (run_streaming)."""
    ncu = ncu or find_ncu()
    if ncu is None:
        raise CountersUnavailable(MISSING_NCU)
    plan = req.plan
    plan.check_ctx(req.ctx_len)
    kernels = [device_kernel(la) for la in plan.launches]
    say = progress or (lambda s: None)
    out: dict[int, Counters] = {}
    segs = segments(req.indices)
    with tempfile.TemporaryDirectory(prefix="tfdash-ncu-") as tmp:
        for n, (first, last) in enumerate(segs, 1):
            what = plan.launches[first].role + (f"..{plan.launches[last].role}" if last > first else "")
            say(f"ncu run {n}/{len(segs)}: {what} ({last - first + 1} launches)")
            report = str(Path(tmp) / f"run{n}")
            cmd = ncu_mod.profile_command(ncu, child_command(req.engine_args, req.ctx_len), kernels, first,
                                          last - first + 1, report)

            def line(ln: str, n=n) -> None:
                msg = ncu_mod.progress_line(ln)
                if msg:
                    say(f"[{n}/{len(segs)}] {msg}")

            rc, text = run_streaming(cmd, req.timeout_s, line, cancel=cancel)
            why = ncu_mod.diagnose(text, rc)
            if why:
                raise CountersUnavailable(why)
            rc, csv_text = run_streaming(ncu_mod.import_command(ncu, report + ".ncu-rep"), IMPORT_TIMEOUT_S,
                                         cancel=cancel)
            if rc != 0:
                raise CountersUnavailable(ncu_mod.diagnose(csv_text, rc) or f"ncu --import exited with {rc}")
            try:
                records = ncu_mod.parse_csv(csv_text)
            except ValueError as e:
                raise TfdashError(f"ncu's report: {e}") from None
            out.update(match(records, plan, first, last, req.ctx_len))
    return out


def with_counters(rows: Sequence[KernelRow], counters: dict[int, Counters]) -> tuple[KernelRow, ...]:
    """The rows with the counters measured for them (others keep theirs)."""
    if not counters:
        return tuple(rows)
    return tuple(replace(r, counters=counters[r.index]) if r.index in counters else r for r in rows)


def check_this_host(device: str | None, backend: str | None = None) -> None:
    """check_host for an engine asked to run on `device` (None or "cuda": this host's default, so
    a host without CUDA says so first), and on `backend` where given."""
    from tfdash.engine import default_device

    check_host(default_device() if device in (None, "cuda") else device, backend)


def check_host(device: str | None, backend: str | None) -> None:
    """CountersUnavailable on a host or engine where ncu cannot measure the step's launches."""
    if device is not None and not str(device).startswith("cuda"):
        from tfdash.engine import default_device

        where = ("there is no CUDA device here" if default_device() == "cpu"
                 else f"this engine is asked to run on the {str(device).upper()} (--device)")
        raise CountersUnavailable(f"counters need an NVIDIA GPU and {where}: run tfdash counters on the GPU host")
    if backend is not None and backend != "tilelang-graph":
        raise CountersUnavailable(f"counters map one device kernel to each launch, which only the tilelang-graph "
                                  f"engine has; this is {backend} (install tilelang, or pass --backend "
                                  "tilelang-graph)")
    if find_ncu() is None:
        raise CountersUnavailable(MISSING_NCU)
