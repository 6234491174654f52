"""Targets: the ceilings a step is priced against.

`h200` is the datasheet (4.8 TB/s HBM3e, dense bf16 989 TFLOP/s, f32 67 TFLOP/s, 132 SMs, 60 MB
L2, 227 KB shared memory per block); `h100-sxm`, `h100-pcie` and `h100-nvl` are the H100s' (3.35 TB/s
HBM3, 2.0 TB/s HBM2e, 3.9 TB/s HBM3), so a run on an H100 is not priced, nor its share of the datasheet given, against an
H200's memory. `datasheet_for` picks one by the device's name. A measured target keeps the
datasheet's compute peaks and replaces the bandwidth with a probe's cold copy result (read + written
bytes over time).
A target file is JSON with the same fields as `Target.to_dict()`.
"""

from __future__ import annotations

import json
import stat
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tfdash.errors import TfdashError, UsageError
from tfdash.profiling.export_files import not_the_snapshot, snapshot_in
from tfdash.pathstat import stat_or_none


@dataclass(frozen=True)
class Target:
    name: str
    bandwidth: float  # bytes/s of global memory
    peak_flops: dict = field(default_factory=dict)  # {"bf16": flop/s, "f32": flop/s}
    special_ops: float = 0.0  # special-function ops/s (exp, rsqrt); 0 = not a bound
    sms: int = 0
    l2_bytes: int = 0
    smem_per_block: int = 0
    source: str = "datasheet"  # "datasheet" or how the bandwidth was measured
    datasheet_bandwidth: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Target:
        fields = set(cls.__dataclass_fields__)
        unknown = set(d) - fields
        if unknown:
            raise TfdashError(f"unknown field(s) {', '.join(sorted(unknown))}")
        missing = [k for k in ("name", "bandwidth") if k not in d]
        if missing:
            raise TfdashError(f"missing field(s) {', '.join(missing)}")
        t = cls(**d)

        def number(v) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0

        if not (isinstance(t.name, str) and t.name.strip()):
            raise TfdashError(f"name must be a non-empty string, got {t.name!r}")
        for key, what in (("sms", "SMs"), ("l2_bytes", "bytes"), ("smem_per_block", "bytes")):
            v = getattr(t, key)  # geometry divides work by sms; 0 = not known
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
                raise TfdashError(f"target {t.name}: {key} must be a whole number of {what} (0: not known), "
                                  f"got {v!r}")
        if not isinstance(t.source, str):
            raise TfdashError(f"target {t.name}: source must be a string, got {t.source!r}")
        if not number(t.datasheet_bandwidth):
            raise TfdashError(f"target {t.name}: datasheet_bandwidth must be a number of bytes/s, "
                              f"got {t.datasheet_bandwidth!r}")
        if not (number(t.bandwidth) and t.bandwidth > 0):
            raise TfdashError(f"target {t.name}: bandwidth must be a positive number of bytes/s")
        if not (isinstance(t.peak_flops, dict) and all(number(v) for v in t.peak_flops.values())):
            raise TfdashError(f"target {t.name}: peak_flops must map dtypes to flop/s, got {t.peak_flops!r}")
        if not number(t.special_ops):
            raise TfdashError(f"target {t.name}: special_ops must be a number of ops/s, got {t.special_ops!r}")
        return t

    def measured(self, bandwidth: float, source: str) -> Target:
        """This target with a measured bandwidth (the datasheet's kept beside it)."""
        return replace(self, name=f"{self.name}-measured", bandwidth=float(bandwidth), source=source,
                       datasheet_bandwidth=self.datasheet_bandwidth or self.bandwidth)


H200 = Target(
    name="h200",
    bandwidth=4.8e12,
    peak_flops={"bf16": 989e12, "f16": 989e12, "f32": 67e12},
    special_ops=132 * 16 * 1.98e9,  # 16 SFU lanes per SM at the 1980 MHz boost clock
    sms=132,
    l2_bytes=60 * 1024 * 1024,
    smem_per_block=227 * 1024,
    source="datasheet",
    datasheet_bandwidth=4.8e12,
)

H100_SXM = Target(
    name="h100-sxm",
    bandwidth=3.35e12,
    peak_flops={"bf16": 989e12, "f16": 989e12, "f32": 67e12},
    special_ops=132 * 16 * 1.98e9,
    sms=132,
    l2_bytes=50 * 1024 * 1024,
    smem_per_block=227 * 1024,
    source="datasheet",
    datasheet_bandwidth=3.35e12,
)

H100_PCIE = Target(
    name="h100-pcie",
    bandwidth=2.0e12,
    peak_flops={"bf16": 756e12, "f16": 756e12, "f32": 51e12},
    special_ops=114 * 16 * 1.755e9,  # 114 SMs at the 1755 MHz boost clock
    sms=114,
    l2_bytes=50 * 1024 * 1024,
    smem_per_block=227 * 1024,
    source="datasheet",
    datasheet_bandwidth=2.0e12,
)

H100_NVL = Target(
    name="h100-nvl",
    bandwidth=3.9e12,
    peak_flops={"bf16": 835e12, "f16": 835e12, "f32": 60e12},
    special_ops=132 * 16 * 1.785e9,  # at the 1785 MHz boost clock
    sms=132,
    l2_bytes=50 * 1024 * 1024,
    smem_per_block=227 * 1024,
    source="datasheet",
    datasheet_bandwidth=3.9e12,
)

TARGETS = {"h200": H200, "h100-sxm": H100_SXM, "h100-pcie": H100_PCIE, "h100-nvl": H100_NVL}
NAMED = f"a GPU's datasheet ({', '.join(TARGETS)})"  # what an error offers beside a target JSON file


def datasheet_for(gpu_name: str | None) -> Target:
    """The datasheet target of the GPU CUDA names ("NVIDIA H100 80GB HBM3" is the SXM part, "NVIDIA
    H100 PCIe" and "NVIDIA H100 NVL" the cards); the H200's, the engine's own target, for any other
    name or none."""
    name = (gpu_name or "").upper()
    if "H100" in name and "PCIE" in name:
        return H100_PCIE
    if "H100" in name and "NVL" in name:
        return H100_NVL
    if "H100" in name and ("HBM3" in name or "SXM" in name):
        return H100_SXM
    return H200


def resolve_target(spec: str) -> Target:
    """`h200`, or a JSON file that holds a target: a Target's fields; a snapshot, an `analyze
    --json` report or sweep (each records the target it was priced against); or the bandwidth
    probe's cache of one device (its measured target). An empty or unknown name is a UsageError (the
    argument's own mistake); a file that holds no target, the file's."""
    if spec in TARGETS:
        return TARGETS[spec]
    if not spec.strip():  # Path('') is the current folder: "is a directory" said nothing of the empty name
        raise UsageError(f"--target {spec!r} is empty: give {NAMED} or a target JSON file")
    path = Path(spec)
    try:  # one stat, as `open` checks a snapshot: a folder on the way that cannot be searched is said, not raised
        st = stat_or_none(path)
    except OSError as e:
        raise TfdashError(f"--target {spec}: cannot read ({e.strerror or e})") from None
    if st is None:
        raise UsageError(f"unknown target {spec!r}: not one of {', '.join(TARGETS)} and no such file")
    mode = st.st_mode
    if not stat.S_ISREG(mode):  # a FIFO would block the read
        what = "is a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
        inside = snapshot_in(path) if stat.S_ISDIR(mode) else None  # an export folder: its snapshot
        hint = f"; {inside} is the snapshot in it" if inside else ""  # named, as open and diff name it
        raise TfdashError(f"--target {spec}: {what}; give {NAMED} or a target JSON file{hint}")
    try:
        text = _read_text(path)
        other = not_the_snapshot(path, text)  # an export's trace or CSV: the snapshot beside it records the target
        raw = None if other else json.loads(text)
    except (OSError, ValueError) as e:  # ValueError: not UTF-8, not JSON, a 5000-digit integer
        raise TfdashError(f"target file {path}: cannot read JSON ({str(e)[:200]})") from None
    except RecursionError:  # arrays in arrays past Python's recursion limit
        raise TfdashError(f"target file {path}: cannot read JSON (nested too deeply)") from None
    if other:
        raise TfdashError(f"target file {other}")
    if not isinstance(raw, dict):
        raise TfdashError(f"target file {path}: expected a JSON object")
    if isinstance(raw.get("schema"), str):  # a snapshot, a report or a sweep: the target it records
        raw = _recorded(path, raw)
    elif raw and all(isinstance(v, dict) and {"device", "bandwidth", "method"} <= set(v) for v in raw.values()):
        return _probed(path, raw)
    try:
        return Target.from_dict(raw)
    except (TypeError, TfdashError) as e:
        raise TfdashError(f"target file {path}: {e}") from None


def _read_text(path: Path) -> str:
    """The file's text; a gzip-compressed snapshot's (`run.json.gz`, which `open` and `diff` read)
    uncompressed, with the same limit on the size inside."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        from tfdash.profiling.export import _gunzip

        data = _gunzip(path, data)
    return data.decode("utf-8")


def _probed(path: Path, cache: dict) -> Target:
    """The measured target of the bandwidth probe's cache (bandwidth.json), which holds one."""
    from tfdash.profiling.probe import ProbeResult, measured_target

    if len(cache) != 1:
        raise TfdashError(f"target file {path}: the bandwidth probe's cache holds {len(cache)} devices "
                          f"({', '.join(sorted(cache))}); keep one in a copy of it")
    (key, entry), = cache.items()
    try:
        result = ProbeResult.from_entry(entry)
    except (TypeError, ValueError) as e:
        raise TfdashError(f"target file {path}: {key}: {e}") from None
    return measured_target("cpu" if key.startswith("cpu:") else "cuda", result)


def _recorded(path: Path, doc: dict) -> dict:
    """The target a file tfdash wrote was priced against: a snapshot's or an analyze report's
    "target", an `analyze --sweep --json` file's first point's (every point has the same one)."""
    target = doc.get("target")
    reports = doc.get("reports")
    if target is None and isinstance(reports, list) and reports and isinstance(reports[0], dict):
        target = reports[0].get("target")
    if not isinstance(target, dict):
        raise TfdashError(f"target file {path}: a {doc['schema'][:80]!r} file that records no target; give "
                          f"{NAMED}, a target's fields, a snapshot, an analyze --json report or "
                          "the bandwidth probe's bandwidth.json")
    return target
