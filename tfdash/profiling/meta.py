"""Run metadata for a snapshot: where, on what, with which versions, from which commit.

Every lookup degrades to None (or "unknown") instead of failing: a snapshot written on a laptop
without git, NVML or tilelang is still a valid snapshot.
"""

from __future__ import annotations

import functools
import platform
import socket
import subprocess
import time
from importlib import metadata
from pathlib import Path

from tfdash import __version__
from tfdash.profiling.snapshot import RunMeta


def git_commit() -> str | None:
    """The commit of the tfdash source tree ("<sha>-dirty" with local changes), None outside git."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        if not sha:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def gpu_info(device: str) -> tuple[str | None, str | None, str | None]:
    """(GPU name, driver version, CUDA version) for a CUDA device, Nones on CPU."""
    import torch

    if not str(device).startswith("cuda"):
        return None, None, None
    name = driver = None
    try:
        name = torch.cuda.get_device_name(torch.device(device))
    except Exception:
        pass
    from tfdash.profiling.nvml import Nvml, NvmlDevice, is_na

    nv = Nvml()
    if nv.available:
        d = NvmlDevice(nv, torch.device(device).index or 0)
        v = d.driver()
        driver = None if is_na(v) else v
    return name, driver, torch.version.cuda


@functools.lru_cache(maxsize=1)
def kernels_source() -> str | None:
    """A short hash of what the kernels are built from: tfdash/kernels/*.py and the step plan. A
    snapshot keeps it, so a view of an old one can say when the source it shows is not the one
    that ran."""
    import hashlib

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    try:
        for f in sorted((root / "kernels").glob("*.py")) + [root / "engine" / "plan.py"]:
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    except OSError:
        return None
    return h.hexdigest()[:12]


def this_host() -> str:
    """The name a snapshot recorded here carries as its host (RunMeta.host)."""
    return socket.gethostname() or platform.node() or "unknown"


def collect_meta(engine, prompt: str) -> RunMeta:
    import torch

    gpu, driver, cuda = gpu_info(engine.device)
    return RunMeta(
        tfdash_version=__version__,
        host=this_host(),
        device="cuda" if str(engine.device).startswith("cuda") else "cpu",
        gpu=gpu,
        driver=driver,
        torch_version=torch.__version__,
        tilelang_version=package_version("tilelang"),
        cuda_version=cuda,
        backend=engine.backend,
        dtype=engine.plan.dtype,
        model=engine.config.to_dict(),
        checkpoint=str(engine.source),
        git_commit=git_commit(),
        started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        prompt=prompt,
        capacity=engine.plan.capacity,
        launches_per_step=len(engine.plan),
        kernels_source=kernels_source(),
        threads=getattr(engine, "threads", None),
        plan_options=_jsonable(engine.plan.meta.get("options")),
    )


def _jsonable(options):
    """build_plan's options as plain JSON data (None when the plan did not record them)."""
    import json

    if not options:
        return None
    return json.loads(json.dumps(dict(options), default=str))
