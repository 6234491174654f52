"""What the kernel drill-down shows, from a snapshot: plain functions, no widgets.

The snapshot carries the model config, dtype and KV capacity, so the step plan is rebuilt from it
(`build_plan` is pure) and each launch's cost can be priced at any ctx_len: the operand breakdown
at the profiled context, and the ctx_len sweep through `analyze` -- predicted everywhere, measured
where a profile window ran.
"""

from __future__ import annotations

import functools
import inspect
import json
import textwrap
from dataclasses import dataclass
from typing import Sequence

from tfdash.profiling.snapshot import ProfileSnapshot


@dataclass(frozen=True)
class OperandCost:
    role: str
    buffers: str
    kind: str
    read: int
    written: int


def _plan_variants() -> list[dict]:
    """build_plan's keyword options that are booleans (fused_rope, attn_kv_early, ...): the defaults
    first, then every combination of up to three flips -- a snapshot recorded with an A/B variant of
    the plan (a knob or two off) before attn_merge_early existed (its merge late: a third flip)
    still rebuilds, and the search stays a few dozen plans."""
    import inspect
    import itertools

    from tfdash.engine.plan import build_plan

    flags = [p for p in inspect.signature(build_plan).parameters.values() if isinstance(p.default, bool)]
    out: list[dict] = []
    for n in range(min(len(flags), 3) + 1):
        for combo in itertools.combinations(flags, n):
            out.append({p.name: not p.default for p in combo})
    return out


@functools.lru_cache(maxsize=32)  # the search's few dozen candidates stay cached
def _plan(model_json: str, dtype: str, capacity: int, options: str):
    from tfdash.engine.config import ModelConfig
    from tfdash.engine.plan import build_plan

    return build_plan(ModelConfig.from_dict(json.loads(model_json)), dtype=dtype, capacity=capacity,
                      **json.loads(options))


def plan_of(snap: ProfileSnapshot):
    """The snapshot's StepPlan, or None (never an exception) when it cannot be rebuilt: a snapshot
    from another version of tfdash. From the recorded build options when the snapshot has them;
    older snapshots fall back to the boolean variants whose launches match the kernel rows."""
    from tfdash.engine.config import within_limits

    m = snap.meta
    model = json.dumps(m.model, sort_keys=True)
    from tfdash.engine.plan_options import recorded_options

    recorded = getattr(m, "plan_options", None)
    if recorded:
        options = recorded_options({k: v for k, v in recorded.items() if k not in ("dtype", "capacity")})
        if options is None:
            return None  # a plan variant this version no longer builds
        try:
            return _plan(model, str(recorded.get("dtype", m.dtype)), int(recorded.get("capacity", m.capacity)),
                         json.dumps(options, sort_keys=True))
        except Exception:  # noqa: BLE001 - options of another tfdash: try the search below
            pass
    want = {k.index: (k.role, k.kernel) for k in snap.kernels}
    layers = {k.layer for k in snap.kernels if k.layer is not None}
    if not within_limits(m.model, m.capacity) or m.model["num_layers"] != len(layers):
        return None  # the model's dims disagree with its own rows: never size a plan by them
    for options in _plan_variants():
        try:
            plan = _plan(model, m.dtype, int(m.capacity), json.dumps(options))
        except Exception:  # noqa: BLE001 - the pane says the plan could not be rebuilt
            continue
        if len(plan) == len(want) and all(want.get(la.index) == (la.role, la.kernel) for la in plan.launches):
            return plan
    return None


def no_plan_why(snap: ProfileSnapshot) -> str:
    """Why plan_of found no plan, in one line: a kernel list shorter than the run's launches/step
    (a file cut short: a plan is matched to the snapshot only by every launch's row), else a plan
    this version of tfdash does not build."""
    listed, launches = len(snap.kernels), snap.meta.launches_per_step
    if listed < launches:
        return (f"no step plan: the snapshot's kernel list is cut, {listed} of the run's {launches} "
                f"launches/step ({launches - listed} missing), and a plan is matched by every launch")
    return "this snapshot's step plan could not be rebuilt (another tfdash version?)"


def windows_of(snap: ProfileSnapshot) -> dict[int, dict[int, float]]:
    """ctx_len -> {launch index: measured p50 ns} for every profile window the snapshot records
    (a later window at the same ctx_len replaces an earlier one)."""
    return {w.ctx_len: dict(enumerate(w.kernel_ns)) for w in getattr(snap, "windows", ())}


def target_of(snap: ProfileSnapshot):
    """The roofline target the snapshot was priced on: its GPU's datasheet (`datasheet_for`) with the
    measured ceiling if any."""
    from tfdash.profiling.targets import Target, datasheet_for

    recorded = getattr(snap, "target", None)
    if recorded:
        try:
            return Target.from_dict(dict(recorded))
        except Exception:  # noqa: BLE001 - an unknown field: fall back to the roofline's ceiling
            pass
    sheet = datasheet_for(snap.meta.gpu)
    r = snap.roofline
    if r is not None and r.ceiling_gbps:
        return sheet.measured(r.ceiling_gbps * 1e9, r.ceiling_source or "measured")
    return sheet


def geometry_text(launch, ctx_len: int) -> str | None:
    """The tilelang launch's grid and how its work spreads over it (the family's Geometry), in
    one line; None where the family does not say or its tilelang kernel cannot run the dims."""
    from tfdash.kernels.base import family

    g = family(launch.family).geometry_of(launch.dims, ctx_len)  # (its blocks per SM: the dims line above)
    if g is None:
        return None
    rounds = f"{g.rounds} round{'s' if g.rounds != 1 else ''}"
    pct = f"{min(99, round(g.last_busy * 100))}%"  # never "100%" for a round that is not full
    busy = f", the last {pct} busy" if g.rounds > 1 else f", {pct} busy"
    per = f" a {g.per}" if g.per else ""
    return (f"grid {'×'.join(map(str, g.grid))}, {g.threads} threads · {g.units:,} {g.unit}s over "
            f"{g.workers:,} {g.worker}s{per}: {rounds}{busy if g.last_busy < 1 else ''}")


def ctx_of(snap: ProfileSnapshot) -> int:
    """The context the operand costs are shown at: the profiled window's, else the run's current
    one rounded down to a whole attention block (64 positions), so a live view is not redone per token."""
    if snap.roofline is not None:
        c = snap.roofline.ctx_len
    else:
        c = max(0, snap.prompt_tokens + snap.new_tokens - 1) // 64 * 64
    return max(0, min(c, int(snap.meta.capacity) - 1))


def operand_costs(plan, members: Sequence[int], ctx_len: int) -> list[OperandCost]:
    """Bytes by operand, summed over the members (grouped by family.role across families)."""
    launches = [plan.launches[i] for i in members]
    multi = len({launch.family for launch in launches}) > 1
    out: dict[tuple[str, str], list] = {}
    for launch in launches:
        for o in launch.cost(ctx_len).operands:
            role = f"{launch.family}.{o.role}" if multi else o.role
            buf = launch.args.get(o.role, "")
            if launch.layer is not None and buf.startswith(f"L{launch.layer}."):
                buf = "L*." + buf.split(".", 1)[1]
            slot = out.setdefault((role, o.kind), [set(), 0, 0])
            slot[0].add(buf)
            slot[1] += o.read
            slot[2] += o.written
    rows = [OperandCost(role, ", ".join(sorted(b for b in bufs if b)), kind, r, w)
            for (role, kind), (bufs, r, w) in out.items()]
    rows.sort(key=lambda o: -(o.read + o.written))
    return rows


def sweep_ctx(capacity: int, points: int = 48) -> list[int]:
    last = max(0, capacity - 1)
    if last == 0:
        return [0]
    n = min(points, last + 1)
    return sorted({round(i * last / (n - 1)) for i in range(n)})


def predicted_sweep(plan, target, members: Sequence[int], points: int = 48) -> tuple[list[int], list[float]]:
    """ctx_len -> the members' predicted ns: the sum of their roofline ideals, priced exactly as
    `analyze` prices them (tests check it against `analyze(plan, target, ctx).rows`)."""
    from tfdash.profiling.analyze import price

    xs = sweep_ctx(plan.capacity, points)
    launches = [plan.launches[i] for i in members]
    ys = []
    for c in xs:
        plan.check_ctx(c)
        ys.append(sum(max(price(launch.cost(c), target)) for launch in launches))  # analyze()'s ideal_ns
    return xs, ys


def measured_points(windows: dict[int, dict[int, float]], members: Sequence[int]) -> tuple[list[int], list[float]]:
    """windows: ctx_len -> {launch index: measured p50 ns}. A point where every member was measured."""
    xs, ys = [], []
    for c in sorted(windows):
        w = windows[c]
        if all(i in w for i in members):
            xs.append(c)
            ys.append(sum(w[i] for i in members))
    return xs, ys


def marginal_for(snap: ProfileSnapshot, roles: Sequence[str], families: Sequence[str]) -> list[dict]:
    want = set(roles) | set(families)
    return [m for m in snap.marginal if m.get("what") in want]


# -- source ----------------------------------------------------------------------------------
def source_note(snap: ProfileSnapshot | None, live: bool) -> str | None:
    """When the source the drill-down shows (today's) is not what the snapshot ran: one line."""
    if snap is None or live:
        return None
    from tfdash.profiling.meta import kernels_source

    recorded, today = snap.meta.kernels_source, kernels_source()
    if recorded is None:
        return "recorded before snapshots kept a kernel source hash: this is today's source"
    if today is not None and recorded != today:
        return f"recorded from other kernel sources ({recorded}; today {today}): this is today's source"
    return None


def tilelang_source(family_name: str) -> str:
    """The family's tilelang factory (`family(name).tilelang`), plus the tfdash functions it calls
    directly (one level), so a thin wrapper shows the kernel it builds."""
    from tfdash.kernels.base import family

    fn = family(family_name).tilelang
    if fn is None:
        return f"# the {family_name} family has no tilelang kernel"
    parts = [_source(fn)]
    seen = {fn}
    for name in fn.__code__.co_names:
        dep = fn.__globals__.get(name)
        if inspect.isfunction(dep) and dep not in seen and dep.__module__.startswith("tfdash.kernels"):
            seen.add(dep)
            parts.append(_source(dep))
    # Imports inside the wrapper (`from tfdash.kernels.tl_gemv import gemv_kernel`).
    for line in inspect.getsource(fn).splitlines():
        line = line.strip()
        if line.startswith("from tfdash.kernels") and " import " in line:
            mod_name, names = line[5:].split(" import ", 1)
            for name in (n.strip() for n in names.split(",")):
                try:
                    import importlib

                    dep = getattr(importlib.import_module(mod_name.strip()), name)
                except Exception as e:  # noqa: BLE001 - shown, not raised
                    parts.append(f"# {mod_name.strip()}.{name}: unavailable: {type(e).__name__}: {e}")
                    continue
                if dep not in seen and callable(dep):
                    seen.add(dep)
                    parts.append(_source(dep))
    return "\n\n".join(parts)


def _source(fn) -> str:
    from pathlib import Path

    import tfdash

    try:
        path = Path(inspect.getsourcefile(fn) or "?")
        root = Path(tfdash.__file__).resolve().parent.parent
        shown = path.resolve().relative_to(root) if path.resolve().is_relative_to(root) else path
        where = f"# {shown}:{inspect.getsourcelines(fn)[1]}"
        return where + "\n" + textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        return f"# {getattr(fn, '__qualname__', fn)}: source unavailable ({e})"


def cuda_source(launch, cancel=None) -> str:
    """The generated CUDA of one launch's kernel, for sm_90a (needs tilelang and nvcc, not a GPU).
    Seconds the first time, in a child process: call it from a thread worker; a set `cancel` (a
    threading.Event) ends the child."""
    from tfdash.app.cuda_source import cuda_source as compile_in_child

    return compile_in_child(launch, cancel)
