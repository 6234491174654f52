"""The kernel table as CSV: one row per launch of the step, the prediction beside the
measurement, and Nsight Compute's counters where `tfdash counters` measured them.

The counter columns are empty for a launch without counters. `ncu_serialized_ns` is the kernel's
duration under ncu, which runs each kernel alone: it is not the in-graph time (`measured_p50_ns`).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from tfdash.profiling.files import write_text_atomic
from tfdash.profiling.snapshot import Counters, KernelRow, ProfileSnapshot
from tfdash.textsafe import visible

ROW_COLUMNS = ("index", "role", "layer", "family", "kernel", "predicted_ns", "measured_p50_ns",
               "measured_p90_ns", "share", "gap", "bytes_read", "bytes_written", "flops", "achieved_gbps",
               "bound_by", "device_kernels", "measured_last_ns", "samples")
COUNTER_COLUMNS = ("ncu_ctx_len", "dram_read", "dram_written", "predicted_read_at_ctx", "predicted_written_at_ctx",
                   "dram_ratio", "warps_active_pct", "registers_per_thread", "smem_static", "smem_dynamic",
                   "grid", "block", "ncu_serialized_ns")
CSV_COLUMNS = ROW_COLUMNS + COUNTER_COLUMNS


def _dims(d: tuple[int, ...]) -> str:
    return "x".join(str(v) for v in d)


def counter_cells(c: Counters | None) -> list:
    if c is None:
        return [""] * len(COUNTER_COLUMNS)
    ratio = c.ratio
    cells = [c.ctx_len, c.dram_read, c.dram_written, c.predicted_read, c.predicted_written,
             None if ratio is None else round(ratio, 4), c.warps_active_pct, c.registers, c.smem_static,
             c.smem_dynamic, _dims(c.grid), _dims(c.block), c.ncu_ns]
    return ["" if v is None else v for v in cells]


def _row_cells(k: KernelRow) -> list:
    row = []
    for c in ROW_COLUMNS:
        v = getattr(k, c)
        v = "" if v is None else (" ".join(v) if isinstance(v, tuple) else v)
        row.append(visible(v) if isinstance(v, str) else v)  # a CSV gets read with `cat`
    return row


def kernel_csv(snap: ProfileSnapshot) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for k in snap.kernels:
        w.writerow(_row_cells(k) + counter_cells(k.counters))
    return buf.getvalue()


def write_kernel_csv(snap: ProfileSnapshot, path) -> Path:
    return write_text_atomic(path, kernel_csv(snap))
