"""Nsight Compute's side of `tfdash counters`: the command lines, its CSV read back, and its
failures said in one line. Pure functions (no torch, no subprocess): tested on CPU against a
recorded ncu output (tests/fixtures/ncu-raw.csv).

The profiling run writes a report (`--export`); `ncu --import REPORT --csv --page raw
--print-units base` prints it as CSV, one row per profiled kernel:

    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",
        "Grid Size","Device","CC","dram__bytes_read.sum",...
    "","","","","","","","","","","","byte",...                      <- the units row
    "0","4242","python3.12","h200","gemv_qkv_kernel","1","7","(256, 1, 1)","(132, 1, 1)",...,"16,801,024",...

Every field is quoted; numbers carry thousands separators; a metric ncu could not collect reads
"n/a". The details page (`--page details`, one row per metric: "Section Name","Metric Name",
"Metric Unit","Metric Value") parses too, so ncu output saved by hand can be read back.
The report itself could be read with NVIDIA's `ncu_report` module, which ships inside the Nsight
Compute install rather than on a package index; the CSV needs nothing but the ncu binary that
profiling needs anyway.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from typing import Sequence

# Nsight Compute metric names (its "Metrics Reference" and the LaunchStats / Occupancy sections)
# and what tfdash calls them.
METRICS = {
    "dram__bytes_read.sum": "dram_read",
    "dram__bytes_write.sum": "dram_written",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "warps_active_pct",  # achieved occupancy
    "launch__registers_per_thread": "registers",
    "launch__shared_mem_per_block_static": "smem_static",
    "launch__shared_mem_per_block_dynamic": "smem_dynamic",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
    "gpu__time_duration.sum": "ncu_ns",
}
_TIME = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024.0, "Mi": 1024.0 ** 2, "Gi": 1024.0 ** 3}
_LONG = ("Metric Name", "Metric Value")


@dataclass(frozen=True)
class NcuRecord:
    """One profiled kernel: its name, launch shape, and metrics in base units (bytes, ns, %)."""

    id: int
    kernel: str
    block: tuple[int, ...]
    grid: tuple[int, ...]
    metrics: dict = field(default_factory=dict)  # metric name -> float, or None ("n/a")


def kernel_name(name: str) -> str:
    """The function's name without a demangled argument list: "gemv_qkv_kernel(...)" -> "gemv_qkv_kernel"."""
    return name.split("(", 1)[0].strip()


def parse_dims(text: str) -> tuple[int, ...]:
    """"(256, 1, 1)" -> (256, 1, 1); () when it is not a shape."""
    nums = re.findall(r"\d+", text or "")
    return tuple(int(n) for n in nums) if text and text.strip().startswith("(") else ()


def scale(unit: str) -> float:
    """The factor from a value in `unit` to tfdash's base unit (bytes, ns; others as they are)."""
    u = (unit or "").strip()
    head = u.split("/", 1)[0]
    if head in _TIME:
        return _TIME[head]
    if head.endswith("byte"):
        return _PREFIX.get(head[:-4], 1.0)
    return 1.0


def number(text: str, unit: str = "") -> float | None:
    t = (text or "").strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return None
    try:
        return float(t) * scale(unit)
    except ValueError:
        return None


def _rows(text: str) -> list[list[str]]:
    """The CSV rows of ncu's output, its own messages (==PROF==, ==WARNING==, ==ERROR==) and
    anything before the header left out."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(lines))
    for i, r in enumerate(rows):
        if "ID" in r and "Kernel Name" in r:
            return rows[i:]
    return []


def parse_csv(text: str) -> list[NcuRecord]:
    """Every profiled kernel in ncu's --csv output (raw or details page), in ID order.
    ValueError when the text holds no ncu table."""
    rows = _rows(text)
    if not rows:
        raise ValueError("no Nsight Compute CSV table in the output (no header with \"ID\" and \"Kernel Name\")")
    head, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(head)}

    def cell(r, name):
        i = col.get(name)
        return r[i] if i is not None and i < len(r) else ""

    out: dict[int, NcuRecord] = {}
    if all(n in col for n in _LONG):  # details page: one row per metric
        for r in body:
            if not cell(r, "ID").strip().isdigit():
                continue
            rid = int(cell(r, "ID"))
            rec = out.get(rid) or NcuRecord(rid, kernel_name(cell(r, "Kernel Name")),
                                            parse_dims(cell(r, "Block Size")), parse_dims(cell(r, "Grid Size")), {})
            out[rid] = rec
            rec.metrics[cell(r, "Metric Name")] = number(cell(r, "Metric Value"), cell(r, "Metric Unit"))
        return [out[k] for k in sorted(out)]
    metric_cols = [(i, name) for i, name in enumerate(head) if "__" in name]
    units: dict[int, str] = {}
    if body and not cell(body[0], "ID").strip():  # the units row
        units = {i: body[0][i] for i, _ in metric_cols if i < len(body[0])}
        body = body[1:]
    for r in body:
        if not cell(r, "ID").strip().isdigit():
            continue
        rid = int(cell(r, "ID"))
        metrics = {name: number(r[i] if i < len(r) else "", units.get(i, "")) for i, name in metric_cols}
        out[rid] = NcuRecord(rid, kernel_name(cell(r, "Kernel Name")), parse_dims(cell(r, "Block Size")),
                             parse_dims(cell(r, "Grid Size")), metrics)
    return [out[k] for k in sorted(out)]


# -- command lines ---------------------------------------------------------------------------
def kernel_regex(kernels: Sequence[str]) -> str:
    """ncu's --kernel-name filter for exactly these device kernels."""
    return "regex:^(" + "|".join(re.escape(k) for k in sorted(set(kernels))) + ")$"


def profile_command(ncu: str, child: Sequence[str], kernels: Sequence[str], skip: int, count: int,
                    report: str) -> list[str]:
    """Profile `count` kernels of `kernels`, after skipping `skip` of them, among those launched
    between the child's cudaProfilerStart and cudaProfilerStop (its warm-up and capture are
    outside); every kernel node of the replayed graph is one launch (--graph-profiling node).
    The clocks are left as they run (--clock-control none)."""
    return [ncu, "--clock-control", "none", "--graph-profiling", "node", "--profile-from-start", "off",
            "--kernel-name", kernel_regex(kernels), "--launch-skip", str(skip), "--launch-count", str(count),
            "--metrics", ",".join(METRICS), "--export", report, "--force-overwrite", *child]


def import_command(ncu: str, report: str) -> list[str]:
    return [ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base"]


# -- failures in one line --------------------------------------------------------------------
PERMISSION = ("ncu cannot read the GPU's performance counters (ERR_NVGPUCTRPERM): run it as root, or load "
              "the NVIDIA driver with NVreg_RestrictProfilingToAdminUsers=0 "
              "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
CHILD_ERROR = "tfdash counters: error: "  # what the child prints before its own one-line error


def diagnose(output: str, rc: int) -> str | None:
    """What went wrong in a profiling run, from ncu's and the child's output, in one line; None
    when it went right."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    child = [ln[len(CHILD_ERROR):] for ln in lines if ln.startswith(CHILD_ERROR)]
    if child:
        return child[-1]
    if "ERR_NVGPUCTRPERM" in output:
        return PERMISSION
    errors = [ln.split("==ERROR==", 1)[1].strip() for ln in lines if "==ERROR==" in ln]
    unsupported = [e for e in errors if "not supported" in e.lower() or "unsupported" in e.lower()]
    if unsupported:
        return f"ncu cannot profile on this GPU or driver: {unsupported[0][:200]}"
    if errors:
        return f"ncu: {errors[0][:200]}"
    if rc != 0:
        last = lines[-1][:200] if lines else "no output"
        return f"the profiling run exited with status {rc}: {last}"
    if any("No kernels were profiled" in ln for ln in lines):
        return "ncu profiled no kernel: the replay ran none of the step's kernels between cudaProfilerStart/Stop"
    return None


def progress_line(line: str) -> str | None:
    """A status line from one of ncu's: '==PROF== Profiling "gemv_qkv_kernel" - 3: 0%....100% - 1 pass'."""
    m = re.search(r'==PROF== Profiling "([^"]+)" - (\d+)', line)
    if m:
        return f"profiled kernel {int(m.group(2)) + 1}: {m.group(1)}"
    if line.startswith("tfdash counters: "):
        return line[len("tfdash counters: "):].strip()
    return None
