"""Finding CUPTI and compiling cupti_ring.c against it, for tfdash.profiling.cupti_ring.

    locate() -> Found | reason    libcupti, its API version, and a cupti.h of the same major
    build(found) -> .so | reason  `cc -O2 -shared -fPIC` (or $CC), once per source and CUPTI
    load(found, so) -> CDLL       libcupti RTLD_GLOBAL first, then the ring, argument types set
    prepare() -> CDLL | reason    the three in a row; every failure is one line, nothing raises

libcupti is the copy already mapped into the process when there is one (torch links it for
kineto), so two CUPTIs never share a process; else the first libcupti.so* in LIB_SUBDIRS of
candidate_roots(): $CUDA_HOME, $CUDA_PATH, /usr/local/cuda*, /opt/cuda, and the pip packages'
site-packages/nvidia/{cu13,cuda_cupti,cuda_runtime,cu12} (nvidia-cuda-cupti, which torch's CUDA
wheels depend on). The header is the first cupti.h in INCLUDE_SUBDIRS of those roots whose
CUPTI_API_VERSION has the library's major (record layouts change between majors); cuda.h, which
it includes, may come from another root. The kernel record struct is the one that header
documents for CONCURRENT_KERNEL (CUpti_ActivityKernel10 in CUDA 13). The .so goes to
cache_dir()/cupti_ring/, named by a hash of the C source, the header and library paths, the
struct and the compiler.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import shutil
import site
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from tfdash.cache import cache_dir

SOURCE = Path(__file__).with_name("cupti_ring.c")
INCLUDE_SUBDIRS = ("extras/CUPTI/include", "include", "targets/x86_64-linux/include")
LIB_SUBDIRS = ("extras/CUPTI/lib64", "lib64", "lib", "targets/x86_64-linux/lib")
HEADERS_HINT = "install the CUDA toolkit's CUPTI headers (/usr/local/cuda/extras/CUPTI/include) or set $CUDA_HOME"
NO_COMPILER = "no C compiler (cc, gcc or clang) to build the CUPTI ring: install gcc, or set $CC"


@dataclass(frozen=True)
class Found:
    """The CUPTI this process would use: the library, its API version, and a header for it."""

    lib: Path
    include: Path  # holds cupti.h
    extra_includes: tuple[Path, ...] = ()  # cuda.h's folder, when cupti.h includes it from elsewhere
    kernel_record: str = "CUpti_ActivityKernel10"
    lib_version: int = 0  # cuptiGetVersion(), 0 if unread
    header_version: int = 0  # the header's CUPTI_API_VERSION


def candidate_roots() -> list[Path]:
    """Toolkit and pip-package folders to search, in order of preference."""
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    roots += ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True), "/opt/cuda"]
    sp = [*sys.path]
    try:
        sp += site.getsitepackages() + [site.getusersitepackages()]
    except Exception:  # noqa: BLE001 - a virtualenv's site without these helpers
        pass
    for d in dict.fromkeys(sp):
        roots += [os.path.join(d, "nvidia", sub) for sub in ("cu13", "cuda_cupti", "cuda_runtime", "cu12")]
    return [Path(r) for r in dict.fromkeys(r for r in roots if r) if os.path.isdir(r)]


def loaded_libcupti() -> Path | None:
    """The libcupti already mapped into this process (torch's kineto links one), if any."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(" ", 1)[-1].strip()
                if "/libcupti.so" in path and os.path.exists(path):
                    return Path(path)
    except OSError:
        pass
    return None


def find_libcupti(roots: list[Path]) -> Path | None:
    hit = loaded_libcupti()
    if hit is not None:
        return hit
    for r in roots:
        for sub in LIB_SUBDIRS:
            libs = sorted(glob.glob(str(r / sub / "libcupti.so*")), key=len)
            if libs:
                return Path(libs[0])
    return None


def header_version(include: Path) -> int:
    for name in ("cupti_version.h", "cupti.h"):
        try:
            m = re.search(r"#define\s+CUPTI_API_VERSION\s+(\d+)", (include / name).read_text(errors="replace"))
        except OSError:
            continue
        if m:
            return int(m.group(1))
    return 0


def kernel_record(include: Path) -> str:
    """The struct the header documents for CONCURRENT_KERNEL records, else its newest kernel struct."""
    for name in ("cupti_activity.h", "cupti.h"):
        try:
            text = (include / name).read_text(errors="replace")
        except OSError:
            continue
        at = text.find("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL =")
        named = re.findall(r"\\ref\s+(CUpti_ActivityKernel\d+)", text[max(0, at - 1500):at]) if at >= 0 else []
        if named:
            return named[-1]
        versions = [int(v) for v in re.findall(r"}\s*CUpti_ActivityKernel(\d+)\s*;", text)]
        if versions:
            return f"CUpti_ActivityKernel{max(versions)}"
    return "CUpti_ActivityKernel10"


def _major(v: int) -> int:
    return v // 10000  # 130001 -> 13; the pre-13 small integers all map to 0


def lib_version(lib: Path) -> int | str:
    """cuptiGetVersion() of `lib`, loading it RTLD_GLOBAL; a one-line reason if it will not load."""
    try:
        cdll = ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
        v = ctypes.c_uint32(0)
        rc = cdll.cuptiGetVersion(ctypes.byref(v))
        return int(v.value) if rc == 0 else f"cuptiGetVersion failed on {lib} (CUPTI result {rc})"
    except OSError as e:
        return f"cannot load {lib}: {e}"


def locate(roots: list[Path] | None = None) -> Found | str:
    """libcupti, its version, and a cupti.h of the same major; a one-line reason if one is missing."""
    roots = candidate_roots() if roots is None else roots
    lib = find_libcupti(roots)
    if lib is None:
        return "libcupti.so not found: pip install nvidia-cuda-cupti (torch's CUDA wheels depend on it) or install the CUDA toolkit's CUPTI"
    version = lib_version(lib)
    if isinstance(version, str):
        return version
    headers = [r / sub for r in roots for sub in INCLUDE_SUBDIRS if (r / sub / "cupti.h").is_file()]
    if not headers:
        return f"cupti.h not found: {HEADERS_HINT}"
    same = [h for h in headers if _major(header_version(h)) == _major(version)]
    if not same:
        return (f"no cupti.h for libcupti API {version} ({lib}); found API {header_version(headers[0])} in "
                f"{headers[0]}: {HEADERS_HINT}")
    include = same[0]
    extra: tuple[Path, ...] = ()
    if re.search(r"#include\s*<cuda\.h>", (include / "cupti.h").read_text(errors="replace")):
        if not (include / "cuda.h").is_file():
            cuda = [r / sub for r in roots for sub in INCLUDE_SUBDIRS if (r / sub / "cuda.h").is_file()]
            if not cuda:
                return f"cuda.h not found (cupti.h in {include} includes it): install the CUDA toolkit's headers"
            extra = (cuda[0],)
    return Found(lib, include, extra, kernel_record(include), version, header_version(include))


def compiler() -> str | None:
    cc = os.environ.get("CC")
    if cc and shutil.which(cc.split()[0]):
        return cc
    return next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


def build(found: Found, cache: Path | None = None, cc: str | None = None) -> Path | str:
    """The compiled ring for `found`, built once per source/CUPTI; a one-line reason on failure."""
    cc = cc or compiler()
    if cc is None:
        return NO_COMPILER
    src = SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join([src, str(found.include).encode(), str(found.lib).encode(),
                                     found.kernel_record.encode(), cc.encode()])).hexdigest()[:16]
    out_dir = (cache or cache_dir()) / "cupti_ring"
    out = out_dir / f"libtfdash_cupti_ring-{key}.so"
    if out.is_file():
        return out
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create {out_dir}: {e}"
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = [*cc.split(), "-O2", "-shared", "-fPIC", "-std=gnu11", f"-I{found.include}",
           *(f"-I{d}" for d in found.extra_includes), f"-DTFR_KERNEL_RECORD={found.kernel_record}",
           str(SOURCE), "-o", str(tmp), f"-L{found.lib.parent}", f"-l:{found.lib.name}",
           f"-Wl,-rpath,{found.lib.parent}", "-lpthread"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{cc} could not run to build the CUPTI ring: {e}"
    if p.returncode != 0:
        first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])
        return f"{cc} failed building cupti_ring.c against {found.include}: {first.strip()}"
    os.replace(tmp, out)  # atomic: two processes building at once both end with a whole file
    return out


_loaded: dict[str, ctypes.CDLL] = {}
_load_lock = threading.Lock()


def load(found: Found, so: Path) -> ctypes.CDLL | str:
    """dlopen libcupti (RTLD_GLOBAL) and then the ring, with argument types declared."""
    with _load_lock:
        if str(so) in _loaded:
            return _loaded[str(so)]
        try:
            ctypes.CDLL(str(found.lib), mode=ctypes.RTLD_GLOBAL)
            lib = ctypes.CDLL(str(so))
        except OSError as e:
            return f"cannot load the CUPTI ring {so}: {e}"
        u64p, u32p, sz = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32), ctypes.c_size_t
        for name, res, args in (
            ("tfr_start", ctypes.c_int, [sz, sz]), ("tfr_stop", ctypes.c_int, []),
            ("tfr_flush", ctypes.c_int, [ctypes.c_int]), ("tfr_flush_period", ctypes.c_int, [ctypes.c_uint32]),
            ("tfr_drain_ex", sz, [u64p, u64p, u64p, u32p, u32p, sz]), ("tfr_pending", sz, []),
            ("tfr_name", ctypes.c_long, [ctypes.c_uint32, ctypes.c_char_p, sz]),
            ("tfr_names", ctypes.c_uint32, []), ("tfr_nstats", sz, []), ("tfr_stat_name", ctypes.c_char_p, [sz]),
            ("tfr_stats", sz, [u64p, sz]), ("tfr_error", ctypes.c_char_p, []),
            ("tfr_timestamp", ctypes.c_int, [u64p]),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _loaded[str(so)] = lib
        return lib


def prepare(roots: list[Path] | None = None, cache: Path | None = None) -> ctypes.CDLL | str:
    """locate + build + load, the part of available() that needs no GPU."""
    if compiler() is None:
        return NO_COMPILER
    found = locate(roots)
    if isinstance(found, str):
        return found
    so = build(found, cache)
    return so if isinstance(so, str) else load(found, so)
