"""Compiling the plan's tilelang kernels, once per distinct kernel, through tilelang's disk cache.

The cache lives in $TILELANG_CACHE_DIR (default: tfdash's cache directory, `tilelang/`; see tfdash.cache): the first run compiles
each kernel (a few seconds each, with a progress bar), later runs load them in well under a
second each.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tfdash.cache import tilelang_cache_dir
from tfdash.kernels.base import family

SM90A = {"kind": "cuda", "arch": "sm_90a"}


def cache_dir() -> Path:
    """The compiled kernels' cache (see tfdash.cache)."""
    return tilelang_cache_dir()


def unsupported(plan) -> str | None:
    """One line saying why the tilelang engine cannot run this plan (the first kernel that
    cannot, with the value and what is supported), or None when every kernel can."""
    for launch in plan.kernels().values():
        fam = family(launch.family)
        if fam.tilelang is None:
            return f"the {launch.family} family has no tilelang kernel"
        why = fam.supported(launch.dims) if fam.supported else None
        if why:
            return f"{plan.config.name}: {why}"
    return None


def check_supported(plan) -> None:
    from tfdash.errors import UnsupportedShape

    why = unsupported(plan)
    if why:
        raise UnsupportedShape(f"the tilelang engine cannot run {why}")


def build(launch, pdl: bool = True):
    """The prim_func of one launch: its family's tilelang factory applied to its dims, named after
    the launch's kernel (CUDA, CUPTI and Nsight then show `<kernel>_kernel`). With `pdl` every
    kernel waits on its grid dependency (griddepcontrol.wait) before it reads what the kernel
    before it wrote; without, the kernels carry no PDL instructions at all."""
    factory = family(launch.family).tilelang
    if factory is None:
        raise RuntimeError(f"family {launch.family} has no tilelang kernel")
    return factory(dict(launch.dims, pdl=pdl)).with_attr("global_symbol", launch.kernel)


def compile_one(launch, target=None, pdl: bool | None = None, backend: str | None = None):
    """Compile one launch's kernel. With `pdl` (default: SETTINGS.pdl) the kernels wait on their
    grid dependency and are launched through tilelang's cython launcher, which sets programmatic
    stream serialization on every launch; without, they have no PDL instructions and launch
    through tvm_ffi. `backend` overrides the launcher (a compile-only check needs no cython)."""
    from tfdash.settings import SETTINGS

    cache_dir()
    import tilelang

    pdl = SETTINGS.pdl if pdl is None else pdl
    backend = backend or ("cython" if pdl else "tvm_ffi")
    return tilelang.compile(build(launch, pdl), out_idx=[], target=target or "cuda", execution_backend=backend)


def compile_plan(plan, target=None, progress=None, pdl: bool | None = None) -> dict:
    """{kernel name: compiled kernel} for every distinct kernel of the plan.
    `progress(done, total, name, seconds)` is called after each; the default prints a bar on a
    terminal and, where stderr keeps every line (a pipe, a log), a line a second (loading.compile_lines:
    a bar's redraws would be hundreds of lines there)."""
    check_supported(plan)
    kernels = plan.kernels()
    out = {}
    bar = None
    if progress is None and sys.stderr is not None and not sys.stderr.isatty():
        from tfdash.engine.loading import compile_lines, say_line

        progress = compile_lines(say_line)  # under PhaseLines' lock: its phase line may be due at the same time
    if progress is None:
        from rich.console import Console
        from rich.progress import Progress

        bar = Progress(console=Console(stderr=True), transient=False)  # stdout carries the text
        bar.start()
        task = bar.add_task("compiling tilelang kernels", total=len(kernels))
    try:
        for i, (name, launch) in enumerate(kernels.items()):
            t = time.perf_counter()
            out[name] = compile_one(launch, target, pdl)
            if bar is not None:
                bar.update(task, advance=1, description=f"compiled {name}")
            else:
                progress(i + 1, len(kernels), name, time.perf_counter() - t)
    finally:
        if bar is not None:
            bar.stop()
    return out
