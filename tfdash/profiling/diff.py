"""Two profile snapshots side by side: the comparison behind `tfdash diff` and the dashboard's
baseline columns (`tfdash open B.json --baseline A.json`).

Both snapshots carry every launch of their step plan (KernelRow: role, family, kernel, predicted
ns, bytes, measured p50), so launches align by role ("L3.attention" in A is "L3.attention" in B).
A launch present on one side only (a fused or split kernel) is a row of its own, "added" (in B
only) or "removed" (in A only), never dropped. Rows group by launch, op, family or layer; a group
sums its members, and its measured time is None unless every member was measured.

Snapshots of different shapes or dtypes are refused (the model's config but for NOT_THE_SHAPE, and
the dtype run in: a checkpoint renamed by its folder compares; `compare` raises TfdashError naming
what differs); with `force=True` they are compared in the grouping asked for, and without one by op
(group=None: per launch unforced, per op forced, as two models' launches seldom pair one to one);
`SnapshotDiff.note` says so. Forced per launch, roles still align: a layer one model lacks is added
or removed.

Δ is always B − A. An added or removed row counts its missing side as 0, so the Δs of all rows
add up to B's kernel sum minus A's; Δ % is against A and None where A has no time.

JSON (`to_json`), schema "tfdash.diff", version 1:

    {"schema": "tfdash.diff", "version": 1,
     "group": "launch" | "op" | "family" | "layer",
     "aligned_by": "role" | "op" | "family" | "layer"   (forced: the group, per launch by role),
     "forced": bool, "differs": [str], "note": str,
     "a": Step, "b": Step,
     "step": {"delta_ns", "delta_pct", "tok_s_delta", "tok_s_delta_pct", "pct_ceiling_delta"},
     "matched": int, "added": [label], "removed": [label],
     "rows": [{"key": str, "label": str, "status": "matched" | "added" | "removed",
               "kernel_changed": bool, "a": Side | null, "b": Side | null,
               "delta_ns": number | null, "delta_pct": number | null,
               "predicted_delta_ns": number, "bytes_delta": int}],
     "rows_left_out": int   (only with --top N: the rows past the first N, which "rows" leaves out)}
    Step = {"source", "model", "dtype", "backend", "device", "launches", "ctx_len",
            "step_ns" (the profile window's measured step), "step_p50_ns" (the run's steps),
            "predicted_step_ns", "kernel_sum_ns", "tok_s", "pct_ceiling", "ceiling_gbps", "ceiling_source", "host"}
           (unmeasured: null; ceiling_gbps and ceiling_source: the ceiling's figure and how it was
           measured, null and "" without a roofline; host: where the snapshot was recorded)
    Side = {"count", "members": [launch index], "measured_ns", "predicted_ns", "bytes", "gap",
            "kernels": [str]}

Rows are sorted by |Δ| (largest first); rows without a measured Δ follow, by |predicted Δ|.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tfdash.errors import TfdashError
from tfdash.profiling.snapshot import KernelRow, ProfileSnapshot

SCHEMA = "tfdash.diff"
VERSION = 1
GROUPS = ("launch", "op", "family", "layer")


@dataclass(frozen=True)
class Side:
    """One side of a row: its launches in that snapshot, summed."""

    count: int
    members: tuple[int, ...]  # launch indices, plan order
    measured_ns: float | None  # None unless every member was measured
    predicted_ns: float
    bytes: int
    kernels: tuple[str, ...]

    @property
    def gap(self) -> float | None:
        if self.measured_ns is None or not self.predicted_ns:
            return None
        return self.measured_ns / self.predicted_ns


@dataclass(frozen=True)
class DiffRow:
    key: str
    label: str
    a: Side | None
    b: Side | None

    @property
    def status(self) -> str:
        return "matched" if self.a and self.b else "added" if self.b else "removed"

    @property
    def kernel_changed(self) -> bool:
        return bool(self.a and self.b and self.a.kernels != self.b.kernels)

    @property
    def delta_ns(self) -> float | None:
        """B − A of the measured time; a missing side counts 0, an unmeasured one gives None."""
        a = self.a.measured_ns if self.a else 0.0
        b = self.b.measured_ns if self.b else 0.0
        return None if a is None or b is None else b - a

    @property
    def delta_pct(self) -> float | None:
        d = self.delta_ns
        a = self.a.measured_ns if self.a else None
        return None if d is None or not a else 100.0 * d / a

    @property
    def predicted_delta_ns(self) -> float:
        return (self.b.predicted_ns if self.b else 0.0) - (self.a.predicted_ns if self.a else 0.0)

    @property
    def bytes_delta(self) -> int:
        return (self.b.bytes if self.b else 0) - (self.a.bytes if self.a else 0)


@dataclass(frozen=True)
class Step:
    """A snapshot's step-level numbers (None where it has none)."""

    source: str
    model: str
    dtype: str
    backend: str
    device: str
    launches: int
    ctx_len: int | None
    step_ns: float | None
    step_p50_ns: float | None
    predicted_step_ns: float
    kernel_sum_ns: float | None
    tok_s: float | None
    pct_ceiling: float | None
    ceiling_source: str = ""  # how the ceiling was had: the probe's line, for over_ceiling_note
    host: str = ""  # where it was recorded (RunMeta.host)
    ceiling_gbps: float | None = None  # the ceiling's figure: probe.cache_holds asks for it


@dataclass(frozen=True)
class SnapshotDiff:
    group: str
    aligned_by: str
    forced: bool
    differs: tuple[str, ...]  # what differs between the runs ("model name: a vs b", "dtype: ...")
    a: Step
    b: Step
    rows: tuple[DiffRow, ...]

    @property
    def matched(self) -> int:
        return sum(1 for r in self.rows if r.status == "matched")

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(r.label for r in self.rows if r.status == "added")

    @property
    def removed(self) -> tuple[str, ...]:
        return tuple(r.label for r in self.rows if r.status == "removed")

    @property
    def note(self) -> str:
        if not self.forced:
            return ""
        if self.aligned_by == "role":
            return f"--force: different runs ({'; '.join(self.differs)}), launches aligned by role all the same"
        return (f"--force: different runs ({'; '.join(self.differs)}), so launches are aligned by "
                f"{self.aligned_by}, not by role")


# -- alignment -------------------------------------------------------------------------------
def op_of(row: KernelRow) -> str:
    """The launch's op: its role without the layer ("L3.attention" -> "attention")."""
    return row.role.split(".", 1)[1] if row.layer is not None and "." in row.role else row.role


def group_key(row: KernelRow, group: str) -> tuple[str, str]:
    """(key, label) of the row's group; keys are the same in any snapshot of the same plan."""
    if group == "op":
        return "op:" + op_of(row), op_of(row)
    if group == "family":
        return "family:" + row.family, row.family
    if group == "layer":
        return ("layer:-", "outside layers") if row.layer is None else (f"layer:{row.layer}", f"L{row.layer}")
    return "role:" + row.role, row.role


def _side(members: Sequence[KernelRow]) -> Side:
    measured = [m.measured_p50_ns for m in members]
    return Side(count=len(members), members=tuple(m.index for m in members),
                measured_ns=None if any(v is None for v in measured) else float(sum(measured)),
                predicted_ns=float(sum(m.predicted_ns for m in members)),
                bytes=sum(m.bytes_read + m.bytes_written for m in members),
                kernels=tuple(dict.fromkeys(m.kernel for m in members)))


def _buckets(kernels: Sequence[KernelRow], group: str) -> dict[str, tuple[str, list[KernelRow]]]:
    out: dict[str, tuple[str, list[KernelRow]]] = {}
    seen: dict[str, int] = {}
    for k in sorted(kernels, key=lambda r: r.index):
        key, label = group_key(k, group)
        if group == "launch":  # a role twice in one plan: the n-th with the n-th
            n = seen.get(key, 0)
            seen[key] = n + 1
            if n:
                key, label = f"{key}#{n}", f"{label}#{n}"
        out.setdefault(key, (label, []))[1].append(k)
    return out


def align(a: Sequence[KernelRow], b: Sequence[KernelRow], group: str = "launch") -> list[DiffRow]:
    """Rows of B's and A's kernels grouped by `group` and matched by key: B's order, then what
    only A has, in A's order. Unsorted (see `sort_rows`)."""
    if group not in GROUPS:
        raise TfdashError(f"--group {group!r}: expected one of {', '.join(GROUPS)}")
    ba, bb = _buckets(a, group), _buckets(b, group)
    rows = [DiffRow(key, label, _side(ba[key][1]) if key in ba else None, _side(members))
            for key, (label, members) in bb.items()]
    rows += [DiffRow(key, label, _side(members), None) for key, (label, members) in ba.items() if key not in bb]
    return rows


def sort_rows(rows: Sequence[DiffRow]) -> list[DiffRow]:
    """By |Δ| (largest first); rows without a measured Δ after them, by |predicted Δ|; stable."""
    measured = [r for r in rows if r.delta_ns is not None]
    rest = [r for r in rows if r.delta_ns is None]
    measured.sort(key=lambda r: -abs(r.delta_ns))
    rest.sort(key=lambda r: -abs(r.predicted_delta_ns))
    return measured + rest


# -- whole snapshots ---------------------------------------------------------------------------
# Model config fields that do not change a launch: the name (a checkpoint's is its folder's, so a
# checkpoint moved or renamed, or the Hugging Face cache's snapshot folder, is named anew), the end
# tokens (a base and an instruct checkpoint of one shape), and the dtype it was saved in (the run's
# dtype is compared: a float32 run of a bfloat16 checkpoint launches what a float32 one does)
NOT_THE_SHAPE = ("name", "eos_token_ids", "dtype")


def differences(a: ProfileSnapshot, b: ProfileSnapshot) -> list[str]:
    """What makes two runs incomparable launch by launch: the model's shape (its config but for
    NOT_THE_SHAPE) and the dtype run in. Where the shape differs, the models' names come first,
    to say which two they are."""
    out = []
    ma, mb = dict(a.meta.model or {}), dict(b.meta.model or {})
    for k in sorted((set(ma) | set(mb)) - set(NOT_THE_SHAPE)):
        if ma.get(k) != mb.get(k):
            out.append(f"model {k}: {ma.get(k, '(none)')} vs {mb.get(k, '(none)')}")
    if out and ma.get("name") != mb.get("name"):
        out.insert(0, f"model name: {ma.get('name', '(none)')} vs {mb.get('name', '(none)')}")
    if a.meta.dtype != b.meta.dtype:
        out.append(f"dtype: {a.meta.dtype} vs {b.meta.dtype}")
    return out


def refusal(a: ProfileSnapshot, b: ProfileSnapshot, a_source: str = "A", b_source: str = "B",
            force: str = "--force") -> str | None:
    """The one line that refuses to compare two runs launch by launch (None when they compare):
    what `tfdash diff` says, and the dashboard's baseline picker too, which has no --force of its
    own and so names the command that has it (`force`)."""
    diffs = differences(a, b)
    if not diffs:
        return None
    return f"{a_source} and {b_source} are different runs ({shown_differences(diffs)}); {force} compares them by op"


def shown_differences(diffs: list[str]) -> str:
    """The first three of `differences`, and how many more: every refusal names them alike."""
    return "; ".join(diffs[:3]) + (f"; and {len(diffs) - 3} more" if len(diffs) > 3 else "")


def step_of(snap: ProfileSnapshot, source: str = "") -> Step:
    r = snap.roofline
    steps = sorted(snap.step_ns)
    kernels = [k.measured_p50_ns for k in snap.kernels]
    model = snap.meta.model.get("name", "?") if isinstance(snap.meta.model, dict) else "?"
    return Step(source=source, model=str(model), dtype=snap.meta.dtype, backend=snap.meta.backend,
                device=snap.meta.gpu or snap.meta.device, launches=len(snap.kernels),
                ctx_len=r.ctx_len if r is not None else None,
                step_ns=r.measured_step_ns if r is not None else None,
                step_p50_ns=float(steps[len(steps) // 2]) if steps else None,
                predicted_step_ns=float(sum(k.predicted_ns for k in snap.kernels)),
                kernel_sum_ns=float(sum(kernels)) if kernels and None not in kernels else None,
                tok_s=snap.tok_per_s if snap.wall_ns else None,
                pct_ceiling=r.pct_ceiling if r is not None and r.ceiling_gbps else None,
                ceiling_source=r.ceiling_source if r is not None else "", host=snap.meta.host,
                ceiling_gbps=r.ceiling_gbps if r is not None and r.ceiling_gbps else None)


def compare(a: ProfileSnapshot, b: ProfileSnapshot, group: str | None = None, force: bool = False,
            a_source: str = "A", b_source: str = "B") -> SnapshotDiff:
    """A against B (Δ = B − A). Different models or dtypes: TfdashError, unless `force`. A `group`
    given is honoured forced or not; None is per launch, or per op when forced."""
    if group is not None and group not in GROUPS:
        raise TfdashError(f"--group {group!r}: expected one of {', '.join(GROUPS)}")
    diffs = differences(a, b)
    if diffs and not force:
        raise TfdashError(refusal(a, b, a_source, b_source))
    forced = bool(diffs)
    if group is None:
        group = "op" if forced else "launch"
    rows = sort_rows(align(a.kernels, b.kernels, group))
    aligned_by = group if forced and group != "launch" else "role"
    return SnapshotDiff(group=group, aligned_by=aligned_by, forced=forced, differs=tuple(diffs),
                        a=step_of(a, a_source), b=step_of(b, b_source), rows=tuple(rows))


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _pct(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or not a else 100.0 * (b - a) / a


def step_deltas(d: SnapshotDiff) -> dict:
    return {"delta_ns": _delta(d.a.step_ns, d.b.step_ns), "delta_pct": _pct(d.a.step_ns, d.b.step_ns),
            "tok_s_delta": _delta(d.a.tok_s, d.b.tok_s), "tok_s_delta_pct": _pct(d.a.tok_s, d.b.tok_s),
            "pct_ceiling_delta": _delta(d.a.pct_ceiling, d.b.pct_ceiling)}


def _side_json(s: Side | None) -> dict | None:
    if s is None:
        return None
    return {"count": s.count, "members": list(s.members), "measured_ns": s.measured_ns,
            "predicted_ns": s.predicted_ns, "bytes": s.bytes, "gap": s.gap, "kernels": list(s.kernels)}


def to_json(d: SnapshotDiff) -> dict:
    """The diff as plain JSON data (schema in the module docstring)."""
    from dataclasses import asdict

    return {"schema": SCHEMA, "version": VERSION, "group": d.group, "aligned_by": d.aligned_by,
            "forced": d.forced, "differs": list(d.differs), "note": d.note, "a": asdict(d.a), "b": asdict(d.b),
            "step": step_deltas(d), "matched": d.matched, "added": list(d.added), "removed": list(d.removed),
            "rows": [{"key": r.key, "label": r.label, "status": r.status, "kernel_changed": r.kernel_changed,
                      "a": _side_json(r.a), "b": _side_json(r.b), "delta_ns": r.delta_ns, "delta_pct": r.delta_pct,
                      "predicted_delta_ns": r.predicted_delta_ns, "bytes_delta": r.bytes_delta}
                     for r in d.rows]}
