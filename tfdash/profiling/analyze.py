"""Static analysis of one decode step: what each launch must read, write and compute, and the
ideal time that implies on a Target.

Per launch:   ideal_ns = max(bytes / bandwidth, sum_dtype flops / peak[dtype], special / special_ops)
Per step:     totals of the above; ideal_ns is the sum over launches (launches run one after
              another); floor_ns = all bytes / bandwidth, the memory floor of the step.

JSON schema (`to_json`), version "tfdash.analysis/1":
    {"schema": "tfdash.analysis/1", "target": Target.to_dict(), "model": ModelConfig.to_dict(),
     "dtype": str, "capacity": int, "ctx_len": int,
     "totals": {"flops": {dtype: n}, "special": {op: n},
                "traffic": {"read": B, "written": B,
                            "by_kind": {kind: {"read": B, "written": B}}},
                "scratch": B, "footprint": {"gmem": B, "smem": B},
                "ideal_ns": ns, "floor_ns": ns, "bound_by": "memory"|"compute"},
     "launches": [{"index", "role", "layer", "family", "kernel", "dims", "args",
                   "flops", "special", "read", "written",
                   "operands": [{"role", "buffer", "kind", "read", "written"}],
                   "smem", "scratch", "memory_ns", "compute_ns", "ideal_ns", "bound_by",
                   "geometry": null | {"grid", "threads", "blocks_per_sm", "units", "unit", "workers",
                                       "worker", "per", "rounds", "last_busy"}}]}
(`geometry`, kernels.base.Geometry: how the tilelang launch spreads its work, null where the family
does not say or its tilelang kernel cannot run the dims; the bytes-over-bandwidth ideal does not
see a last round that keeps few workers busy. Analyses written before the field lack it.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from tfdash.engine.plan import Launch, StepPlan
from tfdash.kernels.base import KINDS, Cost, Geometry, family
from tfdash.profiling.targets import Target

SCHEMA = "tfdash.analysis/1"
ALL_KINDS = KINDS


@dataclass(frozen=True)
class LaunchCost:
    launch: Launch
    cost: Cost
    memory_ns: float
    compute_ns: float
    geometry: Geometry | None = None  # how its tilelang launch spreads the work (None: no tilelang kernel says)

    @property
    def ideal_ns(self) -> float:
        return max(self.memory_ns, self.compute_ns)

    @property
    def bound_by(self) -> str:
        return "memory" if self.memory_ns >= self.compute_ns else "compute"


def price(cost: Cost, target: Target) -> tuple[float, float]:
    """(memory ns, compute ns) of one cost on one target."""
    mem = cost.bytes / target.bandwidth * 1e9
    comp = 0.0
    for dt, n in cost.flops.items():
        peak = target.peak_flops.get(dt) or target.peak_flops.get("f32")
        if peak:
            comp += n / peak * 1e9
    if target.special_ops:
        comp += sum(cost.special.values()) / target.special_ops * 1e9
    return mem, comp


@dataclass(frozen=True)
class StepAnalysis:
    plan: StepPlan
    target: Target
    ctx_len: int
    rows: tuple[LaunchCost, ...]

    def _sum(self, f) -> int:
        return sum(f(r.cost) for r in self.rows)

    @property
    def bytes_read(self) -> int:
        return self._sum(lambda c: c.bytes_read)

    @property
    def bytes_written(self) -> int:
        return self._sum(lambda c: c.bytes_written)

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    def read_by_kind(self, kind: str) -> int:
        return self._sum(lambda c: c.read_by_kind(kind))

    def written_by_kind(self, kind: str) -> int:
        return self._sum(lambda c: c.written_by_kind(kind))

    @property
    def flops(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            for k, v in r.cost.flops.items():
                out[k] = out.get(k, 0) + v
        return out

    @property
    def special(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            for k, v in r.cost.special.items():
                out[k] = out.get(k, 0) + v
        return out

    @property
    def scratch(self) -> int:
        return self._sum(lambda c: c.scratch)

    @property
    def ideal_ns(self) -> float:
        return sum(r.ideal_ns for r in self.rows)

    @property
    def floor_ns(self) -> float:
        return self.bytes / self.target.bandwidth * 1e9

    @property
    def bound_by(self) -> str:
        mem = sum(r.memory_ns for r in self.rows)
        comp = sum(r.compute_ns for r in self.rows)
        return "memory" if mem >= comp else "compute"

    @property
    def footprint_gmem(self) -> int:
        return sum(b.nbytes for b in self.plan.buffers.values() if b.parent is None)

    @property
    def footprint_smem(self) -> int:
        return max((r.cost.smem or 0 for r in self.rows), default=0)


def analyze(plan: StepPlan, target: Target, ctx_len: int = 0) -> StepAnalysis:
    plan.check_ctx(ctx_len)
    rows = []
    for launch in plan.launches:
        cost = launch.cost(ctx_len)
        mem, comp = price(cost, target)
        rows.append(LaunchCost(launch, cost, mem, comp, family(launch.family).geometry_of(launch.dims, ctx_len)))
    return StepAnalysis(plan, target, ctx_len, tuple(rows))


def sweep_points(start: int, stop: int, step: int) -> Sequence[int]:
    """ctx_len = start, start+step, ..., stop, or one clear error for a bad range. `stop` is always
    the last point, also off the step's grid (0:10:4 is 0, 4, 8, 10): the end of a ctx sweep is
    the length one asked about."""
    from tfdash.errors import TfdashError

    if step < 1:
        raise TfdashError(f"sweep step {step} must be at least 1")
    if stop < start:
        raise TfdashError(f"sweep ctx_len={start}:{stop}:{step}: the end {stop} is before the start {start}")
    grid = range(start, stop + 1, step)
    return grid if grid[-1] == stop else [*grid, stop]


def sweep(plan: StepPlan, target: Target, start: int, stop: int, step: int) -> list[StepAnalysis]:
    """The analysis at each point of `sweep_points`, held in a list: for short sweeps. A long one
    (each row holds every launch's cost) is priced a point at a time by `analyze --sweep`."""
    return [analyze(plan, target, c) for c in sweep_points(start, stop, step)]


# -- text ---------------------------------------------------------------------------------
def _kv(d: dict) -> str:
    return ",".join(f"{k}:{v}" for k, v in d.items()) or "-"


def _call(r: LaunchCost) -> str:
    launch = r.launch
    args = ", ".join(f"{role}={buf}" for role, buf in launch.args.items())
    return f"{launch.role} = {launch.kernel}({args})"


def bandwidth_text(bytes_per_s: float) -> str:
    """A target's bandwidth as the other views give it: TB/s for a GPU's, GB/s under 1 TB/s (a CPU
    probe's 13.5 GB/s read "0.01 TB/s", a quarter off what `open` and the roofline pane say)."""
    return f"{bytes_per_s / 1e12:.2f} TB/s" if bytes_per_s >= 1e12 else f"{bytes_per_s / 1e9:.1f} GB/s"


def render_header(a: StepAnalysis) -> list[str]:
    t, plan = a.target, a.plan
    bw = f"{bandwidth_text(t.bandwidth)} {t.source}"
    kinds = " ".join(f"{k}:r{a.read_by_kind(k)}/w{a.written_by_kind(k)}" for k in ALL_KINDS
                     if a.read_by_kind(k) or a.written_by_kind(k))
    return [
        f"# analysis target={t.name} ({bw}) model={plan.config.name} dtype={plan.dtype} "
        f"capacity={plan.capacity} ctx_len={a.ctx_len} launches={len(a.rows)}",
        f"# compute-cost flops={_kv(a.flops)} special={_kv(a.special)}",
        f"# traffic gmem:r{a.bytes_read}/w{a.bytes_written} {kinds} scratch={a.scratch}",
        f"# peak-footprint=gmem:{a.footprint_gmem},smem:{a.footprint_smem}",
        f"# roofline ideal-ns={a.ideal_ns:.0f} floor-ns={a.floor_ns:.0f} bound-by={a.bound_by} "
        f"tok/s-ceiling={1e9 / a.floor_ns:.1f}",
    ]


def render_line(r: LaunchCost, operands: bool = False) -> str:
    c = r.cost
    parts = [f"compute-cost flops={_kv(dict(c.flops))}" + (f" special={_kv(dict(c.special))}" if c.special else ""),
             f"traffic gmem:r{c.bytes_read}/w{c.bytes_written}"]
    if operands:
        parts[-1] += " operands=" + ",".join(
            f"{o.role}:r{o.read}/w{o.written}" for o in c.operands)
    parts.append(f"roofline ideal-ns={r.ideal_ns:.0f} bound-by={r.bound_by}")
    g = r.geometry
    if g is not None:
        per = f"-per-{g.per}" if g.per else ""
        work = f"{g.units}-{g.unit}s/{g.workers}-{g.worker}s{per}".replace(" ", "-")
        parts.append(f"tilelang grid={'x'.join(map(str, g.grid))} threads={g.threads} work={work} rounds={g.rounds} "
                     f"last-busy={g.last_busy:.2f}")
    return f"[{r.launch.index}] {_call(r)}  # " + "; ".join(parts)


def render_text(a: StepAnalysis, operands: bool = False) -> str:
    return "\n".join(render_header(a)) + "\n\n" + "\n".join(render_line(r, operands) for r in a.rows) + "\n"


def render_sweep(rows: list[StepAnalysis]) -> str:
    a0 = rows[0]
    t = a0.target
    out = [f"# sweep target={t.name} ({bandwidth_text(t.bandwidth)} {t.source}) model={a0.plan.config.name} "
           f"dtype={a0.plan.dtype} launches={len(a0.rows)}",
           f"{'ctx_len':>8} {'read B':>14} {'written B':>11} {'kv read B':>13} {'ideal us':>10} "
           f"{'floor us':>10} {'tok/s ceiling':>14} bound"]
    for a in rows:
        out.append(f"{a.ctx_len:>8} {a.bytes_read:>14} {a.bytes_written:>11} {a.read_by_kind('cache'):>13} "
                   f"{a.ideal_ns / 1e3:>10.1f} {a.floor_ns / 1e3:>10.1f} {1e9 / a.floor_ns:>14.1f} {a.bound_by}")
    return "\n".join(out) + "\n"


# -- JSON ---------------------------------------------------------------------------------
def launch_json(r: LaunchCost) -> dict:
    c, launch = r.cost, r.launch
    return {
        **launch.to_dict(),
        "flops": dict(c.flops), "special": dict(c.special),
        "read": c.bytes_read, "written": c.bytes_written,
        "operands": [{"role": o.role, "buffer": launch.args.get(o.role), "kind": o.kind,
                      "read": o.read, "written": o.written} for o in c.operands],
        "smem": c.smem, "scratch": c.scratch,
        "memory_ns": r.memory_ns, "compute_ns": r.compute_ns, "ideal_ns": r.ideal_ns, "bound_by": r.bound_by,
        "geometry": None if r.geometry is None else {
            **dataclasses.asdict(r.geometry), "rounds": r.geometry.rounds, "last_busy": r.geometry.last_busy},
    }


def to_json(a: StepAnalysis) -> dict:
    return {
        "schema": SCHEMA,
        "target": a.target.to_dict(),
        "model": a.plan.config.to_dict(),
        "dtype": a.plan.dtype,
        "capacity": a.plan.capacity,
        "ctx_len": a.ctx_len,
        "totals": {
            "flops": a.flops, "special": a.special,
            "traffic": {"read": a.bytes_read, "written": a.bytes_written,
                        "by_kind": {k: {"read": a.read_by_kind(k), "written": a.written_by_kind(k)}
                                    for k in ALL_KINDS}},
            "scratch": a.scratch,
            "footprint": {"gmem": a.footprint_gmem, "smem": a.footprint_smem},
            "ideal_ns": a.ideal_ns, "floor_ns": a.floor_ns, "bound_by": a.bound_by,
        },
        "launches": [launch_json(r) for r in a.rows],
    }
